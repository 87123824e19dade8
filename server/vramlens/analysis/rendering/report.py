"""The reproducibility report in Markdown: setup, what happened, the diagnosis, the lines, the plot."""

from __future__ import annotations

from vramlens.analysis.load.ending import SNAPSHOT
from vramlens.analysis.load.interventions import read_interventions
from vramlens.analysis.model import Analysis
from vramlens.analysis.rendering.accounting_view import accounting_view
from vramlens.analysis.load.run_settings import run_settings
from vramlens.analysis.rendering.markdown_safe import cell, code, code_block, prose, sentence
from vramlens.analysis.rendering.line_view import recorded_place
from vramlens.analysis.rendering.notebook_text import KEPT_TITLE, cell_rows, cells_title, holder_lines
from vramlens.analysis.rendering.report_paths import ReportRoots, relative_text, relative_traceback, report_roots
from vramlens.safe_text import one_line
from vramlens.analysis.rendering.storing_view import storing_view
from vramlens.analysis.rendering.verdict_view import verdict_view
from vramlens.analysis.rendering.memory_view import census_words, holder_rows, role_rows
from vramlens.units import format_bytes as fmt

UNKNOWN = "unknown (the capture does not show it)"


def _cell(text) -> str:
    """Untrusted text in a table cell: shown as text (markdown_safe.py), one row."""
    return cell(sentence(text))


def _code_cell(text) -> str:
    return cell(code(text))


def _allocator_text(analysis: Analysis) -> str:
    """The settings a user wrote (the env var torch records), not every default torch reports."""
    env = analysis.environment
    written = [f"{name}={value}" for name, value in sorted((env.get("alloc_env") or {}).items()) if value]
    recorded = analysis.allocator_settings
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        if recorded.get(name) and not any(item.startswith(name + "=") for item in written):
            written.append(f"{name}={recorded[name]}")
    expandable = "on" if env.get("expandable_segments") else "off"
    return (", ".join(written) or "defaults") + f"; expandable segments {expandable}"


def _cap_text(limit: dict) -> str:
    if not limit.get("bytes"):
        return "none"
    fraction = limit.get("fraction")
    return fmt(limit["bytes"]) + (f" (fraction {fraction:.4f})" if fraction is not None else "")


def _setup(analysis: Analysis, meta: dict) -> list[str]:
    env = analysis.environment
    total = env.get("total_memory")
    limit = meta.get("memory_limit") or {}
    settings = run_settings(meta.get("argv"))
    allocator_settings = _allocator_text(analysis)
    rows = [
        ("GPU", f"{env.get('gpu_name') or 'unknown'}, {fmt(total)} total" + (f" ({total} bytes)" if total else "")),
        ("Driver / CUDA", f"{env.get('driver') or 'unknown'} / {env.get('cuda') or 'unknown'}"),
        ("torch", env.get("torch") or "unknown"),
        ("Allocator", f"{env.get('allocator_backend') or 'unknown'} backend; settings: {allocator_settings}"),
        ("Memory cap", _cap_text(limit)),
        ("Command", " ".join(meta.get("argv") or []) or "unknown"),
        ("Precision", settings["precision"] or UNKNOWN),
        ("Batch size", settings["batch_size"] or UNKNOWN),
        ("Input length", settings["input_length"] or UNKNOWN),
    ]
    place = meta.get("distributed")
    if place:
        rows.insert(1, ("Rank", f"{place.get('rank')} of {place.get('world_size')} (local rank {place.get('local_rank')}, "
                                f"node {place.get('node_rank')}, host {place.get('hostname')}, backend {place.get('backend') or 'unknown'})"))
    return ["## Setup", "", "| | |", "|---|---|", *[f"| {k} | {_cell(v)} |" for k, v in rows], ""]


def _memory(analysis: Analysis) -> list[str]:
    view = accounting_view(analysis)
    lines = [f"## {view.title}", "", "| | | |", "|---|---:|---|"]
    lines += [f"| {row.label} | {row.value} | {_cell(row.remark)} |" for row in view.rows]
    return lines + [""]


def _failure(analysis: Analysis, meta: dict, roots: ReportRoots) -> list[str]:
    out = ["## What happened", ""]
    status = analysis.status
    if analysis.outcome == "oom" and analysis.oom:
        out.append(f"The run ended with status {code(status)}: a request of {fmt(analysis.oom.request)} failed"
                   + (f" ({analysis.oom.count} OOMs in all)." if analysis.oom.count > 1 else "."))
    elif status == SNAPSHOT:
        out.append("A raw snapshot: the run's outcome is not recorded, and the trace holds no OOM.")
    else:
        exit_code = f", exit code {meta['exit_code']}" if meta.get("exit_code") is not None else ""
        out.append(f"Status {code(status)}{exit_code}: {sentence(analysis.outcome_text)}.")
    exception = meta.get("exception") or {}
    if exception.get("traceback"):
        traceback = relative_traceback(exception["traceback"], roots, analysis.notebook)
        out += ["", *code_block(traceback).splitlines()]
    elif exception.get("message"):
        out += ["", f"> {prose(exception.get('type') or 'Exception')}: {prose(exception['message'])}"]
    return out + [""]


