"""The po, budgets and contracts commands: --json, TSV, Rich tables, exit codes.

The ``cli`` fixture captures stdout (not a TTY), so plain output is TSV; the
``tty`` fixture makes the renderer draw Rich tables instead. Remote mode runs the
same commands against the real Bottle app in process and must print the same.
"""

from __future__ import annotations

import json
import re

import pytest

from sowctl import operations
from sowctl.commands import budgets
from sowctl.commands.po import parse_line
from sowctl.output import render
from sowctl.services.access import Caller
from tests.support.cli import mode_neutral
from tests.support.client import SERVER, route_remote_in_process
from tests.support.finance import COMPANY, CREATE, GLOBEX_ORG, ORG, OTHER_COMPANY, build_finance, po_body


@pytest.fixture
def fin(db):
    return build_finance()


@pytest.fixture
def tty(monkeypatch):
    monkeypatch.setattr("sowctl.output.render.is_tty", lambda: True)


def api(name: str, query=None, body=None):
    return operations.call_local(name, Caller.local(), None, query, body)


def ok(result):
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return result


# --- po create --------------------------------------------------------------------


def test_po_create_json_is_the_api_body(cli, fin):
    result = ok(cli(*CREATE, "--line", "Columns:0.10:3", "--line", "Plates:0.20:4:2:0.10", "--json"))
    order = result.json()
    assert order["number"] == "PO-101-0001"
    assert order["status"] == "draft"  # the default
    assert (order["original_amount"], order["revised_amount"], order["total_amount"]) == ("0.30",) * 3
    assert [(line["description"], line["amount"]) for line in order["line_items"]] == [
        ("Columns", "0.10"),
        ("Plates", "0.20"),
    ]
    assert api("finance.list_pos", {"project_id": "101"}) == {"data": [order]}


def test_po_create_piped_is_key_tab_value(cli, fin):
    out = ok(cli(*CREATE, "--status", "issued", "--line", "Columns:99999999999999.99:3")).stdout
    lines = out.splitlines()
    assert lines[:8] == [
        "id\t1",
        "number\tPO-101-0001",
        "status\tissued",
        "title\tSteel",
        "vendor\tKeystone Steel (7)",
        "original_amount\t99999999999999.99",
        "revised_amount\t99999999999999.99",
        "total_amount\t99999999999999.99",
    ]
    assert lines[8].startswith("line_items\t[")


def test_po_create_tty_shows_lines_with_right_aligned_money_and_total(cli, fin, tty):
    out = ok(cli(*CREATE, "--line", "Columns:1250.5:3", "--line", "Plates:0.25:4")).stdout
    assert re.search(r"total_amount\s+1,250.75", out)
    header = next(line for line in out.splitlines() if "DESCRIPTION" in line)
    assert "AMOUNT" in header
    row = next(line for line in out.splitlines() if "Plates" in line)
    assert re.search(r"\s0\.25$", row)  # right-aligned: the last cell ends the line
    footer = next(line for line in out.splitlines() if "Total" in line)
    assert footer.rstrip().endswith(" 1,250.75")


def test_po_create_from_file_and_stdin(cli, fin, tmp_path):
    path = tmp_path / "po.json"
    path.write_text(json.dumps(po_body(status="issued")))
    from_file = ok(cli("po", "create", "--from-file", str(path), "--json")).json()
    assert (from_file["status"], from_file["total_amount"]) == ("issued", "0.30")
    # Options override the file's fields.
    piped = ok(
        cli("po", "create", "--from-file", "-", "--title", "Override", "--json", input=json.dumps(po_body()))
    ).json()
    assert (piped["number"], piped["title"], piped["status"]) == ("PO-101-0002", "Override", "draft")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--line", "Columns:abc:3"], 2, "is not DESCRIPTION:AMOUNT:COST_CODE_ID"),
        (["--line", "Columns:-1.00:3"], 2, "invalid --line 1 (amount): must not be negative"),
        (["--line", "Columns:1.00:5"], 3, "cost code 5 not found (line_items[0].cost_code_id)"),
        (
            ["--line", "Columns:1.00:3", "--status", "bogus"],
            2,
            "Invalid value for '--status': 'bogus' is not one of 'draft'",
        ),
        (["--line", "Columns:1.00:3", "--vendor", "20"], 3, "vendor 20 not found"),
        (["--line", "Columns:1.00:3", "--commitment", "5002"], 3, "commitment 5002 not found in project 101"),
        ([], 2, "missing option --line"),
    ],
)
def test_po_create_errors(cli, fin, args, code, message):
    result = cli(*CREATE, *args)
    assert result.exit_code == code
    assert result.stdout == ""
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert api("finance.list_pos", {"project_id": "101"}) == {"data": []}


