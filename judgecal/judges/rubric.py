"""Rubrics: YAML prompt templates that render an item's candidates in a given order.

Besides ``system`` and ``template``, a rubric declares the pieces that prompt mutations act on
(:mod:`judgecal.judges.mutations`), so a mutation never guesses at a rubric's wording:

- ``question``: the closing question, shown where the template says ``{question}``;
- ``options``: the answer options, shown where the question says ``{options}`` (``A, B, or tie``);
- ``paraphrase``: a reworded ``system`` and/or ``question``;
- ``fewshot``: worked examples in the rubric's own format (``prompt``, ``first``, ``second`` for a
  pairwise rubric, ``first`` alone for a pointwise one, ``reference`` when the template shows one,
  and the ``answer``).

``shots`` (same format as ``fewshot``) are examples always shown before the item, as earlier chat turns:
a rubric written by ``judgecal align --method fewshot`` carries them.

A rubric of kind ``spans`` asks the judge to quote stretches of the one candidate's text
(:mod:`judgecal.judges.quotes` aligns them); it may declare ``span_label`` (the label its spans get)
and ``coverage`` (``{full: 1.0, partial: 0.5, none: 0.0}``: the answer first names one of these and the
judgment's score is its value, as a key-fact coverage judge does).

A rubric of kind ``labels`` judges one response of an item that carries a label set (binary or
categorical, :class:`~judgecal.data.records.LabelSet`): the labels are the *item's*, filled in when it is
rendered, never written in the rubric (a file may use pass/fail, yes/no, 1/0, C/I or safe/unsafe). Its
template and question may show ``{options}`` (the item's labels in declared order: ``pass or fail``,
``good, bad, or neutral``), ``{positive}`` and ``{negative}`` (a binary label set's two labels: a rubric
that shows them judges binary items only) and ``{criterion}`` (the label set's criterion, else the
rubric's own ``criterion`` text). It must show the labels (``{options}``, or ``{positive}`` and
``{negative}``); it declares no ``labels``, ``options`` or few-shot examples (their answers would be
some other file's labels). Rendering an item without a label set is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from judgecal.data.records import Candidate, Item, LabelSet, stable_hash
from judgecal.data.yamlfile import ConfigError, parse_yaml, read_text

KINDS: tuple[str, ...] = ("pairwise", "pointwise", "spans", "labels")


class RubricError(ConfigError):
    """A rubric file that is missing, unreadable or lacks a field."""


@dataclass(frozen=True)
class Example:
    """A worked example shown before the item (few-shot), with the answer the judge should give."""

    prompt: str
    first: str
    answer: str
    second: str = ""
    reference: str = ""


def options_text(options: tuple[str, ...]) -> str:
    """``A`` / ``A or B`` / ``A, B, or tie``."""
    if len(options) <= 2:
        return " or ".join(options)
    return ", ".join(options[:-1]) + ", or " + options[-1]


@dataclass(frozen=True)
class Rubric:
    name: str
    kind: str
    system: str
    template: str
    labels: tuple[str, ...] = ("A", "B", "tie")
    scale_min: int = 1
    scale_max: int = 5
    version: str = ""
    question: str = ""
    options: tuple[str, ...] = ()
    paraphrase_system: str = ""
    paraphrase_question: str = ""
    fewshot: tuple[Example, ...] = ()
    shots: tuple[Example, ...] = ()  # examples shown before the item (set by the few-shot mutations)
    origin: str = ""
    span_label: str = ""  # kind spans: the label of the judge's spans
    coverage: tuple[tuple[str, float], ...] = ()  # kind spans: coverage label -> score, when asked for
    max_tokens: int | None = None  # the reply length the rubric needs (a span judge quotes text); None: 8
    criterion: str = ""  # kind labels: shown as {criterion} when the item's label set names none

    def _user(self, prompt: str, first: str, second: str, reference: str,
              label_fields: dict[str, str] | None = None) -> str:
        extra = label_fields or {}
        options = extra.get("options", options_text(self.options))
        question = self.question.format_map({**extra, "options": options}) if self.question else ""
        fields = {**extra, "first": first, "second": second, "prompt": prompt, "reference": reference,
                  "question": question}
        return self.template.format_map(fields)

    def label_fields(self, labels: LabelSet) -> dict[str, str]:
        """What a ``labels`` rubric shows of a label set: ``options``, ``criterion`` and, for a binary
        one, ``positive`` and ``negative``."""
        out = {"options": options_text(labels.labels), "criterion": labels.criterion or self.criterion}
        if labels.task == "binary" and labels.positive is not None and labels.negative is not None:
            out.update(positive=labels.positive, negative=labels.negative)
        return out

    def item_labels(self, item: Item) -> LabelSet:
        """The label set a ``labels`` rubric judges ``item`` on; an item without one is refused."""
        where = f"rubric {self.name}" + (f" ({self.origin})" if self.origin else "")
        try:
            labels = item.labels
        except (KeyError, TypeError, ValueError) as exc:
            raise RubricError(f"{where}: item {item.item_id!r} has an unreadable label set ({exc})") from None
        if labels is None:
            raise RubricError(f"{where} chooses one of an item's labels, and item {item.item_id!r} has no label set "
                              "(binary or categorical); judge it with a pairwise or pointwise rubric, or pick items "
                              "that have one (by their source)")
        if item.task != "pointwise" or len(item.candidates) != 1:
            raise RubricError(f"{where}: item {item.item_id!r} is {item.task} with {len(item.candidates)} "
                              "responses; a label judge reads one response (a pointwise item)")
        return labels

    def messages(self, item: Item, order: str = "AB") -> list[dict[str, str]]:
        """Chat messages for ``item`` with its candidates shown in ``order`` (``AB`` or ``BA``)."""
        cands = item.candidates
        if self.kind == "labels":
            labels = self.item_labels(item)
            try:
                user = self._user(item.prompt, cands[0].text, "", item.reference or "", self.label_fields(labels))
            except KeyError as exc:
                if exc.args[0] not in ("positive", "negative"):
                    raise
                raise RubricError(
                    f"rubric {self.name} shows {{{exc.args[0]}}}, which the {labels.task} label set "
                    f"({', '.join(labels.labels)}) of item {item.item_id!r} does not have: {{positive}} and "
                    "{negative} need a binary label set (try the rubric 'labels')") from None
        elif self.kind == "pairwise":
            if len(cands) != 2:
                raise RubricError(f"rubric {self.name} needs 2 candidates, item {item.item_id} has {len(cands)}")
            first, second = (cands[0], cands[1]) if order == "AB" else (cands[1], cands[0])
            user = self._user(item.prompt, first.text, second.text, item.reference or "")
        else:
            user = self._user(item.prompt, cands[0].text, "", item.reference or "")
        out = [{"role": "system", "content": self.system}]
        for ex in self.shots:
            out.append({"role": "user", "content": self._user(ex.prompt, ex.first, ex.second, ex.reference)})
            out.append({"role": "assistant", "content": ex.answer})
        return [*out, {"role": "user", "content": user}]


def _str(d: dict[str, Any], key: str, origin: str, where: str = "") -> str:
    v = d.get(key)
    if not isinstance(v, str) or not v.strip():
        raise RubricError(f"{origin}: field {where + key!r} must be a non-empty string")
    return v


def _examples(raw: Any, kind: str, labels: tuple[str, ...], scale: tuple[int, int], needs_reference: bool,
              origin: str, name: str = "fewshot") -> tuple[Example, ...]:
    from judgecal.judges.parse import parse_score
    from judgecal.judges.quotes import parse_quotes

    if not isinstance(raw, list):
        raise RubricError(f"{origin}: field '{name}' must be a list of examples")
    out = []
    for k, ex in enumerate(raw):
        where = f"{name}[{k}]."
        if not isinstance(ex, dict):
            raise RubricError(f"{origin}: field '{name}[{k}]' must be a mapping")
        answer = str(ex.get("answer", "")).strip()
        if kind == "pairwise" and answer not in labels:
            raise RubricError(f"{origin}: field '{name}[{k}].answer' must be one of {', '.join(labels)}")
        if kind == "pointwise" and parse_score(answer, *scale) is None:
            raise RubricError(f"{origin}: field '{name}[{k}].answer' must be a score from {scale[0]} to {scale[1]}")
        if kind == "spans" and parse_quotes(answer) is None:
            raise RubricError(f"{origin}: field '{name}[{k}].answer' must be quotes, one per line, or NONE")
        out.append(Example(
            prompt=_str(ex, "prompt", origin, where), first=_str(ex, "first", origin, where), answer=answer,
            second=_str(ex, "second", origin, where) if kind == "pairwise" else "",
            reference=_str(ex, "reference", origin, where) if needs_reference else "",
        ))
    return tuple(out)


def _span_fields(d: dict[str, Any], origin: str) -> tuple[str, tuple[tuple[str, float], ...]]:
    """``span_label`` and ``coverage`` of a ``spans`` rubric (refused on other kinds)."""
    if d["kind"] != "spans":
        for key in ("span_label", "coverage"):
            if key in d:
                raise RubricError(f"{origin}: field {key!r} applies to rubrics of kind spans only")
        return "", ()
    label = d.get("span_label", "")
    if not isinstance(label, str):
        raise RubricError(f"{origin}: field 'span_label' must be a string")
    cov = d.get("coverage") or {}
    if not isinstance(cov, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
            for k, v in cov.items()):
        raise RubricError(f"{origin}: field 'coverage' must map each coverage label to a score in [0, 1]")
    return label.strip(), tuple((k, float(v)) for k, v in cov.items())


def _shows_labels(text: str) -> bool:
    return "{options}" in text or ("{positive}" in text and "{negative}" in text)


def _label_fields(d: dict[str, Any], origin: str) -> str:
    """A ``labels`` rubric's own ``criterion`` text; the fields it may not declare are refused (and
    ``criterion`` on other kinds)."""
    if d["kind"] != "labels":
        if "criterion" in d:
            raise RubricError(f"{origin}: field 'criterion' applies to rubrics of kind labels only")
        return ""
    for key, why in (("labels", "the labels are each item's own (its label set), shown as {options}"),
                     ("options", "the options are each item's labels, shown as {options}"),
                     ("fewshot", "an example's answer would be some other label set's label"),
                     ("shots", "an example's answer would be some other label set's label")):
        if key in d:
            raise RubricError(f"{origin}: field {key!r} does not apply to a rubric of kind labels: {why}")
    crit = d.get("criterion", "")
    if not isinstance(crit, str):
        raise RubricError(f"{origin}: field 'criterion' must be a string")
    template = str(d.get("template", ""))
    para = d.get("paraphrase")
    questions = [str(d.get("question") or "")]
    if isinstance(para, dict) and para.get("question"):
        questions.append(str(para["question"]))
    if not all(_shows_labels(template + q) for q in questions):
        raise RubricError(f"{origin}: a rubric of kind labels must show the item's labels as {{options}} (or "
                          "{positive} and {negative}) in its template or question (and paraphrased question)")
    if "{criterion}" in template + "".join(questions) and not crit.strip():
        raise RubricError(f"{origin}: field 'criterion' is required: the rubric shows {{criterion}}, and an "
                          "item's label set may name none")
    return crit.strip()


def _from_dict(d: dict[str, Any], origin: str) -> Rubric:
    for key in ("name", "kind", "system", "template"):
        if key not in d:
            raise RubricError(f"{origin}: missing field {key!r}")
    if d["kind"] not in KINDS:
        raise RubricError(f"{origin}: kind must be pairwise, pointwise or spans, or labels (one of an item's "
                          f"labels), got {d['kind']!r}")
    span_label, coverage = _span_fields(d, origin)
    criterion = _label_fields(d, origin)
    for key in ("name", "system", "template"):
        _str(d, key, origin)
    scale = d.get("scale") or {}
    labels = tuple(str(x) for x in d.get("labels", ("A", "B", "tie")))
    smin, smax = int(scale.get("min", 1)), int(scale.get("max", 5))
    question = d.get("question") or ""
    if question:
        _str(d, "question", origin)
        if "{question}" not in d["template"]:
            raise RubricError(f"{origin}: field 'template' must show the declared question as {{question}}")
    raw_opts = d.get("options") or []
    if not isinstance(raw_opts, list) or not all(isinstance(o, str) and o for o in raw_opts):
        raise RubricError(f"{origin}: field 'options' must be a list of answer options, e.g. [A, B, tie]")
    if raw_opts and "{options}" not in question:
        raise RubricError(f"{origin}: field 'question' must show the declared options as {{options}}")
    para = d.get("paraphrase") or {}
    if not isinstance(para, dict) or set(para) - {"system", "question"}:
        raise RubricError(f"{origin}: field 'paraphrase' must be a mapping with 'system' and/or 'question'")
    if para.get("question") and not question:
        raise RubricError(f"{origin}: field 'paraphrase.question' needs the rubric to declare 'question'")
    p_system = _str(para, "system", origin, "paraphrase.") if "system" in para else ""
    p_question = _str(para, "question", origin, "paraphrase.") if "question" in para else ""
    if raw_opts and p_question and "{options}" not in p_question:
        raise RubricError(f"{origin}: field 'paraphrase.question' must show the declared options as {{options}}")
    max_tokens = d.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise RubricError(f"{origin}: field 'max_tokens' must be an integer >= 1, got {max_tokens!r}")
    fewshot = _examples(d["fewshot"], d["kind"], labels, (smin, smax), "{reference}" in d["template"], origin) \
        if d.get("fewshot") else ()
    shots = _examples(d["shots"], d["kind"], labels, (smin, smax), "{reference}" in d["template"], origin,
                      "shots") if d.get("shots") else ()
    rubric = Rubric(
        name=d["name"], kind=d["kind"], system=d["system"].strip(), template=d["template"], labels=labels,
        scale_min=smin, scale_max=smax, version=stable_hash(d, 12), question=question.strip(),
        options=tuple(raw_opts), paraphrase_system=p_system.strip(), paraphrase_question=p_question.strip(),
        fewshot=fewshot, shots=shots, origin=origin, span_label=span_label, coverage=coverage, max_tokens=max_tokens,
        criterion=criterion,
    )
    check = Item("check", "p", [Candidate("x"), Candidate("y")], reference="r")
    if rubric.kind == "labels":  # a binary item: a rubric may show {positive} and {negative}
        check = Item("check", "p", [Candidate("x")], "pointwise", reference="r",
                     label_set=LabelSet("binary", ("yes", "no"), "yes", criterion="c").to_dict())
    try:  # every placeholder is one the renderer fills
        rubric.messages(check)
    except (KeyError, IndexError, ValueError) as exc:
        raise RubricError(f"{origin}: field 'template' or 'question' has an unknown placeholder ({exc})") from None
    return rubric


def builtin_names() -> list[str]:
    pkg = resources.files("judgecal.rubrics")
    return sorted(p.name[:-5] for p in pkg.iterdir() if p.name.endswith(".yaml"))


def load_rubric(name_or_path: str) -> Rubric:
    """A built-in rubric by name (``pairwise``, ``pointwise-5`` ...) or a YAML file path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.exists():
        try:
            text, origin = read_text(p), str(p)
        except ConfigError as exc:
            raise RubricError(str(exc)) from None
        except OSError as exc:
            raise RubricError(f"{p}: cannot read the rubric ({exc.strerror or exc})") from None
    else:
        res = resources.files("judgecal.rubrics").joinpath(f"{name_or_path}.yaml")
        if not res.is_file():
            raise RubricError(f"unknown rubric {name_or_path!r}; built-in: {', '.join(builtin_names())}")
        text, origin = res.read_text("utf-8"), f"rubrics/{name_or_path}.yaml"
    try:
        data = parse_yaml(text, origin)
    except ConfigError as exc:
        raise RubricError(str(exc)) from None
    if not isinstance(data, dict):
        raise RubricError(f"{origin}: a rubric is a mapping")
    return _from_dict(data, origin)
