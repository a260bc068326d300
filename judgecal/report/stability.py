"""The stability part of a report: each judge's stored stability runs (scored by :mod:`judgecal.audit.stability_section`)
at ``judges.<judge>.stability`` — the Stability Score with its CI, the runs, the guard — when any were
measured (``judgecal stability run`` / ``import`` / ``repeats``)."""

from __future__ import annotations

from judgecal.audit.schema import JudgeStability
from judgecal.report.table import Row


def stability_tables(stab: JudgeStability | None) -> dict[str, list[Row]]:
    """A judge's stability summary as plain rows for every surface (HTML/PDF report, explorer):

    - ``runs``: one row per run and figure (origin ``gpu`` runs beside ``cpu`` ones), Stability Score and σ;
    - ``axes``: the per-axis breakdown of the squared shifts from the base (share of the total, largest shift);
    - ``environment``: what each variant changed in the environment fingerprint;
    - ``agreement``: the same model on another backend, and another judge on the same items.
    """
    from judgecal.judges.fingerprint import describe

    out: dict[str, list[Row]] = {"runs": [], "axes": [], "environment": [], "agreement": []}
    for run in stab.runs if stab else []:
        rid, origin = run.run_id[:12], run.origin
        names = [v.name for v in run.variants]
        for fig, r in run.figures.items():
            out["runs"].append({"run": rid, "origin": origin, "figure": fig, "variants": r.n_variants,
                                "sigma_pp": r.sigma_pp, "score": r.score, "score_ci": r.score_ci,
                                "guard": "fail" if r.guard else "pass"})
            for axis, a in (r.decomposition.axes if r.decomposition else {}).items():
                v = a.variant
                out["axes"].append({"run": rid, "figure": fig, "axis": axis, "variants": a.n_variants,
                                    "share": a.share, "max_shift_pp": a.max_shift_pp,
                                    "at": names[v] if v is not None and v < len(names) else None})
        for e in run.fingerprint_diffs:
            out["environment"].append({"run": rid, "variant": e.variant, "changes": describe([c.to_json() for c in e.changes])})
        for kind, agreements in (("backend", run.cross_backend), ("judge", run.cross_judge)):
            for c in agreements:
                out["agreement"].append({"run": rid, "kind": kind, "variant": c.variant, "figure": c.figure,
                                         "difference_pp": c.difference_pp, "item_agreement": c.item_agreement,
                                         "kappa": c.kappa, "within_tolerance": c.within_tolerance})
    return out
