"""Remote mode: requests, paging, auth headers, error mapping, retries and timeouts.

The backend is driven two ways: in process through ``httpx.WSGITransport`` over a
tiny scripted WSGI app, and over a real socket against a scripted threaded HTTP
server (refused connections, slow answers, 429/503), through the CLI so exit codes
and messages are checked end to end.
"""

from __future__ import annotations

import json
import random
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from sowctl import operations
from sowctl.backends import remote
from sowctl.backends.remote import RemoteBackend
from sowctl.backends.settings import Settings
from sowctl.foundation import errors
from tests.support.client import remote_backend
from tests.support.client import transport as wsgi_transport
from tests.support.scripted import ITEM, ScriptedServer

SERVER = "http://api.test"
TOKEN = "sowt_test-token-0123456789"
KEY = "sowk_test-key-0123456789"
FULL = dict(token=TOKEN, api_key=KEY, org="org-acme", company="comp-acme-llc")


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """No real waiting: record each backoff instead of sleeping."""
    slept: list[float] = []
    monkeypatch.setattr(remote, "_sleep", slept.append)
    return slept


# --- a scripted WSGI app for in-process tests -------------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeApp:
    """WSGI app: ``handler(seen) -> (status, headers, body)``; records every request."""

    handler: Callable[[Seen], tuple[int, dict[str, str], Any]]
    seen: list[Seen] = field(default_factory=list)

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        query = {k: v[-1] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        seen = Seen(
            environ["REQUEST_METHOD"],
            environ.get("RAW_URI") or environ["PATH_INFO"],
            query,
            headers,
            json.loads(raw) if raw else None,
        )
        self.seen.append(seen)
        status, extra, body = self.handler(seen)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        content_type = "text/html" if isinstance(body, bytes) else "application/json"
        reason = {200: "OK", 201: "Created"}.get(status, "Error")
        start_response(f"{status} {reason}", [("Content-Type", content_type), *extra.items()])
        return [data]


def backend_for(app: FakeApp, **settings: Any) -> RemoteBackend:
    values = {"server": SERVER, **FULL, **settings}
    return remote_backend(app, Settings(**values))


@pytest.fixture
def fake_ops() -> Iterator[None]:
    """Group B and C operations shaped like the real ones, so paging and headers can be tested
    whatever of the finance and listing modules exists yet."""

    def handler(request):  # never called: the remote backend only reads the declaration
        raise AssertionError

    specs = [
        dict(name="test.budget_views", method="GET", path="/api/external/budget-views", group="B"),
        dict(name="test.create_po", method="POST", path="/api/external/create-purchase-order", group="B"),
        dict(name="test.projects", method="GET", path="/projects", group="C", list_key="projects"),
        dict(name="test.pages_b", method="GET", path="/api/external/pages", group="B", paginated=True),
    ]
    for spec in specs:
        operations.operation(summary="test", **spec)(handler)
    yield
    for spec in specs:
        operations.REGISTRY.pop(spec["name"], None)


# --- requests: URL, query, body, auth ---------------------------------------------------------------


def test_get_builds_url_quotes_path_parameters_and_drops_none_query():
    app = FakeApp(lambda seen: (200, {}, ITEM))
    body = backend_for(app).call("items.get", {"itemId": "a/b c?"}, {"unused": None})
    assert body == ITEM
    (seen,) = app.seen
    assert seen.method == "GET"
    assert seen.path == "/api/items/a/b c?"  # PATH_INFO, decoded from a%2Fb%20c%3F
    assert seen.query == {}
    assert seen.headers["authorization"] == f"Bearer {TOKEN}"
    assert seen.headers["user-agent"].startswith("sowctl/")


def test_path_is_quoted_on_the_wire():
    backend = backend_for(FakeApp(lambda seen: (200, {}, ITEM)))
    op = operations.get("items.get")
    assert backend.url_for(op, {"itemId": "a/b c?"}) == f"{SERVER}/api/items/a%2Fb%20c%3F"
    with pytest.raises(errors.NotFound, match="missing path parameter itemId"):
        backend.url_for(op, {})


def test_post_sends_json_body():
    app = FakeApp(lambda seen: (201, {}, {**ITEM, "title": seen.body["title"]}))
    created = backend_for(app).call(
        "items.create", {"sowId": "sow-1"}, body={"title": "T", "type": "task_item"}
    )
    assert created["title"] == "T"
    (seen,) = app.seen
    assert (seen.method, seen.path) == ("POST", "/api/sow/sow-1/items")
    assert seen.body == {"title": "T", "type": "task_item"}
    assert seen.headers["content-type"] == "application/json"


def test_group_b_headers(fake_ops):
    app = FakeApp(lambda seen: (200, {}, {"data": []}))
    backend_for(app).call("test.budget_views", query={"project_id": 101})
    headers = app.seen[0].headers
    assert headers["x-api-key"] == KEY
    assert headers["x-organization-id"] == "org-acme"
    assert headers["x-company-id"] == "comp-acme-llc"
    assert "authorization" not in headers
    assert app.seen[0].query == {"project_id": "101"}


def test_purchase_order_headers_have_no_x_prefix(fake_ops):
    app = FakeApp(lambda seen: (200, {}, {"id": 1}))
    backend_for(app).call("test.create_po", body={"title": "PO"})
    headers = app.seen[0].headers
    assert headers["organization-id"] == "org-acme"
    assert headers["company-id"] == "comp-acme-llc"
    assert "x-organization-id" not in headers and "x-company-id" not in headers
    assert headers["x-api-key"] == KEY


@pytest.mark.parametrize(
    ("name", "missing", "option", "exit_code"),
    [
        ("items.get", "token", "--token (or SOWCTL_TOKEN)", 4),
        ("test.budget_views", "api_key", "--api-key (or SOWCTL_API_KEY)", 4),
        # the server answers a missing organization or company header with 400: a usage error
        ("test.budget_views", "org", "--org (or SOWCTL_ORG)", 2),
        ("test.create_po", "company", "--company (or SOWCTL_COMPANY)", 2),
        ("test.projects", "token", "--token (or SOWCTL_TOKEN)", 4),
    ],
)
def test_missing_credentials_refused_before_any_request(fake_ops, name, missing, option, exit_code):
    app = FakeApp(lambda seen: (200, {}, {}))
    backend = backend_for(app, **{missing: None})
    with pytest.raises(errors.SowctlError) as caught:
        backend.call(name, {"itemId": "x"})
    assert caught.value.message == f"remote mode needs {option} for this command"
    assert caught.value.exit_code == exit_code
    assert app.seen == []


def test_cli_missing_token_exit_4(cli):
    result = cli("--server", "http://127.0.0.1:9", "items", "get", "item-1")
    assert result.exit_code == 4
    assert result.stderr == "error: remote mode needs --token (or SOWCTL_TOKEN) for this command\n"


# --- paging -------------------------------------------------------------------------------------------


def paged_app(total: int, *, link: bool, count: bool) -> FakeApp:
    records = [{**ITEM, "id": f"item-{n:03d}", "orderIndex": n} for n in range(total)]

    def handler(seen: Seen):
        page, limit = int(seen.query.get("page", 1)), min(int(seen.query.get("limit", 20)), 100)
        chunk = records[(page - 1) * limit : page * limit]
        headers = {}
        if count:
            headers["X-Total-Count"] = str(total)
        if link and page * limit < total:
            headers["Link"] = f'<{SERVER}{seen.path.split("?")[0]}?page={page + 1}&limit={limit}>; rel="next"'
        return 200, headers, chunk

    return FakeApp(handler)


@pytest.mark.parametrize(("link", "count"), [(True, True), (True, False), (False, True), (False, False)])
def test_paginated_list_fetches_every_page(link, count):
    app = paged_app(250, link=link, count=count)
    items = backend_for(app).call("items.list", {"sowId": "sow-1"}, {"type": "task_item", "parentId": None})
    assert [item["orderIndex"] for item in items] == list(range(250))
    assert [(s.query["page"], s.query["limit"], s.query["type"]) for s in app.seen] == [
        ("1", "100", "task_item"),
        ("2", "100", "task_item"),
        ("3", "100", "task_item"),
    ]


def test_paginated_list_exact_multiple_of_page_size_stops():
    app = paged_app(200, link=False, count=True)
    assert len(backend_for(app).call("items.list", {"sowId": "sow-1"})) == 200
    assert len(app.seen) == 2


def test_paginated_list_empty():
    app = paged_app(0, link=True, count=True)
    assert backend_for(app).call("items.list", {"sowId": "sow-1"}) == []
    assert len(app.seen) == 1


def test_one_page_when_asked():
    app = paged_app(250, link=True, count=True)
    items = backend_for(app).call("items.list", {"sowId": "sow-1"}, all_pages=False)
    assert len(items) == 20 and len(app.seen) == 1
    assert "page" not in app.seen[0].query


def test_group_b_paginated_data_envelope_is_concatenated(fake_ops):
    records = [{"id": n} for n in range(130)]

    def handler(seen: Seen):
        page, limit = int(seen.query["page"]), int(seen.query["limit"])
        return 200, {"X-Total-Count": "130"}, {"data": records[(page - 1) * limit : page * limit]}

    app = FakeApp(handler)
    assert backend_for(app).call("test.pages_b") == {"data": records}
    assert len(app.seen) == 2


def listing_app(total: int) -> FakeApp:
    records = [{"id": f"p-{n:03d}"} for n in range(total)]

    def handler(seen: Seen):
        limit, offset = int(seen.query.get("limit", 20)), int(seen.query.get("offset", 0))
        return 200, {}, {"projects": records[offset : offset + min(limit, 100)], "total": total}

    return FakeApp(handler)


def test_group_c_list_pages_by_offset_until_total(fake_ops):
    app = listing_app(230)
    body = backend_for(app).call("test.projects", query={"status": "active"})
    assert body == {"projects": [{"id": f"p-{n:03d}"} for n in range(230)], "total": 230}
    assert [(s.query["offset"], s.query["limit"], s.query["status"]) for s in app.seen] == [
        ("0", "100", "active"),
        ("100", "100", "active"),
        ("200", "100", "active"),
    ]


def test_group_c_list_with_user_limit_is_one_request(fake_ops):
    app = listing_app(230)
    body = backend_for(app).call("test.projects", query={"limit": "5", "offset": "10"})
    assert body == {"projects": [{"id": f"p-{n:03d}"} for n in range(10, 15)], "total": 230}
    assert len(app.seen) == 1


def test_group_c_empty_list(fake_ops):
    app = listing_app(0)
    assert backend_for(app).call("test.projects") == {"projects": [], "total": 0}
    assert len(app.seen) == 1


# --- error mapping -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "name", "error", "exit_code", "message"),
    [
        (400, {"error": "title: field required"}, "items.get", errors.InvalidInput, 2,
         "title: field required"),
        (400, {"error": "circular dependency: a -> b -> a"}, "items.get", errors.InvalidInput, 2,
         "circular dependency: a -> b -> a"),
        (401, {"error": "invalid bearer token"}, "items.get", errors.Unauthorized, 4, "invalid bearer token"),
        (403, {"error": "insufficient permissions"}, "items.get", errors.Forbidden, 4,
         "insufficient permissions"),
        (404, {"error": "item x not found"}, "items.get", errors.NotFound, 3, "item x not found"),
        (405, {"error": "method not allowed"}, "items.get", errors.RemoteError, 2, "method not allowed"),
        (413, {"error": "request body too large"}, "items.get", errors.RemoteError, 2,
         "request body too large"),
        (429, {"error": "rate limit exceeded"}, "test.budget_views", errors.RateLimited, 5,
         "rate limited by server: rate limit exceeded"),
        (500, {"error": "internal server error"}, "items.get", errors.RemoteError, 5,
         "server error (HTTP 500): internal server error"),
        (503, b"<html>down</html>", "items.get", errors.RemoteError, 5,
         "server error (HTTP 503): Service Unavailable"),
        (400, {"code": "BAD_REQUEST", "message": "invalid input data",
               "issues": [{"path": ["limit"], "message": "must be a string of digits"}]},
         "test.projects", errors.InvalidInput, 2, "limit: must be a string of digits"),
        (400, {"code": "BAD_REQUEST", "message": "limit too large",
               "issues": [{"path": ["limit"], "message": "must be at most 100"}]},
         "test.projects", errors.InvalidInput, 2, "limit too large: limit: must be at most 100"),
        (400, {"code": "BAD_REQUEST", "message": "limit: must be a string of digits",
               "issues": [{"path": ["limit"], "message": "must be a string of digits"}]},
         "test.projects", errors.InvalidInput, 2, "limit: must be a string of digits"),
        (401, {"code": "UNAUTHORIZED", "message": "authorization not provided", "issues": []},
         "test.projects", errors.Unauthorized, 4, "authorization not provided"),
        (404, {"code": "NOT_FOUND", "message": "not found", "issues": []},
         "test.projects", errors.NotFound, 3, "not found"),
    ],
)  # fmt: skip
def test_http_errors_map_to_typed_errors(
    monkeypatch, fake_ops, status, body, name, error, exit_code, message
):
    monkeypatch.setenv("SOWCTL_RETRIES", "0")
    app = FakeApp(lambda seen: (status, {}, body))
    with pytest.raises(errors.SowctlError) as caught:
        backend_for(app).call(name, {"itemId": "x"}, {"limit": "1"} if name == "test.projects" else None)
    assert type(caught.value) is error
    assert caught.value.exit_code == exit_code
    assert caught.value.message == message


