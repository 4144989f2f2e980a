"""``serve --record FILE`` and ``sowctl replay FILE``: a session written down and played again."""

from __future__ import annotations

import json
import multiprocessing
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from sowctl.backends import replay as service
from sowctl.foundation.errors import InvalidInput
from sowctl.server.testdouble.recorder import Recorder
from sowctl.services.access import Caller
from tests.support.client import remote_backend
from tests.support.doubles import (
    COMPANY,
    ORG,
    SOW,
    bearer,
    dataset,
)

CLOCK = "2026-01-01T00:00:00Z"
PROJECT_UUID = "abbe5264-4eb1-5dfa-b9a9-8c1bb5169ea4"
PO_BODY = {
    "project_id": "101",
    "commitment_id": "5001",
    "title": "Upper tier steel",
    "vendor_id": 7,
    "status": "draft",
    "line_items": [{"description": "Columns", "amount": "0.10", "cost_code_id": 3}],
}


def prepare(db: Path) -> dict[str, str]:
    """A database holding the demo dataset, and a token and API key made outside any server."""
    from sowctl.foundation import clock
    from sowctl.services import credentials
    from sowctl.services.dataset import import_dataset
    from sowctl.storage.database import open_database

    database = open_database(db)
    try:
        clock.set_fixed_now(clock.parse_timestamp(CLOCK))  # timestamps the dataset lacks: the same everywhere
        import_dataset(dataset())
        clock.set_fixed_now(None)
        return {
            "token": credentials.create_token("user-ada", ORG, "member").secret,
            "key": credentials.create_key(ORG).secret,
        }
    finally:
        database.close()


def export(db: Path) -> dict[str, Any]:
    from sowctl.services.dataset import export_dataset
    from sowctl.storage.database import open_database

    database = open_database(db)
    try:
        return export_dataset()
    finally:
        database.close()


def record_session(client: httpx.Client, credentials: dict[str, str]) -> int:
    """Writes of every kind (and a few reads and failures, which are not recorded); returns the writes."""
    auth = bearer(credentials["token"])
    writes = 0

    def write(method: str, path: str, body: Any = None, headers: dict | None = None) -> Any:
        nonlocal writes
        response = client.request(method, path, json=body, headers=headers or auth)
        assert response.status_code < 300, response.text
        writes += 1
        return response.json()

    sow = write("POST", "/api/sows", {"title": "Recorded", "projectId": PROJECT_UUID})
    parent = write("POST", f"/api/sow/{sow['id']}/items", {"title": "R", "type": "requirement"})
    task = write(
        "POST",
        f"/api/sow/{sow['id']}/items",
        {"title": "T", "type": "task_item", "parentItemId": parent["id"]},
    )
    other = write("POST", f"/api/sow/{sow['id']}/items", {"title": "U", "type": "task_item"})
    doomed = write("POST", f"/api/sow/{sow['id']}/items", {"title": "V", "type": "task_item"})
    dep = write(
        "POST",
        "/api/dependencies",
        {
            "sourceItemId": task["id"],
            "targetItemId": other["id"],
            "dependencyType": "blocks",
            "riskLevel": "low",
        },
    )
    write("PUT", f"/api/dependencies/{dep['id']}", {"notes": "agreed"})
    write("PUT", f"/api/items/{task['id']}", {"status": "completed"})
    write("PUT", f"/api/sow/{sow['id']}/items/reorder", {"items": [{"id": other["id"], "orderIndex": 7}]})
    write("DELETE", f"/api/items/{doomed['id']}")
    scope = {"x-api-key": credentials["key"], "organization-id": ORG, "company-id": COMPANY}
    write("POST", "/api/external/create-purchase-order", PO_BODY, scope)
    # not recorded: reads and failures
    assert client.get(f"/api/sow/{sow['id']}/items", headers=auth).status_code == 200
    assert (
        client.post(
            f"/api/sow/{sow['id']}/items", json={"title": "x", "type": "epic"}, headers=auth
        ).status_code
        == 400
    )
    assert client.delete("/api/items/no-such-item", headers=auth).status_code == 404
    return writes


