"""The ``/_admin/webhooks`` and ``/_admin/webhook-faults`` handlers: webhook subscriptions,
their delivery log and redeliveries (``services.webhooks``), and delivery faults
(``services.webhook_faults``). ``admin_api`` routes each declared operation to these.

A sandbox's admin token (``request.scope``) sees and changes its organization's subscriptions
only (another's answer 404, as absent ones do) and subscribes for its organization when the
body names none, to public addresses and the networks ``serve --webhook-allow-network`` allows
only (``services.webhook_destinations``); delivery faults apply to every subscription, so they
are the full token's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sowctl.schemas.webhooks import DeliveryFaults
from sowctl.services import webhook_faults, webhooks

Handler = Callable[[Any, Any], Any]


def _body(request: Any) -> dict[str, Any]:
    body = request.body
    return body if isinstance(body, dict) else {}


def _own(request: Any) -> str:
    """The path's subscription id, once it is known to be the caller's to see."""
    subscription_id = request.params["id"]
    webhooks.require_in(subscription_id, request.scope)
    return subscription_id


def create(admin: Any, request: Any) -> dict[str, Any]:
    body = _body(request)
    organization_id = body.get("organizationId", request.scope)
    if request.scope is not None:
        request.own(organization_id)
    return webhooks.create(
        webhooks.NewWebhook(
            url=body.get("url"),
            organization_id=organization_id,
            event_types=body.get("eventTypes"),
            signing=body.get("signing"),
            secret=body.get("secret"),
            authorization=body.get("authorization"),
            max_failures=body.get("maxFailures"),
        ),
        admin.settings.webhook_allowed_networks,
    ).model_dump()


def list_all(admin: Any, request: Any) -> list[dict[str, Any]]:
    return [subscription.model_dump() for subscription in webhooks.list_all(request.scope)]


def get(admin: Any, request: Any) -> dict[str, Any]:
    return webhooks.get(_own(request)).model_dump()


def delete(admin: Any, request: Any) -> dict[str, Any]:
    subscription_id = _own(request)
    webhooks.delete(subscription_id)
    return {"deleted": subscription_id}


def resume(admin: Any, request: Any) -> dict[str, Any]:
    return webhooks.resume(_own(request)).model_dump()


def deliveries(admin: Any, request: Any) -> list[dict[str, Any]]:
    query = request.query if isinstance(request.query, dict) else {}
    return [attempt.model_dump() for attempt in webhooks.deliveries(_own(request), query.get("limit"))]


def redeliver(admin: Any, request: Any) -> dict[str, Any]:
    return webhooks.redeliver(_own(request), _body(request).get("eventId")).model_dump()


def get_faults(admin: Any, request: Any) -> dict[str, Any]:
    request.server_wide("webhook delivery faults")
    return DeliveryFaults(rules=webhook_faults.read()).model_dump()


def set_faults(admin: Any, request: Any) -> dict[str, Any]:
    request.server_wide("webhook delivery faults")
    return webhook_faults.store(webhook_faults.check(request.body)).model_dump()


def clear_faults(admin: Any, request: Any) -> dict[str, Any]:
    request.server_wide("webhook delivery faults")
    return webhook_faults.store([]).model_dump()


HANDLERS: dict[str, Handler] = {
    "admin.webhooks.create": create,
    "admin.webhooks.list": list_all,
    "admin.webhooks.get": get,
    "admin.webhooks.delete": delete,
    "admin.webhooks.resume": resume,
    "admin.webhooks.deliveries": deliveries,
    "admin.webhooks.redeliver": redeliver,
    "admin.webhooks.faults.get": get_faults,
    "admin.webhooks.faults.set": set_faults,
    "admin.webhooks.faults.clear": clear_faults,
}
