"""Redaction for reports that will be shared, with a count of what was taken out.

- paths under the source root become ``<root>/x.py``; library files keep their package path
  (``<site-packages>/…``); every other path, absolute or ``../``-relative, becomes
  ``<outside>/file.py``; the home folder ``~``; user names ``<user>``;
- secrets: the values of secret-named options (``--token=…``, ``--api-key …``, ``HF_TOKEN=…``),
  of secret-named URL parameters (``?key=…``) and URL credentials (``https://u:p@host``), bearer
  tokens, and strings shaped like known keys (``hf_…``, ``sk-…``, AWS access keys, GitHub and Slack
  tokens) become ``<secret>``;
- the capture's host names (the rank's host, the rendezvous address), this machine's name,
  hosts of internal networks in URLs, and IP addresses become ``<host>`` and ``<ip>``.

A bare path in prose ends at white space (text between two paths is never taken for one path
with spaces); a quoted path ("File "/a b/x.py"") runs to its closing quote.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
import socket
from dataclasses import dataclass, field

_PART = r"[^/\s\"'`<>|(),;]+"
_BARE = rf"(?<![\w<>.:/~\\])/(?:{_PART}/)*{_PART}"
_RELATIVE = rf"(?<![\w<>.:/~\\])(?:\.\./)+(?:{_PART}/)*{_PART}"
_PATH = re.compile(rf"(?<=\")(?P<dq>/[^\"\n]+)(?=\")|(?<=')(?P<sq>/[^'\n]+)(?=')|(?P<bare>{_BARE})|(?P<rel>{_RELATIVE})")
_HOME = re.compile(r"(?:/(?:home|Users)/|[A-Za-z]:\\Users\\)([\w.-]+)")
_GENERIC_USERS = {"root", "user", "ubuntu", "admin", "runner"}  # not personal, and common words
_GENERIC_HOSTS = {"localhost", "localhost.localdomain", "ubuntu", "debian"}

_SECRET_WORD = r"(?:token|key|apikey|secret|password|passwd|pwd|auth|authorization|credentials?|signature|sig)"
# --hf-token=abc, --api_key abc, -p=… is not matched (too short to name a secret)
_SECRET_OPTION = re.compile(rf"(?<![\w-])(--?(?:[\w]+[-_])*{_SECRET_WORD}(?:[-_][\w]+)*)(=|\s+)(?!-)([^\s\"'&]+)", re.IGNORECASE)
_SECRET_ASSIGNMENT = re.compile(rf"\b([A-Z0-9_]*{_SECRET_WORD.upper()}[A-Z0-9_]*)=([^\s\"'&]+)")
_SECRET_PARAMETER = re.compile(rf"([?&;](?:[\w.-]*[-_.])?{_SECRET_WORD}(?:[-_.][\w.-]*)?=)([^&#\s\"']+)", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"\b([a-z][a-z0-9+.-]*://)([^/\s:@\"']+)(?::[^/\s@\"']*)?@", re.IGNORECASE)
_BEARER = re.compile(r"\b(Bearer|Authorization:\s*Basic)\s+([A-Za-z0-9._~+/=-]{8,})")
_KEY_SHAPES = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{30,}|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_INTERNAL_HOST = re.compile(r"(?<=://)[\w.-]+\.(?:local|internal|lan|corp|intranet|home|localdomain|cluster)\b", re.IGNORECASE)

KINDS = {  # kind -> how the summary names it, one and many
    "secret": ("secret (token, key or password)", "secrets (tokens, keys or passwords)"),
    "host": ("host name", "host names"),
    "ip": ("IP address", "IP addresses"),
    "outside": ("path outside the project", "paths outside the project"),
    "home": ("home folder", "home folders"),
    "user": ("user name", "user names"),
    "root": ("project path made relative", "project paths made relative"),
}


@dataclass
class Redaction:
    text: str
    counts: dict[str, int] = field(default_factory=dict)  # kind (KINDS) -> how many were replaced

    def summary(self) -> str:
        """One sentence, e.g. "Redacted: 3 paths outside the project, 1 secret (token, key or password)"."""
        parts = [f"{count} {KINDS[kind][count != 1]}" for kind, count in self.counts.items() if count]
        return "Redacted: " + ", ".join(parts) + "." if parts else "Redaction found nothing to hide."


def hosts_of(meta: dict) -> list[str]:
    """Host names a capture's report may show: the rank's host, the rendezvous address, this machine."""
    place = meta.get("distributed") or {}
    names = [place.get("hostname"), place.get("master_addr")]
    try:
        local = socket.gethostname()
    except OSError:
        local = ""
    if any(char.isdigit() or char in ".-" for char in local):  # a machine's name, not a word of prose
        names.append(local)
    return [name for name in names if isinstance(name, str) and not _is_ip(name) and not _is_ipv6(name)]  # IPs: <ip>


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


class _Redactor:
    def __init__(self, roots: list[str | None], hosts: list[str]):
        self.counts = {kind: 0 for kind in KINDS}
        self.roots = sorted({root.rstrip("/") for root in roots if root and root.rstrip("/")}, key=len, reverse=True)
        self.hosts = sorted({host for host in hosts if len(host) >= 3 and host.lower() not in _GENERIC_HOSTS},
                            key=len, reverse=True)
        self.homes: set[str] = set()
        self.users: set[str] = set()

    def sub(self, pattern: re.Pattern, replacement, text: str, kind: str) -> str:
        def counted(match: re.Match) -> str:
            new = replacement(match) if callable(replacement) else match.expand(replacement)
            if new != match.group(0):
                self.counts[kind] += 1
            return new
        return pattern.sub(counted, text)

    def secrets(self, text: str) -> str:
        text = self.sub(_URL_CREDENTIALS, r"\1<secret>@", text, "secret")
        text = self.sub(_SECRET_PARAMETER, r"\1<secret>", text, "secret")
        text = self.sub(_BEARER, r"\1 <secret>", text, "secret")
        text = self.sub(_KEY_SHAPES, "<secret>", text, "secret")
        text = self.sub(_SECRET_OPTION, lambda m: m.group(0) if m.group(3) == "<secret>" else f"{m.group(1)}{m.group(2)}<secret>",
                        text, "secret")
        return self.sub(_SECRET_ASSIGNMENT, lambda m: m.group(0) if m.group(2) == "<secret>" else f"{m.group(1)}=<secret>",
                        text, "secret")

    def addresses(self, text: str) -> str:
        for host in self.hosts:
            text = self.sub(re.compile(rf"(?<![\w.-]){re.escape(host)}(?:\.[\w-]+)*(?![\w-])"), "<host>", text, "host")
        text = self.sub(_INTERNAL_HOST, "<host>", text, "host")
        text = self.sub(_IPV4, lambda m: "<ip>" if _is_ip(m.group(0)) else m.group(0), text, "ip")
        return self.sub(_IPV6, lambda m: "<ip>" if _is_ipv6(m.group(0)) else m.group(0), text, "ip")

    def paths(self, text: str) -> str:
        for root in self.roots:
            text = self.sub(re.compile(rf"(?<![\w.-]){re.escape(root)}(?![^/\\\s\"'`<>|(),;:])"), "<root>", text, "root")

        def replace_path(match: re.Match) -> str:
            path = match.group("dq") or match.group("sq") or match.group("bare")
            if path is None:  # ../relative: its place cannot be told, only its name is kept
                return "<outside>/" + match.group("rel").rstrip("/").rsplit("/", 1)[-1]
            if path.rstrip("/").count("/") < 2:  # "/s", "/tmp": too short to name anything
                return path
            return _outside(path)

        return self.sub(_PATH, replace_path, text, "outside")

    def people(self, text: str) -> str:
        """Home folders and user names, found in the text as it was given (paths are cut by now)."""
        for home in sorted(self.homes, key=len, reverse=True):
            text = self.sub(re.compile(re.escape(home)), "~", text, "home")
        for user in self.users:
            text = self.sub(re.compile(rf"\b{re.escape(user)}\b"), "<user>", text, "user")
        return text


def _is_ip(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _is_ipv6(text: str) -> bool:
    if "::" not in text and text.count(":") < 7:
        return False  # times (10:06:50) and the like
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def redact_counted(text: str, roots: list[str | None], hosts: list[str] | None = None) -> Redaction:
    """``text`` redacted (paths under one of ``roots`` relative to it, the rest cut), with the counts."""
    redactor = _Redactor(roots, hosts or [])
    redactor.homes, redactor.users = _homes_and_users(text)
    text = redactor.secrets(text)
    text = redactor.addresses(text)
    text = redactor.paths(text)
    text = redactor.people(text)
    return Redaction(text, {kind: count for kind, count in redactor.counts.items() if count})


def redact(text: str, roots: list[str | None], hosts: list[str] | None = None) -> str:
    return redact_counted(text, roots, hosts).text
