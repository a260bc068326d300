"""The audit's typed report: what ``audit.json`` (schema ``judgecal.audit/2``) holds, as pydantic models.

:func:`judgecal.audit.pipeline.audit_workspace` returns an :class:`AuditReport`; ``audit.json`` is its
:meth:`AuditReport.to_json`, and the JSON Schema shipped beside this module (``judgecal/audit/audit.schema.json``,
:func:`judgecal.audit.schema.io.json_schema`) is generated from these types, so the file, the schema and the code cannot drift
apart (a test regenerates it and compares). The parts every surface reads are typed here: the settings,
the truth, each judge's counts, figures (:class:`Figure`), flags, verdict with its structured reasons
(:class:`Verdict`, :class:`Reason`), its item-by-item breakdown, and the comparisons of judges; a label
judge's ``labels`` and ``criteria`` (:class:`LabelsSection`, :class:`CriterionPart`), the ``loop``
(:class:`Loop`) and the ``provenance`` (:class:`Provenance`) among the sections typed later. Every part is
closed: a key its type does not name is refused, naming the key (a figure takes a metric's own fields and the
thresholds a probe's own, typed). The sections a probe adds to a judge
(``position``, ``verbosity``, a plugin's) are each a :data:`ProbeSection`: names mapped to typed values (a
:class:`Figure` wherever a value has an estimate and only a figure's fields, else a number, a string, a flag,
``null``, or a list or a mapping of these), described in docs/reference/audit-json.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_serializer,
    model_validator,
)
from typing_extensions import TypeAliasType

SCHEMA = "judgecal.audit/2"
SCHEMA_FILE = Path(__file__).parents[1] / "audit.schema.json"
Status = Literal["aligned", "caution", "not aligned"]


class _Open(BaseModel):
    """A part of the report: every field typed, any other key refused (naming it).

    A part whose fields were all typed when this schema began (``_written_first`` ``None``) writes them in
    their order. A part typed later (``_written_first`` names the fields it wrote first before that, ``()`` where
    it was kept as written) writes those, then every other key in the order it was read, so typing a field
    moves no key of ``audit.json`` (nor what the reports show in its order)."""

    model_config = ConfigDict(extra="forbid")
    _written_first: ClassVar[tuple[str, ...] | None] = None
    _read_order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        model = handler(data)
        if cls._written_first is not None and isinstance(data, dict) and isinstance(model, _Open):
            model._read_order = tuple(data)
        return model

    @model_serializer(mode="wrap")
    def _in_order(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        first = self._written_first
        if first is None or not isinstance(out, dict):
            return out
        keys = [k for k in first if k in out]
        keys += [k for k in self._read_order if k in out and k not in keys]
        return {**{k: out[k] for k in keys}, **out}

    def to_json(self) -> dict[str, Any]:
        """This part as ``audit.json`` holds it: every field as it was set, nothing added (a judge's probe sections
        and a figure's own fields after its named fields, in the order they were read)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class _Kept(_Open):
    """A section typed after this schema began: every key written in the order it was read."""

    _written_first = ()


class Figure(_Open):
    """One figure: estimate, interval, sample size; for a test, its null, p, BH q and minimum detectable effect."""

    estimate: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | float | None = None
    null_value: float | None = None
    p: float | None = None
    q: float | None = None
    mde: float | None = None

    #: a metric's own fields beyond these (the mutation a worst-case rate is of, a null run's figure, ...), typed
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, SectionValue] = Field(init=False)


#: a value in a probe's section: a figure (a mapping with an estimate and only a figure's fields), a flag, a
#: whole number, a number, a string, ``null``, or a list or a mapping of these (tried in that order, each exactly)
SectionValue = TypeAliasType(
    "SectionValue",
    Annotated["Union[Figure, StrictBool, StrictInt, StrictFloat, StrictStr, None, list[SectionValue], "
              "dict[str, SectionValue]]", Field(union_mode="left_to_right")])
#: the section a probe adds to a judge (``position``, ``verbosity``, a plugin's): names mapped to typed values
ProbeSection = dict[str, SectionValue]


class KappaZ(_Kept):
    """Judge's Verdict's κ z-score of the judge among the annotator pairs, and its pattern in words."""

    z: float
    class_: str | None = Field(None, alias="class")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AltTest(_Kept):
    """The alternative annotator test (Calderon et al., 2025): whether the judge passes, its winning rate."""

    passed: bool | None = None
    winning_rate: float | None = None


class Section(_Kept):
    """The base of a probe's own section type (``Probe.section``): closed, every key typed, written in the order it
    was read. ``audit.json`` holds the section as a :data:`ProbeSection` (a plugin's too, whether or not it is
    installed where the file is read); the probe's type states exactly what it writes, and
    :func:`judgecal.audit.check.check_probe` holds it to that."""


class HumanLikeness(_Kept):
    """How close a judge is to the humans (a verdict's ``human_likeness``): its class, the like-for-like
    definition (``pairwise`` or ``leave_one_out``) the verdict read, whether the task is subjective, the judge's
    and the humans' κ on it and their difference, and where measured the κ z-score and the alternative
    annotator test."""

    class_: str | None = Field(None, alias="class")
    reference: str | None = None
    subjective: bool | None = None
    judge_kappa: float | None = None
    human_kappa: float | None = None
    difference: Figure | None = None
    kappa_z: KappaZ | None = None
    alt_test: AltTest | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Reason(_Open):
    """One reason of a verdict: how serious, which rule (``code``), which figure, the sentence, and the criterion
    it is about where the judge has several."""

    severity: Status
    code: str
    metric: str | None = None
    text: str
    #: the criterion it is about, for a judge of several criteria
    criterion: str | None = None


class Verdict(_Open):
    """A judge's verdict: its status, its reasons most serious first (sentences and structured), and what
    was not tested; a judge of several criteria also has each criterion's status and which ones it can be
    trusted on (``aligned``) and which not."""

    status: Status
    reasons: list[str]
    details: list[Reason] = Field(default_factory=list)
    not_tested: list[str] = Field(default_factory=list)
    not_tested_probes: list[str] = Field(default_factory=list)
    human_likeness: HumanLikeness | None = None
    criteria: dict[str, Status] | None = None
    trusted_on: list[str] | None = None
    not_trusted_on: list[str] | None = None

    _written_first = ("status", "reasons", "details", "not_tested", "not_tested_probes")


class GroupAccuracy(_Open):
    """A judge's accuracy on one group of items (a category, a candidate model), with Wilson's interval."""

    value: str
    n: int
    accuracy: Figure


