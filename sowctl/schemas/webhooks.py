"""Webhook subscriptions and their delivery log: the admin API's bodies and answers
(``/_admin/webhooks``), also what the CLI's ``sowctl webhooks`` shows."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sowctl.schemas.admin import AdminModel

SIGNING_SCHEMES = ("standard-webhooks", "authorization")
SigningScheme = Literal["standard-webhooks", "authorization"]
STATUSES = ("active", "paused")
OUTCOMES = ("delivered", "failed", "dropped")
DELIVERY_FAULT_KINDS = ("duplicate", "delay", "drop", "reorder")


class WebhookCreate(AdminModel):
    """What a subscription is made of; the rules (each naming its field) are ``services.webhooks``'."""

    url: str = Field(description="Where deliveries are POSTed: an http(s) URL with a host")
    organizationId: str = Field(description="Whose events are delivered")
    eventTypes: list[str] | None = Field(
        None,
        description='Event types ("item.created") or a resource\'s every type ("dependency.*"); '
        "omitted or null: every event",
    )
    signing: SigningScheme = Field(
        "standard-webhooks", description="standard-webhooks (the default) or authorization"
    )
    secret: str | None = Field(
        None, description="standard-webhooks: a whsec_ secret to sign with; generated when omitted"
    )
    authorization: str | None = Field(
        None, description="authorization: the Authorization header value sent with each delivery"
    )
    maxFailures: int | None = Field(
        None, description="Consecutive failed attempts before the subscription pauses"
    )


class WebhookRedeliver(AdminModel):
    eventId: str = Field(description="The event to deliver again (evt_... or its number)")


class WebhookDeliveriesQuery(AdminModel):
    limit: int | None = Field(None, description="The last N attempts (1 to 200; default 50)")


class WebhookOut(AdminModel):
    id: str
    url: str
    organizationId: str
    eventTypes: list[str] | None = Field(description="null: every event")
    signing: SigningScheme
    status: Literal["active", "paused"]
    maxFailures: int
    consecutiveFailures: int
    lastEventId: str | None = Field(description="The last event delivered (or skipped as not subscribed to)")
    nextAttemptAt: str | None = Field(description="When the next retry is due, on the service clock")
    pendingRedeliveries: int
    createdAt: str


class WebhookCreated(WebhookOut):
    secret: str | None = Field(
        None, description="standard-webhooks: the signing secret; shown here only, never again"
    )


class WebhookDeliveryOut(AdminModel):
    id: int
    eventId: str
    attempt: int = Field(description="1 for the first attempt at this event, 2 for its first retry...")
    at: str = Field(description="When the attempt was made, on the service clock")
    status: int | None = Field(description="The receiver's HTTP status; null when there was no answer")
    error: str | None
    latencyMs: int
    responseExcerpt: str | None = Field(description="The start of the receiver's answer")
    outcome: Literal["delivered", "failed", "dropped"]
    fault: str | None = Field(description="The injected delivery fault, if any")


class WebhookDeleted(AdminModel):
    deleted: str


class WebhookRedelivery(AdminModel):
    queued: str = Field(description="The event queued again")
    subscriptionId: str


class DeliveryFaultRule(AdminModel):
    kind: Literal["duplicate", "delay", "drop", "reorder"]
    rate: float = Field(1.0, ge=0, le=1, description="The share of attempts it applies to")
    count: int | None = Field(
        None, ge=0, description="Apply to this many attempts, then stop; null: no limit"
    )
    delayMs: int | None = Field(None, ge=0, description="delay: how long an attempt is held")
    subscriptionId: str | None = Field(None, description="Only this subscription's attempts; null: every one")


class DeliveryFaults(AdminModel):
    rules: list[DeliveryFaultRule] = Field(description="The faults injected in webhook deliveries")