def test_po_create_needs_the_required_options(cli, fin):
    result = cli("po", "create", "--project", "101")
    assert result.exit_code == 2
    assert "missing option --commitment, --title, --vendor, --line" in result.stderr


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("Columns:0.10:3", {"description": "Columns", "amount": "0.10", "cost_code_id": 3}),
        (
            "Plates:10.00:4:2:5.00",
            {
                "description": "Plates",
                "amount": "10.00",
                "cost_code_id": 4,
                "quantity": 2,
                "unit_cost": "5.00",
            },
        ),
        ("Bolts:3:4:1.5", {"description": "Bolts", "amount": "3", "cost_code_id": 4, "quantity": 1.5}),
        ("Note: steel:100.00:3", {"description": "Note: steel", "amount": "100.00", "cost_code_id": 3}),
        ("Ratio 1:2 mix:5.00:3", {"description": "Ratio 1:2 mix", "amount": "5.00", "cost_code_id": 3}),
    ],
)
def test_line_syntax(text, line):
    assert parse_line(text) == line


@pytest.mark.parametrize(
    "text", ["Columns", "Columns:1.00", "Columns:1.00:x", "Columns:1.00:3:x", "A:1:2:3:4:x"]
)
def test_bad_line_syntax(text):
    import typer

    with pytest.raises(typer.BadParameter):
        parse_line(text)


# --- po list ----------------------------------------------------------------------


def test_po_list_json_quiet_and_piped(cli, fin):
    first = ok(cli(*CREATE, "--line", "A:0.10:3", "--json")).json()
    second = ok(cli(*CREATE, "--line", "B:1000.00:3", "--line", "C:0.05:4", "--json")).json()
    assert ok(cli("po", "list", "--project", "101", "--json")).json() == [first, second]
    assert ok(cli("po", "list", "--project", "101", "-q")).stdout == f"{first['id']}\n{second['id']}\n"
    assert ok(cli("po", "list", "--project", "101")).stdout.splitlines() == [
        f"{first['id']}\tPO-101-0001\tdraft\tSteel\tKeystone Steel\t1\t0.10",
        f"{second['id']}\tPO-101-0002\tdraft\tSteel\tKeystone Steel\t2\t1000.05",
    ]


def test_po_list_tty_has_a_total_row(cli, fin, tty):
    ok(cli(*CREATE, "--line", "A:0.10:3"))
    ok(cli(*CREATE, "--line", "B:0.20:3"))
    out = ok(cli("po", "list", "--project", "101")).stdout
    footer = next(line for line in out.splitlines() if "Total" in line)
    assert footer.rstrip().endswith(" 0.30")


# --- budgets ------------------------------------------------------------------------


def test_budget_views(cli, fin):
    assert ok(cli("budgets", "views", "--project", "101", "--json")).json() == api(
        "finance.budget_views", {"project_id": "101"}
    )
    assert ok(cli("budgets", "views", "--project", "101")).stdout.splitlines() == [
        "11\tOriginal vs. Current\tOriginal vs. Current view\t2026-03-01T09:30:00Z\t2026-03-10T17:45:05Z",
        "12\tForecast\t\t2026-03-01T09:30:00Z\t2026-03-10T17:45:05Z",
    ]
    assert ok(cli("budgets", "views", "--project", "101", "-q")).stdout == "11\n12\n"


def test_budget_snapshots(cli, fin):
    assert ok(cli("budgets", "snapshots", "--project", "101", "--json")).json() == api(
        "finance.snapshots", {"project_id": "101"}
    )
    assert ok(cli("budgets", "snapshots", "--project", "101")).stdout.splitlines() == [
        "21\tMonth end\t11\t2026-03-01T09:30:00Z\tAda Lovelace\tAt month end",
        "22\tEmpty forecast\t12\t2026-03-10T17:45:05Z\t\t",
    ]


