"""The command line as a person types it: the right target, options anywhere, errors in
its own words, confirmations, secrets off the command line (issue 15).

Where a behaviour exists in both modes, it is checked in local mode and against the real
app in remote mode (``tests/support/modes.py``), and both must print the same.
"""

from __future__ import annotations

import json
import sys

import pytest

from sowctl.storage import models as m
from tests.support.cli import mode_neutral
from tests.support.modes import LOCAL_ORG


def ok(result):
    assert result.exit_code == 0, result.stderr
    return result


def same(pair) -> tuple:
    local, remote = pair
    assert (local.exit_code, local.stdout, local.stderr) == (
        remote.exit_code,
        remote.stdout,
        mode_neutral(remote.stderr),
    )
    return local.exit_code, local.stdout, local.stderr


# --- reads never create a database ---------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("items", "list", "S"),
        ("sows", "list"),
        ("deps", "list"),
        ("chain", "show", "S"),
        ("projects", "list"),
        ("export",),
        ("tokens", "list"),
    ],
)
def test_a_read_on_a_missing_file_is_an_error_naming_it(cli, tmp_path, args):
    missing = tmp_path / "no" / "such" / "x.db"
    result = cli("--db", missing, *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"error: database {missing} does not exist "
        "(a command that writes creates it; check --db or SOWCTL_DB)\n"
    )
    assert not (tmp_path / "no").exists()


def test_a_mistyped_file_in_an_existing_directory_is_not_created(cli, tmp_path):
    result = cli("--db", tmp_path / "tyop.db", "sows", "list")
    assert result.exit_code == 2
    assert not (tmp_path / "tyop.db").exists()


def test_a_write_creates_the_file_but_not_a_missing_directory(cli, tmp_path):
    result = cli("--db", tmp_path / "missing" / "x.db", "sows", "create", "T")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("error: cannot create database ") and "does not exist" in result.stderr
    assert not (tmp_path / "missing").exists()
    ok(cli("--db", tmp_path / "x.db", "sows", "create", "T", "--id", "s"))
    assert ok(cli("--db", tmp_path / "x.db", "sows", "list", "-q")).stdout == "s\n"


@pytest.mark.parametrize("target", ["sqlite:///", "sqlite:///:memory:", ":memory:", "SQLite://"])
@pytest.mark.parametrize("args", [("sows", "create", "X", "--id", "x1"), ("sows", "list"), ("status",)])
def test_an_in_memory_database_is_refused_since_it_keeps_nothing(cli, target, args):
    result = cli("--db", target, *args)
    assert (result.exit_code, result.stdout) == (2, "")
    expected = f"error: --db (or SOWCTL_DB) {target!r} names an in-memory SQLite database"
    assert result.stderr.startswith(expected)
    refused = cli("sows", "list", env={"SOWCTL_DB": target})
    assert refused.exit_code == 2 and "in-memory" in refused.stderr


def test_status_says_the_file_is_missing_and_creates_nothing(cli, tmp_path):
    result = cli("--db", tmp_path / "x.db", "status")
    assert result.exit_code == 2  # as any read of a missing file (a usage error, not a failure)
    assert f"database {tmp_path / 'x.db'} does not exist" in result.stderr
    assert not (tmp_path / "x.db").exists()


# --- credentials without a server ---------------------------------------------------------


@pytest.mark.parametrize("option", ["--token", "--api-key"])
def test_a_credential_option_without_a_server_is_refused(cli, db, option):
    result = cli(option, "sowt_x", "sows", "list")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(
        f"error: {option} is for remote mode and no server is set: add --server URL"
    )


def test_a_credential_in_the_environment_without_a_server_is_said(cli, db, db_url):
    ok(cli("sows", "create", "T", "--id", "s-1"))
    result = ok(cli("sows", "list", "-q", env={"SOWCTL_TOKEN": "sowt_x"}))
    assert result.stdout == "s-1\n"
    assert result.stderr == (
        f"warning: SOWCTL_TOKEN is set but no server is: running in local mode on {db_url} "
        "(set SOWCTL_SERVER or --server for remote mode)\n"
    )
    # --db chose local mode explicitly: nothing to warn about.
    assert ok(cli("--db", db_url, "sows", "list", "-q", env={"SOWCTL_TOKEN": "sowt_x"})).stderr == ""


# --- --org scopes Groups B/C and sows, not items, deps or chain -----------------------------


