"""SOW ids per organization (issue 14, item 6): no answer tells one organization whether
another one uses an id, and no organization can take an id another will use.

The only id a client chooses is a SOW's (``POST /api/sows {"id"}``, ``sows create
--id``); items, dependencies, purchase orders and every Group B/C record get ids from
the server. Imports name ids too, but only an operator imports. So SOW ids are unique
per organization: two organizations may each have ``sow-x``, each sees only its own, and
an import brings one organization's ``sow-x`` next to another's.
"""

from __future__ import annotations

import datetime
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from sowctl.foundation.errors import InvalidInput
from sowctl.operations import get as get_op
from sowctl.services import credentials, demo_data
from sowctl.services.dataset import export_dataset, import_dataset
from sowctl.storage import database as db_module
from sowctl.storage import migrations
from sowctl.storage import models as m
from tests.support.raw_wsgi import Env, Reply, make_env

ACME, GLOBEX = demo_data.DEMO_ORG, demo_data.GLOBEX_ORG
TAKEN = demo_data.GLOBEX_SOW  # globex's SOW id, unknown to acme
# The schema version just before SOW ids became per organization.
GLOBAL_IDS_VERSION = migrations.MIGRATIONS.index(migrations._v6_sow_ids_per_organization)


class Tenants:
    """The demo data served in process, with a member token of each organization."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.tokens = {
            ACME: env.token,
            GLOBEX: credentials.create_token("user-hank", GLOBEX, "member").secret,
        }

    def send(self, org: str, name: str, **kwargs: Any) -> Reply:
        self.env.auth = lambda _op: {"Authorization": f"Bearer {self.tokens[org]}"}  # type: ignore[method-assign]
        return self.env.send(get_op(name), **kwargs)

    def create_sow(self, org: str, sow_id: str, title: str = "Mine") -> Reply:
        return self.send(org, "sows.create", body={"title": title, "id": sow_id})


@pytest.fixture
def tenants(migrated_db_url: str) -> Iterator[Tenants]:
    yield Tenants(make_env(migrated_db_url))
    m.database_proxy.obj.close()


def test_an_id_another_organization_uses_is_created_as_if_unused(tenants: Tenants) -> None:
    taken = tenants.create_sow(ACME, TAKEN)
    unused = tenants.create_sow(ACME, "sow-nobody-uses")
    assert (taken.status, unused.status) == (201, 201), (taken.body, unused.body)
    assert taken.headers.keys() == unused.headers.keys()
    assert taken.json().keys() == unused.json().keys()
    assert taken.json()["id"] == TAKEN and unused.json()["id"] == "sow-nobody-uses"
    for reply in (taken, unused):
        assert {k: v for k, v in reply.json().items() if k not in ("id", "createdAt")} == {
            k: v for k, v in unused.json().items() if k not in ("id", "createdAt")
        }
    # The organization's own id is still refused, naming the field.
    again = tenants.create_sow(ACME, TAKEN)
    assert again.status == 400 and again.json()["error"].startswith("id: ")


def test_two_organizations_each_have_their_own_sow_x(tenants: Tenants) -> None:
    created = {org: tenants.create_sow(org, "sow-x", title=f"{org}'s") for org in (ACME, GLOBEX)}
    assert all(reply.status == 201 for reply in created.values())
    items: dict[str, str] = {}
    for org in (ACME, GLOBEX):
        item = tenants.send(
            org, "items.create", params={"sowId": "sow-x"}, body={"title": f"{org} task", "type": "task_item"}
        )
        assert item.status == 201, item.body
        assert item.json()["sowId"] == "sow-x"  # the shown id, whatever the stored key
        items[org] = item.json()["id"]
    for org, other in ((ACME, GLOBEX), (GLOBEX, ACME)):
        sows = tenants.send(org, "sows.list", query={}).json()
        assert [(s["id"], s["title"]) for s in sows if s["id"] == "sow-x"] == [("sow-x", f"{org}'s")]
        listed = tenants.send(org, "items.list", params={"sowId": "sow-x"}).json()
        assert [item["id"] for item in listed] == [items[org]]
        assert all(item["sowId"] == "sow-x" for item in listed)
        got = tenants.send(org, "items.get", params={"itemId": items[org]}).json()
        assert got["sowId"] == "sow-x"
        assert tenants.send(org, "items.get", params={"itemId": items[other]}).status == 404
        for shape in ("flat", "tree"):
            chain = tenants.send(org, "chain.get", query={"sowId": "sow-x", "format": shape})
            assert chain.status == 200 and chain.json()["sowId"] == "sow-x"
        tree = tenants.send(org, "chain.get", query={"sowId": "sow-x", "format": "tree"}).json()
        assert [node["id"] for node in tree["items"]] == [items[org]]
        deps = tenants.send(org, "deps.list", query={"sowId": "sow-x"})
        assert deps.status == 200 and deps.json() == []
        # Reordering names only its own items; the other organization's item is not found.
        reorder = tenants.send(
            org,
            "items.reorder",
            params={"sowId": "sow-x"},
            body={"items": [{"id": items[other], "orderIndex": 1}]},
        )
        assert reorder.status == 404
    assert m.Sow.select().where(m.Sow.id == "sow-x").count() == 2


def test_acme_taking_globex_s_id_first_does_not_block_globex(tenants: Tenants) -> None:
    """Acme creates an id before globex does (or before globex's data is imported)."""
    assert tenants.create_sow(ACME, "sow-later").status == 201
    assert tenants.create_sow(GLOBEX, "sow-later").status == 201
    assert tenants.create_sow(ACME, "sow-imported").status == 201
    import_dataset(
        {
            "sows": [{"id": "sow-imported", "projectId": demo_data.PROJECT_GLOBEX_DC, "title": "Imported"}],
            "items": [{"id": "it-imported", "sowId": "sow-imported", "title": "t", "type": "task_item"}],
        }
    )
    # The import's items land in globex's new SOW, not in acme's of the same id.
    assert (
        tenants.send(GLOBEX, "items.list", params={"sowId": "sow-imported"}).json()[0]["id"] == "it-imported"
    )
    assert tenants.send(ACME, "items.list", params={"sowId": "sow-imported"}).json() == []


def test_an_import_next_to_another_organization_s_sow_of_the_same_id(tenants: Tenants) -> None:
    assert tenants.create_sow(ACME, "sow-shared").status == 201
    dataset = {
        "sows": [{"id": "sow-shared", "projectId": demo_data.PROJECT_GLOBEX_DC, "title": "Globex's"}],
        "items": [{"id": "it-globex", "sowId": "sow-shared", "title": "globex task", "type": "task_item"}],
    }
    import_dataset(dataset)
    listed = tenants.send(GLOBEX, "items.list", params={"sowId": "sow-shared"}).json()
    assert [(item["id"], item["sowId"]) for item in listed] == [("it-globex", "sow-shared")]
    assert tenants.send(ACME, "items.list", params={"sowId": "sow-shared"}).json() == []
    # The same organization's id again: refused, and naming the record.
    with pytest.raises(InvalidInput) as refused:
        import_dataset({"sows": [{**dataset["sows"][0], "title": "twice"}]})
    assert [issue.path for issue in refused.value.issues] == [("sows", 0, "id")]
    # Items that name an id two organizations use, without the SOW in the file: ambiguous.
    with pytest.raises(InvalidInput) as ambiguous:
        import_dataset(
            {"items": [{"id": "it-which", "sowId": "sow-shared", "title": "?", "type": "task_item"}]}
        )
    assert [issue.path for issue in ambiguous.value.issues] == [("items", 0, "sowId")]
    # Export names each item's SOW by its shown id.
    exported = export_dataset()
    assert {item["sowId"] for item in exported["items"] if item["id"] == "it-globex"} == {"sow-shared"}
    assert [s["id"] for s in exported["sows"]].count("sow-shared") == 2


def test_a_database_whose_organizations_share_a_sow_id_exports_a_file_that_imports_back(
    tenants: Tenants, tmp_path: Path
) -> None:
    from tests.support.dataset import wipe

    assert tenants.create_sow(ACME, TAKEN).status == 201  # globex's SOW id, now acme's too
    made = tenants.send(
        ACME, "items.create", params={"sowId": TAKEN}, body={"title": "acme's", "type": "task_item"}
    )
    assert made.status == 201
    exported = export_dataset()
    shared = [item for item in exported["items"] if item["sowId"] == TAKEN]
    assert {item.get("organizationId") for item in shared} == {ACME, GLOBEX}
    assert list(shared[0])[:3] == ["id", "sowId", "organizationId"]
    assert all("organizationId" not in item for item in exported["items"] if item["sowId"] != TAKEN)
    wipe()
    import_dataset(exported)
    assert export_dataset() == exported
    placed = m.Item.select(m.Item.title, m.Sow.organization).join(m.Sow).where(m.Sow.id == TAKEN)
    assert ("acme's", ACME) in set(placed.tuples())
    assert {org for _, org in placed.tuples()} == {ACME, GLOBEX}
    # An organization that has no SOW of that id: named in the refusal.
    wipe()
    with pytest.raises(InvalidInput) as refused:
        import_dataset({**exported, "items": [{**shared[0], "id": "it-x", "organizationId": "org-nobody"}]})
    assert f"SOW {TAKEN} not found in organization org-nobody" in refused.value.message


def test_local_mode_tells_apart_an_id_of_several_organizations(cli, db_url: str) -> None:
    from sowctl.storage.database import open_database

    open_database(db_url)
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    m.database_proxy.obj.close()
    for org in (ACME, GLOBEX):
        project = demo_data.PROJECT_TOWER_A if org == ACME else demo_data.PROJECT_GLOBEX_DC
        assert (
            cli(
                "--org", org, "sows", "create", f"{org}'s", "--id", "sow-both", "--project", project
            ).exit_code
            == 0
        )
    both = cli("items", "list", "sow-both")
    assert both.exit_code == 2 and "--org" in both.stderr and "SOW_ID 'sow-both'" in both.stderr
    mine = cli("--org", GLOBEX, "items", "create", "sow-both", "--title", "g", "--json")
    assert mine.exit_code == 0, mine.stderr
    assert mine.json()["sowId"] == "sow-both"
    listed = cli("--org", ACME, "items", "list", "sow-both", "--json")
    assert listed.exit_code == 0 and listed.json() == []
    # --org naming no organization is not found, as in every command; naming one without
    # that SOW cannot choose between the others
    for args in (
        ("items", "list", "sow-both"),
        ("chain", "show", "sow-both"),
        ("items", "create", "sow-both", "--title", "t"),
    ):
        unknown = cli("--org", "org-zzz", *args)
        assert (unknown.exit_code, unknown.stderr) == (3, "error: organization org-zzz not found (--org)\n")
    assert cli("orgs", "create", "org-zzz").exit_code == 0
    assert cli("--org", "org-zzz", "sows", "create", "Z", "--id", "sow-z").exit_code == 0
    other = cli("--org", "org-zzz", "items", "list", "sow-both")
    assert other.exit_code == 2
    assert "SOW sow-both is not in organization org-zzz but in several organizations" in other.stderr


# --- an existing database keeps working --------------------------------------------------


@pytest.fixture
def global_ids_database(tmp_path: Path) -> Iterator[str]:
    """A database in the shape before SOW ids were per organization, on this suite's backend."""
    target = os.environ.get("SOWCTL_TEST_DB", "sqlite")
    if not target.startswith("postgres"):
        path = str(tmp_path / "global-ids.db")
        db_module.open_database(path).close()
        raw = sqlite3.connect(path)  # foreign keys off: the table is rebuilt under its items
        raw.executescript(
            f"""
            DROP INDEX sow_organization_id_public_id; DROP INDEX sow_organization_id;
            CREATE TABLE sow_old ("id" VARCHAR(64) NOT NULL PRIMARY KEY, "project_id" VARCHAR(64) NOT NULL
                REFERENCES "project" ("id") ON DELETE CASCADE, "title" TEXT NOT NULL,
                "created_at" DATETIME NOT NULL);
            DROP TABLE sow; ALTER TABLE sow_old RENAME TO sow;
            CREATE INDEX "sow_project_id" ON "sow" ("project_id");
            UPDATE meta SET value = '{GLOBAL_IDS_VERSION}' WHERE key = 'schema_version';
            """
        )
        raw.close()
        yield path
        return
    from tests.support import pg

    name = f"sowctl_global_ids_{uuid.uuid4().hex[:8]}"
    admin = pg._admin_connection(target)
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    admin.close()
    url = urlunsplit(urlsplit(target)._replace(path="/" + name))
    database = db_module.open_database(url)
    database.execute_sql("ALTER TABLE sow DROP COLUMN public_id, DROP COLUMN organization_id")
    database.execute_sql(f"UPDATE meta SET value = '{GLOBAL_IDS_VERSION}' WHERE key = 'schema_version'")
    database.close()
    try:
        yield url
    finally:
        pg._drop(target, name)


def test_a_database_with_global_sow_ids_migrates_and_keeps_its_sows(global_ids_database: str) -> None:
    database = db_module.open_database(global_ids_database, migrate=False)
    for sql in (
        "INSERT INTO organization (id, name) VALUES ('org-a', 'A'), ('org-b', 'B')",
        "INSERT INTO project (id, organization_id, name, status, is_pinned, created_at, updated_at) VALUES "
        "('p-a', 'org-a', 'P', 'active', false, '2026-01-01 00:00:00', '2026-01-01 00:00:00'), "
        "('p-b', 'org-b', 'P', 'active', false, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
        "INSERT INTO sow (id, project_id, title, created_at) VALUES "
        "('sow-old', 'p-a', 'Old', '2026-01-01 00:00:00')",
        "INSERT INTO item (id, sow_id, type, title, order_index, status, created_at, updated_at) VALUES "
        "('item-old', 'sow-old', 'task_item', 'kept', 0, 'pending', "
        "'2026-01-01 00:00:00', '2026-01-01 00:00:00')",
    ):
        database.execute_sql(sql)
    database.close()
    db_module.open_database(global_ids_database)  # migrates to the current version
    assert db_module.schema_version() == db_module.SCHEMA_VERSION
    sow = m.Sow.get(m.Sow.id == "sow-old")
    assert (sow.key, sow.organization_id, sow.title) == ("sow-old", "org-a", "Old")
    assert m.Item.get_by_id("item-old").sow_id == "sow-old"
    from sowctl.schemas.sows import SowCreate
    from sowctl.services.access import Caller, sow_for
    from sowctl.services.sows import create_sow

    member_b = Caller(user_id=None, organization_id="org-b", role="member")
    made = create_sow(member_b, SowCreate(title="B's", id="sow-old"))
    assert made.id == "sow-old"
    assert sow_for(member_b, "sow-old").key != "sow-old"  # a fresh key: the old one is taken
    assert sow_for(Caller(None, "org-a", "member"), "sow-old").key == "sow-old"
    with pytest.raises(InvalidInput):
        create_sow(Caller(None, "org-a", "member"), SowCreate(title="again", id="sow-old"))
    m.database_proxy.obj.close()


def test_two_organizations_creating_one_id_at_once_both_succeed(tenants: Tenants) -> None:
    """Each organization's writers lock only their organization, so both may find the
    stored key free and race for it (on PostgreSQL): the loser takes a fresh key."""
    import threading

    from sowctl.schemas.sows import SowCreate
    from sowctl.services.access import Caller
    from sowctl.services.sows import create_sow

    def create(org: str, sow_id: str, barrier: threading.Barrier, made: dict[str, str]) -> None:
        try:
            barrier.wait(timeout=5)
            made[org] = create_sow(Caller(None, org, "member"), SowCreate(title=org, id=sow_id)).id
        finally:
            m.database_proxy.obj.close()  # this thread's connection

    for round_ in range(5):
        sow_id = f"sow-race-{round_}"
        barrier = threading.Barrier(2)
        made: dict[str, str] = {}
        threads = [
            threading.Thread(target=create, args=(org, sow_id, barrier, made)) for org in (ACME, GLOBEX)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert made == {ACME: sow_id, GLOBEX: sow_id}
        keys = {key for (key,) in m.Sow.select(m.Sow.key).where(m.Sow.id == sow_id).tuples()}
        assert len(keys) == 2 and sow_id in keys
