"""A page of a SOW's items, as the list route sends it: the request clients make most.

Per page, whatever its depth or size, after the SOW lookup:

* one statement reads the page and, in the same snapshot, the number of matching
  items (``X-Total-Count``). The page's ids come from the index on
  ``(sow_id, order_index, created_at, id)`` alone (schema v5): the database skips
  ``OFFSET`` entries inside the index without reading their rows or sorting, so page
  50 costs about what page 1 does. A page that comes back short needs no count (the
  total is its offset plus its length), and neither does a list without paging;
* one recursive query over the subtrees of the requirements shown, if any
  (``items._shown_statuses``), for their calculated status.

The SQL of each variant (filters, paged or not) is built once per dialect
(``services.lookup``), rows stay tuples, and each becomes its JSON object through
``row_dumper(ItemOut)``: no model instance per row, either Peewee's or Pydantic's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import peewee as pw

from sowctl import models as m
from sowctl.schemas.common import row_dumper
from sowctl.schemas.items import ItemOut
from sowctl.services.lookup import Lookup


class PageRow(NamedTuple):
    """One item of a page as the driver returns it, in ``ItemOut``'s field order (``status``
    as stored, timestamps as the driver gives them)."""

    id: str
    title: str
    description: str | None
    type: str
    sow_id: str
    parent_item_id: str | None
    order_index: int
    status: str
    created_at: Any
    updated_at: Any
    created_by_user_id: str | None


_I = m.Item
# ItemOut's fields, in its order (tests/test_item_pages.py holds the two together).
COLUMNS: tuple[pw.Field, ...] = (
    _I.id,
    _I.title,
    _I.description,
    _I.type,
    _I.sow,
    _I.parent,
    _I.order_index,
    _I.status,
    _I.created_at,
    _I.updated_at,
    _I.created_by_user_id,
)
_ORDER = (_I.order_index, _I.created_at, _I.id)  # the list order; ids make it total
_STATUS = PageRow._fields.index("status")


# PostgreSQL's driver gives datetimes, SQLite's the text peewee stored: ItemOut's
# Timestamp serializer (clock.format_timestamp) takes either.
DUMP_ROW = row_dumper(ItemOut)


def _matching(sow_id: Any, item_type: Any, parent_id: Any, with_type: bool, with_parent: bool):
    condition = _I.sow == sow_id
    if with_type:
        condition &= _I.type == item_type
    if with_parent:
        condition &= _I.parent == parent_id
    return condition


def _page_lookup(with_type: bool, with_parent: bool, paged: bool) -> Lookup:
    """The statement of one variant: parameters (sow, [type], [parent], [limit, offset])."""

    def build(*params: Any) -> pw.Query:
        sow_id, rest = params[0], list(params[1:])
        item_type = rest.pop(0) if with_type else None
        parent_id = rest.pop(0) if with_parent else None
        where = _matching(sow_id, item_type, parent_id, with_type, with_parent)
        if not paged:
            return _I.select(*COLUMNS).where(where).order_by(*_ORDER)
        limit, offset = rest
        ids = _I.select(_I.id).where(where).order_by(*_ORDER).limit(limit).offset(offset)
        count = _I.select(pw.fn.COUNT(pw.SQL("*"))).where(where)
        return _I.select(*COLUMNS, count.alias("total")).where(_I.id.in_(ids)).order_by(*_ORDER)

    arity = 1 + with_type + with_parent + (2 if paged else 0)
    return Lookup(build, arity)


def _count_lookup(with_type: bool, with_parent: bool) -> Lookup:
    def build(*params: Any) -> pw.Query:
        sow_id, rest = params[0], list(params[1:])
        item_type = rest.pop(0) if with_type else None
        parent_id = rest.pop(0) if with_parent else None
        where = _matching(sow_id, item_type, parent_id, with_type, with_parent)
        return _I.select(pw.fn.COUNT(pw.SQL("*"))).where(where)

    return Lookup(build, 1 + with_type + with_parent)


_PAGES = {
    (t, p, paged): _page_lookup(t, p, paged)
    for t in (False, True)
    for p in (False, True)
    for paged in (False, True)
}
_COUNTS = {(t, p): _count_lookup(t, p) for t in (False, True) for p in (False, True)}


def read_page(
    sow_id: str,
    *,
    item_type: str | None = None,
    parent_id: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> tuple[list[PageRow], int]:
    """The matching items of a SOW in list order, ``offset``/``limit`` applied, and how many
    match in all. The caller has checked that the SOW is visible."""
    key = (item_type is not None, parent_id is not None)
    filters = [value for value in (item_type, parent_id) if value is not None]
    paged = bool(offset) or limit is not None
    if not paged:
        rows = [PageRow._make(raw) for raw in _PAGES[(*key, False)].all(sow_id, *filters)]
        return rows, len(rows)
    # LIMIT -1 is "no limit" to SQLite but an error to PostgreSQL: an offset alone gets a
    # limit beyond any table.
    raw_rows = _PAGES[(*key, True)].all(sow_id, *filters, limit if limit is not None else 2**62, offset)
    if raw_rows:
        return [PageRow._make(raw[:-1]) for raw in raw_rows], int(raw_rows[0][-1])
    if not offset:
        return [], 0
    return [], int(_COUNTS[key].first(sow_id, *filters)[0])  # past the end: still say how many


def dump_page(rows: Sequence[PageRow], statuses: dict[str, str]) -> list[dict[str, Any]]:
    """The JSON objects of ``rows``, each with its shown status (``statuses``, else its own)."""
    out = []
    for row in rows:
        shown = statuses.get(row[0])
        out.append(DUMP_ROW(row if shown is None or shown == row[_STATUS] else row._replace(status=shown)))
    return out
