"""``sowctl mcp``: the registry's operations as MCP tools, driven with the SDK's own client."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from sowctl import operations
from sowctl.backends.local import LocalBackend
from sowctl.backends.settings import Settings
from sowctl.mcp import tools as mcp_tools
from sowctl.mcp.serving import build_server
from tests.support.client import remote_backend
from tests.support.doubles import COMPANY, ORG, SOW, in_process, load


@pytest.fixture
def loaded(migrated_db_url: str) -> tuple[Any, dict[str, str]]:
    """The demo dataset in the test's database, and the app serving it."""
    http = in_process(migrated_db_url)
    return http.app, load(http)  # type: ignore[attr-defined]


@pytest.fixture
def local(loaded: Any, migrated_db_url: str) -> LocalBackend:
    return LocalBackend(migrated_db_url)


@pytest.fixture
def remote(loaded: Any) -> Any:
    app, access = loaded
    settings = Settings(
        server="http://sowctl.test", token=access["token"], api_key=access["key"], org=ORG, company=COMPANY
    )
    return remote_backend(app, settings)


def session(backend: Any, *, allow_writes: bool = False) -> Any:
    """Run ``steps`` (an async function of the client) against a server on ``backend``."""

    def run(steps: Any) -> Any:
        async def main() -> Any:
            async with Client(build_server(backend, allow_writes=allow_writes)) as client:
                return await steps(client)

        return anyio.run(main)

    return run


def listed_tools(backend: Any, *, allow_writes: bool) -> list[Any]:
    async def steps(client: Any) -> Any:
        return (await client.list_tools()).tools

    return session(backend, allow_writes=allow_writes)(steps)


def call(backend: Any, name: str, arguments: dict[str, Any], *, allow_writes: bool = False) -> Any:
    async def steps(client: Any) -> Any:
        return await client.call_tool(name, arguments)

    return session(backend, allow_writes=allow_writes)(steps)


def test_read_only_by_default_one_tool_per_read_operation(local: LocalBackend) -> None:
    tools = listed_tools(local, allow_writes=False)
    reads = {
        op.name.replace(".", "_") for op in operations.load_all().values() if not op.write and not op.stream
    }
    assert {tool.name for tool in tools} == reads | {"chain_check"}
    assert all(tool.annotations.read_only_hint for tool in tools)
    assert "items_list" in reads and "chain_get" in reads


def test_allow_writes_offers_every_operation_with_valid_schemas(local: LocalBackend) -> None:
    tools = listed_tools(local, allow_writes=True)
    streams = [op for op in operations.load_all().values() if op.stream]  # no tool: they never end
    assert [op.name for op in streams] == ["events.stream"]
    assert (
        len(tools) == len(operations.load_all()) - 1 + 1 == len({tool.name for tool in tools})
    )  # + chain_check
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.description
    by_name = {tool.name: tool for tool in tools}
    assert by_name["items_delete"].annotations.destructive_hint is True
    assert by_name["items_create"].annotations.read_only_hint is False
    create = by_name["items_create"].input_schema
    assert create["required"] == ["sowId", "body"]
    assert "title" in create["properties"]["body"]["properties"]
    jsonschema.validate({"sowId": SOW, "body": {"title": "t", "type": "requirement"}}, create)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"sowId": SOW, "body": {"title": "t"}, "colour": "red"}, create)


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_a_list_answers_one_page_with_the_total(mode: str, request: pytest.FixtureRequest) -> None:
    backend = request.getfixturevalue(mode)
    every = backend.call("items.list", {"sowId": SOW})
    result = call(backend, "items_list", {"sowId": SOW, "page": 2, "limit": 2})
    assert not result.is_error
    answer = result.structured_content
    assert (answer["page"], answer["limit"], answer["total"]) == (2, 2, len(every))
    assert [item["id"] for item in answer["results"]] == [item["id"] for item in every[2:4]]


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_a_write_tool_creates_and_a_read_tool_sees_it(mode: str, request: pytest.FixtureRequest) -> None:
    backend = request.getfixturevalue(mode)
    body = {"title": "Made by an agent", "type": "task_item"}
    created = call(backend, "items_create", {"sowId": SOW, "body": body}, allow_writes=True)
    assert not created.is_error, created.content[0].text
    item_id = created.structured_content["id"]
    got = call(backend, "items_get", {"itemId": item_id})
    assert got.structured_content["title"] == "Made by an agent"
    assert backend.call("items.get", {"itemId": item_id})["title"] == "Made by an agent"


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_not_found_is_a_tool_error_with_the_message_and_code(
    mode: str, request: pytest.FixtureRequest
) -> None:
    result = call(request.getfixturevalue(mode), "items_get", {"itemId": "no-such-item"})
    assert result.is_error
    assert "no-such-item not found" in result.content[0].text
    error = result.structured_content["error"]
    assert (error["code"], error["status"], error["exitCode"]) == ("not_found", 404, 3)
    assert "Traceback" not in result.content[0].text


