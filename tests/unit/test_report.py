"""`vramlens report`: the Markdown facts, the timeline SVG beside it, and redaction."""

import json
import pickle
import xml.etree.ElementTree as ET
from pathlib import Path

from test_analysis_builder import MIB, SnapshotBuilder, frame

from vramlens.analysis.load.interventions import read_interventions
from vramlens.analysis.rendering.redact import redact
from vramlens.analysis.load.run_settings import run_settings
from vramlens.cli import main

RETAINED = Path(__file__).resolve().parents[1] / "fixtures" / "captures" / "retained_references"
HOME = "/home/alice"
ROOT = f"{HOME}/proj"
SITE = f"{HOME}/.venv/lib/python3.12/site-packages"


def write_capture(folder, argv=None, interventions=None):
    stack = [frame(f"{SITE}/torch/nn/modules/linear.py", 125, "forward"), frame(f"{ROOT}/train.py", 42, "step")]
    builder = SnapshotBuilder().segment(0, 1024 * MIB)
    builder.alloc(0, 600 * MIB, stack).oom(512 * MIB, 70 * 1024 * MIB)
    folder.mkdir()
    with open(folder / "snapshot.pickle", "wb") as handle:
        pickle.dump(builder.snapshot(), handle, protocol=4)
    traceback = (f'Traceback (most recent call last):\n  File "{ROOT}/train.py", line 42, in step\n'
                 f'  File "{SITE}/torch/nn/modules/linear.py", line 125, in forward\n'
                 f'  File "/opt/alice-tools/helpers.py", line 3, in wrap\n'
                 "torch.OutOfMemoryError: CUDA out of memory (user alice).\n")
    meta = {
        "format": "vramlens-capture", "version": 1, "snapshot": "snapshot.pickle", "status": "oom", "exit_code": 1,
        "script": f"{ROOT}/train.py", "argv": argv or ["train.py"], "cwd": ROOT, "source_root": ROOT,
        "memory_limit": {"bytes": 1024 * MIB, "fraction": 0.0125, "requested": "1GiB"},
        "environment": {"gpu_name": "NVIDIA H200", "total_memory": 80 * 1024**3, "torch": "2.11.0+cu130",
                        "allocator_backend": "native", "driver": "580.1", "cuda": "13.0"},
        "exception": {"type": "torch.OutOfMemoryError", "message": "CUDA out of memory.", "traceback": traceback},
        "oom": {"requested": 512 * MIB, "device_limit": 1024 * MIB, "device_free": 70 * 1024 * MIB, "count": 1},
        "interventions": interventions or [],
    }
    (folder / "capture.json").write_text(json.dumps(meta))
    return folder


def test_report_has_setup_failure_diagnosis_and_a_linked_plot(tmp_path, capsys):
    capture = write_capture(tmp_path / "cap", argv=["train.py", "--bs", "64", "--seq-len=2048", "--bf16"],
                            interventions=[{"setting": "PYTORCH_ALLOC_CONF=expandable_segments:True",
                                            "verdict": "did not prevent the OOM", "capture": "cap--trial",
                                            "baseline": {"status": "oom", "oom": True, "peak_reserved": 1000 * MIB},
                                            "result": {"status": "oom", "oom": True, "peak_reserved": 1010 * MIB}}])
    out = tmp_path / "out" / "report.md"
    assert main(["report", str(capture), "-o", str(out)]) == 0
    text = out.read_text()
    for fact in ("NVIDIA H200, 80.00 GiB", "2.11.0+cu130", "native backend", "| Batch size | 64 |",
                 "| Input length | 2048 |", "| Precision | bf16 |", "a request of 512.00 MiB failed",
                 "torch.OutOfMemoryError", "**The live working set is too large** (`working_set`; confidence", "| `PYTORCH_ALLOC_CONF=expandable_segments:True` | did not prevent the OOM | oom, peak reserved 1000.00 MiB | "
                 "oom, peak reserved 1010.00 MiB |", "Do not rely on PYTORCH_ALLOC_CONF=expandable_segments:True",
                 "![allocated and reserved over the recorded history](report-timeline.svg)", "`train.py:42` step"):
        assert fact in text, fact
    # Named as the analysis names them, not by the recording machine's folders: under the source root
    # relative to it, a library's file from its package, any other path as recorded.
    assert f"{ROOT}/" not in text and SITE not in text
    for frame_line in ('File "train.py", line 42', 'File "torch/nn/modules/linear.py", line 125',
                       'File "/opt/alice-tools/helpers.py", line 3'):
        assert frame_line in text, frame_line
    assert "| non-PyTorch (driver used − reserved) |" in text  # its remark names driver reservations (test_analysis_ending)
    svg = ET.parse(out.with_name("report-timeline.svg")).getroot()
    texts = [element.text or "" for element in svg.iter()]
    assert any("limit 1.00 GiB" in t for t in texts) and "OOM" in texts
    assert len(svg.findall("{http://www.w3.org/2000/svg}polyline")) == 2


