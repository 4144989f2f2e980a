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
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import peewee as pw
from pydantic import BaseModel

from sowctl.foundation import clock, trace_context
from sowctl.foundation.budgets import MAX_EVENT_PAGE_BYTES
from sowctl.schemas.events import LATEST_SEQUENCE, EventOut, EventPage, event_id
from sowctl.services import bulk
from sowctl.storage import models as m
from sowctl.storage.database import hold_lock, try_lock
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
    if _retention.keep == 0:
        return  # serve --event-retention 0: the outbox is off
    hold_lock(f"org:{organization_id}")
    moment = clock.now()
    event_type = f"{resource}.{action}"
    traced = trace_context.current()  # the request's, carried by the event's deliveries
    rows = [
        (organization_id, event_type, resource_id, moment, _data_text(resource_id, data), traced)
        for resource_id, data in changes
    ]
    fields = [*_COLUMNS, m.Event.traceparent]
    for chunk in bulk.chunks(rows, per_row=len(fields)):
        m.Event.insert_many(chunk, fields=fields).execute()
    _count_and_maybe_prune(len(rows))


def traceparent_of(sequence: int) -> str | None:
    """The W3C trace context of the request that recorded event ``sequence`` (None: none came)."""
    return m.Event.select(m.Event.traceparent).where(m.Event.id == sequence).scalar()


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


def _rows_after(
    after: int, limit: int, organization_id: str | None, types: Sequence[str] | None
) -> list[tuple[Any, ...]]:
    query = m.Event.select(m.Event.id, *_COLUMNS).where(m.Event.id > after)
    if organization_id is not None:
        query = query.where(m.Event.organization_id == organization_id)
    if types:
        query = query.where(m.Event.type.in_(list(types)))
    return list(tuples(query.order_by(m.Event.id).limit(limit)))


def read_after(
    after: int, limit: int, *, organization_id: str | None = None, types: Sequence[str] | None = None
) -> list[EventOut]:
    """At most ``limit`` events with an id above ``after``, oldest first; only one
    organization's when it is given, only of ``types`` when they are."""
    return [to_out(row) for row in _rows_after(after, limit, organization_id, types)]


def resolve_after(after: int, organization_id: str | None = None) -> int:
    """``after`` itself, or for ``LATEST_SEQUENCE`` the newest event's id (of the
    organization, when one is given; 0 when there is none)."""
    if after != LATEST_SEQUENCE:
        return after
    query = m.Event.select(pw.fn.MAX(m.Event.id))
    if organization_id is not None:
        query = query.where(m.Event.organization_id == organization_id)
    return int(query.scalar() or 0)


# What an event's JSON holds besides its resource, its resource id and organization id: the
# field names, its id, type, kinds and timestamp (about 190 bytes), rounded up.
EVENT_FIELDS_BYTES = 256
# Rows read at a time while a page is made: the rows in memory stay few whatever ``limit``.
PAGE_READ_ROWS = 100


def encoded_size(row: Sequence[Any]) -> int:
    """About the bytes of a stored event's row in a page's JSON (its resource as stored)."""
    _, organization_id, _, resource_id, _, payload = row
    return len(payload.encode("utf-8")) + len(resource_id) + len(organization_id) + EVENT_FIELDS_BYTES


def read_page(
    after: int,
    limit: int,
    *,
    organization_id: str | None = None,
    types: Sequence[str] | None = None,
    max_bytes: int = MAX_EVENT_PAGE_BYTES,
) -> EventPage:
    """A page of the feed: at most ``limit`` events after ``after`` and about ``max_bytes``
    (the event that passes them is the page's last, so a page holds one event at least), and
    whether more follow (one more row is read to tell). ``lastEventId`` is the last event
    given, so a client that asks for the events after it misses none."""
    cursor = resolve_after(after, organization_id)
    shown: list[EventOut] = []
    size = 0
    while True:
        wanted = min(limit - len(shown), PAGE_READ_ROWS) + 1
        rows = _rows_after(cursor, wanted, organization_id, types)
        for row in rows:
            if len(shown) == limit or size >= max_bytes:
                return _page(shown, cursor, has_more=True)
            shown.append(to_out(row))
            size += encoded_size(row)
            cursor = row[0]
        if len(rows) < wanted:
            return _page(shown, cursor, has_more=False)


def _page(shown: list[EventOut], cursor: int, *, has_more: bool) -> EventPage:
    last = shown[-1].id if shown else (event_id(cursor) if cursor else None)
    return EventPage(events=shown, last_event_id=last, has_more=has_more)


# --- retention --------------------------------------------------------------------------

DEFAULT_RETENTION = 100_000
# The outbox is pruned by the write that records the PRUNE_EVERY-th event (a tenth of the
# retention, if less) since this process last pruned, at most PRUNE_BATCH rows at a time
# (a write after it prunes again while the table is still over): never per request, and
# never an unbounded delete.
PRUNE_EVERY = 1000
PRUNE_BATCH = 10_000


@dataclass
class Retention:
    keep: int = DEFAULT_RETENTION  # 0: record no events at all
    recorded: int = 0  # events this process recorded since it last pruned
    lock: threading.Lock = field(default_factory=threading.Lock)


_retention = Retention()


def set_retention(keep: int) -> None:
    """Keep at most ``keep`` events (``sowctl serve --event-retention``); 0 records none."""
    if keep < 0:
        raise ValueError("event retention must be 0 or more")
    _retention.keep = keep


def retention() -> int:
    return _retention.keep


def _count_and_maybe_prune(recorded: int) -> None:
    """Inside the write's transaction, after its events: prune when due. On PostgreSQL the
    prune takes a lock of its own only if it is free (a concurrent prune does the work)."""
    with _retention.lock:
        _retention.recorded += recorded
        # A small retention is pruned sooner, so the table passes it by a tenth at most.
        due = _retention.recorded >= min(PRUNE_EVERY, max(1, _retention.keep // 10))
        if due:
            _retention.recorded = 0
    if due and try_lock("events:prune") and prune(_retention.keep) == PRUNE_BATCH:
        with _retention.lock:
            _retention.recorded = PRUNE_EVERY  # still over: the next write prunes again


def prune(keep: int, batch: int = PRUNE_BATCH) -> int:
    """Delete the oldest events beyond the newest ``keep``, at most ``batch`` of them; how
    many went."""
    newest = m.Event.select(pw.fn.MAX(m.Event.id)).scalar()
    if newest is None or newest <= keep:
        return 0
    doomed = m.Event.select(m.Event.id).where(m.Event.id <= newest - keep).order_by(m.Event.id).limit(batch)
    ids = [row[0] for row in tuples(doomed)]
    return bulk.delete_where_in(m.Event, m.Event.id, ids)
