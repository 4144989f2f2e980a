"""Defects found by the black-box audit, each pinned by the behaviour a user sees."""

from __future__ import annotations

import contextlib

import pytest

from tests.support.modes import SERVER

# --- credentials: never echoed, never sent with control characters ---------------------------


def test_token_with_trailing_cr_from_environment_is_stripped_and_works(modes):
    modes.monkeypatch.delenv("SOWCTL_DB", raising=False)
    result = modes.cli("sows", "list", env={"SOWCTL_SERVER": SERVER, "SOWCTL_TOKEN": modes.token + "\r"})
    assert result.exit_code == 0, result.stderr
    assert "sow-1" in result.stdout


@pytest.mark.parametrize("bad", ["a\nb", "sowt_ü", "sowt_a\x07b"])
def test_token_with_inner_control_or_non_ascii_is_a_usage_error_without_the_value(modes, bad):
    result = modes.remote("sows", "list", token=bad)
    assert result.exit_code == 2, result.stderr
    assert "--token" in result.stderr and "SOWCTL_TOKEN" in result.stderr
    assert bad not in result.stderr and "sowt_" not in result.stderr
    assert "UnicodeEncodeError" not in result.stderr


def test_api_key_with_control_character_is_refused_by_name(modes):
    modes.monkeypatch.delenv("SOWCTL_DB", raising=False)
    key = "sowk_secretvalue\x01x"
    result = modes.cli(
        "--server", SERVER, "--api-key", key, "--org", "o", "--company", "c", "clients", "list"
    )
    assert result.exit_code == 2, result.stderr
    assert "--api-key" in result.stderr and "secretvalue" not in result.stderr


def test_status_never_prints_a_token_with_a_control_character(modes):
    modes.monkeypatch.delenv("SOWCTL_DB", raising=False)
    result = modes.cli("status", env={"SOWCTL_SERVER": SERVER, "SOWCTL_TOKEN": modes.token + "\x0b1"})
    assert result.exit_code == 2
    assert modes.token not in result.stderr + result.stdout


def test_connection_error_text_never_quotes_a_header():
    from sowctl.backends.remote import _reason

    reason = _reason(Exception("Illegal header value b'Bearer sowt_secret\\r'"))
    assert "sowt_secret" not in reason


# --- --server must be an http(s) URL ------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://[::1", "ftp://x", "not a url", "http://"])
def test_bad_server_url_is_a_usage_error_naming_server(cli, monkeypatch, url):
    monkeypatch.delenv("SOWCTL_DB", raising=False)
    result = cli("--server", url, "--token", "sowt_x", "sows", "list")
    assert result.exit_code == 2, result.stderr
    assert "--server" in result.stderr
    assert "unexpected error" not in result.stderr


# --- /openapi.json speaks to API users ----------------------------------------------------------


def _texts(node, key=None):
    if isinstance(node, dict):
        for k, value in node.items():
            if k in ("description", "summary") and isinstance(value, str):
                yield value
            else:
                yield from _texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value)


def test_openapi_descriptions_cite_no_internal_document_and_use_markdown(db_url):
    import re

    import httpx

    from sowctl.server.app import create_app

    app = create_app(db_url)
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://test") as client:
        document = client.get("/openapi.json").json()
    texts = list(_texts(document))
    assert texts
    for text in texts:
        # "prime contract" is a thing of the domain; "contract §7" or "(contract 7.4)" is not.
        assert not re.search(r"\bspec\b|§|\bcontract\s*[§\d]", text, re.IGNORECASE), text
        assert "``" not in text, text
    assert any("`parentItemId`" in text for text in texts)


# --- API answers never disclose server paths --------------------------------------------------


def test_removed_database_file_503_does_not_name_the_server_path(tmp_path):
    from tests.support.doubles import SOW, bearer, in_process, load

    path = tmp_path / "served.db"
    client = in_process(str(path))
    try:
        auth = bearer(load(client)["token"])
        path.unlink()
        refused = client.post(f"/api/sow/{SOW}/items", json={"title": "t", "type": "task_item"}, headers=auth)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"].startswith("the database file was removed or replaced")
        assert str(tmp_path) not in refused.text
    finally:
        client.close()


def test_removed_database_file_error_keeps_the_path_for_the_operator():
    from sowctl.storage.guards import DatabaseFileReplaced

    error = DatabaseFileReplaced("/srv/s.db")
    assert "/srv/s.db" in error.message and "/srv/s.db" not in error.api_message


# --- dataset records refuse unknown fields ----------------------------------------------------


def _misspelt_dataset() -> dict:
    from tests.support.doubles import dataset

    data = dataset()
    data["items"][3]["parentItemID"] = data["items"][3].pop("parentItemId", None)
    return data