class Breakdown(_Open):
    """A judge of pairs item by item: the confusion with the humans (rows ``humans``, columns ``judge``)
    and its accuracy by category and by candidate model."""

    n_items: int
    humans: list[str]
    judge: list[str]
    confusion: list[list[int]]
    by_category: list[GroupAccuracy]
    by_model: list[GroupAccuracy]
    interval: str


class Comparison(_Open):
    """Accuracy of judge X minus judge Y on the items both judged, with its paired bootstrap interval."""

    x: str
    y: str
    n_items: int
    accuracy_x: float | None = None
    accuracy_y: float | None = None
    difference: Figure | None = None
    p: float | None = None
    significant: bool | None = None


class Comparisons(_Open):
    """Every two judges of pairs compared (a pair once, X before Y by name), from one shared bootstrap."""

    pairs: list[Comparison]
    method: str | None = None
    n_boot: int | None = None
    note: str | None = None


class LikeSide(_Kept):
    """One side of a like-for-like comparison (the judge, or the annotators with each other): κ and agreement
    measured the same way on the same items, and chance on that basis."""

    kappa: Figure | None = None
    accuracy: Figure | None = None
    chance_accuracy: float | None = None
    blocks: int | None = None


class LikeDefinition(_Kept):
    """The judge beside the annotators under one definition (``pairwise`` or ``leave_one_out``)."""

    definition: str | None = None
    judge: LikeSide | None = None
    humans: LikeSide | None = None
    difference: dict[str, Figure] | None = None


class Trivial(_Kept):
    """A trivial rater: always the annotators' most frequent label."""

    label: Any = None
    accuracy: float | None = None
    kappa: float | None = None
    words: str | None = None


class LikeForLike(_Kept):
    """``reference.like_for_like`` (:mod:`judgecal.stats.reference`): the judge and the annotators measured
    the same way on the same items; a definition is absent or ``null`` where it cannot be computed."""

    n_items: int | None = None
    n_annotators: int | None = None
    labels: list[Any] | None = None
    kappa_word: str | None = None
    trivial: Trivial | None = None
    pairwise: LikeDefinition | None = None
    leave_one_out: LikeDefinition | None = None


class JudgeReference(_Kept):
    """What a judge's figures are read against (:func:`judgecal.audit.human.judge_reference`): its κ and
    accuracy against the consensus on ``n`` items, beside chance, the base rate, a chance rater's κ, the humans'
    Fleiss κ and leave-one-out accuracy with their intervals, what the verdict read (``basis``), why these mix
    definitions (``consensus_note``), and the like-for-like reference."""

    n: int | None = None
    kappa: float | None = None
    accuracy: float | None = None
    chance_accuracy: float | None = None
    base_rate: float | None = None
    chance_kappa: float | None = None
    human_kappa: float | None = None
    human_kappa_ci: list[float | None] | None = None
    human_accuracy: float | None = None
    human_accuracy_ci: list[float | None] | None = None
    basis: str | None = None
    consensus_note: str | None = None
    like_for_like: LikeForLike | None = None


class Scale(_Kept):
    """The humans' rating scale of a pointwise judge: its levels, their values where ordered (``null`` else),
    whether they are ordered, and whether the scale was declared with the labels (else read from them)."""

    levels: list[Any]
    values: list[int | float] | None = None
    kind: str | None = None
    declared: bool | None = None


class PointwiseHumans(_Kept):
    """The annotators' agreement with each other on a pointwise judge's items and scale (every pair of them
    who labelled an item, both ways): the judge's own figures, measured the same way."""

    accuracy: Figure | None = None
    cohen_kappa: Figure | None = None
    weighted_kappa: Figure | None = None
    spearman_rho: Figure | None = None
    mae: Figure | None = None
    n_annotators: int | None = None
    n_items: int | None = None
    basis: str | None = None

    def figures(self) -> dict[str, Figure]:
        """The figures by metric name, in the order they were written."""
        return {k: v for k in self.to_json() if isinstance(v := getattr(self, k, None), Figure)}


class JudgePointwise(_Kept):
    """A pointwise judge's section: its scale, which κ its verdict reads, and the annotators' own agreement
    on the same items (``humans``)."""

    scale: Scale | None = None
    kappa: str = "cohen_kappa"
    #: the judgments it gave no readable score or label, and the items resampled together (clusters)
    n_invalid: int | float | None = None
    n_clusters: int | None = None
    basis: str | None = None
    humans: PointwiseHumans | None = None


class SpanLike(_Kept):
    """A span judge's like-for-like reference: its mean pairwise character F1 with each annotator beside
    the annotators' with each other and the trivial markers', on the same items."""

    definition: str | None = None
    n_items: int | None = None
    judge: Figure | None = None
    humans: Figure | None = None
    baselines: dict[str, Figure] = Field(default_factory=dict)
    best_baseline: str | None = None
    #: the judge's F1 above the best trivial marker's, over the humans' above it (1: as the humans, 0: trivial)
    normalised: Figure | None = None
    above_baseline: Figure | None = None


class SpanTruth(_Kept):
    """The human spans the span judges were read against (the report's ``spans``): their source (and the
    sources it draws on), annotators, items and marked spans; or, with no source, why there is no span truth."""

    source: str | None = None
    note: str | None = None
    sources: list[str] | None = None
    n_annotators: int | None = None
    n_items: int | None = None
    n_spans: int | None = None


class JudgeSpans(_Kept):
    """A span judge's figures against the span consensus of ``source`` (character IoU, F1, precision, recall,
    micro F1, span-match F1 at IoU 0.5, the balanced accuracy of marking anything), the annotators' pairwise F1
    and its like-for-like reference."""

    source: str | None = None
    span_iou: Figure | None = None
    span_f1: Figure | None = None
    span_precision: Figure | None = None
    span_recall: Figure | None = None
    span_micro_f1: Figure | None = None
    span_match_f1: Figure | None = None
    detection_balanced_accuracy: Figure | None = None
    human_f1: Figure | None = None
    like_for_like: SpanLike | None = None


class Usage(_Kept):
    """What a judge's calls cost: tokens and dollars per 1,000 judgments, latency (``None``: not recorded)."""

    judgments: int | None = None
    prompt_tokens_per_1k: float | None = None
    completion_tokens_per_1k: float | None = None
    cost_usd_per_1k: float | None = None
    latency_s_mean: float | None = None
    latency_s_p95: float | None = None