def test_budget_snapshot_json_and_piped(cli, fin):
    query = {"project_id": "101", "snapshot_id": "21"}
    assert ok(cli("budgets", "snapshot", "21", "--project", "101", "--json")).json() == api(
        "finance.snapshot", query
    )
    assert ok(cli("budgets", "snapshot", "--project", "101", "21")).stdout.splitlines() == [
        "1\t01-500\t01-500 work\t0.10\t0.10\t0.10\t0.10\t0.30\t-0.20",
        "2\t03-300\t03-300 work\t0.20\t0.20\t0.20\t0.20\t0.10\t0.10",
        "3\t05-120\t05-120 work\t1000000.00\t1200000.50\t900000.25\t300000.75\t1250000.60\t-50000.10",
    ]


def test_budget_snapshot_tty_table(cli, fin, tty):
    out = ok(cli("budgets", "snapshot", "21", "--project", "101")).stdout
    assert "Snapshot 21: Month end (budget view 11)" in out
    row = next(line for line in out.splitlines() if "05-120" in line)
    assert re.search(r"  1,000,000\.00  ", row)  # money right-aligned, grouped
    assert row.rstrip().endswith(" -50,000.10")
    footer = next(line for line in out.splitlines() if "Total" in line)
    for total in ("1,000,000.30", "1,200,000.80", "900,000.55", "300,001.05", "1,250,001.00", "-50,000.20"):
        assert f" {total}" in footer


def test_negative_variance_is_red():
    variance = next(col for col in budgets.LINE_COLUMNS if col.header == "VARIANCE")
    assert variance.style({"variance": -0.2}) == "red"
    assert variance.style({"variance": 0.0}) is None
    assert variance.style({"variance": 5}) is None
    assert all(col.justify == "right" for col in budgets.LINE_COLUMNS if col.header in ("ORIGINAL", "SPENT"))


def test_budget_snapshot_tty_colours_negative_variance(cli, fin, tty, monkeypatch):
    from rich.console import Console

    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(
        "sowctl.output.render._console", Console(force_terminal=True, width=200, soft_wrap=False)
    )
    out = ok(cli("budgets", "snapshot", "21", "--project", "101")).stdout
    row = next(line for line in out.splitlines() if "05-120" in line)
    assert "\x1b[31m-50,000.10" in row  # red
    row = next(line for line in out.splitlines() if "03-300" in line)
    assert "\x1b[31m" not in row
    # the totals row follows the rows' rule: its negative variance is red too (and bold, as footers are)
    footer = next(line for line in out.splitlines() if "Total" in line)
    assert "\x1b[1;31m-50,000.20" in footer, repr(footer)
    assert "\x1b[1m1,250,001.00" in footer  # a positive total is only bold


def test_budget_snapshot_records_colour_the_negative_total_variance(cli, fin, tty, monkeypatch):
    """Too narrow for the table: rows and totals as records, styled by the same rule."""
    from rich.console import Console

    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setattr(
        "sowctl.output.render._console", Console(force_terminal=True, width=40, soft_wrap=False)
    )
    out = ok(cli("budgets", "snapshot", "21", "--project", "101")).stdout
    variances = [line for line in out.splitlines() if "VARIANCE" in line]
    assert len(variances) == 4  # three line items and the totals
    assert "\x1b[31m-50,000.20" in variances[-1], repr(variances[-1])
    assert "\x1b[31m-50,000.10" in variances[2]


# --- contracts -----------------------------------------------------------------------


def test_contract_show(cli, fin):
    query = {"project_id": "101", "prime_contract_id": "31"}
    assert ok(cli("contracts", "show", "31", "--project", "101", "--json")).json() == api(
        "finance.prime_contract", query
    )
    lines = ok(cli("contracts", "show", "31", "--project", "101")).stdout.splitlines()
    assert "original_contract_value\t12450000.00" in lines
    assert "pending_change_orders_value\t84300.10" in lines
    assert "contract_date\t2025-11-01T00:00:00Z" in lines
    assert "customer.contact_name\tMaria Chen" in lines
    assert "payment_terms.days_until_due\t30" in lines