@pytest.mark.slow
def test_record_then_replay_reproduces_the_database(serve, tmp_path: Path, cli) -> None:
    recorded_db, record = tmp_path / "recorded.db", tmp_path / "session.jsonl"
    credentials = prepare(recorded_db)
    server = serve(recorded_db, "--seed", "11", "--clock", CLOCK, "--record", str(record))
    writes = record_session(server.client, credentials)
    assert server.stop() == 0

    assert stat.S_IMODE(record.stat().st_mode) == 0o600  # bodies are business data
    text = record.read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == writes
    assert credentials["token"] not in text and credentials["key"] not in text
    first, last = lines[0], lines[-1]
    assert first["method"] == "POST" and first["path"] == "/api/sows" and first["status"] == 201
    assert first["identity"] == {"userId": "user-ada", "organizationId": ORG, "role": "member"}
    assert first["at"] == CLOCK and isinstance(first["responseId"], str) and first["group"] == "A"
    assert last["group"] == "B" and last["identity"]["companyId"] == COMPANY
    assert set(last["identity"]) == {"apiKeyId", "organizationId", "companyId"}
    assert last["body"] == PO_BODY and isinstance(last["responseId"], int)

    # same seed and clock: the very same ids and timestamps
    same_db = tmp_path / "same.db"
    prepare(same_db)
    result = cli("--db", str(same_db), "replay", str(record), "--seed", "11", "--clock", CLOCK)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{writes} replayed, 0 failed\n"
    assert export(same_db) == export(recorded_db)

    # no seed: new ids, mapped so that later requests find what earlier ones created
    mapped_db = tmp_path / "mapped.db"
    prepare(mapped_db)
    result = cli("--db", str(mapped_db), "replay", str(record), "--json")
    assert result.exit_code == 0, result.stderr
    summary = result.json()
    assert (summary["replayed"], summary["failed"], summary["skipped"]) == (writes, 0, 0)
    assert len(summary["ids"]) == 6  # the SOW, four items, the dependency
    recorded, mapped = export(recorded_db), export(mapped_db)
    for kind in recorded:
        assert len(mapped[kind]) == len(recorded[kind]), kind
    assert sorted(i["title"] for i in mapped["items"]) == sorted(i["title"] for i in recorded["items"])
    new_dep = next(d for d in mapped["dependencies"] if d.get("notes") == "agreed")
    assert new_dep["sourceItemId"] == summary["ids"][lines[2]["responseId"]]

    # replaying again into the same database: the seeded ids exist already
    again = cli("--db", str(same_db), "replay", str(record), "--seed", "11")
    assert again.exit_code == 2
    assert again.stdout == f"0 replayed, 1 failed, {writes - 1} not attempted\n"
    assert again.stderr.startswith("error: line 1: POST /api/sows: id: SOW ")
    keep_going = cli(
        "--db", str(same_db), "replay", str(record), "--seed", "11", "--continue-on-error", "--json"
    )
    assert keep_going.exit_code == 2  # the first failure's exit code
    summary = keep_going.json()
    assert summary["failed"] >= 1 and summary["replayed"] + summary["failed"] == writes


def test_replay_against_a_server(db_url: str, tmp_path: Path) -> None:
    from sowctl.backends.settings import Settings
    from sowctl.server.app import create_app

    record = tmp_path / "session.jsonl"
    item = {"title": "Remote", "type": "requirement"}
    lines = [
        {"method": "POST", "path": f"/api/sow/{SOW}/items", "body": item, "responseId": "item-recorded"},
        {
            "method": "POST",
            "path": f"/api/sow/{SOW}/items",
            "body": {"title": "Child", "type": "task_item", "parentItemId": "item-recorded"},
        },
        {"method": "PUT", "path": "/api/items/item-recorded", "body": {"title": "Renamed"}},
        {
            "method": "POST",
            "path": "/api/external/create-purchase-order",
            "body": PO_BODY,
            "identity": {"apiKeyId": "k", "organizationId": ORG, "companyId": COMPANY},
        },
    ]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    app = create_app(db_url)
    credentials = _prepare_current()
    backend = remote_backend(
        app, Settings(server="http://double.test", token=credentials["token"], api_key=credentials["key"])
    )
    outcome = service.replay(service.read_file(record), service.remote_runner(backend))
    assert outcome.summary()["failed"] == 0 and outcome.replayed == 4
    new_id = outcome.ids["item-recorded"]
    renamed = backend.call("items.get", {"itemId": new_id})
    assert renamed["title"] == "Renamed"
    children = backend.call("items.list", {"sowId": SOW}, {"parentId": new_id})
    assert [child["title"] for child in children] == ["Child"]


def _prepare_current() -> dict[str, str]:
    from sowctl.services import credentials
    from sowctl.services.dataset import import_dataset

    import_dataset(dataset())
    return {
        "token": credentials.create_token("user-ada", ORG, "member").secret,
        "key": credentials.create_key(ORG).secret,
    }


