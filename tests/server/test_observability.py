"""Liveness, readiness, metrics, JSON access logs and traces of the app, in process.

The real ``sowctl serve`` (several workers, the engine's refusals) is
tests/server/test_observability_serve.py's.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import httpx
import peewee
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from sowctl.server import tracing
from sowctl.server.access_log import AccessLog, log_refusal
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.storage import models
from sowctl.storage.database import SCHEMA_VERSION
from tests.support.client import bearer, wsgi_client
from tests.support.doubles import FINANCIAL_PROJECT, SOW, external
from tests.support.server import seed_demo

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def samples(client: httpx.Client, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples named ``name`` in ``/metrics``, parsed by prometheus_client's own parser."""
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=")
    found = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def labels(**values: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(values.items()))


@pytest.fixture
def seeded(migrated_db_url: str) -> tuple[str, str, str]:
    token, key = seed_demo(migrated_db_url)
    return migrated_db_url, token, key


def test_healthz_answers_without_asking_the_database_and_readyz_says_it_cannot(migrated_db_url) -> None:
    client = wsgi_client(create_app(migrated_db_url))

    def unreachable() -> None:
        raise peewee.OperationalError("could not connect to server: Connection refused")

    client.app.dispatcher.ensure_connection = unreachable  # type: ignore[attr-defined]
    live = client.get("/healthz")
    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json()) == (503, {"status": "unavailable"})
    assert ready.headers["Retry-After"] == "1" and ready.headers["X-Request-Id"]
    assert "readiness check failed: database unavailable" in client.errors.getvalue()  # type: ignore[attr-defined]


def test_readyz_sends_one_statement(migrated_db_url, monkeypatch: pytest.MonkeyPatch) -> None:
    client = wsgi_client(create_app(migrated_db_url))
    assert client.get("/readyz").json() == {"status": "ok"}  # on PostgreSQL, prepared once
    sent: list[str] = []
    database = models.database_proxy.obj
    original = database.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        sent.append(sql)
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(database, "execute_sql", counting)
    assert client.get("/readyz").json() == {"status": "ok"}
    assert len(sent) == 1


def test_readyz_is_503_while_the_database_holds_a_schema_this_sowctl_does_not_know(migrated_db_url) -> None:
    client = wsgi_client(create_app(migrated_db_url))
    assert client.get("/readyz").json() == {"status": "ok"}
    version = models.Meta.key == "schema_version"
    models.Meta.update(value=str(SCHEMA_VERSION + 1)).where(version).execute()
    try:
        ready = client.get("/readyz")
    finally:  # a PostgreSQL test database is shared by the whole run
        models.Meta.update(value=str(SCHEMA_VERSION)).where(version).execute()
    assert ready.status_code == 503 and ready.headers["Retry-After"] == "1"
    log = client.errors.getvalue()  # type: ignore[attr-defined]
    assert f"the database schema is version {SCHEMA_VERSION + 1}, sowctl's is {SCHEMA_VERSION}" in log
    assert client.get("/readyz").status_code == 200


