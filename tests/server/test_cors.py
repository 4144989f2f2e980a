"""CORS for browser front ends: off by default, ``serve --cors ORIGIN`` to allow origins."""

from __future__ import annotations

import httpx
import pytest

from sowctl.server.testdouble.faults import FaultConfig
from tests.support.doubles import SOW, bearer, in_process, load

APP = "https://app.example"
EXPOSED = {"X-Total-Count", "Link", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
EXPOSED |= {"Retry-After", "X-Request-Id", "X-Error-Code", "X-Error-Issues"}
ALLOWED_HEADERS = {"Authorization", "Content-Type", "x-api-key", "x-organization-id", "x-company-id"}
ALLOWED_HEADERS |= {"organization-id", "company-id"}


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def preflight(
    client: httpx.Client, origin: str, method: str = "POST", path: str = "/api/sows"
) -> httpx.Response:
    return client.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )


def test_no_cors_headers_by_default(db_url: str) -> None:
    client = in_process(db_url)
    token = load(client)["token"]
    for response in (
        client.get(f"/api/sow/{SOW}/items", headers={**bearer(token), "Origin": APP}),
        client.get("/api/items/nope", headers={**bearer(token), "Origin": APP}),
        client.get("/healthz", headers={"Origin": APP}),
    ):
        assert cors_headers(response) == {} and "vary" not in response.headers
    assert preflight(client, APP).status_code == 405


def test_allowed_origin_gets_its_own_origin_and_the_exposed_headers(db_url: str) -> None:
    client = in_process(db_url, cors_origins=(APP, "http://localhost:5173"))
    token = load(client)["token"]
    for response in (
        client.get(f"/api/sow/{SOW}/items", headers={**bearer(token), "Origin": APP}),
        client.get("/api/items/nope", headers={**bearer(token), "Origin": APP}),  # errors are readable too
        client.get("/projects", headers={"Origin": APP}),  # 401
    ):
        assert response.headers["access-control-allow-origin"] == APP
        exposed = {h.strip() for h in response.headers["access-control-expose-headers"].split(",")}
        assert exposed == EXPOSED
        assert response.headers["vary"] == "Origin"
        assert "access-control-allow-credentials" not in response.headers
    local = client.get("/healthz", headers={"Origin": "http://localhost:5173"})
    assert local.headers["access-control-allow-origin"] == "http://localhost:5173"


def test_other_origins_get_no_allow_origin(db_url: str) -> None:
    client = in_process(db_url, cors_origins=(APP,))
    response = client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers
    assert response.headers["vary"] == "Origin"  # a cache must not serve it to APP
    no_origin = client.get("/healthz")
    assert "access-control-allow-origin" not in no_origin.headers


@pytest.mark.parametrize("path", ["/api/sows", f"/api/sow/{SOW}/items/reorder", "/projects", "/_admin/reset"])
def test_preflight_from_an_allowed_origin(db_url: str, path: str) -> None:
    client = in_process(db_url, cors_origins=(APP,))
    response = preflight(client, APP, "PUT", path)
    assert response.status_code == 204 and response.content == b""
    assert response.headers["access-control-allow-origin"] == APP
    assert {"GET", "POST", "PUT", "DELETE"} <= {
        m.strip() for m in response.headers["access-control-allow-methods"].split(",")
    }
    assert {h.strip() for h in response.headers["access-control-allow-headers"].split(",")} == ALLOWED_HEADERS
    assert response.headers["access-control-max-age"] == "600"


def test_preflight_from_another_origin_allows_nothing(db_url: str) -> None:
    client = in_process(db_url, cors_origins=(APP,))
    response = preflight(client, "https://evil.example")
    assert response.status_code == 204 and cors_headers(response) == {}


def test_any_origin(db_url: str) -> None:
    client = in_process(db_url, cors_origins=("*",))
    response = client.get("/healthz", headers={"Origin": "https://anyone.example"})
    assert response.headers["access-control-allow-origin"] == "*"
    assert "vary" not in response.headers
    assert preflight(client, "https://anyone.example").headers["access-control-allow-origin"] == "*"


def test_injected_faults_carry_cors_headers(db_url: str) -> None:
    # a browser client must be able to read the injected 503, not see a CORS failure
    client = in_process(db_url, admin=False, cors_origins=(APP,), faults=FaultConfig(rate=1.0))
    response = client.get("/projects", headers={"Origin": APP})
    assert response.status_code == 503 and response.headers["access-control-allow-origin"] == APP
    assert response.headers["vary"] == "Origin"
    assert preflight(client, APP).status_code == 204  # preflights are never faulted


def test_serve_cors_option(cli, fake_runner: dict) -> None:
    result = cli("serve", "--cors", APP, "--cors", "http://localhost:5173")
    assert result.exit_code == 0, result.stderr
    assert fake_runner["app"].settings.cors_origins == (APP, "http://localhost:5173")
