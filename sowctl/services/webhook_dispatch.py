"""What a webhook dispatcher asks of the core: which subscriptions have work due, the lease
that makes one dispatcher the only one to attempt a delivery, what to send, and the record of
what came of it (``services.webhooks`` has the subscriptions' rules).

The lease is a conditional UPDATE whose row count says who won (``claim``), so it holds across
threads, processes and servers on one database, SQLite or PostgreSQL. It is measured on the
wall clock (``time.time()``): a frozen service clock must not keep a lease forever. Retries are
due on the service clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

import peewee as pw

from sowctl.foundation import clock
from sowctl.foundation.budgets import MAX_WEBHOOK_DELIVERIES_KEPT, MAX_WEBHOOK_EXCERPT_CHARS
from sowctl.schemas.events import EVENT_TYPES, LATEST_SEQUENCE, EventOut, event_id
from sowctl.services import events
from sowctl.services.webhooks import RETRY_SECONDS, held_to_public_addresses, matches
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction
from sowctl.storage.webhook_models import WebhookDelivery, WebhookRedelivery, WebhookSubscription

Sub = WebhookSubscription
# Longer than any attempt can take: two sends (a duplicate, a reorder) of 5 s each, and a
# delay fault of at most MAX_FAULT_DELAY_MS; a dispatcher that dies frees its lease by then.
LEASE_SECONDS = 120.0


@dataclass(frozen=True)
class Work:
    """One event to send to one subscription, claimed by one dispatcher."""

    subscription_id: str
    url: str
    signing: str
    credential: str
    event: EventOut
    sequence: int
    attempt: int
    redelivery_id: int | None = None
    traceparent: str | None = None  # the request that made the change, sent with each delivery
    guarded: bool = False  # a sandbox's: public addresses only (services.webhook_destinations)


@dataclass(frozen=True)
class Attempt:
    """What came of one send (or of one a fault dropped)."""

    sequence: int
    outcome: str  # delivered, failed, dropped
    status: int | None = None
    error: str | None = None
    latency_ms: int = 0
    excerpt: str | None = None
    fault: str | None = None


def due(service_now: datetime, wall_now: float, limit: int) -> list[str]:
    """Active subscriptions with an event or a redelivery waiting, due and not leased (one query)."""
    event = m.Event.alias("pending_event")
    again = WebhookRedelivery.alias("pending_again")
    waiting_event = event.select(event.id).where(
        (event.organization_id == Sub.organization_id) & (event.id > Sub.cursor)
    )
    waiting_again = again.select(again.id).where(again.subscription_id == Sub.id)
    query = (
        Sub.select(Sub.id)
        .where(
            (Sub.status == "active")
            & (Sub.next_attempt_at.is_null() | (Sub.next_attempt_at <= service_now))
            & (Sub.lease_until.is_null() | (Sub.lease_until < wall_now))
            & (pw.fn.EXISTS(waiting_event) | pw.fn.EXISTS(waiting_again))
        )
        .order_by(Sub.id)
        .limit(limit)
    )
    return [row.id for row in query]


def claim(subscription_id: str, owner: str, wall_now: float) -> bool:
    """Take the subscription's lease unless another dispatcher holds one: True for the winner."""
    won = (
        Sub.update(lease_owner=owner, lease_until=wall_now + LEASE_SECONDS)
        .where(
            (Sub.id == subscription_id)
            & (Sub.status == "active")
            & (Sub.lease_until.is_null() | (Sub.lease_until < wall_now))
        )
        .execute()
    )
    return won == 1


def release(subscription_id: str, owner: str, cursor: int | None = None) -> None:
    """Give the lease back; ``cursor``: events up to it were not subscribed to, skip them."""
    changes: dict[pw.Field, object] = {Sub.lease_owner: None, Sub.lease_until: None}
    if cursor is not None:
        changes[Sub.cursor] = cursor
    Sub.update(changes).where((Sub.id == subscription_id) & (Sub.lease_owner == owner)).execute()


def forget_leases() -> None:
    """No subscription leased (a checkpoint restored: its leases were of attempts long done)."""
    Sub.update({Sub.lease_owner: None, Sub.lease_until: None}).where(Sub.lease_owner.is_null(False)).execute()


def next_work(subscription_id: str, owner: str, after: int | None = None) -> tuple[Work | None, int | None]:
    """(what to send next, None) or, when nothing is to be sent, (None, the cursor to skip to).
    ``after``: the event a batch under way delivered last (its cursor is not stored yet); a
    batch takes no queued redelivery, which goes alone."""
    row = Sub.get_or_none((Sub.id == subscription_id) & (Sub.lease_owner == owner))
    if row is None:
        return None, None
    if after is not None:
        cursor = max(row.cursor, after)
        patterns = json.loads(row.event_types) if row.event_types else None
        found = events.read_after(cursor, 1, organization_id=row.organization_id, types=_wanted(patterns))
        return (_work(row, found[0], _sequence(found[0]), None), None) if found else (None, None)
    patterns = json.loads(row.event_types) if row.event_types else None
    again = (
        WebhookRedelivery.select()
        .where(WebhookRedelivery.subscription_id == subscription_id)
        .order_by(WebhookRedelivery.id)
        .first()
    )
    if again is not None:
        found = events.read_after(again.event_id - 1, 1, organization_id=row.organization_id)
        if found and found[0].id == event_id(again.event_id):
            return _work(row, found[0], again.event_id, again.id), None
        WebhookRedelivery.delete().where(WebhookRedelivery.id == again.id).execute()  # gone (a reset)
        return None, None
    # The newest event first, then the first wanted one after the cursor: when there is none,
    # every event up to that newest one is of another type and can be skipped. (Read the other
    # way round, a wanted event committed between the two reads would be skipped unsent.)
    newest = events.resolve_after(LATEST_SEQUENCE, row.organization_id)
    found = events.read_after(row.cursor, 1, organization_id=row.organization_id, types=_wanted(patterns))
    if found:
        return _work(row, found[0], _sequence(found[0]), None), None
    return None, (newest if newest > row.cursor else None)


