"""A page of a query and the number of all its rows: Group C's lists (projects, clients).

Queries per call, whatever the page size: one for the page and one for ``total`` (only
when paging). Order: pinned records first, then by name (case-insensitive), then by id,
so that pages never overlap or skip a record (each list's query says so).
"""

from __future__ import annotations

from typing import TypeVar

import peewee as pw

M = TypeVar("M", bound=pw.Model)


def page_and_total(query: pw.ModelSelect[M], limit: int | None, offset: int) -> tuple[list[M], int]:
    if limit is None and not offset:
        rows = list(query)
        return rows, len(rows)
    total = query.order_by().count()
    if limit is not None:
        query = query.limit(limit)
    if offset:
        query = query.offset(offset)
    return list(query), total
