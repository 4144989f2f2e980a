"""Remote mode reads what any server answers within bounds: a body nested past Python's parser
is "not JSON" (exit 5), never a traceback, and an error answer of megabytes (an older server
listed every problem of a request) is one bounded line on stderr."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sowctl.foundation.budgets import MAX_MESSAGE_CHARS
from tests.support.scripted import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def test_an_answer_nested_past_the_parser_is_not_json(cli, server: ScriptedServer) -> None:
    server.script.default = (200, {}, b"[" * 100_000 + b"]" * 100_000)

    result = cli("--server", server.url, "--token", "t", "items", "get", "item-1")

    assert result.exit_code == 5
    assert result.stderr.startswith(
        f"error: server at {server.url} answered GET /api/items/{{itemId}} with HTTP 200"
    )
    assert result.stderr.endswith("not JSON: is --server a sowctl API URL?\n")


def test_an_error_of_megabytes_is_cut_to_a_line(cli, server: ScriptedServer) -> None:
    problems = "; ".join(f"line_items[{index}].amount: is required" for index in range(200_000))
    server.script.default = (400, {}, {"error": problems})

    result = cli("--server", server.url, "--token", "t", "items", "get", "item-1")

    assert result.exit_code == 2
    assert result.stderr.startswith("error: line_items[0].amount: is required; line_items[1].amount")
    assert len(result.stderr) <= len("error: \n") + MAX_MESSAGE_CHARS
    assert result.stderr.count("…") == 1  # the cut, in the middle: the end says what went wrong
    assert result.stderr.endswith("line_items[199999].amount: is required\n")
