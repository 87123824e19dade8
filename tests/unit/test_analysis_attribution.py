"""Attribution: which line gets the bytes, growth, call paths, sizes, the frameless group, path mapping."""

from test_analysis_builder import MIB, ROOT, SITE, SnapshotBuilder, frame, user_stack

from vramlens.analysis import analyze_capture
from vramlens.analysis.model import NO_FRAME_FUNCTION
from vramlens.analysis.load.sources import LIBRARY, NATIVE, USER, SourceResolver, frame_kind
from vramlens.capture import Capture


def analyze(snapshot, meta=None, **options):
    return analyze_capture(Capture(snapshot, meta or {}, None), **options)


def test_innermost_user_frame_is_blamed_not_torch():
    builder = SnapshotBuilder().segment(0, 64 * MIB).alloc(0, 8 * MIB, user_stack(42))
    [line] = analyze(builder.snapshot()).lines
    assert (line.path, line.line, line.function) == (f"{ROOT}/train.py", 42, "step")
    assert line.call_path == ["train.py:42 step", "torch/nn/modules/module.py:1762 _call_impl",
                              "torch/nn/modules/linear.py:125 forward"]


def test_frames_outside_the_recorded_source_root_are_not_user_code():
    stack = [frame("/home/me/lib/helpers.py", 3, "make"), frame(f"{ROOT}/train.py", 12, "main")]
    builder = SnapshotBuilder().segment(0, 64 * MIB).alloc(0, 8 * MIB, stack)
    [line] = analyze(builder.snapshot(), meta={"source_root": ROOT}).lines
    assert (line.path, line.line) == (f"{ROOT}/train.py", 12)


def test_allocations_without_python_frames_form_their_own_group():
    cpp_only = [frame("??", 0, "at::native::empty_cuda"), frame("/pytorch/torch/csrc/autograd/engine.cpp", 0, "evaluate_function")]
    builder = SnapshotBuilder().segment(0, 64 * MIB)
    builder.alloc(0, 24 * MIB, cpp_only).alloc(24 * MIB, 8 * MIB, user_stack(42)).alloc(32 * MIB, 4 * MIB, [])
    lines = analyze(builder.snapshot()).lines
    assert lines[0].path is None and lines[0].function == NO_FRAME_FUNCTION
    assert lines[0].live_bytes == 28 * MIB and lines[0].count == 2
    assert lines[1].line == 42


def test_share_count_total_and_histogram():
    builder = SnapshotBuilder().segment(0, 256 * MIB)
    for i in range(3):
        builder.alloc(i * 8 * MIB, 8 * MIB, user_stack(42))
    builder.free(0).alloc(100 * MIB, 2 * MIB, user_stack(42))
    builder.alloc(128 * MIB, 16 * MIB, user_stack(50))
    lines = analyze(builder.snapshot()).lines
    by_line = {line.line: line for line in lines}
    assert by_line[42].count == 4 and by_line[42].allocated_bytes == 26 * MIB
    assert by_line[42].size_histogram[0] == (8 * MIB, 3)
    assert abs(sum(line.share for line in lines) - 1.0) < 1e-9
    assert lines == sorted(lines, key=lambda line: -line.live_bytes)


def leaky_loop(iterations: int = 40) -> SnapshotBuilder:
    builder = SnapshotBuilder().segment(0, 4096 * MIB)
    addr = 0
    for _ in range(iterations):
        builder.alloc(2048 * MIB, 64 * MIB, user_stack(20))  # temporary, freed every iteration
        builder.alloc(addr, 8 * MIB, user_stack(21))  # kept forever
        addr += 8 * MIB
        builder.free(2048 * MIB)
    return builder


def test_growth_is_detected_for_the_line_whose_memory_is_kept():
    by_line = {line.line: line for line in analyze(leaky_loop().snapshot()).lines}
    assert by_line[21].growing and by_line[21].growth_bytes > 100 * MIB
    assert not by_line[20].growing


def test_frame_kinds():
    assert frame_kind("??", None) == NATIVE
    assert frame_kind("<frozen runpy>", None) == NATIVE
    assert frame_kind(f"{SITE}/torch/nn/functional.py", None) == LIBRARY
    assert frame_kind("/usr/lib/python3.12/runpy.py", None) == LIBRARY
    assert frame_kind("/srv/app/train.py", None) == USER
    assert frame_kind("/srv/app/.venv/lib/python3.12/site-packages/x.py", "/srv/app") == LIBRARY
    assert frame_kind("/elsewhere/train.py", "/srv/app") == LIBRARY


def test_suffix_mapping_prefers_the_longest_existing_suffix(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "train.py").write_text("a = 1\nb = torch.empty(10)\n")
    (tmp_path / "train.py").write_text("wrong = 1\n")
    resolver = SourceResolver(None, str(tmp_path))
    assert resolver.local_path("/srv/app/model/train.py") == str(tmp_path / "model" / "train.py")
    assert resolver.source_line("/srv/app/model/train.py", 2) == "b = torch.empty(10)"
    assert resolver.local_path("/srv/app/nothing.py") is None


def test_raw_pickle_with_source_root_blames_only_files_that_map_under_it(tmp_path):
    (tmp_path / "serve.py").write_text("x = 1\n")
    stack = [frame("/srv/app/vendor/helper.py", 5, "pad"), frame("/srv/app/serve.py", 1, "handle")]
    builder = SnapshotBuilder().segment(0, 64 * MIB).alloc(0, 8 * MIB, stack)
    [mapped] = analyze(builder.snapshot(), source_root=str(tmp_path)).lines
    assert (mapped.path, mapped.line, mapped.source) == ("/srv/app/serve.py", 1, "x = 1")
    [heuristic] = analyze(builder.snapshot()).lines  # no root: any file outside torch/site-packages is the user's
    assert heuristic.path == "/srv/app/vendor/helper.py"
    [unmapped] = analyze(builder.snapshot(), source_root=str(tmp_path / "elsewhere")).lines  # nothing maps: heuristic
    assert unmapped.path == "/srv/app/vendor/helper.py"
