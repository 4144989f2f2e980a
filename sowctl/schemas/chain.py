"""A SOW's dependency chain as the core answers it (``services.chain.chain_report``) and the
CI gate reads it (``gate.risks``): rows and small records, not the API's body, which
``operations.chain`` makes of it (and reads back into it, in remote mode).

A report of a SOW of 50,000 dependencies holds 50,000 rows: tuples as the database
driver gives them, whose columns ``CHAIN_COLUMNS`` names, not a model each.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, NamedTuple


class ChainItem(NamedTuple):
    """An item a dependency names: its type and shown status only with ``risks`` asked for."""

    id: str
    title: str | None
    type: str | None = None
    status: str | None = None


class ChainTreeRow(NamedTuple):
    """An item of the SOW, for the tree format: ``status`` is the shown one."""

    id: str
    parent_id: str | None
    type: str
    status: str
    title: str


# The columns of a dependency row, in their order.
CHAIN_COLUMNS = (
    "id",
    "source_item_id",
    "target_item_id",
    "dependency_type",
    "risk_level",
    "status",
    "is_external",
    "external_target",
    "sla_date",
    "escalation_date",
)
# A dependency as the driver gives it (``CHAIN_COLUMNS``): a tuple, not a model, for a
# SOW has tens of thousands. Dates are the driver's (text on SQLite, date on PostgreSQL).
DependencyRow = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class ChainReport:
    """A SOW's chain: its dependencies, the items they name, its issues; its items for the
    tree format."""

    sow_id: str  # the SOW's shown id
    as_of: date | None  # with risks asked for: the server's day (UTC) ``overdue`` was judged by
    dependencies: list[DependencyRow]  # oldest first (createdAt, then id)
    items: dict[str, ChainItem]  # the SOW's items and the targets in other SOWs, by id
    circular: list[list[str]]
    overdue: list[int]  # positions in ``dependencies``
    critical: list[int]
    critical_path: list[str]
    tree: list[ChainTreeRow] | None  # the format=tree report's items; None for format=flat
