"""Writing a file whole, the one writer of exports and CI reports.

A regular file is replaced atomically: a temp file beside it, fsync, then a rename over it. Exports
and reports are read by other programs (and, in CI, often by another user): a reader sees the old
file or the new one, never half of one, and the new file gets the mode a plain ``open()`` would
give it (the umask), not ``mkstemp``'s owner-only 0600.

What the path names is kept, as a shell's ``>`` keeps it: a symlink stays a symlink (the file it
points to is replaced, in that file's folder), and a FIFO, a device (``/dev/stdout``,
``/dev/full``) or a socket is written into, never renamed over: replacing it would cut off its
reader, or put a regular file where a device node was.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_file(target: Path, text: str, *, errors: str = "strict", wait_for_reader: bool = True) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``target`` whole; OSError when it cannot
    (a full disk or device included). ``wait_for_reader=False``: a FIFO without a reader is
    an OSError (ENXIO) at once instead of a wait for one."""
    try:
        found = os.stat(target)  # follows symlinks
    except FileNotFoundError:  # a new file, or a symlink to one that does not exist yet
        found = None
    resolved = Path(os.path.realpath(target))
    if found is not None and not (
        stat.S_ISREG(found.st_mode) and _is(resolved, found) and not _names_a_descriptor(target)
    ):
        # Not a regular file, or one reached through a descriptor (/dev/stdout is the file or
        # pipe the shell opened: a file renamed over would not be what the shell holds).
        _write_into(target, text, errors, wait_for_reader)
        return
    _replace(resolved, text, errors)


def _names_a_descriptor(target: Path) -> bool:
    path = os.path.abspath(target)
    return path in ("/dev/stdout", "/dev/stderr") or path.startswith(("/dev/fd/", "/proc/"))


def _is(path: Path, found: os.stat_result) -> bool:
    try:
        named = os.stat(path)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (found.st_dev, found.st_ino)


def _write_into(target: Path, text: str, errors: str, wait_for_reader: bool) -> None:
    # Opening a FIFO waits for its reader, as a shell's `>` does (unless told not to); the close
    # flushes, so a device that refuses the bytes (ENOSPC from /dev/full) raises here.
    fd = os.open(target, os.O_WRONLY | os.O_TRUNC | (0 if wait_for_reader else os.O_NONBLOCK))
    os.set_blocking(fd, True)
    with open(fd, "w", encoding="utf-8", errors=errors, newline="\n") as handle:
        handle.write(text)


def _replace(target: Path, text: str, errors: str) -> None:
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors, newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it: set and restore at once
    os.umask(mask)
    return mask
