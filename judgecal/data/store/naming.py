"""Readable, distinct names for judge specs (no SQL: :class:`.judgments.JudgmentsRepository` reads the specs)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

# What a bare name stands for when one name has several specs (the defaults of judgecal.judges.spec).
SPEC_DEFAULTS: dict[str, Any] = {"rubric": "pairwise", "temperature": 0.0, "max_tokens": 8, "logprobs": True,
                                 "top_logprobs": 10}
_SUFFIX_ORDER = ("rubric", "rubric_hash", "temperature", "max_tokens", "logprobs", "top_logprobs", "model",
                 "identity", "endpoint", "backend")


def _flat_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in ("options", "name")}
    if out.get("logprobs") is False:  # without log-probabilities, how many is moot
        out["top_logprobs"] = SPEC_DEFAULTS["top_logprobs"]
    for k, v in (spec.get("options") or {}).items():
        out[k if k not in out else f"options.{k}"] = v
    return out


def _show(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else "none" if v is None else str(v)


def spec_names(units: Sequence[tuple[Any, str, Mapping[str, Any] | None, str]]) -> dict[Any, str]:
    """Readable, distinct names for judge specs given as ``(unit, base name, spec or None, spec hash)``.

    A base name with one spec keeps it (``local/smollm2``). Several specs under one base name get a
    suffix naming where each departs from :data:`SPEC_DEFAULTS` among the fields that differ
    (``local/smollm2[temperature=0.7]``, ``local/smollm2[rubric=pointwise-5]``); the one spec at the
    defaults, if there is one, keeps the bare name. Two versions of one rubric show its content hash
    (``rubric=pairwise@1a2b3c``); a spec not stored (older workspaces) shows its hash (``[spec=1a2b3c4d]``).
    """
    by_base: dict[str, list[tuple[Any, Mapping[str, Any] | None, str]]] = {}
    for unit, base, spec, h in units:
        by_base.setdefault(base, []).append((unit, spec, h))
    out: dict[Any, str] = {}
    for base, group in by_base.items():
        if len(group) == 1:
            out[group[0][0]] = base
            continue
        flats = [_flat_spec(s) if s is not None else {"spec": h[:8]} for _, s, h in group]
        keys: set[str] = set().union(*flats)
        differ = sorted((k for k in keys if len({json.dumps(f.get(k), sort_keys=True, default=str) for f in flats}) > 1),
                        key=lambda k: (_SUFFIX_ORDER.index(k) if k in _SUFFIX_ORDER else len(_SUFFIX_ORDER), k))
        if "rubric_hash" in differ and len({(f.get("rubric"), f.get("rubric_hash")) for f in flats}) == \
                len({f.get("rubric") for f in flats}):
            differ.remove("rubric_hash")  # the rubric's name tells its versions apart

        def default(f: Mapping[str, Any], k: str) -> bool:
            return k in SPEC_DEFAULTS and f.get(k) == SPEC_DEFAULTS[k]

        plain = [i for i, f in enumerate(flats) if all(default(f, k) for k in differ)]
        for i, ((unit, _, _), f) in enumerate(zip(group, flats, strict=True)):
            if plain == [i]:
                out[unit] = base
                continue
            shown = [k for k in differ if not default(f, k)] or differ
            parts = []
            for k in shown:
                if k == "rubric" and "rubric_hash" in differ:
                    continue
                if k == "rubric_hash":
                    parts.append(f"rubric={_show(f.get('rubric'))}@{str(f.get('rubric_hash'))[:6]}")
                else:
                    parts.append(f"{k}={_show(f.get(k))}")
            out[unit] = f"{base}[{';'.join(parts)}]"
    # the last word: two units never share a name
    seen: dict[str, int] = {}
    for name in out.values():
        seen[name] = seen.get(name, 0) + 1
    hashes = {unit: h for unit, _, _, h in units}
    return {u: (f"{n}[spec={hashes[u][:8]}]" if seen[n] > 1 else n) for u, n in out.items()}

