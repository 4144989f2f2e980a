"""A page of a SOW's items, as the list route sends it: the request clients make most.

Per page, whatever its depth or size, after the SOW lookup:

* one statement reads the page. Its rows are found through the index on ``(sow_id,
  order_index, created_at, id)`` alone (schema v7): the database skips ``OFFSET``
  entries inside the index without reading their rows or sorting, so page 50 costs
  about what page 1 does. The same statement counts the matching items for
  ``X-Total-Count`` (one snapshot, one round trip), except on SQLite when this
  connection counted them already and nothing has been committed since (``PRAGMA
  data_version``, ``total_changes``): then the count is not made again, and a page
  whose first row (or the row before it) this connection read is read from that row's
  sort key on, skipping nothing: a page asked for again, and the next page of a client
  walking the list, cost what the first page does;
* nothing more for a requirement's calculated status: the page's rows carry the counts
  of task items below each item (``storage.tallies``), from which it is calculated.

The SQL of each variant (filters, paged or not, counted or not) is built once per
dialect (``services.lookup``) and rows stay the driver's tuples (``ItemRows``): the
operation makes each its JSON object through ``row_dumper(ItemOut)``, with no model
instance per row, Peewee's or Pydantic's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

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


TYPE = PageRow._fields.index("type")
STATUS = _STATUS
BELOW = slice(SENT, len(COLUMNS))  # a row's counts, whatever follows them (a page's total)


def _matching(sow_id: Any, item_type: Any, parent_id: Any, with_type: bool, with_parent: bool):
    condition = _I.sow == sow_id
    if with_type:
        condition &= _I.type == item_type
    if with_parent:
        condition &= _I.parent == parent_id
    return condition


def _page_lookup(with_type: bool, with_parent: bool, mode: str) -> Lookup:
    """The statement of one variant: parameters (sow, [type], [parent]), then by ``mode``:

    * "all": none, every matching item;
    * "page", "counted" (with the total in each row): ``limit, offset``;
    * "first", "first counted": ``limit``, a page at offset 0;
    * "from", "after": ``order_index, created_at, id, limit``, the page that starts at the
      row of that sort key or just after it (a start this connection knows: ``read_page``).
    """

    def build(*params: Any) -> pw.Query:
        sow_id, rest = params[0], list(params[1:])
        item_type = rest.pop(0) if with_type else None
        parent_id = rest.pop(0) if with_parent else None
        where = _matching(sow_id, item_type, parent_id, with_type, with_parent)
        if mode == "all":
            return _I.select(*COLUMNS).where(where).order_by(*_ORDER)
        if mode in ("from", "after"):
            *start, limit = rest
            edge = (
                pw.Tuple(*_ORDER) >= pw.Tuple(*start)
                if mode == "from"
                else pw.Tuple(*_ORDER) > pw.Tuple(*start)
            )
            return _I.select(*COLUMNS).where(where & edge).order_by(*_ORDER).limit(limit)
        extra = [_I.select(pw.fn.COUNT(pw.SQL("*"))).where(where).alias("total")] if "counted" in mode else []
        if mode.startswith("first"):  # the index read in order from the start: no lookup of keys, no sort
            return _I.select(*COLUMNS, *extra).where(where).order_by(*_ORDER).limit(rest[0])
        limit, offset = rest
        # SQLite finds a row by its rowid directly, by its id through one more index.
        key = pw.SQL("rowid") if isinstance(m.database_proxy.obj, pw.SqliteDatabase) else _I.id
        page = _I.select(key).where(where).order_by(*_ORDER).limit(limit).offset(offset)
        return _I.select(*COLUMNS, *extra).where(key.in_(page)).order_by(*_ORDER)

    arity = 1 + with_type + with_parent + _ARITY[mode]
    return Lookup(build, arity)


_ARITY = {"all": 0, "page": 2, "counted": 2, "first": 1, "first counted": 1, "from": 4, "after": 4}


def _count_lookup(with_type: bool, with_parent: bool) -> Lookup:
    def build(*params: Any) -> pw.Query:
        sow_id, rest = params[0], list(params[1:])
        item_type = rest.pop(0) if with_type else None
        parent_id = rest.pop(0) if with_parent else None
        where = _matching(sow_id, item_type, parent_id, with_type, with_parent)
        return _I.select(pw.fn.COUNT(pw.SQL("*"))).where(where)

    return Lookup(build, 1 + with_type + with_parent)


_PAGES = {
    (t, p, mode): _page_lookup(t, p, mode) for t in (False, True) for p in (False, True) for mode in _ARITY
}
_COUNTS = {(t, p): _count_lookup(t, p) for t in (False, True) for p in (False, True)}
# Totals and page starts one connection keeps (``_known``), at most: a client asking for
# ever new filters or offsets between two writes does not grow a worker's memory.
_KNOWN_MAX = 1024
_SORT_KEY = tuple(PageRow._fields.index(name) for name in ("order_index", "created_at", "id"))


def read_page(
    sow_id: str,
    *,
    item_type: str | None = None,
    parent_id: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> tuple[list[tuple], int]:
    """The matching items of a SOW in list order (rows of ``PageRow``'s values, as the driver
    returns them, maybe followed by more), ``offset``/``limit`` applied, and how many match
    in all. The caller has checked that the SOW is visible."""
    key = (item_type is not None, parent_id is not None)
    filters = [value for value in (item_type, parent_id) if value is not None]
    if not offset and limit is None:
        rows = _PAGES[(*key, "all")].all(sow_id, *filters)
        return rows, len(rows)
    # LIMIT -1 is "no limit" to SQLite but an error to PostgreSQL: an offset alone gets a
    # limit beyond any table.
    bound = limit if limit is not None else 2**62
    known = _known()
    listing = (sow_id, item_type, parent_id)
    total = known.get(listing) if known is not None else None
    if known is not None and total is not None:
        start = known.get((*listing, offset))
        if start is not None:  # the sort key of the page's first row, or of the row before it
            rows = _PAGES[(*key, start[0])].all(sow_id, *filters, *start[1], bound)
        elif offset:
            rows = _PAGES[(*key, "page")].all(sow_id, *filters, bound, offset)
        else:
            rows = _PAGES[(*key, "first")].all(sow_id, *filters, bound)
    else:
        rows, total = _counted(key, sow_id, filters, bound, offset)
    if known is not None:
        _remember(known, listing, offset, rows, total)
    return rows, total


def _counted(
    key: tuple[bool, bool], sow_id: str, filters: list[str], limit: int, offset: int
) -> tuple[list, int]:
    """A page and the total, in one statement (two past the end)."""
    if offset:
        rows = _PAGES[(*key, "counted")].all(sow_id, *filters, limit, offset)
    else:
        rows = _PAGES[(*key, "first counted")].all(sow_id, *filters, limit)
    if rows:
        return rows, int(rows[0][-1])  # each row with the total after its counts
    # Past the end: say how many (a count is one row).
    return [], int(_COUNTS[key].all(sow_id, *filters)[0][0]) if offset else 0


def _remember(known: dict, listing: tuple, offset: int, rows: list, total: int) -> None:
    """Keep the total, and where this page and the next start: the sort key of this page's
    first row (the page again: rows "from" it) and of its last (the next: rows "after" it).

    Kept under the version read before the page was: if another connection committed in
    between, the page may be newer than that version, but the next request reads a newer
    version (``data_version`` only moves forward) and does not look here again.
    """
    if len(known) >= _KNOWN_MAX:
        known.clear()
    known[listing] = total
    if rows:
        known[(*listing, offset)] = ("from", [rows[0][k] for k in _SORT_KEY])
        known[(*listing, offset + len(rows))] = ("after", [rows[-1][k] for k in _SORT_KEY])


def _known() -> dict | None:
    """SQLite: the totals and page starts this connection found since the database last
    changed (``_remember``). None on other databases (each page counts in its own statement).

    A version is ``PRAGMA data_version`` (changes when another connection commits) and
    the connection's ``total_changes`` (when it writes itself): while neither moves,
    nothing was added, removed or moved anywhere, so a total counted before still holds,
    and so does the row a page starts at.
    """
    database = m.database_proxy.obj
    if not isinstance(database, pw.SqliteDatabase):
        return None
    connection = database.connection()
    version = (connection.execute("PRAGMA data_version").fetchone()[0], connection.total_changes)
    state = connection_state(database)
    known = getattr(state, "sowctl_counts", None)
    if known is None or known[0] is not connection or known[1] != version:
        known = (connection, version, {})
        state.sowctl_counts = known
    return known[2]


class ItemRows:
    """Items as the core answers them: ``rows``, the driver's tuples (``PageRow``'s values,
    maybe followed by more), and ``sow_id``, their SOW's shown id (rows carry the stored key,
    which differs when another organization held the id first). The operation makes their
    JSON objects from these directly (the hot path); iterating gives each as a ``PageRow``
    as the API shows it."""

    __slots__ = ("rows", "sow_id")

    def __init__(self, rows: Sequence[Sequence[Any]], sow_id: str) -> None:
        self.rows = rows
        self.sow_id = sow_id

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[PageRow]:
        for row in self.rows:
            shown = shown_status(row[TYPE], row[STATUS], row[BELOW])
            yield PageRow._make(row[: len(COLUMNS)])._replace(status=shown, sow_id=self.sow_id)
