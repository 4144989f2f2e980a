"""A streamed answer read as it comes (the changes feed's Server-Sent Events, ``sowctl events tail``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from sowctl.backends.remote import RemoteBackend, _RawRoute
from sowctl.foundation.errors import ServiceUnavailable
from sowctl.operations import Operation

# An event stream sends a keep-alive every 15 s: a read waits that long and more.
READ_TIMEOUT = 60.0


def stream_lines(
    backend: RemoteBackend,
    route: Operation | None,
    path: str,
    query: dict[str, str],
    headers: dict[str, str] | None = None,
) -> Iterator[str]:
    """The lines of ``GET path`` as the server sends them, until it ends the answer. ``route``:
    a declared operation, sent with its group's credentials; None: ``headers`` carry them (the
    admin token). A refusal raises what ``call`` would; a connection lost, ServiceUnavailable."""
    op: Any = route or _RawRoute(method="GET", path=path)
    sent = {**(backend.auth_headers(route) if route is not None else {}), **(headers or {})}
    sent["Accept"] = "text/event-stream"
    timeout = httpx.Timeout(backend.timeout, read=max(backend.timeout, READ_TIMEOUT))
    url = backend.base_url + path
    try:
        with backend.client.stream(
            "GET", url, params=query or None, headers=sent, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise backend._error(op, response, attempts=1)
            yield from response.iter_lines()
    except httpx.TimeoutException:
        raise ServiceUnavailable(
            f"server at {backend.shown_url} sent nothing on the event stream for {READ_TIMEOUT:g} s"
        ) from None
    except httpx.TransportError as exc:
        raise ServiceUnavailable(f"event stream from server at {backend.shown_url} failed: {exc}") from None
