"""GET /api/dependencies/chain (flat and tree), its issues, the critical path and the CI verdict."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput, NotFound
from sowctl.gate import risks
from sowctl.operations.chain import chain_body, read_report
from sowctl.schemas.dependencies import ChainFlat, ChainTree
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import graph, items, sows
from sowctl.services.access import Caller
from sowctl.storage import models as m

NOW = datetime(2026, 3, 16, 12, 0, 0)
MEMBER = Caller(user_id="user-ada", organization_id="acme", role="member")
OUTSIDER = Caller(user_id="u", organization_id="other", role="member")


@pytest.fixture(autouse=True)
def fixed_clock(db) -> None:
    clock.set_fixed_now(NOW)


def item(sow_id: str, title: str, kind: str = "task_item", parent: str | None = None) -> str:
    return items.create_item(MEMBER, sow_id, ItemCreate(title=title, type=kind, parent_item_id=parent)).id


def dep(source: str, target: str | None, dep_type: str = "depends_on", risk: str = "low", **extra) -> str:
    body = {"sourceItemId": source, "dependencyType": dep_type, "riskLevel": risk, **extra}
    if target is not None:
        body["targetItemId"] = target
    clock.set_fixed_now(clock.now() + timedelta(seconds=1))  # distinct createdAt: a known order
    return operations.call_local("deps.create", MEMBER, body=body)["id"]


def status(dep_id: str, new: str) -> None:
    operations.call_local("deps.update", MEMBER, {"dependencyId": dep_id}, body={"status": new})


EVERYTHING = "criticalPath,external"


def get_chain(
    sow_id: str, fmt: str | None = None, caller: Caller = MEMBER, include: str | None = EVERYTHING
) -> dict:
    query = {"sowId": sow_id} if fmt is None else {"sowId": sow_id, "format": fmt}
    if include is not None:
        query["include"] = include
    return operations.call_local("chain.get", caller, query=query)


def entry(
    dep_id: str, source: tuple[str, str], target: tuple[str | None, str], kind: str, risk: str, state: str
):
    """An entry of the plain body: the spec's fields only; an external target has only a title."""
    return {
        "id": dep_id,
        "sourceItem": {"id": source[0], "title": source[1]},
        "targetItem": {"title": target[1]} if target[0] is None else {"id": target[0], "title": target[1]},
        "dependencyType": kind,
        "riskLevel": risk,
        "status": state,
    }


def extended(plain: dict) -> dict:
    """The entry with include=external: isExternal, and externalTarget on an external one."""
    external = "id" not in plain["targetItem"]
    return {
        **plain,
        "isExternal": external,
        **({"externalTarget": plain["targetItem"]["title"]} if external else {}),
    }


@pytest.fixture
def site() -> dict[str, str]:
    """A small SOW: a requirement with two tasks, a third task, and deps of each kind."""
    sow_id = sows.create_sow(MEMBER, SowCreate(title="Tower A")).id
    frame = item(sow_id, "Frame", "requirement")
    steel = item(sow_id, "Erect steel", parent=frame)
    deck = item(sow_id, "Pour decks", parent=frame)
    roof = item(sow_id, "Roof")
    made = {"sow": sow_id, "frame": frame, "steel": steel, "deck": deck, "roof": roof}
    made["d1"] = dep(deck, steel, "depends_on", "critical")
    made["d2"] = dep(roof, deck, "prerequisite", "high", slaDate="2026-03-15")
    made["d3"] = dep(steel, None, "depends_on", "medium", externalTarget="Steel mill", slaDate="2026-03-01")
    made["d4"] = dep(roof, steel, "related_to", "critical")
    made["d5"] = dep(frame, roof, "blocks", "critical", slaDate="2026-01-01")
    status(made["d4"], "resolved")  # critical but settled: no longer an issue
    status(made["d5"], "cancelled")  # cancelled: neither an issue nor an ordering edge
    return made