def test_contract_show_tty_gives_its_timestamps_in_local_time(cli, fin, tty):
    """contract_date, start_date and estimated_completion_date are timestamps:
    on a terminal they are local time with the zone, like every other timestamp."""
    import os
    import time

    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    try:
        out = ok(cli("contracts", "show", "31", "--project", "101")).stdout
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "contract_date 2025-11-01 09:00 JST" in lines, out
    assert "start_date 2025-11-16 09:00 JST" in lines
    assert "estimated_completion_date 2027-05-10 09:00 JST" in lines
    assert not any("T00:00:00Z" in line for line in lines)
    # a calendar date is no moment: it stays as it is
    assert render.shown("2026-12-01", render._key_kind("slaDate")) == "2026-12-01"


def test_contract_show_tty(cli, fin, tty):
    out = ok(cli("contracts", "show", "31", "--project", "101")).stdout
    assert re.search(r"current_contract_value\s+12,762,450\.75", out)


# --- errors and scoping -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["budgets", "snapshot", "99", "--project", "101"], 3, "snapshot 99 not found in project 101"),
        (["budgets", "snapshot", "x", "--project", "101"], 2, "invalid SNAPSHOT_ID 'x': must be an integer"),
        (
            ["contracts", "show", "x1", "--project", "101"],
            2,
            "invalid PRIME_CONTRACT_ID 'x1': must be an integer",
        ),
        (["budgets", "views", "--project", "abc"], 2, "invalid --project 'abc': must be an integer"),
        (["budgets", "views", "--project", "999"], 3, "project 999 not found"),
        (["contracts", "show", "41", "--project", "101"], 3, "prime contract 41 not found in project 101"),
        (["po", "list", "--project", "102x"], 2, "invalid --project '102x': must be an integer"),
        (["--org", GLOBEX_ORG, "budgets", "views", "--project", "101"], 3, "project 101 not found"),
        (["--company", OTHER_COMPANY, "budgets", "views", "--project", "101"], 3, "project 101 not found"),
        (["--company", "comp-nope", "po", "list", "--project", "101"], 3, "company comp-nope not found"),
    ],
)
def test_errors_are_one_line_with_the_contract_exit_code(cli, fin, args, code, message):
    result = cli(*args)
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_org_and_company_options_scope_local_calls(cli, fin):
    result = ok(cli("--org", ORG, "--company", COMPANY, *CREATE, "--line", "A:1:3", "--json"))
    assert result.json()["total_amount"] == "1.00"
    assert ok(cli("--org", ORG, "--company", COMPANY, "budgets", "views", "--project", "101", "-q")).stdout


# --- remote mode prints the same --------------------------------------------------------------


@pytest.fixture
def remote(fin, db_url, monkeypatch):
    """Remote-mode global options against the Bottle app in process (no socket).

    Calling it switches the CLI to remote mode (SOWCTL_DB is dropped, since --db
    and --server exclude each other); before that, commands run locally.
    """
    from sowctl.server.app import create_app

    route_remote_in_process(monkeypatch, create_app(db_url))

    def switch() -> list[str]:
        monkeypatch.delenv("SOWCTL_DB")
        return ["--server", SERVER, "--api-key", fin.key, "--org", ORG, "--company", COMPANY]

    return switch


@pytest.mark.parametrize(
    "args",
    [
        ["budgets", "views", "--project", "101"],
        ["budgets", "snapshots", "--project", "101"],
        ["budgets", "snapshot", "21", "--project", "101"],
        ["contracts", "show", "31", "--project", "101"],
        ["budgets", "snapshot", "99", "--project", "101"],
        ["budgets", "views", "--project", "abc"],
    ],
)
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_remote_mode_prints_the_same(cli, remote, args, json_flag):
    local = cli(*args, *json_flag)
    remote_result = cli(*remote(), *args, *json_flag)
    assert (remote_result.exit_code, remote_result.stdout, mode_neutral(remote_result.stderr)) == (
        local.exit_code,
        local.stdout,
        local.stderr,
    )


def test_remote_po_create_and_list(cli, remote):
    options = remote()
    order = ok(cli(*options, *CREATE, "--line", "A:0.10:3", "--line", "B:0.20:3", "--json")).json()
    assert order["total_amount"] == "0.30"
    assert ok(cli(*options, "po", "list", "--project", "101", "--json")).json() == [order]
    result = cli(*options, *CREATE, "--line", "A:1.00:5")
    assert result.exit_code == 3
    assert result.stderr.strip() == "error: cost code 5 not found (line_items[0].cost_code_id)"
