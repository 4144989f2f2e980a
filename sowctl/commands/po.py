"""sowctl po: purchase orders of the external API."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet, QuietCreate
from sowctl.foundation.errors import UsageError, quoted
from sowctl.output import render
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_object, emit_rows
from sowctl.output.terminal import current
from sowctl.schemas.vocabulary import PurchaseOrderStatus

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

_NUMBER_RE = re.compile(r"^-?\d+(\.\d+)?$")
LINE_HELP = (
    "A line item: description, amount and cost code id, then optionally quantity and "
    'unit cost, separated by colons, e.g. "Steel columns:48250.00:3" (repeatable; amounts '
    "are decimal numbers)."
)
# (request field, option) of each required field, for a clear usage error.
REQUIRED = [
    ("project_id", "--project"),
    ("commitment_id", "--commitment"),
    ("title", "--title"),
    ("vendor_id", "--vendor"),
    ("line_items", "--line"),
]


def money_cell(key: str):
    """Money for a table cell: thousands separators for people, plain digits when piped."""

    def cell(row: dict) -> str:
        from sowctl.foundation import money  # imported when a cell is shown (decimal): keeps start-up light

        return money.display(row.get(key), grouping=render.is_tty())

    return cell


LIST_COLUMNS = [
    Column("ID", "id", justify="right", kind="number"),
    Column("NUMBER", "number", kind="enum"),
    Column("STATUS", "status", kind="enum"),
    Column("TITLE", "title", kind="text"),
    Column("VENDOR", lambda row: (row.get("vendor") or {}).get("name"), kind="text", priority=2),
    Column("LINES", lambda row: len(row.get("line_items") or []), justify="right", kind="number", priority=3),
    Column("TOTAL", money_cell("total_amount"), justify="right", kind="money"),
]
LINE_COLUMNS = [
    Column("ID", "id", justify="right", kind="number", priority=3),
    Column("DESCRIPTION", "description", kind="text"),
    Column("COST CODE", lambda row: (row.get("cost_code") or {}).get("full_code"), kind="enum"),
    Column("COST CODE NAME", lambda row: (row.get("cost_code") or {}).get("name"), kind="text", priority=2),
    Column("AMOUNT", money_cell("amount"), justify="right", kind="money"),
]


@app.command("create")
@output_options()
def create_po(
    ctx: typer.Context,
    project: Annotated[str | None, typer.Option("--project", help="Financial project id, e.g. 101.")] = None,
    commitment: Annotated[
        str | None, typer.Option("--commitment", help="Commitment id the order belongs to.")
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="Title of the purchase order.")] = None,
    vendor: Annotated[int | None, typer.Option("--vendor", help="Vendor id.")] = None,
    status: Annotated[
        PurchaseOrderStatus | None,
        typer.Option("--status", help="Initial status (default draft), e.g. draft or issued."),
    ] = None,
    lines: Annotated[list[str] | None, typer.Option("--line", help=LINE_HELP)] = None,
    from_file: Annotated[
        typer.FileText | None,
        typer.Option(
            "--from-file",
            help='A JSON body: {"project_id": "101", "commitment_id": "5001", "title": "...", '
            '"vendor_id": 7, "status": "draft", "line_items": [{"description": "...", '
            '"amount": "100.00", "cost_code_id": 3, "quantity": 1, "unit_cost": "100.00"}]} '
            '("-" reads stdin). Options given as well override it.',
        ),
    ] = None,
    json_: Json = False,
    quiet: QuietCreate = False,
) -> None:
    """Create a purchase order; its amounts are the exact sum of its line amounts.

    Example: sowctl po create --project 101 --commitment 5001 --title Steel --vendor 7 --line "Beams:480.00:3"
    """
    body: dict[str, Any] = _read_body(from_file) if from_file is not None else {}
    options = {"project_id": project, "commitment_id": commitment, "title": title, "vendor_id": vendor}
    body.update({key: value for key, value in options.items() if value is not None})
    if status is not None:
        body["status"] = status
    body.setdefault("status", "draft")
    if lines:
        body["line_items"] = [parse_line(text) for text in lines]
    missing = [option for field, option in REQUIRED if field not in body]
    if missing:
        raise UsageError(f"missing option {', '.join(missing)} (or give the field in --from-file)")
    order = app_context(ctx).call("finance.create_po", body=body, from_options=from_file is None)
    if quiet and not json_:
        current().out.write(f"{render.text(order.get('id'))}\n")
        return
    show_order(order, json_)


@app.command("list")
@output_options(columns=True, pager=True)
def list_pos(
    ctx: typer.Context,
    project: Annotated[str, typer.Option("--project", help="Financial project id, e.g. 101.")],
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """List the purchase orders of a project (a sowctl extension of the API).

    Example: sowctl po list --project 101
    """
    from decimal import Decimal

    from sowctl.foundation import money

    result = app_context(ctx).call("finance.list_pos", query={"project_id": project})
    orders = result["data"]
    footer = {
        "TITLE": "Total",
        "TOTAL": money.display(money.total(Decimal(o["total_amount"]) for o in orders)),
    }
    # --json: every page's orders as one array, as for the other paged lists
    emit_rows(orders, LIST_COLUMNS, json_mode=json_, quiet=quiet, footer=footer)


def show_order(order: dict, json_: bool) -> None:
    from sowctl.foundation import money

    if json_:
        emit_json(order)
        return
    vendor = order.get("vendor") or {}
    summary = {
        "id": order.get("id"),
        "number": order.get("number"),
        "status": order.get("status"),
        "title": order.get("title"),
        "vendor": f"{vendor.get('name')} ({vendor.get('id')})",
        "original_amount": order.get("original_amount"),
        "revised_amount": order.get("revised_amount"),
        "total_amount": order.get("total_amount"),
    }
    if not render.is_tty():
        emit_object({**summary, "line_items": order.get("line_items")})
        return
    for key in ("original_amount", "revised_amount", "total_amount"):
        summary[key] = money.display(summary[key])
    emit_object(summary)
    emit_rows(
        order.get("line_items") or [],
        LINE_COLUMNS,
        title="Line items",
        footer={"DESCRIPTION": "Total", "AMOUNT": money.display(order.get("total_amount"))},
    )


def parse_line(text: str) -> dict[str, Any]:
    """``DESCRIPTION:AMOUNT:COST_CODE_ID[:QTY[:UNIT_COST]]`` to a request line item.

    The description may itself contain colons: the shortest description after
    which the rest reads as amount, cost code and optional quantity and unit cost
    wins ("Note: steel:100.00:3" is "Note: steel", 100.00, cost code 3).
    """
    parts = text.split(":")
    for cut in range(1, len(parts) - 1):
        tail = [part.strip() for part in parts[cut:]]
        if not 2 <= len(tail) <= 4:
            continue
        amount, cost_code, *rest = tail
        if not _NUMBER_RE.match(amount) or not (cost_code.isascii() and cost_code.isdigit()):
            continue
        if not all(_NUMBER_RE.match(value) for value in rest):
            continue
        description = ":".join(parts[:cut]).strip()
        line: dict[str, Any] = {"description": description, "amount": amount, "cost_code_id": int(cost_code)}
        if rest:
            line["quantity"] = _quantity(rest[0])
        if len(rest) > 1:
            line["unit_cost"] = rest[1]
        return line
    raise typer.BadParameter(
        f"{quoted(text)} is not DESCRIPTION:AMOUNT:COST_CODE_ID[:QTY[:UNIT_COST]] "
        "(amount and unit cost decimal numbers, cost code id an integer)",
        param_hint="--line",
    )


def _quantity(text: str) -> int | float:
    """Quantity is a JSON number in the API; integers stay exact."""
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def _read_body(stream) -> dict[str, Any]:
    from sowctl.foundation import json_input

    try:
        body = json_input.loads(stream.read())
    except json_input.JsonTooDeep as exc:
        raise typer.BadParameter(str(exc), param_hint="--from-file") from None
    except ValueError as exc:  # bad JSON or UTF-8
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--from-file") from None
    if not isinstance(body, dict):
        raise typer.BadParameter("must hold a JSON object (the request body)", param_hint="--from-file")
    return body


OPTION_COLUMNS = [
    Column("KIND", "kind"),
    Column("ID", "id", justify="right"),
    Column("NAME", "name"),
    Column("CODE OR VENDOR", "detail"),
]


@app.command("options")
@output_options(pager=True)
def po_options(
    ctx: typer.Context,
    project: Annotated[str, typer.Option("--project", help="Financial project id, e.g. 101.")],
    json_: Json = False,
) -> None:
    """List the vendors, cost codes and commitments a purchase order of a project may use
    (their ids go in --vendor, --line and --commitment; a sowctl extension of the API).

    Example: sowctl po options --project 101
    """
    result = app_context(ctx).call("finance.po_options", query={"project_id": project})
    rows = [{"kind": "vendor", "id": v["id"], "name": v["name"], "detail": ""} for v in result["vendors"]]
    rows += [
        {"kind": "cost_code", "id": c["id"], "name": c["name"], "detail": c["full_code"]}
        for c in result["cost_codes"]
    ]
    rows += [
        {
            "kind": "commitment",
            "id": c["id"],
            "name": c["title"],
            "detail": f"vendor {c['vendor_id']}" if c.get("vendor_id") is not None else "",
        }
        for c in result["commitments"]
    ]
    emit_rows(rows, OPTION_COLUMNS, json_mode=json_, body=result)
