"""Where a report's figures come from: the configuration hash and the environment fingerprint.

- ``config_hash``: a stable hash (sha256 of sorted-key JSON, :func:`judgecal.data.records.stable_hash`)
  of the audit settings, every judge's spec hashes and stored specs, and the truth (consensus name and
  a digest of its sorted ``(item_id, label)`` pairs). Two audits with the same hash read the same
  judges against the same truth with the same settings; the generation time is left out.
- ``environment``: the machine the audit ran on (judgecal, Python, platform, the numerical libraries)
  and, per judge, the environment fingerprints recorded with its judgments
  (:mod:`judgecal.judges.fingerprint`): how many distinct ones, and the fields of the most common.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from importlib import metadata
from typing import Any

from judgecal import __version__
from judgecal.data.records import stable_hash
from judgecal.judges import fingerprint as fp

LIBRARIES = ("numpy", "scipy", "pandas", "crowd-kit")
# fingerprint fields a reader of the report needs (the rest stay in the judgments' env column)
SHOWN = ("backend", "backend_versions", "model_sha256", "model_file", "quantisation", "dtype", "device",
         "deterministic", "batch_size", "threads", "python", "platform", "torch")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def truth_digest(ws: Any, consensus: str) -> str:
    """sha256 (16 hex digits) of the consensus' sorted ``item_id<TAB>label`` lines."""
    labels = ws.annotations_repo.consensus_labels(consensus)
    lines = sorted(zip(labels.index.astype(str).tolist(), labels.astype(str).tolist(), strict=True))
    return hashlib.sha256("".join(f"{item}\t{label}\n" for item, label in lines).encode()).hexdigest()[:16]


def judge_specs(ws: Any, judges: list[str]) -> dict[str, list[dict[str, Any]]]:
    """judge name -> its ``{spec_hash, spec}`` units (the spec is ``null`` for recorded verdicts)."""
    specs = ws.judgments_repo.judge_specs()
    out: dict[str, list[dict[str, Any]]] = {j: [] for j in judges}
    for (_, h), name in sorted(ws.judgments_repo.judge_names().items()):
        if name in out:
            out[name].append({"spec_hash": h, "spec": specs.get(h, (None, None))[1]})
    return out


def judge_environments(ws: Any) -> dict[str, dict[str, Any]]:
    """judge name -> ``{fingerprints, judgments, common}``: distinct recorded fingerprints and the shown
    fields of the most common one."""
    names = ws.judgments_repo.judge_names()
    counts: dict[str, dict[str, int]] = {}
    for judge, h, env, n in ws.judgments_repo.environment_counts():
        name = names.get((judge, h), judge)
        per = counts.setdefault(name, {})
        per[env or ""] = per.get(env or "", 0) + int(n)
    out = {}
    for name, per in counts.items():
        env, _ = max(per.items(), key=lambda kv: kv[1])
        parsed = fp.parse(env)
        out[name] = {"fingerprints": len([e for e in per if e]), "judgments": sum(per.values()),
                     "common": {k: parsed[k] for k in SHOWN if parsed.get(k) not in (None, {}, "")}
                     or "not recorded (imported verdicts)"}
    return out


def audit_environment() -> dict[str, Any]:
    return {"judgecal": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
            "libraries": {d: v for d in LIBRARIES if (v := _version(d))}}


def provenance(ws: Any, report: dict[str, Any]) -> dict[str, Any]:
    """The report's ``provenance`` section (see the module docstring)."""
    settings = report.get("settings") or {}
    judges = list(report.get("judges") or {})
    consensus = str(settings.get("consensus", "ds"))
    config: dict[str, Any] = {"settings": settings, "judges": judge_specs(ws, judges),
              "truth": {"consensus": consensus, "digest": truth_digest(ws, consensus)}}
    return {
        "config_hash": stable_hash(config),
        "truth_digest": config["truth"]["digest"],
        "judge_spec_hashes": {j: [u["spec_hash"] for u in units] for j, units in config["judges"].items()},
        "environment": {"audit": audit_environment(), "judges": {j: e for j, e in judge_environments(ws).items()
                                                                 if j in report.get("judges", {})}},
    }