def test_group_c_issues_are_kept(fake_ops):
    body = {"code": "BAD_REQUEST", "message": "m", "issues": [{"path": ["offset"], "message": "bad"}]}
    app = FakeApp(lambda seen: (400, {}, body))
    with pytest.raises(errors.InvalidInput) as caught:
        backend_for(app).call("test.projects", query={"offset": "x"})
    assert [issue.as_dict() for issue in caught.value.issues] == [{"path": ["offset"], "message": "bad"}]


def test_non_json_success_is_exit_5():
    app = FakeApp(lambda seen: (200, {}, b"<html>a proxy login page</html>"))
    with pytest.raises(errors.ServiceUnavailable) as caught:
        backend_for(app).call("items.get", {"itemId": "x"})
    assert caught.value.exit_code == 5
    assert caught.value.message == (
        "server at http://api.test answered GET /api/items/{itemId} with HTTP 200 and text/html, "
        "not JSON: is --server a sowctl API URL?"
    )


@pytest.mark.parametrize(
    "server, shown",
    [
        ("http://user:hunter2@api.test:8080/", "http://user:***@api.test:8080"),
        ("http://api.test:8080/?api_key=hunter2&x", "http://api.test:8080/?api_key=***&x=***"),
    ],
)
def test_a_password_or_query_secret_in_the_server_url_is_never_shown(server, shown):
    app = FakeApp(lambda seen: (200, {}, b"nope"))
    backend = backend_for(app, server=server)
    with pytest.raises(errors.ServiceUnavailable) as caught:
        backend.call("items.get", {"itemId": "x"})
    assert "hunter2" not in caught.value.message
    assert shown in caught.value.message


