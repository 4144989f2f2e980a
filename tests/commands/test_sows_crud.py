"""sows get, update and delete (issue 28): one SOW read, retitled or removed with what it
held, alike in local and remote mode (``/api/sows/{sowId}``, a sowctl extension)."""

from __future__ import annotations

from sowctl.storage import models as m
from tests.support.modes import Modes


def _fill(modes: Modes) -> None:
    """sow-1 holds a and b (b depends on a); sow-2 holds c, which depends on a."""
    for sow, item in (("sow-1", "a"), ("sow-1", "b")):
        assert modes.local("items", "create", sow, "--title", item.upper(), "--id", item).exit_code == 0
    assert modes.local("sows", "create", "Other", "--id", "sow-2").exit_code == 0
    assert modes.local("items", "create", "sow-2", "--title", "C", "--id", "c").exit_code == 0
    for source in ("b", "c"):
        made = modes.local(
            "deps", "create", "--source", source, "--target", "a", "--type", "depends_on", "--risk", "low"
        )
        assert made.exit_code == 0, made.stderr


def test_get_shows_the_same_sow_in_both_modes(modes: Modes) -> None:
    local, remote = modes.both("sows", "get", "sow-1", "--json")
    assert (local.exit_code, remote.exit_code) == (0, 0), (local.stderr, remote.stderr)
    assert local.stdout == remote.stdout
    assert local.json()["id"] == "sow-1" and local.json()["title"] == "Tower A"
    missing = modes.both("sows", "get", "sow-nope")
    assert [r.exit_code for r in missing] == [3, 3]
    assert missing[0].stderr == missing[1].stderr == "error: SOW sow-nope not found\n"


def test_update_changes_the_title_only(modes: Modes) -> None:
    local = modes.local("sows", "update", "sow-1", "--title", "Tower A2", "--json")
    remote = modes.remote("sows", "update", "sow-1", "--title", "Tower A3", "--json")
    assert (local.exit_code, remote.exit_code) == (0, 0), (local.stderr, remote.stderr)
    assert local.json()["title"] == "Tower A2" and remote.json()["title"] == "Tower A3"
    assert m.Sow.get(m.Sow.id == "sow-1").title == "Tower A3"
    empty = modes.both("sows", "update", "sow-1", "--title", "")
    assert [r.exit_code for r in empty] == [2, 2] and empty[0].stderr == empty[1].stderr
    assert "--title" in empty[0].stderr and m.Sow.get(m.Sow.id == "sow-1").title == "Tower A3"


def test_delete_takes_the_items_and_every_dependency_touching_them(modes: Modes) -> None:
    _fill(modes)
    deleted = modes.remote("sows", "delete", "sow-1", "--yes", "--json")
    assert deleted.exit_code == 0, deleted.stderr
    assert deleted.json() == {
        "message": "SOW sow-1 deleted successfully",
        "deletedItems": 2,
        "deletedDependencies": 2,
    }
    assert deleted.stderr == ""  # the body counts them
    assert [s for (s,) in m.Sow.select(m.Sow.id).tuples()] == ["sow-2"]
    assert [i for (i,) in m.Item.select(m.Item.id).tuples()] == ["c"]
    assert m.Dependency.select().count() == 0
    again = modes.both("sows", "delete", "sow-1", "--yes")
    assert [r.exit_code for r in again] == [3, 3]


def test_delete_in_local_mode_says_the_same(modes: Modes) -> None:
    deleted = modes.local("sows", "delete", "sow-1")
    assert deleted.exit_code == 0, deleted.stderr
    assert deleted.stdout == "SOW sow-1 deleted successfully\n"
    assert deleted.stderr == "deleted with it: 0 items and 0 dependencies\n"
    assert m.Sow.select().count() == 0
