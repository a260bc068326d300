"""A small lazy registry: a judge named ``<backend>/<model>`` resolves to its backend module.

The backend's optional dependency is imported only when the backend is used; a missing one
says which extra to install.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from judgecal.judges.base import Backend

# backend prefix -> (module, factory, module that must import, extra)
BACKENDS: dict[str, tuple[str, str, str, str]] = {
    "local": ("judgecal.judges.backends.local", "LocalBackend", "llama_cpp", "local"),
    "openai": ("judgecal.judges.backends.openai_api", "OpenAIBackend", "openai", "openai"),
    "openai-http": ("judgecal.judges.backends.openai_http", "OpenAIHTTPBackend", "httpx", "openai"),
    "anthropic": ("judgecal.judges.backends.anthropic_api", "AnthropicBackend", "anthropic", "anthropic"),
    "vllm": ("judgecal.judges.backends.vllm_offline", "VLLMBackend", "vllm", "vllm"),
    "hf": ("judgecal.judges.backends.hf", "HFBackend", "transformers", "hf"),
}


class UnknownJudgeError(ValueError):
    """A judge name whose backend is unknown or whose extra is not installed."""


def split_name(judge: str) -> tuple[str, str]:
    if "/" not in judge:
        raise UnknownJudgeError(f"judge {judge!r} must look like <backend>/<model>, e.g. local/smollm2")
    prefix, model = judge.split("/", 1)
    return prefix, model


def make_backend(judge: str, **options: Any) -> Backend:
    """Instantiate the backend for ``judge`` (e.g. ``openai/gpt-4o-mini``, ``local/smollm2``)."""
    prefix, model = split_name(judge)
    if prefix == "replay":
        raise UnknownJudgeError("replay judges are imported with their dataset: `judgecal import <dataset>`")
    if prefix == "metric":
        raise UnknownJudgeError("metric judges score items without a model: `judgecal judge --judge metric/<name>` "
                                "(judgecal.judges.backends.metric)")
    if prefix not in BACKENDS:
        raise UnknownJudgeError(f"unknown backend {prefix!r}; known: {', '.join(sorted(BACKENDS))}, metric, replay")
    module, factory, dep, extra = BACKENDS[prefix]
    try:
        importlib.import_module(dep)
    except ImportError:
        raise UnknownJudgeError(
            f"backend {prefix!r} needs {dep!r}: pip install 'judgecal-toolkit[{extra}]'"
        ) from None
    cls: Callable[..., Backend] = getattr(importlib.import_module(module), factory)
    return cls(model=model, **options)