class StabilityHeadline(_Kept):
    """A judge's Stability Score: the lowest over the figures of its latest stability run."""

    figure: str
    score: float | None = None
    ci: list[float | None] | None = None
    run_id: str = ""


class AxisShift(_Kept):
    """One axis of a run (seed, temperature, mutation, backend, ...): its share of the squared shifts from the
    base variant and its largest shift, at which variant."""

    n_variants: int | None = None
    sum_sq_pp2: float | None = None
    share: float | None = None
    max_shift_pp: float | None = None
    variant: int | None = None


class LargestShift(_Kept):
    variant: int
    axis: str
    shift_pp: float | None = None


class Decomposition(_Kept):
    axes: dict[str, AxisShift] = Field(default_factory=dict)
    total_sum_sq_pp2: float | None = None
    top_axis: str | None = None
    largest_shift: LargestShift | None = None


class GuardViolation(_Kept):
    variant: int
    shift_pp: float | None = None
    name: str | None = None
    figure: str | None = None


class StabilityFigure(_Kept):
    """One figure (accuracy, kappa, a model's win rate) across a run's variants: each variant's value, the spread
    (σ, in points) and Stability Score with their intervals, the per-axis decomposition, the guard's violations."""

    figures: list[float | None] = Field(default_factory=list)
    sigma_pp: float | None = None
    sigma_ci: list[float | None] | None = None
    halfwidth_pp: float | None = Field(None, description="1.96 σ: the ±points the figure is stable within at 95%")
    score: float | None = None
    score_ci: list[float | None] | None = None
    n_items: int | None = None
    n_variants: int | None = None
    n_boot: int | None = None
    decomposition: Decomposition | None = None
    guard: list[GuardViolation] = Field(default_factory=list)


class StabilityVariant(_Kept):
    variant: int | None = None
    name: str | None = None
    axis: str | None = None
    level: Any = None
    reused_from: int | None = None
    calls: int | None = None
    paid: int | None = None
    #: each figure's value on this variant
    figures: dict[str, float | None] | None = None
    identical_outputs: float | None = None


class CrossAgreement(_Kept):
    """The same figure measured on another backend (``cross_backend``) or by another judge (``cross_judge``)."""

    variant: str | None = None
    figure: str | None = None
    judge: str | None = None
    difference_pp: float | None = None
    tolerance_pp: float | None = None
    within_tolerance: bool | None = None
    item_agreement: float | None = None
    kappa: float | None = None
    #: the items both judged
    n: int | None = None


class FingerprintChange(_Kept):
    """One field of the environment fingerprint that differs from the base variant's."""

    field: str
    before: Any = None
    after: Any = None


class FingerprintDiff(_Kept):
    variant: str | None = None
    changes: list[FingerprintChange] = Field(default_factory=list)


class StabilityGuard(_Kept):
    threshold_pp: float | None = None
    status: Literal["pass", "fail"] = "pass"
    violations: list[GuardViolation] = Field(default_factory=list)


class StabilityCalls(_Kept):
    """A run's calls: planned, paid for, and the variants that reused another's verdicts."""

    planned: int | None = None
    paid: int | None = None
    reused_variants: list[str] = Field(default_factory=list)


class StabilityRun(_Kept):
    """One stored stability run of the judge (``judgecal stability run`` / ``import`` / ``repeats``): when it was
    made (``created_at``, Unix seconds), its variants and calls, its figures, and the notes its variants carry."""

    run_id: str
    judge: str | None = None
    origin: str | None = None
    created_at: float | None = None
    kind: str | None = None
    n_items: int | None = None
    variants: list[StabilityVariant] = Field(default_factory=list)
    figures: dict[str, StabilityFigure] = Field(default_factory=dict)
    cross_backend: list[CrossAgreement] = Field(default_factory=list)
    cross_judge: list[CrossAgreement] = Field(default_factory=list)
    calls: StabilityCalls | None = None
    guard: StabilityGuard | None = None
    fingerprint_diffs: list[FingerprintDiff] = Field(default_factory=list)
    notes: dict[str, str] = Field(default_factory=dict)


class JudgeStability(_Kept):
    """``judges.<judge>.stability``: every stored stability run of the judge and the headline of its latest."""

    runs: list[StabilityRun] = Field(default_factory=list)
    score: StabilityHeadline | None = None
    guard: str | None = None


class AnnotatorTest(_Kept):
    """The alternative annotator test against one annotator left out: on how many items, how often the judge
    and that annotator agree with the others (ρ), their mean difference, the one-sided t-test and whether
    the Benjamini–Yekutieli procedure rejects it (the judge is as good as that annotator)."""

    annotator: str
    n: int | None = None
    rho_judge: float | None = None
    rho_human: float | None = None
    mean_diff: float | None = None
    t: float | None = None
    p_value: float | None = None
    rejected: bool | None = None


class ReplaceAnnotator(_Kept):
    """The alternative annotator test (Calderon et al., 2025): could the judge replace one of the annotators?"""

    winning_rate: float | None = None
    passed: bool | None = None
    advantage_probability: float | None = None
    epsilon: float | None = None
    q: float | None = None
    n_annotators: int | None = None
    per_annotator: list[AnnotatorTest] = Field(default_factory=list)
    min_items: int | None = None
    kappa_z: Any = None


class ReliabilityBin(_Kept):
    """One bin of the reliability diagram: stated confidence against agreement with the humans."""

    bin_low: float | None = None
    bin_high: float | None = None
    n: int | None = None
    confidence: float | None = None
    accuracy: float | None = None


class Recalibrated(_Kept):
    method: str | None = None
    ece: Figure | None = None


class Calibration(_Kept):
    """How well the judge's stated confidence matches its agreement with the humans."""

    confidence: str | None = None
    n: int | None = None
    n_bins: int | None = None
    mean_confidence: float | None = None
    agreement: float | None = None
    ece: Figure | None = None
    reliability: list[ReliabilityBin] = Field(default_factory=list)
    recalibrated: Recalibrated | None = None


class HeldOut(_Kept):
    n: int | None = None
    n_kept: int | None = None
    coverage: float | None = None
    agreement: float | None = None


class Selective(_Kept):
    """Trust or Escalate (Jung et al., 2025): the confidence threshold above which the judge decides alone."""

    threshold: float | None = None
    target: float | None = None
    delta: float | None = None
    n_calibration: int | None = None
    n_kept: int | None = None
    coverage: float | None = None
    agreement: float | None = None
    agreement_lower_bound: float | None = None
    feasible: bool | None = None
    held_out: HeldOut | None = None
    n_items: int | None = None
    n_escalated: int | None = None
    coverage_all_items: float | None = None