def test_import_refuses_a_misspelt_field_naming_record_and_field(cli, tmp_path):
    import json

    path = tmp_path / "data.json"
    path.write_text(json.dumps(_misspelt_dataset()))
    result = cli("import", str(path))
    assert result.exit_code == 2, result.stderr
    assert "items[3]" in result.stderr and "parentItemID: unknown field" in result.stderr
    assert cli("sows", "list").stdout.count("\n") <= 1  # nothing was imported


def test_admin_dataset_refuses_an_unknown_field(tmp_path):
    from tests.support.doubles import ADMIN, in_process

    client = in_process(str(tmp_path / "a.db"))
    try:
        from tests.support.doubles import dataset

        data = dataset()
        data["dependencies"][0]["staus"] = data["dependencies"][0].pop("status")
        answer = client.post("/_admin/dataset", json=data, headers=ADMIN)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"].startswith("dependencies[0]")
        assert "staus: unknown field" in answer.text
    finally:
        client.close()


def test_demo_dataset_and_an_export_still_load(cli, tmp_path):
    import json

    from sowctl.services.dataset.validation import validate_dataset

    validate_dataset(json.loads(open_demo()))
    assert cli("import", str(demo_path())).exit_code == 0
    exported = tmp_path / "out.json"
    assert cli("export", str(exported)).exit_code == 0
    validate_dataset(json.loads(exported.read_text()))


def demo_path():
    from pathlib import Path

    import sowctl

    return Path(sowctl.__file__).parent / "data" / "demo.json"


def open_demo() -> str:
    return demo_path().read_text()


# --- the pytest plugin's dataset marker fails cleanly ------------------------------------------


class _Marker:
    def __init__(self, *args):
        self.args, self.kwargs = args, {}


class _Node:
    def __init__(self, path, marker):
        self.path, self._marker = path, marker

    def get_closest_marker(self, name):
        return self._marker


class _Request:
    def __init__(self, node):
        self.node = node


def test_dataset_marker_with_a_missing_file_fails_without_a_traceback(tmp_path):
    from sowctl.testing import plugin

    request = _Request(_Node(tmp_path / "test_x.py", _Marker("missing.json")))
    with pytest.raises(pytest.fail.Exception) as failure:
        plugin._dataset(request)
    assert failure.value.pytrace is False
    assert "sowctl_dataset" in str(failure.value) and str(tmp_path / "missing.json") in str(failure.value)


def test_dataset_marker_with_a_refused_dataset_fails_without_a_traceback():
    from sowctl.testing import plugin
    from sowctl.testing.admin import AdminError

    class Admin:
        def reset(self):
            pass

        def load(self, data, replace):
            raise AdminError("POST /_admin/dataset: HTTP 400: items[0].staus: unknown field")

    class Server:
        prepared: set = set()
        admin = Admin()

    with pytest.raises(pytest.fail.Exception) as failure:
        plugin._prepare(Server(), {"items": [{"staus": "x"}]})
    assert failure.value.pytrace is False and "staus: unknown field" in str(failure.value)


# --- a deep tree never splits an id -----------------------------------------------------------


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


# --- a positional SOW id is named as the argument the user typed -----------------------------


@pytest.mark.parametrize("command", ["show", "check"])
def test_ambiguous_positional_sow_id_is_named_sow_id(cli, command):
    assert cli("sows", "create", "A", "--id", "s").exit_code == 0
    assert cli("orgs", "create", "o2").exit_code == 0
    assert cli("--org", "o2", "sows", "create", "B", "--id", "s").exit_code == 0
    result = cli("chain", command, "s")
    assert result.exit_code == 2, result.stderr
    assert "invalid SOW_ID 's'" in result.stderr and "--sow" not in result.stderr


def test_deps_list_still_names_its_sow_option(cli):
    assert cli("sows", "create", "A", "--id", "s").exit_code == 0
    assert cli("orgs", "create", "o2").exit_code == 0
    assert cli("--org", "o2", "sows", "create", "B", "--id", "s").exit_code == 0
    result = cli("deps", "list", "--sow", "s")
    assert result.exit_code == 2, result.stderr
    assert "--sow" in result.stderr


# --- an over-long value is not echoed in full ---------------------------------------------------


def test_over_long_title_is_shortened_in_the_error_in_both_modes(modes):
    for result in modes.both("items", "create", "sow-1", "--title", "a" * 20_000, "--type", "task_item"):
        assert result.exit_code == 2, result.stderr
        assert "invalid --title 'aaaa" in result.stderr
        assert "a" * 81 not in result.stderr and "…" in result.stderr
        assert len(result.stderr) < 300


# --- every fixed-value option suggests the choice meant ----------------------------------------


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


# --- serve --exec keeps the banner and its secrets out of the command's log ---------------------


def _serve(tmp_path, *args):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    command = [sys.executable, "-m", "sowctl", "--db", str(tmp_path / "exec.db"), "serve", "--port", "0"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path
    )


