"""The ``/_admin/webhooks`` and ``/_admin/webhook-faults`` handlers: webhook subscriptions,
their delivery log and redeliveries (``services.webhooks``), and delivery faults
(``services.webhook_faults``). ``admin_api`` routes each declared operation to these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sowctl.services import webhook_faults, webhooks

Handler = Callable[[Any, Any], Any]


def _body(request: Any) -> dict[str, Any]:
    body = request.body
    return body if isinstance(body, dict) else {}


def create(admin: Any, request: Any) -> dict[str, Any]:
    body = _body(request)
    return webhooks.create(
        webhooks.NewWebhook(
            url=body.get("url"),
            organization_id=body.get("organizationId"),
            event_types=body.get("eventTypes"),
            signing=body.get("signing"),
            secret=body.get("secret"),
            authorization=body.get("authorization"),
            max_failures=body.get("maxFailures"),
        )
    )


def list_all(admin: Any, request: Any) -> list[dict[str, Any]]:
    return webhooks.list_all()


def get(admin: Any, request: Any) -> dict[str, Any]:
    return webhooks.get(request.params["id"])


def delete(admin: Any, request: Any) -> dict[str, Any]:
    webhooks.delete(request.params["id"])
    return {"deleted": request.params["id"]}


def resume(admin: Any, request: Any) -> dict[str, Any]:
    return webhooks.resume(request.params["id"])


def deliveries(admin: Any, request: Any) -> list[dict[str, Any]]:
    query = request.query if isinstance(request.query, dict) else {}
    return webhooks.deliveries(request.params["id"], query.get("limit"))


def redeliver(admin: Any, request: Any) -> dict[str, Any]:
    return webhooks.redeliver(request.params["id"], _body(request).get("eventId"))


def get_faults(admin: Any, request: Any) -> dict[str, Any]:
    return {"rules": webhook_faults.read()}


def set_faults(admin: Any, request: Any) -> dict[str, Any]:
    return webhook_faults.store(webhook_faults.check(request.body))


def clear_faults(admin: Any, request: Any) -> dict[str, Any]:
    return webhook_faults.store([])


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
