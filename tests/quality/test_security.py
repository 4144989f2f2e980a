"""Security: secrets are random, stored only as hashes, compared in constant time and never
shown or logged; one organization never reads or changes another's data through any route;
CORS is off unless asked for; the config file holding secrets is private.
"""

from __future__ import annotations

import datetime
import hashlib
import inspect
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.operations import Operation
from sowctl.server.configuration import ServerSettings
from sowctl.services import credentials, demo_data, token_reads
from sowctl.services.dataset import export_dataset, import_dataset
from sowctl.storage import models as m
from sowctl.storage.database import open_database
from tests.support.client import app_client
from tests.support.raw_wsgi import (
    OPS,
    PARAM_IDS,
    VALID_BODY,
    VALID_QUERY,
    Env,
    dump,
    ids,
    make_env,
    query_params,
)
from tests.support.server import Server

pytestmark = pytest.mark.database  # what is stored, and each organization's rows, on each backend

DEMO = demo_data.demo_dataset(datetime.date(2026, 1, 15))
GLOBEX_ITEMS = {item["id"] for item in DEMO["items"] if item["sowId"] == demo_data.GLOBEX_SOW}


# --- secrets: random, hashed, compared in constant time ----------------------------------------


def test_secrets_come_from_the_os_generator_with_at_least_128_bits(
    db, monkeypatch: pytest.MonkeyPatch
) -> None:
    m.Organization.create(id="org-s", name="S")
    requested: list[int] = []
    real = clock.secrets.token_urlsafe

    def spy(nbytes: int) -> str:
        requested.append(nbytes)
        return real(nbytes)

    monkeypatch.setattr(clock.secrets, "token_urlsafe", spy)
    token = credentials.create_token("user-s", "org-s").secret
    key = credentials.create_key("org-s").secret
    assert requested and all(nbytes >= 16 for nbytes in requested), requested  # 16 bytes = 128 bits
    for secret, prefix in ((token, credentials.TOKEN_PREFIX), (key, credentials.KEY_PREFIX)):
        body = secret.removeprefix(prefix)
        assert secret.startswith(prefix) and len(body) * 6 >= 128  # URL-safe base64: 6 bits a character
    many = {clock.new_secret("x_") for _ in range(2000)}
    assert len(many) == 2000
    assert clock._rng is None  # real randomness unless `serve --seed` asks otherwise


def test_the_generator_is_the_secrets_module() -> None:
    source = inspect.getsource(clock.new_secret)
    assert "secrets.token_urlsafe(" in source and "random.Random" not in source.split("if _rng")[0]


def test_authentication_compares_in_constant_time() -> None:
    # Every bearer token is judged by token_caller, alone (authenticate_token) or read with
    # the record a request reads (services.token_reads.item_for_token).
    for function in (
        credentials.authenticate_token,
        token_reads.item_for_token,
        credentials.authenticate_key,
    ):
        assert "hash_secret(" in inspect.getsource(function)
    for function in (credentials.authenticate_token, token_reads.item_for_token):
        assert "token_caller(" in inspect.getsource(function)
    for function in (credentials.token_caller, credentials.authenticate_key):
        assert "hmac.compare_digest(" in inspect.getsource(function)
    from sowctl.server.testdouble import admin_api  # the /_admin API has a token of its own

    assert "hmac.compare_digest(" in inspect.getsource(admin_api.AdminApi)


def test_secrets_are_stored_only_as_hashes(db_url: str, db) -> None:
    import_dataset(DEMO)
    issued = [
        credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, role).secret
        for role in ("viewer", "member", "admin")
    ] + [credentials.create_key(demo_data.DEMO_ORG).secret for _ in range(2)]
    credentials.revoke_token(issued[0])
    everything = dump() + json.dumps([list(row) for row in m.RateCounter.select().tuples()])
    everything += json.dumps(export_dataset())
    for secret in issued:
        assert secret not in everything
        assert secret[9:] not in everything  # not even the part after the listing hint
        assert hashlib.sha256(secret.encode()).hexdigest() in everything  # what is stored instead
    if not db_url.startswith("postgres"):  # the SQLite file, its WAL and shared memory, on disk
        raw = b"".join(
            Path(db_url + suffix).read_bytes()
            for suffix in ("", "-wal", "-shm")
            if Path(db_url + suffix).exists()
        )
        assert Path(db_url + "-wal").exists()
        for secret in issued:
            assert secret.encode() not in raw and secret[9:].encode() not in raw


