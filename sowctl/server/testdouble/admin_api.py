"""The ``/_admin`` API of ``sowctl serve --admin-token TOKEN`` (or ``--admin``): test-suite controls.

Off unless an admin token is set: then every route needs ``Authorization:
Bearer <admin token>`` (compared in constant time; missing or wrong: 401).
Without it the routes do not exist (404, like any unknown route). Bodies and
errors are JSON, errors as ``{"error": message}``. These routes are not part of
the service's API and are not in ``/openapi.json``.

Routes:

* ``POST /_admin/reset``: empty every table (data, tokens, keys, rate counters,
  request log) and restore the start-up faults, clock and seed.
* ``POST /_admin/dataset[?replace=true]``: load a dataset, all or
  nothing; ``replace`` resets first, in the same transaction. ``GET``: export.
* ``POST /_admin/tokens`` ``{"userId", "organizationId", "role"}`` -> 201 ``{"token", "id", ...}``;
  ``POST /_admin/keys`` ``{"organizationId"}`` -> 201 ``{"key", "id", "organizationId"}``.
* ``GET/PUT/POST/DELETE /_admin/faults``: show, replace, clear the latency and fault config.
* ``GET/POST /_admin/clock``: show, or set ``{"now": timestamp}`` / unfreeze ``{"now": null}``.
* ``GET/DELETE /_admin/requests[?limit=N&method=&path=&status=&group=&caller=]``: the last N API
  requests (default 100) that match the filters, oldest first; clear.
* ``POST /_admin/requests/verify`` ``{pattern, "exactly"|"atLeast"|"atMost": n}``: 200 when the
  count holds, 409 with the closest requests and what differed (``sowctl.server.testdouble.verify``).
* ``GET/POST /_admin/checkpoints`` ``{"name"}``, ``POST /_admin/checkpoints/NAME/restore``,
  ``DELETE /_admin/checkpoints/NAME``: save, restore, list and drop whole states
  (``sowctl.server.testdouble.checkpoints``).

Reset, replace and restore hold the gate exclusive (``sowctl.server.testdouble.reset_gate``):
requests in flight finish first, new ones wait.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any, overload

import bottle

from sowctl.foundation import clock
from sowctl.foundation.budgets import MAX_DATASET_BYTES
from sowctl.foundation.errors import InvalidInput, Issue, Unauthorized
from sowctl.server import auth
from sowctl.server.http import json_bytes, parse_query, read_json_body
from sowctl.server.responses import json_response
from sowctl.server.testdouble import verify
from sowctl.server.testdouble.faults import FaultConfig
from sowctl.server.testdouble.host import HostApp
from sowctl.server.testdouble.layer import TestDouble

DEFAULT_REQUESTS = 100
TRUE_WORDS = frozenset({"1", "true", "yes"})
FALSE_WORDS = frozenset({"", "0", "false", "no"})


def register(app: HostApp, layer: TestDouble) -> None:
    admin = AdminApi(app, layer)
    routes: list[tuple[str, str, Callable[..., Any]]] = [
        ("/_admin/reset", "POST", admin.reset),
        ("/_admin/dataset", "GET", admin.export),
        ("/_admin/dataset", "POST", admin.load),
        ("/_admin/tokens", "POST", admin.token),
        ("/_admin/keys", "POST", admin.key),
        ("/_admin/faults", "GET", admin.get_faults),
        ("/_admin/faults", "PUT", admin.set_faults),
        ("/_admin/faults", "POST", admin.set_faults),
        ("/_admin/faults", "DELETE", admin.clear_faults),
        ("/_admin/clock", "GET", admin.get_clock),
        ("/_admin/clock", "POST", admin.set_clock),
        ("/_admin/requests", "GET", admin.requests),
        ("/_admin/requests", "DELETE", admin.clear_requests),
        ("/_admin/requests/verify", "POST", admin.verify),
        ("/_admin/checkpoints", "GET", admin.list_checkpoints),
        ("/_admin/checkpoints", "POST", admin.save_checkpoint),
        ("/_admin/checkpoints/<name>/restore", "POST", admin.restore_checkpoint),
        ("/_admin/checkpoints/<name>", "DELETE", admin.delete_checkpoint),
    ]
    for path, method, handler in routes:
        app.route(path, method, admin.wrap(handler), name=f"admin {method} {path}")
    app.body_limits["/_admin/dataset"] = (MAX_DATASET_BYTES, admin.may_upload)


class AdminApi:
    def __init__(self, app: HostApp, layer: TestDouble) -> None:
        self.app = app
        self.layer = layer
        self.settings = app.settings
        self._token = (self.settings.admin_token or "").encode("utf-8")

    # --- plumbing -------------------------------------------------------------------------

    def wrap(self, handler: Callable[..., Any]) -> Callable[..., bottle.HTTPResponse]:
        def route(**params: str) -> bottle.HTTPResponse:

            environ = bottle.request.environ
            try:
                self.authenticate(environ.get("HTTP_AUTHORIZATION"))
                self.app.dispatcher.ensure_connection()
                result = handler(**params)
                status, body = result if isinstance(result, tuple) else (200, result)
                return json_response(status, json_bytes(body), {})
            except Exception as exc:
                return self.app.dispatcher.failure_response(environ, "A", exc, {})

        route.__name__ = handler.__name__
        return route

    def authenticate(self, authorization: str | None) -> None:
        secret = auth.bearer_secret(authorization)
        if secret is None:
            raise Unauthorized("missing admin token (send Authorization: Bearer <admin token>)")
        if not hmac.compare_digest(secret.encode("utf-8"), self._token):
            raise Unauthorized("invalid admin token")

    def may_upload(self, authorization: str | None) -> bool:
        """Whether ``authorization`` carries the admin token: a dataset upload larger than
        an API body is only read from the admin."""
        try:
            self.authenticate(authorization)
        except Unauthorized:
            return False
        return True

    def body(self, max_bytes: int | None = None) -> Any:
        return read_json_body(bottle.request.environ, max_bytes or self.settings.max_body_bytes)

    def query(self) -> dict[str, str]:
        return parse_query(bottle.request.environ.get("QUERY_STRING", ""))

    # --- data ------------------------------------------------------------------------------

    def reset(self) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        with self.layer.gate.exclusive():
            state.reset_database()
            self.layer.restart()
        return {"message": "database reset"}

    def export(self) -> dict[str, Any]:
        from sowctl.services.dataset import export_dataset

        return export_dataset()

    def load(self) -> dict[str, Any]:
        from sowctl.services.dataset import import_dataset
        from sowctl.services.dataset.replace import replace_dataset
        from sowctl.storage.database import write_transaction

        given = self.query().get("replace", "").strip().lower()
        if given not in TRUE_WORDS | FALSE_WORDS:
            raise InvalidInput.for_field("replace", "must be true or false")
        replace = given in TRUE_WORDS
        data = self.body(MAX_DATASET_BYTES)
        if data is None:
            raise InvalidInput(
                "the request body must be a dataset (a JSON object)", [Issue((), "is required")]
            )
        if not replace:
            return {"imported": import_dataset(data)}
        with self.layer.gate.exclusive(), write_transaction("global"):  # reset and load, or neither
            counts = replace_dataset(data)
            self.layer.restart()
        return {"imported": counts}

    def token(self) -> tuple[int, dict[str, Any]]:
        from sowctl.services import credentials

        body = _object(self.body())
        user_id = _text(body, "userId")
        organization_id = _text(body, "organizationId")
        role = _text(body, "role", required=False) or "member"
        issued = credentials.create_token(user_id, organization_id, role)
        return 201, {
            "token": issued.secret,
            "id": issued.id,
            "userId": user_id,
            "organizationId": organization_id,
            "role": role,
        }

    def key(self) -> tuple[int, dict[str, Any]]:
        from sowctl.services import credentials

        organization_id = _text(_object(self.body()), "organizationId")
        issued = credentials.create_key(organization_id)
        return 201, {"key": issued.secret, "id": issued.id, "organizationId": organization_id}

    # --- faults and clock -------------------------------------------------------------------

    def get_faults(self) -> dict[str, Any]:
        return self.layer.faults.to_json()

    def set_faults(self) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        config = FaultConfig.from_json(self.body())
        state.write_runtime("faults", config.to_json())
        self.layer.sync()
        return self.layer.faults.to_json()

    def clear_faults(self) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        state.write_runtime("faults", FaultConfig().to_json())
        self.layer.sync()
        return self.layer.faults.to_json()

    def get_clock(self) -> dict[str, Any]:
        return self._clock_json()

    def set_clock(self) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        body = _object(self.body())
        if "now" not in body:
            raise InvalidInput.for_field(
                "now", 'is required: a timestamp such as "2026-01-01T00:00:00Z", or null'
            )
        value = body["now"]
        if value is not None:
            if not isinstance(value, str):
                raise InvalidInput.for_field("now", "must be a timestamp string or null")
            value = clock.format_timestamp(clock.parse_clock(value, "now"))
        state.write_runtime("clock", {"now": value})
        self.layer.sync()
        return self._clock_json()

    def _clock_json(self) -> dict[str, Any]:
        return {"now": clock.format_timestamp(clock.now()), "frozen": self.layer.fixed_now is not None}

    # --- request log -------------------------------------------------------------------------

    def requests(self) -> list[dict[str, Any]]:
        from sowctl.server.testdouble import state

        query = self.query()
        text = query.get("limit", str(DEFAULT_REQUESTS)).strip()
        keep = self.settings.request_log_size
        # isascii: "²".isdigit() is true but int("²") fails; len: no int() of 5,000 digits
        if not (text.isascii() and text.isdigit() and len(text) <= 10) or not 1 <= int(text) <= 10**9:
            raise InvalidInput.for_field("limit", f"must be an integer from 1 to {keep}")
        pattern = verify.filter_query(query)
        entries = [entry for entry in state.recent_requests(keep) if not pattern.differences(entry)]
        return entries[-min(int(text), keep) :]

    def clear_requests(self) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        return {"deleted": state.clear_requests()}

    def verify(self) -> tuple[int, dict[str, Any]]:
        from sowctl.server.testdouble import state

        holds, report = verify.verify(self.body(), state.recent_requests(self.settings.request_log_size))
        return (200 if holds else 409), report

    # --- checkpoints ----------------------------------------------------------------------------

    def list_checkpoints(self) -> list[dict[str, Any]]:
        from sowctl.server.testdouble import checkpoints

        return checkpoints.list_checkpoints()

    def save_checkpoint(self) -> tuple[int, dict[str, Any]]:
        from sowctl.server.testdouble import checkpoints

        name = checkpoints.check_name(_object(self.body()).get("name"))
        with self.layer.gate.exclusive():  # one consistent state, even on PostgreSQL
            return 201, checkpoints.save(name)

    def restore_checkpoint(self, name: str) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        with self.layer.gate.exclusive():
            restored = checkpoints.restore(name)
            self.layer.restart()
            self.layer.sync()
        return restored

    def delete_checkpoint(self, name: str) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        checkpoints.delete(name)
        return {"deleted": name}


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object", [Issue((), "must be a JSON object")])
    return body


@overload
def _text(body: dict[str, Any], name: str) -> str: ...
@overload
def _text(body: dict[str, Any], name: str, *, required: bool) -> str | None: ...
def _text(body: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise InvalidInput.for_field(name, "is required")
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput.for_field(name, "must be a non-empty string")
    return value.strip()
