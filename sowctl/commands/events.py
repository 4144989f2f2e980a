"""sowctl events: the changes feed (list, tail), a way to make an event on purpose (trigger),
and a local listener forwarding webhook deliveries (listen, ``commands/events_listen.py``).

Local mode reads the database through the core (``events.list``); remote mode reads the
bearer token's feed (``GET /api/events``, ``/api/events/stream``), or with an admin token
(``--admin-token`` or SOWCTL_ADMIN_TOKEN) the test double's feed of every organization
(``/_admin/events``). A sowctl extension: the service's description has no events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import typer

from sowctl import operations
from sowctl.backends.local import LocalBackend
from sowctl.backends.remote import RemoteBackend
from sowctl.backends.remote_stream import stream_lines
from sowctl.commands._context import AppContext, app_context
from sowctl.commands._fields import speak_cli
from sowctl.commands._options import Json, Quiet
from sowctl.commands.events_listen import listen
from sowctl.foundation.errors import InvalidInput, Issue, NotFound, ServiceUnavailable, UsageError
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_rows, text
from sowctl.output.safe import clean_json
from sowctl.output.terminal import current
from sowctl.schemas import dependencies, items, sows
from sowctl.schemas.common import parse
from sowctl.schemas.events import EVENT_TYPES, LATEST, stream_messages

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS
app.command("listen")(listen)

ADMIN_LIST, ADMIN_STREAM = "/_admin/events", "/_admin/events/stream"
POLL_SECONDS = 0.5  # local mode's tail: how often it reads the database
RECONNECTS = 5  # remote tail: connections lost in a row before it gives up
COLUMNS = [
    Column("ID", "id"),
    Column("TIME", "timestamp", kind="datetime", priority=2),
    Column("TYPE", "type", kind="enum"),
    Column("RESOURCE", "resourceId"),
    Column("ORG", "organizationId", priority=3),
]

Since = Annotated[
    str | None,
    typer.Option("--since", help="Only events after this event id (or its number); latest: new ones only."),
]
TypeFilter = Annotated[
    str | None,
    typer.Option(
        "--type", help="Only these types, comma-separated: item.created, ... or item.* for a resource."
    ),
]
Org = Annotated[
    str | None,
    typer.Option(
        "--org",
        help="Only this organization's events (local mode, or remote with --admin-token; "
        "a bearer token sees its own organization's).",
    ),
]
AdminToken = Annotated[
    str | None,
    typer.Option(
        "--admin-token",
        envvar="SOWCTL_ADMIN_TOKEN",
        help="Remote mode: read the test double's feed of every organization with its admin token.",
        show_default=False,
    ),
]


class Feed:
    """Where this run reads the feed: a page (``page``) and, remotely, a stream (``lines``)."""

    def __init__(self, context: AppContext, org: str | None, admin_token: str | None) -> None:
        self.context = context
        self.remote = context.settings.remote
        self.admin_token = admin_token if self.remote else None
        self.org = org
        if self.remote and org and not admin_token:
            raise UsageError(
                "--org needs --admin-token in remote mode: a bearer token sees its own organization's"
            )

    def page(self, query: dict[str, str]) -> dict[str, Any]:
        """One page of the feed; a refusal names the options typed (``--since``, ``--type``)."""
        try:
            return self._page(query)
        except InvalidInput as exc:
            raise speak_cli(exc, query) from None

    def _page(self, query: dict[str, str]) -> dict[str, Any]:
        if self.admin_token:
            backend: Any = self.context.backend
            query = {**query, "organization": self.org} if self.org else query
            headers = {"Authorization": f"Bearer {self.admin_token}"}
            return backend.raw(None, "GET", ADMIN_LIST, query, None, headers)
        if self.remote or not self.org:
            return self.context.call("events.list", query=query)
        settings = self.context.settings
        local = LocalBackend(settings.database, self.org, settings.company, chosen=settings.db is not None)
        return local.call("events.list", query=query)

    def lines(self, query: dict[str, str], last_event_id: str | None) -> Iterator[str]:
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        if self.admin_token:
            query = {**query, "organization": self.org} if self.org else query
            headers["Authorization"] = f"Bearer {self.admin_token}"
            return stream_lines(self._remote(), None, ADMIN_STREAM, query, headers)
        route = operations.get("events.stream")
        return stream_lines(self._remote(), route, route.path, query, headers)

    def _remote(self) -> RemoteBackend:
        backend = self.context.backend
        assert isinstance(backend, RemoteBackend)  # lines() is remote mode's only
        return backend


def _query(since: str | None, event_type: str | None, limit: int | None = None) -> dict[str, str]:
    found = {"since": since, "type": event_type, "limit": None if limit is None else str(limit)}
    return {key: value for key, value in found.items() if value is not None}


def event_line(event: dict[str, Any]) -> str:
    """One event on one line: id, time, type, resource id, organization."""
    parts = (event.get("id"), event.get("timestamp"), event.get("type"), event.get("resourceId"))
    return " ".join(text(part) for part in parts) + f" org={text(event.get('organizationId'))}\n"


def _write_event(event: dict[str, Any], json_: bool) -> None:
    if json_ and current().shape.jq is not None:
        emit_json(event)  # --jq: its results for this event
    elif json_:
        line = clean_json(json.dumps(event, ensure_ascii=False, separators=(",", ":")))
        current().out.write(line + "\n")
    else:
        current().out.write(event_line(event))
    current().out.flush()


@app.command("list")
@output_options(columns=True, pager=True)
def list_events(
    ctx: typer.Context,
    since: Since = None,
    event_type: TypeFilter = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many events.")] = 100,
    org: Org = None,
    admin_token: AdminToken = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """The events after --since (from the oldest kept), oldest first: one page of the feed.

    With more to read, stderr says which --since gives the next page (--json: the body's
    lastEventId and hasMore).

    Example: sowctl events list --type 'item.*' --limit 20
    """
    page = Feed(app_context(ctx), org, admin_token).page(_query(since, event_type, limit))
    emit_rows(page.get("events") or [], COLUMNS, json_mode=json_, quiet=quiet, body=page)
    if page.get("hasMore") and not json_:
        current().err.write(f"more events follow: --since {text(page.get('lastEventId'))}\n")


@app.command("tail")
@output_options()
def tail_events(
    ctx: typer.Context,
    since: Since = None,
    event_type: TypeFilter = None,
    org: Org = None,
    admin_token: AdminToken = None,
    count: Annotated[
        int | None,
        typer.Option("--count", min=1, help="Stop after this many events (default: until Ctrl-C)."),
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="One event a line, as JSON (JSON lines).")] = False,
) -> None:
    """Follow the feed: print each event as it commits, until Ctrl-C (exit 0).

    Without --since, only events committed from now on. Remote mode follows the server's
    event stream (Server-Sent Events), reconnecting after the last event it printed; local
    mode reads the database every half second.

    Example: sowctl events tail --type 'item.*' --json
    """
    feed = Feed(app_context(ctx), org, admin_token)
    try:
        cursor = since if since is not None and since != LATEST else _latest(feed, event_type)
        follow = _follow_remote if feed.remote else _follow_local
        for shown, event in enumerate(follow(feed, cursor, event_type), start=1):
            _write_event(event, json_)
            if count is not None and shown >= count:
                return
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _latest(feed: Feed, event_type: str | None) -> str:
    """The newest event's id now (0 when none): where a tail without --since starts."""
    return str(feed.page(_query(LATEST, event_type, 1)).get("lastEventId") or "0")


