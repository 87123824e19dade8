"""The accounting at the moment the analysis is about, as rows people read: the CLI's table, the Markdown
report's table and the report view's table draw these rows and add only their own markup, so each figure
(the device total among them) is formatted once, here."""

from __future__ import annotations

from dataclasses import dataclass

from vramlens.analysis.load.ending import moment_words
from vramlens.analysis.model import Accounting, Analysis
from vramlens.units import format_bytes as fmt


@dataclass(frozen=True)
class AccountingRow:
    key: str  # the figure it shows ("allocated", "non_pytorch", …): the view's tests find rows by it
    label: str  # "non-PyTorch (driver used − reserved)"
    value: str  # "1.27 GiB"
    remark: str  # "this process 512.00 MiB (context, libraries); other processes 0 B"; "" when none


@dataclass(frozen=True)
class AccountingView:
    title: str  # "Memory at the OOM"
    rows: tuple[AccountingRow, ...]


def free_block_remark(acc: Accounting) -> str:
    if acc.largest_free_block is None:
        return ""
    remark = f"largest free block {fmt(acc.largest_free_block)} ({acc.largest_free_pool} pool)"
    if acc.request is not None:
        remark += ": could hold the request" if acc.free_block_fits_request else ": could not hold the request"
    return remark


def outside_remark(acc: Accounting) -> str:
    """Who uses what PyTorch did not reserve: this process (its CUDA context and libraries), others, nobody."""
    if acc.context_and_libraries is not None:
        remark = (f"this process {fmt(acc.context_and_libraries)} (context, libraries); "
                  f"other processes {fmt(acc.other_processes)}")
        if acc.unattributed:
            remark += f"; not attributed to any process (driver reservations) {fmt(acc.unattributed)}"
        return remark
    return f"other processes {fmt(acc.other_processes)}" if acc.other_processes is not None else ""


def device_total(acc: Accounting) -> int | None:
    """The one device total shown (torch's, else the driver's when torch did not say); NVML's own total
    stays in the JSON (driver_total), so no view shows two totals."""
    return acc.device_total or acc.driver_total


def limit_words(acc: Accounting) -> str | None:
    """The allocator's ceiling with what it is: `cap 3.00 GiB` (a fraction cap), `device 139.80 GiB`."""
    return f"{'cap' if acc.limit_is_cap else 'device'} {fmt(acc.limit)}" if acc.limit is not None else None


def device_words(acc: Accounting) -> str | None:
    total = device_total(acc)
    return f"device {fmt(total)}" if total else None


def accounting_rows(acc: Accounting, peak_allocated: int, peak_reserved: int | None = None) -> list[AccountingRow]:
    total = device_total(acc)
    rows = [
        AccountingRow("allocated", "allocated (live tensors)", fmt(acc.allocated), ""),
        AccountingRow("cached", "cached (reserved − allocated)", fmt(acc.cached), free_block_remark(acc)),
        AccountingRow("reserved", "reserved by PyTorch", fmt(acc.reserved), ""),
        AccountingRow("non_pytorch", "non-PyTorch (driver used − reserved)", fmt(acc.non_pytorch), outside_remark(acc)),
        AccountingRow("driver_used", "driver-visible used", fmt(acc.driver_used),
                      f"NVML sample: {acc.nvml_phase}" if acc.nvml_phase else ""),
        AccountingRow("limit", f"limit ({'fraction cap' if acc.limit_is_cap else 'device total'})", fmt(acc.limit),
                      f"device total {fmt(total)}" if acc.limit_is_cap and total else ""),
        AccountingRow("request", "failed request", fmt(acc.request) if acc.request is not None else "none", ""),
        AccountingRow("peak_allocated", "peak allocated (whole trace)", fmt(peak_allocated), ""),
    ]
    if peak_reserved is not None:
        rows.append(AccountingRow("peak_reserved", "peak reserved (whole trace)", fmt(peak_reserved), ""))
    return rows


def accounting_view(analysis: Analysis) -> AccountingView:
    acc, timeline = analysis.accounting, analysis.timeline
    return AccountingView(title=f"Memory {moment_words(acc.moment, analysis.status)}",
                          rows=tuple(accounting_rows(acc, timeline.peak_allocated, timeline.peak_reserved)))


def accounting_json(view: AccountingView) -> dict:
    """The view as the report view receives it: labels only, it formats nothing itself."""
    return {"title": view.title,
            "rows": [{"key": row.key, "label": row.label, "value": row.value, "remark": row.remark} for row in view.rows]}
