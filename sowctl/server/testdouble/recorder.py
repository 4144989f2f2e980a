"""``serve --record FILE``: every successful mutating API request, one JSON line each.

A line is ``{"method", "path", "query", "body", "status", "group", "identity",
"at", "responseId"}``: ``identity`` is who made the request, never a secret
(``{"userId", "organizationId", "role"}`` for a bearer token,
``{"apiKeyId", "organizationId", "companyId"}`` for an API key); ``at`` is the
service clock at the request; ``responseId`` is the ``id`` of the response body
(what a create made), which ``sowctl replay`` uses to map ids. Only POST, PUT
and DELETE requests of the API that answered 2xx are recorded: no reads, no
failures, no ``/_admin`` calls (a dataset loaded through ``/_admin/dataset`` is
not in the file; load it before replaying).

Several workers (and threads) append to one file: it is opened with
``O_APPEND``, and each line is written whole under an exclusive ``flock``, so
lines never interleave, however long they are.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from typing import Any

MUTATING = frozenset({"POST", "PUT", "DELETE"})


def check_writable(path: str) -> None:
    """Open ``path`` for appending once (creating it, readable by its owner only, since
    request bodies are business data): raises OSError when that fails."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


class Recorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()

    def _descriptor(self) -> int:
        # Opened in the process that writes (a worker, after the fork).
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._pid = os.getpid()
        return self._fd

    def append(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            fd = self._descriptor()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None
