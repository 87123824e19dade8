"""What a capture may make VRAM Lens show: no file outside the source root, no control sequence for
the terminal, no forged line, and, when redacted, no path, secret, host or address of the user's."""

import json
import pickle
import shutil
from pathlib import Path

import pytest

from vramlens.analysis.rendering.redact import hosts_of, redact, redact_counted
from vramlens.cli import main

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
SCENARIOS = ROOT / "scenarios"


def capture_with_frames(tmp_path: Path, rewrite) -> Path:
    """The real working_set capture with each user frame passed through ``rewrite(frame)``."""
    folder = tmp_path / "cap"
    shutil.copytree(CAPTURES / "working_set", folder)
    snapshot = pickle.loads((folder / "snapshot.pickle").read_bytes())
    for trace in snapshot["device_traces"]:
        for entry in trace:
            for frame in entry.get("frames") or ():
                if frame["filename"].endswith("scenarios/working_set.py"):
                    rewrite(frame)
    (folder / "snapshot.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
    return folder


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# -- no file outside the source root is read -------------------------------------------------------
@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.py"
    path.parent.mkdir()
    path.write_text("API_KEY = 'do-not-show-this'\n" * 50)
    return path


def raw_dump_with_frames(tmp_path: Path, rewrite) -> Path:
    """The real raw snapshot of a server (no capture.json, so no recorded root) with its user frames rewritten."""
    snapshot = pickle.loads((CAPTURES / "server_dump.pickle").read_bytes())
    for trace in snapshot["device_traces"]:
        for entry in trace:
            for frame in entry.get("frames") or ():
                if frame["filename"].startswith("/srv/app/"):
                    rewrite(frame)
    path = tmp_path / "dump.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    return path


@pytest.mark.parametrize("how", ["absolute path", "etc/passwd", "../ past the root", "link inside the root",
                                 "absolute path, with a root"])
def test_a_frame_naming_a_file_outside_the_root_shows_nothing_of_it(tmp_path, capsys, secret, how):
    root = tmp_path / "project"
    shutil.copytree(SCENARIOS, root)
    (root / "innocent.py").symlink_to(secret)
    target, options = {
        "absolute path": (str(secret), []), "etc/passwd": ("/etc/passwd", []),
        "../ past the root": ("../outside/secret.py", ["--source-root", root]),
        "link inside the root": (str(root / "innocent.py"), ["--source-root", root]),
        "absolute path, with a root": (str(secret), ["--source-root", root]),
    }[how]
    dump = raw_dump_with_frames(tmp_path, lambda frame: frame.update(filename=target, line=1))
    for command in (("analyze",), ("analyze", "--json"), ("report",), ("report", "--redact")):
        code, out, _ = run(capsys, *command, dump, "--total-memory", "141e9", *options)
        assert code == 0
        assert "do-not-show-this" not in out and "root:x:" not in out, (command, out[:2000])


def test_a_raw_snapshot_without_a_source_root_reads_no_file(tmp_path, capsys, secret):
    snapshot = pickle.loads((CAPTURES / "server_dump.pickle").read_bytes())
    for trace in snapshot["device_traces"]:
        for entry in trace:
            for frame in entry.get("frames") or ():
                if frame["filename"].startswith("/srv/app/"):
                    frame.update(filename=str(secret), line=1)
    path = tmp_path / "dump.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    code, out, _ = run(capsys, "analyze", path, "--total-memory", "141e9")
    assert code == 0 and "secret.py" in out and "do-not-show-this" not in out


def test_a_file_under_the_root_is_still_shown(tmp_path, capsys):
    code, out, _ = run(capsys, "analyze", CAPTURES / "working_set", "--source-root", SCENARIOS)
    assert code == 0 and "     > loss.backward()" in out


# -- nothing reaches the terminal as a control sequence or a line of its own -------------------------
def test_escape_sequences_and_newlines_in_frames_are_written_out(tmp_path, capsys):
    folder = capture_with_frames(tmp_path, lambda frame: frame.update(
        name="main\x1b[2J\x1b]0;owned\x07\nCause: fake (confidence 1.00, high)"))
    for command in (("analyze",), ("report",), ("report", "--redact")):
        code, out, err = run(capsys, *command, folder, "--source-root", SCENARIOS)
        assert code == 0
        assert "\x1b" not in out + err and "\x07" not in out + err
        assert not any(line.startswith(("Cause: fake", "- Cause: fake")) for line in out.splitlines())
        # Written out; in the report's Markdown its backslash and bracket are escaped too (markdown_safe.py).
        shown = out.replace("\\\\", "\\").replace("\\[", "[")
        assert "\\x1b[2J" in shown and "\\nCause: fake" in shown


def test_an_exception_message_with_control_characters_is_one_escaped_sentence(tmp_path, capsys):
    folder = tmp_path / "early"
    shutil.copytree(CAPTURES / "working_set", folder)
    meta = json.loads((folder / "capture.json").read_text())
    meta.update(snapshot=None, status="error", exception={
        "type": "ValueError\x1b[31m", "message": "bad\x1b[2J", "traceback": "Traceback\n  File \"x\x1b[2J.py\"\nValueError",
        "frames": [{"filename": "/x\x1b.py", "line": 1, "name": "f\nCause: fake"}]})
    (folder / "capture.json").write_text(json.dumps(meta))
    (folder / "snapshot.pickle").unlink()
    code, out, err = run(capsys, "analyze", folder)
    assert code == 2 and "\x1b" not in err
    assert err.splitlines()[0].startswith("vramlens: The script ended with ValueError\\x1b[31m")


def test_command_results_and_logs_of_the_language_server_carry_no_control_characters():
    from vramlens.lsp.commands import result

    message = result(False, "capture \x1b[2J\nCause: fake")["message"]
    assert message == "capture \\x1b[2J\\nCause: fake"


# -- redaction -------------------------------------------------------------------------------------
def test_text_between_two_paths_is_kept():
    assert redact("copied /data/a.txt to dst=/data/b.txt", ["/srv"]) == "copied <outside>/a.txt to dst=<outside>/b.txt"


def test_the_command_keeps_every_argument():
    command = "train.py --data /data/imagenet/train.bin --bs 64 --out /home/alice/runs/7 --lr 0.1"
    result = redact(command, ["/srv"])
    assert result == "train.py --data <outside>/train.bin --bs 64 --out ~/runs/7 --lr 0.1" or \
           result == "train.py --data <outside>/train.bin --bs 64 --out <outside>/7 --lr 0.1"
    assert "alice" not in result and "imagenet" not in result


def test_relative_paths_climbing_out_keep_nothing_of_the_path_inside_them():
    result = redact('open("../../home/alice/private/keys.py")', ["/srv"])
    assert "alice" not in result and "home" not in result and "private" not in result
    assert "<outside>/keys.py" in result


@pytest.mark.parametrize("text, secret", [
    ("python train.py --token=abc123def456", "abc123def456"),
    ("python train.py --hf-token abc123def456", "abc123def456"),
    ("python train.py --api_key=K3y-V4lue", "K3y-V4lue"),
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 python train.py", "hf_abcdefghijklmnopqrstuvwxyz0123"),
    ("fetching https://example.com/data?key=s3cr3tvalue&page=2", "s3cr3tvalue"),
    ("https://bob:hunter2@registry.example.com/models", "hunter2"),
    ("Authorization: Bearer eyJhbGciOi.payload0123.signature99", "eyJhbGciOi.payload0123.signature99"),
    ("using key sk-proj-abcdefghijklmnopqrstuvwxyz", "sk-proj-abcdefghijklmnopqrstuvwxyz"),
    ("aws AKIAIOSFODNN7EXAMPLE in the logs", "AKIAIOSFODNN7EXAMPLE"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("WANDB_API_KEY=0123456789abcdef0123", "0123456789abcdef0123"),
])
def test_secrets_in_arguments_urls_and_messages_are_redacted_and_counted(text, secret):
    redaction = redact_counted(text, ["/srv"])
    assert secret not in redaction.text and "<secret>" in redaction.text
    assert redaction.counts.get("secret", 0) >= 1
    assert "secret" in redaction.summary()


def test_hosts_and_ip_addresses_are_redacted_and_counted():
    meta = {"distributed": {"hostname": "gpu-node-3", "master_addr": "10.0.0.1"}}
    text = ("rank 0 of 2 (host gpu-node-3, backend nccl) rendezvous 10.0.0.1:29500 via gpu-node-3.cluster.internal; "
            "peer fe80::1ff:fe23:4567:890a; see http://build.corp/job/7")
    redaction = redact_counted(text, ["/srv"], hosts_of(meta))
    for gone in ("gpu-node-3", "10.0.0.1", "fe80::1ff", "build.corp"):
        assert gone not in redaction.text
    assert redaction.counts["host"] >= 3 and redaction.counts["ip"] >= 2
    assert "29500" in redaction.text  # the port says nothing of the user


def test_what_is_not_personal_is_left_alone():
    text = ("see https://docs.pytorch.org/docs/stable/notes/cuda.html; 3/4 of the memory; driver 580.159.04, "
            "torch 2.11.0+cu130, at 10:06:50, sizes 384.00 MiB, key sizes of the cache, the token count")
    assert redact(text, ["/srv"]) == text


def test_the_redacted_report_says_what_was_redacted(tmp_path, capsys):
    folder = tmp_path / "cap"
    shutil.copytree(CAPTURES / "working_set", folder)
    meta = json.loads((folder / "capture.json").read_text())
    meta["argv"] = ["working_set.py", "--token=abc123def456", "--data", "/data/set/x.bin"]
    meta["distributed"] = {"rank": 0, "world_size": 1, "local_rank": 0, "node_rank": 0, "hostname": "gpu-node-3",
                           "master_addr": "10.1.2.3", "master_port": 29500}
    (folder / "capture.json").write_text(json.dumps(meta))
    code, out, err = run(capsys, "report", folder, "--redact")
    assert code == 0
    for gone in ("abc123def456", "gpu-node-3", "/data/set", "/work/main"):
        assert gone not in out
    assert "| Command | working_set.py --token=<secret> --data <outside>/x.bin |" in out
    assert "host <host>" in out
    summary = out.rstrip().splitlines()[-1]
    assert summary.startswith("> Redacted: ") and " secret" in summary and "1 host name" in summary
    assert "Redacted: " in err


@pytest.mark.parametrize("claimed", ["/", "home"])
def test_a_capture_claiming_the_whole_disk_or_the_home_folder_as_its_root_reads_nothing(tmp_path, capsys, claimed,
                                                                                         monkeypatch):
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    (home / "work" / "settings.py").write_text("PASSWORD = 'do-not-show-this'\n")
    monkeypatch.setenv("HOME", str(home))
    folder = capture_with_frames(tmp_path, lambda frame: frame.update(filename=str(home / "work" / "settings.py"), line=1))
    meta = json.loads((folder / "capture.json").read_text())
    meta["source_root"] = "/" if claimed == "/" else str(home)
    (folder / "capture.json").write_text(json.dumps(meta))
    code, out, _ = run(capsys, "analyze", folder)
    assert code == 0 and "do-not-show-this" not in out
