"""Item request and response models (spec §2.2, §4.2)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict

from sowctl.schemas.common import (
    CamelModel,
    Field,
    NonEmptyStr,
    StrictInt,
    StrictStr,
    Timestamp,
    not_nullable,
)

ItemType = Literal["requirement", "task_item"]
ItemStatus = Literal["pending", "in_progress", "completed", "cancelled"]
OrderIndex = StrictInt
MAX_ORDER_INDEX = 2**31 - 1
Position = Annotated[OrderIndex, Field(ge=0, le=MAX_ORDER_INDEX)]


class ItemCreate(CamelModel):
    title: NonEmptyStr
    type: ItemType
    description: StrictStr | None = Field(default=None, max_length=100_000)
    parent_item_id: StrictStr | None = None
    order_index: OrderIndex | None = Field(default=None, ge=0, le=MAX_ORDER_INDEX)


class ItemUpdate(CamelModel):
    """Every field optional; only the fields sent are changed."""

    # Only description can be cleared with null.
    model_config = ConfigDict(json_schema_extra=not_nullable("title", "status", "orderIndex"))

    title: NonEmptyStr | None = None
    description: StrictStr | None = Field(default=None, max_length=100_000)
    status: ItemStatus | None = None
    order_index: Position | None = None


class ReorderEntry(CamelModel):
    id: StrictStr
    order_index: OrderIndex = Field(ge=0, le=MAX_ORDER_INDEX)


class ReorderRequest(CamelModel):
    items: list[ReorderEntry] = Field(min_length=1, max_length=10_000)


class ItemOut(CamelModel):
    id: str
    title: str
    description: str | None
    type: ItemType
    sow_id: str
    parent_item_id: str | None
    order_index: int
    status: ItemStatus
    created_at: Timestamp
    updated_at: Timestamp
    created_by_user_id: str | None


class ReorderedItem(CamelModel):
    id: str
    order_index: int


class ReorderResult(CamelModel):
    message: str
    items: list[ReorderedItem]


class Message(CamelModel):
    message: str
