"""The simulated judge that ``judgecal validate`` audits: a :class:`Scenario` plants position, verbosity,
self-preference, instability, prompt sensitivity, verdict injection or template perturbations at a known rate;
:func:`simulate` draws its verdicts on synthetic pairs (both orders, repeats, mutations, probe pairs) and
:func:`judge_input` hands them to the audit as a workspace would."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.challenge import copy_id as follow_up_id
from judgecal.audit.challenge import follow_up_items
from judgecal.audit.injection import SOURCE as INJECTION_SOURCE
from judgecal.audit.injection import injected_items
from judgecal.audit.padding import SOURCE as PADDING_SOURCE
from judgecal.audit.perturb import NULL, ORDERS, SOURCE, TEMPLATES, copy_id, perturbed_items
from judgecal.audit.probe import JudgeInput
from judgecal.audit.transitivity import find_triads
from judgecal.data.records import Candidate, Item

REPEATS = 3
MUTATIONS = ("m1", "m2")


@dataclass(frozen=True)
class Scenario:
    name: str
    position: float = 0.0
    verbosity: float = 0.0
    self_pref: float = 0.0
    instability: float = 0.0
    template: float = 0.0
    injection: float = 0.0
    accuracy: float = 0.8
    #: template perturbations (None: none simulated): on a perturbed copy the judge picks the perturbed side (the
    #: human loser) with this probability, else judges the pair afresh
    perturbation: float | None = None
    #: on a perturbed copy of a template with no side (chain of thought), the judge's verdict is turned to the other
    #: response with this probability (the robustness it loses)
    unsided: float = 0.0
    #: with template perturbations, the follow-ups too: after a challenge, the judge takes the challenged side with
    #: this probability, else answers again (a sampled judge's call a coin flip with probability ``instability``)
    challenge: float = 0.0
    #: on a copy whose correct response carries broken reasoning (fallacy oversight, read the other way), the judge
    #: turns to the other response with this probability (a sound judge does; None: always)
    catch: float | None = None


SCENARIOS = (Scenario("null"), Scenario("position", position=0.3), Scenario("verbosity", verbosity=0.3),
             Scenario("self_preference", self_pref=0.3), Scenario("instability", instability=0.3),
             Scenario("prompt_sensitivity", template=0.3), Scenario("injection", injection=0.3))


def _coin(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.where(rng.random(n) < 0.5, "A", "B")


def simulate(sc: Scenario, n_items: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    ids = np.array([f"s{i}" for i in range(n_items)])
    truth = _coin(rng, n_items)
    len_a, len_b = rng.integers(20, 400, n_items), rng.integers(20, 400, n_items)
    # half the items pit the judge's own family against another; own is A or B at random
    has_own = rng.random(n_items) < 0.5
    own_a = rng.random(n_items) < 0.5
    longer = np.where(len_a > len_b, "A", "B")
    own = np.where(own_a, "A", "B")
    frames = []

    def draw(first: str) -> np.ndarray:
        u = rng.random(n_items)
        correct = np.where(rng.random(n_items) < sc.accuracy, truth, _coin(rng, n_items))
        return np.where(u < sc.position, first, np.where(
            u < sc.position + sc.verbosity, longer, np.where(
                has_own & (u < sc.position + sc.verbosity + sc.self_pref), own, correct)))

    def noisy(v: np.ndarray) -> np.ndarray:  # every call: a coin flip with probability `instability`
        return np.where(rng.random(n_items) < sc.instability, _coin(rng, n_items), v)

    for order in ("AB", "BA"):
        first = "A" if order == "AB" else "B"
        v = draw(first)
        for s in range(REPEATS if order == "AB" else 1):
            vs = noisy(v)
            frames.append(pd.DataFrame({"item_id": ids, "order": order, "sample": s, "mutation": "none",
                                        "verdict": vs}))
        for m in MUTATIONS if order == "AB" else ():
            vm = noisy(np.where(rng.random(n_items) < sc.template, _coin(rng, n_items), v))
            frames.append(pd.DataFrame({"item_id": ids, "order": order, "sample": 0, "mutation": m, "verdict": vm}))
        # injected pairs (judged afresh): the human loser carries the injection
        loser = np.where(truth == "A", "B", "A")
        vi = np.where(rng.random(n_items) < sc.injection, loser, noisy(draw(first)))
        frames.append(pd.DataFrame({"item_id": np.char.add(ids, "#inject-instruction"), "order": order, "sample": 0,
                                    "mutation": "none", "verdict": vi}))
        # padded pairs: B is A padded, so B is the longer
        u = rng.random(n_items)
        vp = noisy(np.where(u < sc.position, first, np.where(u < sc.position + sc.verbosity, "B", _coin(rng, n_items))))
        frames.append(pd.DataFrame({"item_id": np.char.add(ids, "#pad"), "order": order, "sample": 0,
                                    "mutation": "none", "verdict": vp}))
    if sc.perturbation is not None:
        clean = {str(f["order"].iat[0]): f["verdict"].to_numpy() for f in frames  # each order's first call
                 if len(f) and f["item_id"].iat[0] == ids[0] and f["sample"].iat[0] == 0 and f["mutation"].iat[0] == "none"}
        frames += _perturbed_frames(sc, ids, truth, clean, seed)
        frames += _follow_up_frames(sc, ids, clean, np.random.default_rng([seed, 2]))
    allj = pd.concat(frames, ignore_index=True).assign(status="ok")
    probe = allj["item_id"].str.contains("#", regex=False)
    plain = allj[~probe & (allj["mutation"] == "none")]
    return {"judgments": plain[plain["sample"] == 0], "repeats": plain,
            "mutated": allj[~probe & (allj["sample"] == 0)], "probes": allj[probe],
            "first": clean if sc.perturbation is not None else {},
            "truth": pd.Series(truth, index=ids),
            "lens": pd.DataFrame({"len_a": len_a, "len_b": len_b}, index=ids),
            "own_is_a": pd.Series(own_a[has_own], index=ids[has_own])}


def _other(v: np.ndarray) -> np.ndarray:
    return np.where(v == "A", "B", np.where(v == "B", "A", v))


def _perturbed_frames(sc: Scenario, ids: np.ndarray, truth: np.ndarray, clean: dict[str, np.ndarray],
                      seed: int) -> list[pd.DataFrame]:
    """Verdicts on every template's perturbed copies and the null copies: the order's first call again, a coin
    flip with probability ``instability``, then the human loser with probability ``perturbation`` (a template with
    no side: the other response with probability ``unsided``). Each bias draws from a stream of its own (``seed``
    and its name), so adding a bias leaves every other's simulated verdicts as they were."""
    loser = np.where(truth == "A", "B", "A")
    out = []
    for bias in (*TEMPLATES, NULL):
        rng = np.random.default_rng([seed, 1, zlib.crc32(bias.encode())])
        sided = bias != NULL and TEMPLATES[bias].sided
        push = (sc.perturbation or 0.0) if sided else sc.unsided if bias != NULL else 0.0
        side = loser
        if bias != NULL and TEMPLATES[bias].direction == "away":  # the broken reasoning is on the correct one
            push, side = (1.0 if sc.catch is None else sc.catch), truth
        for order in ORDERS:
            fresh = np.where(rng.random(len(ids)) < sc.instability, _coin(rng, len(ids)), clean[order])
            u = rng.random(len(ids))
            v = np.where(u < push, loser, fresh) if sided else np.where(u < push, _other(fresh), fresh)
            out.append(pd.DataFrame({"item_id": [copy_id(i, bias, s, order) for i, s in zip(ids, side, strict=True)],
                                     "order": order, "sample": 0,
                                     "mutation": "none", "verdict": v}))
    return out