def test_flat_chain_exactly(site) -> None:
    s = site
    body = get_chain(s["sow"])
    assert body == get_chain(s["sow"], "flat")  # flat is the default
    steel, deck, roof, frame = (
        (s["steel"], "Erect steel"),
        (s["deck"], "Pour decks"),
        (s["roof"], "Roof"),
        (s["frame"], "Frame"),
    )
    e1 = entry(s["d1"], deck, steel, "depends_on", "critical", "active")
    e2 = entry(s["d2"], roof, deck, "prerequisite", "high", "active")
    e3 = entry(s["d3"], steel, (None, "Steel mill"), "depends_on", "medium", "active")
    e4 = entry(s["d4"], roof, steel, "related_to", "critical", "resolved")
    e5 = entry(s["d5"], frame, roof, "blocks", "critical", "cancelled")
    plain = get_chain(s["sow"], include=None)
    assert plain == {  # the spec's fields, no more
        "sowId": s["sow"],
        "dependencies": [e1, e2, e3, e4, e5],
        "issues": {"circular": [], "overdue": [e2, e3], "critical": [e1]},
    }
    x1, x2, x3, x4, x5 = map(extended, (e1, e2, e3, e4, e5))
    assert body == {
        "sowId": s["sow"],
        "dependencies": [x1, x2, x3, x4, x5],
        "issues": {"circular": [], "overdue": [x2, x3], "critical": [x1]},
        "criticalPath": [s["steel"], s["deck"], s["roof"]],
    }
    assert get_chain(s["sow"], include="criticalPath") == {**plain, "criticalPath": body["criticalPath"]}
    json.dumps(body)  # the body is plain JSON
    ChainFlat.model_validate(body)  # and matches the shape documented in OpenAPI
    ChainFlat.model_validate(plain)


