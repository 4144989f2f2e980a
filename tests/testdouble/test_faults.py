"""Latency and fault injection: set at start or through /_admin/faults, measured over HTTP."""

from __future__ import annotations

import time

import httpx
import pytest

from sowctl.foundation.errors import InvalidInput
from sowctl.server.testdouble.faults import FaultConfig, parse_latency
from sowctl.storage import models as m
from tests.support.doubles import (
    ADMIN,
    ADMIN_TOKEN,
    SOW,
    bearer,
    external,
    in_process,
    load,
)

# --- the config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("100ms", (100, 100)), ("50ms..200ms", (50, 200)), ("0.1s..0.25s", (100, 250)), ("20", (20, 20))],
)
def test_latency_option_values(text: str, expected: tuple[float, float]) -> None:
    assert parse_latency(text) == expected


@pytest.mark.parametrize("text", ["fast", "200ms..50ms", "10 minutes", "-5ms", ""])
def test_bad_latency_option_values(text: str) -> None:
    with pytest.raises(ValueError):
        parse_latency(text)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rate": 1.5}, "rate"),
        ({"rate": True}, "rate"),
        ({"status": 200}, "status"),
        ({"status": "503"}, "status"),
        ({"mode": "explode"}, "mode"),
        ({"latencyMs": [200, 50]}, "latencyMs"),
        ({"latencyMs": "100ms"}, "latencyMs"),
        ({"routes": ["items"]}, "routes[0]"),
        ({"routes": "GET /projects"}, "routes"),
        ({"count": -1}, "count"),
        ({"ratio": 0.5}, "ratio"),
    ],
)
def test_invalid_fault_configs_name_the_field(body: dict, field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        FaultConfig.from_json(body)
    assert info.value.message.startswith(f"{field}: ")


def test_fault_config_round_trip_and_route_patterns() -> None:
    config = FaultConfig.from_json(
        {"latencyMs": 100, "rate": 0.25, "status": 429, "routes": ["GET /projects", "/api/items/*"]}
    )
    assert config.to_json() == {
        "latencyMs": [100, 100],
        "rate": 0.25,
        "status": 429,
        "mode": "error",
        "routes": ["GET /projects", "/api/items/*"],
        "count": None,
    }
    assert FaultConfig.from_json(config.to_json()) == config
    assert config.matches("GET", "/projects") and config.matches("HEAD", "/projects")
    assert not config.matches("POST", "/projects") and not config.matches("GET", "/clients")
    assert config.matches("DELETE", "/api/items/item-1") and not config.matches("GET", "/api/sow/s/items")
    assert FaultConfig(rate=1).matches("GET", "/anything")


# --- error responses --------------------------------------------------------------------------


@pytest.fixture
def double(migrated_db_url: str) -> tuple[httpx.Client, dict[str, str]]:
    client = in_process(migrated_db_url)
    return client, load(client)


def put_faults(client: httpx.Client, **config) -> dict:
    response = client.put("/_admin/faults", json=config, headers=ADMIN)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize(
    ("status", "retry_after", "group_c"),
    [
        (503, "1", {"code": "INTERNAL_SERVER_ERROR", "message": "internal server error", "issues": []}),
        (
            429,
            "1",
            {
                "code": "BAD_REQUEST",
                "message": "invalid input data",
                "issues": [{"path": [], "message": "injected fault"}],
            },
        ),
        (500, None, {"code": "INTERNAL_SERVER_ERROR", "message": "internal server error", "issues": []}),
    ],
)
def test_rate_one_fails_every_request_in_the_groups_envelope(
    double: tuple[httpx.Client, dict], status: int, retry_after: str | None, group_c: dict
) -> None:
    client, credentials = double
    put_faults(client, rate=1.0, status=status)
    for _ in range(5):
        responses = {
            "A": client.get(f"/api/sow/{SOW}/items", headers=bearer(credentials["token"])),
            "B": client.get(
                "/api/external/budget-views?project_id=101", headers=external(credentials["key"])
            ),
            "C": client.get("/projects", headers=bearer(credentials["token"])),
        }
        for group, response in responses.items():
            assert response.status_code == status, group
            assert response.json() == (group_c if group == "C" else {"error": "injected fault"})
            assert response.headers.get("retry-after") == retry_after
            assert response.headers["x-sowctl-fault"] == "error" and response.headers["x-request-id"]
            # every Group B response has the rate headers (none charged here)
            rate = {name for name in response.headers if name.startswith("x-ratelimit-")}
            assert rate == (
                {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} if group == "B" else set()
            )
    assert client.get("/healthz").status_code == 200  # never faulted
    assert client.get("/_admin/faults", headers=ADMIN).status_code == 200


def test_rate_zero_never_fails(double: tuple[httpx.Client, dict]) -> None:
    client, credentials = double
    put_faults(client, rate=0.0, status=503)
    statuses = {client.get("/projects", headers=bearer(credentials["token"])).status_code for _ in range(30)}
    assert statuses == {200}


def test_a_partial_rate_fails_some_requests(db_url: str) -> None:
    client = in_process(db_url, seed=3)  # the fault draws are reproducible with a seed
    token = load(client)["token"]
    put_faults(client, rate=0.5)
    statuses = [client.get("/projects", headers=bearer(token)).status_code for _ in range(60)]
    assert 10 < statuses.count(503) < 50 and statuses.count(503) + statuses.count(200) == 60


def test_a_faulted_write_changes_nothing(double: tuple[httpx.Client, dict]) -> None:
    client, credentials = double
    before = m.Item.select().count()
    put_faults(client, rate=1.0, status=503, routes=["POST /api/sow/*/items"])
    response = client.post(
        f"/api/sow/{SOW}/items",
        json={"title": "Never stored", "type": "task_item"},
        headers=bearer(credentials["token"]),
    )
    assert response.status_code == 503
    assert m.Item.select().count() == before
    assert not m.Item.select().where(m.Item.title == "Never stored").exists()
    (entry,) = client.get("/_admin/requests?limit=1", headers=ADMIN).json()
    assert entry["fault"] == {"mode": "error", "status": 503} and entry["status"] == 503
    assert entry["requestBody"] == {"title": "Never stored", "type": "task_item"}


def test_routes_limit_where_faults_apply(double: tuple[httpx.Client, dict]) -> None:
    client, credentials = double
    auth = bearer(credentials["token"])
    put_faults(client, rate=1.0, routes=["GET /projects", "/api/items/*"])
    assert client.get("/projects", headers=auth).status_code == 503
    assert client.get("/clients", headers=auth).status_code == 200
    assert client.get("/api/items/item-001", headers=auth).status_code == 503
    assert client.get(f"/api/sow/{SOW}/items", headers=auth).status_code == 200


def test_count_fails_the_next_requests_then_none(double: tuple[httpx.Client, dict]) -> None:
    client, credentials = double
    put_faults(client, rate=1.0, count=2, routes=["GET /projects"])
    statuses = [client.get("/projects", headers=bearer(credentials["token"])).status_code for _ in range(4)]
    assert statuses == [503, 503, 200, 200]
    assert client.get("/_admin/faults", headers=ADMIN).json()["count"] == 0


def test_clearing_faults(double: tuple[httpx.Client, dict]) -> None:
    client, credentials = double
    put_faults(client, rate=1.0, latencyMs=[1, 2])
    cleared = client.delete("/_admin/faults", headers=ADMIN)
    assert cleared.json() == {
        "latencyMs": None,
        "rate": 0.0,
        "status": 503,
        "mode": "error",
        "routes": [],
        "count": None,
    }
    assert client.get("/_admin/faults", headers=ADMIN).json() == cleared.json()
    assert client.get("/projects", headers=bearer(credentials["token"])).status_code == 200


def test_invalid_fault_config_is_refused(double: tuple[httpx.Client, dict]) -> None:
    client, _ = double
    response = client.put("/_admin/faults", json={"rate": 2}, headers=ADMIN)
    assert response.status_code == 400 and response.json() == {"error": "rate: must be a number from 0 to 1"}
    assert client.get("/_admin/faults", headers=ADMIN).json()["rate"] == 0


# --- latency ------------------------------------------------------------------------------------


def timed(call) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = call()
    return response, (time.perf_counter() - started) * 1000


def test_latency_delays_every_matching_response(double: tuple[httpx.Client, dict]) -> None:
    client, credentials = double
    auth = bearer(credentials["token"])
    assert put_faults(client, latencyMs=100, routes=["GET /projects"])["latencyMs"] == [100, 100]
    for _ in range(3):
        response, elapsed = timed(lambda: client.get("/projects", headers=auth))
        assert response.status_code == 200 and elapsed >= 100
    _, fast = timed(lambda: client.get("/clients", headers=auth))
    assert fast < 100
    (entry,) = client.get("/_admin/requests?limit=2", headers=ADMIN).json()[:1]
    assert entry["path"] == "/projects" and entry["latencyMs"] >= 100


def test_latency_range(double: tuple[httpx.Client, dict]) -> None:
    client, credentials = double
    put_faults(client, latencyMs=[30, 60])
    times = [
        timed(lambda: client.get("/projects", headers=bearer(credentials["token"])))[1] for _ in range(4)
    ]
    assert all(t >= 30 for t in times)


def test_startup_faults_without_the_admin_api(db_url: str) -> None:
    client = in_process(db_url, admin=False, faults=FaultConfig(latency_ms=(50, 50), rate=1.0, status=502))
    response, elapsed = timed(lambda: client.get("/projects"))
    assert response.status_code == 502 and elapsed >= 50
    assert response.json()["code"] == "INTERNAL_SERVER_ERROR"
    assert client.get("/healthz").status_code == 200


def test_dropped_connections_in_process_raise(db_url: str) -> None:
    client = in_process(db_url, admin=False, faults=FaultConfig(rate=1.0, mode="drop"))
    with pytest.raises(ConnectionResetError):
        client.get("/projects")


# --- the serve options ---------------------------------------------------------------------------


def test_serve_fault_options_reach_the_app(cli, fake_runner: dict) -> None:
    result = cli(
        "serve",
        "--latency",
        "5ms..10ms",
        "--fault-rate",
        "0.5",
        "--fault-status",
        "429",
        "--fault-route",
        "GET /projects",
        "--fault-route",
        "/api/items/*",
    )
    assert result.exit_code == 0, result.stderr
    assert fake_runner["app"].settings.faults == FaultConfig(
        latency_ms=(5, 10), rate=0.5, status=429, routes=("GET /projects", "/api/items/*")
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--latency", "soon"], "--latency: 'soon' is not a duration such as 100ms or 0.2s"),
        (["--fault-rate", "1", "--fault-mode", "explode"], "--fault-mode: must be one of: error, drop"),
        (["--fault-rate", "1", "--fault-route", "items"], "--fault-route: 'items' is not a route pattern"),
        (["--fault-rate", "1.5"], "Invalid value for '--fault-rate'"),
        (["--fault-status", "200"], "Invalid value for '--fault-status'"),
    ],
)
def test_serve_refuses_bad_fault_options(cli, fake_runner: dict, args: list[str], error: str) -> None:
    result = cli("serve", *args)
    assert result.exit_code == 2 and error in result.stderr, result.stderr
    assert "app" not in fake_runner


