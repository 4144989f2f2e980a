"""Output shaping and safety: hostile text on every surface, --jq, --columns, metavars, layout.

The ``cli`` fixture runs ``sowctl`` in process with stdout captured (the piped mode);
the ``tty`` fixture makes it draw for a terminal instead.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys

import pytest
import typer.main

from sowctl import cli as cli_module
from sowctl import operations
from sowctl.output import layout
from sowctl.output.safe import clean, clean_json
from sowctl.output.shaping import readable_time
from sowctl.services.access import Caller
from tests.support.cli import run_main

FORGED = "Pour slab\n::error::forged by a title"
ESCAPES = "Clear \x1b[2J\x1b]0;owned\x07 me"
BIDI = "invoice \u202eexe.pdf"
MARKUP = "[bold red]not markup[/] [link=http://x]y[/link]"


@pytest.fixture
def tty(monkeypatch):
    monkeypatch.setattr("sowctl.output.render.is_tty", lambda: True)


def ok(result):
    assert result.exit_code == 0, result.stderr
    return result


@pytest.fixture
def hostile(cli) -> dict[str, str]:
    """A SOW whose items carry hostile titles, one critical dependency between two of them."""
    ok(cli("sows", "create", "S", "--id", "sow-h"))
    ids = {}
    for name, title in (("forged", FORGED), ("escapes", ESCAPES), ("bidi", BIDI), ("markup", MARKUP)):
        ids[name] = ok(cli("items", "create", "sow-h", "--title", title, "--json")).json()["id"]
    ok(
        cli(
            "deps", "create", "--source", ids["forged"], "--target", ids["escapes"],
            "--type", "depends_on", "--risk", "critical",
        )
    )  # fmt: skip
    return ids


def _assert_safe(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert not any(line.startswith("::") for line in out.splitlines()), out


# --- one function makes text safe -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain title", "plain title"),
        ("two\nlines\tand\r\na tab", "two lines and  a tab"),
        ("\x1b[2J", "\\x1b[2J"),
        ("bell\x07", "bell\\x07"),
        ("c1 \x9b31m", "c1 \\x9b31m"),
        ("del\x7f", "del\\x7f"),
        (BIDI, "invoice \\u202eexe.pdf"),
        ("line\u2028sep", "line sep"),
        ("naïve café 東京", "naïve café 東京"),
    ],
)
def test_clean(raw, shown):
    assert clean(raw) == shown


def test_clean_json_keeps_the_value():
    text = json.dumps({"t": "a\x85b\u202ec\x7f"}, ensure_ascii=False)
    safe = clean_json(text)
    assert "\u202e" not in safe and "\x85" not in safe and "\x7f" not in safe
    assert json.loads(safe) == json.loads(text)


# --- every surface ------------------------------------------------------------------------------


def test_piped_chain_check_cannot_forge_a_line(cli, hostile):
    result = cli("chain", "check", "sow-h")
    assert result.exit_code == 1
    _assert_safe(result.stdout)
    assert "Pour slab ::error::forged by a title" in result.stdout
    assert "Clear \\x1b[2J\\x1b]0;owned\\x07 me" in result.stdout


def test_github_annotations_are_only_the_real_ones(cli, hostile):
    result = cli("chain", "check", "sow-h", env={"GITHUB_ACTIONS": "true"})
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1  # the one critical dependency
    assert "\x1b" not in result.stdout


def test_piped_chain_tree_cannot_forge_a_line(cli, hostile):
    out = ok(cli("chain", "show", "sow-h", "--format", "tree")).stdout
    _assert_safe(out)
    assert "Pour slab ::error::forged by a title\t" in out


def test_piped_lists_keep_one_record_per_line(cli, hostile):
    out = ok(cli("items", "list", "sow-h")).stdout
    _assert_safe(out)
    assert len(out.splitlines()) == 4
    assert all(len(line.split("\t")) == 6 for line in out.splitlines())
    tree = ok(cli("items", "tree", "sow-h")).stdout
    _assert_safe(tree)
    assert len(tree.splitlines()) == 4


@pytest.mark.parametrize(
    "args",
    [
        ("items", "list", "sow-h"),
        ("items", "tree", "sow-h"),
        ("chain", "show", "sow-h"),
        ("chain", "show", "sow-h", "--format", "tree"),
        ("chain", "check", "sow-h"),
        ("deps", "list", "--sow", "sow-h"),
    ],
)
def test_terminal_views_show_hostile_text_inert(cli, hostile, tty, args):
    out = cli(*args).stdout
    _assert_safe(out)
    if "tree" in args:
        assert "[bold red]not markup[/]" in out


def test_terminal_table_and_record_show_markup_literally(cli, hostile, tty):
    out = ok(cli("items", "list", "sow-h", "--columns", "title")).stdout
    assert "[bold red]not markup[/] [link=http://x]y[/link]" in out
    assert "Clear \\x1b[2J\\x1b]0;owned\\x07 me" in out
    record = ok(cli("items", "get", hostile["escapes"])).stdout
    _assert_safe(record)
    assert "Clear \\x1b[2J" in record


def test_diagrams_are_safe(cli, hostile):
    for fmt in ("mermaid", "dot"):
        out = ok(cli("chain", "show", "sow-h", "--format", fmt)).stdout
        assert "Clear" in out  # the hostile title is drawn, made harmless
        assert "\x1b" not in out and "\x07" not in out
        assert "::error::" not in "".join(line[:2] for line in out.splitlines())


def test_error_messages_are_safe(cli, sow):
    result = cli("items", "get", "x\x1b[2J\ny")
    assert result.exit_code == 3
    assert "\x1b" not in result.stderr
    assert result.stderr.count("\n") == 1 and "x\\x1b[2J y" in result.stderr


def test_json_escapes_what_would_act_on_a_terminal(cli, hostile):
    out = ok(cli("items", "get", hostile["bidi"], "--json")).stdout
    assert "\u202e" not in out and "\\u202e" in out
    assert json.loads(out)["title"] == BIDI


# --- --jq ---------------------------------------------------------------------------------------


@pytest.fixture
def sow(cli) -> str:
    ok(cli("sows", "create", "Phase 1", "--id", "sow-1"))
    return "sow-1"


@pytest.fixture
def items(cli, sow) -> list[dict]:
    return [ok(cli("items", "create", sow, "--title", f"T{n}", "--json")).json() for n in range(3)]


def test_jq_filters_the_json_body(cli, items):
    out = ok(cli("items", "list", "sow-1", "--jq", ".[].id")).stdout
    assert out.splitlines() == [item["id"] for item in items]  # strings print raw


def test_jq_objects_are_one_line_each_when_piped(cli, items):
    out = ok(cli("items", "list", "sow-1", "--jq", ".[] | {id, title}")).stdout
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": item["id"], "title": item["title"]} for item in items
    ]


def test_jq_works_with_json_given_too_and_on_single_resources(cli, items):
    assert ok(cli("items", "get", items[0]["id"], "--json", "--jq", ".title")).stdout == "T0\n"
    assert ok(cli("status", "--jq", ".mode")).stdout == "local\n"


def test_jq_raw_strings_stay_one_line(cli, sow):
    ok(cli("items", "create", sow, "--title", "a\nb\x1b[2J"))
    assert ok(cli("items", "list", sow, "--jq", ".[].title")).stdout == "a b\\x1b[2J\n"


@pytest.mark.parametrize("expression", [".[", ".[] | .title + 1", 'error("boom")'])
def test_a_bad_jq_expression_is_a_usage_error(cli, items, expression):
    result = cli("items", "list", "sow-1", "--jq", expression)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --jq: ")
    assert result.stdout == ""


def test_every_command_with_json_has_jq():
    root = typer.main.get_command(cli_module.app)
    missing = []
    for command, path in _commands(root):
        options = {opt for param in command.params for opt in getattr(param, "opts", [])}
        if "--json" in options and "--jq" not in options:
            missing.append(path)
    assert not missing


def _commands(root):
    stack = [(root, "sowctl")]
    while stack:
        command, path = stack.pop()
        if hasattr(command, "commands"):
            stack.extend((sub, f"{path} {name}") for name, sub in command.commands.items())
        else:
            yield command, path


# --- --columns ----------------------------------------------------------------------------------


def test_columns_choose_and_order_piped_columns(cli, items):
    out = ok(cli("items", "list", "sow-1", "--columns", "title,ID")).stdout
    assert out.splitlines() == [f"{item['title']}\t{item['id']}" for item in items]


def test_columns_can_show_a_column_that_is_off_by_default(cli, items):
    out = ok(cli("items", "list", "sow-1", "--columns", "id,created")).stdout
    assert out.splitlines()[0] == f"{items[0]['id']}\t{items[0]['createdAt']}"


def test_columns_on_a_terminal(cli, items, tty):
    out = ok(cli("items", "list", "sow-1", "--columns", "title,id")).stdout
    assert out.splitlines()[0].split() == ["TITLE", "ID"]


def test_columns_choose_fields_of_one_resource(cli, items):
    out = ok(cli("items", "get", items[0]["id"], "--columns", "title,created-at")).stdout
    assert out.splitlines() == ["title\tT0", f"createdAt\t{items[0]['createdAt']}"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--columns", "id,nope"), "--columns: no column 'nope' here; the columns are: id, type, status"),
        (("--columns", ","), "--columns: give column names"),
        (("--columns", "id", "--json"), "--columns chooses table columns; with --json"),
        (("--columns", "id", "-q"), "--columns and --quiet cannot be used together"),
    ],
)
def test_bad_columns_are_usage_errors(cli, items, extra, message):
    result = cli("items", "list", "sow-1", *extra)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


# --- smaller ones ---------------------------------------------------------------------------------


def test_chain_tree_json_is_the_tree_body(cli, hostile):
    body = ok(cli("chain", "show", "sow-h", "--format", "tree", "--json")).json()
    expected = operations.call_local("chain.get", Caller.local(), None, {"sowId": "sow-h", "format": "tree"})
    assert body == expected
    assert "items" in body and "dependencies" not in body


UGLY_METAVAR = re.compile(r"<(str|bool|int|float|list\[|filename|path|text|integer)|\{[a-z_]+\}")


def test_help_shows_plain_metavars(cli):
    root = typer.main.get_command(cli_module.app)
    ugly = {}
    for _command, path in _commands(root):
        result = cli(*path.split()[1:], "--help")
        found = UGLY_METAVAR.findall(result.stdout)
        if found:
            ugly[path] = found
    assert not ugly
    usage = cli("items", "reorder", "--help").stdout
    assert "Usage: sowctl items reorder [OPTIONS] SOW_ID [POSITIONS]..." in " ".join(usage.split())


def test_a_process_builds_each_command_once_and_its_runs_stay_independent(cli):
    # main() reuses the click commands it built (sowctl.cli.root_command): the output options
    # of one run must not reach the next.
    assert cli("sows", "create", "S", "--id", "s-1", "-q").exit_code == 0
    assert cli("items", "create", "s-1", "--title", "A", "--id", "a", "-q").exit_code == 0
    plain = cli("items", "list", "s-1").stdout
    root = cli_module.root_command()
    built = root.commands["items"]
    assert cli("items", "list", "s-1", "--jq", ".[].id").stdout == "a\n"
    assert cli("items", "list", "s-1", "--columns", "id").stdout == "a\n"
    assert [item["id"] for item in cli("items", "list", "s-1", "--json").json()] == ["a"]
    assert cli("items", "list", "s-1").stdout == plain
    assert cli_module.root_command() is root
    assert root.commands["items"] is built


@pytest.mark.parametrize(
    ("calls", "absent"),
    [
        ([["--help"]], ("jq", "sowctl.output.table", "sowctl.output.shaping")),
        ([["items", "list", "s-1", "--json"]], ("jq", "rich", "sowctl.output.table")),
        ([["items", "list", "s-1"]], ("jq", "rich", "sowctl.output.table")),  # piped: no Rich
    ],
)
def test_start_up_imports_neither_jq_nor_the_table_layout(tmp_path, calls, absent):
    db = tmp_path / "s.db"
    # The database is made in process: only the start-up below needs a process of its own.
    assert run_main("--db", str(db), "sows", "create", "S", "--id", "s-1", "--json").exit_code == 0
    code = "import sys\nfrom sowctl.cli import main\n"
    for args in calls:
        code += f"assert main({['--db', str(db), *args]!r}) == 0\n"
    code += f"loaded = [m for m in {absent!r} if m in sys.modules]\nassert not loaded, loaded\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["SOWCTL_CONFIG"] = str(tmp_path / "config.toml")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --- layout and dates -------------------------------------------------------------------------------


def test_fit_shortens_text_then_leaves_out_low_priority_columns_then_folds():
    ident = layout.need([36], [])
    title = layout.need([5], [40])
    low = layout.need([10], [], priority=2)
    wide = layout.fit([ident, low, title], 200)
    assert wide.shown == [0, 1, 2] and wide.widths == {0: 36, 1: 10, 2: 40}
    squeezed = layout.fit([ident, low, title], 70)
    assert squeezed.widths == {0: 36, 1: 10, 2: 20} and not squeezed.hidden
    dropped = layout.fit([ident, low, title], 56)
    assert dropped.shown == [0, 2] and dropped.hidden == [1] and dropped.widths[2] == 18
    assert layout.fit([ident, low, title], 50) is None  # 36 + 2 + 16 > 50: fold into records


def test_readable_time_states_the_zone():
    tokyo = datetime.timezone(datetime.timedelta(hours=9), "JST")
    assert readable_time("2026-11-25T18:00:00Z", tokyo) == "2026-11-26 03:00 JST"
    assert readable_time("2026-11-25T18:00:00Z", datetime.UTC) == "2026-11-25 18:00 UTC"
    assert readable_time("2026-11-25", tokyo) == "2026-11-25"  # a date has no zone
    assert readable_time("not a time", tokyo) == "not a time"


def test_columns_are_refused_where_there_are_none(cli, hostile):
    result = cli("chain", "show", "sow-h", "--format", "tree", "--columns", "id")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--columns applies to the table; --format tree has no columns" in result.stderr
    assert "--columns" not in cli("config", "get", "--help").stdout  # prints a value, not a table
    assert "--columns" not in cli("items", "tree", "--help").stdout
    assert "--no-pager" in cli("items", "tree", "--help").stdout


@pytest.mark.parametrize(
    ("command", "columns"),
    [(("chain", "ready"), True), (("chain", "blocked"), True), (("po", "options"), False)],
)
def test_every_read_command_takes_no_pager(cli, command, columns):
    """Commands that only show data page on a terminal, so each takes --no-pager."""
    help_text = cli(*command, "--help").stdout
    assert "--no-pager" in help_text
    assert ("--columns" in help_text) is columns


# --- layouts that keep ids whole ------------------------------------------------------------------


def test_deep_tree_on_80_columns_keeps_every_uuid_whole(monkeypatch, capsys):
    import uuid

    from rich.console import Console

    from sowctl.output import render
    from sowctl.output.item_tree import build_tree, render_tree

    monkeypatch.setattr(render, "_console", Console(width=80, soft_wrap=False))
    ids = [str(uuid.UUID(int=n + 1)) for n in range(16)]
    items = [
        {"id": ids[n], "parentItemId": ids[n - 1] if n else None, "orderIndex": 0}
        | {"createdAt": "2026-01-01T00:00:00Z", "title": f"level {n}", "type": "task_item"}
        | {"status": "in_progress"}
        for n in range(16)
    ]
    render_tree("s", build_tree(items), rich=True)
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    for item_id in ids:
        assert item_id in out, out


def _external_deps() -> list[dict]:
    import uuid

    return [
        {
            "id": str(uuid.UUID(int=n + 1)),
            "sourceItemId": str(uuid.UUID(int=n + 100)),
            "targetItemId": None,
            "isExternal": True,
            "externalTarget": f"Steel fabricator shop drawings approval round {n}",
            "dependencyType": "depends_on",
            "riskLevel": "critical",
            "status": "active",
            "slaDate": "2026-12-01",
        }
        for n in range(3)
    ]


def _deps_screen(rows, width: int) -> str:
    import io

    from rich.console import Console

    from sowctl.commands.dependencies import COLUMNS
    from sowctl.output.table import print_table

    out = io.StringIO()
    print_table(Console(file=out, width=width, color_system=None), rows, [c for c in COLUMNS if c.default])
    return out.getvalue()


def test_deps_table_at_120_columns_keeps_risk_and_sla_over_a_shortened_external_target():
    header = _deps_screen(_external_deps(), 120).splitlines()[0].split()
    assert "RISK" in header and "SLA" in header, header


def test_deps_table_keeps_an_internal_target_id_as_essential():
    rows = _external_deps()
    rows[0].update(isExternal=False, targetItemId=rows[1]["id"], externalTarget=None)
    screen = _deps_screen(rows, 160)
    assert "TARGET" in screen.splitlines()[0] and rows[1]["id"] in screen