def test_connection_error_text_never_quotes_a_header():
    reason = remote._reason(Exception("Illegal header value b'Bearer sowt_secret\\r'"))
    assert "sowt_secret" not in reason
    assert reason == "a request header could not be sent (its value is not shown)"


# --- retry policy (in process) ----------------------------------------------------------------------------


def test_backoff_is_full_jitter_within_cap():
    random.seed(7)
    for attempt in range(12):
        bound = min(remote.BACKOFF_CAP, remote.BACKOFF_BASE * 2**attempt)
        delays = [remote.backoff_delay(attempt) for _ in range(50)]
        assert all(0 <= d <= bound for d in delays)
        assert max(delays) > bound / 2  # spread over the whole range, not a fixed delay
    assert remote.BACKOFF_BASE == 0.2 and remote.BACKOFF_CAP == 5.0 and remote.MAX_RETRIES == 4


@pytest.mark.parametrize(("env", "expected"), [(None, 4), ("0", 0), ("2", 2), (" 7 ", 7)])
def test_retry_count_from_env(monkeypatch, env, expected):
    if env is None:
        monkeypatch.delenv("SOWCTL_RETRIES", raising=False)
    else:
        monkeypatch.setenv("SOWCTL_RETRIES", env)
    assert remote.retry_count() == expected


