"""Give a worker's freed memory back to the system after a large answer.

A streamed answer (a chain report, a page of purchase orders) makes and frees tens of
megabytes in small pieces. glibc keeps what a thread freed in that thread's arena for its
next allocations, so a worker that answered one stayed at its peak size for good: 4 pages
of 100 orders of 1,000 lines took a worker from 43 MiB to 251 MiB, and it stayed at 247 MiB.
``malloc_trim(0)`` returns the free pages of every arena. Elsewhere than glibc (musl, macOS)
there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Callable

_lock = threading.Lock()
_trim: Callable[[int], int] | None = None
_looked_up = False


def release_free_memory() -> None:
    """Return free heap pages to the system (glibc's ``malloc_trim``); a no-op elsewhere."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _malloc_trim() -> Callable[[int], int] | None:
    global _trim, _looked_up
    with _lock:
        if not _looked_up:
            _looked_up = True
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _trim = libc.malloc_trim
                _trim.argtypes = [ctypes.c_size_t]
                _trim.restype = ctypes.c_int
            except (OSError, AttributeError):  # not glibc
                _trim = None
        return _trim
