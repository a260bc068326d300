"""Model-level results of an audit: which model is better, by how much, by each rater.

A *rater* is the human consensus (``humans``) or a pairwise judge. Per rater, over the two-candidate
pairwise items whose candidates name their models:

- each model's win rate ``(wins + ties/2) / comparisons`` with an item-bootstrap CI, the model x model
  win-rate matrix and Bradley–Terry scores with the ranking (:mod:`judgecal.stats.winrate`), per
  category too when items carry ``metadata.category``;
- a judge's item verdict is its swap-debiased verdict when it judged both orders (the common verdict,
  else a tie), its first sample of each order; an unparsable verdict is a tie under
  ``--invalid-as tie`` and no comparison otherwise;
- system-level alignment of each judge with the humans (Spearman, Kendall, reversed model pairs);
- PPI++ win rates (:mod:`judgecal.stats.ppi`): the items with the truth are the human-labelled set,
  the judge's verdicts cover every item it judged; beside them the human-only estimate and the ratio
  of CI widths; stratified by category too (one power-tuning weight per category, Fisch et al. 2024)
  when every judged item has one;
- the planner: human labels needed for a CI half-width ``h`` on the outcome of a comparison (the score
  of candidate A: 1, 1/2, 0), human-only and with PPI++ from the measured judge-human correlation, with
  the Dorner et al. (ICLR 2025) ceiling of a factor 2 for a judge no better than the evaluated model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from judgecal.audit.active_ppi import active_corrected
from judgecal.audit.probe import AuditConfig, JudgeInput
from judgecal.audit.win_rates import lc_section, weighted_section
from judgecal.data.names import rater_key
from judgecal.data.store import Workspace
from judgecal.errors import InputError
from judgecal.stats import ppi, winrate
from judgecal.stats.bootstrap import Replicates

HUMANS = "humans"
PLAN_HALFWIDTH = 0.03
BT_MAX_BOOT = 200  # evalica's bootstrap refits the model per replicate (about 9 ms each on PandaLM)


def item_models(ws: Workspace, category: pd.Series | None = None) -> pd.DataFrame:
    """item_id -> ``model_a, model_b, category`` for the two-candidate pairwise items (probe copies left
    out) whose two candidates name two different models; ``category``: the items' ``metadata.category``
    when already read."""
    facts = ws.items_repo.item_facts()
    keep = ((facts["task"] == "pairwise") & (facts["n_candidates"] == 2) & ~facts["source"].str.startswith("probe:")
            & facts["model_a"].notna() & facts["model_b"].notna() & (facts["model_a"] != facts["model_b"]))
    out = facts.loc[keep, ["model_a", "model_b"]].astype(str)
    cat = ws.items_repo.item_metadata("category") if category is None else category
    out["category"] = cat.reindex(out.index).astype(object).map(lambda c: None if pd.isna(c) else str(c))
    # plain Python strings, index included: every rater's statistics read these columns and align to this
    # index, and an Arrow-backed string column would be converted again at each of those reads
    return out.astype(object).set_axis(out.index.astype(object))


def item_verdicts(judgments: pd.DataFrame, invalid_as: str = "tie") -> pd.Series:
    """item_id -> the judge's item-oriented verdict: swap-debiased over the two orders when both were
    judged, the first sample of each order."""
    if not len(judgments):
        return pd.Series(dtype=object)
    codes, ids = pd.factorize(judgments["item_id"])
    return pd.Series(coded_verdicts(judgments, codes, len(ids), invalid_as), index=text_index(ids), dtype=object)


def text_index(ids: ArrayLike) -> pd.Index:
    """``ids`` as an index of plain Python strings (each written as text where it is not one already)."""
    values = np.asarray(ids, dtype=object)
    if pd.api.types.infer_dtype(values, skipna=False) == "string":
        return pd.Index(values, dtype=object)
    return pd.Index([str(i) for i in values], dtype=object)


def take(values: NDArray[np.intp], at: NDArray[np.integer[Any]]) -> NDArray[np.intp]:
    """``values[at]``, -1 where ``at`` is negative (a row or item without one)."""
    out = np.full(len(at), -1, dtype=np.intp)
    out[at >= 0] = values[at[at >= 0]]
    return out


def category_places(col: pd.Series, items: pd.Index, cache: dict[str, Any]) -> NDArray[np.intp]:
    """Where each category of the categorical ``col`` is among ``items`` (-1: not there), looked up once for
    every column with the same categories (kept in ``cache``)."""
    cats = col.cat.categories
    kept = cache.get("categories")
    if kept is None or not (kept[0] is cats or kept[0].equals(cats)):
        kept = cache["categories"] = (cats, items.get_indexer(text_index(cats)))
    return kept[1]  # type: ignore[no-any-return]


def coded_verdicts(judgments: pd.DataFrame, codes: NDArray[np.intp], n: int,
                   invalid_as: str = "tie") -> NDArray[np.object_]:
    """:func:`item_verdicts` of items numbered ``0 .. n-1``, ``codes`` giving each row's item: the verdicts in
    that order, ``None`` for an item without a row."""
    raw = judgments["verdict"]
    v = raw.to_numpy(dtype=object).copy()
    v[~raw.isin(winrate.LABELS).to_numpy()] = None
    if invalid_as == "tie":
        v[(raw == "invalid").to_numpy()] = "tie"
    sample = judgments["sample"].to_numpy()
    rows = np.argsort(-sample, kind="stable") if sample.any() else np.arange(len(sample))
    first = (judgments["order"] == "AB").to_numpy()[rows]
    ab, ba = np.full(n, None, dtype=object), np.full(n, None, dtype=object)
    # numpy assigns repeated indices in order, so the smallest sample (last in ``rows``) is kept
    ab[codes[rows][first]] = v[rows][first]
    ba[codes[rows][~first]] = v[rows][~first]
    return winrate.swap_debiased(ab, ba)


def _records(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(k): {str(c): (int(v) if c in ("n", "rank", "rank_low", "rank_high") else float(v))
                     for c, v in row.items()} for k, row in frame.iterrows()}


def _matrix(frames: dict[str, pd.DataFrame]) -> dict[str, Any]:
    est = frames["estimate"]
    out: dict[str, Any] = {"models": [str(m) for m in est.index]}
    for k, f in frames.items():
        out[k] = [[(int(x) if k == "n" else float(x)) for x in row] for row in f.to_numpy()]
    return out


def rater_results(items: pd.DataFrame, labels: pd.Series, cfg: AuditConfig,
                  later: Replicates | None = None) -> dict[str, Any]:
    """Win rates, matrix, Bradley–Terry and per-category win rates of one rater (``labels``: item_id ->
    A/B/tie) over ``items``; with ``later``, the win rates and the matrix are filled in when its replicates
    are run (:class:`judgecal.stats.bootstrap.Replicates`: many raters' at once)."""
    if items.empty:
        return {"n_items": 0}
    lab = labels.reindex(items.index)
    ok = lab.isin(winrate.LABELS).to_numpy()
    a, b, y = items["model_a"].to_numpy()[ok], items["model_b"].to_numpy()[ok], lab.to_numpy(dtype=object)[ok]
    out: dict[str, Any] = {"n_items": int(ok.sum())}
    if not ok.any():
        return out
    kw: dict[str, Any] = {"n_boot": cfg.n_boot, "seed": cfg.seed, "level": cfg.level}
    reps = Replicates(cfg.n_boot, cfg.seed) if later is None else later
    s, rates = winrate.win_rates_deferred(a, b, y, level=cfg.level)
    reps.add(s, lambda boot: out.__setitem__("win_rate", _records(rates(boot))))
    s, matrix = winrate.win_rate_matrix_deferred(a, b, y, level=cfg.level)
    reps.add(s, lambda boot: out.__setitem__("matrix", _matrix(matrix(boot))))
    if later is None:
        reps.run()
    if len(y) >= 2:  # the bootstrap resamples comparisons: one cannot be resampled
        bt = winrate.bradley_terry(a, b, y, n_boot=min(cfg.n_boot, BT_MAX_BOOT), seed=cfg.seed, level=cfg.level)
        out["bradley_terry"] = _records(bt)
        out["ranking"] = [str(m) for m in bt.index]
    cat = items["category"].to_numpy(dtype=object)[ok]
    if pd.notna(cat).any():
        by = winrate.win_rates_by_category(a, b, y, cat, **kw)
        out["by_category"] = {str(c): _records(pd.DataFrame(by.xs(c, level="category"))) for c in by.index.unique("category")}
    return out


def _alignment(items: pd.DataFrame, truth: pd.Series, verdict: pd.Series, cfg: AuditConfig,
               into: dict[str, Any], later: Replicates) -> None:
    """``into[judge] =`` the judge's system-level alignment, when ``later``'s replicates are run."""
    h = truth.reindex(items.index).to_numpy(dtype=object)
    j = verdict.reindex(items.index).to_numpy(dtype=object)
    s, finish = winrate.system_alignment_deferred(items["model_a"].to_numpy(), items["model_b"].to_numpy(), h, j,
                                                  level=cfg.level)

    def done(boot: np.ndarray) -> None:
        res = finish(boot)
        pairs = res.pop("pairs")
        res.pop("win_rates")
        res["reversed_pairs"] = pairs[pairs["reversed"]].to_dict("records")
        into.update(res)
    later.add(s, done)


def _ppi(items: pd.DataFrame, truth: pd.Series, verdict: pd.Series, cfg: AuditConfig) -> dict[str, Any]:
    """PPI++ over the items the judge judged; those with the truth form the human-labelled set."""
    judged = items.loc[items.index.intersection(verdict.index[verdict.isin(winrate.LABELS)])]
    h = truth.reindex(judged.index).where(lambda s: s.isin(winrate.LABELS), None).to_numpy(dtype=object)
    j = verdict.reindex(judged.index).to_numpy(dtype=object)
    n_lab = int(pd.notna(h).sum())
    out: dict[str, Any] = {"n_labelled": n_lab, "n_unlabelled": int(len(h) - n_lab)}
    if n_lab < 2:
        return out
    a, b = judged["model_a"].to_numpy(), judged["model_b"].to_numpy()
    wr = ppi.ppi_win_rates(a, b, h, j, level=cfg.level)
    out["win_rate"] = _ppi_records(wr)
    cat = judged["category"].to_numpy(dtype=object)
    if len(cat) and pd.notna(cat).all():  # every judged item has a category: stratified PPI++ beside it
        out["win_rate_stratified"] = _ppi_records(ppi.ppi_win_rates(a, b, h, j, category=cat, level=cfg.level))
    pw = ppi.ppi_pairwise_win_rates(a, b, h, j, level=cfg.level).reset_index()
    out["pairwise"] = [{str(k): (v if isinstance(v, str) else int(v) if str(k).startswith("n_") else float(v))
                        for k, v in row.items()} for row in pw.to_dict("records")]
    return out


def _ppi_records(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(k): {str(c): (int(v) if str(c).startswith("n_") else float(v)) for c, v in row.items()}
            for k, row in frame.iterrows()}


def plan(truth: pd.Series, verdict: pd.Series, target_halfwidth: float = PLAN_HALFWIDTH, *, level: float = 0.95,
         n_unlabelled: int | None = None) -> dict[str, Any]:
    """Human labels needed for a CI half-width on the outcome of a comparison, human-only and with
    PPI++, from the judge-human correlation measured on the items both labelled
    (:func:`judgecal.stats.ppi.plan_from_data`); ``n_unlabelled`` None: the judge can cover any number."""
    both = truth.index.intersection(verdict.index)
    y = winrate.outcome_scores(truth.reindex(both).to_numpy(dtype=object))
    yhat = winrate.outcome_scores(verdict.reindex(both).to_numpy(dtype=object))
    ok = np.isfinite(y) & np.isfinite(yhat)
    if ok.sum() < 2:
        raise InputError(f"planning needs at least 2 items with both a human and a judge verdict, found {int(ok.sum())}")
    return ppi.plan_from_data(y[ok], yhat[ok], target_halfwidth, level=level, n_unlabelled=n_unlabelled)


def models_section(items: pd.DataFrame, truth: pd.Series, inputs: list[JudgeInput], cfg: AuditConfig,
                   target_halfwidth: float = PLAN_HALFWIDTH, verdicts: dict[str, pd.Series] | None = None,
                   lc_texts: pd.DataFrame | None = None, draws: pd.DataFrame | None = None) -> dict[str, Any]:
    """``audit.json``'s ``models`` section (documented in docs/reference/audit-json.md); ``verdicts``: the judges' item
    verdicts when already computed (:func:`item_verdicts`); ``lc_texts``: the AlpacaEval items' texts and
    instruction positions for the length-controlled win rate (:func:`judgecal.audit.win_rates.alpaca_texts`);
    ``draws``: the active draw the human labels came from (:mod:`judgecal.audit.active_ppi`), whose inclusion
    probabilities the corrected win rates then use."""
    if verdicts is None:
        verdicts = {inp.judge: item_verdicts(inp.judgments, cfg.invalid_as) for inp in inputs if inp.pairwise}
    verdicts = {rater_key(j): v for j, v in verdicts.items()}  # a stored judge named 'humans' cannot replace them
    raters = {HUMANS: truth, **verdicts}
    later = Replicates(cfg.n_boot, cfg.seed)  # every rater's win rates, matrices and alignment bootstrapped together
    per = {r: rater_results(items, lab, cfg, later) for r, lab in raters.items()}
    out: dict[str, Any] = {"n_items": int(len(items)), "models": sorted(set(items["model_a"]) | set(items["model_b"])),
                           "raters": list(raters)}
    for key in ("win_rate", "matrix", "bradley_terry", "ranking", "by_category"):
        out[key] = {r: res[key] for r, res in per.items() if key in res}
    out["n_items_rated"] = {r: res["n_items"] for r, res in per.items()}
    out["system_alignment"], out["ppi"], out["plan"] = {}, {}, {}
    for judge, v in verdicts.items():
        if per[HUMANS]["n_items"] and per[judge]["n_items"]:
            _alignment(items, truth, v, cfg, out["system_alignment"].setdefault(judge, {}), later)
            out["ppi"][judge] = (_ppi(items, truth, v, cfg) if draws is None else
                                 active_corrected(items, truth, v, draws, cfg.level))
        try:
            out["plan"][judge] = plan(truth, v.loc[v.index.intersection(items.index)], target_halfwidth,
                                      level=cfg.level)
        except ValueError:
            continue
    out["win_rate_weighted"] = {inp.judge: weighted_section(items, inp.judgments, cfg, later)
                                for inp in inputs if inp.pairwise}
    later.run()
    for key in ("win_rate", "matrix"):  # filled in by the run
        out[key] = {r: res[key] for r, res in per.items() if key in res}
    out["lc_win_rate"] = lc_section(items, {inp.judge: inp.judgments for inp in inputs if inp.pairwise}, cfg, lc_texts)
    out["plan_target_halfwidth"] = target_halfwidth
    out["bradley_terry_n_boot"] = min(cfg.n_boot, BT_MAX_BOOT)
    return out
