#!/usr/bin/env python3
"""What one API key can make a `sowctl serve` worker hold with the purchase-order list.

    python bench/bench_po_list_memory.py                     # 100 orders x 1,000 lines, 8 clients
    python bench/bench_po_list_memory.py --clients 4 --threads 4

A create request may carry 1,000 line items within its 1 MiB body, so a page of 100 such
orders (``GET /api/external/purchase-orders?project_id=101&limit=100``) is some 100 MB of
JSON. The demo dataset is imported into a fresh SQLite file and 100 orders of 1,000 lines
(950-character descriptions, about what fits in 1 MiB) are inserted into its project 101
directly, as the importer would leave them. ``sowctl serve --quiet`` (1 worker,
``--threads``, default 9 so that 8 clients all run at once) answers ``--clients`` such
requests sent at once, each read as a stream and dropped. Printed: the worker's resident
memory after a warm-up request of one order (VmRSS) and its peak (VmHWM), the answers by
status, the body size and its SHA-256 (the same before and after a change: the bytes did not
change), and the wall time.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import sys
import tempfile
import threading
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from served import Served

from sowctl.services import credentials
from sowctl.services.dataset import import_dataset
from sowctl.services.demo_data import demo_dataset
from sowctl.storage import models as m
from sowctl.storage.database import open_database

ORG, COMPANY, PROJECT, VENDOR, COMMITMENT = "org-acme", "comp-acme-llc", 101, 7, "5001"
CREATED = datetime.datetime(2026, 1, 1)


def seed(path: Path, orders: int, lines: int, chars: int) -> str:
    """The database at ``path`` with the demo data and ``orders`` orders of ``lines`` lines;
    returns an API key of org-acme."""
    database = open_database(str(path))
    try:
        import_dataset(demo_dataset(datetime.date(2026, 1, 1)))
        codes = [c.id for c in m.CostCode.select().where(m.CostCode.company == COMPANY)]
        line_fields = [
            m.PurchaseOrderLine.purchase_order,
            m.PurchaseOrderLine.position,
            m.PurchaseOrderLine.description,
            m.PurchaseOrderLine.amount,
            m.PurchaseOrderLine.cost_code,
        ]
        with database.atomic():
            for n in range(orders):
                order = m.PurchaseOrder.create(
                    financial_project=PROJECT,
                    commitment=COMMITMENT,
                    number=f"BIG-{n:04d}",
                    status="issued",
                    title=f"Large order {n}",
                    vendor=VENDOR,
                    original_amount=Decimal(lines),
                    revised_amount=Decimal(lines),
                    total_amount=Decimal(lines),
                    created_at=CREATED,
                )
                rows = [
                    (order.id, p, f"{n}-{p}-" + "x" * chars, Decimal("1.00"), codes[p % len(codes)])
                    for p in range(lines)
                ]
                for start in range(0, len(rows), 200):
                    m.PurchaseOrderLine.insert_many(rows[start : start + 200], fields=line_fields).execute()
        return credentials.create_key(ORG).secret
    finally:
        database.close()


def fetch(url: str, key: str, out: list) -> None:
    """(status, body bytes, sha256, total header) of one request, its body read as a stream."""
    digest, size = hashlib.sha256(), 0
    headers = {"x-api-key": key, "x-organization-id": ORG, "x-company-id": COMPANY}
    with httpx.Client(timeout=300, headers=headers) as client, client.stream("GET", url) as response:
        for chunk in response.iter_raw():
            size += len(chunk)
            digest.update(chunk)
    out.append((response.status_code, size, digest.hexdigest()[:16], response.headers.get("x-total-count")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100)
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--chars", type=int, default=950, help="characters of each line's description")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--threads", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "po.db"
        key = seed(db, args.orders, args.lines, args.chars)
        served = Served(db, args.threads)
        try:
            url = f"{served.url}/api/external/purchase-orders?project_id={PROJECT}&limit="
            fetch(url + "1", key, [])  # warm-up: the modules and caches any request needs
            before = served.memory("VmRSS")
            url += "100"
            results: list = []
            threads = [threading.Thread(target=fetch, args=(url, key, results)) for _ in range(args.clients)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - started
            peak = served.memory("VmHWM")
            time.sleep(0.5)  # the last bodies' close (and what it frees) runs after the client read them
            after = served.memory("VmRSS")
        finally:
            served.stop()
    statuses = dict(sorted(Counter(status for status, *_ in results).items()))
    sizes = sorted({(size, digest, total) for status, size, digest, total in results if status == 200})
    print(
        f"{args.clients} clients x page of {args.orders} orders x {args.lines:,} lines "
        f"({args.threads} threads): answers by status {statuses}, "
        + ", ".join(f"{n / 1e6:,.1f} MB sha256 {digest} X-Total-Count {total}" for n, digest, total in sizes)
    )
    print(
        f"worker RSS {before / 1024:,.0f} MiB before, peak {peak / 1024:,.0f} MiB "
        f"(+{(peak - before) / 1024:,.0f} MiB), {after / 1024:,.0f} MiB after, {seconds:.1f} s"
    )


if __name__ == "__main__":
    main()
