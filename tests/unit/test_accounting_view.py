"""The accounting is one set of rows (rendering/accounting_view.py): the CLI's table, the Markdown report's
table and the report view's payload show the same labels and figures, and one device total."""

from pathlib import Path

import pytest

from vramlens.analysis import analyze_path
from vramlens.analysis.rendering.accounting_view import accounting_json, accounting_view, device_words, limit_words
from vramlens.analysis.rendering.analysis_text import render_text
from vramlens.analysis.rendering.report import build_report

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "captures" / "retained_references"


@pytest.fixture(scope="module")
def analysis():
    return analyze_path(str(CAPTURE))


def test_the_cli_the_report_and_the_view_show_the_same_rows(analysis):
    view = accounting_view(analysis)
    assert view.title == "Memory at the OOM"
    assert [row.key for row in view.rows] == ["allocated", "cached", "reserved", "non_pytorch", "driver_used", "limit",
                                              "request", "peak_allocated", "peak_reserved"]
    text = render_text(analysis, "cap").splitlines()
    report = build_report(analysis, {}, None, "cap")
    assert f"## {view.title}" in report and view.title in text
    for row in view.rows:
        shown = next(line for line in text if line.strip().startswith(row.label + " "))
        assert row.value in shown and shown.rstrip().endswith(row.remark)
        assert f"| {row.label} | {row.value} |" in report
    sent = accounting_json(view)
    assert sent["title"] == view.title
    assert [(r["label"], r["value"], r["remark"]) for r in sent["rows"]] == [(r.label, r.value, r.remark) for r in view.rows]


def test_one_device_total_in_every_view(analysis):
    acc = analysis.accounting
    assert acc.driver_total and acc.driver_total != acc.device_total  # NVML says another size than torch
    assert device_words(acc) == "device 139.80 GiB" and limit_words(acc) == "cap 3.00 GiB"
    shown = render_text(analysis, "cap", verbose=True) + build_report(analysis, {}, None, "cap")
    assert "139.80 GiB" in shown and "140.40 GiB" not in shown
