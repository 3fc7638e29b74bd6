"""Small charts as inline SVG, drawn on the server: no JavaScript, no charting library.

Each function returns an `<svg>` element as a string; every text in it is escaped here, so a
template may output it as is. Colours come from CSS classes (`c-<name>`, see admin.css), so the
charts follow the site's palette. Every bar carries a `<title>`, which browsers show on hover
and screen readers read out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Series", "column_chart", "meter", "nice_ceiling", "stacked_bar"]


@dataclass(frozen=True)
class Series:
    """One kind of bar: its name (legend, tooltips), one value per column, its colour class."""

    name: str
    values: Sequence[float]
    colour: str


def nice_ceiling(value: float) -> int:
    """The smallest of 2, 4, 6, 8 × 10^k (k ≥ 0) that is at least `value`: an axis maximum
    people read, whose half is a whole number too (the charts count things)."""
    if value <= 2:
        return 2
    power = 10 ** math.floor(math.log10(value))
    for step in (2, 4, 6, 8, 10):
        if value <= step * power:
            return step * power
    return 20 * power  # pragma: no cover  (float rounding only)


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _svg(width: int, height: int, label: str, body: list[str], css: str, stretch=False) -> str:
    # A chart without text may stretch to its container's width (CSS), keeping its height.
    aspect = ' preserveAspectRatio="none"' if stretch else ""
    return (
        f'<svg class="chart {css}" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}"{aspect} role="img" aria-label="{escape(label)}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>'
    )


def column_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    width: int = 520,
    height: int = 150,
    label_every: int = 7,
) -> str:
    """Stacked columns, one per label (a day), with a labelled y axis and every
    `label_every`-th x label (counting back from the last, so today is always named)."""
    left, right, top, bottom = 34, 6, 8, 20
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top_value = nice_ceiling(max(totals, default=0))
    body = []
    for fraction in (0, 0.5, 1):
        y = top + plot_h * (1 - fraction)
        body.append(
            f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 4}" y="{y + 3.5:.1f}" text-anchor="end">'
            f"{_number(top_value * fraction)}</text>"
        )
    slot = plot_w / max(len(labels), 1)
    bar_w = max(1.0, slot * 0.72)
    for i, label in enumerate(labels):
        x = left + i * slot + (slot - bar_w) / 2
        base = top + plot_h
        for s in series:
            value = s.values[i]
            if value <= 0:
                continue
            h = plot_h * value / top_value
            base -= h
            body.append(
                f'<rect class="c-{s.colour}" x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" '
                f'height="{h:.1f}"><title>{escape(label)}: {_number(value)} '
                f"{escape(s.name)}</title></rect>"
            )
        if (len(labels) - 1 - i) % label_every == 0:
            body.append(
                f'<text class="axis" x="{x + bar_w / 2:.1f}" y="{height - 5}" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
    return _svg(width, height, title, body, "columns")


def stacked_bar(
    segments: Sequence[tuple[str, float, str]], *, title: str, width: int = 320, height: int = 14
) -> str:
    """One horizontal bar split into (name, value, colour) segments, in proportion."""
    total = sum(value for _, value, _ in segments)
    body = [f'<rect class="track" x="0" y="0" width="{width}" height="{height}" rx="3"/>']
    x = 0.0
    for name, value, colour in segments:
        if value <= 0 or total <= 0:
            continue
        w = width * value / total
        body.append(
            f'<rect class="c-{colour}" x="{x:.1f}" y="0" width="{w:.1f}" height="{height}">'
            f"<title>{escape(name)}: {_number(value)} ({100 * value / total:.0f}%)</title></rect>"
        )
        x += w
    return _svg(width, height, title, body, "stacked", stretch=True)


def meter(value: float, cap: float, *, title: str, width: int = 160, height: int = 10) -> str:
    """How full something is against its cap: green, amber from 80 %, red when over."""
    fraction = value / cap if cap > 0 else 0
    state = "over" if fraction > 1 else "near" if fraction >= 0.8 else "ok"
    w = width * min(fraction, 1)
    body = [
        f'<rect class="track" x="0" y="0" width="{width}" height="{height}" rx="{height / 2}"/>',
        f'<rect class="c-{state}" x="0" y="0" width="{w:.1f}" height="{height}" '
        f'rx="{height / 2}"><title>{escape(title)}: {_number(value)} of {_number(cap)} '
        f"({100 * fraction:.0f}%)</title></rect>",
    ]
    return _svg(width, height, title, body, f"meter {state}", stretch=True)
