"""Group B purchase orders: the options an order may use, creating one, and the
(sowctl extension) list of a project's orders, made as it is written.

Every lookup is scoped (``services.external_scope``): a record outside the caller's
organization and company is "not found", exactly as if it did not exist.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

from sowctl.foundation import clock, money
from sowctl.foundation.errors import NotFound
from sowctl.schemas.purchase_orders import (
    CommitmentRef,
    CostCodeRef,
    PurchaseOrderIn,
    PurchaseOrderLineOut,
    PurchaseOrderOptions,
    PurchaseOrderOut,
    VendorRef,
)
from sowctl.schemas.rows import from_row
from sowctl.services import events
from sowctl.services.access import Caller
from sowctl.services.external_scope import project_for
from sowctl.storage import models as m
from sowctl.storage.database import with_retries, write_transaction
from sowctl.storage.peewee_compat import tuples

# Purchase orders read and answered at a time: up to 10 x 1,000 lines (bench/bench_po_list_memory.py).
_ORDER_BATCH = 10


def purchase_order_options(caller: Caller, company_id: str | None, project_id: int) -> PurchaseOrderOptions:
    """The vendors, cost codes and commitments a purchase order of ``project_id`` may use."""
    project = project_for(caller, company_id, project_id)
    vendors = m.Vendor.select().where(m.Vendor.company == project.company_id).order_by(m.Vendor.id)
    codes = m.CostCode.select().where(m.CostCode.company == project.company_id).order_by(m.CostCode.id)
    commitments = (
        m.Commitment.select().where(m.Commitment.financial_project == project.id).order_by(m.Commitment.id)
    )
    return PurchaseOrderOptions(
        vendors=[from_row(VendorRef, vendor) for vendor in vendors],
        cost_codes=[from_row(CostCodeRef, code) for code in codes],
        commitments=[from_row(CommitmentRef, commitment) for commitment in commitments],
    )


def po_number(project_id: int, sequence: int) -> str:
    return f"PO-{project_id}-{sequence:04d}"


def _next_sequence(project_id: int) -> int:
    """One more than the highest PO-<project>-<n> of the project (run under its lock).

    The high-water mark makes this O(1); it is counted once after a migration or an
    import (which clears it), since imported numbers may be any text.
    """
    project = m.FinancialProject
    highest = project.select(project.po_high_water).where(project.id == project_id).scalar()
    if highest is None:
        highest = _highest_number(project_id)
    project.update(po_high_water=highest + 1).where(project.id == project_id).execute()
    return highest + 1


def _highest_number(project_id: int) -> int:
    """The highest n of the project's PO-<project>-<n> numbers, 0 when none: a full scan."""
    prefix = f"PO-{project_id}-"
    highest = 0
    numbers = m.PurchaseOrder.select(m.PurchaseOrder.number).where(
        m.PurchaseOrder.financial_project == project_id
    )
    for (number,) in tuples(numbers):
        suffix = number[len(prefix) :] if number.startswith(prefix) else ""
        if suffix.isascii() and suffix.isdigit():
            highest = max(highest, int(suffix))
    return highest


def create_purchase_order(caller: Caller, company_id: str | None, data: PurchaseOrderIn) -> PurchaseOrderOut:
    """Create a purchase order and its lines: all of it, or nothing at all.

    Every reference is checked before the first write, and the order and its
    lines are written in one transaction that also allocates the number, so
    concurrent creations in one project never share a number.
    """
    caller.require_write()
    project = project_for(caller, company_id, data.project_id)
    with write_transaction(f"po:{project.id}"):
        commitment = m.Commitment.get_or_none(
            (m.Commitment.id == data.commitment_id) & (m.Commitment.financial_project == project.id)
        )
        if commitment is None:
            raise NotFound(f"commitment {data.commitment_id} not found in project {project.id}")
        vendor = m.Vendor.get_or_none(
            (m.Vendor.id == data.vendor_id) & (m.Vendor.company == project.company_id)
        )
        if vendor is None:
            raise NotFound(f"vendor {data.vendor_id} not found")
        wanted = {line.cost_code_id for line in data.line_items}
        cost_codes = {
            code.id: code
            for code in m.CostCode.select().where(
                m.CostCode.id.in_(sorted(wanted)) & (m.CostCode.company == project.company_id)
            )
        }
        for index, line in enumerate(data.line_items):
            if line.cost_code_id not in cost_codes:
                raise NotFound(f"cost code {line.cost_code_id} not found (line_items[{index}].cost_code_id)")
        amount = money.total(line.amount for line in data.line_items)
        order = m.PurchaseOrder.create(
            financial_project=project.id,
            commitment=commitment.id,
            number=po_number(project.id, _next_sequence(project.id)),
            status=data.status,
            title=data.title,
            vendor=vendor.id,
            original_amount=amount,
            revised_amount=amount,
            total_amount=amount,
            created_at=clock.now(),
        )
        lines = [
            m.PurchaseOrderLine.create(
                purchase_order=order.id,
                position=index,
                description=line.description,
                amount=line.amount,
                cost_code=line.cost_code_id,
                quantity=line.quantity,
                unit_cost=line.unit_cost,
            )
            for index, line in enumerate(data.line_items)
        ]
        created = _created_out(order, vendor, lines, cost_codes)
        owner = m.Company.select(m.Company.organization).where(m.Company.id == project.company_id)
        organization_id = owner.scalar()
        # The organization's event lock last (after "po:<project>"): see services.events.
        events.record(organization_id, "purchaseOrder", "created", str(order.id), created)
    return created