def _follow_local(feed: Feed, cursor: str, event_type: str | None) -> Iterator[dict[str, Any]]:
    while True:
        page = feed.page(_query(cursor, event_type, 1000))
        yield from page.get("events") or []
        cursor = page.get("lastEventId") or cursor
        if not page.get("hasMore"):
            time.sleep(POLL_SECONDS)


def _follow_remote(feed: Feed, cursor: str, event_type: str | None) -> Iterator[dict[str, Any]]:
    """The stream's events; when the server ends it (after a few minutes) or the connection
    drops, again from the last event shown (``Last-Event-ID``)."""
    failures = 0
    while True:
        try:
            for event_id, event in stream_messages(feed.lines(_query(None, event_type), cursor)):
                failures = 0
                cursor = event_id or cursor
                yield event
        except ServiceUnavailable:
            failures += 1
            if failures >= RECONNECTS:
                raise
            time.sleep(1.0)


# --- trigger ------------------------------------------------------------------------------

TRIGGER_SOW = "sowctl-trigger"
TITLE = "sowctl events trigger"


@app.command("trigger")
@output_options()
def trigger_event(
    ctx: typer.Context,
    event_type: Annotated[str, typer.Argument(help="The event to make: " + ", ".join(EVENT_TYPES[:9]) + ".")],
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="field=value of the record made or changed (its API name); repeatable."),
    ] = None,
    sow: Annotated[
        str, typer.Option("--sow", help="The scratch SOW items go in (made when missing).")
    ] = TRIGGER_SOW,
    json_: Annotated[bool, typer.Option("--json", help="Print the events made, as JSON lines.")] = False,
) -> None:
    """Make the change that emits an event, on a scratch record, and print the event id(s).

    item.created makes an item in the scratch SOW (--sow, made when missing); item.updated
    makes one and then changes it; a *.deleted type makes the record and deletes it;
    dependency.* use two scratch items. --set fields go to the record made (.created,
    .deleted) or to the change (.updated), checked as the API checks them.

    Example: sowctl events trigger item.updated --set status=completed
    """
    resource, _, action = event_type.partition(".")
    if event_type not in EVENT_TYPES[:9]:
        wanted = ", ".join(EVENT_TYPES[:9])
        hint = " (make purchase orders with 'sowctl po create')" if resource == "purchaseOrder" else ""
        raise InvalidInput.for_field("TYPE", f"must be one of {wanted}{hint}")
    context = app_context(ctx)
    feed = Feed(context, None, None)
    fields = _fields(set_ or [], resource, action)
    changed = "updated" if action == "updated" else "created"
    _checked(resource, changed, {**_PLACEHOLDERS[(resource, changed)], **fields})  # before anything is made
    if isinstance(context.backend, LocalBackend):
        context.backend.open()  # a write makes a new database; the reads below would refuse it
    scratch = _scratch_sow(context, sow)
    before = _latest(feed, event_type)
    touched = _TRIGGERS[resource](context, action, fields, scratch)
    page = feed.page(_query(before, event_type, 1000))
    made = [event for event in page.get("events") or [] if event.get("resourceId") in touched]
    for event in made:
        if json_:
            _write_event(event, True)
        else:
            current().out.write(
                f"{text(event.get('id'))} {text(event_type)} {text(event.get('resourceId'))}\n"
            )


