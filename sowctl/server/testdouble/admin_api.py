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

import contextlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import bottle

from sowctl.foundation import clock
from sowctl.foundation.errors import Forbidden, InvalidInput, Issue, Unauthorized
from sowctl.operations import Operation
from sowctl.operations.admin import ADMIN
from sowctl.schemas.admin import CheckpointDeleted, FaultConfigOut
from sowctl.schemas.common import dump, parse
from sowctl.server import auth
from sowctl.server.http import json_bytes, parse_query, read_json_body, route_path
from sowctl.server.responses import json_response
from sowctl.server.testdouble import pact, verify, webhooks_admin
from sowctl.server.testdouble.faults import FaultConfig
from sowctl.server.testdouble.host import HostApp
from sowctl.server.testdouble.layer import TestDouble
from sowctl.services import events as outbox
from sowctl.services import sandbox_state, sandboxes

DEFAULT_REQUESTS = 100

# Operation name -> the AdminApi method that serves it (filled by ``handles``).
HANDLERS: dict[str, Callable[..., Any]] = dict(webhooks_admin.HANDLERS)


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
    scope: str | None = None  # a sandbox's organization; None: the full admin token

    def server_wide(self, what: str) -> None:
        """Refuse a sandbox's admin token what changes or shows the whole server."""
        if self.scope is not None:
            raise Forbidden(f"{what} is the whole server's: a sandbox's admin token cannot use it")

    def own(self, organization_id: str | None) -> None:
        """Refuse a sandbox's admin token another organization's credentials."""
        if self.scope is not None and organization_id != self.scope:
            raise Forbidden(
                f"organizationId: this sandbox's admin token acts on organization {self.scope} only"
            )


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


