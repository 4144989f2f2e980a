"""What an application hands the engine besides its WSGI callable: the one small interface."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

Headers = list[tuple[str, str]]

# Set in a request's environ when the engine cut its answer short: "too-slow" (a client that
# took it too slowly), "gone" (the client went away), "failed" (the application failed
# mid-answer) or "busy" (no thread for its next piece in time); an access log reads it on close().
CUT_SHORT_KEY = "sowctl.engine.cut_short"


class Pause(bytes):
    """A body piece of no bytes that tells the engine: send what came before it now, and ask
    for the next piece only after ``seconds``, no thread held meanwhile. For a body that
    waits for news (an event stream): between two looks it costs a timer, not a thread.
    Another WSGI server sees an empty piece (so such a body waits itself there: see
    ``PAUSE_KEY``)."""

    seconds: float

    def __new__(cls, seconds: float) -> Pause:
        piece = super().__new__(cls, b"")
        piece.seconds = seconds
        return piece


# Set (True) in the environ of every request the engine runs: its bodies may yield ``Pause``.
PAUSE_KEY = "sowctl.engine.pause"


@dataclass(frozen=True)
class Refusal:
    """An answer the engine gives itself, before or instead of the application's."""

    status: int
    message: str
    retry_after: int | None = None
    # For 413: the largest body the route takes.
    limit: int | None = None


def plain_answer(path: str, refusal: Refusal) -> tuple[Headers, bytes]:
    """``{"error": message}``: the wording of an application that brings none of its own."""
    body = json.dumps({"error": refusal.message}).encode()
    headers = [("Content-Type", "application/json")]
    if refusal.retry_after is not None:
        headers.append(("Retry-After", str(refusal.retry_after)))
    return headers, body


def _by_host(environ: dict[str, Any]) -> Hashable:
    return environ.get("REMOTE_ADDR")


def _no_log(client: str, method: str, target: str, protocol: str, status: int, headers: Headers) -> None:
    return None


@dataclass(frozen=True)
class Hooks:
    """``answer(path, refusal)``: the headers and body of a refusal to a request for ``path``
    (the engine adds ``Content-Length`` and, where it closes the connection, ``Connection``).
    ``caller(environ)``: who sent a request, for turns and the processor share (an environ
    whose body is already read; only its head may be used). ``body_limit(method, path,
    authorization)``: the largest body the request may carry, or a Refusal to answer before
    reading any of it. ``heavy(method, path, body_bytes)``: whether a request is heavy enough
    to run in a helper process (``sowctl.engine.heavy``; None: never, whatever its caller
    spent). ``on_refusal(client, method, target, protocol, status, headers)``: log a request
    the engine answered itself
    (``headers``: those of the answer ``answer`` made)."""

    answer: Callable[[str, Refusal], tuple[Headers, bytes]] = plain_answer
    caller: Callable[[dict[str, Any]], Hashable] = _by_host
    body_limit: Callable[[str, str, str | None], int | Refusal] | None = None
    heavy: Callable[[str, str, int], bool | None] | None = None
    on_refusal: Callable[[str, str, str, str, int, Headers], None] = _no_log
