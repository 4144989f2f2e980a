"""Questions and secrets at the terminal: destructive commands ask a person (never a
script), and secrets can come from stdin or a prompt without echo (issue 15)."""

from __future__ import annotations

import io
import sys

import pytest

from sowctl.storage import models as m
from tests.support.modes import LOCAL_ORG


def ok(result):
    assert result.exit_code == 0, result.stderr
    return result


# --- confirmation of destructive commands ---------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal_input(monkeypatch):
    """Make stdin a terminal holding ``text`` (the answers typed)."""

    def answer(text: str) -> None:
        monkeypatch.setattr(sys, "stdin", Terminal(text))

    return answer


def _tree(run) -> None:
    ok(run("items", "create", "sow-1", "--title", "R", "--type", "requirement", "--id", "r"))
    ok(run("items", "create", "sow-1", "--title", "T1", "--parent", "r", "--id", "t1"))
    ok(run("items", "create", "sow-1", "--title", "T2", "--parent", "r", "--id", "t2"))
    ok(run("items", "create", "sow-1", "--title", "X", "--id", "x"))
    ok(run("deps", "create", "--source", "t1", "--target", "x", "--type", "blocks", "--risk", "low"))


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_a_cascading_delete_asks_on_a_terminal_saying_what_goes(modes, terminal_input, capsys, mode):
    run = getattr(modes, mode)
    _tree(modes.local)
    terminal_input("n\n")
    remote = ("--server", "http://sowctl.test", "--token", modes.token)
    result = modes.cli(*(() if mode == "local" else remote), "items", "delete", "r")
    assert result.exit_code == 1 and result.stderr.endswith("[y/N] cancelled: nothing was changed\n")
    assert "Delete item r (R), 2 descendant items and 1 dependency? [y/N]" in result.stderr
    assert m.Item.select().count() == 4 and m.Dependency.select().count() == 1
    terminal_input("y\n")
    result = ok(run("items", "delete", "r"))
    assert result.stdout == "Item r deleted successfully\n"
    assert result.stderr.endswith("[y/N] deleted with it: 2 descendant items and 1 dependency\n")
    assert [item.id for item in m.Item.select()] == ["x"] and m.Dependency.select().count() == 0


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_the_question_counts_dependencies_from_other_sows_on_the_deleted_items(modes, terminal_input, mode):
    # deps.list's sowId filter is by the source item's SOW: a dependency of SOW B's item on
    # SOW A's item is not among SOW A's, yet deleting the item of SOW A deletes it.
    run = getattr(modes, mode)
    ok(modes.local("sows", "create", "Tower B", "--id", "sow-2"))
    ok(modes.local("items", "create", "sow-1", "--title", "A", "--id", "a"))
    ok(modes.local("items", "create", "sow-2", "--title", "B", "--id", "b"))
    ok(modes.local("items", "create", "sow-2", "--title", "C", "--id", "c"))
    for source, target, kind in (("b", "a", "depends_on"), ("a", "c", "related_to"), ("c", "b", "blocks")):
        ok(
            modes.local(
                "deps", "create", "--source", source, "--target", target, "--type", kind, "--risk", "low"
            )
        )
    survivor = m.Dependency.get(m.Dependency.source_item == "c").id
    terminal_input("n\n")
    result = run("items", "delete", "a")
    assert result.exit_code == 1 and result.stderr.endswith("[y/N] cancelled: nothing was changed\n")
    went = "0 descendant items and 2 dependencies (1 from another SOW)"
    assert f"Delete item a (A), {went}? [y/N]" in result.stderr
    assert m.Dependency.select().count() == 3
    terminal_input("y\n")
    result = ok(run("items", "delete", "a"))
    assert result.stderr.endswith(f"deleted with it: {went}\n")
    assert [dep.id for dep in m.Dependency.select()] == [survivor]
    assert not m.Dependency.select().where(m.Dependency.target_item == "a").exists()
    assert sorted(item.id for item in m.Item.select()) == ["b", "c"]