@pytest.mark.parametrize("include", ["bogus", "criticalPath,bogus", "criticalpath"])
def test_an_unknown_include_is_refused_naming_it(site, include: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        get_chain(site["sow"], include=include)
    assert (
        caught.value.message.startswith("include: unknown")
        and "criticalPath, external" in caught.value.message
    )


def test_tree_chain_nests_items_with_their_dependencies(site) -> None:
    s = site
    flat = get_chain(s["sow"])
    by_id = {e["id"]: e for e in flat["dependencies"]}
    tree = get_chain(s["sow"], "tree")
    assert set(tree) == {"sowId", "items", "issues", "criticalPath"}
    assert (tree["sowId"], tree["issues"], tree["criticalPath"]) == (
        s["sow"],
        flat["issues"],
        flat["criticalPath"],
    )
    ChainTree.model_validate(tree)

    def node(key: str, title: str, kind: str, state: str, deps: list[str], children: list[dict]) -> dict:
        return {
            "id": s[key],
            "title": title,
            "type": kind,
            "status": state,
            "dependencies": [by_id[s[d]] for d in deps],
            "children": children,
        }

    assert tree["items"] == [
        node(
            "frame",
            "Frame",
            "requirement",
            "pending",
            ["d5"],
            [
                node("steel", "Erect steel", "task_item", "pending", ["d3"], []),
                node("deck", "Pour decks", "task_item", "pending", ["d1"], []),
            ],
        ),
        node("roof", "Roof", "task_item", "pending", ["d2", "d4"], []),
    ]


def test_tree_shows_calculated_requirement_status(site) -> None:
    operations.call_local("items.update", MEMBER, {"itemId": site["steel"]}, body={"status": "completed"})
    (frame, _roof) = get_chain(site["sow"], "tree")["items"]
    assert frame["status"] == "in_progress"


def test_overdue_and_critical_need_an_open_status(site) -> None:
    status(site["d1"], "blocked")
    status(site["d2"], "resolved")
    dep(site["roof"], None, externalTarget="Due today", slaDate="2026-03-16")  # not overdue yet
    issues = get_chain(site["sow"])["issues"]
    assert [e["id"] for e in issues["critical"]] == [site["d1"]]
    assert [e["id"] for e in issues["overdue"]] == [site["d3"]]
    clock.set_fixed_now(datetime(2026, 2, 1))
    assert [e["id"] for e in get_chain(site["sow"])["issues"]["overdue"]] == []


def test_target_in_another_sow_shows_its_title(site) -> None:
    other = sows.create_sow(MEMBER, SowCreate(title="Tower B")).id
    elsewhere = item(other, "Crane base")
    made = dep(site["roof"], elsewhere)
    last = get_chain(site["sow"])["dependencies"][-1]
    assert last["id"] == made and last["targetItem"] == {"id": elsewhere, "title": "Crane base"}
    assert get_chain(other)["dependencies"] == []  # listed under the source item's SOW only


def test_empty_sow() -> None:
    sow_id = sows.create_sow(MEMBER, SowCreate(title="Empty")).id
    empty = {"circular": [], "overdue": [], "critical": []}
    assert get_chain(sow_id) == {"sowId": sow_id, "dependencies": [], "issues": empty, "criticalPath": []}
    assert get_chain(sow_id, "tree") == {"sowId": sow_id, "items": [], "issues": empty, "criticalPath": []}


def test_unknown_or_foreign_sow_is_404_and_bad_queries_400(site) -> None:
    with pytest.raises(NotFound):
        get_chain("nope")
    with pytest.raises(NotFound):
        get_chain(site["sow"], caller=OUTSIDER)
    with pytest.raises(InvalidInput) as caught:
        get_chain(site["sow"], "graph")
    assert caught.value.message == "format: must be one of: flat, tree"
    with pytest.raises(InvalidInput) as caught:
        operations.call_local("chain.get", MEMBER, query={})
    assert caught.value.message == "sowId: is required"


def test_chain_route_is_declared_before_the_dependency_route() -> None:
    """The server matches routes in registry order: the literal /chain must come first."""
    operations.load_all()
    paths = [op.path for op in operations.REGISTRY.values()]
    assert paths.index("/api/dependencies/chain") < paths.index("/api/dependencies/{dependencyId}")


# --- cycles found in stored data (an import may bring them) ------------------------------------


def insert_raw(
    sow_id: str, source: str, target: str, dep_type: str = "depends_on", state: str = "active"
) -> str:
    """A dependency row written as an importer would, bypassing the API's cycle check."""
    dep_id = clock.new_id()
    edge = graph.ordering_edge(dep_type, source, target, state, False)
    m.Dependency.create(
        id=dep_id,
        sow=sow_id,
        source_item=source,
        target_item=target,
        dependency_type=dep_type,
        risk_level="low",
        status=state,
        created_at=clock.now(),
        before_item_id=edge[0] if edge else None,
        after_item_id=edge[1] if edge else None,
    )
    return dep_id


def test_circular_lists_stored_cycles_in_waits_for_order() -> None:
    sow_id = sows.create_sow(MEMBER, SowCreate(title="Imported")).id
    a, b, c, d, e, f = (item(sow_id, name) for name in "ABCDEF")
    insert_raw(sow_id, a, b)  # A on B
    insert_raw(sow_id, b, c)  # B on C
    insert_raw(sow_id, c, a)  # C on A: a 3-cycle
    insert_raw(sow_id, d, e, "blocks")  # D before E
    insert_raw(sow_id, d, e)  # E before D: a 2-cycle
    insert_raw(sow_id, f, a, "blocks", "cancelled")  # ignored
    insert_raw(sow_id, f, a)  # A before F: outside any cycle
    body = get_chain(sow_id)
    three = [a, b, c]
    start = three.index(min(three))
    two = [d, e] if d < e else [e, d]
    assert sorted(body["issues"]["circular"]) == sorted([three[start:] + three[:start], two])
    # Edges inside cycles do not count towards the critical path; A -> F does.
    assert body["criticalPath"] == [a, f]


@pytest.mark.slow  # a stress test (50 s on a loaded CI machine)
@pytest.mark.usefixtures("unhurried_database")
def test_deep_chain_is_reported_without_recursion() -> None:
    """6,000 items in one ordering chain closed into a cycle, inserted in bulk."""
    sow_id = sows.create_sow(MEMBER, SowCreate(title="Deep")).id
    ids = [f"deep-{n:05d}" for n in range(6000)]
    with m.database_proxy.atomic():
        m.Item.insert_many(
            [
                {
                    "id": i,
                    "sow": sow_id,
                    "type": "task_item",
                    "title": i,
                    "created_at": NOW,
                    "updated_at": NOW,
                }
                for i in ids
            ]
        ).execute()
        rows = [
            {
                "id": f"dep-{n:05d}",
                "sow": sow_id,
                "source_item": ids[n + 1],
                "target_item": ids[n],
                "dependency_type": "depends_on",
                "risk_level": "low",
                "created_at": NOW,
                "before_item_id": ids[n],
                "after_item_id": ids[n + 1],
            }
            for n in range(len(ids) - 1)
        ]
        for start in range(0, len(rows), 500):
            m.Dependency.insert_many(rows[start : start + 500]).execute()
    body = get_chain(sow_id)
    assert body["criticalPath"] == ids and body["issues"]["circular"] == []
    # Closing it through the API is refused, naming all 6,000 items.
    with pytest.raises(InvalidInput) as caught:
        dep(ids[0], ids[-1])
    # Each item waits for the one before it, and the first for the last.
    assert caught.value.path == [*reversed(ids), ids[-1]]
    insert_raw(sow_id, ids[0], ids[-1])  # as an import might
    (cycle,) = get_chain(sow_id)["issues"]["circular"]
    assert cycle[0] == ids[0] and len(cycle) == 6000
    assert get_chain(sow_id)["criticalPath"] == []


# --- the CI verdict ----------------------------------------------------------------------------


def test_parse_fail_on() -> None:
    assert risks.parse_fail_on(None) == ("circular", "critical", "overdue")
    assert risks.parse_fail_on("blocked, Critical,blocked") == ("blocked", "critical")
    assert risks.parse_fail_on("escalation,conflict,external") == ("escalation", "conflict", "external")
    for bad in ("late", "", " , "):
        with pytest.raises(InvalidInput) as caught:
            risks.parse_fail_on(bad)
        assert caught.value.message.startswith("--fail-on: ")


def test_check_chain_counts_every_kind_and_fails_only_on_the_named_ones(site) -> None:
    status(site["d2"], "blocked")
    report = get_chain(site["sow"], include="external,risks")
    summary = risks.check_chain(read_report(report), ("circular",))
    assert summary["counts"] == {
        "circular": 0, "critical": 1, "overdue": 2, "blocked": 1,
        "escalation": 0, "conflict": 0, "external": 0,
    }  # fmt: skip
    assert summary["issues"]["critical"] == report["issues"]["critical"]
    assert summary["issues"]["overdue"] == report["issues"]["overdue"]
    assert summary["issues"]["blocked"] == [e for e in report["dependencies"] if e["id"] == site["d2"]]
    assert (summary["failOn"], summary["passed"]) == (["circular"], True)
    assert risks.check_chain(read_report(report), ("blocked",))["passed"] is False
    assert risks.check_chain(read_report(report))["passed"] is False


def test_a_body_read_back_is_the_report_it_was_made_of(site) -> None:
    """Remote mode's gate reads the server's body back into a report: made into a body
    again, it gives the same body, and the gate the same verdict as on the report made
    in process."""
    status(site["d2"], "blocked")
    query = {"sowId": site["sow"], "include": "external,risks"}
    body = get_chain(site["sow"], include="external,risks")
    read = read_report(body)
    assert chain_body(read, ("external", "risks")) == body
    made = operations.call_local_typed("chain.get", MEMBER, query=query)
    assert (read.sow_id, read.as_of, read.overdue, read.critical) == (
        made.sow_id, made.as_of, made.overdue, made.critical,
    )  # fmt: skip
    assert risks.check_chain(read, risks.RISK_KINDS) == risks.check_chain(made, risks.RISK_KINDS)
    with pytest.raises(InvalidInput, match="format=flat or tree"):
        read_report({"sowId": site["sow"], "issues": {"circular": [], "overdue": [], "critical": []}})


def test_a_tree_body_read_back_is_the_report_it_was_made_of(site) -> None:
    """chain ready and chain blocked judge the tree report: read back from the server's body
    (remote mode) it gives the same body again, and the same ready and waiting items as the
    report made in process."""
    status(site["d3"], "resolved")  # the steel no longer waits for the mill
    include = "external,risks,criticalPath"
    query = {"sowId": site["sow"], "format": "tree", "include": include}
    body = get_chain(site["sow"], "tree", include=include)
    read = read_report(body)
    assert chain_body(read, tuple(include.split(","))) == body
    made = operations.call_local_typed("chain.get", MEMBER, query=query)
    found = risks.readiness(made)
    assert risks.readiness(read) == found
    assert [row["id"] for row in found["ready"]] == [site["steel"]]
    assert found["waiting"] == [
        {
            "id": site["deck"],
            "title": "Pour decks",
            "status": "pending",
            "waitsFor": [
                {
                    "dependencyId": site["d1"],
                    "itemId": site["steel"],
                    "title": "Erect steel",
                    "status": "pending",
                }
            ],
        },
        {
            "id": site["roof"],
            "title": "Roof",
            "status": "pending",
            "waitsFor": [
                {
                    "dependencyId": site["d2"],
                    "itemId": site["deck"],
                    "title": "Pour decks",
                    "status": "pending",
                }
            ],
        },
    ]
    flat = operations.call_local_typed("chain.get", MEMBER, query=query | {"format": "flat"})
    with pytest.raises(InvalidInput, match="format=tree"):
        risks.readiness(flat)
    with pytest.raises(InvalidInput, match="include=external,risks"):
        risks.readiness(
            operations.call_local_typed("chain.get", MEMBER, query=query | {"include": "external"})
        )


# --- with the dataset importer ------------------------------------------------------------------


def test_imported_demo_data_and_an_imported_cycle() -> None:
    from sowctl.services import dataset, demo_data

    dataset.import_dataset(demo_data.demo_dataset(NOW.date()))
    local = Caller.local()
    body = operations.call_local("chain.get", local, query={"sowId": demo_data.DEMO_SOW})
    assert [e["id"] for e in body["issues"]["critical"]] == [demo_data.DEMO_CRITICAL_DEPENDENCY]
    assert [e["id"] for e in body["issues"]["overdue"]] == [demo_data.DEMO_OVERDUE_DEPENDENCY]
    assert body["issues"]["circular"] == []
    # The importer fills the ordering columns, so the API's check sees imported edges:
    # dep-006 says item-010 depends on item-009; the reverse closes a cycle.
    body = {"sourceItemId": "item-009", "targetItemId": "item-010", "dependencyType": "depends_on"}
    with pytest.raises(InvalidInput) as caught:
        operations.call_local("deps.create", local, body={**body, "riskLevel": "low"})
    assert caught.value.message == "circular dependency: item-010 -> item-009 -> item-010"

    # An import may bring a cycle (it does not reject them); the chain reports it.
    looped = {
        "sows": [{"id": "sow-loop", "projectId": demo_data.PROJECT_TOWER_A, "title": "Loop"}],
        "items": [
            {"id": f"loop-{n}", "sowId": "sow-loop", "title": f"Loop {n}", "type": "task_item"}
            for n in (1, 2)
        ],
        "dependencies": [
            {"id": "loop-dep-1", "sourceItemId": "loop-1", "targetItemId": "loop-2",
             "dependencyType": "depends_on", "riskLevel": "low", "status": "active"},
            {"id": "loop-dep-2", "sourceItemId": "loop-2", "targetItemId": "loop-1",
             "dependencyType": "depends_on", "riskLevel": "low", "status": "active"},
        ],
    }  # fmt: skip
    dataset.import_dataset(looped)  # stored data may hold cycles: the importer accepts them
    chain_body = operations.call_local("chain.get", local, query={"sowId": "sow-loop"})
    assert chain_body["issues"]["circular"] == [["loop-1", "loop-2"]]