# --- a real server ------------------------------------------------------------------------------


def fresh_connection_get(url: str, path: str, headers: dict) -> httpx.Response:
    """One request on its own connection, so the kernel may hand it to any worker."""
    with httpx.Client(base_url=url, timeout=10) as client:
        return client.get(path, headers=headers)


@pytest.mark.slow
def test_runtime_faults_and_clock_reach_every_worker_and_drops_reach_the_client(serve) -> None:
    server = serve(None, "--workers", "2", "--admin-token", ADMIN_TOKEN)
    client = server.client
    credentials = load(client)
    auth = bearer(credentials["token"])
    put_faults(client, rate=1.0, status=503, routes=["GET /projects"])
    statuses = [fresh_connection_get(server.url, "/projects", auth).status_code for _ in range(12)]
    assert statuses == [503] * 12
    clock = client.post("/_admin/clock", json={"now": "2030-05-06T07:08:09Z"}, headers=ADMIN)
    assert clock.status_code == 200
    for index in range(6):
        with httpx.Client(base_url=server.url, timeout=10) as fresh:
            created = fresh.post(
                f"/api/sow/{SOW}/items", json={"title": f"t{index}", "type": "task_item"}, headers=auth
            )
        assert created.status_code == 201 and created.json()["createdAt"] == "2030-05-06T07:08:09Z"

    put_faults(client, rate=1.0, mode="drop", routes=["POST /api/sow/*/items", "GET /clients"])
    before = len(client.get(f"/api/sow/{SOW}/items?limit=100", headers=auth).json())
    for _ in range(3):
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            client.post(f"/api/sow/{SOW}/items", json={"title": "dropped", "type": "task_item"}, headers=auth)
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            client.get("/clients", headers=auth)
    assert len(client.get(f"/api/sow/{SOW}/items?limit=100", headers=auth).json()) == before
    log = client.get("/_admin/requests?limit=6", headers=ADMIN).json()
    dropped = [entry for entry in log if entry["fault"] == {"mode": "drop", "status": None}]
    assert len(dropped) == 5 and all(entry["status"] is None for entry in dropped)
    assert dropped[-2]["requestBody"] == {"title": "dropped", "type": "task_item"}

    client.delete("/_admin/faults", headers=ADMIN)
    assert {fresh_connection_get(server.url, "/clients", auth).status_code for _ in range(6)} == {200}
    assert server.stop() == 0
    assert not any("Traceback" in line for line in server.stderr_lines), server.stderr_lines
