"""``AdminClient``: the ``/_admin`` API of ``sowctl serve --admin`` from Python, for test suites.

Every method raises ``AdminError`` (with the server's message) on an unexpected
answer, except ``verify``, which is an assertion: it raises ``VerificationError``
(an ``AssertionError``, so pytest reports it as a test failure) whose message says
what was expected, what was found, and how the closest recorded requests differed:

    expected exactly 1 request matching POST /api/sow/*/items with body {"title": "Walls"}, found 0
    closest recorded requests:
      #4 POST /api/sow/sow-1/items -> 201
         body.title: expected "Walls", got "Wall"
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from sowctl.operations.admin import ADMIN, path_of
from sowctl.schemas.events import stream_messages
from sowctl.testing.matching import differences, no_match_message

EVENT_POLL_SECONDS = 0.1


class AdminError(Exception):
    """The admin API refused a request (the message is the server's; ``status``, its HTTP status)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class VerificationError(AssertionError):
    """A request verification that did not hold; ``report`` is the server's JSON."""

    def __init__(self, message: str, report: dict[str, Any]) -> None:
        super().__init__(message)
        self.report = report


class AdminClient:
    """The admin API at ``url`` with ``admin_token``; each method sends one operation that
    ``sowctl.operations.admin`` declares (its method, path and success status)."""

    def __init__(
        self,
        url: str,
        admin_token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {admin_token}"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _response(
        self, name: str, path_params: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        op = ADMIN[name]
        return self._http.request(op.method, path_of(name, path_params), **kwargs)

    def _send(self, name: str, path_params: dict[str, str] | None = None, **kwargs: Any) -> Any:
        """Send operation ``name``; its answer's JSON, or AdminError unless its declared status."""
        response = self._response(name, path_params, **kwargs)
        op = ADMIN[name]
        if response.status_code != op.status:
            path = path_of(name, path_params)
            message = f"{op.method} {path}: HTTP {response.status_code}: {_error_text(response)}"
            raise AdminError(message, response.status_code)
        return response.json() if response.content else None

    def call(
        self,
        name: str,
        path_params: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        """Send the declared operation ``name`` as given (the MCP admin tools): its answer's
        JSON; AdminError for another status, VerificationError for a verification that fails."""
        if name == "admin.requests.verify":
            return self._verify(body)
        sent = {"json": body} if ADMIN[name].body is not None else {}
        return self._send(name, path_params, params=query or None, **sent)

    # --- data and credentials ------------------------------------------------------------

    def reset(self) -> None:
        self._send("admin.reset")

    def load(self, dataset: dict[str, Any], *, replace: bool = False) -> dict[str, int]:
        query = {"replace": "true"} if replace else None
        return self._send("admin.dataset.load", params=query, json=dataset)["imported"]

    def export(self) -> dict[str, Any]:
        return self._send("admin.dataset.export")

    def token(self, user_id: str, organization_id: str, role: str = "member") -> str:
        body = {"userId": user_id, "organizationId": organization_id, "role": role}
        return self._send("admin.tokens.create", json=body)["token"]

    def api_key(self, organization_id: str) -> str:
        return self._send("admin.keys.create", json={"organizationId": organization_id})["key"]

    # --- faults and clock ---------------------------------------------------------------------

    def set_faults(self, config: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """Replace the fault config: ``set_faults(rate=1, status=503, count=2, routes=["GET /projects"])``."""
        return self._send("admin.faults.replace", json={**(config or {}), **fields})

    def faults(self) -> dict[str, Any]:
        """The fault config in force."""
        return self._send("admin.faults.get")

    def clear_faults(self) -> None:
        self._send("admin.faults.clear")

    def freeze_clock(self, now: str | None) -> dict[str, Any]:
        """Freeze the service clock at ``now`` (a timestamp), or let it run again (None)."""
        return self._send("admin.clock.set", json={"now": now})

    def clock(self) -> dict[str, Any]:
        """The service clock: ``{"now": timestamp, "frozen": bool}``."""
        return self._send("admin.clock.get")

    # --- contract mode ------------------------------------------------------------------------

    def set_contract_mode(self, mode: str) -> dict[str, Any]:
        """``off``, ``report`` (mark what relies on more than the service's description) or
        ``strict`` (refuse it); returns what ``contract()`` does."""
        return self._send("admin.contract.set", json={"mode": mode})

    def contract(self) -> dict[str, Any]:
        """Contract mode and, by departure, how many logged requests relied on it."""
        return self._send("admin.contract.get")

    # --- checkpoints --------------------------------------------------------------------------

    def checkpoint(self, name: str) -> dict[str, Any]:
        return self._send("admin.checkpoints.save", json={"name": name})

    def restore(self, name: str) -> dict[str, Any]:
        return self._send("admin.checkpoints.restore", {"name": name})

    def checkpoints(self) -> list[dict[str, Any]]:
        return self._send("admin.checkpoints.list")

    def delete_checkpoint(self, name: str) -> None:
        self._send("admin.checkpoints.delete", {"name": name})

    # --- webhooks --------------------------------------------------------------------------------

    def create_webhook(
        self,
        url: str,
        organization_id: str,
        *,
        event_types: list[str] | None = None,
        signing: str = "standard-webhooks",
        secret: str | None = None,
        authorization: str | None = None,
        max_failures: int | None = None,
    ) -> dict[str, Any]:
        """Subscribe ``url`` to an organization's events; the answer holds the signing secret
        (``secret``), which is never shown again."""
        body = {
            "url": url,
            "organizationId": organization_id,
            "eventTypes": event_types,
            "signing": signing,
            "secret": secret,
            "authorization": authorization,
            "maxFailures": max_failures,
        }
        return self._send("admin.webhooks.create", json={k: v for k, v in body.items() if v is not None})

    def webhooks(self) -> list[dict[str, Any]]:
        return self._send("admin.webhooks.list")

    def webhook(self, subscription_id: str) -> dict[str, Any]:
        return self._send("admin.webhooks.get", {"id": subscription_id})

    def delete_webhook(self, subscription_id: str) -> None:
        self._send("admin.webhooks.delete", {"id": subscription_id})

    def resume_webhook(self, subscription_id: str) -> dict[str, Any]:
        return self._send("admin.webhooks.resume", {"id": subscription_id})

    def webhook_deliveries(self, subscription_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The subscription's last ``limit`` delivery attempts, oldest first."""
        return self._send("admin.webhooks.deliveries", {"id": subscription_id}, params={"limit": str(limit)})

    def redeliver(self, subscription_id: str, event_id: str) -> dict[str, Any]:
        return self._send("admin.webhooks.redeliver", {"id": subscription_id}, json={"eventId": event_id})

    def set_delivery_faults(self, *rules: dict[str, Any]) -> dict[str, Any]:
        """Replace the delivery faults: ``set_delivery_faults({"kind": "duplicate", "count": 1})``."""
        return self._send("admin.webhooks.faults.set", json={"rules": list(rules)})

    def delivery_faults(self) -> dict[str, Any]:
        return self._send("admin.webhooks.faults.get")

    def clear_delivery_faults(self) -> None:
        self._send("admin.webhooks.faults.clear")

    # --- sandboxes (the server's admin token only) ---

    def create_sandbox(self, *, ttl: str | int | None = None, name: str | None = None) -> dict[str, Any]:
        """A sandbox: ``organizationId``, ``adminToken`` (scoped to it), ``token``, ``apiKey``,
        ``userId`` and ``expiresAt``; the secrets are in this answer only."""
        body = {key: value for key, value in (("ttl", ttl), ("name", name)) if value is not None}
        return self._send("admin.sandboxes.create", json=body)

    def sandboxes(self) -> list[dict[str, Any]]:
        return self._send("admin.sandboxes.list")

    def delete_sandbox(self, organization_id: str) -> None:
        self._send("admin.sandboxes.delete", {"organizationId": organization_id})

    # --- the changes feed ----------------------------------------------------------------------

    def events(
        self,
        since: str | None = None,
        limit: int = 100,
        *,
        type: str | None = None,
        organization: str | None = None,
    ) -> dict[str, Any]:
        """A page of the changes feed: ``{"events", "lastEventId", "hasMore"}``."""
        query = {"since": since, "limit": str(limit), "type": type, "organization": organization}
        return self._send("admin.events.list", params={k: v for k, v in query.items() if v is not None})

    def stream_events(
        self, since: str | None = None, *, type: str | None = None, organization: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The changes feed's events as the server streams them (Server-Sent Events), until the
        stream ends (after a few minutes: call again with the last event's id as ``since``)."""
        op = ADMIN["admin.events.stream"]
        query = {k: v for k, v in {"since": since, "type": type, "organization": organization}.items() if v}
        with self._http.stream(op.method, op.path, params=query) as response:
            if response.status_code != op.status:
                response.read()
                message = f"{op.method} {op.path}: HTTP {response.status_code}: {_error_text(response)}"
                raise AdminError(message, response.status_code)
            for _id, event in stream_messages(response.iter_lines()):
                yield event

    # --- the request log ----------------------------------------------------------------------

    def requests(self, limit: int = 100, **filters: Any) -> list[dict[str, Any]]:
        """The last requests matching ``method``, ``path`` (fnmatch), ``status``, ``group``, ``caller``."""
        query = {"limit": str(limit), **{k: str(v) for k, v in filters.items() if v is not None}}
        return self._send("admin.requests.list", params=query)

    def pact(
        self, consumer: str | None = None, provider: str | None = None, **filters: Any
    ) -> dict[str, Any]:
        """The logged requests matching the filters as a Pact V3 document (``consumer`` and
        ``provider`` name its parties; ``state=NAME``: the provider state its first interaction
        names); ``metadata.sowctl.omitted`` lists what was left out."""
        named = {"consumer": consumer, "provider": provider, **filters}
        return self._send(
            "admin.requests.pact", params={k: str(v) for k, v in named.items() if v is not None}
        )

    def clear_requests(self) -> None:
        self._send("admin.requests.clear")

    def verify(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        body: Any = ...,
        status: int | str | None = None,
        group: str | None = None,
        caller: str | None = None,
        exactly: int | None = None,
        at_least: int | None = None,
        at_most: int | None = None,
    ) -> dict[str, Any]:
        """Assert that the server received requests matching the pattern (default: at least one).

        ``body`` is a subset of the request body. Returns the report when it holds;
        raises ``VerificationError`` with the near-miss report when it does not.
        """
        __tracebackhide__ = True  # pytest: the failure points at the test's line, not here
        pattern: dict[str, Any] = {
            "method": method,
            "path": path,
            "query": query,
            "headers": headers,
            "status": status,
            "group": group,
            "caller": caller,
            "exactly": exactly,
            "atLeast": at_least,
            "atMost": at_most,
        }
        pattern = {key: value for key, value in pattern.items() if value is not None}
        if body is not ...:
            pattern["body"] = body
        return self._verify(pattern)

    def _verify(self, pattern: Any) -> dict[str, Any]:
        __tracebackhide__ = True
        response = self._response("admin.requests.verify", json=pattern)
        if response.status_code == 200:
            return response.json()
        if response.status_code != 409:
            op = ADMIN["admin.requests.verify"]
            message = f"{op.method} {op.path}: HTTP {response.status_code}: {_error_text(response)}"
            raise AdminError(message, response.status_code)
        report = response.json()
        raise VerificationError(near_miss_message(report), report)

    # --- waiting for an event ------------------------------------------------------------------

    def wait_for_event(
        self, type: str | None = None, *, timeout: float = 5.0, organization: str | None = None, **fields: Any
    ) -> dict[str, Any]:
        """The first event in the feed matching ``type`` and ``fields`` (each a subset of the
        event: ``resourceId=...``, ``data={"status": "done"}``), waiting up to ``timeout``
        seconds; AssertionError with the closest events when none comes."""
        __tracebackhide__ = True
        pattern = {**({"type": type} if type is not None else {}), **fields}
        seen: list[dict[str, Any]] = []
        since: str | None = None
        deadline = time.monotonic() + timeout
        while True:
            page = self.events(since=since, limit=1000, organization=organization)
            for event in page["events"]:
                if not differences(pattern, event):
                    return event
            seen = (seen + page["events"])[-1000:]
            since = page.get("lastEventId") or since
            if not page.get("hasMore"):
                if time.monotonic() >= deadline:
                    raise AssertionError(no_match_message("event", pattern, seen, timeout))
                time.sleep(EVENT_POLL_SECONDS)


def near_miss_message(report: dict[str, Any]) -> str:
    """The text of a failed verification: what was expected, and the closest requests."""
    lines = [report.get("error", "request verification failed")]
    closest = report.get("closest") or []
    if closest:
        lines.append("closest recorded requests:")
        for entry in closest:
            lines.append(f"  {_request_line(entry)}")
            lines.extend(f"     {difference}" for difference in entry.get("differences", []))
    elif report.get("requests"):
        lines.append("matching requests:")
        lines.extend(f"  {_request_line(entry)}" for entry in report["requests"])
    else:
        lines.append("no request was recorded (the request log is empty)")
    return "\n".join(lines)


def _request_line(entry: dict[str, Any]) -> str:
    query = entry.get("query") or {}
    target = entry.get("path", "?") + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
    status = entry.get("status")
    line = (
        f"#{entry.get('id')} {entry.get('method')} {target} -> {status if status is not None else 'dropped'}"
    )
    body = entry.get("requestBody")
    if body is not None:
        text = json.dumps(body, ensure_ascii=False)
        line += f"  body {text if len(text) <= 100 else text[:97] + '...'}"
    return line


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"]
    return json.dumps(body)[:200]