class LabelConfusion(_Kept):
    """A label judge's confusion matrix: judgments counted by the human truth's label (``rows``) and the
    judge's (``columns``), in the order of ``labels``."""

    rows: str | None = None
    columns: str | None = None
    labels: list[str] = Field(default_factory=list)
    counts: list[list[int]] = Field(default_factory=list)


class AlphaFigure(Figure):
    """Krippendorff's α, with the level of measurement it was computed at (``nominal`` or ``ordinal``)."""

    level_of_measurement: str | None = None


class LabelHumans(_Kept):
    """The annotators' agreement with each other on a label judge's items."""

    fleiss_kappa: Figure | None = None
    krippendorff_alpha: AlphaFigure | None = None
    n_items: int | None = None
    n_annotators: int | None = None


class LabelSide(_Kept):
    """One side of a label judge's like-for-like comparison (the judge with each annotator, or the annotators
    with each other), pooled over its pairs: accuracy, κ, macro F1, each label's recall and, binary, the rates
    of the positive label."""

    accuracy: Figure | None = None
    kappa: Figure | None = None
    macro_f1: Figure | None = None
    recall_by_label: dict[str, Figure] = Field(default_factory=dict)
    tpr: Figure | None = None
    tnr: Figure | None = None
    precision: Figure | None = None
    f1: Figure | None = None
    balanced_accuracy: Figure | None = None

    def rate(self, name: str) -> Figure | None:
        """The figure ``name`` as a judge's metrics name it (``cohen_kappa``/``weighted_kappa`` read ``kappa``,
        ``recall_by_label.<label>`` one label's recall); ``None`` where this side has none."""
        base, _, label = name.partition(".")
        if base == "recall_by_label":
            return self.recall_by_label.get(label)
        key = "kappa" if name in ("cohen_kappa", "weighted_kappa") else name
        got = getattr(self, key) if key in LabelSide.model_fields else None
        return got if isinstance(got, Figure) else None


class TrivialRater(_Kept):
    """The rater that always answers the truth's commonest label (:func:`judgecal.stats.trivial.trivial_rater`):
    its label, the count of labels it was measured on, and its figure by metric name (``null`` where undefined:
    the precision of a label it never gives)."""

    label: str | None = None
    n: int | float | None = None
    figures: dict[str, float | None] = Field(default_factory=dict)


class LabelLikeForLike(_Kept):
    """A label judge's like-for-like comparison: the judge with each annotator beside the annotators with each
    other, on the same items, and the trivial rater on the annotators' labels of the judge's pairs."""

    definition: str | None = None
    judge: LabelSide | None = None
    humans: LabelSide | None = None
    trivial: TrivialRater | None = None


class PassRateFigure(Figure):
    """A corrected pass rate: Rogan–Gladen's with the bootstrap replicates it was undefined in, PPI++'s with
    its λ and its interval's width against the human-only one's."""

    n_undefined: int | None = None
    lam: float | None = None
    width_ratio: float | None = None


class Prevalence(_Kept):
    """A binary judge's pass rate (the share labelled ``positive``) four ways: as the judge reports it,
    corrected by Rogan–Gladen and by PPI++ with the human labels, and from the human labels alone."""

    judge_reported: Figure | None = None
    human_only: Figure | None = None
    rogan_gladen: PassRateFigure | None = None
    ppi: PassRateFigure | None = None
    n_labelled: int | None = None
    n_all: int | None = None
    positive: str | None = None


class PpiPlan(_Kept):
    """The PPI++ label plan (:func:`judgecal.stats.ppi.plan_labels`): the labels each way, the gain, and the
    ceiling of that gain (Dorner et al.) with its note."""

    target_halfwidth: float | None = None
    level: float | None = None
    sigma2: float | None = None
    rho: float | None = None
    n_unlabelled: int | None = None
    n_human_only: int | None = None
    n_ppi: int | None = None
    gain: float | None = None
    n_ppi_if_judge_not_better: int | None = None
    exceeds_ceiling: bool | None = None
    ceiling: float | None = None
    ceiling_note: str | None = None
    n_labelled_measured: int | None = None
    rho_defined: bool | None = None


class PassRatePlan(_Kept):
    """How many human labels a binary judge's pass rate within ± ``halfwidth`` needs, human-only and with
    PPI++, beside the labelled and judged items there are (:func:`judgecal.stats.classification.pass_rate_plan`)."""

    n_human_only: int | None = None
    n_ppi: int | None = None
    more_human_only: int | None = None
    more_ppi: int | None = None
    enough_items: bool | None = None
    pass_rate: float | None = None
    z: float | None = None
    halfwidth: float | None = None
    level: float | None = None
    n_labelled: int | None = None
    n_all: int | None = None
    n_unlabelled: int | None = None
    sigma2: float | None = None
    rho: float | None = None
    rho_defined: bool | None = None
    ppi_plan: PpiPlan | None = None


class LabelsSection(_Kept):
    """A binary or categorical judge's ``labels`` section (:mod:`judgecal.audit.labels`): its declared label
    set, the confusion with the human truth, the counts, the annotators' own agreement, the like-for-like
    comparison, and (binary) the pass rate and its plan; ``pooled_criteria`` names the criteria a pooled part
    reads together (no pass rate there)."""

    task: str | None = None
    labels: list[str] = Field(default_factory=list)
    positive: str | None = None
    ordinal: bool | None = None
    criterion: str | None = None
    confusion: LabelConfusion | None = None
    n_invalid: int | None = None
    n_judgments: int | None = None
    n_with_truth: int | None = None
    humans: LabelHumans | None = None
    like_for_like: LabelLikeForLike | None = None
    prevalence: Prevalence | None = None
    plan: PassRatePlan | None = None
    pooled_criteria: list[str] | None = None
    trivial: TrivialRater | None = None


class CriterionPart(_Kept):
    """A label judge's figures on one criterion's items alone (``judges.<judge>.criteria.<criterion>``): its
    metrics, pointwise and labels sections, like-for-like reference and verdict, as a judge's."""

    n_items_with_consensus: int | None = None
    kind: str | None = None
    metrics: dict[str, Figure] = Field(default_factory=dict)
    pointwise: JudgePointwise | None = None
    labels: LabelsSection | None = None
    reference: JudgeReference | None = None
    verdict: Verdict | None = None

    def figure(self, name: str) -> Figure | None:
        """The figure ``name`` on this criterion, or ``None`` where it was not measured."""
        return self.metrics.get(name)


