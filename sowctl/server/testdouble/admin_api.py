"""The ``/_admin`` API of ``sowctl serve --admin-token TOKEN`` (or ``--admin``): test-suite controls.

Off unless an admin token is set: then every route needs ``Authorization:
Bearer <admin token>`` (compared in constant time; missing or wrong: 401).
Without it the routes do not exist (404, like any unknown route). Bodies and
errors are JSON, errors as ``{"error": message}``. These routes are not part of
the service's API: each is declared in ``sowctl.operations.admin`` (route, models,
status) and routed here to the handler of its name (``handles``); ``/openapi.json``
documents them under their own tag on a server with an admin token.

The operations (reset, datasets, credentials, faults, clock, request log and its
verification, checkpoints) are listed once, in ``sowctl.operations.admin``.

Reset, replace and restore hold the gate exclusive (``sowctl.server.testdouble.reset_gate``):
requests in flight finish first, new ones wait.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import bottle

from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, Issue, Unauthorized
from sowctl.operations import Operation
from sowctl.operations.admin import ADMIN
from sowctl.schemas.common import dump, parse
from sowctl.server import auth
from sowctl.server.http import json_bytes, parse_query, read_json_body, route_path
from sowctl.server.responses import json_response
from sowctl.server.testdouble import verify
from sowctl.server.testdouble.faults import FaultConfig
from sowctl.server.testdouble.host import HostApp
from sowctl.server.testdouble.layer import TestDouble
from sowctl.services import events as outbox

DEFAULT_REQUESTS = 100

# Operation name -> the AdminApi method that serves it (filled by ``handles``).
HANDLERS: dict[str, Callable[..., Any]] = {}


def handles(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Serve the declared admin operation ``name`` (``sowctl.operations.admin``) with the method."""

    def bind(method: Callable[..., Any]) -> Callable[..., Any]:
        HANDLERS[name] = method
        return method

    return bind


@dataclass
class AdminRequest:
    """What a handler gets: path parameters, and the query and body, validated by the declared
    models unless the operation checks them by rules of its own (then as sent)."""

    params: dict[str, str] = field(default_factory=dict)
    query: Any = None
    body: Any = None


def register(app: HostApp, layer: TestDouble) -> None:
    """One route per declared admin operation, none by hand."""
    unserved = sorted(ADMIN.keys() - HANDLERS.keys())
    undeclared = sorted(HANDLERS.keys() - ADMIN.keys())
    if unserved or undeclared:  # a declaration and its handler drifted apart: fail at start-up
        raise RuntimeError(f"admin operations without a handler {unserved}, handlers undeclared {undeclared}")
    admin = AdminApi(app, layer)
    for op in ADMIN.values():
        app.route(route_path(op.path), op.method, admin.route(op), name=op.name)
        if op.max_body_bytes is not None:
            app.body_limits[op.path] = (op.max_body_bytes, admin.may_upload)


