"""sowctl items: the items of a SOW (spec §4.2)."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl import render
from sowctl.commands._options import Json, Quiet
from sowctl.context import app_context
from sowctl.render import Column, emit_json, emit_message, emit_object, emit_rows

app = typer.Typer(help="Requirements and task items of a SOW, in their hierarchy.", no_args_is_help=True)

COLUMNS = [
    Column("ID", "id"),
    Column("TYPE", "type", kind="enum"),
    Column("STATUS", "status", kind="enum"),
    Column("ORDER", "orderIndex", justify="right", kind="number", priority=2),
    Column("PARENT", "parentItemId", priority=3),
    Column("TITLE", "title", kind="text"),
    Column("DESCRIPTION", "description", kind="text", default=False),
    Column("CREATED", "createdAt", kind="datetime", default=False),
    Column("UPDATED", "updatedAt", kind="datetime", default=False),
]
ItemType = Annotated[str | None, typer.Option("--type", help="requirement or task_item.", show_default=False)]


@app.command("list")
def list_items(
    ctx: typer.Context,
    sow_id: Annotated[str, typer.Argument(help="The SOW's id.")],
    item_type: ItemType = None,
    parent: Annotated[str | None, typer.Option("--parent", help="Only children of this item.")] = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """List the items of a SOW in orderIndex order."""
    items = app_context(ctx).call("items.list", {"sowId": sow_id}, {"type": item_type, "parentId": parent})
    emit_rows(items, COLUMNS, json_mode=json_, quiet=quiet)


@app.command("get")
def get_item(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="The item's id.")],
    json_: Json = False,
) -> None:
    """Show one item (a requirement shows its calculated status)."""
    emit_object(app_context(ctx).call("items.get", {"itemId": item_id}), json_mode=json_)


@app.command("create")
def create_item(
    ctx: typer.Context,
    sow_id: Annotated[str, typer.Argument(help="The SOW's id.")],
    title: Annotated[str, typer.Option("--title", help="Title of the item.")],
    item_type: Annotated[str, typer.Option("--type", help="requirement or task_item.")] = "task_item",
    description: Annotated[str | None, typer.Option("--description", "-d")] = None,
    parent: Annotated[str | None, typer.Option("--parent", help="Parent item id.")] = None,
    order_index: Annotated[
        int | None, typer.Option("--order-index", help="Position among siblings (default: last).")
    ] = None,
    json_: Json = False,
) -> None:
    """Create a requirement or task item in a SOW."""
    body = _without_none(
        title=title,
        type=item_type,
        description=description,
        parentItemId=parent,
        orderIndex=order_index,
    )
    item = app_context(ctx).call("items.create", {"sowId": sow_id}, body=body)
    _show_changed(item, json_)


@app.command("update")
def update_item(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="The item's id.")],
    title: Annotated[str | None, typer.Option("--title")] = None,
    description: Annotated[str | None, typer.Option("--description", "-d")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="pending, in_progress, completed or cancelled.")
    ] = None,
    order_index: Annotated[int | None, typer.Option("--order-index")] = None,
    json_: Json = False,
) -> None:
    """Change an item's title, description, status or position."""
    body = _without_none(title=title, description=description, status=status, orderIndex=order_index)
    if not body:
        from sowctl.errors import UsageError

        raise UsageError("nothing to update: give --title, --description, --status or --order-index")
    item = app_context(ctx).call("items.update", {"itemId": item_id}, body=body)
    _show_changed(item, json_)


@app.command("delete")
def delete_item(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="The item's id.")],
    json_: Json = False,
) -> None:
    """Delete an item with all its descendants and their dependencies."""
    result = app_context(ctx).call("items.delete", {"itemId": item_id})
    emit_message(result["message"], json_mode=json_, body=result)


@app.command("reorder")
def reorder_items(
    ctx: typer.Context,
    sow_id: Annotated[str, typer.Argument(help="The SOW's id.")],
    positions: Annotated[
        list[str] | None,
        typer.Argument(help="ITEM_ID=ORDER_INDEX pairs, e.g. item-2=0 item-1=1.", show_default=False),
    ] = None,
    from_file: Annotated[
        typer.FileText | None,
        typer.Option("--from-file", help='JSON body {"items": [{"id", "orderIndex"}]} ("-": stdin).'),
    ] = None,
    json_: Json = False,
) -> None:
    """Set the order of several items at once: all of them, or none."""
    if from_file is not None:
        import json

        try:
            body = json.load(from_file)
        except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, a 5,000-digit number, deep nesting
            raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--from-file") from None
    else:
        body = {"items": [_position(text) for text in positions or []]}
    result = app_context(ctx).call("items.reorder", {"sowId": sow_id}, body=body)
    if json_:
        emit_json(result)
    else:
        emit_rows(
            result["items"], [Column("ID", "id"), Column("ORDER", "orderIndex", "right", kind="number")]
        )


@app.command("tree")
def tree(
    ctx: typer.Context,
    sow_id: Annotated[str, typer.Argument(help="The SOW's id.")],
    json_: Json = False,
) -> None:
    """Show the SOW's hierarchy with calculated statuses."""
    from sowctl.itemtree import build_tree, render_tree

    items = app_context(ctx).call("items.list", {"sowId": sow_id})
    roots = build_tree(items)
    if json_:
        emit_json(roots)
    else:
        render_tree(sow_id, roots, rich=render.is_tty())


def _position(text: str) -> dict:
    item_id, sep, index = text.rpartition("=")
    if not sep or not item_id:
        raise typer.BadParameter(f"{text!r} is not ITEM_ID=ORDER_INDEX", param_hint="POSITIONS")
    try:
        return {"id": item_id, "orderIndex": int(index)}
    except ValueError:
        raise typer.BadParameter(
            f"{text!r}: ORDER_INDEX must be an integer", param_hint="POSITIONS"
        ) from None


def _without_none(**fields: object) -> dict:
    return {key: value for key, value in fields.items() if value is not None}


def _show_changed(item: dict, json_: bool) -> None:
    emit_object(item, json_mode=json_)
