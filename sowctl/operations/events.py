"""The changes feed of Group A: a sowctl extension (the service's description has no events).

A bearer token sees its own organization's events; local mode (full rights) every
organization's. ``events.stream`` is the same feed as Server-Sent Events: the server
streams it (``sowctl.server.event_stream``); in process its handler only validates.
"""

from __future__ import annotations

from sowctl.operations import LazyModule, Request, Result, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import dump
from sowctl.schemas.events import EventOut, EventPage, EventQuery

service = LazyModule("sowctl.services.events")


@operation(
    name="events.list",
    method="GET",
    path="/api/events",
    group=Group.A,
    summary="The events of the caller's organization after an event id, oldest first (sowctl extension)",
    query=EventQuery,
    response=EventPage,
    extension=True,
)
def list_events(request: Request) -> Result:
    query: EventQuery = request.query
    page = service.read_page(
        query.after, query.limit, organization_id=request.caller.organization_id, types=query.type
    )
    if not page.events:
        request.caller.require_named_organization()  # local mode's --org naming no organization: 404
    return Result(dump(page))


@operation(
    name="events.stream",
    method="GET",
    path="/api/events/stream",
    group=Group.A,
    summary="The events of the caller's organization as Server-Sent Events (text/event-stream), "
    "resuming after Last-Event-ID or since (sowctl extension)",
    query=EventQuery,
    response=EventOut,  # the data of each message
    extension=True,
    stream=True,
)
def stream_events(request: Request) -> Result:
    """The stream's filters: the server makes the stream from them (``server.event_stream``)."""
    return Result(request.query)
