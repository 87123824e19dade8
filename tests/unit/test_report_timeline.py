"""The timeline SVG: round ticks, a far-away limit named rather than drawn, labels that do not collide."""

import xml.etree.ElementTree as ET

import pytest

from vramlens.analysis.model import Timeline, TimelinePoint
from vramlens.analysis.rendering.timeline_svg import TOP, nice_ticks, timeline_svg

NS = "{http://www.w3.org/2000/svg}"
GIB = 1024**3


def timeline(peak: int, oom: bool = True) -> Timeline:
    points = [TimelinePoint(i, None, peak * i // 9, peak * i // 9) for i in range(10)]
    return Timeline(entries=10, points=points, start_allocated=0, start_reserved=0, end_allocated=peak,
                    end_reserved=peak, peak_allocated=peak, peak_reserved=peak, peak_index=9, peak_time_us=None,
                    oom_index=9 if oom else None)


def texts(svg: str) -> dict[str, ET.Element]:
    return {element.text: element for element in ET.fromstring(svg).iter(f"{NS}text") if element.text}


@pytest.mark.parametrize("top", [5 * GIB + 12345, 1536 * 1024**2, 139 * GIB, 3 * 1024**2 + 7, 900])
def test_ticks_are_round_in_one_binary_unit(top):
    ticks, unit, size = nice_ticks(top)
    assert ticks[0] == 0 and ticks[-1] >= top and 3 <= len(ticks) <= 7
    step = ticks[1] / size
    mantissa = step / 10 ** __import__("math").floor(__import__("math").log10(step))
    assert round(mantissa, 6) in (1, 2, 5)
    assert all(tick == pytest.approx(i * ticks[1]) for i, tick in enumerate(ticks))


def test_oom_label_sits_at_the_bottom_of_its_line_clear_of_the_limit_label():
    svg = timeline_svg(timeline(4 * GIB), limit=5 * GIB)
    labels = texts(svg)
    oom, limit = labels["OOM"], labels["limit 5.00 GiB"]
    assert float(oom.get("y")) - float(limit.get("y")) > 100  # far apart vertically, whatever their x
    assert "1 GiB" in labels or "2 GiB" in labels  # round ticks


def test_a_limit_far_above_the_data_is_named_not_drawn():
    svg = timeline_svg(timeline(4 * GIB), limit=140 * GIB)
    labels = texts(svg)
    assert "limit 140.00 GiB (off scale)" in labels
    assert not any(line.get("stroke-dasharray") for line in ET.fromstring(svg).iter(f"{NS}line"))
    assert not any(text.endswith("0 GiB") and float(text.split()[0]) > 10 for text in labels)  # scaled to the data


def test_legend_is_above_the_plot():
    labels = texts(timeline_svg(timeline(4 * GIB), limit=5 * GIB))
    for name in ("allocated", "reserved", "limit"):
        assert float(labels[name].get("y")) < TOP