def test_invalid_input_names_the_field(local: LocalBackend) -> None:
    result = call(local, "items_create", {"sowId": SOW, "body": {"type": "task_item"}}, allow_writes=True)
    assert result.is_error
    error = result.structured_content["error"]
    assert error["code"] == "invalid_input" and error["exitCode"] == 2
    assert any(issue["path"] == ["title"] for issue in error["issues"])


def test_a_write_tool_is_refused_without_allow_writes(local: LocalBackend) -> None:
    before = local.call("items.list", {"sowId": SOW})
    result = call(local, "items_create", {"sowId": SOW, "body": {"title": "No", "type": "task_item"}})
    assert result.is_error
    assert "--allow-writes" in result.content[0].text
    assert result.structured_content["error"]["code"] == "forbidden"
    assert local.call("items.list", {"sowId": SOW}) == before


def test_an_unknown_argument_or_tool_is_refused(local: LocalBackend) -> None:
    unknown_argument = call(local, "items_get", {"itemId": "x", "colour": "red"})
    assert unknown_argument.is_error and "colour" in unknown_argument.content[0].text
    unknown_tool = call(local, "items_frobnicate", {})
    assert unknown_tool.is_error and "no tool items_frobnicate" in unknown_tool.content[0].text


def test_a_list_page_larger_than_the_api_allows_is_refused(local: LocalBackend) -> None:
    result = call(local, "deps_list", {"sowId": SOW, "limit": 101})
    assert result.is_error and "limit" in result.content[0].text


def test_an_answer_too_large_for_an_agent_is_refused(local: LocalBackend, monkeypatch) -> None:
    monkeypatch.setattr(mcp_tools, "MAX_ANSWER_CHARS", 50)
    result = call(local, "chain_get", {"sowId": SOW})
    assert result.is_error
    assert "ask for less" in result.content[0].text


def test_group_c_lists_are_paged_by_default(local: LocalBackend) -> None:
    result = call(local, "projects_list", {})
    assert not result.is_error
    assert len(result.structured_content["projects"]) <= mcp_tools.DEFAULT_PAGE_SIZE


def test_sowctl_mcp_over_stdio(loaded: Any, migrated_db_url: str) -> None:
    """The command itself, spoken to over stdin/stdout by the SDK's stdio client."""
    from mcp import StdioServerParameters

    args = ["-m", "sowctl", "--db", migrated_db_url, "mcp"]

    async def main() -> Any:
        async with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
            tools = (await client.list_tools()).tools
            listed = await client.call_tool("sows_list", {})
            return tools, listed

    tools, listed = anyio.run(main)
    assert "items_create" not in {tool.name for tool in tools}
    assert SOW in [sow["id"] for sow in listed.structured_content["results"]]


def test_without_the_sdk_one_line_says_how_to_install_it(cli, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.lowlevel", None)
    result = cli("mcp")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: sowctl mcp needs the MCP Python SDK: pip install mcp"
    ]


def test_the_users_guide_lists_every_tool() -> None:
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    rows = {line.split("`")[1] for line in guide.splitlines() if line.startswith("| `")}
    assert rows == {spec.name for spec in mcp_tools.tools(allow_writes=True)}
    writes = {
        line.split("`")[1] for line in guide.splitlines() if line.startswith("| `") and "| yes |" in line
    }
    assert writes == {spec.name for spec in mcp_tools.tools(allow_writes=True) if spec.write}


@pytest.mark.parametrize("mode", ["local", "remote"])
def test_chain_check_gives_the_ci_gate_s_verdict(mode: str, request: pytest.FixtureRequest) -> None:
    from sowctl.gate import risks

    backend = request.getfixturevalue(mode)
    report = backend.call_typed("chain.get", {}, {"sowId": SOW, "format": "flat", "include": risks.INCLUDE})
    expected = risks.check_chain(report, ("critical",), 7)
    result = call(backend, "chain_check", {"sowId": SOW, "failOn": "critical", "dueWithin": "1w"})
    assert not result.is_error, result.content
    assert result.structured_content == expected
    assert expected["failOn"] == ["critical"] and "passed" in expected
    wrong = call(backend, "chain_check", {"sowId": SOW, "failOn": "nothing"})
    assert wrong.is_error and "unknown issue kind 'nothing'" in wrong.content[0].text
    missing = call(backend, "chain_check", {"sowId": "no-such-sow"})
    assert missing.is_error and "not found" in missing.content[0].text.lower()
