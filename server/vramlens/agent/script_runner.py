"""Execute the user's script as ``__main__``, the way ``python script.py`` does."""

from __future__ import annotations

import io
import os
import sys
import types


def execute_as_main(script: str, argv: list[str], text: str | None = None) -> None:
    """Raises whatever the script raises (SystemExit included); returns when it ends normally.
    ``text``: the script's source as an experiment edited it (agent/source_edit.py), else the file's."""
    path = os.path.abspath(script)
    sys.argv = list(argv)  # argv[0] as the user typed it, like the interpreter
    sys.path.insert(0, os.path.dirname(path))
    main = types.ModuleType("__main__")
    main.__file__ = path  # absolute, as Python ≥ 3.9 sets it for the main script
    main.__builtins__ = __builtins__
    main.__spec__ = None
    main.__loader__ = None
    # The script *is* __main__ from now on: pickling, multiprocessing's spawn and
    # `if __name__ == "__main__"` all see it, as they would without us.
    sys.modules["__main__"] = main
    if text is None:
        with io.open_code(path) as source:
            text = source.read()
    code = compile(text, path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


def exit_code_of(request: SystemExit) -> int:
    """The exit status the interpreter would give for this SystemExit."""
    code = request.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
