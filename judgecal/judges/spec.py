"""A judge is a spec: backend, model, rubric and every parameter that changes what the judge answers.

Two specs are two judges, always. ``spec_hash`` is the sha256 (16 hex digits) of the spec's
canonical JSON, every field but its display name: backend, model and the model as the backend
identifies it (e.g. ``smollm2@q8_0``, the weights it runs), the endpoint of a self-hosted server,
the rubric's name and content hash, temperature, max_tokens, logprobs, top_logprobs and the backend
options that change outputs. Every judgment records it, the workspace stores each spec once, and
judgments of different specs are never pooled under one name (``local/smollm2`` while unambiguous,
otherwise ``local/smollm2[temperature=0.7]``; see :func:`judgecal.data.store.spec_names`).

A spec is given inline (``--judge local/smollm2``: the default spec with the command line's
parameters), by the name of a spec shipped in ``rubrics/judges/``, or as a small YAML file (the way
alpaca_eval configures its judges)::

    name: smollm2-greedy          # optional; default <backend>/<model>
    backend: local
    model: smollm2
    rubric: pairwise              # a built-in rubric, or a YAML path relative to this file
    parameters: {temperature: 0.0, max_tokens: 8, logprobs: true, top_logprobs: 10}
    options: {weights: q8_0}      # backend options (e.g. base_url for openai); never keys
"""

from __future__ import annotations

import math
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from judgecal.data.names import reserved_name_problem
from judgecal.data.specs import (  # noqa: F401 - the spec record lives in the data layer; named here too
    VENDOR_ENDPOINTS,
    JudgeSpec,
    url_problem,
    without_credentials,
)
from judgecal.data.yamlfile import ConfigError, parse_yaml, read_text

SPEC_DIR = "judges"  # shipped specs: judgecal.rubrics/judges/<name>.yaml (rubrics/judges/ in the repository)
# Backend options that change how a judge runs, never what it answers: passed on, not part of the spec.
RUN_OPTIONS = frozenset({"workers", "n_threads", "max_concurrency", "timeout_s", "batch_window_s"})
SECRET_OPTIONS = frozenset({"api_key", "key", "token", "authorization", "password", "secret"})
FIELDS = ("name", "description", "backend", "model", "rubric", "parameters", "options")
PARAMETERS = ("temperature", "max_tokens", "logprobs", "top_logprobs")
DEFAULT_MAX_TOKENS = 8  # a one-word verdict or score; a rubric may ask for more (its ``max_tokens``)


class SpecError(ConfigError):
    """A judge spec that is missing, unreadable or has a bad field."""


def _fail(origin: str, field: str, what: str) -> SpecError:
    return SpecError(f"{origin}: field {field!r} {what}")


# parameter -> (lowest, highest): what a backend accepts and the engine can plan for
LIMITS = {"temperature": (0.0, 100.0), "max_tokens": (1, 1_000_000), "top_logprobs": (0, 100)}



def _number(v: Any, origin: str, field: str, lo: float, integer: bool, hi: float | None = None) -> Any:
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    kind = "an integer" if integer else "a number"
    if isinstance(v, bool) or not ok or not math.isfinite(v) or v < lo or (hi is not None and v > hi):
        bounds = f">= {lo:g}" if hi is None else f"from {lo:g} to {hi:g}"
        raise _fail(origin, field, f"must be {kind} {bounds}, got {v!r}")
    return int(v) if integer else float(v)


def _options(backend: str, options: dict[Any, Any], origin: str) -> None:
    """Backend options: known to the backend, plain values, no secret, a base URL without credentials."""
    from judgecal.judges.registry import backend_options

    known = backend_options(backend)
    for key, value in options.items():
        if str(key).lower() in SECRET_OPTIONS:
            raise _fail(origin, f"options.{key}", "is a secret: keys come from the environment, never from a spec")
        if known is not None and key not in known:
            raise _fail(origin, f"options.{key}", f"is not an option of backend {backend!r}; its options are "
                        f"{', '.join(sorted(known)) or 'none'}")
        if not isinstance(value, (str, int, float, bool)):
            raise _fail(origin, f"options.{key}", "must be a string, number or boolean")
        if isinstance(value, float) and not math.isfinite(value):
            raise _fail(origin, f"options.{key}", f"must be a finite number, got {value}")
        if key == "base_url" and (why := url_problem(value)):
            raise _fail(origin, "options.base_url", why)