def _interventions(meta: dict) -> list[str]:
    tried = read_interventions(meta)
    out = ["## Interventions tried", ""]
    if not tried:
        return out + ["None recorded: no allocator setting was tried and measured for this run.", ""]
    out += ["| setting | verdict | before | after |", "|---|---|---|---|"]
    for item in tried:
        out.append(f"| {_code_cell(item.setting)} | {_cell(item.verdict)} | {_cell(_measurement(item.baseline))} | "
                   f"{_cell(_measurement(item.result))} |")
    return out + [""]


def _measurement(run: dict) -> str:
    if not run:
        return "—"
    parts = [str(run["status"])] if run.get("status") else []
    parts += [f"{key.replace('_', ' ')} {fmt(run[key])}" for key in ("peak_allocated", "peak_reserved") if run.get(key) is not None]
    return ", ".join(parts) or "—"


def _chosen(meta: dict) -> list[str]:
    """Item 7: what a `vramlens experiment` on this run chose, with the figures it measured."""
    experiment = meta.get("experiment") if isinstance(meta.get("experiment"), dict) else None
    out = ["## Chosen intervention", ""]
    if experiment is None:
        return out + ["None measured: run `vramlens experiment` to compare interventions over repeated runs.", ""]
    chosen = experiment.get("sentence")
    out.append(sentence(chosen) if chosen else "None: no variant beat the baseline beyond the run-to-run noise.")
    rows = [row for row in experiment.get("variants") or [] if isinstance(row, dict)]
    if rows:
        out += ["", "| variant | OOM | median peak allocated | median peak reserved | against the baseline |",
                "|---|---|---:|---:|---|"]
        for row in rows:
            out.append(f"| {_cell(row.get('label'))} | {row.get('ooms')}/{row.get('runs')} | {fmt(_int(row.get('peak_allocated')))} | "
                       f"{fmt(_int(row.get('peak_reserved')))} | {_cell(row.get('verdict'))} |")
    if experiment.get("stopped"):
        out += ["", f"The experiment stopped early: {sentence(experiment['stopped'])}"]
    if experiment.get("file"):
        out += ["", f"All runs: {code(experiment['file'])}."]
    return out + [""]


def _int(value) -> int | None:
    return None if value is None else int(value)


def _diagnosis(analysis: Analysis, place) -> list[str]:
    d, verdict = analysis.diagnosis, verdict_view(analysis)
    # The cause in the CLI's words (verdict_view.py), its identifier after them for searching docs and JSON.
    out = ["## Diagnosis", "", f"**{verdict.cause[:1].upper()}{verdict.cause[1:]}** ({code(d.cause)}; "
                               f"{sentence(verdict.confidence)})", ""]
    out += [f"- {sentence(fact)}" for fact in d.evidence]
    if verdict.alternative:
        out += ["", f"{verdict.alternative[:1].upper()}{verdict.alternative[1:]} ({code(d.alternative)})."]
    if d.confirm is not None:
        out += ["", f"To decide by measurement ({sentence(d.confirm.question)}): {code(d.confirm.command)} — "
                    f"{sentence(d.confirm.expectation)}"]
    out += _steps(analysis, place) + _roles(analysis, place)
    if analysis.recommendations:
        out += ["", "What to try:", ""]
        for number, rec in enumerate(analysis.recommendations, 1):
            out.append(f"{number}. {sentence(rec.action)}{' *(an experiment: measure it)*' if rec.experiment else ''} — "
                       f"{sentence(rec.reason)}")
    return out + [""]


def _steps(analysis: Analysis, place) -> list[str]:
    steps = analysis.steps
    if steps is None:
        return ["", "### Steps", "", "No recurring loop in the trace: one pass, or the failure came in the first iteration."]
    out = ["", "### Steps", "", f"{len(steps.steps)} iteration(s) of the loop at {code(_driver(steps.driver, place))} "
           f"({steps.completed} completed)" + (f", the floor rising {fmt(steps.growth_per_step)} per step"
                                               if steps.growth_per_step else "") + ".", "",
           "| step | kind | floor | peak |", "|---:|---|---:|---:|"]
    shown = steps.steps if len(steps.steps) <= 12 else steps.steps[:6] + steps.steps[-6:]
    for step in shown:
        out.append(f"| {step.number}{'' if step.complete else ' (failed)'} | {step.kind} | {fmt(step.floor_allocated)} | "
                   f"{fmt(step.peak_allocated)} |")
    return out