def test_bad_retry_count_is_usage_error(cli):
    result = cli(
        "--server", "http://127.0.0.1:9", "--token", "t", "items", "get", "x", env={"SOWCTL_RETRIES": "many"}
    )
    assert result.exit_code == 2
    assert "SOWCTL_RETRIES must be a whole number" in result.stderr


def test_retry_after_seconds_and_dates_are_capped():
    def response(value: str) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": value})

    assert remote.retry_after_delay(response("2"), 0) == 2.0
    assert remote.retry_after_delay(response("3600"), 0) == remote.BACKOFF_CAP
    assert remote.retry_after_delay(response("-5"), 0) == 0.0
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 3))
    assert 0 < remote.retry_after_delay(response(future), 0) <= 3.5
    assert 0 <= remote.retry_after_delay(httpx.Response(429), 0) <= remote.BACKOFF_BASE


class FlakyTransport(httpx.BaseTransport):
    """Raises the given transport errors first, then delegates to a WSGI app."""

    def __init__(self, app: FakeApp, failures: list[Exception]) -> None:
        self.inner = wsgi_transport(app)
        self.failures = failures
        self.attempts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)
        return self.inner.handle_request(request)


def flaky_backend(app: FakeApp, failures: list[Exception]) -> tuple[RemoteBackend, FlakyTransport]:
    transport = FlakyTransport(app, failures)
    return RemoteBackend(Settings(server=SERVER, **FULL), transport=transport), transport


