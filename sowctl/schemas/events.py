"""Events: what the changes feed and webhook deliveries carry (a sowctl extension).

The shape follows Procore's webhook payload (a resource name, its id, the kind of change
and when), in this API's camelCase, with the resource itself as the API returns it.
"""

from __future__ import annotations

from typing import Any, Literal

from sowctl.schemas.common import CamelOut, Field, Timestamp

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
