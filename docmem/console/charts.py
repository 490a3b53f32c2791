"""Server-rendered SVG bar charts for the store's overview: counts in, markup out, no script.

Pure: each chart is a function of numbers and fixed labels, never of a
memory's text, so nothing in a picture needs escaping beyond its labels
(escaped all the same). Bars are drawn with presentation attributes and the
style sheet's classes, never ``style=`` attributes, which the console's
Content-Security-Policy forbids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

__all__ = ["Bar", "bar_chart"]

_ROW = 22
_LABEL = 150
_PLOT = 360
_COUNT = 90


@dataclass(frozen=True)
class Bar:
    """One row of a chart: its label, its count, and whether it is a warning (past a cap)."""

    label: str
    count: int
    warning: bool = False


def bar_chart(title: str, bars: Sequence[Bar], *, caption: str = "") -> Markup:
    """A horizontal bar chart, the longest bar at full width; ``title`` names it for a reader."""
    height = _ROW * len(bars) + 8
    width = _LABEL + _PLOT + _COUNT
    largest = max((bar.count for bar in bars), default=0)
    rows: list[str] = []
    for number, bar in enumerate(bars):
        y = 4 + number * _ROW
        length = 0 if largest == 0 else round(_PLOT * bar.count / largest)
        if bar.count and length == 0:
            length = 1  # a count that is not zero is never drawn as nothing
        kind = "bar warning" if bar.warning else "bar"
        rows.append(
            f'<text class="label" x="{_LABEL - 8}" y="{y + 15}" text-anchor="end">'
            f"{escape(bar.label)}</text>"
            f'<rect class="{kind}" x="{_LABEL}" y="{y + 3}" width="{length}" height="{_ROW - 6}">'
            f"<title>{escape(bar.label)}: {bar.count:,}</title></rect>"
            f'<text class="count" x="{_LABEL + length + 6}" y="{y + 15}">{bar.count:,}</text>'
        )
    described = escape(f"{title}. {caption}".strip())
    return Markup(
        f'<svg class="chart" role="img" aria-label="{described}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(rows)}</svg>"
    )