class OverTimeHumans(_Kept):
    """The annotators' leave-one-out accuracy on a period's items."""

    estimate: float | None = None
    n: int | None = None


class OverTimePeriod(_Kept):
    """One period of :class:`OverTime`: its agreement with the truth (Wilson interval), κ, the annotators' own
    level, invalid rate, role (``before``, ``baseline``, ``after``); after the baseline, the running agreement
    since it, the window that gives the most evidence of a drop (its first period, items, agreement and
    anytime-valid interval), the drop below the baseline and the decision."""

    period: str
    start: str | None = None
    n: int
    agreement: float
    agreement_low: float
    agreement_high: float
    kappa: float | None = None
    humans: OverTimeHumans | None = None
    invalid_rate: float
    role: Literal["before", "baseline", "after"]
    since_baseline: int | None = None
    running: float | None = None
    window_from: str | None = None
    window_n: int | None = None
    window_agreement: float | None = None
    window_low: float | None = None
    window_high: float | None = None
    drop: float | None = None
    drop_low: float | None = None
    drop_high: float | None = None
    drift: bool | None = None


class OverTimeBaseline(_Kept):
    """The baseline period's agreement with its exact interval (its lower bound: the drift boundary)."""

    estimate: float
    low: float
    high: float
    n: int


class OverTime(_Kept):
    """``judges.<judge>.over_time``: the judge over its periods as ``judgecal monitor`` reports it
    (:mod:`judgecal.audit.over_time_section`: ``judgecal monitor``'s defaults), present only when records carry a
    time or a period; ``error`` (and nothing else but ``by``) when it could not be monitored."""

    by: str
    consensus: str | None = None
    baseline: str | None = None
    alpha: float | None = None
    effect_of_interest: float | None = None
    method: str | None = None
    baseline_agreement: OverTimeBaseline | None = None
    items_without_period: int | None = None
    periods: list[OverTimePeriod] = Field(default_factory=list)
    drift: bool | None = None
    first_drift: str | None = None
    error: str | None = None


class MonitorSeries(OverTime):
    """``judgecal monitor``'s result (:func:`judgecal.audit.monitor.monitor`): a judge's :class:`OverTime`, naming
    the judge and, unlike an audit's section, every setting and the baseline's agreement (it raises rather than
    write an ``error``); what its terminal table and the explorer's Over time page show."""

    judge: str
    consensus: str
    baseline: str
    alpha: float
    effect_of_interest: float
    method: str
    baseline_agreement: OverTimeBaseline
    items_without_period: int
    drift: bool


class BiasFigure(_Kept):
    """A bias profile's figure, or its null beside it: two unperturbed runs measured the same way (with an
    interval), or the point that no bias means (no interval)."""

    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class BiasEntry(_Kept):
    """One bias probe in a judge's profile (:mod:`judgecal.audit.profile`): its charted figure beside its null,
    whether it was flagged, or why it was not tested and the command that tests it."""

    probe: str
    title: str
    metric: str
    metric_title: str
    status: Literal["tested", "not tested", "not applicable"]
    figure: BiasFigure | None = None
    null: BiasFigure | None = None
    flagged: bool = False
    flags: list[str] = Field(default_factory=list)
    underpowered: bool = False
    severity: str | None = None
    how_to_run: str | None = None


class Judge(_Open):
    """One judge: what it judged, its figures (:class:`Figure` by metric name), flags, verdict, breakdown, and
    a :data:`ProbeSection` under each probe's name that wrote one (``position``, ``verbosity``, a plugin's)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, ProbeSection] = Field(init=False)

    kind: Literal["pairwise", "pointwise"]
    n_judgments: int
    n_items: int
    n_items_with_consensus: int
    orders: list[str]
    metrics: dict[str, Figure]
    usage: Usage
    flags: list[str]
    verdict: Verdict | None = None
    breakdown: Breakdown | None = None
    reference: JudgeReference | None = None
    pointwise: JudgePointwise | None = None
    spans: JudgeSpans | None = None
    stability: JudgeStability | None = None
    replace_annotator: ReplaceAnnotator | None = None
    calibration: Calibration | None = None
    selective: Selective | None = None
    labels: LabelsSection | None = None
    criteria: dict[str, CriterionPart] | None = None
    over_time: OverTime | None = None
    biases: list[BiasEntry] | None = None

    _written_first = ("kind", "n_judgments", "n_items", "n_items_with_consensus", "orders", "metrics", "usage",
                      "flags", "verdict", "breakdown")

    def section(self, name: str) -> ProbeSection | None:
        """The section probe ``name`` wrote on this judge, or ``None`` where it wrote none."""
        return (self.model_extra or {}).get(name)

    def figure(self, name: str) -> Figure | None:
        """The figure ``name`` of this judge, or ``None`` where it was not measured (a probe not run)."""
        return self.metrics.get(name)

    def criterion(self, name: str) -> CriterionPart | None:
        """The judge's figures on the criterion ``name``, or ``None`` where it was not read on it."""
        return self.criteria.get(name) if self.criteria else None


#: a bound of a probe's own thresholds, as the file gives it
ThresholdValue = TypeAliasType("ThresholdValue", Annotated["StrictBool | StrictInt | StrictFloat | StrictStr | None",
                                                           Field(union_mode="left_to_right")])


class LevelBand(_Kept):
    """A figure's bands: not aligned below the first bound, aligned from the second (between: caution)."""

    not_aligned_below: int | float | None = None
    aligned_at_least: int | float | None = None


class GapBand(_Kept):
    """A gap's (or a rate's) bands: caution above the first bound, not aligned above the second."""

    caution_above: int | float | None = None
    not_aligned_above: int | float | None = None


class PositionBand(_Kept):
    """Position bias: not aligned when the first-position rate lies beyond this share (either way)."""

    not_aligned_beyond: int | float | None = None


class SeriousBiasBand(_Kept):
    """A bias its probe declares serious: not aligned when its figure lies more than this from its null."""

    not_aligned_beyond: int | float | None = None


class GateTolerances(_Kept):
    """How much worse a gate's candidate may be on each metric before it fails (``judgecal gate``)."""

    kappa_tolerance: int | float | None = None
    accuracy_tolerance: int | float | None = None
    invalid_rate_tolerance: int | float | None = None
    bias_tolerance: int | float | None = None