def test_listings_show_only_a_short_hint(cli, db_url: str) -> None:
    database = open_database(db_url)
    import_dataset(DEMO)
    database.close()
    token = cli("tokens", "create", "--user", "user-ada", "--org", demo_data.DEMO_ORG).stdout.strip()
    key = cli("keys", "create", "--org", demo_data.DEMO_ORG).stdout.strip()
    assert token.startswith("sowt_") and key.startswith("sowk_")
    for args in (
        ["tokens", "list"],
        ["tokens", "list", "--json"],
        ["keys", "list"],
        ["keys", "list", "--json"],
        ["export"],
    ):
        result = cli(*args)
        assert result.exit_code == 0, result.stderr
        for secret in (token, key):
            assert secret not in result.stdout + result.stderr and secret[9:] not in result.stdout
    hints = [row["token"] for row in cli("tokens", "list", "--json").json()]
    assert hints and all(len(hint.rstrip("…")) <= 9 for hint in hints)
    # revoking by the secret itself works and does not echo it
    revoked = cli("tokens", "revoke", token)
    assert revoked.exit_code == 0 and token not in revoked.stdout + revoked.stderr


# --- secrets never in the logs -----------------------------------------------------------------


@pytest.mark.slow  # a real server; tests/quality/test_redaction.py checks the redaction in process
def test_secrets_never_reach_the_logs_of_a_real_server(db_url: str, tmp_path: Path) -> None:
    database = open_database(db_url)
    import_dataset(DEMO)
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
    key = credentials.create_key(demo_data.DEMO_ORG).secret
    database.close()
    admin_token = "adm_" + os.urandom(16).hex()
    record = tmp_path / "record.jsonl"
    server = Server(
        db_url, "--admin-token", admin_token, "--record", str(record), "--threads", "2", quiet=False
    )  # access log on (no --quiet)
    secrets = [token, key, admin_token]
    scope = {"x-organization-id": demo_data.DEMO_ORG, "x-company-id": demo_data.DEMO_COMPANY}
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            bearer = {"Authorization": f"Bearer {token}"}
            sow = demo_data.DEMO_SOW
            assert client.get(f"/api/sow/{sow}/items", headers=bearer).status_code == 200
            assert client.get(f"/api/sow/{sow}/items?token={token}", headers=bearer).status_code == 200
            assert client.get(f"/api/sow/{sow}/items", params={"access_token": token}).status_code == 401
            assert client.get(f"/api/items/{quote(token)}", headers=bearer).status_code == 404
            assert client.get("/projects", params={"api_key": key}, headers=bearer).status_code == 200
            assert client.get("/projects", params={"q": token}, headers=bearer).status_code == 200
            created = client.post(
                f"/api/sow/{sow}/items?token={token}&x-api-key={key}",
                json={"title": "logged?", "type": "task_item"},
                headers=bearer,
            )
            assert created.status_code == 201, created.text
            views = client.get(
                "/api/external/budget-views",
                params={"project_id": demo_data.DEMO_PROJECT_ID, "api_key": key},
                headers={"x-api-key": key, **scope},
            )
            assert views.status_code == 200
            bad = client.get("/projects", headers={"Authorization": f"Bearer {token}x"})
            assert bad.status_code == 401 and token not in bad.text
            admin = {"Authorization": f"Bearer {admin_token}"}
            log = client.get("/_admin/requests", params={"limit": 100}, headers=admin)
            assert log.status_code == 200, log.text  # the admin API's request log: masked
            assert len(log.json()) >= 8
            for secret in secrets:
                assert secret not in log.text
            for odd in ("\u00b2", "\u0661", "-1", "1e3"):  # superscript two, Arabic-Indic one
                reply = client.get("/_admin/requests", params={"limit": odd}, headers=admin)
                assert reply.status_code == 400, (odd, reply.text)
    finally:
        assert server.stop() == 0
    output = "\n".join(server.stdout_lines + server.stderr_lines)
    assert "/api/sow/" in output and "/projects" in output  # the access log is on
    assert "Traceback" not in output
    for secret in secrets:
        assert secret not in output, [line for line in server.stderr_lines if secret in line]
        assert secret[5:] not in output
    text = record.read_text()  # --record wrote every exchange
    assert "logged?" in text
    for secret in secrets:
        assert secret not in text


