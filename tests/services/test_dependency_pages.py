"""Pages of ``GET /api/dependencies``: slices of the whole list in its order at any depth, a
fixed number of statements per page, and page ids read from an index in list order (a deep
page costs what the first does)."""

from __future__ import annotations

from datetime import datetime, timedelta

import peewee as pw
import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.services.access import Caller
from sowctl.services.dataset.importer import import_dataset
from sowctl.storage import database as db_module
from sowctl.storage import models as m
from tests.support.dataset import minimal

T0 = datetime(2026, 3, 16, 9, 30, 0)
ORG_1 = Caller(user_id="user-1", organization_id="org-1", role="admin")
ORG_2 = Caller(user_id="user-2", organization_id="org-2", role="admin")


def _external(dep_id: str, source: str, n: int) -> dict:
    """An external dependency; createdAt repeats every 4, so the order rests on the id too."""
    created = (T0 + timedelta(minutes=n % 4)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": dep_id,
        "sourceItemId": source,
        "externalTarget": f"Vendor {n}",
        "dependencyType": "depends_on",
        "riskLevel": "high" if n % 3 else "critical",
        "createdAt": created,
    }


@pytest.fixture
def two_orgs(db) -> None:
    """org-1: two SOWs, 31 dependencies (imported and created); org-2: 7 of its own."""
    data = minimal()
    data["organizations"].append({"id": "org-2", "name": "Other"})
    data["users"].append({"id": "user-2", "organizationId": "org-2", "name": "Bo"})
    client_2 = {**data["clients"][0], "id": "00000000-0000-4000-8000-00000000c002", "organizationId": "org-2"}
    client_2["contacts"] = [{"id": "00000000-0000-4000-8000-00000000d002", "name": "Dan"}]
    data["clients"].append(client_2)
    project_2 = {
        **data["projects"][0],
        "id": "00000000-0000-4000-8000-00000000a002",
        "organizationId": "org-2",
        "clientId": client_2["id"],
        "contactId": "00000000-0000-4000-8000-00000000d002",
    }
    data["projects"].append(project_2)
    data["sows"] += [
        {"id": "sow-1b", "projectId": data["projects"][0]["id"], "title": "Second"},
        {"id": "sow-2", "projectId": project_2["id"], "title": "Theirs"},
    ]
    data["items"] += [
        {"id": "task-1b", "sowId": "sow-1b", "title": "B", "type": "task_item"},
        {"id": "task-o2", "sowId": "sow-2", "title": "O", "type": "task_item"},
    ]
    data["dependencies"] += [_external(f"x-{n:02d}", ("task-1", "task-1b")[n % 2], n) for n in range(24)]
    data["dependencies"] += [_external(f"o-{n:02d}", "task-o2", n) for n in range(7)]
    import_dataset(data)
    for n in range(6):
        clock.set_fixed_now(T0 + timedelta(minutes=2, seconds=0))
        body = {"sourceItemId": "task-1b", "externalTarget": f"Made {n}", "dependencyType": "depends_on"}
        operations.call_local("deps.create", Caller.local(), body={**body, "riskLevel": "low"})


def page(caller: Caller, number: int, limit: int, **query: str) -> tuple[list[dict], int]:
    op = operations.get("deps.list")
    request = operations.build_request(op, caller, {}, query, offset=(number - 1) * limit, limit=limit)
    result = op.run(request)
    return result.body, result.total


def whole(caller: Caller, **query: str) -> list[dict]:
    return operations.call_local("deps.list", caller, {}, query)


def test_every_writer_stores_the_organization(two_orgs) -> None:
    stored = dict(m.Dependency.select(m.Dependency.id, m.Dependency.organization_id).tuples())
    assert stored["x-00"] == "org-1" and stored["o-00"] == "org-2"
    assert None not in stored.values() and len(stored) == 1 + 24 + 7 + 6