class Thresholds(_Kept):
    """The thresholds the verdicts read (:mod:`judgecal.audit.decision`): judgecal's defaults overridden key by
    key by ``<workspace>/thresholds.yaml``; each bound as the file gives it (a whole number stays one)."""

    version: int | str | None = Field(None, description="the thresholds file's version, as the file gives it")
    alpha: float | None = None
    min_items: int | None = None
    kappa: LevelBand | None = None
    kappa_gap: GapBand | None = None
    accuracy_gap: GapBand | None = None
    invalid_rate: GapBand | None = None
    position: PositionBand | None = None
    serious_bias: SeriousBiasBand | None = None
    span_f1_ratio: LevelBand | None = None
    span_score: LevelBand | None = None
    label_rate_gap: GapBand | None = None
    reference: str | None = None
    business_loss: dict[str, float] | None = None
    gate: GateTolerances | None = None

    #: a probe's own thresholds (its ``ThresholdSpec``: a plugin's too), under its key: each bound by name
    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, dict[str, ThresholdValue]] = Field(init=False)


class SelectiveSettings(_Kept):
    """How selective evaluation was computed: its target agreement, its risk ``delta``, how the items split."""

    target: float | None = None
    delta: float | None = None
    split: str | None = None


class ReplaceSettings(_Kept):
    """How the alternative annotator test was run: its ε, its ``q`` and the multiple-testing procedure."""

    epsilon: float | None = None
    q: float | None = None
    procedure: str | None = None


class Settings(_Open):
    """How the audit was computed: the truth, how an unreadable answer counts, the bootstrap, the tests, the
    thresholds, selective evaluation's and the alternative annotator test's settings."""

    consensus: str
    truth_source: str | None
    invalid_as: str
    n_boot: int
    seed: int
    ci_level: float = Field(ge=0, lt=1)  # 0: not stated (an earlier schema's file, upgraded)
    bootstrap: str
    effect_of_interest: float | None = None
    multiple_testing: str | None = None
    alpha: float | None = Field(None, gt=0, lt=1)
    thresholds: Thresholds | None = None
    selective: SelectiveSettings | None = None
    replace_annotator: ReplaceSettings | None = None

    _written_first = ("consensus", "truth_source", "invalid_as", "n_boot", "seed", "ci_level", "bootstrap",
                      "effect_of_interest", "multiple_testing", "alpha", "thresholds")


class Truth(_Open):
    """The consensus the judges were read against: its method and source (and the sources its labels come
    from), its annotators and labels."""

    method: str
    aggregator: str | None = None
    source: str | None = None
    n_items: int | None = None
    n_annotators: int | None = None
    n_labels: int | None = None
    sources: list[str] | None = None
    label_counts: dict[str, int | float] | None = None
    fleiss_kappa: Figure | None = None
    chance_accuracy: float | None = Field(None, description="Σ p_k² of the label counts: a random rater's accuracy")

    _written_first = ("method", "aggregator", "source")


class Interval(_Kept):
    """An estimate with its interval (each ``null`` where undefined)."""

    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class WinRate(Interval):
    """A model's win rate by one rater: (wins + ties/2) / comparisons, with its item-bootstrap interval."""

    n: int | None = None


class Strength(_Kept):
    """A model's Bradley–Terry strength (``score``) by one rater, its interval, its rank and rank range."""

    score: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    rank: int | None = None
    rank_low: int | None = None
    rank_high: int | None = None


class WinMatrix(_Kept):
    """The win rate of the row model against the column model (``null`` where two never met)."""

    models: list[str]
    estimate: list[list[float | None]]
    ci_low: list[list[float | None]] | None = None
    ci_high: list[list[float | None]] | None = None
    n: list[list[int | None]] | None = None


class RankCorrelation(Interval):
    """A rank correlation of a judge's model win rates with the humans', its interval and p-value."""

    p_value: float | None = None


class ModelPair(_Kept):
    """Two models' win-rate difference (``model_1`` − ``model_2``) by the humans (``reference``) and by the
    judge, each with its interval; ``reversed``: the judge orders them the other way, ``significant``: and the
    humans' interval excludes 0."""

    model_1: str
    model_2: str
    diff_reference: float | None = None
    diff_reference_ci_low: float | None = None
    diff_reference_ci_high: float | None = None
    diff_judge: float | None = None
    diff_judge_ci_low: float | None = None
    diff_judge_ci_high: float | None = None
    reversed: bool | None = None
    significant: bool | None = None


class SystemAlignment(_Kept):
    """Does a judge rank the models as the humans do, over ``n_items`` items and ``n_models`` models: Spearman and
    Kendall, and of the ``n_pairs`` model pairs those it reverses (``n_reversed``, ``n_reversed_significant``)."""

    n_items: int | None = None
    n_models: int | None = None
    spearman: RankCorrelation | None = None
    kendall: RankCorrelation | None = None
    reversed_pairs: list[ModelPair] = Field(default_factory=list)
    n_pairs: int | None = None
    n_reversed: int | None = None
    n_reversed_significant: int | None = None


class CorrectedWinRate(_Kept):
    """A model's PPI++ win rate and interval beside the human-only (classical) one on the same labelled items,
    with what the correction used (λ, the labelled and unlabelled counts) and the interval's width against
    the human-only one's."""

    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    lam: float | None = None
    n_labelled: int | None = None
    n_unlabelled: int | None = None
    classical_estimate: float | None = None
    classical_ci_low: float | None = None
    classical_ci_high: float | None = None
    width_ratio: float | None = None


class CorrectedWinRates(_Kept):
    """A judge's win rates corrected by its errors on the human-labelled items (PPI++, or ``estimator:
    active`` for labels drawn with known inclusion probabilities), by model, and head to head (``pairwise``)."""

    win_rate: dict[str, CorrectedWinRate] = Field(default_factory=dict)
    #: stratified PPI++ by category, where every judged item has one
    win_rate_stratified: dict[str, CorrectedWinRate] | None = None
    estimator: str | None = None
    n_labelled: int | None = None
    n_unlabelled: int | None = None
    n_drawn_without_label: int | None = None
    pairwise: list[dict[str, str | float | int | None]] | None = None


