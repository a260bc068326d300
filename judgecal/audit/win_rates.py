"""``models.win_rate_weighted`` and ``models.lc_win_rate``: per judge and model, the win rates as
AlpacaEval publishes them, each ``{estimate, ci_low, ci_high, n}``.

- ``win_rate_weighted.<judge>.<model>``: the mean preference probability
  (:mod:`judgecal.stats.winrate_weighted`), from the verdicts' probabilities when present, with an
  item-bootstrap CI — AlpacaEval's ``win_rate`` (as a fraction, not a percentage).
- ``lc_win_rate.<judge>.<model>``: AlpacaEval 2's length-controlled win rate (Dubois et al., 2024),
  computed by the ``alpaca-eval`` package itself (extra ``alpaca``): its GLM of the preference on the
  standardised length difference (through ``tanh``), the instruction's difficulty and the model,
  regularised towards AlpacaEval's gamed baselines, and predicted at zero length difference. It is
  defined on AlpacaEval's own instructions against the baseline each item names (candidate A, AlpacaEval's
  ``generator_1``), so it is computed for items imported with ``--from alpaca_eval`` (which keep each
  record's position in AlpacaEval's instruction set as ``metadata.alpaca_eval_index``). The interval is
  ``estimate ± z · SE`` with AlpacaEval's own standard error of the mean GLM preference. Where it cannot
  be computed the entry says why (``{"error": ...}``): no such items, the package missing, or its
  instruction-difficulty table (downloaded by alpaca-eval at first use) out of reach.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from judgecal.audit.probe import AuditConfig
from judgecal.stats.bootstrap import Replicates
from judgecal.stats.winrate_weighted import item_preferences, weighted_win_rates_deferred

INDEX_KEY = "alpaca_eval_index"
UNAVAILABLE = ("the length-controlled win rate needs", "alpaca-eval could not fit")


def _records(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(k): {"estimate": float(r["estimate"]), "ci_low": float(r["ci_low"]), "ci_high": float(r["ci_high"]),
                     "n": int(r["n"])} for k, r in frame.iterrows()}


def weighted_section(items: pd.DataFrame, judgments: pd.DataFrame, cfg: AuditConfig,
                     later: Replicates | None = None) -> dict[str, Any]:
    """model -> weighted win rate of one judge over ``items`` (``model_a, model_b`` by item id); with
    ``later``, filled in when its replicates are run (:class:`judgecal.stats.bootstrap.Replicates`)."""
    if items.empty:
        return {}
    q = item_preferences(judgments, cfg.invalid_as).reindex(items.index)
    ok = q.notna().to_numpy()
    if not ok.any():
        return {}
    out: dict[str, Any] = {}
    reps = Replicates(cfg.n_boot, cfg.seed) if later is None else later
    s, finish = weighted_win_rates_deferred(items["model_a"].to_numpy()[ok], items["model_b"].to_numpy()[ok],
                                            q.to_numpy()[ok], level=cfg.level)
    reps.add(s, lambda boot: out.update(_records(finish(boot))))
    if later is None:
        reps.run()
    return out


def lc_section(items: pd.DataFrame, judgments: dict[str, pd.DataFrame], cfg: AuditConfig,
               texts: pd.DataFrame | None = None) -> dict[str, Any]:
    """judge -> model -> length-controlled win rate against each item's baseline (candidate A), or
    ``{"error": why}``. ``texts``: item_id -> ``output_1, output_2, index`` (AlpacaEval's instruction
    position). When alpaca-eval cannot fit at all (the package or its table out of reach), the first
    judge's reason stands for the rest: the attempt is not repeated per judge."""
    if texts is None or texts.empty:
        why = {"error": f"no items with metadata.{INDEX_KEY} (import AlpacaEval annotations with --from alpaca_eval)"}
        return {judge: why for judge in judgments}
    out: dict[str, Any] = {}
    unavailable: dict[str, Any] | None = None
    for judge, frame in judgments.items():
        if unavailable is not None:
            out[judge] = unavailable
            continue
        out[judge] = lc_win_rates(items, item_preferences(frame, cfg.invalid_as), texts, cfg.level)
        if str(out[judge].get("error", "")).startswith(UNAVAILABLE):
            unavailable = out[judge]
    return out


def lc_win_rates(items: pd.DataFrame, pref_a: pd.Series, texts: pd.DataFrame, level: float = 0.95
                 ) -> dict[str, Any]:
    """Per model (candidate B) against its baseline (candidate A): alpaca-eval's
    ``get_length_controlled_winrate`` on the judge's preferences. ``pref_a``: item_id -> P(A won)."""
    try:
        from alpaca_eval.metrics.glm_winrate import get_length_controlled_winrate
    except ImportError as exc:  # not installed, or alpaca-eval 0.6.6 without pkg_resources (setuptools >= 81)
        if getattr(exc, "name", None) == "pkg_resources":
            return {"error": "the length-controlled win rate needs the alpaca-eval package, which imports "
                    "pkg_resources, gone from setuptools 81: pip install 'setuptools<81'"}
        return {"error": "the length-controlled win rate needs the alpaca-eval package: "
                f"pip install 'judgecal-toolkit[alpaca]' ({type(exc).__name__}: {exc})"}
    both = items.index.intersection(texts.index).intersection(pref_a.dropna().index)
    if not len(both):
        return {"error": f"no judged items with metadata.{INDEX_KEY}"}
    df = pd.DataFrame({"generator_1": items.loc[both, "model_a"], "generator_2": items.loc[both, "model_b"],
                       "output_1": texts.loc[both, "output_1"], "output_2": texts.loc[both, "output_2"],
                       "index": texts.loc[both, "index"].astype(int), "preference": 2.0 - pref_a.loc[both]})
    z = float(special.ndtri(0.5 + level / 2))  # the normal quantile (scipy.stats would cost ~1 s to import)
    out: dict[str, Any] = {}
    for (baseline, model), g in df.groupby(["generator_1", "generator_2"], sort=True):
        key = str(model) if df["generator_1"].nunique() == 1 else f"{model} vs {baseline}"
        frame = g.set_index("index").sort_index()[["generator_1", "generator_2", "output_1", "output_2", "preference"]]
        frame["annotator"] = "judgecal"
        try:
            m = get_length_controlled_winrate(frame, save_weights_dir=None, is_warn_extreme_changes=False)
        except Exception as exc:  # alpaca-eval downloads its instruction-difficulty table at first use
            first = (str(exc).splitlines() or [""])[0][:200]
            return {"error": f"alpaca-eval could not fit its GLM: {type(exc).__name__}: {first}"}
        est, se = m["length_controlled_winrate"] / 100, m["lc_standard_error"] / 100
        out[key] = {"estimate": float(est), "ci_low": float(est - z * se) if math.isfinite(se) else float("nan"),
                    "ci_high": float(est + z * se) if math.isfinite(se) else float("nan"), "n": int(len(frame))}
    return out


def alpaca_texts(ws: Any) -> pd.DataFrame:
    """item_id -> ``output_1, output_2, index`` for the items that carry ``metadata.alpaca_eval_index``."""
    idx = ws.items_repo.item_metadata(INDEX_KEY).dropna()
    if idx.empty:
        return pd.DataFrame(columns=["output_1", "output_2", "index"])
    rows = {it.item_id: (it.candidates[0].text, it.candidates[1].text, int(idx[it.item_id]))
            for it in ws.items_repo.items(ids=list(idx.index)) if len(it.candidates) == 2}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["output_1", "output_2", "index"]).astype(
        {"index": np.int64})
