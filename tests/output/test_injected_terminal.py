"""A program that embeds the CLI hands ``main`` a ``Terminal``: its own streams, and whether they
are a terminal and how wide, instead of patching ``sys`` (``sowctl.output.terminal``)."""

from __future__ import annotations

import io
import json

from sowctl.cli import main
from sowctl.output.terminal import Terminal


def _run(*args: str, tty: bool | None = None, columns: int | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), terminal=Terminal(stdout=out, stderr=err, tty=tty, columns=columns))
    return code, out.getvalue(), err.getvalue()


def test_piped_output_goes_to_the_given_stream(cli, capsys):
    assert cli("sows", "create", "Tower", "--id", "sow-1", "-q").exit_code == 0
    capsys.readouterr()
    code, out, err = _run("sows", "list", "--columns", "id,title")
    assert (code, out, err) == (0, "sow-1\tTower\n", "")
    assert capsys.readouterr() == ("", "")


def test_a_terminal_of_a_given_width_gets_a_table(cli, capsys):
    assert cli("sows", "create", "Tower", "--id", "sow-1", "-q").exit_code == 0
    capsys.readouterr()
    code, out, _ = _run("sows", "list", "--columns", "id,title", tty=True, columns=60)
    assert code == 0
    lines = [line for line in out.splitlines() if line.strip("─ ")]
    assert lines[0].split() == ["ID", "TITLE"]
    assert lines[1].split() == ["sow-1", "Tower"]
    assert max(len(line) for line in lines) <= 60
    assert capsys.readouterr() == ("", "")


def test_failures_go_to_the_given_error_stream(cli, capsys):
    code, out, err = _run("sows", "get", "nope")
    assert (code, out) == (3, "")
    assert err.startswith("error: ") and err.count("\n") == 1
    code, out, err = _run("sows", "get", "nope", "--json")
    assert (code, out) == (3, "")
    assert json.loads(err)["exitCode"] == 3
    assert capsys.readouterr() == ("", "")


def test_help_and_usage_errors_go_to_the_given_streams(capsys):
    code, out, err = _run("sows", "--help")
    assert code == 0 and "Usage: sowctl sows" in out and err == ""
    code, out, err = _run("sows", "list", "--nope")
    assert code == 2 and out == "" and "No such option" in err
    assert capsys.readouterr() == ("", "")
