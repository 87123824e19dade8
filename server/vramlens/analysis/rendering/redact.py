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
# A bare path in prose runs on past a space only into a word that itself goes on with a slash
# ("/data/Données privées/log.txt"): text between two paths ("a.txt to dst=/b.txt") stays text.
_CONTINUED = rf"(?: [^/\s\"'`<>|(),;:=]+/(?:{_PART}/)*{_PART})*"
_WINDOWS = r"(?<![\w\\])(?:[A-Za-z]:|\\\\[\w.$-]+)\\(?:[^\\\s\"'`<>|]+\\)*[^\\\s\"'`<>|]+"
_PATH = re.compile(rf"(?<=\")(?P<dq>/[^\"\n]+)(?=\")|(?<=')(?P<sq>/[^'\n]+)(?=')|(?P<bare>{_BARE}{_CONTINUED})"
                   rf"|(?P<rel>{_RELATIVE})|(?P<win>{_WINDOWS})")
_HOME = re.compile(r"(?:/(?:home|Users)/|[A-Za-z]:\\Users\\)([\w.-]+)")
_GENERIC_USERS = {"root", "user", "ubuntu", "admin", "runner"}  # not personal, and common words
_GENERIC_HOSTS = {"localhost", "localhost.localdomain", "ubuntu", "debian"}

_SECRET_WORD = r"(?:token|key|apikey|secret|password|passwd|pwd|pass|auth|authorization|credentials?|signature|sig|dsn|cookie)"
# ``name = "value"``, ``name: value``, ``"name": "value"`` whose name has a secret word as one of its parts
# (api_key, aws_secret_access_key, DB_PASSWORD; not max_new_tokens): the value is the secret.
_SECRET_NAME = rf"(?:[A-Za-z0-9]+[_.-])*{_SECRET_WORD}(?:[_.-][A-Za-z0-9]+)*"
_SECRET_PAIR = re.compile(
    rf"(?<![A-Za-z0-9])({_SECRET_NAME})([\"']?\s*(?:=|:|=>)\s*)(?:([\"'])([^\"'\n]{{3,}}?)\3|([^\s\"'&,;)\]}}]{{3,}}))",
    re.IGNORECASE)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.|\n)*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)")
# A key body without its armour: DER (MII…) or OpenSSH (b3BlbnNzaC…) in base64.
_KEY_BODY = re.compile(r"(?<![A-Za-z0-9+/])(?:MII|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/]{36,}={0,2}")
# --hf-token=abc, --api_key abc, -p=… is not matched (too short to name a secret)
_SECRET_OPTION = re.compile(rf"(?<![\w-])(--?(?:[\w]+[-_])*{_SECRET_WORD}(?:[-_][\w]+)*)(=|\s+)(?!-)([^\s\"'&]+)", re.IGNORECASE)
_SECRET_ASSIGNMENT = re.compile(rf"\b([A-Z0-9_]*{_SECRET_WORD.upper()}[A-Z0-9_]*)=([^\s\"'&]+)")
_SECRET_PARAMETER = re.compile(rf"([?&;](?:[\w.-]*[-_.])?{_SECRET_WORD}(?:[-_.][\w.-]*)?=)([^&#\s\"']+)", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"\b([a-z][a-z0-9+.-]*://)([^/\s:@\"']+)(?::[^/\s@\"']*)?@([^/\s:?#\"'<>]+)?", re.IGNORECASE)
_BEARER = re.compile(r"\b(Bearer|Authorization:\s*Basic)\s+([A-Za-z0-9._~+/=-]{8,})")
# Tokens by their vendor's prefix (the gitleaks / detect-secrets rule families), found even glued to a
# word by "_" or "-" (``cfg_hf_…``): the start is any character that is not a letter or digit.
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:hf_[A-Za-z0-9]{8,}|sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-)?[A-Za-z0-9_-]{20,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,}|gl(?:pat|ptt|dt|rt|cbt|imt|agent)-[A-Za-z0-9_-]{20,}"
    r"|npm_[A-Za-z0-9]{20,}|pypi-AgE[A-Za-z0-9_-]{20,}|xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|dop_v1_[a-f0-9]{64}|do[or]_v1_[a-f0-9]{64}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|dapi[a-f0-9]{32}"
    r"|AGE-SECRET-KEY-1[0-9A-Z]{58}|lin_api_[A-Za-z0-9]{40}|sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}"
    r"|key-[0-9a-f]{32}|SK[0-9a-f]{32}|AC[0-9a-f]{32}|EAA[A-Za-z0-9]{30,}|dp\.pt\.[A-Za-z0-9]{40,}"
    r"|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|\d{8,10}:AA[0-9A-Za-z_-]{33}"
    r"|hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}|discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})")
_CONNECTION_KEYS = re.compile(r"((?:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=)([A-Za-z0-9+/%=_-]{16,})")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_INTERNAL_HOST = re.compile(r"(?<=://)[\w.-]+\.(?:local|internal|lan|corp|intranet|home|localdomain|cluster)\b", re.IGNORECASE)
# A bare host name of an internal network: a label such as "corp" or "cluster" among three or more,
# or after a name with a digit or hyphen (gpu-node-17.cluster.local); threading.local stays.
_INTERNAL_LABEL = r"(?:local|internal|lan|corp|intranet|localdomain|cluster|svc|private)"
_BARE_INTERNAL_HOST = re.compile(
    rf"(?<![\w.-])(?:(?:[A-Za-z0-9-]+\.){{2,}}|[A-Za-z0-9]*[\d-][A-Za-z0-9-]*\.)(?:[A-Za-z0-9-]+\.)*?"
    rf"{_INTERNAL_LABEL}(?:\.[A-Za-z0-9-]+)*(?![\w-])|(?<![\w.-])(?:[A-Za-z0-9-]+\.)+{_INTERNAL_LABEL}(?:\.[A-Za-z]+)+(?![\w-])",
    re.IGNORECASE)
