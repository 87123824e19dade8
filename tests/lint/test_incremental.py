"""Chunked parsing and part-by-part analysis: cached results are the results, edits re-analyse little."""

from __future__ import annotations

import random
import re

from cases import POSITIVE_CASES
from vramlens.lint import lint_source
from vramlens.lint.engine.chunks import ChunkCache, parse_file, split_lines
from vramlens.lint.engine.components import components

# The rule cases, several times over under names of their own (functions, classes and the globals they
# share): a file of many independent parts, long enough to be analysed in several batches.
_NAMES = re.compile(r"\b(model|criterion|optimizer|rnn|train|predict|fit|step|run|heads|Net|Decoder|Trainer)\b")
FILE = "\n\n".join(
    _NAMES.sub(lambda m, r=r, i=i: f"{m.group(1)}_{r}_{i}", case.source)
    for r in range(8) for i, case in enumerate(POSITIVE_CASES)
)


def lint(text: str, cache: ChunkCache | None = None) -> list[tuple]:
    return [(f.line, f.column, f.code, f.message, f.fixes) for f in lint_source(text, "f.py", preview=True, cache=cache)]


def test_a_cached_lint_equals_a_fresh_one_after_random_edits():
    cache = ChunkCache()
    lines = FILE.split("\n")
    chooser = random.Random(13)
    assert lint(FILE, cache) == lint(FILE)
    for _ in range(25):
        edited = list(lines)
        where = chooser.randrange(len(edited))
        kind = chooser.choice(["append", "insert", "delete"])
        if kind == "append":
            edited[where] += "  # edit"
        elif kind == "insert":
            edited.insert(where, edited[where][: len(edited[where]) - len(edited[where].lstrip())] + "pass")
        else:
            del edited[where]
        text = "\n".join(edited)
        assert lint(text, cache) == lint(text), f"{kind} at line {where + 1}"


def test_only_the_edited_part_is_analysed_again():
    cache = ChunkCache()
    lint(FILE, cache)
    before = dict(cache.results)
    edited = FILE.replace("total += loss\n", "total += loss  # edited\n", 1)
    lint(edited, cache)
    reused = [key for key in cache.results if key in before]
    assert len(cache.results) > 2 and len(cache.results) - len(reused) == 1


def test_chunks_start_where_statements_start():
    text = (
        '"""Doc\nUsage:\npython x.py\n"""\n'
        "import torch\nimport os\n"
        "@decorate\ndef f():\n    return 1\n"
        "if x:\n    y = 1\nelse:\n    y = 2\n"
        "try:\n    z = 1\nexcept E:\n    z = 2\n"
        "s = '''\ncolumn zero text\n'''\n"
        "class C:\n    pass\n"
        "value = (\n1, 2,\n)\n"
    )
    parsed = parse_file(text, ChunkCache())
    assert parsed.error is None
    assert [c.start for c in parsed.chunks] == [1, 5, 7, 10, 21, 23]
    assert sum(len(c.tree.body) for c in parsed.chunks) == 9


def test_a_multi_line_decorator_and_the_decorators_after_it_stay_with_their_definition():
    # transformers' modeling files: `@auto_docstring(` over several lines, then `@dataclass`, then the class
    text = (
        "import torch\n\n"
        '@auto_docstring(\n    custom_intro="""\n    Output type.\n    """\n)\n@dataclass\nclass Out:\n    x: int\n\n'
        "@a\n@b(\n    1,\n)\ndef f():\n    return 1\n"
        "y = 2\n"
    )
    assert split_lines(text, set()) == [0, 2, 11, 17]  # no cut at `@dataclass`, `class Out`, `@b(` or `def f`
    cache = ChunkCache()
    assert [c.start for c in parse_file(text, cache).chunks] == [1, 3, 12, 18]
    assert not cache.not_starts  # every chunk parsed alone: nothing was learnt from a whole-file parse


def test_a_wrong_cut_is_learnt_and_a_real_syntax_error_is_reported_at_its_line():
    cache = ChunkCache()
    text = "y = (a\n@ b)\ndef f():\n    return y\n"
    assert split_lines(text, set()) == [0, 1]  # "@ b)" looks like a decorator (of the def below it)
    assert parse_file(text, cache).error is None
    assert split_lines(text, cache.not_starts) == [0, 2]
    broken = "def f():\n    return 1\n\ndef g(:\n    pass\n"
    finding = lint_source(broken, "b.py")[0]
    assert (finding.code, finding.line) == ("VL000", 4)


def test_parts_join_definitions_that_refer_to_each_other():
    text = (
        "import torch\n"
        "def helper(x):\n    return x\n"
        "def user(x):\n    return helper(x)\n"
        "def alone(x):\n    return x\n"
        "model = torch.nn.Linear(2, 2)\n"
        "def uses_model(x):\n    return model(x)\n"
    )
    chunks = parse_file(text, ChunkCache()).chunks
    parts = [[chunks[i].text.split("(")[0].split()[-1] for i in part] for part in components(chunks)]
    assert ["helper", "user"] in parts and ["alone"] in parts
    assert any("uses_model" in part and len(part) == 2 for part in parts)


def test_a_cached_lint_equals_a_fresh_one_after_edits_of_the_imports():
    # every kind of header edit: a comment, a new import nothing reads, a removed import, an alias changed, an
    # import of torch itself added or removed; the cache keeps the parts whose imports did not change
    header = "import math\nimport torch\nfrom torch import nn\nimport numpy as np\nfrom typing import Optional\n\n"
    text = header + FILE
    edits = [
        ("import math\n", "import math  # typed\n"),
        ("import math\n", "import math\nimport collections\n"),
        ("import numpy as np\n", ""),
        ("import numpy as np\n", "import numpy as onp\n"),
        ("from torch import nn\n", ""),
        ("import torch\n", "import torch\nimport torch.nn.functional as F\n"),
        ("from typing import Optional\n", "from typing import Optional, Any\n"),
        ("import math\n", "from __future__ import annotations\nimport math\n"),
    ]
    cache = ChunkCache()
    assert lint(text, cache) == lint(text)
    for old, new in edits:
        edited = text.replace(old, new, 1)
        assert lint(edited, cache) == lint(edited), f"{old!r} -> {new!r}"
        assert lint(text, cache) == lint(text), f"back from {new!r}"


def test_an_import_no_part_reads_reanalyses_nothing():
    text = "import math\nimport torch\n\n" + FILE
    cache = ChunkCache()
    lint(text, cache)
    before = dict(cache.results)
    lint(text.replace("import math\n", "import math\nimport collections\n", 1), cache)
    assert before and set(cache.results) == set(before)  # every part's result reused
