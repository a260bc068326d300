"""The stability part of a report: each judge's stored stability runs (scored by :mod:`judgecal.audit.stability_section`)
at ``judges.<judge>.stability`` — the Stability Score with its CI, the runs, the guard — when any were
measured (``judgecal stability run`` / ``import`` / ``repeats``)."""

from __future__ import annotations

from typing import Any


def stability_tables(stab: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """A judge's stability summary as plain rows for every surface (HTML/PDF report, explorer):

    - ``runs``: one row per run and figure (origin ``gpu`` runs beside ``cpu`` ones), Stability Score and σ;
    - ``axes``: the per-axis breakdown of the squared shifts from the base (share of the total, largest shift);
    - ``environment``: what each variant changed in the environment fingerprint;
    - ``agreement``: the same model on another backend, and another judge on the same items.
    """
    from judgecal.judges.fingerprint import describe

    out: dict[str, list[dict[str, Any]]] = {"runs": [], "axes": [], "environment": [], "agreement": []}
    for run in (stab or {}).get("runs", []):
        rid, origin = str(run.get("run_id", ""))[:12], run.get("origin")
        names = [v.get("name") for v in run.get("variants") or []]
        for fig, r in (run.get("figures") or {}).items():
            out["runs"].append({"run": rid, "origin": origin, "figure": fig, "variants": r.get("n_variants"),
                                "sigma_pp": r.get("sigma_pp"), "score": r.get("score"), "score_ci": r.get("score_ci"),
                                "guard": "fail" if r.get("guard") else "pass"})
            for axis, a in ((r.get("decomposition") or {}).get("axes") or {}).items():
                v = a.get("variant")
                out["axes"].append({"run": rid, "figure": fig, "axis": axis, "variants": a.get("n_variants"),
                                    "share": a.get("share"), "max_shift_pp": a.get("max_shift_pp"),
                                    "at": names[v] if isinstance(v, int) and v < len(names) else None})
        for e in run.get("fingerprint_diffs") or []:
            out["environment"].append({"run": rid, "variant": e.get("variant"), "changes": describe(e["changes"])})
        for kind, key in (("backend", "cross_backend"), ("judge", "cross_judge")):
            for c in run.get(key) or []:
                out["agreement"].append({"run": rid, "kind": kind, "variant": c.get("variant"),
                                         "figure": c.get("figure"), "difference_pp": c.get("difference_pp"),
                                         "item_agreement": c.get("item_agreement"), "kappa": c.get("kappa"),
                                         "within_tolerance": c.get("within_tolerance")})
    return out
