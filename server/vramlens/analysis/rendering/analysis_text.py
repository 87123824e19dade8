"""The text of `vramlens analyze`: the answer first (the verdict's rows), then why, what else to try, the
accounting, and with --verbose the timeline, the steps, the census and the call paths. Plain text, one row a
line: nothing from the capture breaks a row or reaches the terminal as a control sequence."""

from __future__ import annotations

from vramlens.analysis.load.ending import moment_words
from vramlens.analysis.model import Analysis, LineStat
from vramlens.analysis.rendering.accounting_view import AccountingView, accounting_view
from vramlens.analysis.rendering.line_view import line_views, recorded_place
from vramlens.analysis.rendering.memory_view import census_words, holder_rows, holders_ranked, role_rows, roles_total
from vramlens.analysis.rendering.notebook_text import KEPT_TITLE, cell_rows, cells_title, holder_lines
from vramlens.analysis.rendering.storing_view import storing_view
from vramlens.analysis.rendering.verdict_view import first_fix, verdict_view
from vramlens.safe_text import one_line
from vramlens.units import count_of
from vramlens.units import format_bytes as fmt

TOP_LINES = 8


def _accounting_text(view: AccountingView) -> list[str]:
    width = max(len(row.label) for row in view.rows)
    return ["", view.title] + [f"  {row.label:<{width}}  {row.value:>12}" + (f"   {row.remark}" if row.remark else "")
                               for row in view.rows]