def _driver(driver: str, place) -> str:
    """The step loop's frame (``"path:line function"``) with its place as the report names places."""
    location, _, function = driver.rpartition(" ")
    path, _, line = location.rpartition(":")
    return f"{place(path, int(line))} {function}" if path and line.isdigit() else driver


def _roles(analysis: Analysis, place) -> list[str]:
    out = []
    if analysis.roles:
        when = census_words(analysis)
        out += ["", "### What the memory is", "", f"{when[:1].upper()}{when[1:]}.", "",
                "| role | bytes | share |", "|---|---:|---:|"]
        out += [f"| {_cell(row.label)} | {row.bytes} | {row.share} |" for row in role_rows(analysis)]
    if analysis.storing or analysis.storing_note:
        out += ["", "### The line that keeps it", ""]
        if not analysis.storing:
            out.append(sentence(analysis.storing_note))
        coded = lambda path, line: code(place(path, line))  # noqa: E731
        for storing in analysis.storing[:3]:
            view = storing_view(storing, analysis, coded, name=code)
            statement = f": {code(storing.source)}" if storing.source else ""
            second = f"; {view.second_hop}" if view.second_hop else ""
            out.append(f"- {coded(storing.path, storing.line)}{statement} {view.words}{second}")
    if analysis.holders:
        out += ["", "### Who holds it", ""]
        for row in holder_rows(analysis, lambda path, line: code(place(path, line))):
            graphs = f"; {prose(row.graphs)}" if row.graphs else ""
            history = "".join(f", {part}" for part in row.history)
            out.append(f"- {code(row.root)} ({prose(row.what)}, {row.tensors}{graphs}): {row.bytes}{history}")
    return out


def _lines(analysis: Analysis, top: int, place) -> list[str]:
    shown = [line for line in analysis.lines if line.live_bytes > 0][:top]
    out = ["## Top lines", "", "| line | live | share | allocated in total | count | growing | source |",
           "|---|---:|---:|---:|---:|---|---|"]
    for line in shown:
        where = f"{code(place(line.path, line.line))} {prose(line.function)}" if line.path else prose(line.function)
        source = _code_cell(line.source) if line.source else ""
        out.append(f"| {cell(where)} | {fmt(line.live_bytes)} | {line.share:.0%} | {fmt(line.allocated_bytes)} | "
                   f"{line.count} | {'yes' if line.growing else 'no'} | {source} |")
    paths = [line for line in shown if line.call_path and line.path]
    if paths:
        out += ["", "Call paths:", ""] + [f"- {code(place(line.path, line.line))}: {prose(' → '.join(line.call_path))}"
                                          for line in paths]
    return out + [""]


def _notebook(analysis: Analysis, place) -> list[str]:
    facts = analysis.notebook
    if facts is None:
        return []
    out = ["## Notebook", "", f"{cells_title(facts)}:", ""]
    out += [f"- {_cell(row)}" for row in cell_rows(facts, place)]
    held = holder_lines(facts, place)
    if held:
        out += ["", f"{KEPT_TITLE}:", ""] + [f"- {_cell(line)}" for line in held]
    return out + [""]


def build_report(analysis: Analysis, meta: dict, svg_name: str | None, title: str, top: int = 8) -> str:
    roots = report_roots(analysis, meta)
    place = recorded_place(analysis, roots.every)  # every recorded line the report names, by this one rule
    out = [f"# GPU memory report: {prose(title)}", ""]
    out += _setup(analysis, meta)
    out += _failure(analysis, meta, roots)
    out += _memory(analysis)
    out += _diagnosis(analysis, place)
    out += _lines(analysis, top, place)
    out += _notebook(analysis, place)
    out += _interventions(meta)
    out += _chosen(meta)
    out += ["## Timeline", ""]
    if svg_name:
        out.append(f"![allocated and reserved over the recorded history]({svg_name})")
    else:
        out.append("Write the report to a file (`-o report.md`) to get the timeline plot beside it.")
    out += ["", f"Peak allocated {fmt(analysis.timeline.peak_allocated)} at trace entry {analysis.timeline.peak_index}; "
            f"{analysis.timeline.entries} entries recorded."]
    out += [f"> Note: {sentence(note)}" for note in analysis.notes]
    # One row, one line: nothing from the capture adds a line (a forged heading) or a control sequence.
    # Paths in the capture's own text (the command, notes, messages) are named like the rest.
    return relative_text("\n".join(map(one_line, out)), roots) + "\n"
