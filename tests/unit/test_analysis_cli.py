"""`vramlens analyze`: text and --json output, options, and one-sentence errors with exit code 2."""

import json
import pickle
import subprocess
import sys

from test_analysis_builder import MIB, SnapshotBuilder, frame
from test_analysis_diagnosis import checkerboard

from vramlens.units import format_bytes, parse_size
from vramlens.cli import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "vramlens", *args], capture_output=True, text=True)


def write_pickle(path, snapshot):
    with open(path, "wb") as handle:
        pickle.dump(snapshot, handle, protocol=4)
    return str(path)


def test_sizes_parse_and_format_in_binary_units():
    assert parse_size("24GiB") == 24 * 1024**3
    assert parse_size("141e9") == 141_000_000_000
    assert parse_size("1048576") == 1048576
    assert parse_size("8 GB") == 8_000_000_000
    assert format_bytes(1536 * MIB) == "1.50 GiB"
    assert format_bytes(None) == "unknown"


def test_raw_pickle_with_total_memory_and_source_root(tmp_path, capsys):
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "app" / "serve.py").write_text("\n" * 26 + "        cache[i] = torch.empty(24 * MiB)\n")
    stack = [frame("/srv/app/serve.py", 27, "serve"), frame("/srv/app/serve.py", 40, "<module>")]
    builder = checkerboard()
    for entry in builder.trace:
        if entry["action"] == "alloc":
            entry["frames"] = stack
    path = write_pickle(tmp_path / "dump.pickle", builder.snapshot())
    assert main(["analyze", path, "--total-memory", "1600MiB", "--source-root", str(tmp_path / "src")]) == 0
    text = capsys.readouterr().out
    assert "Cause: the reserved memory is fragmented (fragmentation;" in text
    assert "cache[i] = torch.empty(24 * MiB)" in text  # source text read through the suffix mapping
    assert "largest free block 24.00 MiB" in text
    assert "1.56 GiB" in text  # the --total-memory limit
    assert main(["analyze", path, "--json", "--total-memory", "1600MiB"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["memory"]["limit"] == 1600 * MIB and data["lines"][0]["line"] == 27


def test_user_errors_are_one_sentence_and_exit_2(tmp_path):
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(b"not a pickle")
    empty = write_pickle(tmp_path / "empty.pickle", {"segments": [], "device_traces": [[]]})
    for args in (["analyze", str(tmp_path / "missing.pickle")], ["analyze", str(bad)], ["analyze", empty],
                 ["analyze", empty, "--total-memory", "lots"]):
        result = run_cli(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_capture_without_cuda_is_a_clear_error(tmp_path):
    (tmp_path / "capture.json").write_text(json.dumps({"format": "vramlens-capture", "version": 1, "snapshot": None,
                                                       "status": "no_cuda"}))
    result = run_cli("analyze", str(tmp_path))
    assert result.returncode == 2 and "never used CUDA" in result.stderr


def test_truncated_pickle_is_a_clear_error(tmp_path):
    data = pickle.dumps(SnapshotBuilder().segment(0, MIB).snapshot(), protocol=4)
    path = tmp_path / "cut.pickle"
    path.write_bytes(data[: len(data) // 2])
    result = run_cli("analyze", str(path))
    assert result.returncode == 2 and "truncated or damaged" in result.stderr


def test_snapshot_of_an_unknown_shape_is_a_clear_error(tmp_path):
    weird = write_pickle(tmp_path / "weird.pickle", {"segments": [], "device_traces": [[{"action": "alloc"}]]})
    result = run_cli("analyze", weird)
    assert result.returncode == 2 and "weird.pickle is damaged: entry 0 of the trace of device 0 (alloc) has no address" in result.stderr
    assert "Traceback" not in result.stderr


def test_total_memory_below_the_drivers_free_count_never_gives_negative_usage(tmp_path, capsys):
    path = write_pickle(tmp_path / "dump.pickle", checkerboard().snapshot())  # the driver said 70 GiB free
    assert main(["analyze", path, "--json", "--total-memory", "1600MiB"]) == 0
    memory = json.loads(capsys.readouterr().out)["memory"]
    assert memory["driver_used"] is None and memory["non_pytorch"] is None


def test_every_json_field_is_documented():
    from pathlib import Path

    from test_analysis_diagnosis import analyze, capped_meta

    from vramlens.analysis import to_json

    doc = (Path(__file__).resolve().parents[2] / "docs" / "analysis-json.md").read_text(encoding="utf-8")
    data = to_json(analyze(checkerboard().snapshot(), capped_meta(1600 * MIB, 96 * MIB)))
    fields = set(data) | set(data["memory"]) | set(data["oom"]) | set(data["lines"][0]) | set(data["timeline"])
    fields |= set(data["timeline"]["points"][0]) | set(data["recommendations"][0]) | set(data["environment"])
    missing = sorted(name for name in fields if f'"{name}"' not in doc)
    assert not missing, f"undocumented JSON fields: {missing}"


def test_sparkline_scales_to_the_highest_value():
    from vramlens.analysis.rendering.analysis_text import sparkline

    assert sparkline([0, 50, 100]) == "▁▄█"
    assert len(sparkline(list(range(1000)), width=60)) <= 60
    assert sparkline([]) == ""
