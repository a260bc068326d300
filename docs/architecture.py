"""Draw docs/img/architecture.svg, the architecture page's picture, from the description below (never by hand).

    python docs/architecture.py

Top row: how data becomes judgments and human labels; middle: the one producer of the audit, its probe registry
and the typed report; bottom: the renderers, which only read that report. Under them, the store (the only code
that speaks SQL) and the pure statistics every layer builds on.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

OUT = Path(__file__).resolve().parent / "img" / "architecture.svg"
W, H = 980, 560
BLUE, GREEN, GREY, ORANGE = ("#eef1fb", "#3f51b5"), ("#eaf6ee", "#2e7d32"), ("#f4f4f4", "#666"), ("#fff4e5", "#e65100")

# (x, y, width, height, colours, title, lines)
BOXES = {
    "data": (20, 40, 170, 86, BLUE, "judgecal/data", ["records, importers (other tools'", "files), dataset registry"]),
    "judges": (215, 40, 190, 86, BLUE, "judgecal/judges", ["rubrics, specs, engine: cache,", "one retry policy, backends/"]),
    "annotation": (430, 40, 170, 86, BLUE, "judgecal/annotation", ["Label Studio: blind push,", "validated pull"]),
    "aggregate": (625, 40, 170, 86, BLUE, "judgecal/aggregate", ["Dawid–Skene, majority vote,", "annotators per source"]),
    "ray": (820, 40, 140, 86, GREY, "distributed", ["Ray: judging, and the", "audit's alignment sums"]),
    "audit": (20, 170, 940, 150, GREEN, "judgecal.audit.audit_workspace(ws, options, executor) → AuditReport", []),
    "registry": (40, 210, 280, 92, GREEN, "probe registry", ["each probe declares its question, null,", "metrics, flags, how to run it;",
                                                             "register(probe): one line"]),
    "sections": (345, 210, 290, 92, GREEN, "evaluate (BH once) + sections", ["alignment, biases, like-for-like humans,", "breakdown, comparisons, labels, spans,",
                                                                             "pointwise, models, verdict + reasons"]),
    "typed": (660, 210, 280, 92, GREEN, "AuditReport (typed)", ["schema judgecal.audit/2, JSON Schema", "generated from the types → audit.json",
                                                                 "(golden check on PandaLM)"]),
    "catalogue": (20, 365, 220, 70, ORANGE, "catalogue", ["titles, definitions, flag words", "(filled by the registry)"]),
    "terminal": (260, 365, 220, 70, ORANGE, "terminal", ["verdicts, figures, reasons"]),
    "html": (500, 365, 220, 70, ORANGE, "audit.html / audit.pdf", ["page one, then each judge"]),
    "explorer": (740, 365, 220, 70, ORANGE, "explorer (apps/)", ["renders the report and", "typed store queries"]),
    "store": (20, 460, 460, 56, GREY, "workspace store: judgecal.sqlite", ["the only code that speaks SQL: items · judgments · annotations · consensus"]),
    "stats": (500, 460, 460, 56, GREY, "judgecal/stats", ["pure vectorised estimators: bootstrap, agreement, PPI++, calibration"]),
}
ARROWS = [("data", "judges"), ("judges", "annotation"), ("annotation", "aggregate"), ("ray", "audit"),
          ("registry", "sections"), ("sections", "typed"), ("typed", "terminal"), ("typed", "html"),
          ("typed", "explorer"), ("registry", "catalogue")]
LAYERS = ("layers import downwards only: stats < data < judges < aggregate < audit < stability, distributed, loop, "
          "annotation < report < cli · apps (import-linter, in make lint)")


def _box(x: int, y: int, w: int, h: int, colours: tuple[str, str], title: str, lines: list[str]) -> str:
    fill, stroke = colours
    out = [f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>',
           f'<text x="{x + w / 2}" y="{y + 20}" text-anchor="middle" font-weight="bold" font-size="13">{escape(title)}</text>']
    out += [f'<text x="{x + w / 2}" y="{y + 38 + 15 * k}" text-anchor="middle" font-size="11" fill="#333">{escape(t)}</text>'
            for k, t in enumerate(lines)]
    return "".join(out)


def _anchor(name: str, towards: str) -> tuple[float, float]:
    """The middle of the side of box ``name`` that faces box ``towards``."""
    x, y, w, h = BOXES[name][:4]
    tx, ty, tw, th = BOXES[towards][:4]
    if ty >= y + h:  # below
        return x + w / 2, y + h
    if ty + th <= y:  # above
        return x + w / 2, y
    return (x + w, y + h / 2) if tx >= x + w else (x, y + h / 2)


def svg() -> str:
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             'font-family="Helvetica, Arial, sans-serif" role="img"><title>judgecal architecture: data to report'
             '</title><defs><marker id="a" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
             '<path d="M0,0 L10,4 L0,8 z" fill="#3f51b5"/></marker></defs>',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             '<text x="20" y="24" font-size="12" fill="#555">1. judge, review, aggregate: everything lands in the '
             'workspace store</text>',
             '<text x="20" y="160" font-size="12" fill="#555">2. one producer: the audit, computed once</text>',
             '<text x="20" y="355" font-size="12" fill="#555">3. renderers: they read the typed report, '
             'compute nothing</text>']
    parts += [_box(*b) for b in BOXES.values()]
    for a, b in ARROWS:
        (x1, y1), (x2, y2) = _anchor(a, b), _anchor(b, a)
        parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#3f51b5" stroke-width="1.8" '
                     'marker-end="url(#a)"/>')
    # the store feeds the audit from below the first row
    parts.append('<path d="M 515 126 L 515 170" stroke="#3f51b5" stroke-width="1.8" fill="none" marker-end="url(#a)"/>')
    parts.append('<text x="522" y="152" font-size="11" fill="#3f51b5">the workspace</text>')
    parts.append(f'<text x="20" y="545" font-size="11" fill="#333">{escape(LAYERS)}</text>')
    return "".join(parts) + "</svg>\n"


if __name__ == "__main__":
    OUT.write_text(svg(), "utf-8")
    print(f"wrote {OUT}")
