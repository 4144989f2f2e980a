"""Webhook subscriptions: the rules of what is delivered where, and the delivery log.

A subscription belongs to one organization and sees that organization's events in outbox
order (their ids follow commit order per organization: ``services.events``). It delivers
them one at a time: ``cursor`` is the last event delivered, the next waits until the current
one succeeded, or the subscription paused after ``max_failures`` consecutive failed attempts.
Retries wait on the service clock (``RETRY_SECONDS``), so a frozen clock holds them until it
is moved. The dispatcher (``server.webhook_dispatcher``) makes the attempts; the functions
here claim a subscription for it (a lease: one attempt, one dispatcher, across processes),
tell it what to send, and record what came of it.

The secret a subscription signs with (or the Authorization value it sends) is kept as given,
since the server must use it; it is shown once, in the creation's answer, never in a listing,
an error or a log line.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sowctl.foundation import clock
from sowctl.foundation.budgets import (
    MAX_WEBHOOK_DELIVERIES_KEPT,
    MAX_WEBHOOK_EVENT_TYPES,
    MAX_WEBHOOK_REDELIVERIES,
    MAX_WEBHOOK_URL_CHARS,
    MAX_WEBHOOKS,
)
from sowctl.foundation.errors import InvalidInput, NotFound, quoted
from sowctl.schemas import webhooks as records
from sowctl.schemas.events import EVENT_TYPES, RESOURCES, event_id, event_sequence
from sowctl.schemas.webhooks import SIGNING_SCHEMES
from sowctl.services import webhook_destinations
from sowctl.storage import models as m
from sowctl.storage import sandbox_models
from sowctl.storage.database import write_transaction
from sowctl.storage.webhook_models import WebhookDelivery, WebhookRedelivery, WebhookSubscription

Sub = WebhookSubscription
SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24
MAX_SECRET_BYTES = 64
MAX_AUTHORIZATION_CHARS = 1024
DEFAULT_MAX_FAILURES = 5
MAX_FAILURES_LIMIT = 20
# The wait before retry N (on the service clock); the last one repeats.
RETRY_SECONDS = (5, 30, 120, 600, 3600, 6 * 3600)
DEFAULT_DELIVERIES = 50


# --- validation -------------------------------------------------------------------------------


def check_url(url: Any, field: str = "url") -> str:
    """An http(s) URL with a host, at most ``MAX_WEBHOOK_URL_CHARS``, without credentials."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput.for_field(field, "is required: an http:// or https:// URL")
    url = url.strip()
    if len(url) > MAX_WEBHOOK_URL_CHARS:
        raise InvalidInput.for_field(field, f"must be at most {MAX_WEBHOOK_URL_CHARS} characters")
    if not url.isascii() or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise InvalidInput.for_field(field, "must be an ASCII URL without spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise InvalidInput.for_field(field, f"{quoted(url)} is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput.for_field(field, f"{quoted(url)} is not an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput.for_field(field, "must not carry credentials (use signing: authorization)")
    return url


def check_event_types(types: Any, field: str = "eventTypes") -> list[str] | None:
    """Known event types or ``resource.*`` patterns, without repeats; None for every event."""
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InvalidInput.for_field(field, 'must be an array of event types such as "item.created"')
    if not types:
        raise InvalidInput.for_field(field, "must name at least one event type (omit it for every event)")
    if len(types) > MAX_WEBHOOK_EVENT_TYPES:
        raise InvalidInput.for_field(field, f"must list at most {MAX_WEBHOOK_EVENT_TYPES} event types")
    known = set(EVENT_TYPES) | {f"{resource}.*" for resource in RESOURCES} | {"*"}
    for index, name in enumerate(types):
        if name not in known:
            raise InvalidInput.for_field(
                f"{field}[{index}]",
                f"{quoted(name)} is not an event type (known: {', '.join(EVENT_TYPES)}, or resource.*)",
            )
    return list(dict.fromkeys(types))


def matches(patterns: list[str] | None, event_type: str) -> bool:
    if patterns is None:
        return True
    resource = event_type.split(".", 1)[0]
    return event_type in patterns or f"{resource}.*" in patterns or "*" in patterns


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret: its base64 part, decoded."""
    return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)


def _check_secret(secret: Any) -> str:
    if secret is None:
        return new_secret()
    message = f"must be {SECRET_PREFIX} followed by the base64 of {SECRET_BYTES} to {MAX_SECRET_BYTES} bytes"
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise InvalidInput.for_field("secret", message)
    try:
        key = secret_key(secret)
    except (binascii.Error, ValueError):
        raise InvalidInput.for_field("secret", message) from None
    if not SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise InvalidInput.for_field("secret", message)
    return secret


def _check_authorization(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput.for_field("authorization", "is required with signing: authorization")
    if len(value) > MAX_AUTHORIZATION_CHARS or not all(32 <= ord(ch) < 127 for ch in value):
        raise InvalidInput.for_field(
            "authorization", f"must be at most {MAX_AUTHORIZATION_CHARS} printable ASCII characters"
        )
    return value


def _credential(signing: Any, secret: Any, authorization: Any) -> tuple[str, str]:
    if signing is None:
        signing = "standard-webhooks"
    if signing not in SIGNING_SCHEMES:
        raise InvalidInput.for_field("signing", f"must be one of: {', '.join(SIGNING_SCHEMES)}")
    if signing == "authorization":
        if secret is not None:
            raise InvalidInput.for_field("secret", "goes with signing: standard-webhooks only")
        return signing, _check_authorization(authorization)
    if authorization is not None:
        raise InvalidInput.for_field("authorization", "goes with signing: authorization only")
    return signing, _check_secret(secret)


def _check_max_failures(value: Any) -> int:
    if value is None:
        return DEFAULT_MAX_FAILURES
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_FAILURES_LIMIT:
        raise InvalidInput.for_field("maxFailures", f"must be a whole number from 1 to {MAX_FAILURES_LIMIT}")
    return value


def _check_organization(organization_id: Any) -> str:
    if not isinstance(organization_id, str) or not organization_id.strip():
        raise InvalidInput.for_field("organizationId", "is required: the organization whose events are sent")
    if m.Organization.get_or_none(m.Organization.id == organization_id) is None:
        raise InvalidInput.for_field("organizationId", f"no organization {quoted(organization_id)}")
    return organization_id


# --- subscriptions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class NewWebhook:
    url: Any
    organization_id: Any
    event_types: Any = None
    signing: Any = None
    secret: Any = None
    authorization: Any = None
    max_failures: Any = None


def held_to_public_addresses(organization_id: str) -> bool:
    """Whether ``organization_id``'s webhooks are held to public addresses
    (``services.webhook_destinations``): a sandbox's are."""
    found = sandbox_models.Sandbox.select().where(sandbox_models.Sandbox.organization == organization_id)
    return bool(found.exists())


def create(
    new: NewWebhook, allowed_networks: Sequence[webhook_destinations.Network] = ()
) -> records.WebhookCreated:
    """Add a subscription; its answer (only this one) shows the secret. It starts after the
    organization's last event: only changes made from now on are delivered. A sandbox's
    organization may only subscribe public addresses and ``allowed_networks``
    (``services.webhook_destinations``)."""
    url = check_url(new.url)
    organization_id = _check_organization(new.organization_id)
    if held_to_public_addresses(organization_id):
        webhook_destinations.check_destination(url, allowed_networks)
    types = check_event_types(new.event_types)
    signing, credential = _credential(new.signing, new.secret, new.authorization)
    max_failures = _check_max_failures(new.max_failures)
    with write_transaction("webhooks"):
        if Sub.select().count() >= MAX_WEBHOOKS:
            raise InvalidInput.for_field(
                "url", f"this server keeps at most {MAX_WEBHOOKS} webhook subscriptions"
            )
        last = (
            m.Event.select(m.Event.id)
            .where(m.Event.organization_id == organization_id)
            .order_by(m.Event.id.desc())
            .limit(1)
            .scalar()
        )
        row = Sub.create(
            id="wh_" + clock.new_id().replace("-", "")[:20],
            organization_id=organization_id,
            url=url,
            event_types=json.dumps(types) if types is not None else None,
            signing=signing,
            credential=credential,
            max_failures=max_failures,
            cursor=last or 0,
            created_at=clock.now(),
        )
    secret = credential if signing == "standard-webhooks" else None
    return records.WebhookCreated(**_out_fields(row), secret=secret)


def find(subscription_id: str) -> WebhookSubscription:
    row = Sub.get_or_none(Sub.id == subscription_id) if len(subscription_id) <= 64 else None
    if row is None:
        raise NotFound(f"no webhook subscription {quoted(subscription_id)}")
    return row


def get(subscription_id: str) -> records.WebhookOut:
    return to_out(find(subscription_id))


def list_all(organization_id: str | None = None) -> list[records.WebhookOut]:
    """Every subscription, or one organization's (a sandbox's admin token sees its own)."""
    query = Sub.select()
    if organization_id is not None:
        query = query.where(Sub.organization_id == organization_id)
    return [to_out(row) for row in query.order_by(Sub.created_at, Sub.id)]


def require_in(subscription_id: str, organization_id: str | None) -> None:
    """Not found unless the subscription is ``organization_id``'s (None: any organization's):
    a sandbox's admin token cannot tell another organization's subscriptions from absent ones."""
    if organization_id is not None and find(subscription_id).organization_id != organization_id:
        raise NotFound(f"no webhook subscription {quoted(subscription_id)}")


def delete(subscription_id: str) -> None:
    with write_transaction("webhooks"):
        find(subscription_id)
        WebhookRedelivery.delete().where(WebhookRedelivery.subscription_id == subscription_id).execute()
        WebhookDelivery.delete().where(WebhookDelivery.subscription_id == subscription_id).execute()
        Sub.delete().where(Sub.id == subscription_id).execute()


def resume(subscription_id: str) -> records.WebhookOut:
    """Active again, its failures forgotten: the event it stopped at is tried at once."""
    find(subscription_id)
    Sub.update(status="active", consecutive_failures=0, next_attempt_at=None).where(
        Sub.id == subscription_id
    ).execute()
    return get(subscription_id)


def redeliver(subscription_id: str, event: Any) -> records.WebhookRedelivery:
    """Queue ``event`` again for this subscription, before the events after its cursor."""
    row = find(subscription_id)
    sequence = event_sequence(event) if isinstance(event, str) else None
    if sequence is None:
        raise InvalidInput.for_field("eventId", "must be an event id such as evt_0000000000000042")
    exists = m.Event.select().where(m.Event.id == sequence, m.Event.organization_id == row.organization_id)
    if not exists.exists():
        raise NotFound(f"no event {event_id(sequence)} of organization {quoted(row.organization_id)}")
    with write_transaction("webhooks"):
        queued = WebhookRedelivery.select().where(WebhookRedelivery.subscription_id == subscription_id)
        if queued.count() >= MAX_WEBHOOK_REDELIVERIES:
            raise InvalidInput.for_field(
                "eventId", f"at most {MAX_WEBHOOK_REDELIVERIES} redeliveries wait per subscription"
            )
        WebhookRedelivery.create(subscription_id=subscription_id, event_id=sequence)
    return records.WebhookRedelivery(queued=event_id(sequence), subscriptionId=subscription_id)


def deliveries(subscription_id: str, limit: Any = None) -> list[records.WebhookDeliveryOut]:
    """The last ``limit`` attempts of a subscription, oldest first."""
    find(subscription_id)
    count = _limit(limit)
    query = (
        WebhookDelivery.select()
        .where(WebhookDelivery.subscription_id == subscription_id)
        .order_by(WebhookDelivery.id.desc())
        .limit(count)
    )
    return [_delivery_out(row) for row in reversed(list(query))]


def _limit(limit: Any) -> int:
    if limit is None:
        return DEFAULT_DELIVERIES
    text = str(limit).strip()
    if (
        not (text.isascii() and text.isdigit() and len(text) <= 4)
        or not 1 <= int(text) <= MAX_WEBHOOK_DELIVERIES_KEPT
    ):
        raise InvalidInput.for_field(
            "limit", f"must be a whole number from 1 to {MAX_WEBHOOK_DELIVERIES_KEPT}"
        )
    return int(text)


def to_out(row: WebhookSubscription) -> records.WebhookOut:
    return records.WebhookOut(**_out_fields(row))


def _out_fields(row: WebhookSubscription) -> dict[str, Any]:
    pending = WebhookRedelivery.select().where(WebhookRedelivery.subscription_id == row.id).count()
    return {
        "id": row.id,
        "url": row.url,
        "organizationId": row.organization_id,
        "eventTypes": json.loads(row.event_types) if row.event_types else None,
        "signing": row.signing,
        "status": row.status,
        "maxFailures": row.max_failures,
        "consecutiveFailures": row.consecutive_failures,
        "lastEventId": event_id(row.cursor) if row.cursor else None,
        "nextAttemptAt": clock.format_timestamp(row.next_attempt_at),
        "pendingRedeliveries": pending,
        "createdAt": clock.format_timestamp(row.created_at),
    }


def _delivery_out(row: WebhookDelivery) -> records.WebhookDeliveryOut:
    return records.WebhookDeliveryOut.model_validate(
        {
            "id": row.id,
            "eventId": event_id(row.event_id),
            "attempt": row.attempt,
            "at": clock.format_timestamp(row.attempted_at),
            "status": row.status,
            "error": row.error,
            "latencyMs": row.latency_ms,
            "responseExcerpt": row.response_excerpt,
            "outcome": row.outcome,
            "fault": row.fault,
        }
    )