def _feed_organization(request: AdminRequest) -> str | None:
    """Whose events the feed shows: ``organization=``'s (None: every one's); a sandbox's admin
    token sees its own organization's only, and naming another is refused."""
    organization = request.query.organization
    if request.scope is None:
        return organization
    if organization is not None:
        request.own(organization)
    return request.scope


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
                self.app.dispatcher.ensure_connection()
                scope = self.authenticate(environ.get("HTTP_AUTHORIZATION"))
                result = handler(self, self.request(op, params, environ, scope))
                if isinstance(result, bottle.HTTPResponse):  # a stream, made as it is sent
                    return result
                status, body = result if isinstance(result, tuple) else (op.status, result)
                return json_response(status, json_bytes(body), {})
            except Exception as exc:
                return self.app.dispatcher.failure_response(environ, "A", exc, {})

        serve.__name__ = handler.__name__
        serve.__doc__ = op.summary
        return serve

    def request(
        self, op: Operation, params: dict[str, str], environ: dict, scope: str | None
    ) -> AdminRequest:
        query: Any = parse_query(environ.get("QUERY_STRING", ""))
        if op.query is not None and "query" not in op.checked_by_handler:
            query = parse(op.query, query)
        body = None
        if op.body is not None:
            body = read_json_body(environ, op.max_body_bytes or self.settings.max_body_bytes)
            if "body" not in op.checked_by_handler:
                body = parse(op.body, _object(body))
        return AdminRequest(params, query, body, scope)

    def authenticate(self, authorization: str | None) -> str | None:
        """None for the server's admin token, the organization of a live sandbox's; else 401."""
        secret = auth.bearer_secret(authorization)
        if secret is None:
            raise Unauthorized("missing admin token (send Authorization: Bearer <admin token>)")
        if hmac.compare_digest(secret.encode("utf-8"), self._token):
            return None
        scope = sandboxes.scope_of(secret)  # by its hash, as bearer tokens are found
        if scope is None:
            raise Unauthorized("invalid admin token")
        return scope

    def may_upload(self, authorization: str | None) -> bool:
        """Whether ``authorization`` carries the server's admin token: a dataset upload larger
        than an API body is only read from the server's admin (a sandbox's takes an API body's
        size, judged from the head without the database)."""
        secret = auth.bearer_secret(authorization)
        return secret is not None and hmac.compare_digest(secret.encode("utf-8"), self._token)

    # --- data ------------------------------------------------------------------------------

    @handles("admin.reset")
    def reset(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        if request.scope is not None:
            with self.layer.gate.exclusive():
                sandbox_state.empty_organization(request.scope, keep_credentials=True)
                sandbox_state.forget_faults(request.scope)
            return {"message": f"organization {request.scope} reset"}
        with self.layer.gate.exclusive():
            state.reset_database()
            self.layer.restart()
        return {"message": "database reset"}

    @handles("admin.dataset.export")
    def export(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.services.dataset import export_dataset

        return export_dataset(scope=request.scope)  # a sandbox's: its organization's records

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
        if request.scope is not None:
            if not isinstance(data, dict):
                raise InvalidInput(
                    "the request body must be a dataset (a JSON object)", [Issue((), "must be a JSON object")]
                )
            with self.layer.gate.exclusive() if request.query.replace else contextlib.nullcontext():
                return {"imported": sandbox_state.load_dataset(request.scope, data, request.query.replace)}
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
        request.own(body.organizationId)
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
        request.own(organization_id)
        issued = credentials.create_key(organization_id)
        return {"key": issued.secret, "id": issued.id, "organizationId": organization_id}

    # --- faults and clock -------------------------------------------------------------------

    @handles("admin.faults.get")
    def get_faults(self, request: AdminRequest) -> dict[str, Any]:
        if request.scope is not None:
            return self.layer.faults_of(request.scope).to_json()
        return self.layer.faults.to_json()

    @handles("admin.faults.replace")
    @handles("admin.faults.set")
    def set_faults(self, request: AdminRequest) -> dict[str, Any]:
        return self._store_faults(FaultConfig.from_json(request.body), request.scope)

    @handles("admin.faults.clear")
    def clear_faults(self, request: AdminRequest) -> dict[str, Any]:
        return self._store_faults(FaultConfig(), request.scope)

    def _store_faults(self, config: FaultConfig, scope: str | None) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        if scope is not None:  # applied to the requests of this organization's callers only
            stored = FaultConfigOut.model_validate(config.to_json()) if config.active else None
            sandbox_state.set_faults(scope, stored)
            self.layer.sync()
            return self.layer.faults_of(scope).to_json()
        state.write_runtime("faults", config.to_json())
        self.layer.sync()
        return self.layer.faults.to_json()

    @handles("admin.contract.get")
    def get_contract(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        request.server_wide("contract mode")
        return {"mode": self.layer.contract_mode, "departures": state.contract_departures()}

    @handles("admin.contract.set")
    def set_contract(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        request.server_wide("contract mode")
        state.write_runtime("contract", {"mode": request.body.mode})
        self.layer.sync()
        return self.get_contract(request)

    @handles("admin.clock.get")
    def get_clock(self, request: AdminRequest) -> dict[str, Any]:
        return self._clock_json()

    @handles("admin.clock.set")
    def set_clock(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        # One service clock serves every organization (services read it wherever they stamp a
        # time): a sandbox moving it would move every other sandbox's time too.
        request.server_wide("the service clock")
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
        entries = [
            entry for entry in state.recent_requests(keep, request.scope) if not pattern.differences(entry)
        ]
        return entries[-min(int(text), keep) :]

    @handles("admin.requests.pact")
    def pact_contract(self, request: AdminRequest) -> dict[str, Any]:
        return pact.contract(request.query, self.settings.request_log_size)

    @handles("admin.requests.clear")
    def clear_requests(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import state

        return {"deleted": state.clear_requests(request.scope)}

    @handles("admin.requests.verify")
    def verify(self, request: AdminRequest) -> tuple[int, dict[str, Any]]:
        from sowctl.server.testdouble import state

        logged = state.recent_requests(self.settings.request_log_size, request.scope)
        holds, report = verify.verify(request.body, logged)
        return (200 if holds else 409), report

    # --- the changes feed ----------------------------------------------------------------------

    @handles("admin.events.list")
    def events(self, request: AdminRequest) -> dict[str, Any]:
        query = request.query
        organization = _feed_organization(request)
        page = outbox.read_page(query.after, query.limit, organization_id=organization, types=query.type)
        return dump(page)

    @handles("admin.events.stream")
    def event_stream(self, request: AdminRequest) -> bottle.HTTPResponse:
        environ = bottle.request.environ
        organization = _feed_organization(request)
        return self.app.dispatcher.event_streams.respond(environ, organization, request.query, {})

    # --- checkpoints ----------------------------------------------------------------------------

    @handles("admin.checkpoints.list")
    def list_checkpoints(self, request: AdminRequest) -> list[dict[str, Any]]:
        from sowctl.server.testdouble import checkpoints

        if request.scope is not None:
            saved = sandbox_state.list_checkpoints(request.scope)
        else:
            saved = checkpoints.list_checkpoints()
        return [checkpoint.model_dump() for checkpoint in saved]

    @handles("admin.checkpoints.save")
    def save_checkpoint(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        with self.layer.gate.exclusive():  # one consistent state, even on PostgreSQL
            if request.scope is not None:
                return sandbox_state.save_checkpoint(request.scope, request.body.name).model_dump()
            return checkpoints.save(request.body.name).model_dump()

    @handles("admin.checkpoints.restore")
    def restore_checkpoint(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        if request.scope is not None:
            name = checkpoints.check_name(request.params["name"])
            with self.layer.gate.exclusive():
                restored = sandbox_state.restore_checkpoint(request.scope, name)
            self.layer.sync()
        else:
            with self.layer.gate.exclusive():
                restored = checkpoints.restore(request.params["name"])
                self.layer.restart()
                self.layer.sync()
        return restored.model_dump(exclude_unset=True)  # no createdAt: what came back, not when saved

    @handles("admin.checkpoints.delete")
    def delete_checkpoint(self, request: AdminRequest) -> dict[str, Any]:
        from sowctl.server.testdouble import checkpoints

        name = request.params["name"]
        if request.scope is not None:
            sandbox_state.delete_checkpoint(request.scope, checkpoints.check_name(name))
        else:
            checkpoints.delete(name)
        return CheckpointDeleted(deleted=name).model_dump()


# --- sandboxes -------------------------------------------------------------------------------


@handles("admin.sandboxes.create")
def create_sandbox(admin: AdminApi, request: AdminRequest) -> dict[str, Any]:
    request.server_wide("making sandboxes")
    body = _object(request.body if request.body is not None else {})
    name = body.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput.for_field("name", "must be a string")
    return sandboxes.create_sandbox(name, body.get("ttl")).model_dump()


@handles("admin.sandboxes.list")
def list_sandboxes(admin: AdminApi, request: AdminRequest) -> list[dict[str, Any]]:
    live = sandboxes.list_sandboxes()
    # A sandbox's admin token sees its own (the pytest plugin asks).
    return [entry.model_dump() for entry in live if request.scope in (None, entry.organizationId)]


@handles("admin.sandboxes.delete")
def delete_sandbox(admin: AdminApi, request: AdminRequest) -> dict[str, Any]:
    request.server_wide("removing sandboxes")
    with admin.layer.gate.exclusive():
        return sandboxes.delete_sandbox(request.params["organizationId"]).model_dump()


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object", [Issue((), "must be a JSON object")])
    return body