def test_metrics_count_a_known_request_mix_exactly_by_route_template_group_and_status(seeded) -> None:
    db_url, token, key = seeded
    client = wsgi_client(create_app(db_url, ServerSettings(rate_per_minute=2)))
    for _ in range(3):
        assert client.get(f"/api/sow/{SOW}/items", headers=bearer(token)).status_code == 200
    assert client.get("/api/sow/no-such-sow/items", headers=bearer(token)).status_code == 404
    assert client.get("/api/items/anything").status_code == 401
    assert client.get("/no/such/route/1").status_code == 404
    assert client.get("/no/such/route/2").status_code == 404
    assert client.request("BREW", "/healthz").status_code == 405
    big = client.post(
        f"/api/sow/{SOW}/items", content=b"x", headers={**bearer(token), "Content-Length": "9999999"}
    )
    assert big.status_code == 413
    query = {"project_id": FINANCIAL_PROJECT}
    statuses = [
        client.get("/api/external/purchase-order-options", params=query, headers=external(key)).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    assert client.get("/healthz").status_code == 200

    requests = samples(client, "sowctl_http_requests_total")
    items, options = "/api/sow/{sowId}/items", "/api/external/purchase-order-options"
    assert requests == {
        labels(route=items, group="A", method="GET", status="200"): 3,
        labels(route=items, group="A", method="GET", status="404"): 1,
        labels(route="/api/items/{itemId}", group="A", method="GET", status="401"): 1,
        labels(route="unmatched", group="-", method="GET", status="404"): 2,
        labels(route="unmatched", group="-", method="other", status="405"): 1,
        labels(route=items, group="A", method="POST", status="413"): 1,
        labels(route=options, group="B", method="GET", status="200"): 2,
        labels(route=options, group="B", method="GET", status="429"): 1,
        labels(route="/healthz", group="-", method="GET", status="200"): 1,
    }
    durations = samples(client, "sowctl_http_request_duration_seconds_count")
    assert durations[labels(route=items, group="A")] == 5
    assert samples(client, "sowctl_rate_limit_refusals_total") == {(): 1}
    assert samples(client, "sowctl_budget_refusals_total")[labels(reason="body-size")] == 1
    assert set(samples(client, "sowctl_database_errors_total").values()) == {0}
    # Each /metrics answer counts once it is sent: the five scrapes above, not this one.
    scrapes = labels(route="/metrics", group="-", method="GET", status="200")
    assert samples(client, "sowctl_http_requests_total")[scrapes] == 5


def test_slot_waits_and_refusals_are_counted_by_kind(migrated_db_url) -> None:
    app = create_app(migrated_db_url)
    metrics = app.dispatcher.metrics
    metrics.slot_wait("write", 0.2, refused=False)
    metrics.slot_wait("report", 0.5, refused=True)
    client = wsgi_client(app)
    assert samples(client, "sowctl_slot_waits_total") == {labels(kind="write"): 1, labels(kind="report"): 1}
    assert samples(client, "sowctl_slot_refusals_total") == {
        labels(kind="write"): 0,
        labels(kind="report"): 1,
    }
    assert samples(client, "sowctl_slot_wait_seconds_count") == {
        labels(kind="write"): 1,
        labels(kind="report"): 1,
    }


def test_a_slot_taken_only_after_a_wait_is_reported_and_one_refused_too() -> None:
    import threading

    from sowctl.foundation.errors import ServiceUnavailable
    from sowctl.server.slots import Slots

    seen: list[bool] = []
    slots = Slots(1, 5.0, "busy", lambda seconds, refused: seen.append(refused))
    slots.acquire()
    assert seen == []  # a free slot: no wait
    release = threading.Timer(0.05, slots.release)
    release.start()
    slots.acquire()  # waits for the release
    release.join()
    assert seen == [False]
    slots.wait = 0.05
    with pytest.raises(ServiceUnavailable):
        slots.acquire()  # nobody releases
    assert seen == [False, True]


def test_metrics_are_open_and_name_no_path_id_or_credential(seeded) -> None:
    db_url, token, _ = seeded
    client = wsgi_client(create_app(db_url))
    client.get("/api/sow/secret-sow-id/items", headers=bearer(token))
    client.get("/api/items/" + "z" * 500)
    metrics = client.get("/metrics")
    text = metrics.text
    assert metrics.status_code == 200 and "sowctl_http_requests_total" in text, text
    assert "secret-sow-id" not in text and "zzz" not in text and token not in text


# --- the access log as JSON lines -------------------------------------------------------


@pytest.fixture
def json_logged(migrated_db_url, capsys) -> Iterator[tuple[httpx.Client, pytest.CaptureFixture]]:
    app = create_app(migrated_db_url)
    client = httpx.Client(
        transport=httpx.WSGITransport(app=AccessLog(app, json_lines=True), wsgi_errors=io.StringIO()),
        base_url="http://testserver",
    )
    yield client, capsys
    client.close()


def test_json_log_lines_parse_and_carry_the_request_id_and_the_incoming_traceparent(json_logged) -> None:
    client, capsys = json_logged
    capsys.readouterr()
    first = client.get("/api/items/x?token=sowt_SECRETSECRET", headers={"traceparent": TRACEPARENT})
    second = client.get("/healthz", headers={"traceparent": "not-a-traceparent\r\nX: y"})
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert len(lines) == 2
    assert lines[0]["request_id"] == first.headers["X-Request-Id"]
    assert lines[0]["traceparent"] == TRACEPARENT
    assert (lines[0]["method"], lines[0]["status"], lines[0]["protocol"]) == ("GET", 401, "HTTP/1.1")
    assert "SECRETSECRET" not in lines[0]["target"] and lines[0]["target"].startswith("/api/items/x?token=")
    assert lines[1]["request_id"] == second.headers["X-Request-Id"]
    assert "traceparent" not in lines[1]  # one not in the W3C form is not kept
    assert set(lines[1]) == {
        "time",
        "remote",
        "method",
        "target",
        "protocol",
        "status",
        "bytes",
        "duration_ms",
        "request_id",
    }


def test_a_refusal_the_engine_made_is_a_json_line_with_the_answers_request_id(capsys) -> None:
    log_refusal(
        "10.0.0.1", "POST", "/api/items?x=1", "HTTP/1.1", 413, [("X-Request-Id", "abc123")], json_lines=True
    )
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert record["status"] == 413 and record["request_id"] == "abc123" and record["bytes"] == 0


# --- traces -----------------------------------------------------------------------------


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    yield exporter
    tracing.install(None)


def test_a_request_is_a_server_span_child_of_the_incoming_traceparent(spans, seeded) -> None:
    db_url, token, _ = seeded
    client = wsgi_client(create_app(db_url))
    answer = client.get(f"/api/sow/{SOW}/items", headers={**bearer(token), "traceparent": TRACEPARENT})
    assert answer.status_code == 200
    (span,) = spans.get_finished_spans()
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None and format(span.parent.span_id, "016x") == PARENT_ID
    assert span.name == "GET /api/sow/{sowId}/items"
    assert span.attributes["http.route"] == "/api/sow/{sowId}/items"
    assert span.attributes["http.response.status_code"] == 200
    assert span.attributes["sowctl.request_id"] == answer.headers["X-Request-Id"]


def test_without_a_traceparent_a_request_starts_its_own_trace(spans, migrated_db_url) -> None:
    client = wsgi_client(create_app(migrated_db_url))
    client.get("/nowhere")
    (span,) = spans.get_finished_spans()
    assert span.parent is None and span.name == "GET unmatched"
    assert span.attributes["http.response.status_code"] == 404


def test_otel_variables_without_the_sdk_give_one_warning_line(monkeypatch) -> None:
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert tracing.missing_sdk(environ) is None  # installed here
    monkeypatch.setitem(__import__("sys").modules, "opentelemetry.sdk.trace", None)
    warning = tracing.missing_sdk(environ)
    assert warning == (
        "warning: OTEL_EXPORTER_OTLP_ENDPOINT set, but the OpenTelemetry SDK is not installed "
        "(pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http): no traces"
    )
    assert tracing.missing_sdk({}) is None
    assert tracing.missing_sdk({**environ, "OTEL_SDK_DISABLED": "true"}) is None
    assert tracing.missing_sdk({**environ, "OTEL_TRACES_EXPORTER": "none"}) is None


def test_the_otel_variables_choose_the_exporter_and_the_service_name(monkeypatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "sowctl-ci")
    try:
        provider = tracing.start_from_environment()
        assert provider is not None and provider.resource.attributes["service.name"] == "sowctl-ci"
        monkeypatch.delenv("OTEL_SERVICE_NAME")
        assert tracing.start_from_environment().resource.attributes["service.name"] == "sowctl"
        monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
        assert tracing.start_from_environment() is None
    finally:
        tracing.install(None)


def test_the_test_doubles_request_log_keeps_the_incoming_traceparent(migrated_db_url) -> None:
    from tests.support.doubles import ADMIN, in_process

    client = in_process(migrated_db_url)
    answer = client.get("/api/items/x", headers={"traceparent": TRACEPARENT})
    (entry,) = client.get("/_admin/requests", headers=ADMIN).json()
    assert entry["requestId"] == answer.headers["X-Request-Id"]
    assert entry["headers"]["traceparent"] == TRACEPARENT
