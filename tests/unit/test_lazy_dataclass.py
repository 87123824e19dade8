"""A lazy dataclass is the stdlib's dataclass from its first instance on, and costs nothing before."""

import dataclasses
import os
import subprocess
import sys
import threading
from dataclasses import field

import pytest

from vramlens.lazy_dataclass import lazy_dataclass

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "captures", "no_problem")


def test_the_class_is_made_on_its_first_instance_only():
    @lazy_dataclass
    class Point:
        x: int
        y: int = 0
        tags: list = field(default_factory=list)

    assert not dataclasses.is_dataclass(Point)
    point = Point(1, tags=["a"])
    assert dataclasses.is_dataclass(Point)
    assert (point.x, point.y, point.tags) == (1, 0, ["a"])
    assert Point(2).tags is not Point(2).tags
    assert repr(point) == "test_the_class_is_made_on_its_first_instance_only.<locals>.Point(x=1, y=0, tags=['a'])"
    assert point == Point(1, 0, ["a"]) and point != Point(2)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags"]
    assert dataclasses.replace(point, y=5).y == 5


def test_it_behaves_as_the_stdlib_dataclass_of_the_same_options():
    def made(decorator):
        @decorator(frozen=True)
        class Pair:
            """Two numbers."""

            a: int
            b: int | None = None

        return Pair

    lazy, eager = made(lazy_dataclass), made(dataclasses.dataclass)
    one, other = lazy(1, 2), eager(1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.a = 3
    assert hash(one) == hash(other) and hash(one) == hash(lazy(1, 2))
    assert {name for name in vars(lazy) if name.startswith("__")} == {name for name in vars(eager) if name.startswith("__")}
    assert lazy.__match_args__ == eager.__match_args__ == ("a", "b")
    with pytest.raises(TypeError):
        lazy()  # the missing argument is the generated __init__'s error, as for the stdlib's


def test_a_mistake_of_the_class_is_the_stdlibs_error_at_the_first_instance():
    @lazy_dataclass
    class Wrong:
        items: list = []  # noqa: RUF012 - the mistake under test

    with pytest.raises(ValueError, match="mutable default"):
        Wrong()


def test_a_class_with_its_own_init_is_refused():
    with pytest.raises(TypeError, match="lazy_dataclass makes the __init__"):
        @lazy_dataclass
        class Own:
            def __init__(self):
                pass


def test_threads_making_the_first_instances_at_once_make_the_class_once():
    @lazy_dataclass
    class Counted:
        n: int

    made = []
    start = threading.Barrier(8)

    def first():
        start.wait()
        made.append(Counted(1))

    threads = [threading.Thread(target=first) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 8 and all(item == Counted(1) for item in made)
    assert "first_init" not in Counted.__init__.__code__.co_name


def test_analyze_leaves_the_classes_it_never_instantiates_unmade():
    """One capture analysed: the ranks' comparison classes are imported but never made."""
    code = ("import contextlib, io, sys, dataclasses\nfrom vramlens.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(sys.argv[1:])\n"
            "from vramlens.analysis.ranks.model import RankComparison\nfrom vramlens.analysis.model import Analysis\n"
            "print(code, dataclasses.is_dataclass(RankComparison), dataclasses.is_dataclass(Analysis))")
    done = subprocess.run([sys.executable, "-c", code, "analyze", FIXTURE], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "False", "True"]
