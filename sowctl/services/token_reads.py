"""Reads that authenticate their bearer token in the same statement.

A request to read one record sends two statements otherwise: the token by its hash, then
the record. Each round trip costs the server and the database more than the lookup
itself does (BENCHMARKS.md, "PostgreSQL get item against /healthz"), so here the
token's row and the record come back in one row: the token drives the statement, the
record is LEFT JOINed to it. No token, no row; a token and no such record, a row whose
record columns are NULL.

Nothing is remembered between requests: every request reads the token's row as it is
when its statement runs, so a revoked token is refused by the next statement, in every
worker. The token is judged by ``credentials.token_caller`` and the record by the same
function its ordinary lookup uses, so the answers and their wording are the same.
"""

from __future__ import annotations

import peewee as pw

from sowctl.services import credentials
from sowctl.services.access import ITEM_COLUMNS, Caller, item_of_row
from sowctl.services.lookup import Lookup
from sowctl.storage import models as m

_TOKEN_WIDTH = len(credentials.TOKEN_COLUMNS)

_ITEM_WITH_TOKEN = Lookup(
    lambda digest, item_id: (
        m.ApiToken.select(*credentials.TOKEN_COLUMNS, *ITEM_COLUMNS)
        .join(m.Item, pw.JOIN.LEFT_OUTER, on=(m.Item.id == item_id))
        .join(m.Sow, pw.JOIN.LEFT_OUTER, on=(m.Item.sow == m.Sow.key))
        .where(m.ApiToken.token_hash == digest)
        .limit(1)
    ),
    arity=2,
)


def item_for_token(secret: str, item_id: str) -> tuple[Caller, m.Item]:
    """The caller a bearer token's ``secret`` names and ``access.item_for(caller, item_id)``,
    in one statement. Unauthorized for the token first, then NotFound for the item, as the
    two lookups one after the other would answer."""
    digest = credentials.hash_secret(secret)
    row = _ITEM_WITH_TOKEN.first(digest, item_id)
    caller = credentials.token_caller(digest, None if row is None else row[:_TOKEN_WIDTH])
    assert row is not None  # token_caller refused a missing row
    return caller, item_of_row(caller, item_id, row[_TOKEN_WIDTH:])