_HOST_PAIR = re.compile(r"(?<![A-Za-z0-9])((?:host|hostname|server|endpoint|master_addr|addr)\s*[=:]\s*[\"']?)"
                        r"([A-Za-z0-9][\w-]*(?:\.[\w-]+)+)", re.IGNORECASE)

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
        text = self.sub(_PRIVATE_KEY, "<secret>", text, "secret")
        text = self.sub(_KEY_BODY, "<secret>", text, "secret")
        text = self.sub(_URL_CREDENTIALS, self._credentials, text, "secret")
        text = self.sub(_CONNECTION_KEYS, r"\1<secret>", text, "secret")
        text = self.sub(_SECRET_PARAMETER, r"\1<secret>", text, "secret")
        text = self.sub(_BEARER, r"\1 <secret>", text, "secret")
        text = self.sub(_KEY_SHAPES, "<secret>", text, "secret")
        text = self.sub(_SECRET_OPTION, lambda m: m.group(0) if m.group(3) == "<secret>" else f"{m.group(1)}{m.group(2)}<secret>",
                        text, "secret")
        text = self.sub(_SECRET_ASSIGNMENT, lambda m: m.group(0) if m.group(2) == "<secret>" else f"{m.group(1)}=<secret>",
                        text, "secret")
        return self.sub(_SECRET_PAIR, _pair_value, text, "secret")

    def _credentials(self, match: re.Match) -> str:
        """``https://user:pass@host`` → ``https://<secret>@<host>``: the host a secret opens is private too."""
        if match.group(3) and match.group(3) != "<host>":
            self.counts["host"] += 1
        return f"{match.group(1)}<secret>@" + ("<host>" if match.group(3) else "")

    def addresses(self, text: str) -> str:
        for host in self.hosts:
            text = self.sub(re.compile(rf"(?<![\w.-]){re.escape(host)}(?:\.[\w-]+)*(?![\w-])"), "<host>", text, "host")
        text = self.sub(_INTERNAL_HOST, "<host>", text, "host")
        text = self.sub(_HOST_PAIR, lambda m: m.group(0) if _is_ip(m.group(2)) or m.group(2).count(".") < 1 or _is_public_name(m.group(2))
                        else f"{m.group(1)}<host>", text, "host")
        text = self.sub(_BARE_INTERNAL_HOST, "<host>", text, "host")
        text = self.sub(_IPV4, lambda m: "<ip>" if _is_ip(m.group(0)) else m.group(0), text, "ip")
        return self.sub(_IPV6, lambda m: "<ip>" if _is_ipv6(m.group(0)) else m.group(0), text, "ip")

    def paths(self, text: str) -> str:
        for root in self.roots:
            text = self.sub(re.compile(rf"(?<![\w.-]){re.escape(root)}(?![^/\\\s\"'`<>|(),;:])"), "<root>", text, "root")

        def replace_path(match: re.Match) -> str:
            if match.group("win"):  # C:\Users\… or \\server\share\…: only the file's name is kept
                return "<outside>/" + match.group("win").rstrip("\\").rsplit("\\", 1)[-1]
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


def _pair_value(match: re.Match) -> str:
    value = match.group(4) if match.group(4) is not None else match.group(5)
    if value == "<secret>" or value.startswith("<secret>") or (value.replace(".", "").isdigit() and not
                                                               re.search(r"pass|pwd|secret", match.group(1), re.IGNORECASE)):
        return match.group(0)  # already hidden; or a number under a name like "key" (a size, a count)
    quote = match.group(3) or ""
    return f"{match.group(1)}{match.group(2)}{quote}<secret>{quote}"


_PUBLIC_SUFFIXES = (".org", ".com", ".io", ".net", ".ai", ".dev", ".py")


def _is_public_name(name: str) -> bool:
    """A module path or a public site named as a "host" (server=torch.distributed, host=pypi.org) stays."""
    return name.lower().endswith(_PUBLIC_SUFFIXES) and not re.search(_INTERNAL_LABEL, name, re.IGNORECASE)


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
    """``text`` redacted (paths under one of ``roots`` relative to it, the rest cut), with the counts.

    User names are learnt from the roots too: a report names its files relative to them, so its text
    may no longer hold the home folder (``/home/alice/proj``) that says whose name to hide."""
    redactor = _Redactor(roots, hosts or [])
    redactor.homes, redactor.users = _homes_and_users("\n".join([text, *(root for root in roots if root)]))
    text = redactor.secrets(text)
    text = redactor.addresses(text)
    text = redactor.paths(text)
    text = redactor.people(text)
    return Redaction(text, {kind: count for kind, count in redactor.counts.items() if count})


def redact(text: str, roots: list[str | None], hosts: list[str] | None = None) -> str:
    return redact_counted(text, roots, hosts).text
