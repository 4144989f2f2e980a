"""A page of a SOW's items, as the list route sends it: the request clients make most.

Per page, whatever its depth or size, after the SOW lookup:

* one statement reads the page. Its rows are found through the index on ``(sow_id,
  order_index, created_at, id)`` alone (schema v7): the database skips ``OFFSET``
  entries inside the index without reading their rows or sorting, so page 50 costs
  about what page 1 does. The same statement counts the matching items for
  ``X-Total-Count`` (one snapshot, one round trip), except on SQLite when this
  connection counted them already and nothing has been committed since (``PRAGMA
  data_version``, ``total_changes``): then the count is not made again;
* nothing more for a requirement's calculated status: the page's rows carry the counts
  of task items below each item (``storage.tallies``), from which it is calculated.

The SQL of each variant (filters, paged or not, counted or not) is built once per
dialect (``services.lookup``) and rows stay tuples (``PageRow``): the operation makes
each its JSON object through ``row_dumper(ItemOut)``, with no model instance per row,
Peewee's or Pydantic's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import peewee as pw

from sowctl.schemas.items import ItemOut
from sowctl.services.item_rules import shown_status
from sowctl.services.lookup import Lookup
from sowctl.storage import models as m
from sowctl.storage import tallies
from sowctl.storage.peewee_compat import connection_state


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
    # The task items below, by status (``tallies.STATUSES``): not sent, they give a
    # requirement's shown status.
    pending_below: int
    in_progress_below: int
    completed_below: int
    cancelled_below: int


_I = m.Item
# ItemOut's fields, in its order (tests/services/test_item_pages.py holds the two together),
# then the counts below.
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
    *tallies.FIELDS,
)
SENT = len(ItemOut.model_fields)  # the values of a row that are ItemOut's fields
_ORDER = (_I.order_index, _I.created_at, _I.id)  # the list order; ids make it total
_STATUS = PageRow._fields.index("status")
_SOW = PageRow._fields.index("sow_id")


def _matching(sow_id: Any, item_type: Any, parent_id: Any, with_type: bool, with_parent: bool):
    condition = _I.sow == sow_id
    if with_type:
        condition &= _I.type == item_type
    if with_parent:
        condition &= _I.parent == parent_id
    return condition


def _page_lookup(with_type: bool, with_parent: bool, mode: str) -> Lookup:
    """The statement of one variant, ``mode`` "all", "page" or "counted" (a page with the
    total): parameters (sow, [type], [parent], [limit, offset])."""

    def build(*params: Any) -> pw.Query:
        sow_id, rest = params[0], list(params[1:])
        item_type = rest.pop(0) if with_type else None
        parent_id = rest.pop(0) if with_parent else None
        where = _matching(sow_id, item_type, parent_id, with_type, with_parent)
        if mode == "all":
            return _I.select(*COLUMNS).where(where).order_by(*_ORDER)
        limit, offset = rest
        # SQLite finds a row by its rowid directly, by its id through one more index.
        key = pw.SQL("rowid") if isinstance(m.database_proxy.obj, pw.SqliteDatabase) else _I.id
        page = _I.select(key).where(where).order_by(*_ORDER).limit(limit).offset(offset)
        extra = [_I.select(pw.fn.COUNT(pw.SQL("*"))).where(where).alias("total")] if mode == "counted" else []
        return _I.select(*COLUMNS, *extra).where(key.in_(page)).order_by(*_ORDER)

    arity = 1 + with_type + with_parent + (0 if mode == "all" else 2)
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
    (t, p, mode): _page_lookup(t, p, mode)
    for t in (False, True)
    for p in (False, True)
    for mode in ("all", "page", "counted")
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
    if not offset and limit is None:
        rows = [PageRow._make(raw) for raw in _PAGES[(*key, "all")].all(sow_id, *filters)]
        return rows, len(rows)
    # LIMIT -1 is "no limit" to SQLite but an error to PostgreSQL: an offset alone gets a
    # limit beyond any table.
    bounds = (limit if limit is not None else 2**62, offset)
    counts, version = _known_counts()
    total = counts.get((sow_id, item_type, parent_id)) if counts is not None else None
    if total is not None:
        rows = [PageRow._make(raw) for raw in _PAGES[(*key, "page")].all(sow_id, *filters, *bounds)]
        return rows, total
    raw_rows = _PAGES[(*key, "counted")].all(sow_id, *filters, *bounds)
    if raw_rows:
        total = int(raw_rows[0][-1])
        rows = [PageRow._make(raw[:-1]) for raw in raw_rows]
    else:
        rows = []
        # Past the end: say how many (a count is one row).
        total = int(_COUNTS[key].all(sow_id, *filters)[0][0]) if offset else 0
    if counts is not None and _known_counts()[1] == version:  # nothing committed meanwhile
        counts[(sow_id, item_type, parent_id)] = total
    return rows, total


def _known_counts() -> tuple[dict | None, Any]:
    """SQLite: the totals this connection counted since the database last changed, and
    that version. None on other databases (each page counts in its own statement).

    A version is ``PRAGMA data_version`` (changes when another connection commits) and
    the connection's ``total_changes`` (when it writes itself): while neither moves,
    nothing was added or removed anywhere, so a total counted before still holds.
    """
    database = m.database_proxy.obj
    if not isinstance(database, pw.SqliteDatabase):
        return None, None
    connection = database.connection()
    version = (connection.execute("PRAGMA data_version").fetchone()[0], connection.total_changes)
    state = connection_state(database)
    known = getattr(state, "sowctl_counts", None)
    if known is None or known[0] is not connection or known[1] != version:
        known = (connection, version, {})
        state.sowctl_counts = known
    return known[2], version


def shown_rows(rows: Sequence[PageRow], sow_id: str) -> list[PageRow]:
    """``rows`` as the API shows them: each with its shown status (a requirement's
    calculated from its counts) and its SOW's shown id ``sow_id`` (rows carry the stored
    key, which differs when another organization held the id first)."""
    out = []
    for row in rows:
        shown = shown_status(row.type, row.status, cast(Sequence[int], row[SENT:]))  # the counts
        if shown != row[_STATUS] or row[_SOW] != sow_id:
            row = row._replace(status=shown, sow_id=sow_id)
        out.append(row)
    return out