@pytest.mark.slow  # `sowctl serve --demo --exec` in a subprocess
def test_serve_demo_exec_prints_no_banner_and_no_secret_on_stdout(tmp_path):
    import sys

    printer = "import os; print('cmd sees', bool(os.environ['SOWCTL_TOKEN']))"
    done = _serve(tmp_path, "--demo", "--quiet", "--exec", f'{sys.executable} -c "{printer}"')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cmd sees True\n"
    assert "sowt_" not in done.stderr and "sowk_" not in done.stderr
    assert "serving on http://" in done.stderr


def test_serve_load_of_a_missing_file_names_load(tmp_path):
    done = _serve(tmp_path, "--load", str(tmp_path / "nonexistent.json"), "--exec", "true")
    assert done.returncode == 2
    assert done.stderr.startswith("error: --load: cannot read ")
    assert list(tmp_path.glob("exec.db*")) == []  # "nothing starts": no database was made


@pytest.mark.slow  # five `sowctl serve` subprocesses
def test_serve_load_of_a_bad_dataset_leaves_no_new_database_and_an_old_one_unchanged(tmp_path):
    import json

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"organizations": [{"id": "o", "name": "O"}], "sows": "not a list"}))
    done = _serve(tmp_path, "--load", str(bad), "--exec", "true")
    assert done.returncode == 2 and done.stderr.startswith("error: --load")
    assert list(tmp_path.glob("exec.db*")) == []
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"users": [{"id": "u", "organizationId": "nope", "name": "U"}]}))
    done = _serve(tmp_path, "--load", str(wrong), "--exec", "true")  # a record refused
    assert done.returncode == 2 and "organization nope not found" in done.stderr
    assert list(tmp_path.glob("exec.db*")) == []
    assert _serve(tmp_path, "--demo", "--exec", "true").returncode == 0  # now it exists, with data
    done = _serve(tmp_path, "--load", str(wrong), "--exec", "true")
    assert done.returncode == 2 and (tmp_path / "exec.db").exists()
    import sqlite3

    with contextlib.closing(sqlite3.connect(tmp_path / "exec.db")) as database:
        assert database.execute("SELECT count(*) FROM sow").fetchone()[0] > 0  # the demo's are kept


# --- CI reports carry no raw control characters ---------------------------------------------------


@pytest.mark.parametrize("fmt", ["sarif", "gitlab"])
def test_reports_on_stdout_carry_no_control_characters_in_both_modes(modes, fmt):
    import json

    made = modes.local(
        "items", "create", "sow-1", "--title", "Bell\x07 clear\x1b[2J", "--type", "task_item", "-q"
    )
    item_id = made.stdout.strip()
    other = modes.local(
        "items", "create", "sow-1", "--title", "B", "--type", "task_item", "-q"
    ).stdout.strip()
    dep = modes.local(
        "deps", "create", "--source", item_id, "--target", other, "--type", "depends_on", "--risk", "critical"
    )
    assert dep.exit_code == 0, dep.stderr
    for result in modes.both("chain", "check", "sow-1", "--fail-on", "critical", "--report", f"{fmt}=-"):
        assert result.exit_code == 1, result.stderr
        report = result.stdout[result.stdout.index("[" if fmt == "gitlab" else "{") :]
        document = json.loads(report[: report.rindex("]" if fmt == "gitlab" else "}") + 1])
        messages = (
            [issue["description"] for issue in document]
            if fmt == "gitlab"
            else [r["message"]["text"] for r in document["runs"][0]["results"]]
        )
        assert any("Bell" in m for m in messages)
        assert not any("\x07" in m or "\x1b" in m for m in messages), messages


# --- deps list keeps RISK before a shortened external target ------------------------------------


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


def _screen(rows, width: int) -> str:
    import io

    from rich.console import Console

    from sowctl.commands.dependencies import COLUMNS
    from sowctl.output.table import print_table

    out = io.StringIO()
    print_table(Console(file=out, width=width, color_system=None), rows, [c for c in COLUMNS if c.default])
    return out.getvalue()


def test_deps_table_at_120_columns_keeps_risk_and_sla_over_a_shortened_external_target():
    header = _screen(_external_deps(), 120).splitlines()[0].split()
    assert "RISK" in header and "SLA" in header, header


def test_deps_table_keeps_an_internal_target_id_as_essential():
    rows = _external_deps()
    rows[0].update(isExternal=False, targetItemId=rows[1]["id"], externalTarget=None)
    screen = _screen(rows, 160)
    assert "TARGET" in screen.splitlines()[0] and rows[1]["id"] in screen


def test_an_unusable_token_in_the_environment_does_not_stop_local_mode(cli):
    assert cli("sows", "create", "A", "--id", "s").exit_code == 0
    result = cli("sows", "list", env={"SOWCTL_TOKEN": "sowt_\x07x"})
    assert result.exit_code == 0, result.stderr
    assert "\x07" not in result.stderr
