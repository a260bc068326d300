"""Deterministic mode: the settings that make a judge's reruns reproducible where the backend allows it.

- Seeds: Python's ``random``, NumPy's global generator, torch (CPU and every CUDA device) when torch is
  used; ``PYTHONHASHSEED`` for child processes.
- torch: ``torch.use_deterministic_algorithms(True)``, cuDNN deterministic and not benchmarking, and
  ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` (cuBLAS needs a fixed workspace for reproducible reductions; it
  must be set before CUDA starts, so it is set here, first).
- Decoding: greedy (temperature 0) — sampling is then no longer a source of variation.
- llama.cpp (``local``): every call evaluates its whole prompt (no reuse of the previous call's cached
  prefix, which depends on what an instance served before); the prompt batch size is recorded.
- vLLM: a fixed seed and no prefix caching.
What each backend then reproduces bit for bit is measured, not assumed (see the table in docs/how-to/stability.md).
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import replace
from typing import Any

from judgecal.errors import InputError

CUBLAS = ":4096:8"
# backend -> options that make it deterministic (merged into the judge spec, so a deterministic judge is
# its own spec and never shares cached answers with a default one)
BACKEND_OPTIONS: dict[str, dict[str, Any]] = {
    "local": {"deterministic": True},
    "hf": {"deterministic": True},
    "vllm": {"seed": 0, "enable_prefix_caching": False},
}


def enable(seed: int = 0, torch: bool | None = None) -> dict[str, Any]:
    """Seed everything and switch torch to deterministic algorithms (``torch``: None = when installed
    and already imported, True = import it). Returns what was set, for the record."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS)
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    done: dict[str, Any] = {"seed": seed, "python": True, "CUBLAS_WORKSPACE_CONFIG": os.environ["CUBLAS_WORKSPACE_CONFIG"]}
    try:
        import numpy as np

        np.random.seed(seed)
        done["numpy"] = True
    except ImportError:
        pass
    if torch or (torch is None and "torch" in sys.modules):
        import torch as th

        th.manual_seed(seed)
        if th.cuda.is_available():
            th.cuda.manual_seed_all(seed)
        th.use_deterministic_algorithms(True)
        th.backends.cudnn.deterministic = True
        th.backends.cudnn.benchmark = False
        done["torch"] = {"deterministic_algorithms": True, "cuda": bool(th.cuda.is_available())}
    return done


def deterministic_spec(spec: Any) -> Any:
    """``spec`` in deterministic mode: greedy decoding and the backend's deterministic options."""
    if spec.backend not in BACKEND_OPTIONS:
        raise InputError(f"deterministic decoding is not available for {spec.backend}/ judges: a vendor API decides "
                         f"itself how it samples (available: {', '.join(sorted(BACKEND_OPTIONS))})",
                         name="deterministic")
    options = {**dict(spec.options), **BACKEND_OPTIONS[spec.backend]}
    return replace(spec, temperature=0.0, options=tuple(sorted(options.items())))


# What reruns reproduce, per backend, as measured on this project's machines (docs/how-to/stability.md).
REPRODUCIBILITY = {
    "local": "bit-identical raw texts across reruns in deterministic mode on one machine (tested on CPU); "
             "other CPUs (SIMD flags) or llama.cpp versions may differ",
    "hf": "bit-identical on CPU with torch deterministic algorithms; on a GPU only with the same GPU, "
          "dtype, batch size and library versions (batch size changes the kernels) — not measured here",
    "vllm": "seeded and without prefix caching; batch composition can still change results on a GPU — "
            "not measured here",
    "openai": "not reproducible: the vendor's seed is best effort and its backends change",
    "anthropic": "not reproducible: no seed; temperature 0 is not guaranteed greedy",
}
