#!/usr/bin/env python3
"""Purchase-order create against the orders a project already holds.

    python bench/bench_po_growth.py                  # 0 and 10,000 orders, SQLite
    python bench/bench_po_growth.py --orders 100000 --db postgresql://postgres@127.0.0.1/bench

Loads the demo dataset into a fresh database, times ``samples`` creates through the
core (each its own write transaction, as a request) with the demo project's orders
as they are, bulk-inserts ``orders`` more orders into that project, and times the
same creates again. Prints p50 of each and their ratio: the target is within 1.5x
(a create is O(1) in the project's orders).
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

from sowctl.foundation import clock
from sowctl.schemas.purchase_orders import PurchaseOrderIn
from sowctl.services import purchase_orders
from sowctl.services.access import Caller
from sowctl.services.dataset import import_dataset
from sowctl.services.demo_data import demo_dataset
from sowctl.storage import models as m
from sowctl.storage.database import open_database


def order_body(dataset: dict) -> PurchaseOrderIn:
    order = dataset["purchaseOrders"][0]
    return PurchaseOrderIn.model_validate(
        {
            "project_id": str(order["project_id"]),  # the spec sends it as a string
            "commitment_id": order["commitment_id"],
            "vendor_id": order["vendor"]["id"],
            "status": "draft",
            "title": "bench",
            "line_items": [
                {"description": "line", "amount": "10.00", "cost_code_id": line["cost_code"]["id"]}
                for line in order["line_items"]
            ],
        }
    )


def p50_ms(body: PurchaseOrderIn, samples: int) -> float:
    caller, timings = Caller.local(), []
    for _ in range(samples):
        started = time.perf_counter()
        purchase_orders.create_purchase_order(caller, None, body)
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def add_orders(project_id: int, commitment_id: str, vendor_id: int, count: int) -> None:
    now = clock.now()
    rows = [
        (
            project_id,
            commitment_id,
            f"BULK-{n}",
            "issued",
            "bulk",
            vendor_id,
            Decimal(1),
            Decimal(1),
            Decimal(1),
            now,
        )
        for n in range(count)
    ]
    po = m.PurchaseOrder
    fields = [
        po.financial_project,
        po.commitment,
        po.number,
        po.status,
        po.title,
        po.vendor,
        po.original_amount,
        po.revised_amount,
        po.total_amount,
        po.created_at,
    ]
    with m.database_proxy.atomic():
        for start in range(0, len(rows), 1000):
            po.insert_many(rows[start : start + 1000], fields=fields).execute()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--db", help="database URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        open_database(args.db or str(Path(tmp) / "bench.db"))
        dataset = demo_dataset(datetime.date.today())
        import_dataset(dataset)
        body = order_body(dataset)
        before = p50_ms(body, args.samples)
        add_orders(body.project_id, body.commitment_id, body.vendor_id, args.orders)
        after = p50_ms(body, args.samples)
    print(f"purchase-order create p50: {before:.2f} ms at the demo's orders, {after:.2f} ms with")
    print(f"{args.orders:,} more orders in the project: ratio {after / before:.2f} (target <= 1.5)")
    sys.exit(0)


if __name__ == "__main__":
    main()
