"""A bounded fuzz, the same every run (fixed seeds, fixed counts; well under a minute): mutations of the
REAL fixture pickles and capture.json files, and random Python source, through the loader, the
capture-folder reader, the analysis and lint.

Every outcome must be a result or a CaptureError (one sentence, said by the boundary, not by the
analysis' last net), never another exception, within a bounded time per input. A failure names the
seed and the input so it can be replayed alone.
"""

import copy
import json
import os
import pickle
import random
import shutil
import time
from pathlib import Path

import pytest

from vramlens.analysis import to_json
from vramlens.analysis.pipeline import analyze_capture
from vramlens.analysis.rendering.redact import redact
from vramlens.analysis.rendering.report import build_report
from vramlens.capture import CaptureError, load_capture
from vramlens.analysis.rendering.analysis_text import render_text
from vramlens.lint import fix_source, lint_bytes, lint_source

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
PICKLES = sorted(CAPTURES.glob("*/snapshot.pickle")) + [CAPTURES / "server_dump.pickle"]
FOLDERS = sorted(path.parent for path in CAPTURES.glob("*/capture.json"))
LINT_SOURCES = sorted((ROOT / "tests" / "lint" / "corpus").rglob("*.py"))[:40]
LAST_NET = "layout is not one this version understands"
PER_INPUT_S = 10.0  # far above any real input here (milliseconds); a hang or a blow-up exceeds it
SEED = int(os.environ.get("VRAMLENS_FUZZ_SEED", "16"))  # CI runs seed 16; another seed explores further


def outcome(load, where: str) -> str:
    """Load and analyse; 'result' or 'refused'. Anything else fails the test, naming the input."""
    started = time.monotonic()
    try:
        capture = load()
        analysis = analyze_capture(capture)
        text = render_text(analysis, "fuzz") + build_report(analysis, capture.meta, None, "fuzz")
        json.dumps(to_json(analysis))
        redact(text, [analysis.user_root])
        kind = "result"
    except CaptureError as error:
        assert LAST_NET not in str(error), f"{where}: only the last net caught it: {error}"
        assert str(error) and "\n" not in str(error).strip(), f"{where}: not one sentence: {error!r}"
        kind = "refused"
    except Exception as error:  # noqa: BLE001 - the point of the test
        raise AssertionError(f"{where}: {type(error).__name__}: {error}") from error
    assert time.monotonic() - started < PER_INPUT_S, f"{where}: took {time.monotonic() - started:.1f} s"
    return kind


# -- byte mutations of the real pickles --------------------------------------------------------------
def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        at = rng.randrange(2, len(data)) if len(data) > 2 else 0
        if kind == 0:
            data[at] = rng.randrange(256)
        elif kind == 1:
            del data[at:at + rng.randint(1, 64)]
        elif kind == 2:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif kind == 3:
            del data[at:]
        elif kind == 4:  # a length or an int made huge
            data[at:at + 8] = rng.choice([b"\xff" * 8, b"\x7f" * 8, b"\x00\x00\x00\x80" * 2])
        else:  # a stretch of the file repeated elsewhere
            start = rng.randrange(len(data))
            data[at:at] = data[start:start + rng.randint(1, 256)]
    return bytes(data)


@pytest.mark.parametrize("pickle_path", PICKLES, ids=lambda path: path.parent.name if path.name == "snapshot.pickle" else path.stem)
def test_byte_mutations_of_real_snapshots(tmp_path, pickle_path):
    rng = random.Random(f"{SEED}:{pickle_path.parent.name}/{pickle_path.name}")
    original = pickle_path.read_bytes()
    kinds = []
    for number in range(60):
        path = tmp_path / f"m{number}.pickle"
        path.write_bytes(mutate_bytes(original, rng))
        kinds.append(outcome(lambda: load_capture(path), f"{pickle_path} byte mutation {number}"))
    assert "refused" in kinds  # the mutations did reach the error paths


# -- shape mutations: the pickle parses, the objects are wrong ---------------------------------------
STRANGE_VALUES = [None, True, -1, 0, 2**64, 2**200, 10**400, -2**70, 1e308, float("nan"), float("inf"), "", "x" * 1000,
                  "\x1b[2J\n", [], {}, [1, "a", None], {"a": {"b": {"c": []}}}, (1, 2), b"bytes", frozenset({1})]


def containers(value, path=()):
    """(path, container) for every dict and list inside ``value``, shared ones once."""
    seen, stack = set(), [(path, value)]
    while stack:
        where, item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            yield where, item
            stack.extend((where + (key,), child) for key, child in item.items() if isinstance(child, (dict, list)))
        elif isinstance(item, list):
            yield where, item
            stack.extend((where + (index,), child) for index, child in enumerate(item) if isinstance(child, (dict, list)))


