"""Path redaction for reports that will be shared: paths under the source root become
``<root>/x.py``, library files keep their package path (``<site-packages>/…``), every other
absolute path becomes ``<outside>/file.py``, the home folder ``~``, and user names disappear
everywhere, traceback included."""

from __future__ import annotations

import getpass
import os
import re

# A quoted path ("File "/home/a/My Project/x.py", line 3" in a traceback) runs to its closing quote.
# A bare one may have spaces inside folder names, since a "/" closes those, but its last part ends
# at white space or punctuation that never ends a file name in prose.
_PART = r"[^/\s\"'`<>|(),;]+"
_BARE = rf"(?<![\w<>.:/~\\])/(?:{_PART}(?: {_PART})*/)*{_PART}"
_PATH = re.compile(rf'(?<=")(?P<quoted>/[^"\n]+)(?=")|(?P<bare>{_BARE})')
_HOME = re.compile(r"(?:/(?:home|Users)/|[A-Za-z]:\\Users\\)([\w.-]+)")
_GENERIC_USERS = {"root", "user", "ubuntu", "admin", "runner"}  # not personal, and common words


def _homes_and_users(text: str) -> tuple[set[str], set[str]]:
    homes, users = set(), set()
    for match in _HOME.finditer(text):
        homes.add(match.group(0))
        users.add(match.group(1))
    local_home = os.path.expanduser("~")
    if local_home and local_home != "/":
        homes.add(local_home.rstrip("/"))
    try:
        users.add(getpass.getuser())
    except (KeyError, OSError):
        pass
    return homes, {user for user in users if user and user.lower() not in _GENERIC_USERS}


def _outside(path: str) -> str:
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return "<site-packages>/" + path.split(marker, 1)[1]
    return "<outside>/" + path.rstrip("/").rsplit("/", 1)[-1]


def _under_root(path: str, roots: list[str]) -> str | None:
    """``<root>/x.py`` for a path under one of ``roots`` (the longest that holds it), else None."""
    for root in roots:
        if path == root:
            return "<root>"
        if path.startswith(root + "/"):
            return "<root>/" + path[len(root) + 1:]
    return None


def redact(text: str, roots: list[str | None]) -> str:
    """Redact ``text``: paths under one of ``roots`` are written relative to it, others are cut."""
    homes, users = _homes_and_users(text)
    kept_roots = sorted({root.rstrip("/") for root in roots if root and root.rstrip("/")}, key=len, reverse=True)

    def replace_path(match: re.Match) -> str:
        path = match.group("quoted") or match.group("bare")
        relative = _under_root(path, kept_roots)
        if relative is not None:
            return relative
        if path.rstrip("/").count("/") < 2:  # "/s", "/tmp": too short to name anything
            return path
        return _outside(path)

    text = _PATH.sub(replace_path, text)
    for home in sorted(homes, key=len, reverse=True):
        text = text.replace(home, "~")
    for user in users:
        text = re.sub(rf"\b{re.escape(user)}\b", "<user>", text)
    return text