def test_the_org_does_not_hide_items_dependencies_or_chains_in_local_mode(cli, db):
    ok(cli("sows", "create", "T", "--id", "sow-1"))
    ok(cli("items", "create", "sow-1", "--title", "A", "--id", "a"))
    ok(cli("items", "create", "sow-1", "--title", "B", "--id", "b"))
    ok(cli("deps", "create", "--source", "a", "--target", "b", "--type", "blocks", "--risk", "low"))
    scoped = {"SOWCTL_ORG": "org-acme"}
    assert ok(cli("items", "list", "sow-1", "-q", env=scoped)).stdout == "a\nb\n"
    assert ok(cli("items", "get", "a", "--json", env=scoped)).json()["id"] == "a"
    assert len(ok(cli("deps", "list", "--sow", "sow-1", "-q", env=scoped)).stdout.split()) == 1
    assert ok(cli("chain", "show", "sow-1", "--json", env=scoped)).json()["sowId"] == "sow-1"
    # It still chooses the organization of a SOW, and filters the SOW list.
    assert ok(cli("sows", "list", "-q", env=scoped)).stdout == ""
    ok(cli("orgs", "create", "org-acme"))
    ok(cli("sows", "create", "Acme's", "--id", "sow-acme", env=scoped))
    assert m.Sow.get_by_id("sow-acme").project.organization_id == "org-acme"
    assert ok(cli("sows", "list", "-q", env=scoped)).stdout == "sow-acme\n"


def test_a_listing_scoped_to_an_unknown_org_says_so_in_local_mode(cli, db):
    """An empty list would hide a mistyped --org (Group B commands already say it)."""
    ok(cli("sows", "create", "T", "--id", "sow-1"))  # an organization with a project
    for command in (("projects", "list"), ("clients", "list")):
        refused = cli("--org", "org-typo", *command)
        assert refused.exit_code == 3 and refused.stderr == "error: organization org-typo not found (--org)\n"
    assert ok(cli("projects", "list", "-q")).stdout != ""
    org = m.Organization.select().first().id
    assert ok(cli("--org", org, "clients", "list", "--json")).json()["total"] == 0  # exists: empty


# --- global options after the command ------------------------------------------------------


def test_global_options_are_accepted_after_the_command(cli, db, db_url, tmp_path, monkeypatch):
    ok(cli("sows", "create", "T", "--id", "sow-1"))
    monkeypatch.delenv("SOWCTL_DB")
    assert ok(cli("sows", "list", "-q", "--db", db_url)).stdout == "sow-1\n"
    assert ok(cli("sows", "list", f"--db={db_url}", "-q")).stdout == "sow-1\n"
    assert ok(cli("items", "list", "sow-1", "--db", db_url, "--json")).json() == []


def test_global_options_between_the_group_and_its_command(cli, db, db_url, monkeypatch):
    ok(cli("sows", "create", "T", "--id", "sow-1"))
    ok(cli("items", "create", "sow-1", "--title", "A", "--id", "a"))
    monkeypatch.delenv("SOWCTL_DB")
    assert ok(cli("items", "--db", db_url, "list", "sow-1", "-q")).stdout == "a\n"
    assert ok(cli("items", f"--db={db_url}", "list", "sow-1", "-q")).stdout == "a\n"


@pytest.mark.parametrize(
    "args",
    [
        ("items", "list", "sow-1", "--server"),
        ("items", "list", "--db"),
        ("items", "list", "sow-1", "--token"),
    ],
)
def test_a_global_option_without_its_value_says_so(cli, args):
    result = cli(*args)
    assert result.exit_code == 2
    assert result.stderr == f"error: option {args[-1]} needs a value (see 'sowctl --help')\n"


def test_global_options_after_the_command_select_remote_mode(modes):
    ok(modes.local("items", "create", "sow-1", "--title", "A", "--id", "a"))
    result = modes.cli(
        "items", "list", "sow-1", "--server", "http://sowctl.test", "--token", modes.token, "-q"
    )
    assert ok(result).stdout == "a\n"


def test_an_option_of_the_command_itself_stays_the_commands(cli, db, db_url, monkeypatch):
    ok(cli("sows", "create", "T", "--id", "sow-1"))  # makes organization "local"
    monkeypatch.delenv("SOWCTL_DB")
    result = ok(cli("tokens", "create", "--user", "u", "--org", LOCAL_ORG, "--db", db_url))
    assert result.stdout.startswith("sowt_")
    # A value that looks like a global option is the command's option's value.
    ok(cli("items", "create", "sow-1", "--title", "--server", "--db", db_url, "--id", "t"))
    assert m.Item.get_by_id("t").title == "--server"