def _created_out(
    order: m.PurchaseOrder, vendor: m.Vendor, lines: Sequence[m.PurchaseOrderLine], cost_codes: dict
) -> PurchaseOrderOut:
    """The purchase order just written, as the API returns it."""
    order_values = (order.id, order.number, order.status, order.title, vendor.id, vendor.name)
    amounts = (order.original_amount, order.revised_amount, order.total_amount)
    codes = [cost_codes[line.cost_code_id] for line in lines]
    line_values = [
        (line.id, line.description, line.amount, code.id, code.full_code, code.name)
        for line, code in zip(lines, codes, strict=True)
    ]
    return _order_out((*order_values, *amounts), line_values)


def list_purchase_orders(
    caller: Caller, company_id: str | None, project_id: int, *, offset: int = 0, limit: int | None = None
) -> tuple[Iterator[PurchaseOrderOut], int]:
    """A page of the project's purchase orders, oldest first, made as they are iterated,
    and how many there are (a sowctl extension; ``limit=None`` is every order, for local mode).

    The scope and the page's order ids are read here; the orders themselves, with their
    lines, ``_ORDER_BATCH`` at a time (two queries a batch) as the array is read. A page is
    up to 100 orders of up to 1,000 lines each, some 100 MB of JSON from data a caller wrote
    in 1 MiB requests: the server writes it as it is made and so holds one batch, not the
    page. Orders are never changed once written, and their lines are written with them; only
    the test double's reset deletes them, and it waits for the body to close (its gate). So
    the batches read later find what the ids named. They run outside any transaction: none
    is held open while a slow client reads."""
    project = project_for(caller, company_id, project_id)
    of_project = m.PurchaseOrder.financial_project == project.id
    ids_query = m.PurchaseOrder.select(m.PurchaseOrder.id).where(of_project).order_by(m.PurchaseOrder.id)
    ids = [order_id for (order_id,) in tuples(ids_query.offset(offset or None).limit(limit))]
    if limit is None or (offset == 0 and len(ids) < limit):
        total = offset + len(ids)
    else:
        total = m.PurchaseOrder.select().where(of_project).count()
    return _orders_in_batches(ids), total


def _orders_in_batches(ids: Sequence[int]) -> Iterator[PurchaseOrderOut]:
    for batch in _chunks(ids, _ORDER_BATCH):
        orders, lines = with_retries(functools.partial(_read_batch, batch))
        for row in orders:
            yield _order_out(row, lines.pop(row[0], ()))


def _read_batch(ids: Sequence[int]) -> tuple[list[tuple], dict[int, list[list[Any]]]]:
    """The orders of ``ids`` (``_ORDER_COLUMNS``, by id) and their lines (``_LINE_COLUMNS``
    by order, in position order): one query each, rows as tuples, not model instances."""
    po, line = m.PurchaseOrder, m.PurchaseOrderLine
    orders = list(
        tuples(po.select(*_ORDER_COLUMNS).join(m.Vendor).where(po.id.in_(list(ids))).order_by(po.id))
    )
    found: dict[int, list[list[Any]]] = defaultdict(list)
    rows = tuples(
        line.select(line.purchase_order, *_LINE_COLUMNS)
        .join(m.CostCode)
        .where(line.purchase_order.in_(list(ids)))
        .order_by(line.purchase_order, line.position, line.id)
    )
    for order_id, *values in rows:
        found[order_id].append(values)
    return orders, found


# The columns _order_out reads, in its order.
_ORDER_COLUMNS = (
    m.PurchaseOrder.id,
    m.PurchaseOrder.number,
    m.PurchaseOrder.status,
    m.PurchaseOrder.title,
    m.Vendor.id,
    m.Vendor.name,
    m.PurchaseOrder.original_amount,
    m.PurchaseOrder.revised_amount,
    m.PurchaseOrder.total_amount,
)
_LINE_COLUMNS = (
    m.PurchaseOrderLine.id,
    m.PurchaseOrderLine.description,
    m.PurchaseOrderLine.amount,
    m.CostCode.id,
    m.CostCode.full_code,
    m.CostCode.name,
)


def _order_out(order: Sequence[Any], lines: Iterable[Sequence[Any]]) -> PurchaseOrderOut:
    """The answer for one order: ``order`` holds the values of ``_ORDER_COLUMNS``, each line
    those of ``_LINE_COLUMNS``."""
    order_id, number, status, title, vendor_id, vendor_name, original, revised, total = order
    return PurchaseOrderOut(
        id=order_id,
        number=number,
        status=status,
        title=title,
        vendor=VendorRef(id=vendor_id, name=vendor_name),
        original_amount=Decimal(original),
        revised_amount=Decimal(revised),
        total_amount=Decimal(total),
        line_items=[
            PurchaseOrderLineOut(
                id=line_id,
                description=description,
                amount=Decimal(amount),
                cost_code=CostCodeRef(id=code_id, full_code=full_code, name=name),
            )
            for line_id, description, amount, code_id, full_code, name in lines
        ],
    )


def _chunks(values: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
