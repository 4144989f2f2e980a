"""gunicorn's error log (its own warnings and tracebacks on stderr), under the one redaction rule.

gunicorn quotes what a client sent in some of its lines (the request line of a request it
could not parse, the URI of one whose handling failed): a token sent there must be cut to its
prefix like everywhere else. ``serve`` gives gunicorn :class:`RedactingLogger`, whose error
log passes every record, its traceback included, through ``redaction.redact_text``.
"""

from __future__ import annotations

import logging
from typing import Any

from gunicorn.glogging import Logger

from sowctl.redaction import redact_text


class RedactFilter(logging.Filter):
    """Rewrites a record's message, traceback and stack with every sowctl secret cut."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_text(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)
        return True


_FILTER = RedactFilter()


class RedactingLogger(Logger):
    """gunicorn's logger; its error log redacted (``setup`` runs again on a reload)."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.error_log.addFilter(_FILTER)  # added once: addFilter skips a filter already there