# --- one organization never sees another's data --------------------------------------------------

ACME_TEXT_IDS = (
    {sow["id"] for sow in DEMO["sows"] if sow["id"] != demo_data.GLOBEX_SOW}
    | {item["id"] for item in DEMO["items"] if item["id"] not in GLOBEX_ITEMS}
    | {dep["id"] for dep in DEMO["dependencies"] if dep["sourceItemId"] not in GLOBEX_ITEMS}
    | {p["id"] for p in DEMO["projects"] if p["organizationId"] == demo_data.DEMO_ORG}
    | {c["id"] for c in DEMO["clients"] if c["organizationId"] == demo_data.DEMO_ORG}
    | {
        c["id"]
        for client in DEMO["clients"]
        if client["organizationId"] == demo_data.DEMO_ORG
        for c in client.get("contacts", [])
    }
    | {demo_data.DEMO_ORG, demo_data.DEMO_COMPANY}
)
ACME_FILTERS = {
    "sowId": demo_data.DEMO_SOW,
    "itemId": "item-002",
    "parentId": "item-001",
    "projectId": demo_data.PROJECT_TOWER_A,
    "clientId": demo_data.CLIENT_NORTHWIND,
}


@pytest.fixture
def orgs(migrated_db_url: str) -> Iterator[tuple[Env, str, str]]:
    """The demo data with a member token and an API key of org-globex (and org-acme's)."""
    env = make_env(migrated_db_url)
    globex_token = credentials.create_token("user-hank", demo_data.GLOBEX_ORG, "admin").secret
    globex_key = credentials.create_key(demo_data.GLOBEX_ORG).secret
    yield env, globex_token, globex_key
    m.database_proxy.obj.close()


def leaked(text: str) -> set[str]:
    return {record_id for record_id in ACME_TEXT_IDS if f'"{record_id}"' in text}


def foreign_send(env: Env, op: Operation, token: str, key: str, scope: str, **kwargs: Any):
    """``op``'s valid request on org-acme's records, sent with org-globex's credentials."""
    if op.group == "B":
        org, company = (
            (demo_data.DEMO_ORG, demo_data.DEMO_COMPANY)
            if scope == "acme"
            else (demo_data.GLOBEX_ORG, demo_data.GLOBEX_COMPANY)
        )
        names = (
            ("organization-id", "company-id")
            if "create-purchase" in op.path
            else (
                "x-organization-id",
                "x-company-id",
            )
        )
        headers = {"x-api-key": key, names[0]: org, names[1]: company}
    else:
        headers = {"Authorization": f"Bearer {token}"}
    saved = env.auth
    env.auth = lambda _op: headers  # type: ignore[method-assign]
    try:
        return env.send(op, **kwargs)
    finally:
        env.auth = saved  # type: ignore[method-assign]


