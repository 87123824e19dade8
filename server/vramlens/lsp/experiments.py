"""`vramlens.compareInterventions`: run `vramlens experiment` on the file from the editor.

Like diagnose: refused outside a trusted workspace, run in a worker thread with work-done progress
("Run 2/6: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (repeat 1/3)" and the live figures of
the run), and cancellable — the current run's process tree ends and what was measured is kept.
The table arrives as `experiment` in `vramlens/report`, over the baseline's first capture.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from pygls.uris import to_fs_path

from vramlens.analysis.experiments.variants import parse_variants
from vramlens.lsp.commands import capture_loaded, command_guard, experiment_summary, result
from vramlens.lsp.feature import Feature
from vramlens.lsp.loading import load_experiment
from vramlens.lsp.run_request import run_options
from vramlens.experiments.engine import EXPERIMENT_FILE, ExperimentPlan, default_output_dir, run_experiment
from vramlens.lsp.runs import RunProgress, phased_progress, run_on_file
from vramlens.lsp.server import VramLensServer  # at run time: pygls reads the commands' annotations

UNTRUSTED = ("Comparing interventions runs this file's code, which VRAM Lens does only in a trusted workspace; "
             "trust the workspace, then run it again.")
MAX_REPEATS = 20


def experiment_plan(request: dict, ls: VramLensServer) -> ExperimentPlan:
    """The plan from the request and the folder's settings; ValueError with one sentence when unusable."""
    uri = request["uri"]
    script = Path(to_fs_path(uri))
    _, folder_path = ls.folder_of(uri)
    folder = Path(folder_path) if folder_path else script.parent
    specs = request.get("variants")
    if not isinstance(specs, list) or not specs or not all(isinstance(spec, str) for spec in specs):
        raise ValueError("Give the variants to compare as `variants`, e.g. [\"expandable_segments:True\", "
                         "\"--batch-size=8,16\"].")
    variants = parse_variants(specs)
    settings = ls.settings_for(uri)
    repeats = request.get("repeats", settings.experiment_repeats)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"Repeats must be a whole number from 1 to {MAX_REPEATS}, not {repeats!r}.")
    options = run_options(request, settings, script, folder)
    return ExperimentPlan(script, list(options.args), variants, repeats, memory_limit=options.memory_limit_text,
                          run=options, output_dir=default_output_dir(script, folder))


async def _compare(ls: VramLensServer, request: dict, cancel: threading.Event, progress: RunProgress) -> dict:
    folder_uri, folder_path = ls.folder_of(request["uri"])
    try:
        plan = experiment_plan(request, ls)
    except ValueError as error:
        return result(False, str(error), folder=folder_uri)
    step = phased_progress(progress, plan.run, cancel)
    ls.log(f"Comparing {len(plan.variants)} variants of {plan.script} × {plan.repeats}; runs in {plan.output_dir}")
    data = await asyncio.to_thread(run_experiment, plan, step, cancel)
    progress.report("Loading the results")
    file = Path(data["output_dir"]) / EXPERIMENT_FILE
    loaded = await asyncio.to_thread(load_experiment, data, str(file), folder_uri, folder_path)
    capture_loaded(ls, loaded)
    stopped = f"{data['stopped']} " if data["stopped"] else ""
    return result(True, stopped + experiment_summary(data), loaded)


class CompareInterventions(Feature):
    def register(self, server: VramLensServer) -> None:
        server.command("vramlens.compareInterventions")(command_guard(compare_interventions))


async def compare_interventions(ls: VramLensServer, *arguments) -> dict:
    return await run_on_file(ls, arguments, "experiment on", "comparing interventions on", _compare, UNTRUSTED)