def _wanted(patterns: list[str] | None) -> list[str] | None:
    """The event types a subscription's patterns (``item.*``, ``*``) stand for; None: every one."""
    if patterns is None or "*" in patterns:
        return None
    return [event_type for event_type in EVENT_TYPES if matches(patterns, event_type)]


def following(work: Work) -> Work | None:
    """The subscription's next event after ``work``'s (a reorder fault sends it first)."""
    row = Sub.get_or_none(Sub.id == work.subscription_id)
    if row is None or work.redelivery_id is not None:
        return None
    patterns = json.loads(row.event_types) if row.event_types else None
    found = events.read_after(work.sequence, 1, organization_id=row.organization_id, types=_wanted(patterns))
    return _work(row, found[0], _sequence(found[0]), None) if found else None


def finish(work: Work, owner: str, attempts: list[Attempt], delivered_up_to: int | None) -> bool:
    """Log ``attempts``, move the cursor to ``delivered_up_to`` (None: the attempt failed, retry
    later or pause) and give the lease back. False when the subscription went meanwhile."""
    return finish_batch([(work, attempts)], owner, delivered_up_to, failed=delivered_up_to is None)


def finish_batch(
    done: list[tuple[Work, list[Attempt]]], owner: str, delivered_up_to: int | None, *, failed: bool
) -> bool:
    """One transaction for the events a claim sent in a row: log every attempt, move the cursor
    to ``delivered_up_to`` (the last event delivered, None: none was), count a failure when
    the last one ``failed`` (retry later, or pause), give the lease back. False when the
    subscription went meanwhile (nothing is recorded)."""
    subscription_id = done[0][0].subscription_id
    with write_transaction(f"webhook:{subscription_id}"):
        row = Sub.get_or_none((Sub.id == subscription_id) & (Sub.lease_owner == owner))
        if row is None:
            return False
        now = clock.now()
        logged = [
            {
                "subscription_id": subscription_id,
                "event_id": attempt.sequence,
                "attempt": work.attempt,
                "attempted_at": now,
                "status": attempt.status,
                "error": attempt.error,
                "latency_ms": attempt.latency_ms,
                "response_excerpt": (attempt.excerpt or "")[:MAX_WEBHOOK_EXCERPT_CHARS] or None,
                "outcome": attempt.outcome,
                "fault": attempt.fault,
            }
            for work, attempts in done
            for attempt in attempts
        ]
        WebhookDelivery.insert_many(logged).execute()
        _prune(subscription_id)
        changes: dict[pw.Field, object] = {Sub.lease_owner: None, Sub.lease_until: None}
        redelivered = [work.redelivery_id for work, _ in done if work.redelivery_id is not None]
        if redelivered and not failed:
            WebhookRedelivery.delete().where(WebhookRedelivery.id.in_(redelivered)).execute()
        if delivered_up_to is not None and not redelivered:
            changes[Sub.cursor] = max(row.cursor, delivered_up_to)
        if not failed:
            changes.update({Sub.consecutive_failures: 0, Sub.next_attempt_at: None})
        else:
            failures = row.consecutive_failures + 1
            changes[Sub.consecutive_failures] = failures
            if failures >= row.max_failures:
                changes.update({Sub.status: "paused", Sub.next_attempt_at: None})
            else:
                wait = RETRY_SECONDS[min(failures, len(RETRY_SECONDS)) - 1]
                changes[Sub.next_attempt_at] = now + timedelta(seconds=wait)
        Sub.update(changes).where(Sub.id == subscription_id).execute()
    return True


def _prune(subscription_id: str) -> None:
    """Keep the last ``MAX_WEBHOOK_DELIVERIES_KEPT`` attempts of a subscription."""
    oldest_kept = (
        WebhookDelivery.select(WebhookDelivery.id)
        .where(WebhookDelivery.subscription_id == subscription_id)
        .order_by(WebhookDelivery.id.desc())
        .offset(MAX_WEBHOOK_DELIVERIES_KEPT - 1)
        .limit(1)
        .scalar()
    )
    if oldest_kept is not None:
        WebhookDelivery.delete().where(
            (WebhookDelivery.subscription_id == subscription_id) & (WebhookDelivery.id < oldest_kept)
        ).execute()


def _work(row: WebhookSubscription, event: EventOut, sequence: int, redelivery_id: int | None) -> Work:
    return Work(
        subscription_id=row.id,
        url=row.url,
        signing=row.signing,
        credential=row.credential,
        event=event,
        sequence=sequence,
        attempt=row.consecutive_failures + 1,
        redelivery_id=redelivery_id,
        traceparent=events.traceparent_of(sequence),
        guarded=held_to_public_addresses(row.organization_id),
    )


def _sequence(event: EventOut) -> int:
    return int(event.id.removeprefix("evt_"))
