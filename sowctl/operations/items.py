"""Item routes of Group A."""

from __future__ import annotations

from typing import Any

from sowctl.operations import LazyModule, Request, Result, TokenAnswer, operation
from sowctl.operations.groups import Group
from sowctl.schemas.common import CamelModel, StrictStr, dump
from sowctl.schemas.items import (
    ItemCreate,
    ItemOut,
    ItemUpdate,
    Message,
    ReorderRequest,
    ReorderResult,
)
from sowctl.schemas.rows import PlainObjects, row_dumper
from sowctl.schemas.vocabulary import ItemType

service = LazyModule("sowctl.services.items")
pages = LazyModule("sowctl.services.item_pages")

# An item row's JSON object, as dumping its ItemOut gives (a property test holds the two
# together), without making the model: a row (``services.item_pages.ItemRows``) holds
# ItemOut's values first, then the counts of task items below, which are not sent; its SOW's
# shown id and its shown status are given (the rest read in place). PostgreSQL's driver
# gives datetimes, SQLite's the text peewee stored: ItemOut's Timestamp serializer
# (clock.format_timestamp) takes either.
ITEM_JSON = row_dumper(ItemOut, given=("sow_id", "status"))


def items_json(items: Any) -> PlainObjects:
    """The JSON objects of ``items`` (``services.item_pages.ItemRows``), each with its shown
    status (a requirement's calculated from its counts) and its SOW's shown id; the page is
    a ``PlainObjects`` list, which the server writes with pydantic's encoder."""
    dump, shown, sow_id = ITEM_JSON, pages.shown_status, items.sow_id
    kind, stored, below = pages.TYPE, pages.STATUS, pages.BELOW
    return PlainObjects([dump(row, sow_id, shown(row[kind], row[stored], row[below])) for row in items.rows])


class ItemListQuery(CamelModel):
    type: ItemType | None = None
    parent_id: StrictStr | None = None


@operation(
    name="items.list",
    method="GET",
    path="/api/sow/{sowId}/items",
    group=Group.A,
    summary="List the items of a SOW in orderIndex order",
    query=ItemListQuery,
    response=list[ItemOut],
    paginated=True,
)
def list_items(request: Request) -> Result:
    items, total = service.list_items(
        request.caller,
        request.params["sowId"],
        item_type=request.query.type,
        parent_id=request.query.parent_id,
        offset=request.offset,
        limit=request.limit,
    )
    return Result(items_json(items), total)


def get_item_with_token(secret: str, params: dict[str, str]) -> TokenAnswer:
    caller, item = service.get_item_with_token(secret, params["itemId"])
    return caller, Result(items_json(item)[0])


@operation(
    name="items.get",
    method="GET",
    path="/api/items/{itemId}",
    group=Group.A,
    summary="Retrieve one item",
    response=ItemOut,
    token_read=get_item_with_token,
)
def get_item(request: Request) -> Result:
    return Result(dump(service.get_item(request.caller, request.params["itemId"])))


@operation(
    name="items.create",
    method="POST",
    path="/api/sow/{sowId}/items",
    group=Group.A,
    summary="Create an item in a SOW",
    body=ItemCreate,
    response=ItemOut,
    status=201,
    write=True,
)
def create_item(request: Request) -> Result:
    return Result(dump(service.create_item(request.caller, request.params["sowId"], request.body)))


@operation(
    name="items.update",
    method="PUT",
    path="/api/items/{itemId}",
    group=Group.A,
    summary="Update an item's title, description, status or orderIndex",
    body=ItemUpdate,
    response=ItemOut,
    write=True,
)
def update_item(request: Request) -> Result:
    return Result(dump(service.update_item(request.caller, request.params["itemId"], request.body)))


@operation(
    name="items.delete",
    method="DELETE",
    path="/api/items/{itemId}",
    group=Group.A,
    summary="Delete an item, its descendants and their dependencies",
    response=Message,
    write=True,
)
def delete_item(request: Request) -> Result:
    return Result(dump(service.delete_item(request.caller, request.params["itemId"])))


@operation(
    name="items.reorder",
    method="PUT",
    path="/api/sow/{sowId}/items/reorder",
    group=Group.A,
    summary="Set the orderIndex of several items at once (all or nothing)",
    body=ReorderRequest,
    response=ReorderResult,
    write=True,
)
def reorder_items(request: Request) -> Result:
    result = service.reorder_items(request.caller, request.params["sowId"], request.body)
    return Result(dump(result))
