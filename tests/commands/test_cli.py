"""CLI conventions and the items commands.

The ``cli`` fixture runs ``sowctl`` in process with stdout captured (so not a TTY,
the "piped" mode) and fails the test if anything prints a traceback.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import peewee as pw
import pytest
import tomli_w

from sowctl import operations
from sowctl.commands._context import AppContext
from sowctl.foundation import clock
from sowctl.services.access import Caller
from sowctl.storage import models as m

TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
ANSI = "\x1b["


@pytest.fixture
def sow(cli) -> str:
    result = cli("sows", "create", "Phase 1", "--id", "sow-1")
    assert result.exit_code == 0, result.stderr
    return "sow-1"


def new_item(cli, sow_id: str, title: str, kind: str = "task_item", *extra: str) -> dict:
    result = cli("items", "create", sow_id, "--title", title, "--type", kind, "--json", *extra)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return result.json()


@pytest.fixture
def tree(cli, sow) -> dict[str, dict]:
    """R (requirement) > [T1 > [S1], R2 > [T2]], and a top-level task TOP."""
    r = new_item(cli, sow, "R", "requirement")
    t1 = new_item(cli, sow, "T1", "task_item", "--parent", r["id"])
    s1 = new_item(cli, sow, "S1", "task_item", "--parent", t1["id"])
    r2 = new_item(cli, sow, "R2", "requirement", "--parent", r["id"])
    t2 = new_item(cli, sow, "T2", "task_item", "--parent", r2["id"])
    top = new_item(cli, sow, "TOP")
    return {"R": r, "T1": t1, "S1": s1, "R2": r2, "T2": t2, "TOP": top}


def api(name: str, params=None, query=None, body=None):
    """What the HTTP API answers for the same call (the CLI has bound the database)."""
    return operations.call_local(name, Caller.local(), params, query, body)


# --- --json is exactly the API body ----------------------------------------------


def test_json_output_is_exactly_the_api_body(cli, tree):
    cases = [
        (("items", "list", "sow-1", "--json"), ("items.list", {"sowId": "sow-1"})),
        (("items", "get", tree["R"]["id"], "--json"), ("items.get", {"itemId": tree["R"]["id"]})),
        (
            ("items", "list", "sow-1", "--type", "requirement", "--json"),
            ("items.list", {"sowId": "sow-1"}, {"type": "requirement"}),
        ),
        (
            ("items", "list", "sow-1", "--parent", tree["R"]["id"], "--json"),
            ("items.list", {"sowId": "sow-1"}, {"parentId": tree["R"]["id"]}),
        ),
        (("sows", "list", "--json"), ("sows.list", {})),
    ]
    for args, call in cases:
        result = cli(*args)
        assert result.exit_code == 0, result.stderr
        assert result.stderr == ""
        assert json.loads(result.stdout) == api(*call)  # json.loads refuses any extra text
        assert ANSI not in result.stdout


def test_created_item_json_has_the_spec_fields_and_timestamp_shape(cli, sow):
    item = new_item(cli, sow, "Design", "requirement", "--description", "why")
    assert list(item) == [
        "id",
        "title",
        "description",
        "type",
        "sowId",
        "parentItemId",
        "orderIndex",
        "status",
        "createdAt",
        "updatedAt",
        "createdByUserId",
    ]
    assert (item["sowId"], item["parentItemId"], item["status"], item["orderIndex"]) == (
        sow,
        None,
        "pending",
        0,
    )
    assert TIMESTAMP_RE.match(item["createdAt"]) and TIMESTAMP_RE.match(item["updatedAt"])
    assert item == api("items.get", {"itemId": item["id"]})


def test_update_and_delete_json(cli, tree):
    clock.set_fixed_now(clock.parse_timestamp("2030-01-01T00:00:00Z"))
    result = cli("items", "update", tree["T2"]["id"], "--status", "completed", "--title", "T2'", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json() == {
        **tree["T2"],
        "status": "completed",
        "title": "T2'",
        "updatedAt": "2030-01-01T00:00:00Z",
    }
    # the requirement above it is shown with its calculated status
    r2 = cli("items", "get", tree["R2"]["id"], "--json").json()
    assert r2["status"] == "completed"
    result = cli("items", "delete", tree["R"]["id"], "--json")
    assert result.json() == {"message": f"Item {tree['R']['id']} deleted successfully"}
    assert {row.id for row in m.Item.select()} == {tree["TOP"]["id"]}


# --- piped output: tab-separated, no header, no colour --------------------------------


def test_piped_list_is_tab_separated_without_header(cli, tree):
    result = cli("items", "list", "sow-1", "--parent", tree["R"]["id"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "\t".join([tree["T1"]["id"], "task_item", "pending", "0", tree["R"]["id"], "T1"]),
        "\t".join([tree["R2"]["id"], "requirement", "pending", "1", tree["R"]["id"], "R2"]),
    ]
    assert ANSI not in result.stdout


def test_piped_list_keeps_every_row_whole(cli, sow):
    long_title = "x" * 500 + "\tand a tab\nand a newline"
    new_item(cli, sow, long_title)
    line = cli("items", "list", sow).stdout
    assert line.count("\n") == 1
    cells = line.rstrip("\n").split("\t")
    assert len(cells) == 6
    assert cells[-1] == "x" * 500 + " and a tab and a newline"  # no truncation


def test_quiet_prints_ids_only(cli, tree):
    result = cli("items", "list", "sow-1", "-q")
    assert result.exit_code == 0
    expected = [item["id"] for item in api("items.list", {"sowId": "sow-1"})]
    assert result.stdout.splitlines() == expected
    assert cli("items", "list", "sow-1", "--quiet").stdout == result.stdout


def test_piped_get_is_key_tab_value(cli, tree):
    result = cli("items", "get", tree["T1"]["id"])
    lines = dict(line.split("\t", 1) for line in result.stdout.splitlines())
    assert lines["id"] == tree["T1"]["id"]
    assert lines["parentItemId"] == tree["R"]["id"]
    assert "description" not in lines  # no value, no line
    assert lines["status"] == "pending"


def test_empty_list_prints_nothing(cli, sow):
    result = cli("items", "list", sow)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert cli("items", "list", sow, "--json").json() == []


# --- TTY output goes through Rich --------------------------------------------------------


@pytest.fixture
def tty(monkeypatch):
    monkeypatch.setattr("sowctl.output.render.is_tty", lambda: True)


def test_tty_list_is_a_rich_table(cli, tree, tty):
    result = cli("items", "list", "sow-1")
    assert result.exit_code == 0
    out = result.stdout
    assert "\t" not in out
    header = next(line for line in out.splitlines() if "TITLE" in line)
    for column in ("ID", "TYPE", "STATUS", "ORDER", "PARENT", "TITLE"):
        assert column in header
    assert "─" * 20 in out  # drawn by Rich (a rule under the header), not written as TSV
    for item in tree.values():
        row = next(line for line in out.splitlines() if line.startswith(f"{item['id']} "))
        assert item["type"] in row and f" {item['title']} " in row


def test_tty_empty_list_says_so(cli, sow, tty):
    out = cli("items", "list", sow).stdout
    assert "no results" in out


def test_tty_get_shows_the_fields(cli, tree, tty):
    out = cli("items", "get", tree["R"]["id"]).stdout
    assert "\t" not in out
    assert re.search(r"title\s+R\b", out)
    assert re.search(r"status\s+pending", out)


def test_tty_tree_is_a_rich_tree(cli, tree, tty):
    out = cli("items", "tree", "sow-1").stdout
    assert "SOW sow-1" in out
    assert "└──" in out or "├──" in out
    lines = out.splitlines()
    r_line = next(
        i for i, line in enumerate(lines) if " R " in line or line.rstrip().endswith(tree["R"]["id"])
    )
    s1_line = next(i for i, line in enumerate(lines) if "S1" in line)
    assert s1_line > r_line


# --- items tree --------------------------------------------------------------------------


def test_tree_piped_is_indented_lines(cli, tree):
    result = cli("items", "tree", "sow-1")
    assert result.exit_code == 0
    t = tree
    assert result.stdout.splitlines() == [
        f"R\trequirement\tpending\t{t['R']['id']}",
        f"  T1\ttask_item\tpending\t{t['T1']['id']}",
        f"    S1\ttask_item\tpending\t{t['S1']['id']}",
        f"  R2\trequirement\tpending\t{t['R2']['id']}",
        f"    T2\ttask_item\tpending\t{t['T2']['id']}",
        f"TOP\ttask_item\tpending\t{t['TOP']['id']}",
    ]


def test_tree_shows_calculated_statuses_and_sibling_order(cli, tree):
    cli("items", "update", tree["S1"]["id"], "--status", "completed")
    cli("items", "update", tree["TOP"]["id"], "--order-index", "0")
    cli("items", "update", tree["R"]["id"], "--order-index", "5")
    lines = cli("items", "tree", "sow-1").stdout.splitlines()
    assert lines[0].startswith("TOP\t")
    assert lines[1].split("\t")[:3] == ["R", "requirement", "in_progress"]


def test_tree_json_nests_children(cli, tree):
    roots = cli("items", "tree", "sow-1", "--json").json()
    assert [root["id"] for root in roots] == [tree["R"]["id"], tree["TOP"]["id"]]
    r = roots[0]
    assert [child["id"] for child in r["children"]] == [tree["T1"]["id"], tree["R2"]["id"]]
    assert [child["id"] for child in r["children"][0]["children"]] == [tree["S1"]["id"]]
    assert r["children"][1]["children"][0]["children"] == []
    # each node is the API's item plus "children"
    flat = {item["id"]: item for item in api("items.list", {"sowId": "sow-1"})}
    assert {key: value for key, value in r.items() if key != "children"} == flat[tree["R"]["id"]]


def test_tree_lines_stay_whole(cli, sow):
    item = new_item(cli, sow, "two\nlines\tand a tab")
    assert cli("items", "tree", sow).stdout == f"two lines and a tab\ttask_item\tpending\t{item['id']}\n"


def test_tree_of_an_empty_sow(cli, sow):
    assert cli("items", "tree", sow).stdout == ""
    assert cli("items", "tree", sow, "--json").json() == []


# --- reorder from the command line ------------------------------------------------------


def test_reorder_with_pairs(cli, tree):
    a, b = tree["R"]["id"], tree["TOP"]["id"]
    result = cli("items", "reorder", "sow-1", f"{a}=7", f"{b}=3")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [f"{a}\t7", f"{b}\t3"]
    assert m.Item.get_by_id(a).order_index == 7 and m.Item.get_by_id(b).order_index == 3


def test_reorder_from_stdin(cli, tree):
    body = {"items": [{"id": tree["T1"]["id"], "orderIndex": 4}]}
    result = cli("items", "reorder", "sow-1", "--from-file", "-", "--json", input=json.dumps(body))
    assert result.exit_code == 0, result.stderr
    assert result.json() == {"message": "Items reordered successfully", "items": body["items"]}
    assert m.Item.get_by_id(tree["T1"]["id"]).order_index == 4


def test_reorder_from_a_file(cli, tree, tmp_path):
    path = tmp_path / "order.json"
    path.write_text(json.dumps({"items": [{"id": tree["S1"]["id"], "orderIndex": 2}]}))
    assert cli("items", "reorder", "sow-1", "--from-file", str(path)).exit_code == 0
    assert m.Item.get_by_id(tree["S1"]["id"]).order_index == 2


def test_refused_reorder_changes_nothing(cli, tree):
    before = {row.id: row.order_index for row in m.Item.select()}
    result = cli("items", "reorder", "sow-1", f"{tree['R']['id']}=9", "ghost=1")
    assert result.exit_code == 3
    assert result.stderr == "error: item ghost not found in SOW sow-1\n"
    assert {row.id: row.order_index for row in m.Item.select()} == before


# --- exit codes and one-line errors --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("items", "get", "nope"), 3, "error: item nope not found"),
        (("items", "list", "nope"), 3, "error: SOW nope not found"),
        (("items", "tree", "nope"), 3, "error: SOW nope not found"),
        (("items", "update", "nope", "--title", "x"), 3, "error: item nope not found"),
        (("items", "delete", "nope"), 3, "error: item nope not found"),
        (("items", "create", "nope", "--title", "x"), 3, "error: SOW nope not found"),
        (("items", "create", "sow-1", "--title", "x", "--parent", "nope"), 3, "error: parent item nope"),
        (
            ("items", "create", "sow-1", "--title", "x", "--type", "epic"),
            2,
            "error: Invalid value for '--type'",
        ),
        (("items", "create", "sow-1", "--title", " "), 2, "error: invalid --title ' ': must not be empty"),
        (
            ("items", "create", "sow-1", "--title", "x", "--order-index", "-1"),
            2,
            "error: invalid --order-index -1:",
        ),
        (("items", "create", "sow-1", "--title", "x", "--order-index", "abc"), 2, "error: "),
        (("items", "update", "@TOP", "--status", "done"), 2, "error: Invalid value for '--status'"),
        (("items", "update", "@TOP"), 2, "error: nothing to update"),
        (("deps", "update", "nope"), 2, "error: nothing to update: give --status"),  # before any lookup
        (("items", "list", "sow-1", "--type", "epic"), 2, "error: Invalid value for '--type'"),
        (
            ("items", "create", "sow-1", "--title", "x", "--type", "requirement", "--parent", "@TOP"),
            2,
            "error: a task item cannot contain a requirement",
        ),
        (("items", "reorder", "sow-1", "no-equals-sign"), 2, "error: "),
        (("items", "reorder", "sow-1"), 2, "error: give at least one ITEM_ID=ORDER_INDEX pair"),
        (("items", "reorder", "sow-1", "--from-file", "-"), 2, "error: "),  # stdin is not JSON
        (("items", "reorder", "sow-1", "--from-file", "/does/not/exist.json"), 2, "error: "),
        (("--bogus", "items", "list", "sow-1"), 2, "error: No such option: --bogus"),
        (("items", "list", "sow-1", "--bogus"), 2, "error: No such option: --bogus"),
        (("items", "list"), 2, "error: Missing argument"),
        (("items", "get"), 2, "error: Missing argument"),
        # An empty id argument: invalid input named as typed, never "not found" (parity: test_parity)
        (("items", "get", ""), 2, "error: invalid ITEM_ID '': must not be empty"),
        (("items", "list", ""), 2, "error: invalid SOW_ID '': must not be empty"),
        (("items", "create", "", "--title", "x"), 2, "error: invalid SOW_ID '': must not be empty"),
        (("items", "reorder", "", "a=1"), 2, "error: invalid SOW_ID '': must not be empty"),
        (("deps", "get", ""), 2, "error: invalid DEPENDENCY_ID '': must not be empty"),
        (("deps", "update", "", "--notes", "x"), 2, "error: invalid DEPENDENCY_ID '': must not be empty"),
        (("chain", "show", ""), 2, "error: invalid SOW_ID '': must not be empty"),
        (("tokens", "revoke", "", "--yes"), 2, "error: invalid TOKEN '': must not be empty"),
        (("keys", "revoke", "", "--yes"), 2, "error: invalid KEY '': must not be empty"),
        # An empty filter (a script's unset variable) would list everything: refused too.
        (("deps", "list", "--item", ""), 2, "error: invalid --item '': must not be empty"),
        (("items", "list", "sow-1", "--parent", ""), 2, "error: invalid --parent '': must not be empty"),
        (("projects", "list", "--client", ""), 2, "error: invalid --client '': must not be empty"),
        (("items", "create", "sow-1"), 2, "error: Missing option '--title'"),
        (("no-such-command",), 2, "error: No such command"),
    ],
)
def test_errors_are_one_line_with_the_contract_exit_code(cli, tree, args, code, message):
    args = tuple(tree["TOP"]["id"] if arg == "@TOP" else arg for arg in args)
    before = sorted(m.Item.select(m.Item.id, m.Item.title, m.Item.status, m.Item.order_index).tuples())
    result = cli(*args, input="not json")
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1
    assert (
        sorted(m.Item.select(m.Item.id, m.Item.title, m.Item.status, m.Item.order_index).tuples()) == before
    )


def test_not_found_message_is_exact(cli, db):
    result = cli("items", "get", "nope")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "", "error: item nope not found\n")


def test_a_bare_group_shows_its_help(cli):
    result = cli("items")
    assert result.exit_code == 2
    assert "tree" in result.stdout + result.stderr


# --- database failures: exit 5, one line -------------------------------------------------


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("@notdb", "error: cannot open database @notdb: file is not a database"),
        ("@dir", "error: cannot open database @dir: unable to open database file"),
        ("postgresql://nobody@127.0.0.1:9/none", "error: cannot open database nobody@127.0.0.1:9/none: "),
    ],
)
def test_an_unusable_database_exits_5(cli, tmp_path, target, message):
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello, I am not a database\n" * 100)

    def where(text: str) -> str:
        return text.replace("@notdb", str(not_a_db)).replace("@dir", str(tmp_path))

    result = cli("--db", where(target), "items", "list", "sow-1")
    assert result.exit_code == 5
    assert result.stdout == ""
    assert result.stderr.startswith(where(message)) and result.stderr.count("\n") == 1
    assert "unexpected" not in result.stderr
    assert not_a_db.read_text().startswith("hello")


def test_an_unknown_database_scheme_is_a_usage_error(cli):
    result = cli("--db", "mysql://x/y", "sows", "list")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unsupported database URL scheme 'mysql'")


def test_a_password_in_the_database_url_is_not_printed(cli):
    result = cli("--db", "postgresql://ada:s3cret@127.0.0.1:9/none", "sows", "list")
    assert result.exit_code == 5
    assert "s3cret" not in result.stderr


@pytest.mark.parametrize(
    ("error", "line"),
    [
        # Without a driver's code (these have no driver exception under them), the words say.
        (
            pw.OperationalError("database is locked"),
            "database busy (SQLITE_BUSY, read from the message): database is locked",
        ),
        (
            pw.IntegrityError("UNIQUE constraint failed: item.id"),
            "database error: UNIQUE constraint failed: item.id",
        ),
        (
            pw.InterfaceError("connection already closed\nsecond line"),
            "database unavailable (08003 connection_does_not_exist, read from the message): "
            "connection already closed second line",
        ),
    ],
    ids=["locked", "constraint", "closed"],
)
def test_database_errors_during_a_command_exit_5(cli, sow, monkeypatch, error, line):
    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr("sowctl.services.items.list_items", broken)
    result = cli("items", "list", sow)
    assert result.exit_code == 5
    assert result.stderr == f"error: {line}\n"


@pytest.mark.slow  # waits out the lock timeout; tests/db/test_lock_wait.py covers the server side
def test_a_database_locked_by_another_writer_exits_5(cli, sow, db_url, monkeypatch):
    if "://" in db_url:
        pytest.skip("SQLite locking")
    import sqlite3

    from sowctl.storage import database as db_module

    monkeypatch.setitem(db_module.SQLITE_PRAGMAS, "busy_timeout", 50)
    holder = sqlite3.connect(db_url, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        result = cli("items", "create", sow, "--title", "blocked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 5
    assert "database is locked" in result.stderr and result.stderr.count("\n") == 1
    assert m.Item.select().where(m.Item.title == "blocked").count() == 0


# --- a bug in sowctl: exit 5, one line, the traceback only when asked for ----------------------


def _broken(*args, **kwargs):
    raise RuntimeError("boom\nsecond line")


def test_an_unexpected_error_is_one_line_with_exit_5_and_no_traceback(cli, sow, monkeypatch):
    from sowctl.gate import risks

    monkeypatch.setattr(risks, "check_chain", _broken)
    result = cli("chain", "check", sow, catch_exceptions=True)  # the runner fails on a traceback
    assert (result.exit_code, result.stdout) == (5, "")
    assert result.stderr == "error: unexpected error: RuntimeError: boom (set SOWCTL_DEBUG=1 for details)\n"
    as_json = cli("chain", "check", sow, "--json", catch_exceptions=True)
    assert (as_json.exit_code, json.loads(as_json.stderr)["code"]) == (5, "internal")
    with pytest.raises(RuntimeError, match="boom"):  # what the tests' runner does by default
        cli("chain", "check", sow)


def test_sowctl_debug_lets_an_unexpected_error_show_its_traceback(cli, sow, monkeypatch):
    from sowctl.gate import risks

    monkeypatch.setattr(risks, "check_chain", _broken)
    with pytest.raises(RuntimeError, match="boom"):
        cli("chain", "check", sow, env={"SOWCTL_DEBUG": "1"}, catch_exceptions=True)


# --- global options: option > environment > profile > default --------------------------------


@pytest.fixture
def seen(monkeypatch) -> dict:
    """Capture the settings a command runs with, instead of running it."""
    captured: dict = {}

    def fake_call(self, name, params=None, query=None, body=None, *, all_pages=True):
        captured["settings"] = self.settings
        return []

    monkeypatch.setattr(AppContext, "call", fake_call)
    monkeypatch.delenv("SOWCTL_DB", raising=False)  # the cli fixture sets it
    return captured


def write_config(data: dict) -> Path:
    from sowctl.backends import profiles

    path = profiles.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(tomli_w.dumps(data).encode())
    return path


KEYS = [
    # (Settings field, option, environment variable, sample value)
    ("token", "--token", "SOWCTL_TOKEN", "tok"),
    ("api_key", "--api-key", "SOWCTL_API_KEY", "key"),
    ("org", "--org", "SOWCTL_ORG", "org"),
    ("company", "--company", "SOWCTL_COMPANY", "comp"),
    ("db", "--db", "SOWCTL_DB", "/tmp/x.db"),
    ("server", "--server", "SOWCTL_SERVER", "http://h"),
]
LAYERS = [
    # (given at option, env, profile) -> which one wins
    (("option", "env", "profile"), "option"),
    (("option", "profile"), "option"),
    (("option", "env"), "option"),
    (("env", "profile"), "env"),
    (("profile",), "profile"),
    (("env",), "env"),
    (("option",), "option"),
    ((), None),
]


@pytest.mark.parametrize(("field", "option", "env", "value"), KEYS)
@pytest.mark.parametrize(("layers", "winner"), LAYERS)
def test_precedence(cli, seen, monkeypatch, field, option, env, value, layers, winner):
    args: list[str] = []
    if "option" in layers:
        args += [option, f"{value}-option"]
    if "env" in layers:
        monkeypatch.setenv(env, f"{value}-env")
    if "profile" in layers:
        write_config({"current": "work", "profiles": {"work": {field: f"{value}-profile"}}})
    result = cli(*args, "sows", "list")
    assert result.exit_code == 0, result.stderr
    got = getattr(seen["settings"], field)
    assert got == (f"{value}-{winner}" if winner else None)


@pytest.mark.parametrize(
    ("option", "env", "current", "expected"),
    [
        ("a", "b", "c", "a"),
        (None, "b", "c", "b"),
        (None, None, "c", "c"),
        (None, None, None, "default"),
    ],
)
def test_profile_selection(cli, seen, monkeypatch, option, env, current, expected):
    data: dict = {"profiles": {name: {"org": f"org-{name}"} for name in ("a", "b", "c", "default")}}
    if current:
        data["current"] = current
    write_config(data)
    if env:
        monkeypatch.setenv("SOWCTL_PROFILE", env)
    result = cli(*(["--profile", option] if option else []), "sows", "list")
    assert result.exit_code == 0, result.stderr
    assert seen["settings"].profile == expected
    assert seen["settings"].org == f"org-{expected}"


def test_the_profile_fills_only_what_options_and_env_leave_unset(cli, seen, monkeypatch):
    write_config({"profiles": {"default": {"org": "p-org", "company": "p-comp", "token": "p-tok"}}})
    monkeypatch.setenv("SOWCTL_COMPANY", "e-comp")
    assert cli("--token", "o-tok", "sows", "list").exit_code == 0
    settings = seen["settings"]
    assert (settings.org, settings.company, settings.token) == ("p-org", "e-comp", "o-tok")


@pytest.mark.parametrize(
    ("config", "args", "message"),
    [
        ({"profiles": {"a": {}}}, ("--profile", "zzz"), "profile 'zzz' is not in"),
        ({"current": "gone", "profiles": {"a": {}}}, (), "current profile 'gone' is not in"),
        ({"profiles": {"default": "not a table"}}, (), "must be a table"),
        ({"profiles": {"default": {"org": 5}}}, (), "org must be a string"),
        ({"profiles": {"default": {"timeout": "soon"}}}, (), "timeout must be a number"),
        ({"profiles": {"default": {"db": "/x.db", "server": "http://h"}}}, (), "sets both db and server"),
    ],
)
def test_bad_profiles_are_usage_errors(cli, seen, config, args, message):
    write_config(config)
    result = cli(*args, "sows", "list")
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert "settings" not in seen


def test_a_config_file_that_is_not_toml(cli, seen):
    from sowctl.backends import profiles

    profiles.config_path().parent.mkdir(parents=True, exist_ok=True)
    profiles.config_path().write_text("this is = = not toml")
    result = cli("sows", "list")
    assert result.exit_code == 2
    assert "not valid TOML" in result.stderr and result.stderr.count("\n") == 1


def test_a_config_path_that_cannot_be_read(cli, seen, tmp_path, monkeypatch):
    monkeypatch.setenv("SOWCTL_CONFIG", str(tmp_path))  # a directory
    result = cli("sows", "list")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: cannot read config file") and result.stderr.count("\n") == 1


def test_db_and_server_together_is_a_usage_error(cli, tmp_path):
    result = cli("--db", str(tmp_path / "x.db"), "--server", "http://127.0.0.1:9", "items", "list", "s")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == "error: --db and --server cannot be used together (local or remote mode?)\n"
    assert not (tmp_path / "x.db").exists()


def test_db_and_server_both_from_the_environment_is_a_usage_error(cli, monkeypatch):
    monkeypatch.setenv("SOWCTL_SERVER", "http://127.0.0.1:9")  # SOWCTL_DB is set by the fixture
    result = cli("items", "list", "s")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "--db and --server" in result.stderr


def test_an_option_chooses_the_mode_over_the_environment(cli, seen, monkeypatch, tmp_path):
    monkeypatch.setenv("SOWCTL_DB", str(tmp_path / "env.db"))
    assert cli("--server", "http://h", "sows", "list").exit_code == 0
    assert (seen["settings"].server, seen["settings"].db) == ("http://h", None)
    monkeypatch.delenv("SOWCTL_DB")
    monkeypatch.setenv("SOWCTL_SERVER", "http://h")
    assert cli("--db", "/tmp/o.db", "sows", "list").exit_code == 0
    assert (seen["settings"].server, seen["settings"].db) == (None, "/tmp/o.db")


def test_an_explicit_db_overrides_a_remote_profile(cli, seen):
    write_config({"profiles": {"default": {"server": "http://h", "token": "t"}}})
    assert cli("--db", "/tmp/o.db", "sows", "list").exit_code == 0
    assert (seen["settings"].server, seen["settings"].db, seen["settings"].remote) == (
        None,
        "/tmp/o.db",
        False,
    )


def test_the_db_option_really_selects_the_database(cli, tmp_path, monkeypatch):
    """Observable, not just parsed: each layer writes to its own file."""
    files = {layer: tmp_path / f"{layer}.db" for layer in ("option", "env", "profile")}
    write_config({"profiles": {"default": {"db": str(files["profile"])}}})
    monkeypatch.delenv("SOWCTL_DB")
    assert cli("sows", "create", "from profile", "--id", "s-profile").exit_code == 0
    monkeypatch.setenv("SOWCTL_DB", str(files["env"]))
    assert cli("sows", "create", "from env", "--id", "s-env").exit_code == 0
    assert (
        cli("--db", str(files["option"]), "sows", "create", "from option", "--id", "s-option").exit_code == 0
    )
    for layer, path in files.items():
        assert cli("--db", str(path), "sows", "list", "-q").stdout == f"s-{layer}\n"


# --- a real process ---------------------------------------------------------------------------


@pytest.mark.slow  # two sowctl subprocesses writing 3,000 items each
def test_a_reader_that_leaves_early_is_not_an_error(cli, sow, db_url):
    """`sowctl items list | head -1`: exit 0 and nothing on stderr (not Typer's exit 1)."""
    import subprocess
    import sys

    m.Item.insert_many(
        [
            {
                "id": f"i{n:05}",
                "sow": sow,
                "type": "task_item",
                "title": "x" * 80,
                "order_index": n,
                "created_at": clock.now(),
                "updated_at": clock.now(),
            }
            for n in range(3000)
        ]
    ).execute()
    env = {**os.environ, "SOWCTL_DB": db_url}
    for args in (["items", "list", sow], ["items", "tree", sow]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "sowctl", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        first = proc.stdout.readline()
        proc.stdout.close()  # the reader leaves while sowctl is still writing
        stderr = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, stderr
        assert first.startswith(b"i00000\t") or first.startswith(b"x")
        assert stderr == b""
