"""Writing a file whole: a temp file beside it, fsync, then a rename over it.

Exports and CI reports are read by other programs (and, in CI, often by another user):
a reader sees the old file or the new one, never half of one, and the new file gets the
mode a plain ``open()`` would give it (the umask), not ``mkstemp``'s owner-only 0600.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(target: Path, text: str, *, errors: str = "strict") -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``target`` whole; OSError when it cannot."""
    fd, temp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.")
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
