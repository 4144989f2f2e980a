"""Group C listings: /projects and /clients.

Bodies come from ``operations.call_local`` (the server's validation and handler),
the HTTP tests drive the Bottle app in process, and the CLI tests check that
``--json`` prints exactly the API body.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, Issue
from sowctl.services import credentials
from sowctl.services.access import Caller
from sowctl.services.dataset import import_dataset
from sowctl.services.demo_data import (
    CLIENT_HARBOR_HEALTH,
    CLIENT_INITECH,
    CLIENT_NORTHWIND,
    CONTACT_NORTHWIND_MARIA,
    DEMO_ORG,
    PROJECT_GLOBEX_DC,
    PROJECT_HARBOR_CLINIC,
    PROJECT_RIVERSIDE_GARAGE,
    PROJECT_TOWER_A,
    demo_dataset,
)
from sowctl.storage import models as m
from tests.support.client import bearer, wsgi_client

TODAY = datetime.date(2026, 3, 16)
ACME = Caller(user_id="user-ada", organization_id="org-acme", role="viewer")
GLOBEX = Caller(user_id="user-hank", organization_id="org-globex", role="member")
NOBODY = Caller(user_id="user-x", organization_id="org-nobody", role="admin")
LOCAL = Caller.local()
TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")

PROJECT_FIELDS = [
    "id", "name", "description", "status", "clientId", "clientName", "contactId", "startDate", "endDate",
    "ownerUserId", "organizationId", "isPinned", "pinnedAt", "sowCount", "createdAt", "updatedAt",
]  # fmt: skip
CLIENT_FIELDS = [
    "id", "name", "description", "website", "industry", "organizationId", "isPinned", "pinnedAt", "contacts",
    "createdAt", "updatedAt",
]  # fmt: skip
CONTACT_FIELDS = [
    "id", "clientId", "name", "email", "phone", "role", "isPrimary", "createdAt", "updatedAt",
]  # fmt: skip


@pytest.fixture
def demo(db) -> None:
    import_dataset(demo_dataset(TODAY))


def projects(caller: Caller = ACME, **query: str) -> dict[str, Any]:
    return operations.call_local("projects.list", caller, query=query)


def clients(caller: Caller = ACME, **query: str) -> dict[str, Any]:
    return operations.call_local("clients.list", caller, query=query)


def ids(body: dict[str, Any], key: str = "projects") -> list[str]:
    return [record["id"] for record in body[key]]


def served(name: str, caller: Caller, **query: str) -> dict[str, Any]:
    """What the server answers: the same handler, but paged (no ``unpaged``)."""
    op = operations.get(name)
    return op.handler(operations.build_request(op, caller, query=query)).body


# --- shapes -------------------------------------------------------------------------


def test_project_list_shape(demo) -> None:
    body = projects()
    assert list(body) == ["projects", "total"]
    assert body["total"] == 3
    for project in body["projects"]:
        assert list(project) == PROJECT_FIELDS
        for key in ("createdAt", "updatedAt"):
            assert TIMESTAMP_RE.match(project[key])
    tower = body["projects"][0]
    assert tower["id"] == PROJECT_TOWER_A
    assert tower["clientId"] == CLIENT_NORTHWIND and tower["clientName"] == "Northwind Properties"
    assert tower["contactId"] == CONTACT_NORTHWIND_MARIA
    assert (tower["isPinned"], tower["pinnedAt"]) == (True, "2026-02-24T08:30:00Z")
    assert (tower["startDate"], tower["sowCount"], tower["organizationId"]) == (
        "2025-11-16T00:00:00Z",
        1,
        "org-acme",
    )


def test_projects_come_pinned_first_then_by_name(demo) -> None:
    assert ids(projects()) == [PROJECT_TOWER_A, PROJECT_HARBOR_CLINIC, PROJECT_RIVERSIDE_GARAGE]
    riverside = projects()["projects"][2]
    assert (riverside["sowCount"], riverside["status"]) == (0, "completed")


def test_sow_count_counts_every_sow_of_the_project(demo) -> None:
    now = clock.now()
    m.Sow.insert_many(
        [
            {
                "key": f"sow-extra-{n}",
                "id": f"sow-extra-{n}",
                "organization": DEMO_ORG,
                "project": PROJECT_TOWER_A,
            }
            | {"created_at": now}
            for n in range(3)
        ]
    ).execute()
    assert projects()["projects"][0]["sowCount"] == 4


def test_client_list_shape_with_contacts(demo) -> None:
    body = clients()
    assert list(body) == ["clients", "total"]
    assert body["total"] == 2
    assert ids(body, "clients") == [CLIENT_NORTHWIND, CLIENT_HARBOR_HEALTH]  # pinned first, then by name
    northwind = body["clients"][0]
    assert list(northwind) == CLIENT_FIELDS
    assert (northwind["isPinned"], northwind["industry"]) == (True, "Real Estate")
    contacts = northwind["contacts"]
    assert [c["name"] for c in contacts] == ["Maria Chen", "Jonas Berg", "Priya Nair"]  # primary, then name
    for contact in contacts:
        assert list(contact) == CONTACT_FIELDS
        assert contact["clientId"] == CLIENT_NORTHWIND
    assert contacts[0]["isPrimary"] is True and contacts[1]["isPrimary"] is False


def test_a_client_without_contacts_has_an_empty_list(demo) -> None:
    now = clock.now()
    m.Client.create(id="c-0", organization="org-acme", name="Aardvark", created_at=now, updated_at=now)
    body = clients()
    added = next(c for c in body["clients"] if c["id"] == "c-0")
    assert added["contacts"] == [] and "description" not in added and added["pinnedAt"] is None


# --- filters and paging ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"status": "on_hold"}, [PROJECT_HARBOR_CLINIC]),
        ({"status": "archived"}, []),
        ({"clientId": CLIENT_NORTHWIND}, [PROJECT_TOWER_A, PROJECT_RIVERSIDE_GARAGE]),
        ({"clientId": CLIENT_NORTHWIND, "status": "completed"}, [PROJECT_RIVERSIDE_GARAGE]),
        ({"clientId": CLIENT_INITECH}, []),  # another organization's client
        (
            {"clientId": CLIENT_NORTHWIND.upper()},
            [PROJECT_TOWER_A, PROJECT_RIVERSIDE_GARAGE],
        ),  # hex case is free
        ({"clientId": "00000000-0000-4000-8000-000000000000"}, []),  # a uuid, but no such client
    ],
)
def test_project_filters(demo, query: dict[str, str], expected: list[str]) -> None:
    body = projects(**query)
    assert ids(body) == expected
    assert body["total"] == len(expected)


def test_limit_and_offset_page_while_total_counts_every_match(demo) -> None:
    assert projects(limit="1") == {"projects": [projects()["projects"][0]], "total": 3}
    page = projects(limit="1", offset="1")
    assert (ids(page), page["total"]) == ([PROJECT_HARBOR_CLINIC], 3)
    assert projects(offset="2") == {"projects": [projects()["projects"][2]], "total": 3}
    assert projects(offset="10") == {"projects": [], "total": 3}
    assert projects(limit="0") == {"projects": [], "total": 3}
    assert projects(limit="00002", offset="99999999999999999999") == {"projects": [], "total": 3}
    page = clients(limit="1", offset="1")
    assert (ids(page, "clients"), page["total"]) == ([CLIENT_HARBOR_HEALTH], 2)


def test_server_default_limit_is_20_and_larger_limits_are_clamped_to_100(db) -> None:
    now = clock.now()
    m.Organization.create(id="org-big", name="Big")
    stamps = {"created_at": now, "updated_at": now}
    rows = [
        {"id": f"p-{n:03d}", "organization": "org-big", "name": f"Project {n:03d}", **stamps}
        for n in range(130)
    ]
    m.Project.insert_many(rows).execute()
    big = Caller(user_id="u", organization_id="org-big", role="viewer")
    assert [len(served("projects.list", big)["projects"]), served("projects.list", big)["total"]] == [20, 130]
    clamped = served("projects.list", big, limit="150", offset="20")
    assert ids(clamped) == [f"p-{n:03d}" for n in range(20, 120)]
    assert clamped["total"] == 130
    # Local mode without a limit lists everything, as the remote backend does page by page.
    assert len(projects(big)["projects"]) == 130


def test_listing_needs_a_constant_number_of_queries(demo, db, monkeypatch: pytest.MonkeyPatch) -> None:
    now = clock.now()
    stamps = {"created_at": now, "updated_at": now}
    m.Client.insert_many(
        [{"id": f"c-{n:03d}", "organization": "org-acme", "name": f"C {n}", **stamps} for n in range(60)]
    ).execute()
    m.Contact.insert_many(
        [{"id": f"k-{n:03d}", "client": f"c-{n:03d}", "name": "K", **stamps} for n in range(60)]
    ).execute()
    statements: list[str] = []
    execute_sql = db.execute_sql

    def counting(sql: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        statements.append(sql)
        return execute_sql(sql, params, *args, **kwargs)

    monkeypatch.setattr(db, "execute_sql", counting)
    assert len(clients(limit="50")["clients"]) == 50
    assert len(statements) == 3  # page, total, contacts of the page
    statements.clear()
    assert len(projects(limit="50")["projects"]) == 3
    assert len(statements) == 3  # page (with client names), total, SOW counts


# --- bad query parameters -------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "path", "message"),
    [
        ({"limit": "abc"}, "limit", "must be a string of digits"),
        ({"limit": "-1"}, "limit", "must be a string of digits"),
        ({"limit": "1.5"}, "limit", "must be a string of digits"),
        ({"limit": ""}, "limit", "must be a string of digits"),
        ({"limit": " 5"}, "limit", "must be a string of digits"),
        ({"offset": "ten"}, "offset", "must be a string of digits"),
        ({"offset": "+1"}, "offset", "must be a string of digits"),
        ({"status": "paused"}, "status", "must be one of: active, on_hold, completed, archived"),
        ({"clientId": "northwind"}, "clientId", "must be a uuid"),
        ({"clientId": CLIENT_NORTHWIND + "0"}, "clientId", "must be a uuid"),
    ],
)
def test_bad_project_query_parameters_are_bad_requests(demo, query: dict, path: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        projects(**query)
    assert caught.value.code == "BAD_REQUEST"
    assert caught.value.issues == [Issue((path,), message)]
    assert caught.value.message == f"{path}: {message}"


@pytest.mark.parametrize("query", [{"limit": "x"}, {"offset": "-3"}])
def test_bad_client_query_parameters_are_bad_requests(demo, query: dict) -> None:
    with pytest.raises(InvalidInput) as caught:
        clients(**query)
    assert caught.value.issues[0].path == tuple(query)


# --- organization scoping ---------------------------------------------------------


def test_a_caller_sees_only_its_organization(demo) -> None:
    assert ids(projects(GLOBEX)) == [PROJECT_GLOBEX_DC]
    assert ids(clients(GLOBEX), "clients") == [CLIENT_INITECH]
    assert projects(GLOBEX, clientId=CLIENT_NORTHWIND) == {"projects": [], "total": 0}
    assert projects(NOBODY) == {"projects": [], "total": 0}
    assert clients(NOBODY) == {"clients": [], "total": 0}


def test_local_mode_sees_every_organization(demo) -> None:
    assert projects(LOCAL)["total"] == 4
    assert clients(LOCAL)["total"] == 3


# --- HTTP -----------------------------------------------------------------------------


@pytest.fixture
def http(migrated_db_url: str) -> Iterator[httpx.Client]:
    from sowctl.server.app import create_app

    app = create_app(migrated_db_url)
    import_dataset(demo_dataset(TODAY))
    token = credentials.create_token("user-hank", "org-globex", "viewer").secret
    with wsgi_client(app, headers=bearer(token)) as client:
        yield client
    m.database_proxy.obj.close()


def test_http_lists_the_token_organization(http: httpx.Client) -> None:
    response = http.get("/projects")
    assert response.status_code == 200
    assert response.json() == projects(GLOBEX)
    response = http.get("/clients", params={"limit": "5"})
    assert response.status_code == 200
    assert ids(response.json(), "clients") == [CLIENT_INITECH]


def test_http_bad_limit_is_a_group_c_bad_request(http: httpx.Client) -> None:
    response = http.get("/projects", params={"limit": "many", "clientId": "x"})
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"code", "message", "issues"} and body["code"] == "BAD_REQUEST"
    assert {"path": ["limit"], "message": "must be a string of digits"} in body["issues"]
    assert {"path": ["clientId"], "message": "must be a uuid"} in body["issues"]


# --- CLI ------------------------------------------------------------------------------


@pytest.fixture
def demo_cli(cli, db) -> Any:
    import_dataset(demo_dataset(TODAY))
    return cli


def test_cli_json_is_the_api_body(demo_cli) -> None:
    result = demo_cli("--org", "org-acme", "projects", "list", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json() == projects()
    result = demo_cli("clients", "list", "--json", "--limit", "1", "--offset", "1")
    assert result.json() == clients(LOCAL, limit="1", offset="1")


def test_cli_piped_lines_and_ids(demo_cli) -> None:
    result = demo_cli("--org", "org-acme", "projects", "list", "--status", "active")
    assert (
        result.stdout == f"{PROJECT_TOWER_A}\tactive\ttrue\t1\tNorthwind Properties\tTower A Office Block\n"
    )
    quiet = demo_cli("projects", "list", "-q", "--client", CLIENT_NORTHWIND)
    assert quiet.stdout.splitlines() == [PROJECT_TOWER_A, PROJECT_RIVERSIDE_GARAGE]

    lines = demo_cli("--org", "org-acme", "clients", "list").stdout.splitlines()
    assert len(lines) == 2
    assert lines[1].split("\t") == [
        CLIENT_HARBOR_HEALTH,
        "false",
        "Healthcare",
        "Harbor Health Partners",
        "Samuel Okafor <s.okafor@harborhealth.example> (primary); Lena Novak <l.novak@harborhealth.example>",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["projects", "list", "--limit", "ten"],
            "error: invalid --limit 'ten': must be a string of digits\n",
        ),
        (
            ["projects", "list", "--status", "done"],
            "error: Invalid value for '--status': 'done' is not one of 'active', 'on_hold', 'completed', "
            "'archived'. (see 'sowctl projects list --help')\n",
        ),
        (
            ["projects", "list", "--client", "acme"],
            "error: invalid --client 'acme': must be a uuid\n",
        ),
        (["clients", "list", "--offset", "-1"], "error: invalid --offset '-1': must be a string of digits\n"),
    ],
)
def test_cli_bad_options_exit_2(demo_cli, args: list[str], message: str) -> None:
    result = demo_cli(*args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message)