def test_yes_skips_the_question_and_a_script_is_never_asked(modes, terminal_input):
    _tree(modes.local)
    terminal_input("")  # a terminal, but --yes: nothing is read; what went is still said
    assert ok(modes.local("items", "delete", "t2", "--yes")).stderr == (
        "deleted with it: 0 descendant items and 0 dependencies\n"
    )
    # stdin not a terminal (the cli fixture's default): no question, as before; with --yes
    # what went is said there too.
    assert ok(modes.local("items", "delete", "x", input="")).stderr == ""
    assert ok(modes.remote("items", "delete", "r", "--yes", input="")).stderr == (
        "deleted with it: 1 descendant item and 0 dependencies\n"
    )
    assert [item.id for item in m.Item.select()] == []


def test_deps_delete_asks_on_a_terminal(modes, terminal_input):
    _tree(modes.local)
    dep = m.Dependency.get().id
    terminal_input("no\n")
    result = modes.local("deps", "delete", dep)
    assert result.exit_code == 1 and f"Delete dependency {dep} (t1 blocks x)? [y/N]" in result.stderr
    terminal_input("yes\n")
    ok(modes.local("deps", "delete", dep))
    assert m.Dependency.select().count() == 0


@pytest.mark.parametrize("kind", ["tokens", "keys"])
def test_revoking_asks_on_a_terminal(cli, db, terminal_input, kind):
    from sowctl.services import credentials

    ok(cli("sows", "create", "T"))  # organization "local"
    issued = (
        credentials.create_token("u", LOCAL_ORG) if kind == "tokens" else credentials.create_key(LOCAL_ORG)
    )
    terminal_input("n\n")
    result = cli(kind, "revoke", issued.secret)
    assert result.exit_code == 1 and "? It is refused at once [y/N]" in result.stderr
    assert issued.secret not in result.stderr  # the prompt shows only the secret's prefix
    assert [entry["revokedAt"] for entry in ok(cli(kind, "list", "--json")).json()] == [None]
    ok(cli(kind, "revoke", issued.secret, "--yes"))
    assert [entry["revokedAt"] is None for entry in ok(cli(kind, "list", "--json")).json()] == [False]


# --- secrets off the command line ----------------------------------------------------------


def test_config_set_token_reads_stdin(cli):
    from sowctl.backends import profiles

    ok(cli("config", "set", "token", "-", "--profile", "dev", input="sowt_from_stdin\n"))
    ok(cli("config", "set", "api_key", "--profile", "dev", input="sowk_piped\n"))
    assert profiles.load()["profiles"]["dev"] == {"token": "sowt_from_stdin", "api_key": "sowk_piped"}
    result = cli("config", "set", "token", "-", input="")
    assert (result.exit_code, result.stderr) == (2, "error: no token given on standard input\n")
    result = cli("config", "set", "server", "-")
    assert result.exit_code == 2


def test_config_set_token_asks_without_echo_on_a_terminal(cli, terminal_input, monkeypatch):
    from sowctl.backends import profiles

    terminal_input("")
    monkeypatch.setattr("getpass.getpass", lambda prompt: "sowt_typed" if prompt == "token: " else "")
    ok(cli("config", "set", "token"))
    assert profiles.load()["profiles"]["default"]["token"] == "sowt_typed"


def test_the_token_option_reads_stdin(modes):
    ok(modes.local("items", "create", "sow-1", "--title", "A", "--id", "a"))
    result = modes.cli("--server", "http://sowctl.test", "--token", "-", "items", "list", "sow-1", "-q",
                       input=modes.token + "\n")  # fmt: skip
    assert ok(result).stdout == "a\n"


def test_deps_update_prints_only_the_id_with_q(modes):
    _tree(modes.local)
    dep = m.Dependency.select().first().id
    for run in (modes.local, modes.remote):
        assert ok(run("deps", "update", dep, "--notes", "checked", "-q")).stdout == f"{dep}\n"
    assert m.Dependency.get_by_id(dep).notes == "checked"
