"""Item request and response models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar

from pydantic.json_schema import SkipJsonSchema

from sowctl.foundation.budgets import MAX_REORDER_ENTRIES
from sowctl.schemas.common import (
    CamelBody,
    CamelOut,
    Field,
    NonEmptyStr,
    PathId,
    StrictStr,
    Timestamp,
    bounded_list,
    whole_number_between,
)
from sowctl.schemas.vocabulary import MAX_ORDER_INDEX, ItemStatus, ItemType

# A whole JSON number (2, 2.0 or 2e0) from 0 to 2^31 - 1.
if TYPE_CHECKING:  # what the validators built below accept, for the type checker
    Position = int
else:
    Position = whole_number_between(0, MAX_ORDER_INDEX)
Description = Annotated[StrictStr, Field(max_length=100_000)]


class ItemCreate(CamelBody):
    """``parentItemId`` null or absent: a top-level item. ``id`` is for local mode only
    (``items create --id`` on a database file); absent, a uuid is generated. A caller
    scoped to an organization (every server request) has it ignored like any field the
    service does not have, so it is left out of the API's description."""

    null_allowed = frozenset({"parent_item_id"})
    # Wire names dropped from the body of a caller scoped to an organization before it is
    # validated: ignored whatever their value, as an unknown field is (operations.build_request).
    full_rights_only: ClassVar[frozenset[str]] = frozenset({"id"})

    title: NonEmptyStr
    type: ItemType
    description: Description | None = None
    parent_item_id: StrictStr | None = None
    order_index: Position | None = None
    id: SkipJsonSchema[PathId | None] = None


class ItemUpdate(CamelBody):
    """Every field optional; only the fields sent are changed. An empty description
    clears it; null is refused for every field."""

    title: NonEmptyStr | None = None
    description: Description | None = None
    status: ItemStatus | None = None
    order_index: Position | None = None


class ReorderEntry(CamelBody):
    id: StrictStr
    order_index: Position


if TYPE_CHECKING:  # what the validators built below accept, for the type checker
    ReorderEntries = list[ReorderEntry]
else:
    ReorderEntries = bounded_list(ReorderEntry, MAX_REORDER_ENTRIES, "item", at_least=1)


class ReorderRequest(CamelBody):
    items: ReorderEntries


class ItemOut(CamelOut):
    """An item; ``parentItemId`` is null for a top-level item."""

    wire_nulls: ClassVar[frozenset[str]] = frozenset({"parent_item_id"})

    id: str
    title: str
    description: str | None = None
    type: ItemType
    sow_id: str
    parent_item_id: str | None
    order_index: int
    status: ItemStatus
    created_at: Timestamp
    updated_at: Timestamp
    created_by_user_id: str | None = None


class ReorderedItem(CamelOut):
    id: str
    order_index: int


class ReorderResult(CamelOut):
    message: str
    items: list[ReorderedItem]


class Message(CamelOut):
    message: str
