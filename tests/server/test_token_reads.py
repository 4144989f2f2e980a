"""Get item authenticates its bearer token in the item's own statement (services.token_reads):
one statement per request, the same answers and refusals, in the same order, as
authenticating first and reading after, and a revoked token refused by the next request."""

from __future__ import annotations

import time

import peewee as pw
import psycopg2
import pytest

from sowctl import operations
from sowctl.services import credentials
from sowctl.services.access import Caller
from sowctl.storage import models as m
from tests.support.server_api import Api, assert_group_a_error, create_item

pytestmark = pytest.mark.database  # statements and their answers: both backends


def statements_sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements sent to the database from now on."""
    sent: list[str] = []
    database = m.database_proxy.obj
    original = database.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        sent.append(sql)
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(database, "execute_sql", counting)
    return sent


def test_get_item_is_one_statement_with_the_answer_of_get_item(api: Api, monkeypatch) -> None:
    item = create_item(api, "Pour slab", description="Level 1")
    api.get(f"/api/items/{item['id']}", api.member)  # on PostgreSQL, the statement is prepared once
    sent = statements_sent(monkeypatch)
    response = api.get(f"/api/items/{item['id']}", api.member)
    assert response.status_code == 200
    assert len(sent) == 1
    member = Caller(user_id="user-member", organization_id="org-a", role="member")
    assert response.json() == operations.call_local("items.get", member, {"itemId": item["id"]}) == item


def test_a_requirement_s_status_and_parent_are_those_of_get_item(api: Api) -> None:
    requirement = create_item(api, "Structure", type="requirement")
    task = create_item(api, "Pour", parentItemId=requirement["id"])
    done = api.request("PUT", f"/api/items/{task['id']}", api.member, json={"status": "in_progress"})
    assert done.status_code == 200, done.text
    member = Caller(user_id="user-member", organization_id="org-a", role="member")
    for item_id in (requirement["id"], task["id"]):
        served = api.get(f"/api/items/{item_id}", api.member).json()
        assert served == operations.call_local("items.get", member, {"itemId": item_id})
    assert api.get(f"/api/items/{requirement['id']}", api.member).json()["status"] == "in_progress"
    assert api.get(f"/api/items/{task['id']}", api.member).json()["parentItemId"] == requirement["id"]


def test_a_token_revoked_is_refused_by_the_next_request(api: Api) -> None:
    item = create_item(api)
    token = credentials.create_token("user-late", "org-a", "viewer").secret
    assert api.get(f"/api/items/{item['id']}", token).status_code == 200
    credentials.revoke_token(token)
    response = api.get(f"/api/items/{item['id']}", token)
    assert assert_group_a_error(response, 401) == "bearer token has been revoked"


def test_the_token_is_refused_before_the_item_is_looked_for(api: Api) -> None:
    item = create_item(api)
    for path in (f"/api/items/{item['id']}", "/api/items/no-such-item"):
        assert assert_group_a_error(api.get(path, "sowctl_pat_unknown"), 401) == "invalid bearer token"
        assert assert_group_a_error(api.get(path, api.revoked), 401) == "bearer token has been revoked"
        assert_group_a_error(api.get(path), 401, "missing bearer token")
        assert_group_a_error(api.get(path, headers={"Authorization": "Basic abc"}), 401, "Bearer <token>")


def test_another_organizations_item_is_not_found_as_a_missing_one(api: Api) -> None:
    (theirs,) = [row.id for row in m.Item.select().where(m.Item.title == "Other org item")]
    assert (
        assert_group_a_error(api.get(f"/api/items/{theirs}", api.member), 404) == f"item {theirs} not found"
    )
    missing = api.get("/api/items/no-such-item", api.member)
    assert assert_group_a_error(missing, 404) == "item no-such-item not found"
    assert api.get(f"/api/items/{theirs}", api.other).json()["title"] == "Other org item"


@pytest.mark.parametrize("token_kind", ["member", "unknown"])
def test_what_is_refused_after_authentication_still_is(api: Api, token_kind: str) -> None:
    """A malformed query string and an id no record can have are refused after the token
    is judged: 401 for a bad token, then 400 or 404."""
    item = create_item(api)
    token = api.member if token_kind == "member" else "sowctl_pat_unknown"
    twice = api.get(f"/api/items/{item['id']}?a=1&a=2", token)
    nul = api.get("/api/items/a%00b", token)
    if token_kind == "unknown":
        assert assert_group_a_error(twice, 401) == "invalid bearer token"
        assert assert_group_a_error(nul, 401) == "invalid bearer token"
    else:
        assert_group_a_error(twice, 400, "query parameter a is given more than once")
        assert_group_a_error(nul, 404, "not found")
    ignored = api.get(f"/api/items/{item['id']}?unused=1", token)
    assert ignored.status_code == (200 if token_kind == "member" else 401)


def test_a_connection_the_server_ended_while_idle_is_replaced_by_the_read(
    api: Api, migrated_db_url: str
) -> None:
    """Get item does not ask the kernel before each request whether its connection is still
    open: when the server ended it while it sat idle (a restart, a terminated session), the
    read finds that out and runs once more on a new connection. The client sees the item."""
    database = m.database_proxy.obj
    if not isinstance(database, pw.PostgresqlDatabase):
        pytest.skip("a server that ends its clients' connections: PostgreSQL")
    item = create_item(api)
    assert api.get(f"/api/items/{item['id']}", api.member).status_code == 200
    backend = database.connection().get_backend_pid()
    other = psycopg2.connect(migrated_db_url)
    try:
        other.autocommit = True
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", (backend,))
            gone = False
            while not gone:  # the backend ends, and says so to the idle connection, soon after
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (backend,))
                gone = cursor.fetchone()[0] == 0
                time.sleep(0.01)
    finally:
        other.close()
    response = api.get(f"/api/items/{item['id']}", api.member)
    assert response.status_code == 200, response.text
    assert response.json() == item
    assert database.connection().get_backend_pid() != backend
