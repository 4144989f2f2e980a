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

from sowctl.backends.remote import RemoteBackend
from sowctl.conformance.checks import Answer
from sowctl.conformance.scenario import Plan, Run, Scenario
from sowctl.foundation.errors import ServiceUnavailable


def run(backend: RemoteBackend, plan: Plan) -> Run:
    """The scenario against the server of ``backend``, with its HTTP client."""
    return Scenario(_sender(backend), plan, backend.shown_url).play()


def _sender(backend: RemoteBackend) -> Any:
    def send(method: str, path: str, headers: dict[str, str], body: Any) -> Answer:
        url = backend.base_url + path
        try:
            response = backend.client.request(method, url, headers=headers, json=body)
        except httpx.TimeoutException:
            raise ServiceUnavailable(
                f"server at {backend.shown_url} did not answer {method} {path} within {backend.timeout:g} s"
            ) from None
        except httpx.TransportError as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ServiceUnavailable(f"cannot reach server at {backend.shown_url}: {reason}") from None
        headers_seen = {name.lower(): value for name, value in response.headers.items()}
        return Answer(response.status_code, headers_seen, response.content)

    return send