@pytest.mark.parametrize("op", OPS, ids=ids)
def test_another_organization_gets_404_or_nothing_on_every_route(orgs, op: Operation) -> None:
    env, token, key = orgs
    before = dump()
    scopes = ["acme", "globex"] if op.group == "B" else ["-"]
    for scope in scopes:
        replies = [foreign_send(env, op, token, key, scope)]
        for name in query_params(op):
            if name in ACME_FILTERS:
                query = {**VALID_QUERY.get(op.name, {}), name: ACME_FILTERS[name]}
                replies.append(foreign_send(env, op, token, key, scope, query=query))
        for reply in replies:
            text = reply.body.decode()
            if op.write or op.path_params or op.group == "B":
                assert reply.status == 404, (scope, reply.status, text[:300])
            else:
                assert reply.status in (200, 404), text[:300]
            assert not leaked(text), (scope, leaked(text))
    assert dump() == before


def test_lists_of_another_organization_hold_only_its_own_records(orgs) -> None:
    env, token, _ = orgs
    bearer = {"Authorization": f"Bearer {token}"}
    env.auth = lambda _op: bearer  # type: ignore[method-assign]
    items = env.send(operations.get("items.list"), params={"sowId": demo_data.GLOBEX_SOW}).json()
    assert {item["id"] for item in items} == GLOBEX_ITEMS  # the token works on its own data
    deps = env.send(operations.get("deps.list"), query={"limit": "100"}).json()
    assert deps and all(dep["sourceItemId"] in GLOBEX_ITEMS for dep in deps)
    projects = env.send(operations.get("projects.list"), query={}).json()
    assert projects["total"] == len(projects["projects"]) >= 1
    assert {p["organizationId"] for p in projects["projects"]} == {demo_data.GLOBEX_ORG}
    clients = env.send(operations.get("clients.list"), query={}).json()
    assert {c["organizationId"] for c in clients["clients"]} == {demo_data.GLOBEX_ORG}
    sows = env.send(operations.get("sows.list"), query={}).json()
    assert {sow["id"] for sow in sows} == {demo_data.GLOBEX_SOW}


def test_guessing_ids_finds_nothing_foreign(orgs) -> None:
    env, token, _ = orgs
    env.auth = lambda _op: {"Authorization": f"Bearer {token}"}  # type: ignore[method-assign]
    for number in range(1, 40):
        reply = env.send(operations.get("items.get"), params={"itemId": f"item-{number:03d}"})
        expected = 200 if f"item-{number:03d}" in GLOBEX_ITEMS else 404
        assert reply.status == expected
        dep = env.send(operations.get("deps.get"), params={"dependencyId": f"dep-{number:03d}"})
        assert dep.status == 404 or dep.json()["sourceItemId"] in GLOBEX_ITEMS


def test_bulk_and_cross_references_cannot_reach_another_organization(orgs) -> None:
    env, token, key = orgs
    before = dump()
    env.auth = lambda _op: {"Authorization": f"Bearer {token}"}  # type: ignore[method-assign]
    own = sorted(GLOBEX_ITEMS)
    # reorder in its own SOW, with one foreign id among its own: all refused
    body = {"items": [{"id": own[0], "orderIndex": 5}, {"id": "item-002", "orderIndex": 6}]}
    reply = env.send(operations.get("items.reorder"), params={"sowId": demo_data.GLOBEX_SOW}, body=body)
    assert reply.status == 404
    # its own item as parent in a foreign SOW, a foreign parent in its own SOW
    for sow, parent in ((demo_data.DEMO_SOW, own[0]), (demo_data.GLOBEX_SOW, "item-001")):
        reply = env.send(
            operations.get("items.create"),
            params={"sowId": sow},
            body={"title": "x", "type": "task_item", "parentItemId": parent},
        )
        assert reply.status == 404
    # a dependency from its own item to a foreign one, and the other way round
    for source, target in ((own[0], "item-002"), ("item-002", own[0])):
        body = {
            "sourceItemId": source,
            "targetItemId": target,
            "dependencyType": "blocks",
            "riskLevel": "low",
        }
        reply = env.send(operations.get("deps.create"), body=body)
        assert reply.status in (400, 404) and not leaked(reply.body.decode())
    # Group B: its own project, with acme's vendor, cost code and commitment
    globex_project = next(
        p["id"] for p in DEMO["financialProjects"] if p["companyId"] == demo_data.GLOBEX_COMPANY
    )
    globex_commitment = next(c["id"] for c in DEMO["commitments"] if c["project_id"] == globex_project)
    globex_vendor = next(v["id"] for v in DEMO["vendors"] if v["companyId"] == demo_data.GLOBEX_COMPANY)
    globex_code = next(c["id"] for c in DEMO["costCodes"] if c["companyId"] == demo_data.GLOBEX_COMPANY)
    good = {
        "project_id": str(globex_project),
        "commitment_id": str(globex_commitment),
        "title": "t",
        "vendor_id": globex_vendor,
        "status": "draft",
        "line_items": [{"description": "d", "amount": "1.00", "cost_code_id": globex_code}],
    }
    op = operations.get("finance.create_po")
    for change in (
        {"vendor_id": 7},
        {"commitment_id": "5001"},
        {"line_items": [{"description": "d", "amount": "1.00", "cost_code_id": 3}]},
        {"project_id": str(demo_data.DEMO_PROJECT_ID)},
    ):
        reply = foreign_send(env, op, token, key, "globex", body={**good, **change})
        assert reply.status == 404, (change, reply.body)
    assert dump() == before
    assert foreign_send(env, op, token, key, "globex", body=good).status == 200  # the control