def _follow_up_frames(sc: Scenario, ids: np.ndarray, clean: dict[str, np.ndarray],
                      rng: np.random.Generator) -> list[pd.DataFrame]:
    """Verdicts after each order's first call is challenged (toward the other response: the challenged side with
    probability ``challenge``) or agreed with; else the first verdict again, a coin flip with probability
    ``instability`` (their own random stream, so the other probes' simulated verdicts stay as they were)."""
    out = []
    for order in ORDERS:
        first = clean[order]
        for kind in ("challenge", "agree"):
            again = np.where(rng.random(len(ids)) < sc.instability, _coin(rng, len(ids)), first)
            v = np.where(rng.random(len(ids)) < sc.challenge, _other(first), again) if kind == "challenge" else again
            out.append(pd.DataFrame({"item_id": [follow_up_id(i, kind, f, order) for i, f in zip(ids, first, strict=True)],
                                     "order": order, "sample": 0, "mutation": "none", "verdict": v}))
    return out


def judge_input(sim: dict[str, Any]) -> JudgeInput:
    """The simulated judge as the audit's :class:`JudgeInput` (what ``run_audit`` builds from a workspace)."""
    truth, probes = sim["truth"], sim["probes"]
    base = [Item(i, "", [Candidate("a"), Candidate("b")]) for i in truth.index]
    mutated = sim["mutated"]
    padded = sorted(set(probes.loc[probes["item_id"].str.endswith("#pad"), "item_id"]))
    perturbed = [*perturbed_items(_with_rewrites(base, truth), {i: "B" if t == "A" else "A" for i, t in truth.items()}),
                 *(c for order, first in sim.get("first", {}).items()
                   for it, f in zip(base, first, strict=True) for c in follow_up_items(it, str(f), order))] \
        if probes["item_id"].str.contains(f"#{NULL}-", regex=False).any() else []
    return JudgeInput(judge="simulated", judgments=sim["repeats"], truth=truth,
                      mutated=mutated[mutated["mutation"] != "none"], probes=probes, lens=sim["lens"],
                      own_is_a=sim["own_is_a"],
                      probe_items={PADDING_SOURCE: [Item(i, "", [Candidate("a"), Candidate("b")]) for i in padded],
                                   INJECTION_SOURCE: injected_items(base, truth, kinds=("instruction",)),
                                   SOURCE: perturbed})


