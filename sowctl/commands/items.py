"""sowctl items: the items of a SOW."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import (
    Json,
    Quiet,
    QuietCreate,
    SowArgument,
    Yes,
    confirm,
    emit_created,
)
from sowctl.foundation.errors import InvalidInput, UsageError, quoted
from sowctl.output import render
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_message, emit_object, emit_rows
from sowctl.output.terminal import current
from sowctl.schemas.vocabulary import ItemStatus
from sowctl.schemas.vocabulary import ItemType as ItemTypeValue

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

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
ItemType = Annotated[
    ItemTypeValue | None, typer.Option("--type", help="requirement or task_item.", show_default=False)
]


@app.command("list")
@output_options(columns=True, pager=True)
def list_items(
    ctx: typer.Context,
    sow_id: SowArgument,
    item_type: ItemType = None,
    parent: Annotated[str | None, typer.Option("--parent", help="Only children of this item.")] = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """List the items of a SOW in orderIndex order.

    Example: sowctl items list sow-1 --type requirement
    """
    items = app_context(ctx).call("items.list", {"sowId": sow_id}, {"type": item_type, "parentId": parent})
    emit_rows(items, COLUMNS, json_mode=json_, quiet=quiet)


@app.command("get")
@output_options(columns=True, pager=True)
def get_item(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="The item's id.")],
    json_: Json = False,
) -> None:
    """Show one item (a requirement shows its calculated status).

    Example: sowctl items get req-1
    """
    emit_object(app_context(ctx).call("items.get", {"itemId": item_id}), json_mode=json_)


@app.command("create")
@output_options()
def create_item(
    ctx: typer.Context,
    sow_id: SowArgument,
    title: Annotated[str, typer.Option("--title", help="Title of the item.")],
    item_type: Annotated[
        ItemTypeValue, typer.Option("--type", help="requirement or task_item.")
    ] = "task_item",
    description: Annotated[str | None, typer.Option("--description", "-d", help="Longer text.")] = None,
    parent: Annotated[str | None, typer.Option("--parent", help="Parent item id.")] = None,
    order_index: Annotated[
        int | None, typer.Option("--order-index", help="Position among siblings (default: last).")
    ] = None,
    item_id: Annotated[
        str | None,
        typer.Option("--id", help="Choose the item's id (local mode only; default: a generated uuid)."),
    ] = None,
    json_: Json = False,
    quiet: QuietCreate = False,
) -> None:
    """Create a requirement or task item in a SOW.

    Example: sowctl items create sow-1 --title Structure --type requirement --id req-1
    """
    body = _without_none(
        title=title,
        type=item_type,
        description=description,
        parentItemId=parent,
        orderIndex=order_index,
        id=item_id,
    )
    context = app_context(ctx)
    if item_id is not None and context.settings.remote:
        # A server ignores a chosen id (item ids are one namespace across organizations):
        # sent, the item would get another id than the one typed, without a word.
        from sowctl.commands._fields import refuse_empty, speak_cli

        refuse_empty({"sowId": sow_id})
        raise speak_cli(_chosen_id_refusal(body), body, {"sowId": sow_id})
    item = context.call("items.create", {"sowId": sow_id}, body=body)
    emit_created(item, json_mode=json_, quiet=quiet)


def _chosen_id_refusal(body: dict[str, Any]) -> InvalidInput:
    """Why remote mode does not send this body with its chosen id: what local mode says
    of a bad field (a malformed id, say), else that only local mode chooses item ids."""
    from sowctl.schemas.common import parse
    from sowctl.schemas.items import ItemCreate

    try:
        parse(ItemCreate, body)
    except InvalidInput as exc:
        return exc
    return InvalidInput.for_field("id", "can be chosen in local mode only; a server generates item ids")


@app.command("update")
@output_options()
def update_item(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="The item's id.")],
    title: Annotated[str | None, typer.Option("--title", help="New title.")] = None,
    description: Annotated[
        str | None, typer.Option("--description", "-d", help='New description ("" clears it).')
    ] = None,
    status: Annotated[
        ItemStatus | None,
        typer.Option(
            "--status",
            help="pending, in_progress, completed or cancelled. A requirement with task items "
            "takes its status from them (it is calculated), so it cannot be set (refused).",
        ),
    ] = None,
    order_index: Annotated[
        int | None, typer.Option("--order-index", help="New position among its siblings (0: first).")
    ] = None,
    json_: Json = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the item's id.")] = False,
) -> None:
    """Change an item's title, description, status or position.

    Example: sowctl items update task-1 --status in_progress
    """
    body = _without_none(title=title, description=description, status=status, orderIndex=order_index)
    if not body:
        raise UsageError("nothing to update: give --title, --description, --status or --order-index")
    context = app_context(ctx)
    if status is not None:
        _refuse_calculated_status(context, item_id)
    item = context.call("items.update", {"itemId": item_id}, body=body)
    emit_created(item, json_mode=json_, quiet=quiet)


def _refuse_calculated_status(context: Any, item_id: str) -> None:
    """--status on a requirement with task items under it: the API would store a status no
    answer shows (the calculated one is shown), so it is refused before anything is sent."""
    from sowctl.services.item_cascade import cascade

    item = context.call("items.get", {"itemId": item_id})
    if item.get("type") != "requirement":
        return
    items = context.call("items.list", {"sowId": item["sowId"]})
    descendants = set(cascade(item_id, items, [])[0])
    if any(entry["id"] in descendants and entry.get("type") == "task_item" for entry in items):
        raise UsageError(
            f"--status: requirement {render.text(item_id)} has task items, so its status is "
            f"calculated from them ({item.get('status')}) and cannot be set"
        )


@app.command("delete")
@output_options()
def delete_item(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(help="The item's id.")],
    yes: Yes = False,
    json_: Json = False,
) -> None:
    """Delete an item with all its descendants and their dependencies.

    On a terminal it first shows what goes with the item and asks; --yes skips the question
    (scripts, whose input is not a terminal, are never asked). On a terminal or with --yes,
    what went with it is said on stderr.

    Example: sowctl items delete req-1 --yes
    """
    context = app_context(ctx)
    went = None
    if yes or (sys.stdin is not None and sys.stdin.isatty()):
        # A person is there, or --yes asked for it: say what goes with the item. The
        # dependencies are read for the whole organization, not with the SOW filter: that one
        # filters by the source item's SOW, and a dependency of another SOW's item on one of
        # these items goes too.
        from sowctl.services.item_cascade import cascade

        item = context.call("items.get", {"itemId": item_id})
        items = context.call("items.list", {"sowId": item["sowId"]})
        deps = context.call("deps.list")
        descendants, dependencies = cascade(item_id, items, deps)
        went = f"{_count(len(descendants), 'descendant item')} and {_count(len(dependencies), 'dependency')}"
        in_sow, going = {entry["id"] for entry in items}, set(dependencies)
        elsewhere = sum(1 for dep in deps if dep["id"] in going and dep["sourceItemId"] not in in_sow)
        if elsewhere:  # said apart, since the user did not see them listed with this SOW
            went += f" ({elsewhere} from {'another SOW' if elsewhere == 1 else 'other SOWs'})"
        if not yes:
            confirm(f"Delete item {render.text(item_id)} ({render.text(item.get('title'))}), {went}?")
    result = context.call("items.delete", {"itemId": item_id})
    emit_message(result["message"], json_mode=json_, body=result)
    if went is not None:
        current().err.write(f"deleted with it: {went}\n")


@app.command("reorder")
@output_options()
def reorder_items(
    ctx: typer.Context,
    sow_id: SowArgument,
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
    """Set the order of several items at once: all of them, or none.

    Example: sowctl items reorder sow-1 item-2=0 item-1=1
    """
    if from_file is None and not positions:
        raise UsageError("give at least one ITEM_ID=ORDER_INDEX pair (or --from-file FILE)")
    if from_file is not None:
        from sowctl.foundation import json_input

        try:
            body = json_input.loads(from_file.read())
        except json_input.JsonTooDeep as exc:
            raise typer.BadParameter(str(exc), param_hint="--from-file") from None
        except ValueError as exc:  # bad JSON or UTF-8
            raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--from-file") from None
    else:
        body = {"items": [_position(text) for text in positions or []]}
    result = app_context(ctx).call(
        "items.reorder", {"sowId": sow_id}, body=body, from_options=from_file is None
    )
    if json_:
        emit_json(result)
    else:
        emit_rows(
            result["items"], [Column("ID", "id"), Column("ORDER", "orderIndex", "right", kind="number")]
        )


@app.command("tree")
@output_options(pager=True)
def tree(
    ctx: typer.Context,
    sow_id: SowArgument,
    json_: Json = False,
) -> None:
    """Show the SOW's hierarchy with calculated statuses.

    Example: sowctl items tree sow-1
    """
    from sowctl.output.item_tree import build_tree, render_tree

    items = app_context(ctx).call("items.list", {"sowId": sow_id})
    roots = build_tree(items)
    if json_:
        emit_json(roots)
    else:
        render_tree(sow_id, roots, rich=render.is_tty())


def _position(text: str) -> dict:
    item_id, sep, index = text.rpartition("=")
    if not sep or not item_id:
        raise typer.BadParameter(f"{quoted(text)} is not ITEM_ID=ORDER_INDEX", param_hint="POSITIONS")
    try:
        return {"id": item_id, "orderIndex": int(index)}
    except ValueError:
        raise typer.BadParameter(
            f"{quoted(text)}: ORDER_INDEX must be an integer", param_hint="POSITIONS"
        ) from None


def _without_none(**fields: object) -> dict:
    return {key: value for key, value in fields.items() if value is not None}


def _count(number: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{number} {noun if number == 1 else plural}"