def test_post_is_retried_after_a_connect_error(fast_retries):
    app = FakeApp(lambda seen: (201, {}, ITEM))
    backend, transport = flaky_backend(app, [httpx.ConnectError("refused"), httpx.ConnectTimeout("slow")])
    assert backend.call("items.create", {"sowId": "s"}, body={"title": "t", "type": "task_item"}) == ITEM
    assert transport.attempts == 3 and len(app.seen) == 1
    assert len(fast_retries) == 2


@pytest.mark.parametrize(
    "failure", [httpx.ReadTimeout("slow"), httpx.ReadError("reset"), httpx.RemoteProtocolError("eof")]
)
def test_post_is_not_retried_once_it_may_have_been_sent(failure, fast_retries):
    app = FakeApp(lambda seen: (201, {}, ITEM))
    backend, transport = flaky_backend(app, [failure])
    with pytest.raises(errors.ServiceUnavailable) as caught:
        backend.call("items.create", {"sowId": "s"}, body={"title": "t", "type": "task_item"})
    assert transport.attempts == 1 and fast_retries == []
    assert caught.value.exit_code == 5
    if isinstance(failure, httpx.TimeoutException):
        assert "it may have applied the request" in caught.value.message


@pytest.mark.parametrize(
    "failure", [httpx.ReadTimeout("slow"), httpx.ReadError("reset"), httpx.RemoteProtocolError("eof")]
)
def test_get_is_retried_after_read_failures(failure, fast_retries):
    app = FakeApp(lambda seen: (200, {}, ITEM))
    backend, transport = flaky_backend(app, [failure, failure])
    assert backend.call("items.get", {"itemId": "x"}) == ITEM
    assert transport.attempts == 3 and len(fast_retries) == 2


def test_timeouts_come_from_settings():
    backend = RemoteBackend(Settings(server=SERVER, token="t", timeout=2.5))
    assert backend.client.timeout == httpx.Timeout(2.5)
    assert RemoteBackend(Settings(server=SERVER, token="t")).client.timeout == httpx.Timeout(10.0)


# --- over a real socket, through the CLI ------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


@pytest.fixture
def remote_cli(cli, server):
    def run(*args: str, env: dict[str, str] | None = None):
        return cli("--server", server.url, "--token", TOKEN, *args, env=env)

    return run


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_server_down_connection_refused(cli, fast_retries):
    url = f"http://127.0.0.1:{closed_port()}"
    result = cli("--server", url, "--token", TOKEN, "items", "get", "item-1")
    assert result.exit_code == 5
    assert result.stderr == f"error: cannot reach server at {url}: connection refused\n"
    assert result.stdout == ""
    assert len(fast_retries) == remote.MAX_RETRIES  # connect errors are retried, then given up


def test_server_down_no_retries(cli, fast_retries):
    url = f"http://127.0.0.1:{closed_port()}"
    result = cli("--server", url, "--token", TOKEN, "sows", "list", env={"SOWCTL_RETRIES": "0"})
    assert result.exit_code == 5
    assert "connection refused" in result.stderr
    assert fast_retries == []


def test_slow_server_times_out(remote_cli, server):
    server.script.delay = 3.0
    start = time.monotonic()
    result = remote_cli("--timeout", "0.2", "items", "get", "item-1", env={"SOWCTL_RETRIES": "0"})
    assert time.monotonic() - start < 2.5  # gave up long before the answer came
    assert result.exit_code == 5
    assert result.stderr == (
        f"error: server at {server.url} did not answer within 0.2 s "
        "(raise the limit with --timeout or SOWCTL_TIMEOUT)\n"
    )


