"""A hierarchy deeper than anyone should make (issue 14, item 3).

* The depth is limited (``MAX_HIERARCHY_DEPTH`` levels) where items are made: an API or
  CLI create one level too deep and an import that would go too deep are refused with a
  400 naming ``parentItemId``, and nothing is written.
* Data deeper than the limit (a database from before it, rows written by hand) still
  answers everything that walks or shows the tree, locally and over HTTP: no 500, no
  traceback, every item shown once and the nesting bounded.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator

import pytest

from sowctl.foundation import clock
from sowctl.foundation.budgets import MAX_HIERARCHY_DEPTH
from sowctl.foundation.errors import InvalidInput
from sowctl.gate import risks
from sowctl.operations import call_local
from sowctl.operations import get as get_op
from sowctl.operations.chain import read_report
from sowctl.services import credentials, demo_data
from sowctl.services.dataset import import_dataset
from sowctl.services.hierarchy import depth_first, nest, walk
from sowctl.storage import models as m
from tests.support.raw_wsgi import Env, dump, make_env
from tests.support.server import Server

DEEP = 2000
SOW = demo_data.DEMO_SOW


def insert_chain(sow_id: str, length: int, *, task_at_bottom: bool = False) -> list[str]:
    """``length`` nested requirements (the last one a task item if asked) written straight
    into the table: no API, no limit."""
    moment = clock.now()
    ids = [f"deep-{n:05d}" for n in range(length)]
    rows = [
        {
            "id": item_id,
            "sow": sow_id,
            "parent": None if n == 0 else ids[n - 1],
            "type": "task_item" if task_at_bottom and n == length - 1 else "requirement",
            "title": f"level {n + 1}",
            "order_index": 0,
            "status": "pending",
            "created_at": moment,
            "updated_at": moment,
        }
        for n, item_id in enumerate(ids)
    ]
    with m.database_proxy.obj.atomic():
        for start in range(0, len(rows), 200):
            m.Item.insert_many(rows[start : start + 200]).execute()
    return ids


def max_nesting(roots: list[dict]) -> int:
    return max((level for level, _ in walk(roots)), default=-1) + 1


@pytest.fixture
def env(db_url: str) -> Iterator[Env]:
    yield make_env(db_url)
    m.database_proxy.obj.close()


# --- the limit ----------------------------------------------------------------------


def test_one_level_past_the_limit_is_refused_naming_parent_item_id(env: Env) -> None:
    chain = insert_chain(SOW, MAX_HIERARCHY_DEPTH - 1)  # levels 1 .. limit-1
    create = get_op("items.create")
    at_limit = env.send(
        create, body={"title": "last level", "type": "requirement", "parentItemId": chain[-2]}
    )
    assert at_limit.status == 201, at_limit.body  # a sibling of the last one: level limit - 1
    at_limit = env.send(
        create, body={"title": "last level", "type": "requirement", "parentItemId": chain[-1]}
    )
    assert at_limit.status == 201, at_limit.body  # level limit
    before = dump()
    reply = env.send(
        create, body={"title": "too deep", "type": "task_item", "parentItemId": at_limit.json()["id"]}
    )
    assert reply.status == 400, reply.body
    assert "parentItemId" in reply.json()["error"]
    assert str(MAX_HIERARCHY_DEPTH) in reply.json()["error"]
    assert dump() == before


def test_the_cli_refuses_too_deep_and_names_the_field(cli, db_url: str) -> None:
    assert cli("sows", "create", "Deep", "--id", "sow-deep").exit_code == 0
    from sowctl.storage.database import open_database

    open_database(db_url)
    chain = insert_chain("sow-deep", MAX_HIERARCHY_DEPTH)
    m.database_proxy.obj.close()
    result = cli("items", "create", "sow-deep", "--title", "x", "--type", "task_item", "--parent", chain[-1])
    assert result.exit_code != 0
    assert "--parent" in result.stderr  # the option the user typed (the API says parentItemId)
    assert cli("items", "list", "sow-deep", "--json").json().__len__() == MAX_HIERARCHY_DEPTH


def test_an_import_deeper_than_the_limit_is_refused_and_writes_nothing(db) -> None:
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    base = insert_chain(SOW, MAX_HIERARCHY_DEPTH - 2)  # stored levels 1 .. limit-2
    items = [
        {"id": f"imp-{n}", "sowId": SOW, "title": f"imported {n}", "type": "requirement"}
        | {"parentItemId": base[-1] if n == 0 else f"imp-{n - 1}"}
        for n in range(3)  # levels limit-1, limit, limit+1
    ]
    before = dump()
    with pytest.raises(InvalidInput) as refused:
        import_dataset({"items": items})
    problems = [issue for issue in refused.value.issues if "parentItemId" in issue.path]
    assert [issue.path for issue in problems] == [("items", 2, "parentItemId")]
    assert dump() == before
    import_dataset({"items": items[:2]})  # up to the limit: accepted
    assert m.Item.select().where(m.Item.id.startswith("imp-")).count() == 2


# --- data already deeper than the limit --------------------------------------------------


def test_nest_bounds_nesting_and_keeps_every_item_once() -> None:
    rows = [(f"i{n}", f"i{n - 1}" if n else None) for n in range(DEEP)]
    rows += [("loop-a", "loop-b"), ("loop-b", "loop-a"), ("self", "self")]
    nodes = {item_id: {"id": item_id, "children": []} for item_id, _ in rows}
    roots = nest(rows, nodes)
    seen = [node["id"] for _, node in walk(roots)]
    assert sorted(seen) == sorted(nodes)  # each once, loops included
    assert max_nesting(roots) == MAX_HIERARCHY_DEPTH
    assert seen[:DEEP] == [f"i{n}" for n in range(DEEP)]  # depth-first order kept
    json.dumps(roots)  # the encoder meets bounded nesting
    assert depth_first(rows) == seen  # chain ready's order: the tree body's


@pytest.mark.slow  # a stress test: the quick loop keeps the limit tests above
@pytest.mark.usefixtures("unhurried_database")
def test_a_stored_hierarchy_2000_deep_answers_over_http(env: Env) -> None:
    ids = insert_chain(SOW, DEEP, task_at_bottom=True)
    tree = env.send(get_op("chain.get"), query={"sowId": SOW, "format": "tree"})
    assert tree.status == 200, tree.body[:300]
    roots = tree.json()["items"]
    shown = {node["id"] for _, node in walk(roots)}
    assert set(ids) <= shown
    assert max_nesting(roots) <= MAX_HIERARCHY_DEPTH
    # chain ready in remote mode: the tree body read back, walked without recursion.
    query = {"sowId": SOW, "format": "tree", "include": "external,risks"}
    found = risks.readiness(read_report(env.send(get_op("chain.get"), query=query).json()))
    ready = [row["id"] for row in found["ready"]]
    assert ready.count(ids[-1]) == 1 and ready[0] == ids[-1]  # the deep task, in tree order
    flat = env.send(get_op("chain.get"), query={"sowId": SOW})
    assert flat.status == 200
    listed = env.send(get_op("items.list"), params={"sowId": SOW}, query={"limit": "100"})
    assert listed.status == 200
    top = env.send(get_op("items.get"), params={"itemId": ids[0]})
    assert top.status == 200 and top.json()["status"] == "pending"
    # A dependency between the two ends, its chain, and the deletion of the whole branch.
    dep = env.send(
        get_op("deps.create"),
        body={
            "sourceItemId": ids[-1],
            "targetItemId": ids[0],
            "dependencyType": "depends_on",
            "riskLevel": "low",
        },
    )
    assert dep.status == 201, dep.body
    assert env.send(get_op("chain.get"), query={"sowId": SOW, "format": "tree"}).status == 200
    gone = env.send(get_op("items.delete"), params={"itemId": ids[0]})
    assert gone.status == 200, gone.body
    assert m.Item.select().where(m.Item.id.in_(ids[:10] + ids[-10:])).count() == 0


@pytest.mark.slow  # a stress test: the quick loop keeps the limit tests above
@pytest.mark.usefixtures("unhurried_database")
def test_a_stored_hierarchy_2000_deep_answers_the_cli_locally(cli, db_url: str) -> None:
    assert cli("sows", "create", "Deep", "--id", "sow-deep").exit_code == 0
    from sowctl.storage.database import open_database

    open_database(db_url)
    ids = insert_chain("sow-deep", DEEP)
    m.database_proxy.obj.close()
    plain = cli("items", "tree", "sow-deep")
    assert plain.exit_code == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert len(lines) == DEEP and all(item_id in plain.stdout for item_id in (ids[0], ids[-1]))
    assert max(len(line) - len(line.lstrip(" ")) for line in lines) == 2 * (MAX_HIERARCHY_DEPTH - 1)
    as_json = cli("items", "tree", "sow-deep", "--json")
    assert as_json.exit_code == 0, as_json.stderr
    assert max_nesting(as_json.json()) == MAX_HIERARCHY_DEPTH
    for shape in (["--format", "tree"], ["--json"]):
        chain = cli("chain", "show", "sow-deep", *shape)
        assert chain.exit_code == 0, chain.stderr
    assert cli("items", "list", "sow-deep", "--json").exit_code == 0


@pytest.mark.slow  # a stress test: the quick loop keeps the limit tests above
@pytest.mark.usefixtures("unhurried_database")
def test_the_rich_tree_of_a_2000_deep_hierarchy_renders(db, capsys) -> None:
    from sowctl.output.item_tree import build_tree, render_tree

    items = [
        {"id": f"i{n}", "parentItemId": f"i{n - 1}" if n else None, "orderIndex": 0}
        | {
            "createdAt": "2026-01-01T00:00:00Z",
            "title": f"level {n}",
            "type": "requirement",
            "status": "pending",
        }
        for n in range(DEEP)
    ]
    render_tree("sow", build_tree(items), rich=True)
    assert "i1999" in capsys.readouterr().out


@pytest.mark.slow  # a stress test: the quick loop keeps the limit tests above
@pytest.mark.usefixtures("unhurried_database")
def test_the_rich_chain_tree_of_a_2000_deep_hierarchy_shows_every_item(
    db, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sowctl.commands import chain as chain_command
    from sowctl.services.access import Caller

    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    ids = insert_chain(SOW, DEEP)
    report = call_local("chain.get", Caller.local(), query={"sowId": SOW, "format": "tree"})
    monkeypatch.setattr(chain_command, "is_tty", lambda: True)
    chain_command._show_tree(report)
    shown = capsys.readouterr().out
    assert all(item_id in shown for item_id in (ids[0], ids[DEEP // 2], ids[-1]))


@pytest.mark.slow
def test_a_stored_hierarchy_2000_deep_answers_the_cli_through_a_real_server(db_url: str, cli) -> None:
    from sowctl.storage.database import open_database

    import_dataset_into(db_url)
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
    ids = insert_chain(SOW, DEEP)
    m.database_proxy.obj.close()
    server = Server(db_url)
    try:
        remote = {"SOWCTL_SERVER": server.url, "SOWCTL_TOKEN": token, "SOWCTL_DB": ""}
        shown = cli("items", "tree", SOW, env=remote)
        assert shown.exit_code == 0, shown.stderr
        assert ids[-1] in shown.stdout
        chain = cli("chain", "show", SOW, "--format", "tree", env=remote)
        assert chain.exit_code == 0, chain.stderr
        tree = server.client.get(
            "/api/dependencies/chain",
            params={"sowId": SOW, "format": "tree"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert tree.status_code == 200 and max_nesting(tree.json()["items"]) <= MAX_HIERARCHY_DEPTH
    finally:
        server.stop()
    open_database(db_url)


def import_dataset_into(db_url: str) -> None:
    from sowctl.storage.database import open_database

    open_database(db_url)
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
