"""The real ``sowctl serve``: metrics added up over its workers, JSON access lines, readiness."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.parser import text_string_to_metric_families

from tests.support.server import Server

pytestmark = pytest.mark.slow

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
HEALTHZ = {"route": "/healthz", "group": "-", "method": "GET", "status": "200"}
MAX_REQUESTS = 2000  # a guard: connections are spread over the workers long before


def healthz_count(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "sowctl_http_requests_total" and sample.labels == HEALTHZ:
                return sample.value
    return 0.0


def healthz_per_worker(directory: Path) -> dict[str, float]:
    """Each worker's own count of /healthz, read from the files it wrote."""
    counts: dict[str, float] = {}
    for path in directory.glob("counter_*.db"):
        for key, value, _, _ in MmapedDict.read_all_values_from_file(str(path)):
            name, _, labels, _ = json.loads(key)
            if name == "sowctl_http_requests" and labels == HEALTHZ:
                counts[path.stem.removeprefix("counter_")] = value
    return counts


def test_a_count_made_on_one_worker_shows_whichever_worker_answers_metrics(db_url, tmp_path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    server = Server(db_url, "--workers", "3", env={"TMPDIR": str(temp)})
    try:
        (directory,) = temp.glob("sowctl-metrics-*")
        sent = 0
        # A new connection each time: the kernel spreads them over the workers' sockets.
        while len([n for n in healthz_per_worker(directory).values() if n]) < 2 and sent < MAX_REQUESTS:
            assert httpx.get(server.url + "/healthz").status_code == 200
            sent += 1
        per_worker = healthz_per_worker(directory)
        assert len([n for n in per_worker.values() if n]) >= 2, per_worker
        assert sum(per_worker.values()) == sent
        for _ in range(12):  # each on a new connection, so answered by any of the workers
            assert healthz_count(httpx.get(server.url + "/metrics").text) == sent
    finally:
        assert server.stop() == 0
    assert list(temp.glob("sowctl-metrics-*")) == []  # removed with the server


def test_json_access_lines_carry_the_request_id_and_traceparent_and_engine_refusals_too(db_url) -> None:
    server = Server(db_url, "--log-format", "json", quiet=False)
    try:
        ready = server.client.get("/readyz", headers={"traceparent": TRACEPARENT})
        assert ready.status_code == 200
        too_long = server.client.get("/healthz", params={"q": "x" * 40_000})
        assert too_long.status_code == 414
        assert server.wait_for_stderr(too_long.headers["X-Request-Id"]), server.stderr_lines
        metrics = server.client.get("/metrics").text
    finally:
        assert server.stop() == 0
    lines = [json.loads(line) for line in server.stderr_lines if line.startswith("{")]
    by_id = {line["request_id"]: line for line in lines}
    first = by_id[ready.headers["X-Request-Id"]]
    assert (first["target"], first["status"], first["traceparent"]) == ("/readyz", 200, TRACEPARENT)
    refused = by_id[too_long.headers["X-Request-Id"]]
    assert refused["status"] == 414 and len(refused["target"]) < 300
    assert 'sowctl_budget_refusals_total{reason="request-line"} 1.0' in metrics.splitlines()


def test_readyz_answers_once_serve_is_up_and_sowctl_wait_says_so(db_url, cli) -> None:
    server = Server(db_url)
    try:
        result = cli("wait", server.url, "--timeout", "30")
        assert result.exit_code == 0, result.stderr
        assert server.client.get("/readyz").json() == {"status": "ok"}
    finally:
        assert server.stop() == 0