def mutate_objects(value, rng: random.Random, count: int):
    value = copy.deepcopy(value)
    places = list(containers(value))
    for _ in range(count):
        where, container = rng.choice(places)
        if not container:
            continue
        if isinstance(container, dict):
            key = rng.choice(list(container))
            action = rng.randrange(4)
            if action == 0:
                del container[key]
            elif action == 1:
                container[key] = copy.copy(rng.choice(STRANGE_VALUES))
            elif action == 2:
                container[rng.choice(["action", "size", "addr", "frames", "blocks", "state", "time_us", "new_key"])] = \
                    copy.copy(rng.choice(STRANGE_VALUES))
            else:  # an object shared where it was not
                container[key] = rng.choice(places)[1]
        else:
            index = rng.randrange(len(container))
            if rng.random() < 0.5:
                container[index] = copy.copy(rng.choice(STRANGE_VALUES))
            else:
                container.insert(index, rng.choice(places)[1])
    return value


@pytest.mark.parametrize("pickle_path", PICKLES[:6], ids=lambda path: path.parent.name)
def test_shape_mutations_of_real_snapshots(tmp_path, pickle_path):
    rng = random.Random(f"{SEED}:shape:{pickle_path.parent.name}")
    original = pickle.loads(pickle_path.read_bytes())
    kinds = []
    for number in range(80):
        path = tmp_path / f"s{number}.pickle"
        path.write_bytes(pickle.dumps(mutate_objects(original, rng, rng.randint(1, 6)), protocol=4))
        kinds.append(outcome(lambda: load_capture(path), f"{pickle_path} shape mutation {number}"))
    assert "refused" in kinds  # the mutations did reach the shape's checks


# -- capture.json mutations, through the capture-folder reader ---------------------------------------
@pytest.mark.parametrize("folder", FOLDERS[:6], ids=lambda path: path.name)
def test_mutations_of_real_capture_json(tmp_path, folder):
    rng = random.Random(f"{SEED}:meta:{folder.name}")
    meta = json.loads((folder / "capture.json").read_text())
    target = tmp_path / "cap"
    shutil.copytree(folder, target)
    kinds = []
    for number in range(60):
        if number % 4 == 3:  # bytes, not values: broken JSON
            text = mutate_bytes(json.dumps(meta).encode(), rng).decode("utf-8", errors="replace")
        else:
            mutated = mutate_objects(meta, rng, rng.randint(1, 5))
            mutated["format"] = "vramlens-capture"
            try:
                text = json.dumps(mutated)
            except (TypeError, ValueError):  # a value JSON cannot hold (bytes, a cycle): skip it
                continue
        (target / "capture.json").write_text(text)
        kinds.append(outcome(lambda: load_capture(target), f"{folder.name} capture.json mutation {number}"))
    assert "result" in kinds


def test_mutations_of_a_ranks_folder(tmp_path):
    from vramlens.analysis.ranks.analyze import analyze_ranks

    rng = random.Random(f"{SEED}:ranks")
    source = ROOT / "tests" / "fixtures" / "ranks" / "one_gpu_gloo" / "ddp_uneven"
    for number in range(12):
        job = tmp_path / f"job{number}"
        shutil.copytree(source, job)
        meta_path = job / f"rank-{rng.randrange(2)}" / "capture.json"
        meta = json.loads(meta_path.read_text())
        mutated = mutate_objects(meta, rng, 3)
        mutated["format"] = "vramlens-capture"
        try:
            meta_path.write_text(json.dumps(mutated))
        except (TypeError, ValueError):
            continue
        started = time.monotonic()
        try:
            comparison = analyze_ranks(job)
            json.dumps([summary.rank for summary in comparison.ranks])
        except CaptureError:
            pass
        except Exception as error:  # noqa: BLE001
            raise AssertionError(f"ranks mutation {number}: {type(error).__name__}: {error}") from error
        assert time.monotonic() - started < PER_INPUT_S


# -- lint: random Python source and mutated real files -----------------------------------------------
TOKENS = ["for", "x", "in", "loader", ":", "\n", "    ", "loss", "=", "model", "(", ")", ".", "backward", "append",
          "total", "+=", "with", "torch", "no_grad", "def", "class", "return", "if", "else", "try", "except", "lambda",
          "[", "]", "{", "}", ",", "'s'", "0", "1.5", "#", "\\", "\t", "@", "async", "await", "yield", "*", "**",
          "\x00", "\ufeff", "é", "\r", "\"\"\"", "import", "from", "as", "del", "global", "nonlocal", ";"]


def test_lint_on_random_and_mutated_python(tmp_path):
    rng = random.Random(f"{SEED}:lint")
    sources = [path.read_bytes() for path in LINT_SOURCES]
    for number in range(300):
        if number % 2:
            data = "".join(rng.choice(TOKENS) + rng.choice(["", " "]) for _ in range(rng.randint(1, 400))).encode("utf-8", "replace")
        else:
            data = mutate_bytes(rng.choice(sources), rng)
        started = time.monotonic()
        try:
            findings = lint_bytes(data, f"fuzz{number}.py")
            assert all(finding.message for finding in findings)
            text = data.decode("utf-8", errors="replace")
            fix_source(text)
            lint_source(text)
        except Exception as error:  # noqa: BLE001
            (tmp_path / f"fuzz{number}.py").write_bytes(data)
            raise AssertionError(f"lint input {number} (kept in {tmp_path}): {type(error).__name__}: {error}") from error
        assert time.monotonic() - started < PER_INPUT_S
