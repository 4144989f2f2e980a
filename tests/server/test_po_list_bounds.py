"""What one API key can make a worker hold with the purchase-order list: a page is made a
batch of orders at a time and written as it is made, with the same bytes and headers.

Before: a page of 100 orders of 1,000 lines each (about 106 MB of JSON, from orders created
in 1 MiB requests) was built whole, and 8 such requests took a worker to 1-4 GB
(bench/bench_po_list_memory.py).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import peewee as pw
import psycopg2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sowctl import operations
from sowctl.engine import memory
from sowctl.foundation import money
from sowctl.schemas.lazy import LazyArray
from sowctl.schemas.purchase_orders import PurchaseOrderIn
from sowctl.server import streaming
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.server.http import json_bytes
from sowctl.server.streaming import CHUNK_CHARS, iter_json
from sowctl.services import purchase_orders
from sowctl.services.access import Caller
from sowctl.storage import models as m
from tests.support.client import SERVER, route_remote_in_process, wsgi_client
from tests.support.finance import COMPANY, ORG, build_finance, po_body
from tests.support.raw_wsgi import start_get
from tests.support.templates import seeded

pytestmark = pytest.mark.database  # pages read in batches: each backend's cursors

ORDERS = 25  # three batches of purchase_orders._ORDER_BATCH (10)
LINES = 40
PATH = "/api/external/purchase-orders"


@pytest.fixture
def site(migrated_db_url: str) -> Iterator[dict[str, Any]]:
    """An app on project 101 with ``ORDERS`` orders of ``LINES`` lines of long, non-ASCII
    descriptions (a page of them is many chunks), and a key of its organization."""
    app = create_app(migrated_db_url, ServerSettings(rate_per_minute=1000, rate_per_day=100_000))
    key = seeded("po-site", _orders)  # on SQLite, a copy made once per process
    headers = {"x-api-key": key, "x-organization-id": ORG, "x-company-id": COMPANY}
    client = wsgi_client(app, headers=headers)
    yield {"app": app, "client": client, "headers": headers}
    client.close()


def _orders() -> str:
    """The finance records and the orders of ``site``; an API key of their organization."""
    key = build_finance().key
    for n in range(ORDERS):
        lines = [
            {
                "description": f"{n}.{p} é\u2028\U0001f600 " + "x" * 900,
                "amount": f"{p}.05",
                "cost_code_id": 3 + p % 2,
            }
            for p in range(LINES)
        ]
        body = po_body(title=f'Order {n} "quoted"', line_items=lines, status="issued" if n % 2 else "draft")
        order = PurchaseOrderIn.model_validate(body)
        purchase_orders.create_purchase_order(Caller.local(ORG), COMPANY, order)
    return key


def reference(project: int = 101, offset: int = 0, limit: int = 100) -> bytes:
    """The page as JSON, built from the stored rows here, independently of the service."""
    orders = (
        m.PurchaseOrder.select()
        .where(m.PurchaseOrder.financial_project == project)
        .order_by(m.PurchaseOrder.id)
        .offset(offset)
        .limit(limit)
    )
    # Vendors and cost codes read once, not once per order and line (a thousand queries a page).
    vendors = {vendor.id: vendor for vendor in m.Vendor.select()}
    codes = {code.id: code for code in m.CostCode.select()}
    data = []
    for order in orders:
        lines = order.lines.order_by(m.PurchaseOrderLine.position, m.PurchaseOrderLine.id)
        vendor = vendors[order.vendor_id]
        data.append(
            {
                "id": order.id,
                "number": order.number,
                "status": order.status,
                "title": order.title,
                "vendor": {"id": vendor.id, "name": vendor.name},
                "original_amount": money.to_string(order.original_amount),
                "revised_amount": money.to_string(order.revised_amount),
                "total_amount": money.to_string(order.total_amount),
                "line_items": [
                    {
                        "id": line.id,
                        "description": line.description,
                        "amount": money.to_string(line.amount),
                        "cost_code": {
                            "id": codes[line.cost_code_id].id,
                            "full_code": codes[line.cost_code_id].full_code,
                            "name": codes[line.cost_code_id].name,
                        },
                    }
                    for line in lines
                ],
            }
        )
    return json_bytes({"data": data})


def raw_get(
    app: Any, query: str, headers: dict[str, str], errors: io.StringIO | None = None
) -> tuple[Iterator[bytes], tuple[str, list], Any]:
    """GET the list from ``app`` as a WSGI server does; (body iterator, (status, headers), close)."""
    return start_get(app, f"{PATH}?{query}", headers, errors)


# --- the bytes and headers ------------------------------------------------------------------


def test_a_large_page_is_streamed_with_the_bytes_json_would_give(site: dict[str, Any]) -> None:
    expected = reference(limit=20)
    assert len(expected) > 8 * CHUNK_CHARS  # many chunks
    response = site["client"].get(PATH, params={"project_id": "101", "limit": "20"})
    assert response.status_code == 200
    assert response.content == expected
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-total-count"] == str(ORDERS)
    link = response.headers["link"]
    assert 'page=2&limit=20>; rel="next"' in link and 'page=2&limit=20>; rel="last"' in link
    assert response.headers["x-ratelimit-remaining"] == "999"  # charged once, before the body

    chunks, status, close = raw_get(site["app"], "project_id=101&limit=20", site["headers"])
    try:
        sizes = [len(chunk) for chunk in chunks]
    finally:
        close()
    header_names = {name.lower() for name, _ in status[1]}
    assert status[0].startswith("200") and "content-length" not in header_names
    assert {"x-total-count", "link", "x-ratelimit-remaining"} <= header_names
    assert len(sizes) > 3 and max(sizes) < 4 * (2 * CHUNK_CHARS + 20_000)


def test_every_page_and_the_totals_match_the_stored_orders(site: dict[str, Any]) -> None:
    pages = []
    for page in (1, 2, 3):
        response = site["client"].get(PATH, params={"project_id": "101", "page": str(page), "limit": "10"})
        assert response.content == reference(offset=(page - 1) * 10, limit=10)
        assert response.headers["x-total-count"] == str(ORDERS)
        pages.append(response)
    assert len(pages[2].json()["data"]) == ORDERS - 20
    assert 'rel="prev"' in pages[2].headers["link"] and 'rel="next"' not in pages[2].headers["link"]
    assert 'rel="next"' in pages[0].headers["link"] and 'rel="prev"' not in pages[0].headers["link"]


def test_a_small_page_is_answered_whole_with_content_length(site: dict[str, Any]) -> None:
    order = site["client"].post(
        "/api/external/create-purchase-order",
        json=po_body(project_id="102", commitment_id="5002", vendor_id=8),
        headers={"organization-id": ORG, "company-id": COMPANY},
    )
    assert order.status_code == 200, order.text
    response = site["client"].get(PATH, params={"project_id": "102"})
    assert response.json() == {"data": [order.json()]}
    assert response.content == reference(project=102)
    assert response.headers["content-length"] == str(len(response.content))
    assert response.headers["x-total-count"] == "1"


def test_memory_is_given_back_after_a_streamed_page_only(
    site: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a page of a megabyte or more the worker returns its free heap to the system
    (glibc's malloc_trim): it stayed at its peak for good; a small answer does not pay for it."""
    trims: list[int] = []
    monkeypatch.setattr(streaming, "release_free_memory", lambda: trims.append(1))
    monkeypatch.setattr(streaming, "TRIM_AFTER_BYTES", 256 * 1024)  # 1 MiB: larger than this site
    small = site["client"].get(PATH, params={"project_id": "101", "limit": "1"})
    assert small.status_code == 200 and trims == []
    assert len(reference(limit=20)) > streaming.TRIM_AFTER_BYTES
    chunks, _status, close = raw_get(site["app"], "project_id=101&limit=20", site["headers"])
    sent = 0
    while sent < streaming.TRIM_AFTER_BYTES:
        sent += len(next(chunks))
    assert trims == []  # not while it is being sent
    close()  # a client that went away after a megabyte
    assert trims == [1]
    assert site["client"].get(PATH, params={"project_id": "101", "limit": "20"}).status_code == 200
    assert trims == [1, 1]
    memory.release_free_memory()  # the real call, on this platform


