"""granian's own log lines: on stderr, warnings and errors only, under the one redaction rule."""

from __future__ import annotations

import logging
from typing import Any

from sowctl.foundation.redaction import redact_text


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


def config() -> dict[str, Any]:
    """A ``logging.config`` dict for granian's loggers (stdout carries only what serve prints)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact": {"()": RedactFilter}},
        "formatters": {"plain": {"format": "[server] %(levelname)s %(message)s"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "plain",
                "filters": ["redact"],
            }
        },
        "loggers": {
            "_granian": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
            "granian.access": {"handlers": ["stderr"], "level": "CRITICAL", "propagate": False},
        },
    }
