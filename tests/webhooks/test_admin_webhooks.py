"""``/_admin/webhooks``: what a subscription may be (400 naming the field), unknown ids (404),
the secret shown once, the bound on subscriptions, and a reset forgetting them."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sowctl.foundation import budgets
from sowctl.services import webhooks
from sowctl.storage.webhook_models import WebhookSubscription
from tests.support.doubles import ADMIN, ORG, in_process, load

pytestmark = pytest.mark.database

URL = "http://127.0.0.1:9/hook"


@pytest.fixture
def client(migrated_db_url: str) -> httpx.Client:
    client = in_process(migrated_db_url)
    load(client)
    return client


def create(client: httpx.Client, **body: Any) -> httpx.Response:
    return client.post("/_admin/webhooks", json={"url": URL, "organizationId": ORG, **body}, headers=ADMIN)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"url": None}, "url: is required: an http:// or https:// URL"),
        (
            {"url": "ftp://example.test/h"},
            "url: 'ftp://example.test/h' is not an http:// or https:// URL with a host",
        ),
        ({"url": "http:///nohost"}, "url: 'http:///nohost' is not an http:// or https:// URL with a host"),
        ({"url": "http://u:p@example.test/"}, "url: must not carry credentials (use signing: authorization)"),
        ({"url": "http://example.test/" + "a" * 3000}, "url: must be at most 2048 characters"),
        (
            {"url": "http://example.test/a b"},
            "url: must be an ASCII URL without spaces or control characters",
        ),
        ({"url": "http://example.test:port/"}, "url: 'http://example.test:port/' is not a URL"),
        ({"organizationId": "org-nobody"}, "organizationId: no organization 'org-nobody'"),
        ({"organizationId": None}, "organizationId: is required: the organization whose events are sent"),
        ({"eventTypes": ["item.exploded"]}, None),
        (
            {"eventTypes": "item.created"},
            'eventTypes: must be an array of event types such as "item.created"',
        ),
        ({"eventTypes": []}, "eventTypes: must name at least one event type (omit it for every event)"),
        ({"eventTypes": ["item.created"] * 33}, "eventTypes: must list at most 32 event types"),
        ({"signing": "hmac"}, "signing: must be one of: standard-webhooks, authorization"),
        ({"secret": "plain"}, "secret: must be whsec_ followed by the base64 of 24 to 64 bytes"),
        ({"secret": "whsec_c2hvcnQ="}, "secret: must be whsec_ followed by the base64 of 24 to 64 bytes"),
        ({"signing": "authorization"}, "authorization: is required with signing: authorization"),
        ({"signing": "authorization", "authorization": "a\r\nb"}, None),
        ({"authorization": "Bearer x"}, "authorization: goes with signing: authorization only"),
        ({"maxFailures": 0}, "maxFailures: must be a whole number from 1 to 20"),
    ],
)
def test_a_wrong_subscription_is_refused_naming_the_field(
    client: httpx.Client, body: dict[str, Any], error: str | None
) -> None:
    response = create(client, **body)
    assert response.status_code == 400, response.text
    if error is None:
        assert response.json()["error"].split(":")[0] in {"eventTypes[0]", "authorization"}
    else:
        assert response.json()["error"] == error
    assert WebhookSubscription.select().count() == 0


def test_the_secret_is_shown_once_and_kept_to_sign(client: httpx.Client) -> None:
    secret = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"  # 24 bytes
    created = create(client, secret=secret, eventTypes=["item.created", "dependency.*"])
    assert created.status_code == 201
    hook = created.json()
    assert hook["secret"] == secret and hook["eventTypes"] == ["item.created", "dependency.*"]
    assert hook["status"] == "active" and hook["maxFailures"] == 5 and hook["signing"] == "standard-webhooks"
    for path in ("/_admin/webhooks", f"/_admin/webhooks/{hook['id']}"):
        shown = client.get(path, headers=ADMIN)
        assert shown.status_code == 200 and secret not in shown.text
    requests = client.get("/_admin/requests", headers=ADMIN).text
    assert secret not in requests


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/_admin/webhooks/wh_nothing", None),
        ("DELETE", "/_admin/webhooks/wh_nothing", None),
        ("POST", "/_admin/webhooks/wh_nothing/resume", None),
        ("GET", "/_admin/webhooks/wh_nothing/deliveries", None),
        ("POST", "/_admin/webhooks/wh_nothing/redeliver", {"eventId": "evt_0000000000000001"}),
    ],
)
def test_an_unknown_subscription_is_a_404(client: httpx.Client, method: str, path: str, body: Any) -> None:
    response = client.request(method, path, json=body, headers=ADMIN)
    assert response.status_code == 404
    assert response.json() == {"error": "no webhook subscription 'wh_nothing'"}


def test_redelivery_names_a_wrong_or_unknown_event(client: httpx.Client) -> None:
    hook = create(client).json()["id"]
    wrong = client.post(f"/_admin/webhooks/{hook}/redeliver", json={"eventId": "soon"}, headers=ADMIN)
    assert wrong.status_code == 400
    assert wrong.json() == {"error": "eventId: must be an event id such as evt_0000000000000042"}
    unknown = client.post(
        f"/_admin/webhooks/{hook}/redeliver", json={"eventId": "evt_0000000000000099"}, headers=ADMIN
    )
    assert unknown.status_code == 404
    assert unknown.json() == {"error": f"no event evt_0000000000000099 of organization '{ORG}'"}


def test_the_deliveries_limit_is_bounded(client: httpx.Client) -> None:
    hook = create(client).json()["id"]
    for limit in ("0", "201", "x", "9" * 40):
        response = client.get(f"/_admin/webhooks/{hook}/deliveries", params={"limit": limit}, headers=ADMIN)
        assert response.status_code == 400
        assert response.json() == {"error": "limit: must be a whole number from 1 to 200"}
    assert client.get(f"/_admin/webhooks/{hook}/deliveries", headers=ADMIN).json() == []


def test_a_server_keeps_a_bounded_number_of_subscriptions(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhooks, "MAX_WEBHOOKS", 2)
    assert budgets.MAX_WEBHOOKS == 100
    assert [create(client).status_code for _ in range(3)] == [201, 201, 400]
    assert create(client).json() == {"error": "url: this server keeps at most 2 webhook subscriptions"}
    assert WebhookSubscription.select().count() == 2


def test_delete_and_reset_forget_subscriptions(client: httpx.Client) -> None:
    first, second = create(client).json()["id"], create(client).json()["id"]
    deleted = client.delete(f"/_admin/webhooks/{first}", headers=ADMIN)
    assert deleted.status_code == 200 and deleted.json() == {"deleted": first}
    assert [hook["id"] for hook in client.get("/_admin/webhooks", headers=ADMIN).json()] == [second]
    assert client.post("/_admin/reset", headers=ADMIN).status_code == 200
    assert client.get("/_admin/webhooks", headers=ADMIN).json() == []


@pytest.mark.parametrize(
    ("rules", "error"),
    [
        ([{"kind": "explode"}], "rules[0].kind: must be one of: duplicate, delay, drop, reorder"),
        ([{"kind": "delay"}], "rules[0].delayMs: must be a whole number from 0 to 10000"),
        ([{"kind": "drop", "delayMs": 5}], "rules[0].delayMs: goes with kind: delay only"),
        ([{"kind": "drop", "rate": 2}], "rules[0].rate: must be a number from 0 to 1"),
        (
            [{"kind": "drop", "count": -1}],
            "rules[0].count: must be a whole number of attempts, or null for no limit",
        ),
        (
            [{"kind": "drop", "when": 1}],
            "rules[0].when: unknown field (expected: count, delayMs, kind, rate, subscriptionId)",
        ),
        ([{"kind": "drop"}] * 11, "rules: must hold at most 10 rules"),
    ],
)
def test_wrong_delivery_faults_are_refused(client: httpx.Client, rules: list[Any], error: str) -> None:
    response = client.put("/_admin/webhook-faults", json={"rules": rules}, headers=ADMIN)
    assert response.status_code == 400 and response.json() == {"error": error}
    assert client.get("/_admin/webhook-faults", headers=ADMIN).json() == {"rules": []}


def test_delivery_faults_are_stored_and_cleared(client: httpx.Client) -> None:
    stored = client.put(
        "/_admin/webhook-faults", json={"rules": [{"kind": "duplicate", "count": 2}]}, headers=ADMIN
    )
    expected = {"kind": "duplicate", "rate": 1.0, "count": 2, "delayMs": None, "subscriptionId": None}
    assert stored.status_code == 200 and stored.json() == {"rules": [expected]}
    assert client.get("/_admin/webhook-faults", headers=ADMIN).json() == {"rules": [expected]}
    assert client.delete("/_admin/webhook-faults", headers=ADMIN).json() == {"rules": []}
