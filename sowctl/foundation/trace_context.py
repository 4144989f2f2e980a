"""The W3C ``traceparent`` of the request a thread is serving, for what the core records on its
behalf (an event, whose webhook deliveries then carry it). Set by the server around a request;
None outside one (the CLI's local mode, a request without a well-formed header)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("sowctl_traceparent", default=None)


def current() -> str | None:
    return _current.get()


@contextlib.contextmanager
def serving(traceparent: str | None) -> Iterator[None]:
    """The request's ``traceparent`` (already checked well formed) for the time it is served."""
    token = _current.set(traceparent)
    try:
        yield
    finally:
        _current.reset(token)
