"""Path redaction for reports that will be shared: paths outside the source root become
``<outside>/file.py`` (library files keep their package path), the home folder becomes ``~``,
and user names disappear everywhere, traceback included."""

from __future__ import annotations

import getpass
import os
import re

_PATH = re.compile(r"(?<![\w<>.:/~])(/(?:[\w.@+~-]+/)*[\w.@+~-]+)")
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


def redact(text: str, roots: list[str | None]) -> str:
    """Redact ``text``: paths under one of ``roots`` stay (with ~ for the home folder), others are cut."""
    homes, users = _homes_and_users(text)
    kept_roots = [root.rstrip("/") for root in roots if root]

    def replace_path(match: re.Match) -> str:
        path = match.group(1)
        if any(path == root or path.startswith(root + "/") for root in kept_roots):
            return path
        if path.count("/") < 2:  # "/s", "/tmp": too short to name anything
            return path
        return _outside(path)

    text = _PATH.sub(replace_path, text)
    for home in sorted(homes, key=len, reverse=True):
        text = text.replace(home, "~")
    for user in users:
        text = re.sub(rf"\b{re.escape(user)}\b", "<user>", text)
    return text
