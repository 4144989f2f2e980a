"""Who a caller is (sowctl.server.callers), and the report slots one caller may hold."""

from __future__ import annotations

import pytest

from sowctl.foundation.errors import ServiceUnavailable
from sowctl.server.callers import caller_of_environ
from sowctl.server.slots import Slots


def _environ(path: str, authorization: str | None = None, api_key: str | None = None) -> dict:
    environ = {"PATH_INFO": path, "REMOTE_ADDR": "10.0.0.1"}
    if authorization is not None:
        environ["HTTP_AUTHORIZATION"] = authorization
    if api_key is not None:
        environ["HTTP_X_API_KEY"] = api_key
    return environ


@pytest.mark.parametrize("spelling", ["bearer T", "  BEARER   T  ", "\tBearer T"])
def test_a_token_is_one_caller_however_its_header_is_spelt(spelling: str) -> None:
    reference = caller_of_environ(_environ("/api/sows", "Bearer T"))
    assert caller_of_environ({**_environ("/api/sows", spelling), "REMOTE_ADDR": "10.0.0.2"}) == reference
    assert caller_of_environ(_environ("/api/sows", "Bearer U")) != reference
    secret = caller_of_environ(_environ("/api/sows", "Bearer sowt_abcdefghijklmnop"))
    assert isinstance(secret, bytes) and len(secret) == 16 and b"abcdefghijkl" not in secret  # a digest


@pytest.mark.parametrize("junk", ["junk1", "Bearer junk2", "x"])
def test_an_api_key_is_one_caller_whatever_authorization_comes_with_it(junk: str) -> None:
    """Group B authenticates by ``x-api-key`` alone: ``Authorization`` values do not make a
    key many callers (a key holding every report slot that way was found by an audit)."""
    path = "/api/external/purchase-orders"
    reference = caller_of_environ(_environ(path, api_key="K"))
    assert caller_of_environ(_environ(path, junk, " K ")) == reference
    assert caller_of_environ(_environ(path, api_key="L")) != reference


def test_without_a_credential_a_caller_is_its_host() -> None:
    assert caller_of_environ(_environ("/healthz")) == "10.0.0.1"
    # A credential of the other group's kind names no caller.
    assert caller_of_environ(_environ("/api/sows", api_key="K")) == "10.0.0.1"
    assert caller_of_environ(_environ("/api/external/budget-views", "Bearer T")) == "10.0.0.1"


def test_one_caller_holds_all_slots_but_one_and_another_gets_the_last() -> None:
    slots = Slots(3, wait=0.05, busy_message="busy")
    slots.acquire("A")
    slots.acquire("A")
    with pytest.raises(ServiceUnavailable):
        slots.acquire("A")  # its share is taken and none of its own finished within the wait
    slots.acquire("B")  # the slot kept for everyone else
    slots.release(caller="A")
    slots.acquire("A")  # one of its own finished: its share has room again
    with pytest.raises(ServiceUnavailable):
        slots.acquire("C")  # every slot is held now
    for caller in ("A", "A", "B"):
        slots.release(caller=caller)
    with slots.held("C"), slots.held("C"):
        pass
    slots.acquire("A")
    slots.acquire("A")  # all three free again: nothing of the refusals was kept


def test_a_single_slot_is_everyones() -> None:
    slots = Slots(1, wait=0.05, busy_message="busy")
    with slots.held("A"), pytest.raises(ServiceUnavailable):
        slots.acquire("B")
    with slots.held("B"):
        pass