def test_version(cli):
    from sowctl import __version__

    assert ok(cli("--version")).stdout == f"sowctl {__version__}\n"


# --- errors name the options ------------------------------------------------------------------


def test_an_enum_typo_names_the_option_lists_the_values_and_suggests_one(cli, db):
    result = cli("deps", "create", "--source", "a", "--target", "b", "--type", "depends", "--risk", "high")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: Invalid value for '--type': 'depends' is not one of 'depends_on', 'blocks', "
        "'related_to', 'prerequisite', 'successor'; did you mean 'depends_on'? "
        "(see 'sowctl deps create --help')\n"
    )
    result = cli("projects", "list", "--status", "activ")
    assert (result.exit_code, "did you mean 'active'?" in result.stderr) == (2, True)
    result = cli("items", "update", "x", "--status", "zzz")
    assert result.exit_code == 2 and "did you mean" not in result.stderr


@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (["items", "list", "sow-1", "--type", "req"], "requirement"),
        (["chain", "check", "sow-1", "--fail-on", "critcal"], "critical"),
        (
            ["deps", "create", "--source", "a", "--target", "b", "--type", "depends", "--risk", "low"],
            "depends_on",
        ),
    ],
)
def test_fixed_value_options_suggest_the_choice_in_both_modes(modes, args, meant):
    for result in modes.both(*args):
        assert result.exit_code == 2, result.stderr
        assert f"did you mean {meant!r}?" in result.stderr


def test_over_long_title_is_shortened_in_the_error_in_both_modes(modes):
    for result in modes.both("items", "create", "sow-1", "--title", "a" * 20_000, "--type", "task_item"):
        assert result.exit_code == 2, result.stderr
        assert "invalid --title 'aaaa" in result.stderr
        assert "a" * 81 not in result.stderr and "…" in result.stderr
        assert len(result.stderr) < 300


def test_api_field_names_become_the_options_typed_in_both_modes(modes):
    ok(modes.local("items", "create", "sow-1", "--title", "A", "--id", "a"))
    ok(modes.local("items", "create", "sow-1", "--title", "B", "--id", "b"))
    args = ("deps", "create", "--source", "a", "--target", "b", "--type", "blocks", "--risk", "low")
    code, _, stderr = same(modes.both(*args, "--sla", "2026-13-01"))
    assert (code, stderr) == (
        2,
        "error: invalid --sla '2026-13-01': must be a valid calendar date (YYYY-MM-DD)\n",
    )
    code, _, stderr = same(modes.both("projects", "list", "--limit", "abc"))
    assert (code, stderr) == (2, "error: invalid --limit 'abc': must be a string of digits\n")
    code, _, stderr = same(modes.both("items", "create", "sow-1", "--title", " "))
    assert (code, stderr.startswith("error: invalid --title ' ': ")) == (2, True)


def test_a_body_file_with_an_integer_too_long_for_python_names_the_field_in_both_modes(modes, tmp_path):
    body = tmp_path / "order.json"
    body.write_text('{"items": [{"id": "x", "orderIndex": ' + "9" * 5000 + "}]}")
    code, _, stderr = same(modes.both("items", "reorder", "sow-1", "--from-file", str(body)))
    assert (code, stderr) == (
        2,
        "error: items.0.orderIndex: must be a number of at most 4300 digits (this one has 5000)\n",
    )


def test_a_group_b_query_parameter_is_named_by_its_option(cli, db):
    result = cli("--org", "o", "--company", "c", "budgets", "views", "--project", "x")
    assert (result.exit_code, result.stderr) == (2, "error: invalid --project 'x': must be an integer\n")


def test_a_group_b_query_parameter_is_named_by_its_option_remotely(cli, db, db_url, monkeypatch):
    from tests.support.finance import COMPANY, ORG, build_finance
    from tests.support.modes import install_wsgi_remote

    fin = build_finance()
    install_wsgi_remote(monkeypatch, db_url)
    remote = ("--server", "http://sowctl.test", "--api-key", fin.key, "--org", ORG, "--company", COMPANY)
    result = cli(*remote, "budgets", "views", "--project", "x")
    assert (result.exit_code, result.stderr) == (2, "error: invalid --project 'x': must be an integer\n")


def test_reorder_without_pairs_says_what_to_give(cli, db):
    result = cli("items", "reorder", "sow-1")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: give at least one ITEM_ID=ORDER_INDEX pair (or --from-file FILE)\n",
    )