def _fields(pairs: list[str], resource: str, action: str) -> dict[str, Any]:
    """The --set pairs as a body's fields, each a field of the record's model (typed as it takes)."""
    model = _model(resource, "updated" if action == "updated" else "created")
    properties = model.model_json_schema(by_alias=True).get("properties", {})
    fields: dict[str, Any] = {}
    for pair in pairs:
        name, equals, raw = pair.partition("=")
        name = name.strip()
        if not equals or not name:
            raise InvalidInput("--set: give field=value", [Issue(("--set",), "give field=value")])
        if name not in properties:
            allowed = ", ".join(sorted(properties))
            raise InvalidInput(f"--set {name}: not a field of this {resource} (fields: {allowed})")
        fields[name] = _typed(properties[name], raw)
    return fields


def _typed(schema: dict[str, Any], raw: str) -> Any:
    """``raw`` as the field takes it: text for a text field, else the JSON value it spells."""
    kinds = {schema.get("type")} | {option.get("type") for option in schema.get("anyOf", [])}
    if "string" in kinds or not kinds - {None}:
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _model(resource: str, action: str) -> Any:
    models = {
        ("item", "created"): items.ItemCreate,
        ("item", "updated"): items.ItemUpdate,
        ("dependency", "created"): dependencies.DependencyCreate,
        ("dependency", "updated"): dependencies.DependencyUpdate,
        ("sow", "created"): sows.SowCreate,
        ("sow", "updated"): sows.SowUpdate,
    }
    return models[(resource, action)]


