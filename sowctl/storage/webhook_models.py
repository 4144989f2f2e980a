"""Webhook subscriptions and their delivery log (schema v12): ``services.webhooks`` owns the rules.

Kept apart from ``models`` (the dataset's records): these tables hold no dataset records, are
never exported, and are emptied by ``POST /_admin/reset`` like every other state.
"""

from __future__ import annotations

import peewee as pw

from sowctl.storage.models import BaseModel


class WebhookSubscription(BaseModel):
    """Where one organization's events are POSTed, and how far its deliveries have come.

    ``cursor`` is the id of the last event delivered (or skipped as not subscribed to): the
    next one waits until it succeeded or the subscription was paused. ``next_attempt_at`` is on
    the service clock (a frozen clock holds retries); ``lease_until`` is wall-clock epoch
    seconds, taken by the one dispatcher that makes the current attempt (``lease_owner``).
    """

    id = pw.CharField(primary_key=True, max_length=64)
    organization_id = pw.CharField(max_length=64)
    url = pw.TextField()
    event_types = pw.TextField(null=True)  # JSON list of patterns; NULL: every event
    signing = pw.CharField(max_length=32)  # "standard-webhooks" or "authorization"
    # What the server signs with (the whsec_ secret) or sends (the Authorization value):
    # kept as given, since it must be used, and never shown again after creation.
    credential = pw.TextField()
    status = pw.CharField(max_length=16, default="active")  # "active" or "paused"
    max_failures = pw.IntegerField(default=5)
    consecutive_failures = pw.IntegerField(default=0)
    cursor = pw.BigIntegerField(default=0)
    next_attempt_at = pw.DateTimeField(null=True)
    lease_owner = pw.CharField(max_length=96, null=True)
    lease_until = pw.DoubleField(null=True)
    created_at = pw.DateTimeField()

    class Meta:
        table_name = "webhook_subscription"
        indexes = ((("status", "next_attempt_at"), False),)


class WebhookDelivery(BaseModel):
    """One attempt to deliver one event to one subscription (bounded per subscription)."""

    id = pw.AutoField()
    subscription_id = pw.CharField(max_length=64)
    event_id = pw.BigIntegerField()
    attempt = pw.IntegerField()
    attempted_at = pw.DateTimeField()  # service clock
    status = pw.IntegerField(null=True)  # the receiver's HTTP status, None when there was none
    error = pw.TextField(null=True)
    latency_ms = pw.IntegerField(default=0)
    response_excerpt = pw.TextField(null=True)
    outcome = pw.CharField(max_length=16)  # delivered, failed, dropped
    fault = pw.CharField(max_length=16, null=True)  # the injected delivery fault, if any

    class Meta:
        table_name = "webhook_delivery"
        indexes = ((("subscription_id", "id"), False),)


class WebhookRedelivery(BaseModel):
    """An event queued again for one subscription, out of band of its cursor."""

    id = pw.AutoField()
    subscription_id = pw.CharField(max_length=64)
    event_id = pw.BigIntegerField()

    class Meta:
        table_name = "webhook_redelivery"
        indexes = ((("subscription_id", "id"), False),)


# Emptied by ``POST /_admin/reset``: the subscriptions too (a reset forgets every state).
V12_MODELS: list[type[BaseModel]] = [WebhookRedelivery, WebhookDelivery, WebhookSubscription]