@pytest.mark.parametrize(("project", "page", "total"), [("102", "1", "0"), ("101", "9", str(ORDERS))])
def test_an_empty_page(site: dict[str, Any], project: str, page: str, total: str) -> None:
    response = site["client"].get(PATH, params={"project_id": project, "page": page, "limit": "10"})
    assert response.status_code == 200
    assert response.content == b'{"data":[]}'
    assert response.headers["content-length"] == "11"
    assert response.headers["x-total-count"] == total


def test_local_mode_gets_every_order_as_a_list(site: dict[str, Any]) -> None:
    body = operations.call_local("finance.list_pos", Caller.local(ORG), query={"project_id": "101"})
    assert isinstance(body["data"], list) and len(body["data"]) == ORDERS
    assert json_bytes(body) == reference()


# --- made as it is written --------------------------------------------------------------------


def test_the_page_is_read_a_batch_at_a_time_as_it_is_written(
    site: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[list[int]] = []
    real = purchase_orders._read_batch

    def recording(ids: Any) -> Any:
        read.append(list(ids))
        return real(ids)

    monkeypatch.setattr(purchase_orders, "_read_batch", recording)
    chunks, status, close = raw_get(site["app"], "project_id=101&limit=100", site["headers"])
    try:
        assert status[0].startswith("200")
        assert len(read) == 1  # what the answer's first two chunks needed: one batch
        first = next(chunks)
        assert len(read) == 1 and first.startswith(b'{"data":[{"id":')
        rest = b"".join(chunks)
    finally:
        close()
    ids = [
        order_id
        for (order_id,) in m.PurchaseOrder.select(m.PurchaseOrder.id).order_by(m.PurchaseOrder.id).tuples()
    ]
    assert read == [ids[0:10], ids[10:20], ids[20:25]]  # two queries a batch: no query per order
    assert first + rest == reference()


def test_a_failure_before_the_first_chunk_is_an_answer_in_the_envelope(
    site: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(ids: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(purchase_orders, "_read_batch", broken)
    response = site["client"].get(PATH, params={"project_id": "101"})
    assert response.status_code == 500
    assert response.json() == {"error": "internal server error"}
    assert "secret internals" not in response.text
    assert response.headers["x-ratelimit-remaining"] == "999"


def test_a_failure_after_the_first_chunk_cuts_the_answer_and_is_logged(
    site: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status and headers are sent by then: the server can only cut the connection (a
    client sees a body that ends early, never a whole-looking wrong one)."""
    real = purchase_orders._read_batch
    calls: list[int] = []

    def fails_third(ids: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("secret internals")
        return real(ids)

    monkeypatch.setattr(purchase_orders, "_read_batch", fails_third)
    chunks, status, close = raw_get(site["app"], "project_id=101&limit=100", site["headers"])
    sent = []
    try:
        assert status[0].startswith("200")
        with pytest.raises(RuntimeError):
            for chunk in chunks:
                sent.append(chunk)
    finally:
        close()
    assert sent and reference().startswith(b"".join(sent))  # what was sent is the page's start
    assert len(b"".join(sent)) < len(reference())
    with pytest.raises(json.JSONDecodeError):
        json.loads(b"".join(sent))


def test_a_database_lost_after_the_first_chunk_cuts_the_answer_with_one_log_line(
    site: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database failure says what it is in one line (before: a traceback)."""
    real = purchase_orders._read_batch
    calls: list[int] = []

    def lost_third(ids: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            lost = psycopg2.OperationalError("server closed the connection unexpectedly\n\tThis probably...")
            raise pw.OperationalError(lost, *lost.args)
        return real(ids)

    monkeypatch.setattr(purchase_orders, "_read_batch", lost_third)
    errors = io.StringIO()
    chunks, status, close = raw_get(site["app"], "project_id=101&limit=100", site["headers"], errors)
    try:
        assert status[0].startswith("200")
        with pytest.raises(pw.OperationalError):
            list(chunks)
    finally:
        close()
    lines = errors.getvalue().splitlines()
    assert len(lines) == 1 and "database unavailable (08006" in lines[0], lines


def test_a_page_being_sent_holds_a_report_slot_and_one_more_gets_503(
    site: dict[str, Any], migrated_db_url: str
) -> None:
    settings = ServerSettings(
        report_slots=1, report_slot_wait=0.2, rate_per_minute=1000, rate_per_day=100_000
    )
    app = create_app(migrated_db_url, settings)
    chunks, status, close = raw_get(app, "project_id=101&limit=100", site["headers"])
    try:
        assert status[0].startswith("200") and next(chunks).startswith(b'{"data":[')
        with wsgi_client(app, headers=site["headers"]) as client:
            refused = client.get(PATH, params={"project_id": "101", "limit": "1"})
            assert refused.status_code == 503
            assert refused.json() == {"error": "the server is busy with other large answers; retry later"}
            assert refused.headers["retry-after"] == "1" and refused.headers["x-ratelimit-remaining"] == "998"
            assert client.get("/api/external/budget-views", params={"project_id": "101"}).status_code == 200
    finally:
        close()  # the client went away: its slot is free
    with wsgi_client(app, headers=site["headers"]) as client:
        assert client.get(PATH, params={"project_id": "101", "limit": "1"}).content == reference(limit=1)


# --- the streamed encoding of lazy arrays ---------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=4), inner, max_size=5),
    max_leaves=40,
)


@given(st.lists(json_values, max_size=8), st.sampled_from([1, 5, 64]))
def test_a_lazy_array_is_written_as_json_would_write_the_list(members: list, chunk_chars: int) -> None:
    assert b"".join(iter_json(LazyArray(members), chunk_chars)) == json_bytes(members)
    wrapped = {"total": 1, "data": LazyArray(members), "after": [1, {"a": "b"}]}
    expected = json_bytes({"total": 1, "data": members, "after": [1, {"a": "b"}]})
    assert b"".join(iter_json(wrapped, chunk_chars)) == expected
    assert b"".join(iter_json([0, LazyArray(members)], chunk_chars)) == json_bytes([0, members])


def test_po_list_json_is_one_array_in_local_and_remote_mode(
    site: dict[str, Any], cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = json.loads(reference())["data"]
    local = cli("po", "list", "--project", "101", "--json")
    assert (local.exit_code, local.stderr) == (0, "")
    assert json.loads(local.stdout) == expected
    route_remote_in_process(monkeypatch, site["app"])
    monkeypatch.delenv("SOWCTL_DB")
    scope = ["--api-key", site["headers"]["x-api-key"], "--org", ORG, "--company", COMPANY]
    remote = cli("--server", SERVER, *scope, "po", "list", "--project", "101", "--json")
    assert (remote.exit_code, remote.stderr) == (0, "")
    assert remote.stdout == local.stdout  # every page (20 orders each), as one array