def test_slow_server_get_is_retried_then_given_up(remote_cli, server, fast_retries):
    server.script.delay = 0.3
    result = remote_cli("--timeout", "0.05", "items", "get", "item-1", env={"SOWCTL_RETRIES": "2"})
    assert result.exit_code == 5
    assert "did not answer within 0.05 s" in result.stderr
    assert len(fast_retries) == 2
    deadline = time.monotonic() + 2
    while len(server.script.requests) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(server.script.requests) == 3


def test_timeout_from_env(remote_cli, server):
    server.script.delay = 0.5
    result = remote_cli("items", "get", "item-1", env={"SOWCTL_RETRIES": "0", "SOWCTL_TIMEOUT": "0.1"})
    assert result.exit_code == 5
    assert "did not answer within 0.1 s" in result.stderr


def test_429_with_retry_after_then_success(remote_cli, server, fast_retries):
    server.script.responses = [(429, {"Retry-After": "1"}, {"error": "rate limit exceeded"})]
    result = remote_cli("items", "get", "item-1", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json() == ITEM
    assert fast_retries == [1.0]  # the server's Retry-After, not the backoff
    assert server.script.requests == [("GET", "/api/items/item-1")] * 2


def test_429_retry_after_is_capped(remote_cli, server, fast_retries):
    server.script.responses = [(429, {"Retry-After": "86400"}, {"error": "daily limit"})]
    assert remote_cli("items", "get", "item-1").exit_code == 0
    assert fast_retries == [remote.BACKOFF_CAP]


def test_429_forever_gives_up_exit_5(remote_cli, server, fast_retries):
    server.script.default = (429, {"Retry-After": "0"}, {"error": "rate limit exceeded"})
    result = remote_cli("items", "get", "item-1")
    assert result.exit_code == 5
    assert result.stderr == "error: rate limited by server: rate limit exceeded (gave up after 5 attempts)\n"
    assert len(server.script.requests) == 5


def test_503_forever_gives_up_exit_5(remote_cli, server, fast_retries):
    server.script.default = (503, {}, {"error": "service unavailable"})
    result = remote_cli("items", "get", "item-1")
    assert result.exit_code == 5
    assert result.stderr == (
        "error: server error (HTTP 503): service unavailable (gave up after 5 attempts)\n"
    )
    assert len(server.script.requests) == 1 + remote.MAX_RETRIES
    assert len(fast_retries) == remote.MAX_RETRIES
    assert all(0 <= d <= remote.BACKOFF_CAP for d in fast_retries)


@pytest.mark.parametrize("status", [502, 503, 504])
def test_gateway_errors_then_success(remote_cli, server, status):
    server.script.responses = [(status, {}, {"error": "bad gateway"})] * 2
    result = remote_cli("items", "get", "item-1", "--json")
    assert result.exit_code == 0
    assert len(server.script.requests) == 3


def test_post_answered_503_is_not_retried(remote_cli, server, fast_retries):
    server.script.default = (503, {}, {"error": "service unavailable"})
    result = remote_cli("items", "create", "sow-1", "--title", "New")
    assert result.exit_code == 5
    assert result.stderr == "error: server error (HTTP 503): service unavailable\n"
    assert server.script.requests == [("POST", "/api/sow/sow-1/items")]
    assert fast_retries == []


def test_put_answered_503_is_retried(remote_cli, server):
    server.script.responses = [(503, {}, {"error": "service unavailable"})]
    result = remote_cli("items", "update", "item-1", "--title", "T", "--json")
    assert result.exit_code == 0
    assert server.script.requests == [("PUT", "/api/items/item-1")] * 2


def test_retries_disabled_by_env(remote_cli, server, fast_retries):
    server.script.default = (503, {}, {"error": "down"})
    result = remote_cli("items", "get", "item-1", env={"SOWCTL_RETRIES": "0"})
    assert result.exit_code == 5
    assert result.stderr == "error: server error (HTTP 503): down\n"
    assert len(server.script.requests) == 1 and fast_retries == []


@pytest.mark.parametrize(("status", "exit_code"), [(400, 2), (401, 4), (403, 4), (404, 3), (500, 5)])
def test_cli_exit_codes_follow_http_status(remote_cli, server, status, exit_code):
    server.script.default = (status, {}, {"error": f"the server says {status}"})
    result = remote_cli("items", "get", "item-1")
    assert result.exit_code == exit_code
    assert f"the server says {status}" in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_not_json_answer_exit_5(remote_cli, server):
    server.script.default = (200, {}, b"<html>hello</html>")
    result = remote_cli("items", "get", "item-1")
    assert result.exit_code == 5
    assert "not JSON" in result.stderr and result.stderr.count("\n") == 1


# --- against the real Bottle app, in process --------------------------------------------------------------


@pytest.fixture
def demo_app(db):
    import datetime

    from sowctl.server.app import create_app
    from sowctl.services import credentials
    from sowctl.services.dataset import import_dataset
    from sowctl.services.demo_data import DEMO_ORG, demo_dataset

    import_dataset(demo_dataset(datetime.date.today()))
    token = credentials.create_token("user-ada", DEMO_ORG, "member").secret
    viewer = credentials.create_token("user-viewer", DEMO_ORG, "viewer").secret
    key = credentials.create_key(DEMO_ORG).secret
    return create_app(db), token, viewer, key


def app_backend(app, token: str, key: str | None = None) -> RemoteBackend:
    settings = Settings(
        server="http://sowctl.test", token=token, api_key=key, org="org-acme", company="comp-acme-llc"
    )
    return remote_backend(app, settings)


def test_real_app_pages_match_local(demo_app, monkeypatch):
    from sowctl.operations import call_local
    from sowctl.services.access import Caller

    app, token, _, key = demo_app
    monkeypatch.setattr(remote, "PAGE_SIZE", 3)
    backend = app_backend(app, token, key)
    caller = Caller.local("org-acme")
    for name, params, query in [
        ("items.list", {"sowId": "sow-tower-a-ph1"}, {}),
        ("deps.list", {}, {"sowId": "sow-tower-a-ph1"}),
        ("projects.list", {}, {}),
        ("clients.list", {}, {}),
    ]:
        local = call_local(name, caller, params, query, company_id="comp-acme-llc")
        assert backend.call(name, params, query) == local, name
    one_page = backend.call("items.list", {"sowId": "sow-tower-a-ph1"}, {"limit": 3}, all_pages=False)
    assert len(one_page) == 3


def test_real_app_errors_map_back(demo_app):
    app, token, viewer, key = demo_app
    backend = app_backend(app, token, key)
    with pytest.raises(errors.NotFound):
        backend.call("items.get", {"itemId": "nope"})
    with pytest.raises(errors.InvalidInput, match="title"):
        backend.call("items.create", {"sowId": "sow-tower-a-ph1"}, body={"type": "task_item"})
    with pytest.raises(errors.Forbidden):
        app_backend(app, viewer).call(
            "items.create", {"sowId": "sow-tower-a-ph1"}, body={"title": "t", "type": "task_item"}
        )
    with pytest.raises(errors.Unauthorized):
        app_backend(app, "sowt_wrong").call("items.get", {"itemId": "item-001"})


def test_server_ignoring_page_does_not_loop_forever():
    records = [{**ITEM, "id": f"item-{n}"} for n in range(remote.PAGE_SIZE)]
    app = FakeApp(lambda seen: (200, {}, records))  # always the same full page, no total, no Link
    assert backend_for(app).call("items.list", {"sowId": "sow-1"}) == records
    assert len(app.seen) == 2


def test_rate_limited_error_keeps_the_servers_retry_after(monkeypatch, fake_ops):
    monkeypatch.setenv("SOWCTL_RETRIES", "0")
    app = FakeApp(lambda seen: (429, {"Retry-After": "42"}, {"error": "rate limit exceeded"}))
    with pytest.raises(errors.RateLimited) as caught:
        backend_for(app).call("test.budget_views")
    assert caught.value.retry_after == 42


@pytest.mark.parametrize(
    "url",
    ["sqlite:///tmp/x.db", "http://h:1/base", "postgresql://u@h/db", "http://h/#fragment"],
)
def test_a_url_without_secrets_is_shown_as_given(url):
    from sowctl.backends.profiles import mask_url

    assert mask_url(url) == url
