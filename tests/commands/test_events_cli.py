"""sowctl events: list, tail and trigger, in local mode and in remote mode on the same database."""

from __future__ import annotations

import json

import pytest

from sowctl.commands import events as events_command
from tests.support.modes import LOCAL_ORG, Modes

pytestmark = pytest.mark.database  # the feed is read from the outbox table


def feed(modes: Modes, *args: str) -> dict:
    result = modes.local("events", "list", "--json", "--limit", "1000", *args)
    assert result.exit_code == 0, result.stderr
    return result.json()


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_trigger_prints_the_events_it_made(modes: Modes, mode: str) -> None:
    run = getattr(modes, mode)
    made = {}
    for event_type in ("item.created", "item.updated", "item.deleted", "dependency.updated", "sow.deleted"):
        result = run("events", "trigger", event_type)
        assert result.exit_code == 0, result.stderr
        (line,) = result.stdout.splitlines()
        event_id, shown_type, resource_id = line.split(" ")
        assert shown_type == event_type
        made[event_id] = (event_type, resource_id)
    stored = {e["id"]: (e["type"], e["resourceId"]) for e in feed(modes)["events"]}
    assert made.items() <= stored.items()
    assert all(e["organizationId"] == LOCAL_ORG for e in feed(modes)["events"])


def test_trigger_set_fields_reach_the_record_and_bad_ones_name_the_option(modes: Modes) -> None:
    result = modes.local("events", "trigger", "item.updated", "--set", "status=completed", "--json")
    assert result.exit_code == 0, result.stderr
    (event,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert event["type"] == "item.updated"
    assert event["data"]["status"] == "completed"
    assert event["data"]["sowId"] == "sowctl-trigger"
    count = len(feed(modes)["events"])
    for args, named in (
        (("item.created", "--set", "orderIndex=x"), "--set orderIndex"),
        (("item.created", "--set", "colour=red"), "--set colour"),
        (("sow.updated", "--set", "title="), "--set title"),
        (("item.created", "--set", "nothing"), "--set"),
    ):
        refused = modes.local("events", "trigger", *args)
        assert refused.exit_code == 2, refused.stdout
        assert named in refused.stderr
    assert len(feed(modes)["events"]) == count  # a refused trigger makes nothing
    unknown = modes.local("events", "trigger", "purchaseOrder.updated")
    assert unknown.exit_code == 2 and "TYPE" in unknown.stderr


def test_list_in_both_modes_and_its_filters(modes: Modes) -> None:
    for _ in range(3):
        assert modes.local("events", "trigger", "item.created").exit_code == 0
    local, remote = modes.both("events", "list", "--json", "--type", "item.*")
    assert local.exit_code == remote.exit_code == 0, (local.stderr, remote.stderr)
    assert local.json() == remote.json()
    assert [e["type"] for e in local.json()["events"]] == ["item.created"] * 3
    page = modes.remote("events", "list", "--limit", "2")
    assert page.exit_code == 0
    assert len(page.stdout.splitlines()) == 2
    assert "more events follow: --since evt_" in page.stderr
    bad = modes.remote("events", "list", "--type", "item.exploded")
    assert bad.exit_code == 2 and "item.exploded" in bad.stderr
    refused = modes.remote("events", "list", "--org", "other")
    assert refused.exit_code == 2 and "--admin-token" in refused.stderr


def test_a_bad_since_or_type_is_refused_naming_the_option_in_every_mode(modes: Modes) -> None:
    local, remote = modes.both("events", "list", "--since", "bogus")
    scoped = modes.local("events", "list", "--org", LOCAL_ORG, "--type", "nope")
    for refused in (local, remote):
        assert refused.exit_code == 2 and "invalid --since 'bogus'" in refused.stderr, refused.stderr
    assert scoped.exit_code == 2 and "invalid --type 'nope'" in scoped.stderr, scoped.stderr


def test_list_org_in_local_mode_shows_that_organization_only(modes: Modes) -> None:
    assert modes.local("events", "trigger", "item.created").exit_code == 0
    assert modes.local("orgs", "create", "org-2").exit_code == 0
    assert modes.local("--org", "org-2", "sows", "create", "Theirs", "--id", "s2").exit_code == 0
    theirs = feed(modes, "--org", "org-2")["events"]
    assert [(e["type"], e["organizationId"]) for e in theirs] == [("sow.created", "org-2")]
    assert {e["organizationId"] for e in feed(modes)["events"]} == {LOCAL_ORG, "org-2"}


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_tail_prints_the_events_after_since_as_json_lines(modes: Modes, mode: str) -> None:
    for _ in range(2):
        assert modes.local("events", "trigger", "item.created").exit_code == 0
    stored = feed(modes)["events"]
    result = getattr(modes, mode)("events", "tail", "--since", stored[0]["id"], "--count", "3", "--json")
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == stored[1:4]


def test_tail_text_lines_and_ctrl_c_exits_0(modes: Modes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert modes.local("events", "trigger", "item.created").exit_code == 0

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(events_command.time, "sleep", interrupted)
    result = modes.local("events", "tail", "--since", "0")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(feed(modes)["events"])
    assert lines[-1].split(" ")[2] == "item.created"
    assert lines[-1].endswith(f"org={LOCAL_ORG}")
