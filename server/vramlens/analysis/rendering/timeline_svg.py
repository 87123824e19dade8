"""The timeline plot: allocated and reserved over the trace, the limit, the peak and the OOM. Stdlib only.

Readability rules: the legend sits above the plot, never on the lines; the y axis has round ticks
(1, 2 or 5 × 10^k in one binary unit); a limit far above the data (a whole device for a run that
used a few GiB) is named, not drawn, so the data keeps the height of the plot.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from vramlens.analysis.model import Timeline
from vramlens.units import format_bytes

WIDTH, HEIGHT = 820, 340
LEFT, RIGHT, TOP, BOTTOM = 80, 24, 52, 40
LIMIT_SCALE = 2.0  # a limit above this many times the peak reserved is written, not drawn
HEADROOM = 1.1
UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024), ("B", 1))
ALLOCATED, RESERVED, LIMIT = "#0072b2", "#e69f00", "#c00"
HALO = 'paint-order="stroke" stroke="white" stroke-width="4" stroke-linejoin="round"'  # text stays legible on lines


def nice_ticks(top: int) -> tuple[list[int], str, int]:
    """Round tick values covering ``top``: (ticks in bytes, unit name, unit size)."""
    top = max(top, 1)
    name, size = next((name, size) for name, size in UNITS if top >= size)
    span = top / size
    raw = span / 5
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    count = math.ceil(span / step - 1e-9)
    return [round(i * step * size) for i in range(count + 1)], name, size


def _tick_label(value: int, unit: str, size: int) -> str:
    return f"{value / size:g} {unit}" if value else "0"


def timeline_svg(timeline: Timeline, limit: int | None = None, title: str = "GPU memory over the recorded history") -> str:
    points = timeline.points
    last_index = max(timeline.entries - 1, 1)
    data_top = max([p.reserved for p in points] + [p.allocated for p in points] + [timeline.peak_reserved, 1])
    limit_drawn = bool(limit) and limit <= LIMIT_SCALE * data_top
    ticks, unit, unit_size = nice_ticks(int(max(data_top, limit if limit_drawn else 0) * HEADROOM))
    top_value = ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bottom = TOP + plot_h

    def x(index: int) -> float:
        return LEFT + plot_w * index / last_index

    def y(value: int) -> float:
        return TOP + plot_h * (1 - value / top_value)

    def polyline(values: list[tuple[int, int]], color: str, label: str) -> str:
        coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in values)
        return f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{coords}"><title>{label}</title></polyline>'

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="18" font-weight="bold" font-size="14">{escape(title)}</text>',
    ]
    for value in ticks:
        parts.append(f'<line x1="{LEFT}" y1="{y(value):.1f}" x2="{LEFT + plot_w}" y2="{y(value):.1f}" stroke="#e6e6e6"/>')
        parts.append(f'<text x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end" fill="#333">'
                     f'{escape(_tick_label(value, unit, unit_size))}</text>')
    parts += [
        f'<line x1="{LEFT}" y1="{bottom}" x2="{LEFT + plot_w}" y2="{bottom}" stroke="#444"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#444"/>',
        f'<text x="{LEFT}" y="{bottom + 16}" text-anchor="middle" fill="#333">0</text>',
        f'<text x="{LEFT + plot_w}" y="{bottom + 16}" text-anchor="middle" fill="#333">{timeline.entries - 1}</text>',
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle" fill="#333">trace entry</text>',
    ]
    if limit_drawn:
        parts.append(f'<line x1="{LEFT}" y1="{y(limit):.1f}" x2="{LEFT + plot_w}" y2="{y(limit):.1f}" stroke="{LIMIT}" '
                     f'stroke-dasharray="6,4"/>')
    if points:
        parts.append(polyline([(p.index, p.reserved) for p in points], RESERVED, "reserved"))
        parts.append(polyline([(p.index, p.allocated) for p in points], ALLOCATED, "allocated"))
    if timeline.peak_index is not None:
        parts.append(f'<circle cx="{x(timeline.peak_index):.1f}" cy="{y(timeline.peak_allocated):.1f}" r="4" '
                     f'fill="{ALLOCATED}"><title>peak allocated {escape(format_bytes(timeline.peak_allocated))}</title></circle>')
    if limit_drawn:  # after the data lines, so the label is never painted over
        parts.append(f'<text x="{LEFT + 6}" y="{y(limit) - 5:.1f}" fill="{LIMIT}" {HALO}>'
                     f'limit {escape(format_bytes(limit))}</text>')
    if timeline.oom_index is not None:
        ox = x(timeline.oom_index)
        parts.append(f'<line x1="{ox:.1f}" y1="{TOP}" x2="{ox:.1f}" y2="{bottom}" stroke="{LIMIT}" stroke-width="2"/>'
                     f'<text x="{ox - 5:.1f}" y="{bottom - 6}" text-anchor="end" fill="{LIMIT}" font-weight="bold" '
                     f'{HALO}>OOM</text>')
    parts.append(_legend(limit if limit and not limit_drawn else None, bool(limit_drawn)))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _legend(off_scale_limit: int | None, limit_drawn: bool) -> str:
    """One row between the title and the plot: line swatches and, when it is off scale, the limit."""
    legend_y, cursor, items = 38, LEFT, []
    entries = [("allocated", ALLOCATED, ""), ("reserved", RESERVED, "")]
    if limit_drawn:
        entries.append(("limit", LIMIT, ' stroke-dasharray="6,4"'))
    for label, color, dash in entries:
        items.append(f'<line x1="{cursor}" y1="{legend_y - 4}" x2="{cursor + 22}" y2="{legend_y - 4}" stroke="{color}" '
                     f'stroke-width="2"{dash}/><text x="{cursor + 28}" y="{legend_y}" fill="#333">{label}</text>')
        cursor += 28 + 8 * len(label) + 24
    if off_scale_limit:
        items.append(f'<text x="{WIDTH - RIGHT}" y="{legend_y}" text-anchor="end" fill="{LIMIT}">'
                     f'limit {escape(format_bytes(off_scale_limit))} (off scale)</text>')
    return "".join(items)
