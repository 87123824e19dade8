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
    with pytest.raises(TypeError, match="lazy_dataclass makes __init__"):
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


def test_an_instance_unpickled_where_its_class_was_never_made_is_the_dataclass():
    """The language server's first instance of a class may come pickled from its load worker."""
    made = subprocess.run([sys.executable, "-c", (
        "import pickle, sys\nfrom vramlens.capture.snapshot_shape import Annotation, TraceFacts\n"
        "sys.stdout.buffer.write(pickle.dumps((Annotation(3, None, 'warm-up'), TraceFacts({'alloc': 2}))))")],
        capture_output=True, check=True).stdout
    read = subprocess.run([sys.executable, "-c", (
        "import dataclasses, pickle, sys\nfrom vramlens.capture.snapshot_shape import Annotation, TraceFacts\n"
        "assert not dataclasses.is_dataclass(Annotation)\n"
        "mark, facts = pickle.loads(sys.stdin.buffer.read())\n"
        "print(dataclasses.is_dataclass(Annotation), mark == Annotation(3, None, 'warm-up'), repr(mark))\n"
        "print(facts == TraceFacts({'alloc': 2}), facts.annotations, facts.reused_addresses)")],
        input=made, capture_output=True, check=True).stdout.decode().splitlines()
    assert read == ["True True Annotation(index=3, time_us=None, text='warm-up')", "True [] 0"]


def test_a_copy_of_a_frozen_instance_is_equal_and_frozen():
    import copy

    @lazy_dataclass(frozen=True)
    class Mark:
        at: int
        words: tuple = ()

    mark = Mark(1, ("a",))
    for twin in (copy.copy(mark), copy.deepcopy(mark)):
        assert twin == mark and hash(twin) == hash(mark) and twin is not mark
        with pytest.raises(dataclasses.FrozenInstanceError):
            twin.at = 2


def test_a_class_without_fields_is_refused():
    with pytest.raises(TypeError, match="with fields"):
        @lazy_dataclass
        class Empty:
            pass