def spec_from_dict(d: Any, origin: str, defaults: JudgeSpec | None = None) -> JudgeSpec:
    """A spec from a parsed YAML mapping; a missing parameter takes its value from ``defaults``."""
    if not isinstance(d, dict):
        raise SpecError(f"{origin}: a judge spec is a mapping with {', '.join(FIELDS)}")
    for key in d:
        if key not in FIELDS:
            raise _fail(origin, str(key), f"is unknown; a spec has {', '.join(FIELDS)}")
    for key in ("backend", "model"):
        if not isinstance(d.get(key), str) or not d[key].strip() or "/" in d[key] and key == "backend":
            raise _fail(origin, key, "is required: a non-empty string" + (" without '/'" if key == "backend" else ""))
    for key in ("name", "rubric", "description"):
        if key in d and (not isinstance(d[key], str) or not d[key].strip()):
            raise _fail(origin, key, "must be a non-empty string")
    for key in ("name", "backend", "model"):
        if key in d and len(d[key]) > 200:
            raise _fail(origin, key, f"is {len(d[key]):,} characters; the limit is 200")
    if "name" in d and (why := reserved_name_problem(d["name"].strip())):
        raise _fail(origin, "name", why)
    base = defaults or JudgeSpec(backend=d["backend"], model=d["model"])
    params = d.get("parameters") or {}
    if not isinstance(params, dict):
        raise _fail(origin, "parameters", f"must be a mapping of {', '.join(PARAMETERS)}")
    for key in params:
        if key not in PARAMETERS:
            raise _fail(origin, f"parameters.{key}", f"is unknown; parameters are {', '.join(PARAMETERS)}")
    logprobs = params.get("logprobs", base.logprobs)
    if not isinstance(logprobs, bool):
        raise _fail(origin, "parameters.logprobs", f"must be true or false, got {logprobs!r}")
    options = d.get("options") or {}
    if not isinstance(options, dict):
        raise _fail(origin, "options", "must be a mapping of backend options")
    _options(d["backend"].strip(), options, origin)
    run = tuple(sorted((str(k), v) for k, v in options.items() if k in RUN_OPTIONS))
    mt = params.get("max_tokens", base.max_tokens)  # None: the rubric's (resolve_judge)
    return JudgeSpec(
        backend=d["backend"].strip(), model=d["model"].strip(), rubric=d.get("rubric", base.rubric),
        temperature=_number(params.get("temperature", base.temperature), origin, "parameters.temperature",
                            LIMITS["temperature"][0], False, LIMITS["temperature"][1]),
        max_tokens=None if mt is None else _number(mt, origin, "parameters.max_tokens", LIMITS["max_tokens"][0], True,
                                                   LIMITS["max_tokens"][1]),
        logprobs=logprobs,
        top_logprobs=_number(params.get("top_logprobs", base.top_logprobs), origin, "parameters.top_logprobs",
                             LIMITS["top_logprobs"][0], True, LIMITS["top_logprobs"][1]),
        options=tuple(sorted((str(k), v) for k, v in options.items() if k not in RUN_OPTIONS)),
        name=(d.get("name") or "").strip(), run_options=run, origin=origin,
    )


def shipped_specs() -> list[str]:
    """Names of the spec files shipped with judgecal (``--judge <name>``)."""
    folder = resources.files("judgecal.rubrics").joinpath(SPEC_DIR)
    if not folder.is_dir():
        return []
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def is_spec_reference(judge: str) -> bool:
    """Whether ``--judge`` names a spec file or a shipped spec rather than ``<backend>/<model>``."""
    return judge.endswith((".yaml", ".yml")) or ("/" not in judge and judge in shipped_specs())


def load_spec(name_or_path: str, defaults: JudgeSpec | None = None) -> JudgeSpec:
    """A spec from a YAML file path or a shipped spec name. A relative ``rubric`` path in a file is
    resolved against the file's folder."""
    p = Path(name_or_path)
    if name_or_path.endswith((".yaml", ".yml")):
        if not p.is_file():
            raise SpecError(f"{p}: no such judge spec file")
        try:
            text, origin, folder = read_text(p), str(p), p.parent
        except ConfigError as exc:
            raise SpecError(str(exc)) from None
        except OSError as exc:
            raise SpecError(f"{p}: cannot read the judge spec ({exc.strerror or exc})") from None
    else:
        res = resources.files("judgecal.rubrics").joinpath(SPEC_DIR, f"{name_or_path}.yaml")
        if not res.is_file():
            raise SpecError(f"unknown judge spec {name_or_path!r}; shipped: {', '.join(shipped_specs())}")
        text, origin, folder = res.read_text("utf-8"), f"rubrics/{SPEC_DIR}/{name_or_path}.yaml", None
    try:
        data = parse_yaml(text, origin)
    except ConfigError as exc:
        raise SpecError(str(exc)) from None
    spec = spec_from_dict(data, origin, defaults)
    rubric = spec.rubric
    if folder is not None and rubric.endswith((".yaml", ".yml")) and not Path(rubric).is_absolute():
        spec = replace(spec, rubric=str(folder / rubric))
    return spec


def resolve_judge(judge: str, *, rubric: str = "pairwise", temperature: float = 0.0, max_tokens: int | None = None,
                  logprobs: bool = True, base_url: str | None = None) -> tuple[JudgeSpec, Any]:
    """``--judge`` as a spec and its loaded rubric: a spec file or shipped spec name, or an inline
    ``<backend>/<model>`` (the default spec with these parameters). A rubric that cannot be loaded
    is reported against the spec file's ``rubric`` field. ``max_tokens``: a spec file's value, else the
    one given, else the rubric's (a span rubric asks for room to quote), else :data:`DEFAULT_MAX_TOKENS`;
    the returned spec holds the value that will run."""
    from judgecal.judges.rubric import RubricError, load_rubric

    cli = JudgeSpec(backend="", model="", rubric=rubric, temperature=temperature, max_tokens=max_tokens,
                    logprobs=logprobs)
    if base_url and (why := url_problem(base_url)):
        raise SpecError(f"base URL: {why}")
    if is_spec_reference(judge):
        spec = load_spec(judge, cli)
        if base_url:
            spec = replace(spec, options=tuple(sorted({**dict(spec.options), "base_url": base_url}.items())))
    else:
        from judgecal.judges.registry import split_name

        if "/" not in judge:
            raise SpecError(f"judge {judge!r} is neither <backend>/<model> (e.g. local/smollm2), a spec file "
                            f"(.yaml) nor a shipped spec ({', '.join(shipped_specs())})")
        backend, model = split_name(judge)
        spec = replace(cli, backend=backend, model=model, name=judge,
                       options=(("base_url", base_url),) if base_url else ())
    try:
        loaded = load_rubric(spec.rubric)
    except RubricError as exc:
        if spec.origin:
            raise SpecError(f"{spec.origin}: field 'rubric': {exc}") from None
        raise
    if spec.max_tokens is None:
        spec = replace(spec, max_tokens=loaded.max_tokens or DEFAULT_MAX_TOKENS)
    return spec, loaded
