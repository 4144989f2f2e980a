"""The test double's admin API (``/_admin``), declared once: route, models and answer per operation.

These are not the service's operations: they live in ``ADMIN``, never in ``REGISTRY``, so the
API's routes, the CLI's commands and the MCP tools, which read ``REGISTRY``, never see them.
Each is served only by ``sowctl serve`` with an admin token (``Authorization: Bearer <admin
token>``), by ``sowctl.server.testdouble.admin_api``, which routes every declaration here to
the handler of the same name; ``/openapi.json`` documents them under their own tag on such a
server, and ``sowctl.testing.AdminClient`` sends its requests by them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from sowctl.foundation.budgets import MAX_DATASET_BYTES
from sowctl.foundation.errors import NotFound
from sowctl.operations import Operation, Request, Result
from sowctl.operations.groups import Group
from sowctl.schemas.admin import (
    AdminMessage,
    CheckpointCreate,
    CheckpointDeleted,
    CheckpointOut,
    ClockOut,
    ClockSet,
    ContractModeSet,
    ContractReport,
    Dataset,
    DatasetImported,
    DatasetLoadQuery,
    Deleted,
    FaultConfigBody,
    FaultConfigOut,
    KeyCreate,
    KeyIssued,
    LoggedRequest,
    PactDocument,
    PactQuery,
    RequestLogQuery,
    RequestPattern,
    SandboxCreate,
    SandboxDeleted,
    SandboxIssued,
    SandboxOut,
    TokenCreate,
    TokenIssued,
    VerificationReport,
)
from sowctl.schemas.events import AdminEventQuery, EventOut, EventPage
from sowctl.schemas.webhooks import (
    DeliveryFaults,
    WebhookCreate,
    WebhookCreated,
    WebhookDeleted,
    WebhookDeliveriesQuery,
    WebhookDeliveryOut,
    WebhookOut,
    WebhookRedeliver,
    WebhookRedelivery,
)

PREFIX = "/_admin"
TAG = "test double admin"

ADMIN: dict[str, Operation] = {}


def _served_by_the_test_double(request: Request) -> Result:
    """A declaration's own handler: the test double serves these, in process nothing does."""
    raise NotFound("the admin API is served by 'sowctl serve --admin' only")


def _declare(name: str, method: str, path: str, summary: str, **spec: Any) -> None:
    op = Operation(
        name=name,
        method=method,
        path=PREFIX + path,
        group=Group.ADMIN,
        handler=_served_by_the_test_double,
        summary=summary,
        extension=True,
        **spec,
    )
    ADMIN[name] = op


def get(name: str) -> Operation:
    return ADMIN[name]


def path_of(name: str, params: dict[str, str] | None = None) -> str:
    """The path of operation ``name`` with its parameters filled in (percent-quoted)."""
    path = ADMIN[name].path
    for key, value in (params or {}).items():
        path = path.replace("{" + key + "}", quote(value, safe=""))
    return path


_declare(
    "admin.reset",
    "POST",
    "/reset",
    "Empty every table (data, tokens, keys, rate counters, request log) and restore the start-up "
    "faults, clock and seed; the schema and the checkpoints stay",
    response=AdminMessage,
    write=True,
)
_declare("admin.dataset.export", "GET", "/dataset", "Export the whole dataset", response=Dataset)
_declare(
    "admin.dataset.load",
    "POST",
    "/dataset",
    "Load a dataset, all or nothing; with replace=true empty every table first, in the same transaction",
    query=DatasetLoadQuery,
    body=Dataset,
    response=DatasetImported,
    write=True,
    max_body_bytes=MAX_DATASET_BYTES,
    checked_by_handler=("body",),  # record by record, naming the record and field
)
_declare(
    "admin.tokens.create",
    "POST",
    "/tokens",
    "Issue a bearer token for a user of an organization",
    body=TokenCreate,
    response=TokenIssued,
    status=201,
    write=True,
)
_declare(
    "admin.keys.create",
    "POST",
    "/keys",
    "Issue a Group B API key for an organization",
    body=KeyCreate,
    response=KeyIssued,
    status=201,
    write=True,
)
_declare("admin.faults.get", "GET", "/faults", "Show the latency and fault config", response=FaultConfigOut)
_declare(
    "admin.contract.get",
    "GET",
    "/contract",
    "Show contract mode and what the logged requests relied on beyond the service's description",
    response=ContractReport,
)
_declare(
    "admin.contract.set",
    "PUT",
    "/contract",
    "Set contract mode: off, report (mark) or strict (refuse extensions and leniencies)",
    body=ContractModeSet,
    response=ContractReport,
    write=True,
)
for _method, _name in (("PUT", "admin.faults.replace"), ("POST", "admin.faults.set")):
    _declare(
        _name,
        _method,
        "/faults",
        "Replace the latency and fault config (fields left out take their defaults)",
        body=FaultConfigBody,
        response=FaultConfigOut,
        write=True,
        checked_by_handler=("body",),  # the fault config's own rules (routes, latency bounds)
    )