class Models(_Kept):
    """Which model is better, by each rater (``humans`` = the consensus, then each judge), over ``n_items`` pairs
    (``n_items_rated`` by each rater): win rates (also by category, AlpacaEval's probability-weighted and
    length-controlled ones by judge, a judge's ``{"error": why}`` where one cannot be computed), the win matrix,
    Bradley–Terry strengths (from ``bradley_terry_n_boot`` resamples), the ranking, system alignment, corrected
    win rates and the PPI++ label plan for ± ``plan_target_halfwidth``."""

    n_items: int | None = None
    models: list[str] = Field(default_factory=list)
    raters: list[str] | None = None
    win_rate: dict[str, dict[str, WinRate]] = Field(default_factory=dict)
    matrix: dict[str, WinMatrix] = Field(default_factory=dict)
    bradley_terry: dict[str, dict[str, Strength]] = Field(default_factory=dict)
    ranking: dict[str, list[str]] = Field(default_factory=dict)
    by_category: dict[str, dict[str, dict[str, WinRate]]] | None = None
    n_items_rated: dict[str, int] | None = None
    system_alignment: dict[str, SystemAlignment] = Field(default_factory=dict)
    ppi: dict[str, CorrectedWinRates] = Field(default_factory=dict)
    plan: dict[str, PpiPlan] | None = None
    win_rate_weighted: dict[str, dict[str, WinRate]] | None = None
    lc_win_rate: dict[str, dict[str, WinRate | str]] | None = None
    plan_target_halfwidth: float | None = None
    bradley_terry_n_boot: int | None = None


class Humans(_Kept):
    """The humans' own agreement: Fleiss' κ among the annotators and an annotator's leave-one-out accuracy."""

    source: str | None = None
    n_annotators: int | None = None
    n_items: int | None = None
    fleiss_kappa: Figure | None = None
    loo_accuracy: Figure | None = None


class Confusion(_Kept):
    """An annotator's labels (columns) against the consensus' (rows)."""

    rows_consensus: list[Any] = Field(default_factory=list)
    cols_annotator: list[Any] = Field(default_factory=list)
    counts: list[list[int | float]] = Field(default_factory=list)


class Annotator(_Kept):
    """One annotator: how many labels, its leave-one-out accuracy, chance agreement, confusion and warnings."""

    n_labels: int | None = None
    loo_accuracy: Figure | None = None
    chance_agreement: float | None = None
    confusion: Confusion | None = None
    likely_spammer: bool | None = None
    systematic_bias: bool | None = None
    most_used_label: Any = None
    most_used_share: float | None = None
    #: its accuracy on the gold items, where there are some
    gold_accuracy: Figure | None = None


class AnnotatorSource(_Kept):
    """One source of human labels: how many labels, items and annotators it holds."""

    source: str | None = None
    labels: int | None = None
    items: int | None = None
    annotators: int | None = None


class Annotators(_Kept):
    """The annotators of the truth's source: each one's quality and their agreement with each other (each pair's
    κ for up to 20 annotators, ``pairwise_note`` beyond); with several sources and none chosen, the same for each
    under ``by_source``."""

    source: str | None = None
    annotators: dict[str, Annotator] = Field(default_factory=dict)
    fleiss_kappa: Figure | None = None
    krippendorff_alpha: Figure | None = None
    pairwise_cohen_kappa: dict[str, Figure] = Field(default_factory=dict)
    n_labels: int | None = None
    n_items: int | None = None
    n_annotators: int | None = None
    pairwise_note: str | None = None
    by_source: dict[str, Annotators] | None = None
    sources: list[AnnotatorSource] = Field(default_factory=list)


class LoopMetric(_Kept):
    """One metric of a paired comparison (:mod:`judgecal.loop.compare`): the baseline's and the candidate's
    figure, the difference (candidate − baseline) with its paired-bootstrap interval, the tolerance and
    ``result`` (``worse``, ``not worse``, ``undefined``)."""

    baseline: float | None = None
    candidate: float | None = None
    difference: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    direction: str | None = None
    null: float | None = None
    worse_by: float | None = None
    worse_ci_low: float | None = None
    worse_ci_high: float | None = None
    worse_bound: float | None = None
    p_not_worse: float | None = None
    tolerance: float | None = None
    result: str | None = None


class Gate(_Kept):
    """The last ``judgecal gate``: may the candidate judge replace the baseline (no metric worse beyond its
    tolerance and significantly so)."""

    schema_: str | None = Field(None, alias="schema")
    generated_at: str | None = None
    consensus: str | None = None
    baseline: str | None = None
    candidate: str | None = None
    n_items: int | None = None
    alpha: float | None = None
    alpha_each: float | None = None
    ci_level: float | None = None
    n_boot: int | None = None
    seed: int | None = None
    invalid_as: str | None = None
    metrics: dict[str, LoopMetric] = Field(default_factory=dict)
    not_compared: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    passed: bool | None = None
    rule: str | None = None
    #: an alignment's train-split comparison: no improvement is claimed from it
    improvement: bool | None = None
    note: str | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PanelSpec(_Kept):
    """The judge spec a panel is stored under: the ``panel`` backend, its name, its members' spec hashes."""

    backend: str | None = None
    model: str | None = None
    options: dict[str, str] = Field(default_factory=dict)


class PanelRun(_Kept):
    """A panel (``judgecal panel``): its members, its rule, and how many verdict slots a strict majority
    decided (unanimously) or left undecided."""

    spec: PanelSpec | None = None
    panel: str | None = None
    members: list[str] = Field(default_factory=list)
    rule: str | None = None
    spec_hash: str | None = None
    slots: int | None = None
    decided: int | None = None
    no_majority: int | None = None
    unanimous: int | None = None


class AlignSplit(_Kept):
    seed: int | None = None
    train_share: float | None = None
    stratified: bool | None = None
    """How an alignment split the human-labelled items into train and held-out."""

    n_train: int | None = None
    n_held_out: int | None = None
    train_labels: dict[str, int] = Field(default_factory=dict)
    held_out_labels: dict[str, int] = Field(default_factory=dict)


class AlignOptimizer(_Kept):
    """The example sets an optimizer (``--method optimizer``) scored on the train split."""

    library: str | None = None
    optimizer: str | None = None
    n_fit: int | None = None
    n_val: int | None = None
    candidates: int | None = None
    best_val_agreement: float | None = None
    scores: list[dict[str, SectionValue]] = Field(default_factory=list)
    calls: int | None = None
    cached_calls: int | None = None
    scratch: str | None = None
    note: str | None = None


class AlignRationales(_Kept):
    """The annotators' rationales quoted as guidelines (``--method guidelines``)."""

    with_rationale: int | None = None
    train: int | None = None
    agree_with_truth: int | None = None
    positional: int | None = None
    used: int | None = None
    from_mistakes: int | None = None
    annotations: list[SectionValue] = Field(default_factory=list)


