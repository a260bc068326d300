"""A small lazy registry: a judge named ``<backend>/<model>`` resolves to its backend module.

The backend's optional dependency is imported only when the backend is used; a missing one
says which extra to install.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from judgecal.errors import UserError
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


class UnknownJudgeError(UserError, ValueError):
    """A judge name whose backend is unknown or whose extra is not installed."""


def split_name(judge: str) -> tuple[str, str]:
    if "/" not in judge:
        raise UnknownJudgeError(f"judge {judge!r} must look like <backend>/<model>, e.g. local/smollm2")
    prefix, model = judge.split("/", 1)
    return prefix, model


# constructor arguments that are not spec options: the model is the judge's name, keys come from the
# environment, a client object is for tests
NOT_OPTIONS = frozenset({"self", "model", "api_key", "http_client"})


def backend_options(prefix: str) -> frozenset[str] | None:
    """The options a backend's spec may set (its constructor's keyword arguments), or ``None`` when
    the backend is not one of :data:`BACKENDS` or takes any keyword (vLLM passes them to ``LLM``)."""
    import inspect

    if prefix not in BACKENDS:
        return None
    module, factory, _, _ = BACKENDS[prefix]
    params = inspect.signature(getattr(importlib.import_module(module), factory).__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params) - NOT_OPTIONS


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
