"""Webhook deliveries made by the dispatcher in process: signing, retries on the service clock,
pause and resume, redelivery, the delivery log, delivery faults, and one attempt per lease."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from sowctl.foundation import clock, trace_context
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.webhooks import WebhookCreated
from sowctl.server.webhook_dispatcher import Dispatcher
from sowctl.services import demo_data, items, webhook_dispatch, webhook_faults, webhooks
from sowctl.services.access import Caller
from sowctl.services.dataset import import_dataset
from sowctl.storage.webhook_models import WebhookSubscription
from tests.support.receiver import Receiver, verify_standard_webhooks

pytestmark = pytest.mark.database

ORG = demo_data.DEMO_ORG
SOW = demo_data.DEMO_SOW
START = datetime.datetime(2026, 1, 1, 12, 0, 0)


@pytest.fixture
def demo(db: Any) -> Any:
    import_dataset(demo_data.demo_dataset(datetime.date(2026, 1, 1)))
    clock.set_fixed_now(START)
    return db


def dispatcher(db: Any) -> Dispatcher:
    return Dispatcher(lambda: db.connect(reuse_if_open=True), lambda: None, poll_seconds=0.05)


def create_item(title: str) -> str:
    return items.create_item(Caller.local(), SOW, ItemCreate(title=title, type="requirement")).id


def subscribe(url: str, **fields: Any) -> WebhookCreated:
    return webhooks.create(webhooks.NewWebhook(url=url, organization_id=ORG, **fields))


def run(db: Any, rounds: int = 1) -> Dispatcher:
    sender = dispatcher(db)
    for _ in range(rounds):
        sender.poll_once()
        assert sender.settle(30)
    return sender


def test_an_item_create_is_delivered_signed(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url)
    item_id = create_item("Walls")
    run(demo)
    (got,) = receiver.wait_for(1)
    assert verify_standard_webhooks(hook.secret, got)
    assert got.headers["content-type"] == "application/json"
    assert got.headers["user-agent"].startswith("sowctl/")
    event = got.event
    assert event["type"] == "item.created" and event["resourceId"] == item_id
    assert event["id"] == got.headers["webhook-id"] and event["id"].startswith("evt_")
    assert event["data"]["title"] == "Walls" and event["organizationId"] == ORG
    log = webhooks.deliveries(hook.id)
    assert [(d.eventId, d.attempt, d.status, d.outcome) for d in log] == [(event["id"], 1, 200, "delivered")]
    assert log[0].responseExcerpt == "answered 200"
    assert webhooks.get(hook.id).lastEventId == event["id"]
    run(demo)  # nothing new: nothing sent again
    assert len(receiver.received) == 1


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_delivery_carries_the_traceparent_of_the_request_that_made_the_change(
    demo: Any, receiver: Receiver
) -> None:
    subscribe(receiver.url)
    with trace_context.serving(TRACEPARENT):
        create_item("Traced")
    create_item("Untraced")
    run(demo)
    traced, untraced = receiver.wait_for(2)
    assert traced.event["data"]["title"] == "Traced" and traced.headers["traceparent"] == TRACEPARENT
    assert "traceparent" not in untraced.headers


def test_a_wrong_secret_does_not_verify(demo: Any, receiver: Receiver) -> None:
    subscribe(receiver.url)
    create_item("Walls")
    run(demo)
    (got,) = receiver.wait_for(1)
    assert not verify_standard_webhooks(webhooks.new_secret(), got)


def test_authorization_signing_sends_the_fixed_header(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url, signing="authorization", authorization="Bearer procore-like")
    assert hook.secret is None
    create_item("Walls")
    run(demo)
    (got,) = receiver.wait_for(1)
    assert got.headers["authorization"] == "Bearer procore-like"
    assert "webhook-signature" not in got.headers


def test_events_before_the_subscription_are_not_delivered(demo: Any, receiver: Receiver) -> None:
    create_item("Before")
    subscribe(receiver.url)
    create_item("After")
    run(demo)
    (got,) = receiver.wait_for(1)
    assert got.event["data"]["title"] == "After"


def test_unsubscribed_types_are_skipped(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url, event_types=["dependency.*"])
    create_item("Walls")
    run(demo)
    assert receiver.received == []
    assert webhooks.get(hook.id).lastEventId is not None  # the cursor moved past it


def test_a_failing_receiver_is_retried_when_the_service_clock_moves(demo: Any, receiver: Receiver) -> None:
    receiver.default = 500
    hook = subscribe(receiver.url, max_failures=3)
    create_item("Walls")
    run(demo)
    receiver.wait_for(1)
    shown = webhooks.get(hook.id)
    assert shown.consecutiveFailures == 1 and shown.nextAttemptAt == "2026-01-01T12:00:05Z"
    run(demo, rounds=3)  # the clock is frozen: the retry is not due
    assert len(receiver.received) == 1
    clock.set_fixed_now(START + datetime.timedelta(seconds=5))
    run(demo)
    receiver.wait_for(2)
    assert webhooks.get(hook.id).nextAttemptAt == "2026-01-01T12:00:35Z"  # 30 s after
    clock.set_fixed_now(START + datetime.timedelta(hours=1))
    run(demo)
    receiver.wait_for(3)
    paused = webhooks.get(hook.id)
    assert paused.status == "paused" and paused.consecutiveFailures == 3
    clock.set_fixed_now(START + datetime.timedelta(days=1))
    run(demo, rounds=2)
    assert len(receiver.received) == 3  # paused: no more attempts
    log = webhooks.deliveries(hook.id)
    assert [(d.attempt, d.status, d.outcome) for d in log] == [
        (1, 500, "failed"),
        (2, 500, "failed"),
        (3, 500, "failed"),
    ]
    receiver.default = 200
    resumed = webhooks.resume(hook.id)
    assert resumed.status == "active" and resumed.consecutiveFailures == 0
    run(demo)
    got = receiver.wait_for(4)
    assert got[3].event["id"] == got[0].event["id"]  # the same event, delivered at last
    assert webhooks.deliveries(hook.id)[-1].outcome == "delivered"


def test_a_backlog_goes_out_in_one_claim_recorded_in_one_transaction(
    demo: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = subscribe(receiver.url)
    for title in ("One", "Two", "Three", "Four", "Five"):
        create_item(title)
    recorded: list[int] = []
    real = webhook_dispatch.finish_batch

    def finish_batch(done: Any, owner: str, delivered_up_to: Any, *, failed: bool) -> bool:
        recorded.append(len(done))
        return real(done, owner, delivered_up_to, failed=failed)

    monkeypatch.setattr(webhook_dispatch, "finish_batch", finish_batch)
    run(demo)  # one poll, one claim
    got = receiver.wait_for(5)
    assert [r.event["data"]["title"] for r in got] == ["One", "Two", "Three", "Four", "Five"]
    assert recorded == [5]
    assert [d.outcome for d in webhooks.deliveries(hook.id)] == ["delivered"] * 5
    assert webhooks.get(hook.id).lastEventId == got[-1].event["id"]


def test_a_failure_in_a_batch_keeps_what_was_delivered_before_it(demo: Any, receiver: Receiver) -> None:
    receiver.statuses = [200, 503]
    hook = subscribe(receiver.url)
    create_item("First")
    create_item("Second")
    run(demo)
    got = receiver.wait_for(2)
    assert [r.event["data"]["title"] for r in got] == ["First", "Second"]
    shown = webhooks.get(hook.id)
    assert shown.lastEventId == got[0].event["id"] and shown.consecutiveFailures == 1
    assert [d.outcome for d in webhooks.deliveries(hook.id)] == ["delivered", "failed"]


def test_the_next_event_waits_for_the_current_one(demo: Any, receiver: Receiver) -> None:
    receiver.statuses = [503]
    subscribe(receiver.url)
    create_item("First")
    create_item("Second")
    run(demo)
    clock.set_fixed_now(START + datetime.timedelta(seconds=5))
    run(demo)
    run(demo)
    got = receiver.wait_for(3)
    assert [r.event["data"]["title"] for r in got] == ["First", "First", "Second"]


def test_a_receiver_that_does_not_answer_in_time_is_a_failed_attempt(demo: Any, receiver: Receiver) -> None:
    counted: list[str] = []
    receiver.hold = 1.0
    hook = subscribe(receiver.url)
    create_item("Walls")
    sender = Dispatcher(
        lambda: demo.connect(reuse_if_open=True), lambda: None, count=counted.append, timeout=0.2
    )
    sender.poll_once()
    assert sender.settle(30)
    (entry,) = webhooks.deliveries(hook.id)
    assert (entry.outcome, entry.status, entry.error) == ("failed", None, "timed out")
    assert counted == ["timeout"]
    assert webhooks.get(hook.id).consecutiveFailures == 1


def test_only_the_start_of_an_answer_is_kept(demo: Any, receiver: Receiver) -> None:
    receiver.reply = b"x" * 100_000
    hook = subscribe(receiver.url)
    create_item("Walls")
    run(demo)
    (entry,) = webhooks.deliveries(hook.id)
    assert entry.responseExcerpt == "x" * 512 and entry.outcome == "delivered"


def test_a_refused_connection_is_a_failed_attempt(demo: Any) -> None:
    hook = subscribe("http://127.0.0.1:9/nothing-listens")
    create_item("Walls")
    run(demo)
    (entry,) = webhooks.deliveries(hook.id)
    assert entry.outcome == "failed" and entry.status is None
    assert entry.error.startswith("ConnectError")


def test_redelivery_sends_an_event_again(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url)
    create_item("Walls")
    run(demo)
    (first,) = receiver.wait_for(1)
    queued = webhooks.redeliver(hook.id, first.event["id"])
    assert queued.model_dump() == {"queued": first.event["id"], "subscriptionId": hook.id}
    assert webhooks.get(hook.id).pendingRedeliveries == 1
    run(demo)
    got = receiver.wait_for(2)
    assert got[1].body == first.body
    assert webhooks.get(hook.id).pendingRedeliveries == 0


def test_one_lease_one_attempt(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url)
    create_item("Walls")
    now = 1_000_000.0
    assert webhook_dispatch.claim(hook.id, "first", now)
    assert not webhook_dispatch.claim(hook.id, "second", now + 1)
    assert webhook_dispatch.due(clock.now(), now + 1, 10) == []  # leased: not due for anyone
    webhook_dispatch.release(hook.id, "first")
    assert webhook_dispatch.claim(hook.id, "second", now + 2)
    # A lease that lapsed (its dispatcher died) is taken over.
    assert webhook_dispatch.claim(hook.id, "third", now + 2 + webhook_dispatch.LEASE_SECONDS + 1)


def test_many_dispatchers_deliver_each_event_once(demo: Any, receiver: Receiver) -> None:
    subscribe(receiver.url)
    for n in range(6):
        create_item(f"Item {n}")
    senders = [dispatcher(demo) for _ in range(3)]
    for _ in range(12):
        for sender in senders:
            sender.poll_once()
        for sender in senders:
            assert sender.settle(30)
    got = receiver.wait_for(6)
    assert [r.event["data"]["title"] for r in got] == [f"Item {n}" for n in range(6)]
    assert len(receiver.received) == 6


def test_the_delivery_log_is_bounded(demo: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook_dispatch, "MAX_WEBHOOK_DELIVERIES_KEPT", 2)
    hook = subscribe(receiver.url)
    for n in range(4):
        create_item(f"Item {n}")
    run(demo, rounds=4)
    receiver.wait_for(4)
    log = webhooks.deliveries(hook.id)
    assert [entry.eventId for entry in log] == [r.event["id"] for r in receiver.received[2:]]


# --- delivery faults -----------------------------------------------------------------------------


def test_a_duplicate_fault_sends_the_event_twice(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url)
    webhook_faults.store(webhook_faults.check({"rules": [{"kind": "duplicate", "count": 1}]}))
    create_item("Walls")
    create_item("Roof")
    run(demo, rounds=2)
    got = receiver.wait_for(3)
    assert [r.event["data"]["title"] for r in got] == ["Walls", "Walls", "Roof"]
    assert got[0].body == got[1].body
    assert webhook_faults.read()[0].count == 0
    assert [d.fault for d in webhooks.deliveries(hook.id)] == [None, "duplicate", None]


def test_a_drop_fault_fails_the_attempt_without_sending(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url)
    webhook_faults.store(webhook_faults.check({"rules": [{"kind": "drop", "count": 1}]}))
    create_item("Walls")
    run(demo)
    assert receiver.received == []
    assert webhooks.deliveries(hook.id)[0].outcome == "dropped"
    clock.set_fixed_now(START + datetime.timedelta(seconds=5))
    run(demo)
    (got,) = receiver.wait_for(1)
    assert got.event["data"]["title"] == "Walls"


def test_a_reorder_fault_sends_the_next_event_first(demo: Any, receiver: Receiver) -> None:
    subscribe(receiver.url)
    webhook_faults.store(webhook_faults.check({"rules": [{"kind": "reorder", "count": 1}]}))
    for title in ("First", "Second", "Third"):
        create_item(title)
    run(demo, rounds=2)
    got = receiver.wait_for(3)
    assert [r.event["data"]["title"] for r in got] == ["Second", "First", "Third"]


def test_a_delay_fault_holds_the_attempt(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url)
    rule = {"kind": "delay", "delayMs": 300, "subscriptionId": hook.id}
    webhook_faults.store(webhook_faults.check({"rules": [rule]}))
    create_item("Walls")
    run(demo)
    receiver.wait_for(1)
    (entry,) = webhooks.deliveries(hook.id)
    assert entry.fault == "delay" and entry.outcome == "delivered"


def test_a_fault_scoped_to_another_subscription_does_not_apply(demo: Any, receiver: Receiver) -> None:
    subscribe(receiver.url)
    webhook_faults.store(webhook_faults.check({"rules": [{"kind": "drop", "subscriptionId": "wh_other"}]}))
    create_item("Walls")
    run(demo)
    assert len(receiver.wait_for(1)) == 1


def test_the_stored_subscription_keeps_the_secret_out_of_listings(demo: Any, receiver: Receiver) -> None:
    hook = subscribe(receiver.url)
    listed = [subscription.model_dump() for subscription in webhooks.list_all()]
    assert hook.secret not in json.dumps(listed) and "secret" not in listed[0]
    stored = WebhookSubscription.get_by_id(hook.id)
    assert stored.credential == hook.secret  # kept as given: the server signs with it


def test_an_attempt_that_breaks_gives_its_lease_back(
    demo: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = subscribe(receiver.url)
    create_item("Walls")
    real = webhook_dispatch.next_work
    broken = iter([True])

    def next_work(subscription_id: str, owner: str, after: int | None = None) -> Any:
        if next(broken, False):
            raise RuntimeError("the database went away")
        return real(subscription_id, owner, after)

    monkeypatch.setattr(webhook_dispatch, "next_work", next_work)
    run(demo)
    assert receiver.received == []
    stored = WebhookSubscription.get_by_id(hook.id)
    assert stored.lease_owner is None and stored.lease_until is None
    run(demo)
    assert len(receiver.wait_for(1)) == 1