class Alignment(_Kept):
    """One ``judgecal align`` candidate: the judge it was built from, how (``method``: its examples
    (``shots``, item ids) or ``guidelines``), the split, and the held-out comparison with its conclusion."""

    schema_: str | None = Field(None, alias="schema")
    judge: str | None = None
    candidate: str | None = None
    method: str | None = None
    candidate_spec: str | None = None
    consensus: str | None = None
    split: AlignSplit | None = None
    shots: list[str] = Field(default_factory=list)
    guidelines: list[str] = Field(default_factory=list)
    rationales: AlignRationales | None = None
    optimizer: AlignOptimizer | None = None
    held_out: Gate | None = None
    conclusion: str | None = None
    basis: str | None = None
    train: Gate | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class StageItems(_Kept):
    """What a cascade's stage decided on one set of items (all items, or the held-out ones)."""

    reached: int | None = None
    decided: int | None = None
    kept: int | None = None
    share_decided: float | None = None
    agreement: float | None = None
    agreement_lower_bound: float | None = None


class CascadeStage(_Kept):
    """One judge of a cascade: the confidence threshold it decides at and what it decided."""

    judge: str | None = None
    confidence: str | None = None
    threshold: float | None = None
    feasible: bool | None = None
    delta_stage: float | None = None
    calibration: StageItems | None = None
    held_out: StageItems | None = None
    all_items: StageItems | None = None
    cost_per_item_reaching: float | None = None


class CascadeHeldOut(_Kept):
    """What the judges of a cascade decided together on the held-out items, and their agreement there."""

    decided: int | None = None
    coverage: float | None = None
    agreement: float | None = None
    to_people: int | None = None


class CascadeGuarantee(_Kept):
    """What a cascade guarantees, in words, and the method behind it."""

    statement: str | None = None
    method: str | None = None


class Cascade(_Kept):
    """One ``judgecal cascade`` (cheap judge, stronger judge, people) without its per-item maps: each stage,
    the target agreement and ``delta``, the held-out result, the share left to people and the cost."""

    schema_: str | None = Field(None, alias="schema")
    name: str | None = None
    stages: list[CascadeStage] = Field(default_factory=list)
    target: float | None = None
    delta: float | None = None
    seed: int | None = None
    n_items: int | None = None
    n_labelled: int | None = None
    n_calibration: int | None = None
    n_held_out: int | None = None
    guarantee: CascadeGuarantee | None = None
    held_out: CascadeHeldOut | None = None
    share_to_people: float | None = None
    cost_per_item: float | None = None
    cost_note: str | None = None
    human_cost: float | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Loop(_Kept):
    """``loop``: what the loop commands of the workspace stored (:mod:`judgecal.audit.loop_section`): the last
    gate, the panels, the alignments and the cascades, each by name."""

    gate: Gate | None = None
    panels: dict[str, PanelRun] = Field(default_factory=dict)
    align: dict[str, Alignment] = Field(default_factory=dict)
    cascades: dict[str, Cascade] = Field(default_factory=dict)


class AuditEnvironment(_Kept):
    """The machine an audit ran on: judgecal, Python, the platform and the numerical libraries' versions."""

    judgecal: str | None = None
    python: str | None = None
    platform: str | None = None
    libraries: dict[str, str] = Field(default_factory=dict)


class JudgeEnvironment(_Kept):
    """The environment fingerprints recorded with a judge's judgments: how many distinct ones, over how many
    judgments, and the shown fields of the most common (``common``: free-form, whatever the backend recorded
    (:mod:`judgecal.judges.fingerprint`), or a sentence when none was)."""

    fingerprints: int | None = None
    judgments: int | None = None
    common: dict[str, Any] | str | None = None


class Environment(_Kept):
    """The audit's machine and each judge's recorded environment."""

    audit: AuditEnvironment | None = None
    judges: dict[str, JudgeEnvironment] = Field(default_factory=dict)


class Provenance(_Kept):
    """Where the figures come from (:mod:`judgecal.audit.provenance`): the configuration hash, the truth's
    digest, each judge's spec hashes and the environment."""

    config_hash: str | None = None
    truth_digest: str | None = None
    judge_spec_hashes: dict[str, list[str | None]] = Field(default_factory=dict)
    environment: Environment | None = None


class ClusterPart(_Kept):
    """What an audit computed on a Ray cluster: the metrics, counts, sections and tests."""

    metrics: list[str] = Field(default_factory=list)
    counts: list[str] = Field(default_factory=list)
    sections: list[str] = Field(default_factory=list)
    tests: list[str] = Field(default_factory=list)


class Executor(_Kept):
    """Where an audit computed its figures (``judgecal audit --executor ray``, :mod:`judgecal.distributed.audit`):
    the cluster's address, the shards and seconds, what the cluster computed and what stayed local (in words).
    Beside the settings: where a figure is computed changes no figure."""

    name: str | None = None
    address: str | None = None
    shards: int | None = None
    cluster_seconds: float | None = None
    computed_on_cluster: ClusterPart | None = None
    computed_locally: str | None = None


class AuditReport(_Open):
    """The whole audit (``audit.json``)."""

    schema_: Literal["judgecal.audit/2"] = Field("judgecal.audit/2", alias="schema")
    judgecal_version: str
    generated_at: str
    settings: Settings
    consensus: Truth
    judges: dict[str, Judge]
    comparisons: Comparisons | None = None
    models: Models | None = None
    humans: Humans | None = None
    annotators: Annotators | None = None
    provenance: Provenance | None = None
    loop: Loop | None = None
    spans: SpanTruth | None = None
    executor: Executor | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    # the fields typed since this schema began come first; ``loop``, ``spans`` and ``executor``, typed later, stay
    # where they were read
    _written_first = ("schema", "judgecal_version", "generated_at", "settings", "consensus", "judges",
                      "comparisons", "models", "humans", "annotators", "provenance")
    _upgraded_from: str | None = PrivateAttr(default=None)

    @property
    def schema_read(self) -> str:
        """The schema of the object it was read from: an earlier one's (upgraded by :func:`read_report`),
        ``""`` for a part of an audit that names none, else this one."""
        return self.schema_ if self._upgraded_from is None else self._upgraded_from

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuditReport:
        """The report from ``audit.json``'s object (a :class:`pydantic.ValidationError` names the bad field)."""
        return cls.model_validate(data)
