"""Reading a file that came from elsewhere: a regular file only, up to a size, without ever blocking.

A capture folder, a snapshot, a source file to show or lint may each be a FIFO (reading blocks
forever), a device (``/dev/zero`` never ends), a folder, a dangling or looping symbolic link, or
far larger than anything real. Each is refused with one sentence that says what the path is,
before anything reads from it. Standard library only: the capture loader, the analysis and the
linter all read through here.
"""

from __future__ import annotations

import errno
import os
import stat

_CHUNK = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class FileProblem(Exception):
    """A path that cannot be read as a file; the message is one sentence without a final period."""


def human_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ("a folder", "a named pipe (FIFO)", ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _os_sentence(path, error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return f"{path} is a symbolic link that loops back on itself"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"{path} cannot be read: permission denied"
    if error.errno == errno.ENAMETOOLONG:
        return "the path is too long to open"
    return f"{path} cannot be read ({error.strerror or error})"


def problem_with(path: str | os.PathLike) -> str | None:
    """Why ``path`` is not a regular file that can be read, in words; None when it is one."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            try:
                target = os.readlink(path)
            except OSError:
                target = "a path"
            return f"{path} is a symbolic link to {target}, which does not exist"
        return f"nothing at {path}"
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path
        return _os_sentence(path, error) if isinstance(error, OSError) else "the path holds a NUL character"
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is {kind_of(info.st_mode)}, not a file"
    return None


def read_regular_file(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; FileProblem otherwise.

    Opened without blocking (a FIFO swapped in after the check cannot hang the read), checked
    again on the open descriptor, and read no further than ``limit`` (files under /proc say
    they are empty and are not)."""
    problem = problem_with(path)
    if problem:
        raise FileProblem(problem)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise FileProblem(_os_sentence(path, error)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"{path} is {kind_of(info.st_mode)}, not a file")
        if info.st_size > limit:
            raise FileProblem(f"{path} is {human_size(info.st_size)}, more than the {human_size(limit)} "
                              f"VRAM Lens reads as a {what}")
        os.set_blocking(fd, True)
        return _read_up_to(fd, path, limit, info.st_size, what)
    except OSError as error:
        raise FileProblem(_os_sentence(path, error)) from None
    finally:
        os.close(fd)


def _read_up_to(fd: int, path, limit: int, expected: int, what: str) -> bytes:
    # Reads of the size the file says it has keep a single copy in memory for files that did not
    # grow meanwhile; a file without a size (/proc) is read in chunks, never past ``limit``.
    parts, total = [], 0
    want = expected + 1 if expected else _CHUNK
    while total <= limit:
        chunk = os.read(fd, min(want, limit + 1 - total))
        if not chunk:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
        want = expected + 1 - total if total <= expected else _CHUNK
    raise FileProblem(f"{path} holds more than the {human_size(limit)} VRAM Lens reads as a {what}")


_WRITE_FLAGS = (os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                | getattr(os, "O_CLOEXEC", 0))


def write_regular_file(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8; what no encoder can write is escaped) to ``path``, a regular file or a
    new one; FileProblem otherwise.

    Opened without blocking: a FIFO with no reader is refused at once (ENXIO) instead of hanging
    the writer, and one with a reader is refused on the open descriptor before anything is written.
    Truncated only once it is known to be a regular file."""
    try:
        fd = os.open(path, _WRITE_FLAGS, 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise FileProblem(f"{path} is a named pipe (FIFO), not a file") from None
        if error.errno == errno.EISDIR:
            raise FileProblem(f"{path} is a folder, not a file") from None
        raise FileProblem(_os_sentence(path, error)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"{path} is {kind_of(info.st_mode)}, not a file")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        data = memoryview(text.encode("utf-8", errors="backslashreplace"))
        while data:
            data = data[os.write(fd, data):]
    except OSError as error:
        raise FileProblem(_os_sentence(path, error)) from None
    finally:
        os.close(fd)


def read_text_file(path: str | os.PathLike, limit: int, what: str = "file") -> str:
    """``read_regular_file`` decoded as UTF-8, with what is not UTF-8 replaced (a source to show)."""
    return read_regular_file(path, limit, what).decode("utf-8", errors="replace")
