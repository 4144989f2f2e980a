"""``sowctl conformance``: does a server answer as the service's description says?

A scenario (``scenario``) asks every route of the description (``description``) of any
server, with the CLI's credentials, through the remote backend's HTTP client; each
answer is judged against the description as it comes (``checks``), and two servers'
answers can be set side by side (``compare``). This package knows no command line: the
command (``sowctl.commands.conformance``) reads the options and prints the result.
"""

from __future__ import annotations

from typing import Any

import httpx

from sowctl.backends import remote
from sowctl.backends.remote import RemoteBackend
from sowctl.conformance.checks import Answer
from sowctl.conformance.scenario import Plan, Run, Scenario
from sowctl.foundation.errors import ServiceUnavailable


def run(backend: RemoteBackend, plan: Plan) -> Run:
    """The scenario against the server of ``backend``, with its HTTP client."""
    return Scenario(_sender(backend), plan, backend.shown_url).play()


def admin_answer(backend: RemoteBackend, admin_token: str) -> int | None:
    """The status ``GET /_admin/faults`` answers with ``admin_token``: 200 from a sowctl test
    double that has this admin token (None: no answer at all)."""
    url = backend.base_url + "/_admin/faults"
    try:
        return backend.client.get(url, headers={"Authorization": f"Bearer {admin_token}"}).status_code
    except httpx.HTTPError:
        return None


def _sender(backend: RemoteBackend) -> Any:
    def send(method: str, path: str, headers: dict[str, str], body: Any) -> Answer:
        attempt = 0
        while True:
            response = _request(backend, method, path, headers, body)
            # A rate limit (or a busy server, for a read) says nothing of conformance: wait as
            # the remote backend does, and ask again.
            busy = response.status_code == 429 or (response.status_code == 503 and method == "GET")
            if not busy or attempt >= backend.retries:
                break
            remote._sleep(remote.retry_after_delay(response, attempt))  # the wait tests replace
            attempt += 1
        headers_seen = {name.lower(): value for name, value in response.headers.items()}
        return Answer(response.status_code, headers_seen, response.content)

    return send


def _request(
    backend: RemoteBackend, method: str, path: str, headers: dict[str, str], body: Any
) -> httpx.Response:
    try:
        return backend.client.request(method, backend.base_url + path, headers=headers, json=body)
    except httpx.TimeoutException:
        raise ServiceUnavailable(
            f"server at {backend.shown_url} did not answer {method} {path} within {backend.timeout:g} s"
        ) from None
    except httpx.TransportError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ServiceUnavailable(f"cannot reach server at {backend.shown_url}: {reason}") from None