class AdminApi:
    def __init__(self, app: HostApp, layer: TestDouble) -> None:
        self.app = app
        self.layer = layer
        self.settings = app.settings
        self._token = (self.settings.admin_token or "").encode("utf-8")

    # --- plumbing -------------------------------------------------------------------------

    def route(self, op: Operation) -> Callable[..., bottle.HTTPResponse]:
        handler = HANDLERS[op.name]

        def serve(**params: str) -> bottle.HTTPResponse:
            environ = bottle.request.environ
            try:
                self.authenticate(environ.get("HTTP_AUTHORIZATION"))
                self.app.dispatcher.ensure_connection()
                result = handler(self, self.request(op, params, environ))
                if isinstance(result, bottle.HTTPResponse):  # a stream, made as it is sent
                    return result
                status, body = result if isinstance(result, tuple) else (op.status, result)
                return json_response(status, json_bytes(body), {})
            except Exception as exc:
                return self.app.dispatcher.failure_response(environ, "A", exc, {})

        serve.__name__ = handler.__name__
        serve.__doc__ = op.summary
        return serve

    def request(self, op: Operation, params: dict[str, str], environ: dict) -> AdminRequest:
        query: Any = parse_query(environ.get("QUERY_STRING", ""))
        if op.query is not None and "query" not in op.checked_by_handler:
            query = parse(op.query, query)
        body = None
        if op.body is not None:
            body = read_json_body(environ, op.max_body_bytes or self.settings.max_body_bytes)
            if "body" not in op.checked_by_handler:
                body = parse(op.body, _object(body))
        return AdminRequest(params, query, body)

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

    # --- data ------------------------------------------------------------------------------

    @handles("admin.reset")
    def reset(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        with self.layer.gate.exclusive():
            state.reset_database()
            self.layer.restart()
        return {"message": "database reset"}

    @handles("admin.dataset.export")
    def export(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.services.dataset import export_dataset

        return export_dataset()

    @handles("admin.dataset.load")
    def load(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.services.dataset import import_dataset
        from sowctl.services.dataset.replace import replace_dataset
        from sowctl.storage.database import write_transaction

        data = request.body
        if data is None:
            raise InvalidInput(
                "the request body must be a dataset (a JSON object)", [Issue((), "is required")]
            )
        if not request.query.replace:
            return {"imported": import_dataset(data)}
        with self.layer.gate.exclusive(), write_transaction("global"):  # reset and load, or neither
            counts = replace_dataset(data)
            self.layer.restart()
        return {"imported": counts}

    @handles("admin.tokens.create")
    def token(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.services import credentials

        body = request.body
        role = body.role or "member"
        issued = credentials.create_token(body.userId, body.organizationId, role)
        return {
            "token": issued.secret,
            "id": issued.id,
            "userId": body.userId,
            "organizationId": body.organizationId,
            "role": role,
        }

    @handles("admin.keys.create")
    def key(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.services import credentials

        organization_id = request.body.organizationId
        issued = credentials.create_key(organization_id)
        return {"key": issued.secret, "id": issued.id, "organizationId": organization_id}

    # --- faults and clock -------------------------------------------------------------------

    @handles("admin.faults.get")
    def get_faults(self, request: AdminRequest) -> dict[str, Any]:
        return self.layer.faults.to_json()

    @handles("admin.faults.replace")
    @handles("admin.faults.set")
    def set_faults(self, request: AdminRequest) -> dict[str, Any]:
        return self._store_faults(FaultConfig.from_json(request.body))

    @handles("admin.faults.clear")
    def clear_faults(self, request: AdminRequest) -> dict[str, Any]:
        return self._store_faults(FaultConfig())

    def _store_faults(self, config: FaultConfig) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        state.write_runtime("faults", config.to_json())
        self.layer.sync()
        return self.layer.faults.to_json()

    @handles("admin.contract.get")
    def get_contract(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        return {"mode": self.layer.contract_mode, "departures": state.contract_departures()}

    @handles("admin.contract.set")
    def set_contract(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        state.write_runtime("contract", {"mode": request.body.mode})
        self.layer.sync()
        return self.get_contract(request)

    @handles("admin.clock.get")
    def get_clock(self, request: AdminRequest) -> dict[str, Any]:
        return self._clock_json()

    @handles("admin.clock.set")
    def set_clock(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        value = request.body.now
        if value is not None:
            value = clock.format_timestamp(clock.parse_clock(value, "now"))
        state.write_runtime("clock", {"now": value})
        self.layer.sync()
        return self._clock_json()

    def _clock_json(self) -> dict[str, Any]:
        return {"now": clock.format_timestamp(clock.now()), "frozen": self.layer.fixed_now is not None}

    # --- request log -------------------------------------------------------------------------

    @handles("admin.requests.list")
    def requests(self, request: AdminRequest) -> list[dict[str, Any]]:
        from sowctl.server.testdouble import state

        query = request.query
        text = query.get("limit", str(DEFAULT_REQUESTS)).strip()
        keep = self.settings.request_log_size
        # isascii: "²".isdigit() is true but int("²") fails; len: no int() of 5,000 digits
        if not (text.isascii() and text.isdigit() and len(text) <= 10) or not 1 <= int(text) <= 10**9:
            raise InvalidInput.for_field("limit", f"must be an integer from 1 to {keep}")
        pattern = verify.filter_query(query)
        entries = [entry for entry in state.recent_requests(keep) if not pattern.differences(entry)]
        return entries[-min(int(text), keep) :]

    @handles("admin.requests.clear")
    def clear_requests(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        return {"deleted": state.clear_requests()}

    @handles("admin.requests.verify")
    def verify(self, request: AdminRequest) -> tuple[int, dict[str, Any]]:
        from sowctl.server.testdouble import state

        holds, report = verify.verify(request.body, state.recent_requests(self.settings.request_log_size))
        return (200 if holds else 409), report

    # --- the changes feed ----------------------------------------------------------------------

    @handles("admin.events.list")
    def events(self, request: AdminRequest) -> dict[str, Any]:
        query = request.query
        page = outbox.read_page(
            query.after, query.limit, organization_id=query.organization, types=query.type
        )
        return dump(page)

    @handles("admin.events.stream")
    def event_stream(self, request: AdminRequest) -> bottle.HTTPResponse:
        environ = bottle.request.environ
        query = request.query
        return self.app.dispatcher.event_streams.respond(environ, query.organization, query, {})

    # --- checkpoints ----------------------------------------------------------------------------

    @handles("admin.checkpoints.list")
    def list_checkpoints(self, request: AdminRequest) -> list[dict[str, Any]]:
        from sowctl.server.testdouble import checkpoints

        return checkpoints.list_checkpoints()

    @handles("admin.checkpoints.save")
    def save_checkpoint(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        with self.layer.gate.exclusive():  # one consistent state, even on PostgreSQL
            return checkpoints.save(request.body.name)

    @handles("admin.checkpoints.restore")
    def restore_checkpoint(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        with self.layer.gate.exclusive():
            restored = checkpoints.restore(request.params["name"])
            self.layer.restart()
            self.layer.sync()
        return restored

    @handles("admin.checkpoints.delete")
    def delete_checkpoint(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        name = request.params["name"]
        checkpoints.delete(name)
        return {"deleted": name}


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object", [Issue((), "must be a JSON object")])
    return body