def test_replay_options_for_local_mode_only(cli, tmp_path: Path) -> None:
    record = tmp_path / "empty.jsonl"
    record.write_text("")
    result = cli("--server", "http://127.0.0.1:9", "replay", str(record), "--seed", "1")
    assert result.exit_code == 2 and "local mode" in result.stderr


def test_replay_stops_at_the_first_failure_with_its_exit_code(cli, tmp_path: Path) -> None:
    record = tmp_path / "broken.jsonl"
    lines = [
        {"method": "PUT", "path": "/api/items/missing", "body": {"title": "x"}},
        {"method": "POST", "path": "/api/sows", "body": {"title": "never"}},
    ]
    record.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = cli("replay", str(record))
    assert result.exit_code == 3
    assert result.stdout == "0 replayed, 1 failed, 1 not attempted\n"
    assert result.stderr == "error: line 1: PUT /api/items/missing: item missing not found\n"


# --- the pieces -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"method": "POST", "path": "/api/sows"}\n{oops\n', "the record file, line 2: not valid JSON"),
        ('{"path": "/api/sows"}\n', "the record file, line 1: method: is required"),
        ("[1]\n", "the record file, line 1: must be a JSON object"),
        ('{"method": "GET", "path": "/x", "query": []}\n', "the record file, line 1: query and identity"),
    ],
)
def test_malformed_record_lines_are_named(text: str, error: str) -> None:
    with pytest.raises(InvalidInput) as info:
        service.read_entries(text.splitlines())
    assert info.value.message.startswith(error)


def test_blank_lines_are_skipped() -> None:
    entries = service.read_entries(['{"method": "post", "path": "/api/sows"}', "", "  "])
    assert [(e.line, e.method) for e in entries] == [(1, "POST")]


@pytest.mark.parametrize(
    ("method", "path", "name", "params"),
    [
        ("PUT", "/api/sow/s1/items/reorder", "items.reorder", {"sowId": "s1"}),
        ("PUT", "/api/items/i1", "items.update", {"itemId": "i1"}),
        ("POST", "/api/sow/s1/items", "items.create", {"sowId": "s1"}),
        ("GET", "/api/dependencies/chain", "chain.get", {}),
        ("DELETE", "/api/dependencies/d1", "deps.delete", {"dependencyId": "d1"}),
        ("POST", "/api/external/create-purchase-order", "finance.create_po", {}),
    ],
)
def test_operations_are_found_by_method_and_path(method: str, path: str, name: str, params: dict) -> None:
    op, found = service.find_operation(method, path)
    assert (op.name, found) == (name, params)


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/api/nothing"), ("PATCH", "/api/items/i1"), ("PUT", "/api/items/")]
)
def test_unknown_operations(method: str, path: str) -> None:
    with pytest.raises(InvalidInput, match="no API operation"):
        service.find_operation(method, path)


def test_id_map_rewrites_paths_queries_and_bodies() -> None:
    ids = service.IdMap()
    ids.learn("old", "new")
    ids.learn("same", "same")
    ids.learn(5, 6)  # numeric ids (purchase orders) are never rewritten
    assert ids.ids == {"old": "new"}
    assert ids.path("/api/items/old") == "/api/items/new"
    assert ids.value({"a": ["old", {"b": "old"}, "older"], "n": 5}) == {
        "a": ["new", {"b": "new"}, "older"],
        "n": 5,
    }


def test_callers_from_recorded_identities() -> None:
    assert service.caller_for(None) == (Caller.local(), None)
    assert service.caller_for({"userId": "u", "organizationId": "o", "role": "viewer"}) == (
        Caller("u", "o", "viewer"),
        None,
    )
    assert service.caller_for({"apiKeyId": "k", "organizationId": "o", "companyId": "c"}) == (
        Caller(None, "o", "member"),
        "c",
    )


def _append_many(path: str, worker: int) -> None:
    recorder = Recorder(path)
    for index in range(100):
        recorder.append({"worker": worker, "index": index, "body": "x" * 20_000})


def test_the_recorder_never_interleaves_lines(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.jsonl")
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_append_many, args=(path, worker)) for worker in range(3)]
    for process in processes:
        process.start()
    _append_many(path, 3)
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    lines = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert len(lines) == 400
    assert {(line["worker"], line["index"]) for line in lines} == {
        (w, i) for w in range(4) for i in range(100)
    }