def test_an_acme_key_cannot_act_for_globex(orgs) -> None:
    env, _, _ = orgs
    before = dump()
    for op in (op for op in OPS if op.group == "B"):
        query = {**VALID_QUERY.get(op.name, {}), "project_id": "201"} if op.query else None
        reply = foreign_send(env, op, "", env.api_key, "globex", query=query)
        assert reply.status == 404, reply.body
    assert dump() == before


def test_every_operation_is_covered_by_the_isolation_walk() -> None:
    for op in OPS:
        assert all(name in PARAM_IDS for name in op.path_params)
        assert op.body is None or op.name in VALID_BODY


# --- CORS ---------------------------------------------------------------------------------------


def test_cors_is_off_by_default(db_url: str) -> None:
    with app_client(db_url) as client:
        origin = {"Origin": "https://evil.example"}
        responses = [
            client.get("/healthz", headers=origin),
            client.get("/projects", headers=origin),
            client.get("/api/items/x", headers={**origin, "Authorization": "Bearer nope"}),
            client.get("/nowhere", headers=origin),
            client.options("/api/items/x", headers={**origin, "Access-Control-Request-Method": "DELETE"}),
        ]
    assert responses[-1].status_code == 405
    for response in responses:
        assert not [name for name in response.headers if name.lower().startswith("access-control-")]
    m.database_proxy.obj.close()


def test_cors_answers_only_the_origins_it_was_given(db_url: str) -> None:
    with app_client(db_url, ServerSettings(cors_origins=("https://app.example",))) as client:
        allowed = client.get("/healthz", headers={"Origin": "https://app.example"})
        other = client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in other.headers
    assert "access-control-allow-credentials" not in allowed.headers
    m.database_proxy.obj.close()


def test_serve_has_a_cors_option(cli) -> None:
    result = cli("serve", "--help")
    assert "--cors" in result.stdout


# --- the config file ---------------------------------------------------------------------------


def test_the_config_file_holding_secrets_is_private(cli, tmp_path: Path) -> None:
    path = Path(os.environ["SOWCTL_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    path.chmod(0o644)  # even a file that was readable by others becomes private
    assert cli("config", "set", "token", "sowt_secret-value-123456").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cli("config", "set", "api_key", "sowk_another-secret-9876").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    shown = cli("config", "list").stdout + cli("config", "get", "token").stdout
    assert "sowt_secret-value-123456" not in shown and "sowk_another-secret-9876" not in shown
    leftovers = [p.name for p in path.parent.iterdir() if p.name != path.name]
    assert leftovers == []  # no temp file left behind with the secret in it
