"""The vocabulary of the verdict rules and of what a probe declares about itself.

A verdict rule is a small typed function ``(VerdictInput) -> list[Effect]``: it reads one judge's figures
(:class:`Figure`, as ``audit.json`` gives them), its flags and the thresholds, and returns the reasons it finds,
each an :class:`Effect` of severity 0 (a note: the judge stays aligned), 1 (caution) or 2 (not aligned). The
verdict is the most serious effect (:func:`judgecal.audit.decision.judge_verdict`). Probes register theirs as
:meth:`judgecal.audit.probe.Probe.verdict_rule`; the agreement, labels and spans sections register theirs in
:data:`judgecal.audit.decision.SECTION_RULES`.

Besides it a probe declares the inputs it reads (:class:`Inputs`), the live calls ``judgecal probe NAME`` makes
for it (:class:`LiveCalls`), the thresholds its rule reads (:class:`ThresholdSpec`) and the closed-form figures
``judgecal validate`` checks it against (:class:`PowerCheck`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

    from judgecal.data.records import Item

#: 0: a note (aligned), 1: caution, 2: not aligned
Severity = Literal[0, 1, 2]
TASK_KINDS = ("pairwise", "pointwise", "labels")


@dataclass(frozen=True)
class Effect:
    """One reason of a verdict: how serious it is, what it says, which rule (``code``) and figure gave it.
    ``replaces_flags``: it stands for the flags raised on ``metric`` (they add no reason of their own, as a
    severe position bias says what its flag would)."""

    severity: Severity
    code: str
    metric: str | None
    text: str
    replaces_flags: bool = False
    #: "rule": read with the rules; "no_sign": with the "no sign of bias" notes, after every rule
    stage: Literal["rule", "no_sign"] = "rule"


@dataclass(frozen=True)
class Figure:
    """A metric of a judge as ``audit.json`` gives it (``None``: undefined or not given)."""

    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    null_value: float | None = None
    q: float | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any] | None) -> Figure:
        if not isinstance(d, Mapping):
            return cls()
        return cls(*(None if d.get(k) is None else float(d[k])
                     for k in ("estimate", "ci_low", "ci_high", "null_value", "q")))


@dataclass(frozen=True)
class VerdictInput:
    """What a verdict rule reads of one judge: its figures, its flags (in the report's order), the thresholds
    (validated: every key is there), the effect of interest, the judge's ``orders`` and ``kind``, and
    ``sections``, the judge's object in ``audit.json`` (a probe reads its own section, under its name), and the
    humans' κ and an annotator's accuracy on its items."""

    metrics: Mapping[str, Figure]
    flags: tuple[str, ...]
    thresholds: Mapping[str, Any]
    effect_of_interest: float = 0.05
    orders: tuple[str, ...] = ()
    kind: str = "pairwise"
    sections: Mapping[str, Any] = field(default_factory=dict)
    human_kappa: float | None = None
    human_accuracy: float | None = None

    def figure(self, name: str) -> Figure:
        return self.metrics.get(name) or Figure()


VerdictRule = Callable[[VerdictInput], list[Effect]]


@dataclass(frozen=True)
class Inputs:
    """What a probe reads of a judge's calls: the ``task_kinds`` of items, the presentation ``orders`` (both,
    ``("AB", "BA")``, for a probe that compares them; empty: any), whether it reads ``mutations`` (prompt
    mutations), the least number of ``samples`` per item and order, and the ``probe_sources`` of the probe pairs
    it reads (``probe:padding``, ...). The default: the judge's unmutated calls on pairs, any order, one sample."""

    task_kinds: tuple[str, ...] = ("pairwise",)
    orders: tuple[str, ...] = ()
    mutations: bool = False
    samples: int = 1
    probe_sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class LiveCalls:
    """The calls ``judgecal probe NAME`` makes for a probe, run generically by the CLI:

    - ``kind="judge"``: ``make(base, truth, n)`` returns the base items it uses and the probe items it builds from
      them (``truth``: the humans' consensus label per item, computed when ``needs_truth``); both are stored and
      judged in ``orders``. ``sample_before``: ``--items`` samples the base items before ``make`` (``n`` is then
      ``None``), else ``make`` is given every base item and ``n``. ``what`` names the probe items in the
      command's line, ``reports`` the metric ``judgecal audit`` reports.
    - ``kind="perturb"``: the template perturbations (:mod:`judgecal.cli.battery`), one of the battery.
    - ``kind="challenge"``: each clean verdict's conversation continued by a challenge and by an agreeing turn
      (:mod:`judgecal.cli.challenge`), one of the battery.
    """

    kind: Literal["judge", "perturb", "challenge"]
    what: str = ""
    reports: str = ""
    make: Callable[[list[Item], pd.Series, int | None], tuple[list[Item], list[Item]]] | None = None
    needs_truth: bool = False
    sample_before: bool = True
    orders: tuple[str, ...] = ("AB", "BA")


@dataclass(frozen=True)
class ThresholdSpec:
    """A threshold a probe's verdict rule reads: ``key`` in ``thresholds.yaml`` with its ``defaults``, each leaf's
    ``ranges`` (``leaf -> (lowest, highest, whole number)``), and ``before``, the key it precedes among the
    thresholds (its place in ``audit.json``; ``None``: last)."""

    key: str
    defaults: Mapping[str, float]
    ranges: Mapping[str, tuple[float, float, bool]]
    before: str | None = None


@dataclass(frozen=True)
class PowerCheck:
    """What ``judgecal validate`` checks of one metric of a probe on the simulated judge
    (:mod:`judgecal.audit.simulate`): ``truth(scenario)``, its closed form; ``planted``: the scenario that plants
    the effect (its interval must cover the truth and be significant there); ``boundary``: a rate whose null 0
    is a boundary (a truth of exactly 0 is left out of coverage)."""

    metric: str
    planted: str
    truth: Callable[[Any], float]  # of a judgecal.audit.simulate.Scenario
    boundary: bool = False