def test_a_body_from_a_file_keeps_the_api_names(cli, db, tmp_path):
    ok(cli("sows", "create", "T", "--id", "sow-1"))
    body = tmp_path / "reorder.json"
    body.write_text('{"items": []}')
    result = cli("items", "reorder", "sow-1", "--from-file", body)
    assert result.exit_code == 2 and result.stderr.startswith("error: items: ")


# --- a requirement's status is calculated -----------------------------------------------------


def test_setting_a_calculated_status_is_refused_in_both_modes(modes):
    ok(modes.local("items", "create", "sow-1", "--title", "R", "--type", "requirement", "--id", "r"))
    ok(modes.local("items", "create", "sow-1", "--title", "Q", "--type", "requirement", "--parent", "r"))
    ok(modes.local("items", "create", "sow-1", "--title", "T", "--parent", "r", "--id", "t"))
    code, stdout, stderr = same(modes.both("items", "update", "r", "--status", "completed"))
    assert (code, stdout) == (2, "")
    assert stderr == (
        "error: --status: requirement r has task items, so its status is calculated from them "
        "(pending) and cannot be set\n"
    )
    assert m.Item.get_by_id("r").status == "pending"  # nothing was stored
    # A requirement without task items takes the status: nothing to say.
    ok(modes.local("items", "create", "sow-1", "--title", "R2", "--type", "requirement", "--id", "r2"))
    assert ok(modes.local("items", "update", "r2", "--status", "completed")).stderr == ""
    assert m.Item.get_by_id("r2").status == "completed"
    assert ok(modes.remote("items", "update", "t", "--title", "T2", "-q")).stdout == "t\n"


# --- ids that could never be reached over HTTP -----------------------------------------------


@pytest.mark.parametrize("bad", ["a/b", "..", "."])
def test_ids_that_are_not_url_segments_are_refused_in_both_modes(modes, bad):
    code, _, stderr = same(modes.both("items", "create", "sow-1", "--title", "A", "--id", bad))
    assert code == 2 and stderr.startswith(f"error: invalid --id {bad!r}: must not ")
    code, _, stderr = same(modes.both("sows", "create", "T", "--id", bad))
    assert code == 2 and "ids are part of URLs" in stderr
    assert m.Item.select().count() == 0


@pytest.mark.parametrize("bad", ["a\tb", "a\nb", "a\x1bb", "a\x7fb", "a\x85b"])
def test_ids_with_control_characters_are_refused_in_both_modes(modes, bad):
    """Output shows a control character as something else (a tab as a space), so the id
    `create -q` printed would not be the id that was stored."""
    code, _, stderr = same(modes.both("items", "create", "sow-1", "--title", "A", "--id", bad))
    assert code == 2 and "must not contain control characters" in stderr
    code, _, stderr = same(modes.both("sows", "create", "T", "--id", bad))
    assert code == 2 and "must not contain control characters" in stderr
    assert m.Item.select().count() == 0 and m.Sow.select().where(m.Sow.id == bad).count() == 0


def test_an_imported_id_with_a_slash_is_refused(cli, db, tmp_path):
    dataset = {
        "organizations": [{"id": "org-1", "name": "O"}],
        "projects": [{"id": "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c10", "organizationId": "org-1", "name": "P"}],
        "sows": [{"id": "sow/1", "projectId": "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c10", "title": "S"}],
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(dataset))
    result = cli("import", path)
    assert result.exit_code == 2
    assert "sows[0]" in result.stderr and "must not contain '/'" in result.stderr
    assert m.Sow.select().count() == 0


