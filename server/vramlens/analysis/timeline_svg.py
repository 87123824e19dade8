"""The timeline plot: allocated and reserved over the trace, the limit, the peak and the OOM. Stdlib only."""

from __future__ import annotations

from xml.sax.saxutils import escape

from vramlens.analysis.model import Timeline
from vramlens.units import format_bytes

WIDTH, HEIGHT = 820, 320
LEFT, RIGHT, TOP, BOTTOM = 90, 20, 30, 40


def timeline_svg(timeline: Timeline, limit: int | None = None, title: str = "GPU memory over the recorded history") -> str:
    points = timeline.points
    last_index = max(timeline.entries - 1, 1)
    top_value = max([p.reserved for p in points] + [p.allocated for p in points] + [limit or 0, 1])
    top_value = int(top_value * 1.08)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

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
        f'<text x="{LEFT}" y="18" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="#444"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#444"/>',
    ]
    for step in range(5):
        value = top_value * step // 4
        parts.append(f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{escape(format_bytes(value))}</text>')
        parts.append(f'<line x1="{LEFT}" y1="{y(value):.1f}" x2="{LEFT + plot_w}" y2="{y(value):.1f}" stroke="#eee"/>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">trace entry (0 … {timeline.entries - 1})</text>')
    if limit:
        parts.append(f'<line x1="{LEFT}" y1="{y(limit):.1f}" x2="{LEFT + plot_w}" y2="{y(limit):.1f}" stroke="#c00" '
                     f'stroke-dasharray="6,4"/><text x="{LEFT + plot_w - 4}" y="{y(limit) - 4:.1f}" text-anchor="end" '
                     f'fill="#c00">limit {escape(format_bytes(limit))}</text>')
    if points:
        parts.append(polyline([(p.index, p.reserved) for p in points], "#e69f00", "reserved"))
        parts.append(polyline([(p.index, p.allocated) for p in points], "#0072b2", "allocated"))
    if timeline.peak_index is not None:
        parts.append(f'<circle cx="{x(timeline.peak_index):.1f}" cy="{y(timeline.peak_allocated):.1f}" r="4" fill="#0072b2">'
                     f'<title>peak allocated {escape(format_bytes(timeline.peak_allocated))}</title></circle>')
    if timeline.oom_index is not None:
        ox = x(timeline.oom_index)
        parts.append(f'<line x1="{ox:.1f}" y1="{TOP}" x2="{ox:.1f}" y2="{TOP + plot_h}" stroke="#c00" stroke-width="2"/>'
                     f'<text x="{ox - 4:.1f}" y="{TOP + 12}" text-anchor="end" fill="#c00">OOM</text>')
    legend_y = TOP + 14
    parts.append(f'<text x="{LEFT + 10}" y="{legend_y}" fill="#0072b2">■ allocated</text>'
                 f'<text x="{LEFT + 100}" y="{legend_y}" fill="#e69f00">■ reserved</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