def test_a_recorded_capture_s_report_names_no_folder_of_the_machine_it_was_recorded_on(capsys):
    meta = json.loads((RETAINED / "capture.json").read_text())
    assert meta["exception"]["traceback"].count(meta["cwd"] + "/") == 2  # the traceback as recorded: absolute
    assert main(["report", str(RETAINED)]) == 0
    text = capsys.readouterr().out
    for folder in (meta["cwd"], meta["source_root"]):
        assert f"{folder}/" not in text, folder
    assert "site-packages" not in text
    # The traceback as the command ran (from its working directory), its library frames from their package.
    assert 'File "scenarios/retained_references.py", line 26, in <module>' in text
    assert 'File "torch/nn/modules/module.py", line 1779, in _wrapped_call_impl' in text
    # The lines the analysis names, as its evidence names them: relative to the source root.
    assert "- `retained_references.py:21`: `outputs.append(out)" in text
    assert "| `retained_references.py:20` evaluate |" in text
    assert "loop at `retained_references.py:19 evaluate`" in text


def test_unknown_run_settings_are_said_to_be_unknown_never_guessed(tmp_path, capsys):
    assert main(["report", str(write_capture(tmp_path / "cap"))]) == 0
    text = capsys.readouterr().out
    assert "| Batch size | unknown" in text and "| Precision | unknown" in text
    assert "None recorded" in text


def test_run_settings_from_argv():
    assert run_settings(["t.py", "--batch-size=8", "--dtype", "float16", "--max-length", "512"]) == {
        "batch_size": "8", "precision": "float16", "input_length": "512"}
    assert run_settings(["t.py", "--amp"])["precision"] == "amp (autocast)"
    assert run_settings(None) == {"batch_size": None, "input_length": None, "precision": None}


def test_redacted_report_hides_home_user_and_outside_paths(tmp_path, capsys):
    assert main(["report", str(write_capture(tmp_path / "cap")), "--redact"]) == 0
    text = capsys.readouterr().out
    assert "alice" not in text and "/home/" not in text
    assert "`train.py:42` step" in text and 'File "train.py", line 42' in text  # relative to the root
    assert 'File "torch/nn/modules/linear.py", line 125' in text
    assert 'File "<outside>/helpers.py", line 3' in text


def test_redact_leaves_urls_and_numbers_alone():
    text = "see https://docs.pytorch.org/docs/stable/notes/cuda.html and 3/4 of /opt/x/y.py"
    result = redact(text, ["/srv"])
    assert "https://docs.pytorch.org/docs/stable/notes/cuda.html" in result and "3/4" in result
    assert "<outside>/y.py" in result


def test_report_errors_are_one_sentence(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "Nothing at" in capsys.readouterr().err


def test_raw_pickle_keeps_its_own_code_folder_when_redacting(tmp_path, capsys):
    stack = [frame("/home/bob/srv/app/serve.py", 9, "handle"), frame("/home/bob/srv/app/main.py", 3, "<module>")]
    builder = SnapshotBuilder().segment(0, 64 * MIB).alloc(0, 8 * MIB, stack)
    path = tmp_path / "dump.pickle"
    path.write_bytes(pickle.dumps(builder.snapshot(), protocol=4))
    assert main(["report", str(path), "--redact"]) == 0
    text = capsys.readouterr().out
    assert "`serve.py:9` handle" in text and "bob" not in text


def test_interventions_are_read_from_either_layout():
    flat = read_interventions({"interventions": [{"setting": "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256",
                                                  "status": "completed", "peak_reserved": 2 * 1024 * MIB}]})
    assert flat[0].prevented_oom is True and "prevented the OOM (peak reserved 2.00 GiB)" in flat[0].summary()
    nested = read_interventions({"interventions": [{"setting": "X=1", "verdict": "did not prevent the OOM",
                                                    "result": {"oom": True}}]})
    assert nested[0].prevented_oom is False


def test_redact_windows_home_and_user():
    result = redact(r"File C:\Users\carol\proj\x.py failed for carol", ["/srv"])
    assert "carol" not in result and "proj" not in result and "<outside>/x.py" in result  # a path outside: its name only


def test_redact_paths_with_spaces_in_tracebacks_and_prose():
    traceback = ('Traceback (most recent call last):\n'
                 '  File "/home/a/My Project/x.py", line 3, in <module>\n'
                 '  File "/home/a/other stuff/helper file.py", line 9, in f\n'
                 '  File "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", line 125, in forward\n')
    result = redact(traceback + "local file: /home/a/My Project/sub dir/y.py:12 in step.\n", ["/home/a/My Project"])
    assert 'File "<root>/x.py", line 3' in result
    assert 'File "<outside>/helper file.py", line 9' in result
    assert 'File "<site-packages>/torch/nn/modules/linear.py", line 125' in result
    assert "local file: <root>/sub dir/y.py:12 in step." in result
    assert "My Project" not in result and "/home/" not in result


def test_redact_root_itself_and_the_longest_root_wins():
    result = redact("root /w/proj, file /w/proj/pkg/m.py, local /w/proj/pkg/src/n.py", ["/w/proj", "/w/proj/pkg/src"])
    assert result == "root <root>, file <root>/pkg/m.py, local <root>/n.py"