@pytest.mark.parametrize(
    ("caller", "query", "expected"),
    [
        (ORG_1, {}, 1 + 24 + 6),
        (ORG_1, {"sowId": "sow-1b"}, 12 + 6),
        (ORG_1, {"type": "critical"}, 8),
        (ORG_2, {}, 7),
    ],
)
def test_pages_are_slices_of_the_whole_list_in_its_order(two_orgs, caller, query, expected) -> None:
    everything = whole(caller, **query)
    assert len(everything) == expected
    keys = [(dep["createdAt"], dep["id"]) for dep in everything]
    assert keys == sorted(keys)  # oldest first, ties by id
    for limit in (1, 4, 7, 50):
        pages = []
        for number in range(1, expected // limit + 3):  # and a page past the end
            body, total = page(caller, number, limit, **query)
            assert total == expected
            pages += body
        assert pages == everything


def count_statements(monkeypatch) -> list[tuple[str, tuple]]:
    """The (statement, parameters) sent to the database from now on."""
    executed: list[tuple[str, tuple]] = []
    database = m.database_proxy.obj
    original = database.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        executed.append((sql, tuple(params or ())))
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(database, "execute_sql", counting)
    return executed


@pytest.mark.parametrize("query", [{}, {"sowId": "sow-1b"}])
def test_a_page_runs_the_same_statements_at_any_depth(two_orgs, monkeypatch, query) -> None:
    page(ORG_1, 1, 2, **query)  # on PostgreSQL, the SOW lookup's statement is prepared once
    executed = count_statements(monkeypatch)
    seen = []
    for number in (1, 3, 9):
        executed.clear()
        page(ORG_1, number, 2, **query)
        seen.append(executed[:])
    # (the SOW,) the count, the page: the same statements at any depth, only the offset differs
    assert [len(statements) for statements in seen] == [2 + ("sowId" in query)] * 3
    assert seen[0][-2:] != seen[2][-2:]  # the parameters do differ
    assert [sql for sql, _ in seen[0][-2:]] == [sql for sql, _ in seen[2][-2:]]


@pytest.mark.parametrize(("query", "index"), [({}, "organization_id"), ({"sowId": "sow-1b"}, "sow_id")])
def test_the_page_ids_come_from_an_index_in_list_order(two_orgs, monkeypatch, query, index) -> None:
    """Read from the index alone, in order: a deep OFFSET skips index entries, not rows."""
    executed = count_statements(monkeypatch)
    page(ORG_1, 3, 2, **query)
    statement, params = executed[-1]
    monkeypatch.undo()
    name = f"dependency_{index}_created_at_id"
    database = m.database_proxy.obj
    if isinstance(database, pw.PostgresqlDatabase):
        with database.atomic():
            database.execute_sql("SET LOCAL enable_seqscan = off")
            database.execute_sql("SET LOCAL enable_bitmapscan = off")
            plan = "\n".join(row[0] for row in database.execute_sql("EXPLAIN " + statement, params))
        # On a table of a few rows PostgreSQL may pick the single-column index and sort the one
        # row it finds; what must hold is that the page's ids come from an index on that column.
        assert f"using dependency_{index}" in plan and "Seq Scan" not in plan, plan
    else:
        plan = "\n".join(row[3] for row in database.execute_sql("EXPLAIN QUERY PLAN " + statement, params))
        assert f"USING COVERING INDEX {name}" in plan, plan
        assert plan.count("TEMP B-TREE") <= 1, plan  # only the page's own rows are sorted


def test_the_v8_migration_fills_the_organization_and_adds_the_indexes(db_url) -> None:
    database = db_module.open_database(db_url)
    import_dataset(minimal())
    for name in ("dependency_organization_id_created_at_id", "dependency_sow_id_created_at_id"):
        database.execute_sql(f'DROP INDEX "{name}"')
    database.execute_sql('ALTER TABLE "dependency" DROP COLUMN "organization_id"')
    m.Meta.update(value="7").where(m.Meta.key == "schema_version").execute()
    database.close()
    database = db_module.open_database(db_url)
    try:
        columns = [index.columns for index in database.get_indexes("dependency")]
        assert ["organization_id", "created_at", "id"] in columns
        assert ["sow_id", "created_at", "id"] in columns
        assert m.Dependency.get_by_id("dep-1").organization_id == "org-1"
        assert db_module.schema_version() == db_module.SCHEMA_VERSION
    finally:
        database.close()
