"""Reads that authenticate their bearer token in the same statement.

A request to read one record sends two statements otherwise: the token by its hash, then
the record. Each round trip costs the server and the database more than the lookup
itself does (BENCHMARKS.md, "PostgreSQL get item against /healthz"), so here the
token's row and the record come back in one row: the token drives the statement, the
record is LEFT JOINed to it. No token, no row; a token and no such record, a row whose
record columns are NULL.

Nothing is remembered between requests: every request reads the token's row as it is
when its statement runs, so a revoked token is refused by the next statement, in every
worker. The token is judged by ``credentials.token_caller``, as every bearer token is,
and the item comes back as a list page's row (``item_pages``), which the operation makes
its JSON object with no model instance made in between.
"""

from __future__ import annotations

import peewee as pw

from sowctl.services import credentials, item_pages
from sowctl.services.access import Caller, item_not_found
from sowctl.services.lookup import Lookup
from sowctl.storage import models as m

_TOKEN_WIDTH = len(credentials.TOKEN_COLUMNS)
# The item's columns as a list page reads them, its SOW's shown id in place of the stored
# key (the answer shows the one, never the other): a column fewer to send, decode and replace.
_ITEM_COLUMNS = tuple(m.Sow.id if column is m.Item.sow else column for column in item_pages.COLUMNS)

# The token's columns, the item's, its SOW's organization. At most one row without a LIMIT
# (the token's hash is unique, the item and its SOW are read by their keys): one parameter
# fewer for the database to read and the driver to quote on every request.
_ITEM_WITH_TOKEN = Lookup(
    lambda digest, item_id: (
        m.ApiToken.select(*credentials.TOKEN_COLUMNS, *_ITEM_COLUMNS, m.Sow.organization)
        .join(m.Item, pw.JOIN.LEFT_OUTER, on=(m.Item.id == item_id))
        .join(m.Sow, pw.JOIN.LEFT_OUTER, on=(m.Item.sow == m.Sow.key))
        .where(m.ApiToken.token_hash == digest)
    ),
    arity=2,
)


def item_for_token(secret: str, item_id: str) -> tuple[Caller, item_pages.ItemRows]:
    """The caller a bearer token's ``secret`` names, and the item ``item_id`` as
    ``items.get_item`` shows it to that caller (a list page's row), in one statement. Unauthorized
    for the token first, then NotFound for the item (missing, or another organization's),
    as authenticating and then reading would answer."""
    digest = credentials.hash_secret(secret)
    row = _ITEM_WITH_TOKEN.first(digest, item_id)
    caller = credentials.token_caller(digest, None if row is None else row[:_TOKEN_WIDTH])
    assert row is not None  # token_caller refused a missing row
    item = item_pages.PageRow._make(row[_TOKEN_WIDTH:-1])
    if item.id is None or not caller.sees(row[-1]):  # no item of that id, or not theirs
        raise item_not_found(item_id)
    return caller, item_pages.ItemRows([item], item.sow_id)
