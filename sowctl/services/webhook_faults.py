"""Faults injected in webhook deliveries, for testing a receiver (``/_admin/webhook-faults``).

Each rule is one of:

* ``duplicate``: the event is sent twice;
* ``delay``: the attempt is held ``delayMs`` milliseconds (at most ``MAX_FAULT_DELAY_MS``);
* ``drop``: the attempt counts as failed without being sent (at-least-once delivery then
  retries it, on the service clock);
* ``reorder``: the subscription's next event is sent before this one, once.

A rule applies to an attempt with probability ``rate`` (default 1), to at most ``count``
attempts (null: no limit; the count is kept in the database and goes down as it is used, so
every worker and server shares it), and to one subscription's attempts or to every one.
The rules live in the ``Meta`` row ``webhook_faults``; a reset forgets them.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

from sowctl.foundation.budgets import MAX_DELIVERY_FAULT_RULES
from sowctl.foundation.errors import InvalidInput
from sowctl.schemas.webhooks import DELIVERY_FAULT_KINDS, DeliveryFaultRule, DeliveryFaults
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction

META_KEY = "webhook_faults"
MAX_FAULT_DELAY_MS = 10_000
_FIELDS = {"kind", "rate", "count", "delayMs", "subscriptionId"}


def check(body: Any) -> list[DeliveryFaultRule]:
    """The rules of a ``{"rules": [...]}`` body, each complete; InvalidInput naming the field."""
    if not isinstance(body, dict) or not isinstance(body.get("rules"), list):
        raise InvalidInput.for_field("rules", "is required: an array of delivery fault rules")
    rules = body["rules"]
    if len(rules) > MAX_DELIVERY_FAULT_RULES:
        raise InvalidInput.for_field("rules", f"must hold at most {MAX_DELIVERY_FAULT_RULES} rules")
    return [_rule(rule, f"rules[{index}]") for index, rule in enumerate(rules)]


def _rule(rule: Any, at: str) -> DeliveryFaultRule:
    if not isinstance(rule, dict):
        raise InvalidInput.for_field(at, 'must be an object such as {"kind": "duplicate"}')
    unknown = sorted(set(rule) - _FIELDS)
    if unknown:
        raise InvalidInput.for_field(
            f"{at}.{unknown[0]}", f"unknown field (expected: {', '.join(sorted(_FIELDS))})"
        )
    kind = rule.get("kind")
    if kind not in DELIVERY_FAULT_KINDS:
        raise InvalidInput.for_field(f"{at}.kind", f"must be one of: {', '.join(DELIVERY_FAULT_KINDS)}")
    rate = rule.get("rate", 1)
    if (
        isinstance(rate, bool)
        or not isinstance(rate, int | float)
        or not (math.isfinite(rate) and 0 <= rate <= 1)
    ):
        raise InvalidInput.for_field(f"{at}.rate", "must be a number from 0 to 1")
    count = rule.get("count")
    if count is not None and (
        isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 10**6
    ):
        raise InvalidInput.for_field(
            f"{at}.count", "must be a whole number of attempts, or null for no limit"
        )
    delay = rule.get("delayMs")
    if kind == "delay":
        if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_FAULT_DELAY_MS:
            raise InvalidInput.for_field(
                f"{at}.delayMs", f"must be a whole number from 0 to {MAX_FAULT_DELAY_MS}"
            )
    elif delay is not None:
        raise InvalidInput.for_field(f"{at}.delayMs", "goes with kind: delay only")
    subscription = rule.get("subscriptionId")
    if subscription is not None and (not isinstance(subscription, str) or not 0 < len(subscription) <= 64):
        raise InvalidInput.for_field(
            f"{at}.subscriptionId", "must be a webhook subscription id, or null for every one"
        )
    return DeliveryFaultRule(
        kind=kind, rate=float(rate), count=count, delayMs=delay, subscriptionId=subscription
    )


def read() -> list[DeliveryFaultRule]:
    row = m.Meta.get_or_none(m.Meta.key == META_KEY)
    if row is None:
        return []
    try:
        return check(json.loads(row.value))
    except (ValueError, InvalidInput):
        return []


def store(rules: list[DeliveryFaultRule]) -> DeliveryFaults:
    faults = DeliveryFaults(rules=rules)
    text = json.dumps(faults.model_dump(), separators=(",", ":"))
    m.Meta.insert(key=META_KEY, value=text).on_conflict(
        conflict_target=[m.Meta.key], update={m.Meta.value: text}
    ).execute()
    return faults


def draw(subscription_id: str, rng: random.Random) -> dict[str, DeliveryFaultRule]:
    """The faults that apply to one attempt, by kind (the first applying rule of each kind)."""
    chosen: dict[str, DeliveryFaultRule] = {}
    for index, rule in enumerate(read()):
        if rule.kind in chosen or rule.subscriptionId not in (None, subscription_id):
            continue
        if rule.count == 0 or rng.random() >= rule.rate:
            continue
        if rule.count is None or _take(index, rule):
            chosen[rule.kind] = rule
    return chosen


def _take(index: int, rule: DeliveryFaultRule) -> bool:
    """Use up one application of a counted rule, atomically across workers."""
    with write_transaction(META_KEY):
        rules = read()
        count = rules[index].count if index < len(rules) and rules[index].kind == rule.kind else None
        if not count:
            return False
        rules[index] = rules[index].model_copy(update={"count": count - 1})
        store(rules)
    return True