def _checked(resource: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` refused as the API would refuse it, naming the --set field."""
    try:
        parse(_model(resource, action), body)
    except InvalidInput as exc:
        raise InvalidInput(f"--set {exc.message}", exc.issues) from None
    return body


# Bodies that pass their model, for checking --set before anything is made.
_PLACEHOLDERS: dict[tuple[str, str], dict[str, Any]] = {
    ("item", "created"): {"title": TITLE, "type": "task_item"},
    ("item", "updated"): {"title": TITLE},
    ("dependency", "created"): {
        "sourceItemId": "x",
        "targetItemId": "y",
        "dependencyType": "related_to",
        "riskLevel": "low",
    },
    ("dependency", "updated"): {"notes": TITLE},
    ("sow", "created"): {"title": TITLE},
    ("sow", "updated"): {"title": TITLE},
}


def _scratch_sow(context: AppContext, sow: str) -> str:
    try:
        context.call("sows.get", {"sowId": sow})
    except NotFound:
        context.call("sows.create", body={"title": "Scratch records of sowctl events trigger", "id": sow})
    return sow


def _item(context: AppContext, sow: str, fields: dict[str, Any]) -> str:
    body = _checked("item", "created", {"title": TITLE, "type": "task_item", **fields})
    return str(context.call("items.create", {"sowId": sow}, body=body)["id"])


def _trigger_item(context: AppContext, action: str, fields: dict[str, Any], sow: str) -> set[str]:
    item_id = _item(context, sow, fields if action != "updated" else {})
    if action == "updated":
        body = _checked("item", "updated", {"title": f"{TITLE} (updated)", **fields})
        context.call("items.update", {"itemId": item_id}, body=body)
    elif action == "deleted":
        context.call("items.delete", {"itemId": item_id})
    return {item_id}


def _trigger_dependency(context: AppContext, action: str, fields: dict[str, Any], sow: str) -> set[str]:
    source, target = _item(context, sow, {}), _item(context, sow, {})
    created = {
        "sourceItemId": source,
        "targetItemId": target,
        "dependencyType": "related_to",
        "riskLevel": "low",
    }
    body = _checked("dependency", "created", {**created, **(fields if action != "updated" else {})})
    dependency_id = str(context.call("deps.create", body=body)["id"])
    if action == "updated":
        change = _checked("dependency", "updated", {"notes": f"{TITLE} (updated)", **fields})
        context.call("deps.update", {"dependencyId": dependency_id}, body=change)
    elif action == "deleted":
        context.call("deps.delete", {"dependencyId": dependency_id})
    return {dependency_id}


def _trigger_sow(context: AppContext, action: str, fields: dict[str, Any], sow: str) -> set[str]:
    body = _checked("sow", "created", {"title": TITLE, **(fields if action != "updated" else {})})
    sow_id = str(context.call("sows.create", body=body)["id"])
    if action == "updated":
        change = _checked("sow", "updated", {"title": f"{TITLE} (updated)", **fields})
        context.call("sows.update", {"sowId": sow_id}, body=change)
    elif action == "deleted":
        context.call("sows.delete", {"sowId": sow_id})
    return {sow_id}


_TRIGGERS: dict[str, Callable[[AppContext, str, dict[str, Any], str], set[str]]] = {
    "item": _trigger_item,
    "dependency": _trigger_dependency,
    "sow": _trigger_sow,
}
