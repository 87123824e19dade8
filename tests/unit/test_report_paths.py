"""The report's recorded paths: under a root relative to it (the working directory first), a traceback's
frame outside every root by its package, anything else as recorded."""

from vramlens.analysis.load.sources import place_of, short_path
from vramlens.analysis.rendering.report_paths import ReportRoots, relative_text, relative_traceback

ROOTS = ReportRoots(working="/w/proj", code=("/w/proj/src",))


def test_text_paths_are_relative_to_the_working_directory_first():
    text = "python /w/proj/src/train.py --data=/w/proj/data/x.bin, log /w/project/run.log, cwd /w/proj"
    assert relative_text(text, ROOTS) == "python src/train.py --data=data/x.bin, log /w/project/run.log, cwd /w/proj"
    assert relative_text("/w/proj/src/a.py", ReportRoots(None, ("/w/proj/src",))) == "a.py"
    assert relative_text("x/w/proj/a.py", ROOTS) == "x/w/proj/a.py"  # not the start of a path


def test_a_traceback_names_library_frames_by_their_package_and_keeps_other_paths():
    traceback = ('  File "/w/proj/src/train.py", line 3, in <module>\n'
                 '  File "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", line 125, in forward\n'
                 '  File "/opt/tools/helpers.py", line 9, in wrap\n')
    shown = relative_text(relative_traceback(traceback, ROOTS), ROOTS)
    assert shown == ('  File "src/train.py", line 3, in <module>\n'
                     '  File "torch/nn/modules/linear.py", line 125, in forward\n'
                     '  File "/opt/tools/helpers.py", line 9, in wrap\n')


def test_a_place_is_named_from_the_deepest_root():
    assert place_of("/w/proj/src/pkg/m.py", 4, roots=("/w/proj", "/w/proj/src")) == "pkg/m.py:4"
    assert place_of("/w/proj/src/pkg/m.py", 4) == "m.py:4"
    assert short_path("/w/proj/src/m.py", "/") == "m.py"  # the file system's root is no root
