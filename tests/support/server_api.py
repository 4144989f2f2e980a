"""The HTTP server in process, as the server tests drive it: a fresh database with two
organizations (org-a, org-b), a SOW in each, tokens of every role, and checks of the
groups' error envelopes. The Bottle app is driven through ``httpx.WSGITransport``."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from sowctl.foundation import clock
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.services import credentials
from sowctl.services import items as item_service
from sowctl.services import sows as sow_service
from sowctl.services.access import Caller
from sowctl.storage import models as m
from tests.support.client import wsgi_client
from tests.support.templates import seeded

LOCAL = Caller.local()


@dataclass
class Api:
    client: httpx.Client
    errors: io.StringIO  # the server's log (wsgi.errors)
    member: str
    viewer: str
    admin: str
    other: str  # a member of org-b
    revoked: str

    def get(self, path: str, token: str | None = None, **kwargs) -> httpx.Response:
        return self.request("GET", path, token, **kwargs)

    def request(self, method: str, path: str, token: str | None = None, **kwargs) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return self.client.request(method, path, headers=headers, **kwargs)


# Projects are uuids in the service (spec 2.8).
PROJECTS = {"org-a": "0d0a4c2e-5b1f-4f43-9c3e-6a0d2f1b7a01", "org-b": "0d0a4c2e-5b1f-4f43-9c3e-6a0d2f1b7a02"}
PROJECT_A, PROJECT_B = PROJECTS["org-a"], PROJECTS["org-b"]


def seed() -> None:
    now = clock.now()
    for org, project in PROJECTS.items():
        m.Organization.create(id=org, name=org)
        m.Project.create(
            id=project, organization=org, name="P", status="active", created_at=now, updated_at=now
        )
    sow_service.create_sow(LOCAL, SowCreate(title="Tower A", project_id=PROJECT_A, id="sow-a"))
    sow_service.create_sow(LOCAL, SowCreate(title="Globex", project_id=PROJECT_B, id="sow-b"))
    item_service.create_item(LOCAL, "sow-b", ItemCreate(title="Other org item", type="task_item"))


def make_api(db_url: str, settings: ServerSettings | None = None) -> Api:
    app = create_app(db_url, settings)
    tokens = seeded("server-api", _seed_with_tokens)  # on SQLite, a copy made once per process
    client = wsgi_client(app)
    return Api(client=client, errors=client.errors, **tokens)  # type: ignore[attr-defined]


def _seed_with_tokens() -> dict[str, str]:
    seed()
    revoked = credentials.create_token("user-gone", "org-a", "member").secret
    credentials.revoke_token(revoked)
    return {
        "member": credentials.create_token("user-member", "org-a", "member").secret,
        "viewer": credentials.create_token("user-viewer", "org-a", "viewer").secret,
        "admin": credentials.create_token("user-admin", "org-a", "admin").secret,
        "other": credentials.create_token("user-other", "org-b", "member").secret,
        "revoked": revoked,
    }


@pytest.fixture
def api(migrated_db_url: str) -> Iterator[Api]:
    api = make_api(migrated_db_url)
    yield api
    api.client.close()
    m.database_proxy.obj.close()


def create_item(api: Api, title: str = "Frame", **fields) -> dict:
    response = api.request(
        "POST", "/api/sow/sow-a/items", api.member, json={"title": title, "type": "task_item", **fields}
    )
    assert response.status_code == 201, response.text
    return response.json()


def assert_group_a_error(response: httpx.Response, status: int, contains: str = "") -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    assert contains in body["error"]
    assert "Traceback" not in response.text
    return body["error"]


def assert_group_c_error(response: httpx.Response, status: int, code: str, message: str) -> list:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"code", "message", "issues"}
    assert (body["code"], body["message"]) == (code, message)
    for issue in body["issues"]:
        assert set(issue) == {"path", "message"} and isinstance(issue["path"], list)
    return body["issues"]
