"""The events outbox: every committed write records what it changed, in its own transaction.

A change and its event commit together or not at all, so a crash after the commit loses no
event and a refused write records none. Each event is written under the organization's
write lock (``org:<id>``, which item, dependency and SOW writes hold already; a purchase
order takes it for the event alone, last): the events of one organization therefore get
their ids in commit order, and a reader that asks for those after the last id it saw
misses none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from sowctl.foundation import clock
from sowctl.schemas.events import EventOut, event_id
from sowctl.services import bulk
from sowctl.storage import models as m
from sowctl.storage.database import hold_lock
from sowctl.storage.peewee_compat import tuples

_EVENT_TYPES = {"created": "create", "updated": "update", "deleted": "delete"}
Data = BaseModel | dict[str, Any] | None


def _data_text(resource_id: str, data: Data) -> str:
    if data is None:
        return json.dumps({"id": resource_id}, separators=(",", ":"))
    if isinstance(data, BaseModel):
        return data.model_dump_json(by_alias=True)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


_COLUMNS = (m.Event.organization_id, m.Event.type, m.Event.resource_id, m.Event.occurred_at, m.Event.payload)


def record(organization_id: str, resource: str, action: str, resource_id: str, data: Data) -> None:
    """Record one change of ``resource`` (``item``, ``dependency``, ``sow``, ``purchaseOrder``;
    ``action`` is ``created``, ``updated`` or ``deleted``). Call inside the write's transaction,
    after its last check: ``data`` is the resource as the API returns it (None for a delete)."""
    record_many(organization_id, resource, action, [(resource_id, data)])


def record_many(
    organization_id: str,
    resource: str,
    action: str,
    changes: Iterable[tuple[str, Data]],
) -> None:
    """Record one event per changed record (a cascade's deletes, a reorder's moves)."""
    hold_lock(f"org:{organization_id}")
    moment = clock.now()
    event_type = f"{resource}.{action}"
    rows = [
        (organization_id, event_type, resource_id, moment, _data_text(resource_id, data))
        for resource_id, data in changes
    ]
    for chunk in bulk.chunks(rows, per_row=len(_COLUMNS)):
        m.Event.insert_many(chunk, fields=list(_COLUMNS)).execute()


def to_out(row: Sequence[Any]) -> EventOut:
    """An event from its stored row (id, organization, type, resource id, moment, data)."""
    sequence, organization_id, event_type, resource_id, moment, payload = row
    resource, action = event_type.split(".", 1)
    return EventOut(
        id=event_id(sequence),
        type=event_type,
        event_type=_EVENT_TYPES[action],  # type: ignore[arg-type]
        resource_name=resource,
        resource_id=resource_id,
        organization_id=organization_id,
        timestamp=moment,
        data=json.loads(payload),
    )


def read_after(
    after: int, limit: int, *, organization_id: str | None = None, types: Sequence[str] | None = None
) -> list[EventOut]:
    """At most ``limit`` events with an id above ``after``, oldest first; only one
    organization's when it is given, only of ``types`` when they are."""
    query = m.Event.select(m.Event.id, *_COLUMNS).where(m.Event.id > after)
    if organization_id is not None:
        query = query.where(m.Event.organization_id == organization_id)
    if types:
        query = query.where(m.Event.type.in_(list(types)))
    return [to_out(row) for row in tuples(query.order_by(m.Event.id).limit(limit))]