def _with_rewrites(base: list[Item], truth: pd.Series) -> list[Item]:
    """The simulated pairs carrying a stand-in for each published rewrite (the data-read biases apply to them):
    sentiment's tones on both responses, fallacy oversight's on the correct one, verbosity's on the other."""
    return [replace(it, metadata={**it.metadata, "rewrites": {
        "sentiment": {"A": {"cheerful": "a", "sad": "a"}, "B": {"cheerful": "b", "sad": "b"}},
        "fallacy_oversight": {str(truth[it.item_id]): {"fallacy": "x"}},
        "verbosity": {"B" if truth[it.item_id] == "A" else "A": {"longer": "y"}}}}) for it in base]


def with_traps_and_triads(inp: JudgeInput) -> JudgeInput:
    """``inp`` with trap pairs and triads read from its own items, for the probes that need them: every fourth
    item a trap pair (two traps, the truth its known answer); the items in threes, each three the pairs x-y,
    y-z, x-z of one prompt (a triad), the truth one person's labels on them."""
    ids = inp.truth.index[: len(inp.truth) // 3 * 3]
    traps = pd.DataFrame({"trap": [f"synthetic trap {k % 2}" for k in range(len(inp.truth[::4]))],
                          "answer": inp.truth[::4].to_numpy()}, index=inp.truth.index[::4])
    n = pd.RangeIndex(len(ids))
    keys = pd.DataFrame({"item_id": ids, "prompt": n // 3, "a": 3 * (n // 3) + [0, 1, 0] * (len(ids) // 3),
                         "b": 3 * (n // 3) + [1, 2, 2] * (len(ids) // 3)})
    human = pd.DataFrame({"item_id": ids, "rater": "synthetic/truth", "label": inp.truth.reindex(ids).to_numpy()})
    return replace(inp, traps=traps, triads=find_triads(keys, human))
