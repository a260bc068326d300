"""``judgecal import FILE --from FORMAT``: the files people already have, mapped once into judgecal.

One module per format, each with ``NAME``, ``DESCRIPTION``, ``detect(path, head) -> bool`` (``head``:
the first records) and ``parse(path) -> Mapped`` (:mod:`judgecal.data.formats.base`). A file is
detected from its content when exactly one format claims it; ``--from`` names the format otherwise.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from judgecal.data.formats.base import Mapped, Skip, head_records
from judgecal.data.importers import ImportValidationError, Problem
from judgecal.data.records import Item
from judgecal.data.store import Workspace
from judgecal.data.verdicts import _other_specs

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
    """The one format whose shape ``path`` has; :class:`ImportValidationError` listing the formats when
    none or several claim it."""
    head = head_records(path)
    hits = [name for name in FORMATS if module(name).detect(path, head)]
    if len(hits) == 1:
        return hits[0]
    why = (f"could be {' or '.join(hits)}" if hits else
           "is neither judgecal's own schema (.jsonl, .csv or .parquet) nor a format judgecal recognises")
    raise ImportValidationError([Problem(str(path), None, None, f"{why}; name it with --from FORMAT ({known()})")])


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


def map_file(path: str | Path, fmt: str | None = None) -> Mapped:
    """Map ``path`` (format ``fmt``, or detected) completely; :class:`ImportValidationError` with every
    problem, and nothing mapped, when it is malformed."""
    p = Path(path)
    if not p.is_file():
        raise ImportValidationError([Problem(str(p), None, None, "is a folder, not a file" if p.exists()
                                             else "file does not exist")])
    if fmt is not None and fmt not in FORMATS:
        raise ImportValidationError([Problem(str(p), None, None, f"unknown format {fmt!r}; known: {known()}")])
    name = fmt or detect(p)
    try:
        mapped: Mapped = module(name).parse(p)
    except Skip as exc:
        raise ImportValidationError([Problem(str(p), exc.line, exc.field, str(exc))]) from None
    if mapped.problems:
        raise ImportValidationError(mapped.problems)
    mapped.path = str(p)
    return mapped


def write(ws: Workspace, mapped: Mapped) -> None:
    """Write everything ``mapped`` holds in one transaction (items already stored with the same content
    are kept; other content is refused and nothing is written)."""
    with ws.transaction() as tx:
        # an item already stored with the same texts is that item (a human file about pairs a judge file
        # brought, with fewer model names or other metadata): its labels and verdicts attach to it
        stored = {it.item_id: it for it in ws.items(ids=list(mapped.items))}
        if mapped.external:
            have = {it.item_id for it in ws.items(ids=list(mapped.external))} | set(mapped.items)
            missing = [(i, w) for i, w in mapped.external.items() if i not in have]
            if missing:
                raise ImportValidationError([Problem(w, None, None, (
                    f"refers to {i!r}, which is not an item in the workspace: import the runs first "
                    "(judgecal's own schema, their ids as item ids), then this file")) for i, w in missing])
        new = [it for i, it in mapped.items.items() if i not in stored or _texts(stored[i]) != _texts(it)]
        used = {j.judge for j in mapped.judgments.values()}
        clash = _other_specs(ws, {n: mapped.specs[n].spec_hash for n in used}, replace=False)
        if clash:  # two specs are two judges: a name the workspace gives another judge is refused
            raise ImportValidationError([Problem(mapped.path or mapped.fmt, None, "judge", (
                f"{n!r} is already in the workspace as another judge (spec {h}); two specs are two judges"))
                for n, h in clash.items()])
        ws.add_items(new, conn=tx, origins=mapped.origins)
        ws.add_annotations(mapped.annotations, conn=tx)
        ws.add_judge_specs([(s.spec_hash, s.base_name, s.to_dict()) for n, s in mapped.specs.items() if n in used],
                           conn=tx)
        ws.add_judgments(mapped.judgments.values(), conn=tx, replace=True)
        ws.add_spans(mapped.spans, conn=tx)


def _texts(item: Item) -> tuple[str, str, tuple[str, ...]]:
    return item.task, item.prompt, tuple(c.text for c in item.candidates)


def format_summary(m: Mapped, path: str, detected: bool) -> list[str]:
    """The summary in words: what was mapped, accepted, dropped and what waits."""
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
    for what, n in s["waiting_for_binary_categorical"].items():
        lines.append(f"  waiting {n}: {what} (binary/categorical verdicts and labels arrive with those task types; "
                     "not imported yet)")
    lines += [f"  note: {n}" for n in s["notes"]]
    return lines