_declare(
    "admin.faults.clear",
    "DELETE",
    "/faults",
    "Clear the latency and fault config",
    response=FaultConfigOut,
    write=True,
)
_declare("admin.clock.get", "GET", "/clock", "Show the service clock", response=ClockOut)
_declare(
    "admin.clock.set",
    "POST",
    "/clock",
    "Freeze the service clock at a timestamp, or let it run again (null)",
    body=ClockSet,
    response=ClockOut,
    write=True,
)
_declare(
    "admin.requests.list",
    "GET",
    "/requests",
    "The last API requests that match the filters, oldest first",
    query=RequestLogQuery,
    response=list[LoggedRequest],
    checked_by_handler=("query",),  # the limit is bounded by the server's request log size
)
_declare(
    "admin.requests.pact",
    "GET",
    "/requests/pact",
    "The logged requests that match the filters as a Pact contract (specification V3), oldest "
    "first; the requests that cannot be replayed exactly are listed in metadata.sowctl.omitted",
    query=PactQuery,
    response=PactDocument,
    checked_by_handler=("query",),  # the names' own rule, and the request log's filters
)
_declare(
    "admin.requests.clear",
    "DELETE",
    "/requests",
    "Empty the request log",
    response=Deleted,
    write=True,
)
_declare(
    "admin.requests.verify",
    "POST",
    "/requests/verify",
    "Verify that the request log holds the expected number of requests matching a pattern "
    "(200), or show the closest requests and what differed (409)",
    body=RequestPattern,
    response=VerificationReport,
    answers={409: VerificationReport},
    checked_by_handler=("body",),  # the pattern's own rules, worded for the near-miss report
)
_declare(
    "admin.checkpoints.list",
    "GET",
    "/checkpoints",
    "List the saved checkpoints",
    response=list[CheckpointOut],
)
_declare(
    "admin.checkpoints.save",
    "POST",
    "/checkpoints",
    "Save the whole state under a name (replacing a checkpoint of that name)",
    body=CheckpointCreate,
    response=CheckpointOut,
    status=201,
    write=True,
)
_declare(
    "admin.checkpoints.restore",
    "POST",
    "/checkpoints/{name}/restore",
    "Bring back the state saved under a name, all or nothing",
    response=CheckpointOut,
    write=True,
)
_declare(
    "admin.checkpoints.delete",
    "DELETE",
    "/checkpoints/{name}",
    "Drop a checkpoint",
    response=CheckpointDeleted,
    write=True,
)

# --- webhooks: subscriptions, their delivery log, delivery faults -----------------------------

_declare(
    "admin.webhooks.create",
    "POST",
    "/webhooks",
    "Subscribe a URL to an organization's events; the answer (only this one) shows the signing secret",
    body=WebhookCreate,
    response=WebhookCreated,
    status=201,
    write=True,
    checked_by_handler=("body",),  # the subscription's rules, each naming its field
)
_declare(
    "admin.webhooks.list", "GET", "/webhooks", "List the webhook subscriptions", response=list[WebhookOut]
)
_declare("admin.webhooks.get", "GET", "/webhooks/{id}", "Show one webhook subscription", response=WebhookOut)
_declare(
    "admin.webhooks.delete",
    "DELETE",
    "/webhooks/{id}",
    "Drop a webhook subscription and its delivery log",
    response=WebhookDeleted,
    write=True,
)
_declare(
    "admin.webhooks.resume",
    "POST",
    "/webhooks/{id}/resume",
    "Make a paused subscription active again, its failures forgotten: the event it stopped at goes first",
    response=WebhookOut,
    write=True,
)
_declare(
    "admin.webhooks.deliveries",
    "GET",
    "/webhooks/{id}/deliveries",
    "The last delivery attempts of a subscription, oldest first",
    query=WebhookDeliveriesQuery,
    response=list[WebhookDeliveryOut],
    checked_by_handler=("query",),  # limit: 1 to the log's bound
)
_declare(
    "admin.webhooks.redeliver",
    "POST",
    "/webhooks/{id}/redeliver",
    "Queue an event again for a subscription, ahead of the events after its cursor",
    body=WebhookRedeliver,
    response=WebhookRedelivery,
    status=202,
    write=True,
    checked_by_handler=("body",),
)
_declare(
    "admin.webhooks.faults.get",
    "GET",
    "/webhook-faults",
    "Show the faults injected in webhook deliveries",
    response=DeliveryFaults,
)
_declare(
    "admin.webhooks.faults.set",
    "PUT",
    "/webhook-faults",
    "Replace the faults injected in webhook deliveries (duplicate, delay, drop, reorder)",
    body=DeliveryFaults,
    response=DeliveryFaults,
    write=True,
    checked_by_handler=("body",),
)
_declare(
    "admin.webhooks.faults.clear",
    "DELETE",
    "/webhook-faults",
    "Clear the faults injected in webhook deliveries",
    response=DeliveryFaults,
    write=True,
)
_declare(
    "admin.sandboxes.create",
    "POST",
    "/sandboxes",
    "Make a sandbox: an organization with a bearer token, an API key and an admin token scoped "
    "to it, removed when its time to live is over (full admin token only)",
    body=SandboxCreate,
    response=SandboxIssued,
    status=201,
    write=True,
    checked_by_handler=("body",),  # the time to live's own rule (seconds or 30m, 1h, 2d)
)
_declare(
    "admin.sandboxes.list",
    "GET",
    "/sandboxes",
    "List the live sandboxes (a sandbox's admin token: its own)",
    response=list[SandboxOut],
)
_declare(
    "admin.sandboxes.delete",
    "DELETE",
    "/sandboxes/{organizationId}",
    "Remove a sandbox: its records, credentials, request log, checkpoints and organization "
    "(full admin token only)",
    response=SandboxDeleted,
    write=True,
)
_declare(
    "admin.events.list",
    "GET",
    "/events",
    "The changes feed: the events after an event id, oldest first, of every organization or one",
    query=AdminEventQuery,
    response=EventPage,
)
_declare(
    "admin.events.stream",
    "GET",
    "/events/stream",
    "The changes feed as Server-Sent Events (text/event-stream), resuming after Last-Event-ID or since",
    query=AdminEventQuery,
    response=EventOut,  # the data of each message
    stream=True,
)
