"""Errors a program can read (issue 28): with --json, or SOWCTL_ERRORS=json, a failure is
one JSON object on stderr with a stable code, its category, the message, the exit code,
the issues, and what a server's answer adds; the exit codes are those of the line."""

from __future__ import annotations

import json

import pytest

from tests.support.modes import Modes


def _error(result) -> dict:
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    return json.loads(result.stderr)


@pytest.mark.parametrize(
    ("args", "exit_code", "code", "category"),
    [
        (("items", "get", "nope"), 3, "not_found", "not_found"),
        (("items", "create", "sow-1", "--title", ""), 2, "invalid_input", "invalid_input"),
        (("sows", "get", "sow-none"), 3, "not_found", "not_found"),
    ],
)
def test_both_modes_give_the_same_object(modes: Modes, args, exit_code, code, category) -> None:
    local, remote = modes.both(*args, "--json")
    assert (local.exit_code, remote.exit_code) == (exit_code, exit_code)
    mine, theirs = _error(local), _error(remote)
    assert mine["code"] == theirs["code"] == code
    assert mine["category"] == theirs["category"] == category
    assert mine["exitCode"] == exit_code
    assert mine["message"] == theirs["message"]
    assert mine.get("issues") == theirs.get("issues")
    # Only a server's answer has a status and a request id.
    assert "status" not in mine and "requestId" not in mine
    assert theirs["status"] in (400, 404) and theirs["requestId"]


def test_an_invalid_option_names_it_in_the_issues(modes: Modes) -> None:
    refused = _error(modes.local("items", "create", "sow-1", "--title", "", "--json"))
    assert refused["message"] == "invalid --title '': must not be empty"
    assert refused["issues"] == [{"path": ["title"], "message": "must not be empty", "option": "--title"}]


def test_a_usage_error_names_the_option(cli) -> None:
    result = cli(
        "deps", "create", "--source", "a", "--target", "b", "--type", "nope", "--risk", "low", "--json"
    )
    assert result.exit_code == 2
    error = _error(result)
    assert (error["code"], error["category"], error["exitCode"]) == ("usage", "invalid_input", 2)
    assert [issue["option"] for issue in error["issues"]] == ["--type"]


def test_the_environment_asks_for_json_errors_on_any_command(modes: Modes) -> None:
    result = modes.local("chain", "show", "sow-none", env={"SOWCTL_ERRORS": "json"})
    assert result.exit_code == 3
    assert _error(result)["code"] == "not_found"


def test_without_json_the_line_is_unchanged(modes: Modes) -> None:
    result = modes.local("items", "get", "nope")
    assert (result.exit_code, result.stderr) == (3, "error: item nope not found\n")


def test_an_unreachable_server_is_unavailable(cli) -> None:
    result = cli(
        "--server", "http://127.0.0.1:9", "--token", "t", "items", "get", "x", "--json",
        env={"SOWCTL_RETRIES": "0"},
    )  # fmt: skip
    assert result.exit_code == 5
    error = _error(result)
    assert (error["code"], error["category"]) == ("unavailable", "failure")


def test_a_cycle_has_its_own_code_in_both_modes(modes: Modes) -> None:
    for item in ("a", "b"):
        assert modes.local("items", "create", "sow-1", "--title", item, "--id", item).exit_code == 0
    link = ("deps", "create", "--type", "depends_on", "--risk", "low")
    assert modes.local(*link, "--source", "a", "--target", "b").exit_code == 0
    local, remote = modes.both(*link, "--source", "b", "--target", "a", "--json")
    assert (local.exit_code, remote.exit_code) == (2, 2)
    # The server names the code in X-Error-Code; the Group A envelope has only a message.
    assert _error(local)["code"] == _error(remote)["code"] == "cycle_detected"


def test_a_refusal_with_its_own_wording_keeps_its_issues_remotely(modes: Modes) -> None:
    made = modes.local("items", "create", "sow-1", "--title", "T", "--id", "t")
    assert made.exit_code == 0, made.stderr
    args = ("items", "create", "sow-1", "--title", "R", "--type", "requirement", "--parent", "t", "--json")
    local, remote = modes.both(*args)
    mine, theirs = _error(local), _error(remote)
    assert mine["code"] == theirs["code"] == "hierarchy_violation"
    assert mine["issues"] == theirs["issues"] and [i["option"] for i in mine["issues"]] == ["--parent"]


def test_an_import_with_several_problems_says_where_they_are_listed(cli, tmp_path) -> None:
    projects = [{"id": f"p{n}", "organizationId": "o1", "name": "P"} for n in range(3)]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"organizations": [{"id": "o1", "name": "O"}], "projects": projects}))
    line = cli("import", str(path))
    assert line.exit_code == 2
    assert line.stderr.endswith("(and 2 more problems); --json lists them\n"), line.stderr
    error = _error(cli("import", str(path), "--json"))
    assert [issue["path"][:2] for issue in error["issues"]] == [["projects", n] for n in range(3)]
