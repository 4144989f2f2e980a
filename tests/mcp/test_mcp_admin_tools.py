"""``sowctl mcp --allow-writes`` against a server with an admin token: the test double's admin
operations as tools, made from their declarations and sent by the admin client."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import jsonschema
import pytest
from mcp import Client

from sowctl.backends.local import LocalBackend
from sowctl.backends.settings import Settings
from sowctl.mcp import tools as mcp_tools
from sowctl.mcp.serving import admin_client, build_server
from sowctl.operations.admin import ADMIN
from sowctl.testing.admin import AdminClient
from tests.support.client import remote_backend
from tests.support.doubles import ADMIN_TOKEN, COMPANY, ORG, SOW, in_process, load

ADMIN_TOOL_NAMES = {
    "admin_reset",
    "admin_faults_get",
    "admin_faults_replace",
    "admin_faults_clear",
    "admin_clock_get",
    "admin_clock_set",
    "admin_requests_list",
    "admin_requests_verify",
    "admin_requests_pact",
    "admin_checkpoints_list",
    "admin_checkpoints_save",
    "admin_checkpoints_restore",
    "admin_checkpoints_delete",
    "admin_webhooks_list",
    "admin_webhooks_get",
    "admin_webhooks_delete",
    "admin_webhooks_resume",
    "admin_webhooks_deliveries",
    "admin_webhooks_redeliver",
    "admin_webhooks_faults_get",
    "admin_webhooks_faults_set",
    "admin_webhooks_faults_clear",
}


@pytest.fixture
def served(migrated_db_url: str) -> tuple[Any, AdminClient]:
    """A remote backend into an in-process app with the admin API on, and its admin client."""
    http = in_process(migrated_db_url)
    access = load(http)
    app = http.app  # type: ignore[attr-defined]
    settings = Settings(
        server="http://sowctl.test", token=access["token"], api_key=access["key"], org=ORG, company=COMPANY
    )
    admin = AdminClient("http://sowctl.test", ADMIN_TOKEN, transport=httpx.WSGITransport(app=app))
    return remote_backend(app, settings), admin


def call(backend: Any, admin: AdminClient | None, name: str, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with Client(build_server(backend, allow_writes=True, admin=admin)) as client:
            return await client.call_tool(name, arguments)

    return anyio.run(main)


def test_admin_tools_only_with_writes_allowed_and_an_admin_server() -> None:
    names = {spec.name for spec in mcp_tools.tools(allow_writes=True, admin=True)}
    assert names & {tool.replace(".", "_") for tool in ADMIN} == ADMIN_TOOL_NAMES
    assert not {spec.name for spec in mcp_tools.tools(allow_writes=False, admin=True)} & ADMIN_TOOL_NAMES
    assert not {spec.name for spec in mcp_tools.tools(allow_writes=True)} & ADMIN_TOOL_NAMES
    for spec in mcp_tools.tools(allow_writes=True, admin=True):
        jsonschema.Draft202012Validator.check_schema(spec.input_schema)
    destructive = {spec.name for spec in mcp_tools.tools(allow_writes=True, admin=True) if spec.destructive}
    assert destructive >= {"admin_reset", "admin_checkpoints_restore", "admin_faults_clear"}
    # credentials and datasets are not for an agent
    assert "admin_tokens_create" not in names and "admin_dataset_export" not in names
    assert "admin_webhooks_create" not in names  # its answer holds the signing secret


def test_webhooks_through_tools(served: tuple[Any, AdminClient]) -> None:
    backend, admin = served
    hook = admin.create_webhook("http://127.0.0.1:9/hook", ORG)
    listed = call(backend, admin, "admin_webhooks_list", {})
    assert not listed.is_error, listed.content[0].text
    assert hook["secret"] not in listed.content[0].text
    shown = call(backend, admin, "admin_webhooks_get", {"id": hook["id"]})
    assert shown.structured_content["id"] == hook["id"]
    log = call(backend, admin, "admin_webhooks_deliveries", {"id": hook["id"], "limit": "5"})
    assert not log.is_error, log.content[0].text
    faults = call(
        backend, admin, "admin_webhooks_faults_set", {"body": {"rules": [{"kind": "drop", "count": 1}]}}
    )
    assert faults.structured_content["rules"][0]["kind"] == "drop"
    missing = call(backend, admin, "admin_webhooks_resume", {"id": "wh_none"})
    assert missing.is_error and missing.structured_content["error"]["status"] == 404
    assert not call(backend, admin, "admin_webhooks_delete", {"id": hook["id"]}).is_error
    assert admin.webhooks() == []


def test_faults_clock_checkpoints_and_reset_through_tools(served: tuple[Any, AdminClient]) -> None:
    backend, admin = served
    faults = call(backend, admin, "admin_faults_replace", {"body": {"rate": 1, "status": 418, "count": 1}})
    assert not faults.is_error, faults.content[0].text
    assert faults.structured_content["count"] == 1
    failed = call(backend, admin, "sows_get", {"sowId": SOW})
    assert failed.is_error and failed.structured_content["error"]["status"] == 418  # not retried
    assert not call(backend, admin, "sows_get", {"sowId": SOW}).is_error  # count 1: spent
    frozen = call(backend, admin, "admin_clock_set", {"body": {"now": "2030-01-02T03:04:05Z"}})
    assert frozen.structured_content == {"now": "2030-01-02T03:04:05Z", "frozen": True}
    saved = call(backend, admin, "admin_checkpoints_save", {"body": {"name": "loaded"}})
    assert saved.structured_content["name"] == "loaded"
    assert call(backend, admin, "admin_reset", {}).structured_content == {"message": "database reset"}
    assert call(backend, admin, "sows_get", {"sowId": SOW}).is_error  # the token went with the data
    restored = call(backend, admin, "admin_checkpoints_restore", {"name": "loaded"})
    assert not restored.is_error, restored.content[0].text
    assert call(backend, admin, "sows_get", {"sowId": SOW}).structured_content["id"] == SOW


def test_a_verification_that_does_not_hold_is_a_tool_error_with_the_near_misses(
    served: tuple[Any, AdminClient],
) -> None:
    backend, admin = served
    call(backend, admin, "sows_get", {"sowId": SOW})
    held = call(
        backend, admin, "admin_requests_verify", {"body": {"method": "GET", "path": f"/api/sows/{SOW}"}}
    )
    assert not held.is_error and held.structured_content["matched"] == 1
    missed = call(
        backend,
        admin,
        "admin_requests_verify",
        {"body": {"method": "GET", "path": "/api/sows/other", "exactly": 1}},
    )
    assert missed.is_error and missed.structured_content["error"]["status"] == 409
    assert (
        "expected exactly 1" in missed.content[0].text
        and "closest recorded requests" in missed.content[0].text
    )
    listed = call(backend, admin, "admin_requests_list", {"method": "GET", "limit": 5})
    assert not listed.is_error, listed.content[0].text


def test_an_admin_refusal_keeps_the_server_s_status_and_words(served: tuple[Any, AdminClient]) -> None:
    backend, admin = served
    result = call(backend, admin, "admin_checkpoints_restore", {"name": "never-saved"})
    assert result.is_error and result.structured_content["error"]["status"] == 404
    bad = call(backend, admin, "admin_clock_set", {"body": {"now": 5}})
    assert bad.structured_content["error"]["status"] == 400
    assert "now: must be a timestamp string or null" in bad.content[0].text


def test_without_an_admin_server_an_admin_tool_says_what_it_needs(served: tuple[Any, AdminClient]) -> None:
    backend, _ = served
    result = call(backend, None, "admin_reset", {})
    assert result.is_error and "SOWCTL_ADMIN_TOKEN" in result.content[0].text
    assert result.structured_content["error"]["code"] == "forbidden"


def test_the_admin_client_comes_from_the_environment_for_a_server_only(
    served: tuple[Any, AdminClient], migrated_db_url: str
) -> None:
    backend, _ = served
    token = {"SOWCTL_ADMIN_TOKEN": ADMIN_TOKEN}
    made = admin_client(backend, allow_writes=True, environ=token)
    assert isinstance(made, AdminClient) and made.url == "http://sowctl.test"
    made.close()
    assert admin_client(backend, allow_writes=False, environ=token) is None
    assert admin_client(backend, allow_writes=True, environ={}) is None
    assert admin_client(LocalBackend(migrated_db_url), allow_writes=True, environ=token) is None
