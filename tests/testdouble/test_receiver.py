"""The pytest plugin's webhook receiver: it keeps deliveries, checks Standard Webhooks
signatures, fails on request, and waits with a readable failure."""

from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook

from sowctl.testing.receiver import MAX_BODY_BYTES, WebhookReceiver

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def _send(receiver: WebhookReceiver, event: dict, *, secret: str = SECRET) -> httpx.Response:
    body = json.dumps(event)
    msg_id = event["id"]
    now = datetime.now(UTC)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, now, body),
        "content-type": "application/json",
    }
    return httpx.post(receiver.url, content=body.encode(), headers=headers)


def _event(number: int, **fields) -> dict:
    return {"id": f"evt_{number:016d}", "type": "item.created", "data": {"title": "Walls"}, **fields}


def test_a_signed_delivery_is_accepted_and_found() -> None:
    with WebhookReceiver(SECRET) as receiver:
        assert _send(receiver, _event(1)).status_code == 200
        found = receiver.wait_for("item.created", data={"title": "Walls"}, timeout=1)
        assert found.signature_valid is True
        assert found.event["id"] == "evt_0000000000000001"
        assert receiver.events == [_event(1)]


def test_a_wrong_signature_is_refused_and_fails_the_wait() -> None:
    with WebhookReceiver(SECRET) as receiver:
        response = _send(receiver, _event(2), secret="whsec_" + "QUJD" * 8)
        assert response.status_code == 401
        assert receiver.deliveries[0].signature_valid is False
        with pytest.raises(AssertionError, match="signature that does not verify"):
            receiver.wait_for("item.created", timeout=0.2)


def test_queued_statuses_answer_the_next_deliveries_then_200() -> None:
    with WebhookReceiver(SECRET) as receiver:
        receiver.respond(500, 503)
        statuses = [_send(receiver, _event(n)).status_code for n in (1, 2, 3)]
        assert statuses == [500, 503, 200]
        assert [e["id"] for e in receiver.events] == ["evt_0000000000000003"]


def test_a_wait_that_finds_nothing_names_the_closest_deliveries() -> None:
    with WebhookReceiver(SECRET) as receiver:
        _send(receiver, _event(1, data={"title": "Wall"}))
        started = time.monotonic()
        with pytest.raises(AssertionError) as failure:
            receiver.wait_for("item.created", data={"title": "Walls"}, timeout=0.3)
        assert time.monotonic() - started >= 0.3
        message = str(failure.value)
        assert 'no delivery matching {"type": "item.created", "data": {"title": "Walls"}}' in message
        assert "evt_0000000000000001 item.created" in message
        assert 'data.title: expected "Walls", got "Wall"' in message


def test_a_wait_returns_as_soon_as_the_delivery_arrives() -> None:
    with WebhookReceiver(SECRET) as receiver:
        import threading

        threading.Timer(0.2, _send, args=(receiver, _event(7))).start()
        assert receiver.wait_for(timeout=5).event["id"] == "evt_0000000000000007"


def test_an_oversized_body_is_refused_unread() -> None:
    with WebhookReceiver(SECRET) as receiver:
        port = int(receiver.url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            head = f"POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
            conn.sendall(head.encode())
            assert conn.recv(64).startswith(b"HTTP/1.0 413")
        assert receiver.deliveries == []


def test_the_authorization_scheme_checks_the_header() -> None:
    with WebhookReceiver(authorization="Bearer hook-secret") as receiver:
        body = json.dumps(_event(1)).encode()
        good = httpx.post(receiver.url, content=body, headers={"authorization": "Bearer hook-secret"})
        bad = httpx.post(receiver.url, content=body, headers={"authorization": "Bearer other"})
        assert (good.status_code, bad.status_code) == (200, 401)


def test_the_fixture_gives_a_receiver_with_a_secret(sowctl_receiver: WebhookReceiver) -> None:
    assert sowctl_receiver.secret is not None and sowctl_receiver.secret.startswith("whsec_")
    assert _send(sowctl_receiver, _event(3), secret=sowctl_receiver.secret).status_code == 200