@pytest.mark.slow  # two sowctl subprocesses
def test_a_refused_import_leaves_no_new_database_file(tmp_path):
    """A mistyped --db must not be left behind looking like an empty database."""
    import subprocess
    import sys

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"users": [{"id": "u", "organizationId": "nope", "name": "U"}]}))
    new = tmp_path / "new.db"
    for dataset in (bad, tmp_path / "missing.json"):
        done = subprocess.run(
            [sys.executable, "-m", "sowctl", "--db", str(new), "import", str(dataset)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and done.stderr.startswith("error: "), done.stderr
        assert list(tmp_path.glob("new.db*")) == []


def test_items_create_with_a_chosen_id_and_quiet_output(modes):
    assert ok(modes.local("items", "create", "sow-1", "--title", "A", "--id", "a", "-q")).stdout == "a\n"
    result = modes.local("items", "create", "sow-1", "--title", "A", "--id", "a")
    assert (result.exit_code, result.stderr) == (2, "error: invalid --id 'a': item a already exists\n")
    # A server ignores a chosen item id (ids are one namespace across organizations), so
    # remote mode refuses --id before sending anything rather than create "b" under another id.
    result = modes.remote("items", "create", "sow-1", "--title", "B", "--id", "b", "-q")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: invalid --id 'b': can be chosen in local mode only; a server generates item ids\n",
    )
    assert m.Item.select().where(m.Item.id == "b").count() == 0
    assert m.Item.select().where(m.Item.title == "B").count() == 0
    created = ok(modes.remote("items", "create", "sow-1", "--title", "B", "-q")).stdout.strip()
    assert m.Item.get_by_id(created).title == "B"


def _not_found_json(message: str) -> str:
    error = {"code": "not_found", "category": "not_found", "message": message, "exitCode": 3}
    return json.dumps(error) + "\n"


def test_a_filter_naming_no_item_is_not_found_in_both_modes(modes):
    ok(modes.local("items", "create", "sow-1", "--title", "Leaf", "--id", "leaf"))
    for args, message in [
        (("deps", "list", "--item", "nope"), "error: item nope not found\n"),
        (("deps", "list", "--item", "nope", "--json"), _not_found_json("item nope not found")),
        (("items", "list", "sow-1", "--parent", "nope"), "error: parent item nope not found in SOW sow-1\n"),
        (
            ("items", "list", "sow-1", "--parent", "nope", "--json"),
            _not_found_json("parent item nope not found in SOW sow-1"),
        ),
    ]:
        assert same(modes.both(*args)) == (3, "", message), args
    # An item with nothing under it lists nothing.
    for args in (
        ("deps", "list", "--item", "leaf", "--json"),
        ("items", "list", "sow-1", "--parent", "leaf", "--json"),
    ):
        code, stdout, stderr = same(modes.both(*args))
        assert (code, json.loads(stdout), stderr) == (0, [], ""), args
    # An empty filter stays a usage error naming the option, never a lookup.
    for args, option in (
        (("deps", "list", "--item", ""), "--item"),
        (("items", "list", "sow-1", "--parent", ""), "--parent"),
    ):
        assert same(modes.both(*args)) == (2, "", f"error: invalid {option} '': must not be empty\n")


def test_create_commands_print_only_the_new_id_with_q(modes):
    sow = ok(modes.remote("sows", "create", "Other", "-q")).stdout.strip()
    assert m.Sow.get_by_id(sow).title == "Other"
    ok(modes.local("items", "create", "sow-1", "--title", "A", "--id", "a"))
    ok(modes.local("items", "create", "sow-1", "--title", "B", "--id", "b"))
    dep = ok(
        modes.remote(
            "deps", "create", "--source", "a", "--target", "b", "--type", "blocks", "--risk", "low", "-q"
        )
    ).stdout
    assert m.Dependency.get_by_id(dep.strip()).source_item_id == "a"


def test_po_create_prints_only_the_new_id_with_q(cli, db):
    from tests.support.finance import COMPANY, CREATE, ORG, build_finance

    build_finance()
    result = ok(cli("--org", ORG, "--company", COMPANY, *CREATE, "--line", "A:1:3", "-q"))
    assert result.stdout.strip().isdigit()


# --- status checks the credentials -----------------------------------------------------------


def test_status_checks_the_token_as_gh_auth_status_does(modes):
    result = ok(modes.remote("status", "--json"))
    assert result.json()["credentials"] == {"token": "ok"}
    result = modes.remote("status", "--json", token="sowt_wrong")
    assert result.exit_code == 4
    assert result.json()["credentials"]["token"].startswith("refused: ")
    assert result.stderr.startswith("error: the server refused the credentials (token: refused: ")
    assert "sowt_wrong" not in result.stdout + result.stderr


def test_status_checks_the_api_key(cli, db, db_url, monkeypatch):
    from tests.support.finance import COMPANY, ORG, build_finance
    from tests.support.modes import install_wsgi_remote

    fin = build_finance()
    install_wsgi_remote(monkeypatch, db_url)
    remote = ("--server", "http://sowctl.test", "--org", ORG, "--company", COMPANY)
    assert ok(cli(*remote, "--api-key", fin.key, "status", "--json")).json()["credentials"] == {
        "apiKey": "ok"
    }
    result = cli(*remote, "--api-key", "sowk_wrong", "status", "--json")
    assert result.exit_code == 4 and result.json()["credentials"]["apiKey"].startswith("refused: ")
    result = cli(
        "--server", "http://sowctl.test", "--org", ORG, "--company", "nope", "--api-key", fin.key, "status"
    )
    assert result.exit_code == 4 and "company nope not found" in result.stderr


# --- PostgreSQL without its driver --------------------------------------------------------------


def test_postgresql_without_its_driver_names_the_extra(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg2", None)  # import psycopg2 raises ImportError
    result = cli("--db", "postgresql://u@127.0.0.1:5432/db", "sows", "list")
    assert result.exit_code == 5
    assert result.stderr == (
        "error: postgresql:// databases need the PostgreSQL driver, which is not installed: "
        "pip install psycopg2-binary\n"
    )


# --- what a purchase order may use ---------------------------------------------------------------


def test_po_options_lists_vendors_cost_codes_and_commitments_in_both_modes(cli, db, db_url, monkeypatch):
    from tests.support.finance import COMPANY, GLOBEX_ORG, ORG, build_finance
    from tests.support.modes import install_wsgi_remote

    fin = build_finance()
    local = ok(cli("--org", ORG, "--company", COMPANY, "po", "options", "--project", "101"))
    assert local.stdout == (
        "vendor\t7\tKeystone Steel\t\n"
        "vendor\t8\tSkyline Glazing\t\n"
        "cost_code\t3\tStructural Steel\t05-120\n"
        "cost_code\t4\tCurtain Wall\t08-440\n"
        "commitment\t5001\tPackage 5001\tvendor 7\n"
    )
    local_json = ok(cli("--org", ORG, "--company", COMPANY, "po", "options", "--project", "101", "--json"))
    install_wsgi_remote(monkeypatch, db_url)
    monkeypatch.delenv("SOWCTL_DB")
    remote = ("--server", "http://sowctl.test", "--api-key", fin.key, "--org", ORG, "--company", COMPANY)
    assert ok(cli(*remote, "po", "options", "--project", "101")).stdout == local.stdout
    assert ok(cli(*remote, "po", "options", "--project", "101", "--json")).json() == local_json.json()
    # Another organization's project is not found, as everywhere in Group B.
    result = cli(*remote, "po", "options", "--project", "201")
    assert (result.exit_code, result.stderr) == (3, "error: project 201 not found\n")
    assert cli("--db", db_url, "--org", GLOBEX_ORG, "po", "options", "--project", "101").exit_code == 3


def test_status_says_credentials_are_unused_in_local_mode(cli, db):
    result = ok(cli("status", "--json", env={"SOWCTL_TOKEN": "sowt_secret_value"}))
    assert result.json()["credentials"] == {"token": "not used: local mode (no server)"}
    assert "sowt_secret_value" not in result.stdout


def test_a_global_option_without_its_value_after_the_command_is_not_moved(cli, db):
    result = cli("items", "list", "sow-1", "--server")
    assert result.exit_code == 2 and "--server" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("items", "get", "a/b"), "error: item a/b not found\n"),
        (("deps", "delete", "x/y", "--yes"), "error: dependency x/y not found\n"),
        (("items", "list", "s/1"), "error: SOW s/1 not found\n"),
        (("items", "update", "..", "--title", "T"), "error: item .. not found\n"),
    ],
)
def test_an_id_that_cannot_be_in_a_url_is_not_found_alike_in_both_modes(modes, args, message):
    assert same(modes.both(*args))[::2] == (3, message)


def test_a_refused_line_names_the_line_option(cli, db):
    from tests.support.finance import COMPANY, CREATE, ORG, build_finance

    build_finance()
    scoped = ("--org", ORG, "--company", COMPANY)
    result = cli(*scoped, *CREATE, "--line", "A:1:3", "--line", "B:1.00001:3")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: invalid --line 2 (amount): must have at most 4 digits after the decimal point\n",
    )


def test_a_refused_write_on_a_mistyped_db_leaves_no_file(cli, tmp_path):
    typo = tmp_path / "tpyo.db"
    refused = cli("--db", str(typo), "items", "create", "sow-1", "--title", "T")
    assert refused.exit_code == 3 and refused.stderr == "error: SOW sow-1 not found\n"
    assert list(tmp_path.glob("tpyo.db*")) == []
    ok(cli("--db", str(typo), "sows", "create", "S", "--id", "sow-1"))  # a write that succeeds keeps it
    assert typo.exists()
    assert cli("--db", str(typo), "items", "create", "sow-2", "--title", "T").exit_code == 3
    assert typo.exists()  # an existing database stays, whatever the command