def sparkline(values: list[int], width: int = 60) -> str:
    """One text row of bars, each the highest value of its stretch, scaled to the highest overall."""
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    buckets = [max(values[i:i + step]) for i in range(0, len(values), step)]
    top = max(buckets) or 1
    bars = "▁▂▃▄▅▆▇█"
    return "".join(bars[min(len(bars) - 1, value * len(bars) // (top + 1))] for value in buckets)


def _line_title(line: LineStat) -> str:
    if line.path is None:
        return line.function
    if line.cell is not None:
        return f"{line.label} in {line.function}"
    return f"{line.path}:{line.line} in {line.function}"


def _notebook_text(analysis: Analysis) -> list[str]:
    facts = analysis.notebook
    if facts is None:
        return []
    place = recorded_place(analysis)
    out = ["", cells_title(facts)] + [f"  {row}" for row in cell_rows(facts, place)]
    held = holder_lines(facts, place)
    if held:
        out += ["", KEPT_TITLE] + [f"  - {line}" for line in held]
    return out


def _memory_views_text(analysis: Analysis) -> list[str]:
    out = []
    if analysis.roles:
        out += ["", f"What the memory is ({roles_total(analysis)} live, {census_words(analysis)})"]
        out += [f"  {row.bytes:>12}  {row.share:>4}  {row.label}" for row in role_rows(analysis)]
    if analysis.holders:
        out += ["", "Who holds it" + (" (by what grew across steps; the step's own tensors are its working set)"
                                      if holders_ranked(analysis) else "")]
        for row in holder_rows(analysis, recorded_place(analysis)):
            graphs = f"; {row.graphs}" if row.graphs else ""
            history = "".join(f"; {part}" for part in row.history)
            out.append(f"  {row.bytes:>12}  {row.root} ({row.what}, {row.tensors}{graphs}){history}")
    for tree in analysis.breakdown[:1]:
        out += ["", f"Inside {tree.label} (live bytes by library frame)"]
        out += _tree_lines(tree.children, "  ")
    return out


def storing_text(analysis: Analysis) -> list[str]:
    """The lines of the user's code that keep the memory (the line to change), each with its second hop."""
    if not analysis.storing:
        return ["", f"The line that keeps it: {analysis.storing_note}"] if analysis.storing_note else []
    place = recorded_place(analysis)
    out = ["", "The line that keeps it (where to change the code)"]
    for storing in analysis.storing[:3]:
        view = storing_view(storing, analysis, place)
        out.append(f"  {place(storing.path, storing.line)}: {view.words}")
        if storing.source:
            out.append(f"     > {storing.source}")
        if view.second_hop:
            out.append(f"     {view.second_hop}")
    return out


def _tree_lines(nodes, indent: str, depth: int = 0) -> list[str]:
    out = []
    for node in nodes[:6]:
        out.append(f"{indent}{fmt(node.bytes):>12}  {node.label}")
        if depth < 4:
            out += _tree_lines(node.children, indent + "  ", depth + 1)
    return out


def _steps_text(analysis: Analysis) -> list[str]:
    steps = analysis.steps
    mode = {"training": "training (a backward pass or an optimizer step ran)",
            "inference": "inference (whole iterations ran without a backward pass or an optimizer)"}.get(analysis.mode or "")
    out = []
    if steps is None:
        out += ["", "Steps: no recurring loop in the trace (one pass, or the failure came in the first iteration)."]
    else:
        floors = [step.floor_allocated for step in steps.steps]
        out += ["", f"Steps: {len(steps.steps)} iteration(s) of the loop at {steps.driver} ({steps.completed} completed)"]
        if floors:
            out.append(f"  floor between steps: {fmt(floors[0])} at the first, {fmt(floors[-1])} at the last"
                       + (f"; {fmt(steps.growth_per_step)} per step from the second on" if steps.growth_per_step else ""))
        peaks = [step.peak_allocated for step in steps.steps]
        if peaks:
            out.append(f"  peak inside a step: {fmt(max(peaks))} (step {peaks.index(max(peaks)) + 1})")
        if steps.survivors:
            when = moment_words("oom" if analysis.outcome == "oom" else "end", analysis.status)
            out.append(f"  allocated in earlier steps and still live {when}: "
                       f"{fmt(steps.survivors)} from {count_of(steps.survivor_steps, 'step')}")
    if mode:
        out.append(f"Work: {mode}")
    return out


def _opens(analysis: Analysis, rec, indent: str) -> list[str]:
    """Where a recommendation sends the user (its open_line actions), as places to read."""
    opens = [action.arguments for action in rec.actions if action.kind == "open_line" and action.arguments.get("path")]
    if not opens:
        return []
    place = recorded_place(analysis)
    return [f"{indent}open: " + ", ".join(place(where["path"], where.get("line")) for where in opens)]


def _first_screen(analysis: Analysis, path: str, verbose: bool, edit: tuple[str, str, str] | None = None) -> list[str]:
    """The answer first (at most 16 rows): the cause, the line to change (with its edit as a diff when one is
    proven safe: ``edit`` = (the line, the line edited, what it frees)), the first fix."""
    verdict = verdict_view(analysis)
    out = [f"VRAM Lens — {path}", f"Outcome: {analysis.outcome_text}",
           f"Cause: {verdict.cause} ({analysis.diagnosis.cause}; {verdict.confidence})"]
    if verdict.alternative:
        out.append(f"  {verdict.alternative}; to decide: {verdict.decide}" if verdict.decide else f"  {verdict.alternative}")
    if verdict.line is not None:
        function = f" in {verdict.line.function}" if verdict.line.function else ""
        out.append(f"Line to change: {verdict.line.place}{function} — {verdict.line.figure_words}")
        if edit is not None:
            out += [f"  - {edit[0]}", f"  + {edit[1]}   ({edit[2]})"]
        elif verdict.source:
            out.append(f"  > {verdict.source}")
        if verdict.line.held_by:
            out.append(f"  {verdict.line.held_by}")
    if verdict.fix is not None:
        out += [f"First fix: {verdict.fix.action}", f"  why: {verdict.fix.reason}"] + _opens(analysis, verdict.fix, "  ")
    out.append(f"Memory {moment_words(analysis.accounting.moment, analysis.status)}: {verdict.memory}")
    if not verbose:
        out.append(f"Details below; `vramlens analyze {path} --verbose` adds the steps, the census and the call paths.")
    return out


def render_text(analysis: Analysis, path: str, top: int = TOP_LINES, verbose: bool = False,
                edit: tuple[str, str, str] | None = None) -> str:
    """``edit``: the storing line's safe edit (cli/store_diff.py), shown as a diff under the line to change."""
    acc, diagnosis = analysis.accounting, analysis.diagnosis
    moment = moment_words(acc.moment, analysis.status)
    out = _first_screen(analysis, path, verbose, edit)
    out += ["", "Why"] + [f"  - {fact}" for fact in diagnosis.evidence]
    fix = first_fix(analysis)
    rest = [rec for rec in analysis.recommendations if rec is not fix]
    if rest:
        out += ["", "Also to try"]
        for number, rec in enumerate(rest, 2):
            tag = " [experiment: measure it]" if rec.experiment else ""
            out += [f"  {number}. {rec.action}{tag}", f"     why: {rec.reason}"] + _opens(analysis, rec, "     ")
    out += storing_text(analysis)
    out += _accounting_text(accounting_view(analysis))
    if verbose:
        out += ["", f"Allocated over the trace ({analysis.timeline.entries} entries, peak {fmt(analysis.timeline.peak_allocated)}"
                f"{f', OOM at entry {analysis.timeline.oom_index}' if analysis.timeline.oom_index is not None else ''}):",
                f"  {sparkline([point.allocated for point in analysis.timeline.points])}"]
        if diagnosis.confirm is not None:
            out += ["", "To check by measurement" + (f" ({diagnosis.confirm.question})" if diagnosis.alternative else ""),
                    f"  {diagnosis.confirm.command}", f"  {diagnosis.confirm.expectation}"]
        out += _steps_text(analysis)
        out += _memory_views_text(analysis)
    out += _top_lines_text(analysis, top, moment, verbose)
    out += _notebook_text(analysis)
    out += [f"Note: {note}" for note in analysis.notes]
    # Every row is one line: a file name, a function or a message from the capture cannot break it
    # into more, nor carry a control sequence to the terminal.
    return "\n".join(map(one_line, out)) + "\n"


def _top_lines_text(analysis: Analysis, top: int, moment: str, verbose: bool) -> list[str]:
    shown = [line for line in analysis.lines if line.live_bytes > 0 or line.allocated_bytes > 0][:top]
    if not shown:
        return []
    views = line_views(analysis)
    out = ["", f"Top lines (live bytes {moment})"]
    for number, line in enumerate(shown, 1):
        view = views[id(line)]
        out.append(f"  {number}. {_line_title(line)}: {view.figure_words}; {view.blocks}")
        if view.held_by:
            out.append(f"     {view.held_by}")
        if line.local_path and line.local_path != line.path:
            out.append(f"     local file: {line.local_path}")
        if line.source:
            out.append(f"     > {line.source}")
        if verbose and view.path:
            out.append(f"     call path ({view.path_title}): {' → '.join(view.path)}")
    return out
