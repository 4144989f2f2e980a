"""Events: what the changes feed and webhook deliveries carry (a sowctl extension).

The shape follows Procore's webhook payload (a resource name, its id, the kind of change
and when), in this API's camelCase, with the resource itself as the API returns it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator

from sowctl.foundation.budgets import MAX_EVENT_PAGE
from sowctl.schemas.common import CamelModel, CamelOut, Field, Timestamp

# The resources whose changes are events, by the name their event types start with.
RESOURCES = ("item", "dependency", "sow", "purchaseOrder")
ACTIONS = ("created", "updated", "deleted")
EVENT_TYPES = tuple(f"{resource}.{action}" for resource in RESOURCES for action in ACTIONS)
EVENT_ID_PREFIX = "evt_"
EVENT_ID_DIGITS = 16


def event_id(sequence: int) -> str:
    """The event's id: its place in the outbox, zero-padded so ids sort as their events do."""
    return f"{EVENT_ID_PREFIX}{sequence:0{EVENT_ID_DIGITS}d}"


def event_sequence(text: str) -> int | None:
    """The outbox place an event id (or a bare number) names; None when it names none."""
    digits = text[len(EVENT_ID_PREFIX) :] if text.startswith(EVENT_ID_PREFIX) else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    return int(digits)


class EventOut(CamelOut):
    """One committed change."""

    id: str = Field(description="Sortable unique id: evt_ and 16 digits, in commit order per organization")
    type: str = Field(description="resource.action, e.g. item.created, dependency.deleted")
    event_type: Literal["create", "update", "delete"] = Field(description="The kind of change")
    resource_name: str = Field(description="item, dependency, sow or purchaseOrder")
    resource_id: str
    organization_id: str
    timestamp: Timestamp = Field(description="When the change was committed, on the service clock")
    data: dict[str, Any] = Field(
        description="The resource as the API returns it after the change; for a delete, only its id"
    )


# --- the changes feed ------------------------------------------------------------------

DEFAULT_FEED_LIMIT = 100
MAX_FEED_LIMIT = MAX_EVENT_PAGE
MAX_TYPE_FILTERS = len(EVENT_TYPES)


def event_types(text: str) -> list[str]:
    """The event types a ``type`` filter names: a comma list of types (``item.created``) or
    whole resources (``item.*``); ValueError naming the first unknown entry."""
    wanted: dict[str, None] = {}
    entries = [entry.strip() for entry in text.split(",")]
    if len(entries) > MAX_TYPE_FILTERS * 2:
        raise ValueError(f"at most {MAX_TYPE_FILTERS * 2} types")
    for entry in entries:
        if entry.endswith(".*") and entry[:-2] in RESOURCES:
            wanted.update((known, None) for known in EVENT_TYPES if known.startswith(entry[:-1]))
        elif entry in EVENT_TYPES:
            wanted[entry] = None
        else:
            shown = entry if len(entry) <= 40 else entry[:40] + "..."
            raise ValueError(
                f"unknown event type {shown!r}: use {', '.join(EVENT_TYPES)}, or a resource and .* (item.*)"
            )
    return list(wanted)


# ``since=latest``: after the newest event there is now (a client that wants new events only).
LATEST = "latest"
LATEST_SEQUENCE = -1


def _since(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip() == LATEST:
        return LATEST
    if not isinstance(value, str) or event_sequence(value.strip()) is None:
        raise ValueError(f"must be an event id ({event_id(1)}), its number, or latest")
    return value.strip()


def _types(value: Any) -> list[str] | None:
    if value is None or value == []:
        return None
    if isinstance(value, list):  # a repeated parameter: the entries of each
        value = ",".join(str(entry) for entry in value)
    if not isinstance(value, str):
        raise ValueError("must be a comma-separated list of event types")
    return event_types(value)


Since = Annotated[str | None, BeforeValidator(_since)]
Types = Annotated[list[str] | None, BeforeValidator(_types)]


class EventQuery(CamelModel):
    """Which events a feed returns: those after ``since``, of ``type``, at most ``limit``."""

    since: Since = Field(
        None,
        description="Return the events after this one: an event id, its number, or latest (new events only)",
    )
    limit: int = Field(DEFAULT_FEED_LIMIT, ge=1, le=MAX_FEED_LIMIT, description="At most this many events")
    type: Types = Field(None, description="Only these types: a comma list of item.created, ... or item.*")

    @property
    def after(self) -> int:
        """The place to read after: 0 for the oldest kept, LATEST_SEQUENCE for the newest."""
        if self.since is None:
            return 0
        if self.since == LATEST:
            return LATEST_SEQUENCE
        return event_sequence(self.since) or 0


class AdminEventQuery(EventQuery):
    """The admin feed's filters: also one organization's events only."""

    organization: str | None = Field(None, max_length=64, description="Only this organization's events")


class EventPage(CamelOut):
    """A page of the changes feed."""

    # Null before the first event: shown, not left out.
    wire_nulls: ClassVar[frozenset[str]] = frozenset({"last_event_id"})

    events: list[EventOut]
    last_event_id: str | None = Field(
        description="The id of the last event returned; with none returned, the since value (or null): "
        "ask for the events after it next"
    )
    has_more: bool = Field(description="Whether more events follow the last returned (ask again at once)")


# --- reading an event stream (clients: sowctl events tail, sowctl.testing) -------------------


def stream_messages(lines: Iterable[str]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """The events of a text/event-stream, as ``(id, event)`` pairs: each message's ``id``
    field and its ``data`` parsed as JSON. Comments (keep-alives), ``retry`` and messages
    without data are skipped; a data that is not a JSON object is refused (ValueError)."""
    message_id: str | None = None
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                parsed = json.loads("\n".join(data))
                if not isinstance(parsed, dict):
                    raise ValueError("an event stream message's data is not a JSON object")
                yield message_id, parsed
            message_id, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "id":
            message_id = value
        elif name == "data":
            data.append(value)
