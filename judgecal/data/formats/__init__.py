"""``judgecal import FILE --from FORMAT``: the files people already have, mapped once into judgecal.

One module per format, each with ``NAME``, ``DESCRIPTION``, ``detect(path, head) -> bool`` (``head``:
the first records) and ``parse(path) -> Mapped`` (:mod:`judgecal.data.formats.base`). A file is
detected from its content when exactly one format claims it; ``--from`` names the format otherwise.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from judgecal.data.formats.base import Mapped, Skip, digested, head_records
from judgecal.data.formats.labels import words
from judgecal.data.importers import ImportValidationError, Problem, not_a_file, not_there
from judgecal.data.records import Annotation, Item, Judgment, criterion_id
from judgecal.data.store import Workspace
from judgecal.data.verdicts import COMPARED, _differs, _other_specs
from judgecal.errors import InputError

FORMATS: dict[str, str] = {  # name -> module
    "alpaca_eval": "alpaca_eval", "mt_bench": "mt_bench", "labelstudio": "labelstudio", "judge-bench": "judge_bench",
    "judgebench": "judgebench", "rewardbench2": "rewardbench2",
    "inspect": "inspect_log", "promptfoo": "promptfoo", "deepeval": "deepeval", "mlflow": "mlflow",
    "langsmith": "langsmith", "phoenix": "phoenix", "autoj": "autoj", "mushroom": "mushroom",
}


def module(name: str) -> ModuleType:
    return importlib.import_module(f"judgecal.data.formats.{FORMATS[name]}")


def known() -> str:
    return ", ".join(FORMATS)


def detect(path: Path) -> str:
    """The one format whose shape ``path`` has; an :class:`~judgecal.errors.InputError` about the format,
    listing the formats, when none or several claim it."""
    head = head_records(path)
    hits = [name for name in FORMATS if module(name).detect(path, head)]
    if len(hits) == 1:
        return hits[0]
    why = (f"could be {' or '.join(hits)}" if hits else
           "is neither judgecal's own schema (.jsonl, .csv or .parquet) nor a format judgecal recognises")
    raise InputError(f"{path}: {why} (nothing imported); name its format: {known()}", name="format")


NATIVE_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")


def claims(path: Path) -> bool:
    """True when ``path`` is not in judgecal's own item schema and some format claims it (``import``
    without ``--from`` then detects it; a native file, or one nothing claims, stays with the own schema
    and its errors)."""
    head = head_records(path)
    if path.suffix.lower() in NATIVE_SUFFIXES and (not head or all(
            isinstance(r, dict) and "id" in r and ({"response", "response_a"} & set(r)) for r in head)):
        return False
    return path.suffix.lower() not in NATIVE_SUFFIXES or any(module(n).detect(path, head) for n in FORMATS)


def map_file(path: str | Path, fmt: str | None = None, judge: str | None = None) -> Mapped:
    """Map ``path`` (format ``fmt``, or detected) completely; :class:`ImportValidationError` with every
    problem, and nothing mapped, when it is malformed. ``judge`` (``--name``) names the file's judges
    (:meth:`Mapped.rename_judges`)."""
    p = Path(path)
    if (why := not_there(p)) is not None or not p.is_file():
        raise ImportValidationError([Problem(str(p), None, None, why or not_a_file(p))])
    if fmt is not None and fmt not in FORMATS:
        raise ImportValidationError([Problem(str(p), None, None, f"unknown format {fmt!r}; known: {known()}")])
    name = fmt or detect(p)
    try:
        mapped: Mapped = module(name).parse(p)
    except Skip as exc:
        raise ImportValidationError([Problem(str(p), exc.line, exc.field, str(exc))]) from None
    except OSError as exc:
        raise ImportValidationError([Problem(str(p), None, None, f"cannot read: {exc.strerror or exc}")]) from None
    if judge is not None and mapped.specs:
        mapped.path = str(p)
        mapped.rename_judges(judge)
    if mapped.problems:  # each once (a judge's refused name is found on each of its verdicts), with the file
        raise ImportValidationError(list(dict.fromkeys(_in_file(q, str(p)) for q in mapped.problems)))
    mapped.path = str(p)
    return mapped


def _in_file(q: Problem, f: str) -> Problem:
    """``q`` naming the file first: a place inside a document or archive (``samples/1.json``,
    ``results[0]``) reads ``file: place``."""
    if q.file == f or q.file.startswith((f + ":", f + " ")):
        return q
    return replace(q, file=f"{f}: {q.file}" if q.file else f)


def write(ws: Workspace, mapped: Mapped, replace_changed: bool = False) -> dict[str, int]:
    """Write everything ``mapped`` holds in one transaction (items already stored with the same content
    are kept; other content is refused and nothing is written). A verdict stored before (same judge, item,
    order and sample) with other content is refused unless ``replace_changed``, as the own schema's verdict
    files are. Returns what was written: ``items`` new (``items_there``: already stored), ``judgments`` new,
    ``judgments_there`` unchanged, ``replaced``."""
    with ws.transaction() as tx:
        _stored_before(ws, mapped)
        _meet(ws, mapped)
        if mapped.runs:
            _runs_apart(ws, mapped)
        # an item already stored with the same texts is that item (a human file about pairs a judge file
        # brought, with fewer model names or other metadata): its labels and verdicts attach to it
        stored = {it.item_id: it for it in ws.items_repo.items(ids=list(mapped.items))}
        if mapped.external:
            have = {it.item_id for it in ws.items_repo.items(ids=list(mapped.external))} | set(mapped.items)
            missing = [(i, w) for i, w in mapped.external.items() if i not in have]
            if missing:
                raise ImportValidationError([Problem(w, None, None, (
                    f"refers to {i!r}, which is not an item in the workspace: import the runs first "
                    "(judgecal's own schema, their ids as item ids), then this file")) for i, w in missing])
        items = {**mapped.items, **_derived(ws, mapped)}
        if len(items) > len(mapped.items):
            stored.update((it.item_id, it) for it in ws.items_repo.items(ids=[i for i in items if i not in stored]))
        _same_labels(mapped, items, stored)
        new = [it for i, it in items.items() if i not in stored or _texts(stored[i]) != _texts(it)]
        used = {j.judge for j in mapped.judgments.values()}
        clash = _other_specs(ws, {n: mapped.specs[n].spec_hash for n in used}, replace=False)
        if clash:  # two specs are two judges: a name the workspace gives another judge is refused
            raise ImportValidationError([Problem(mapped.path or mapped.fmt, None, "judge", (
                f"{n!r} is already in the workspace as another judge (spec {h}); two specs are two judges"))
                for n, h in clash.items()])
        there, changed = _stored_verdicts(ws, mapped, replace_changed)
        ws.items_repo.add_items(new, conn=tx, origins=mapped.origins)
        ws.annotations_repo.add_annotations(mapped.annotations, conn=tx)
        ws.judgments_repo.add_judge_specs([(s.spec_hash, s.base_name, s.to_dict()) for n, s in mapped.specs.items() if n in used],
                           conn=tx)
        ws.judgments_repo.add_judgments([j for k, j in mapped.judgments.items() if k not in there], conn=tx, replace=True)
        ws.spans_repo.add_spans(mapped.spans, conn=tx)
    n_items = len(set(items) | set(mapped.derived))
    return {"items": len(new), "items_there": n_items - len(new), "judgments": len(mapped.judgments) - len(there)
            - changed, "judgments_there": len(there), "replaced": changed}


def _stored_verdicts(ws: Workspace, mapped: Mapped, replace_changed: bool) -> tuple[set[str], int]:
    """(keys of the file's verdicts stored unchanged, how many stored ones it changes); a changed one is
    refused without ``replace_changed``: a re-import never overwrites a verdict silently."""
    stored = ws.judgments_repo.judgment_fields(list(mapped.judgments), COMPARED)
    there: set[str] = set()
    bad: list[Problem] = []
    changed = 0
    for key, old in stored.items():
        j = mapped.judgments[key]
        diff = _differs(j, old)
        if not diff:
            there.add(key)
        elif replace_changed:
            changed += 1
        else:
            bad.append(Problem(mapped.path or mapped.fmt, None, diff[0], (
                f"the verdict of {j.judge!r} on item {j.item_id!r} (order {j.order}, sample {j.sample}) differs from "
                f"the one stored ({', '.join(diff)}); pass --replace to overwrite it, or --name to import it as "
                "another judge")))
    _refuse(bad)
    return there, changed


def _refuse(bad: list[Problem]) -> None:
    """Refuse the import on the first of ``bad`` (with how many more there are), if any."""
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise ImportValidationError([replace(bad[0], message=bad[0].message + more)])


def _runs_apart(ws: Workspace, mapped: Mapped) -> None:
    """A run file's case whose id the workspace holds with other texts (another eval's case of that number) is
    another comparison: it and its criterion items take ids with a digest of the texts (:func:`digested`); the
    same texts keep the plain id, so a re-import, or a second run with the same outputs, meets its items."""
    stored = {it.item_id: it for it in ws.items_repo.items(ids=list(mapped.items))}
    taken = {_record(it) for i, it in mapped.items.items() if i in stored and _texts(stored[i]) != _texts(it)}
    if not taken:
        return
    ids = {i: digested(it) for i, it in mapped.items.items() if _record(it) in taken}
    mapped.rename_items(ids)
    for it in mapped.items.values():
        rec = it.metadata.get("record")
        if isinstance(rec, str) and rec in taken:
            it.metadata = {**it.metadata, "record": ids.get(rec, digested(replace(it, item_id=rec, metadata={})))}


def _record(it: Item) -> str:
    """The id of the record ``it`` belongs to (itself, or the record of a criterion item)."""
    rec, crit = it.metadata.get("record"), it.metadata.get("criterion")
    return rec if isinstance(rec, str) and isinstance(crit, str) and it.item_id == criterion_id(rec, crit) else it.item_id


def _stored_before(ws: Workspace, mapped: Mapped) -> None:
    """An item a workspace stored before ids named their models (``<id>`` or ``<id>/<model>`` where the id is
    now ``<id>/@<model>``), with the same texts and models, is found under its stored id: a re-import into such
    a workspace meets its items and verdicts instead of adding them twice."""
    olds: dict[str, list[str]] = {}
    for iid in mapped.items:
        if "/@" in iid:
            olds[iid] = list(dict.fromkeys((re.sub(r"/@[^/]*", "", iid), iid.replace("/@", "/"))))
    if not olds:
        return
    stored = {it.item_id: it for it in ws.items_repo.items(ids=[i for c in olds.values() for i in c] + list(olds))}
    ids: dict[str, str] = {}
    for iid, cands in olds.items():
        it = mapped.items[iid]
        if iid in stored:
            continue
        hit = next((stored[c] for c in cands if c in stored and _texts(stored[c]) == _texts(it)
                    and [x.model for x in stored[c].candidates] == [x.model for x in it.candidates]), None)
        if hit is not None:
            ids[iid] = hit.item_id
    if ids:
        mapped.rename_items(ids)


def _meet(ws: Workspace, mapped: Mapped) -> None:
    """A pair or response whose file names no models (a human file about pairs a judge file brought) is the
    stored item of the same texts whose id adds its models; when several are (two models answered alike),
    which one is not known and nothing is written."""
    ids: dict[str, str] = {}
    bad: list[Problem] = []
    nameless = [it for it in mapped.items.values() if not any(c.model for c in it.candidates)]
    if not nameless:
        return
    under: dict[str, list[str]] = {}  # a nameless item's id -> the stored ids that add models to it
    for it in nameless:
        found = [i for i in ws.items_repo.ids_under(it.item_id + "/@") if "/" not in i[len(it.item_id) + 1:].replace("/@", "")]
        if found:
            under[it.item_id] = found
    if not under:
        return
    stored = {s.item_id: s for s in ws.items_repo.items(ids=[i for ids_ in under.values() for i in ids_] + list(under))}
    for iid, found in under.items():
        it = mapped.items[iid]
        if iid in stored:
            continue
        same = [stored[i] for i in found if _texts(stored[i]) == _texts(it)]
        if len(same) == 1:
            ids[it.item_id] = same[0].item_id
        elif len(same) > 1:
            bad.append(Problem(mapped.origins.get(it.item_id, mapped.path), None, None, (
                f"item {it.item_id!r} names no models, and the workspace holds its texts under {len(same)} ids "
                f"that do ({', '.join(repr(s.item_id) for s in same[:3])}): which one it is, is not known; add the "
                "models to the file")))
    _refuse(bad)
    if ids:
        mapped.rename_items(ids)


def _derived(ws: Workspace, mapped: Mapped) -> dict[str, Item]:
    """The criterion items of records that are in the workspace already (feedback on runs imported before):
    the run's texts with the file's label set; a run that is not one response is refused."""
    if not mapped.derived:
        return {}
    want = {r for r, _ in mapped.derived.values()}
    bases = {it.item_id: it for it in ws.items_repo.items(ids=want)} | {i: it for i, it in mapped.items.items() if i in want}
    out: dict[str, Item] = {}
    bad: list[Problem] = []
    for iid, (rec, ls) in mapped.derived.items():
        b = bases.get(rec)
        if b is None or iid in mapped.items:
            continue  # (a record that is nowhere is refused above, as every external record is)
        if b.task != "pointwise" or len(b.candidates) != 1 or b.label_set:
            bad.append(Problem(mapped.external.get(rec, mapped.path), None, ls.criterion, (
                f"a {ls.task} label on {rec!r}, which is not one response in the workspace (a label item rates "
                "one response)")))
            continue
        out[iid] = Item(iid, b.prompt, [b.candidates[0]], "pointwise", b.reference, mapped.fmt,
                        {**b.metadata, "criterion": ls.criterion, "record": rec}, ls.to_dict())
        mapped.origins.setdefault(iid, mapped.external.get(rec, mapped.path))
    if bad:
        raise ImportValidationError(bad)
    return out


def _same_labels(mapped: Mapped, items: dict[str, Item], stored: dict[str, Item]) -> None:
    """A criterion item already in the workspace keeps its label set: this file's labels are read as its
    labels when each of them is one (another file's spelling or more labels), else nothing is written."""
    from judgecal.data.label_tasks import match

    bad: list[Problem] = []
    judgments: dict[str, list[Judgment]] = {}  # item id -> its judgments, its labels: one pass, not one per item
    labels: dict[str, list[Annotation]] = {}
    for j in mapped.judgments.values():
        judgments.setdefault(j.item_id, []).append(j)
    for a in mapped.annotations:
        labels.setdefault(a.item_id, []).append(a)
    for iid, it in items.items():
        old = stored.get(iid)
        if it.label_set is None or old is None or old.label_set == it.label_set:
            continue
        have, mine = old.labels, it.labels
        assert mine is not None
        names = {x: match(x, have.labels) for x in mine.labels} if have is not None else {}
        if have is None or have.task != mine.task or None in names.values() or (
                mine.task == "binary" and names[str(mine.positive)] != have.positive):
            bad.append(Problem(mapped.origins.get(iid, mapped.path), None, mine.criterion or None, (
                f"item {iid!r} is in the workspace with labels {list(have.labels) if have else 'none'}; this file "
                f"gives it {mine.task} labels {list(mine.labels)}")))
            continue
        items[iid] = replace(it, label_set=have.to_dict())
        for j in judgments.get(iid, ()):
            if j.status == "ok" and j.verdict in names:
                j.verdict = names[j.verdict]
        for a in labels.get(iid, ()):
            if a.label in names:
                a.label = str(names[a.label])
    if bad:
        raise ImportValidationError(bad)


def _texts(item: Item) -> tuple[str, str, tuple[str, ...]]:
    return item.task, item.prompt, tuple(c.text for c in item.candidates)


def format_summary(m: Mapped, path: str, detected: bool) -> list[str]:
    """The summary in words: what was mapped, each criterion's labels, what was accepted and dropped."""
    s = m.summary()
    lines = [f"{path}: {'detected' if detected else 'read as'} {m.fmt}",
             f"  mapped: {s['items']} items, {s['judgments']} judgments from {len(s['judges'])} judge(s)"
             + (f" ({', '.join(f'{k}: {v}' for k, v in s['judges'].items())})" if s["judges"] else "")
             + f", {s['human_labels']} human labels"
             + (f" ({', '.join(f'{k}: {v}' for k, v in s['label_sources'].items())})" if s["label_sources"] else "")
             + (f", {s['spans']} spans" if s["spans"] else "")]
    if s["accepted"]:
        from judgecal.data.rows import degenerate_note

        lines.append("  " + degenerate_note(m.counts).lstrip("; "))
    for why, n in s["dropped"].items():
        lines.append(f"  dropped {n}: {why}")
    for crit, ls in m.label_sets.items():
        lines.append(f"  labels of {crit}: {words(ls)}")
    lines += [f"  note: {n}" for n in s["notes"]]
    return lines
