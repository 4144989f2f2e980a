"""sowctl contracts: prime contract details."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json
from sowctl.output import render
from sowctl.output.options import output_options
from sowctl.output.render import emit_json, emit_object

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

MONEY_FIELDS = (
    "original_contract_value",
    "current_contract_value",
    "executed_change_orders_value",
    "pending_change_orders_value",
)
FIELDS = (
    "id",
    "title",
    "description",
    "contract_number",
    "status",
    "contract_date",
    "start_date",
    "estimated_completion_date",
    *MONEY_FIELDS,
    "project_id",
)


@app.command("show")
@output_options(columns=True, pager=True)
def show(
    ctx: typer.Context,
    prime_contract_id: Annotated[str, typer.Argument(help="The prime contract's id.")],
    project: Annotated[str, typer.Option("--project", help="Financial project id, e.g. 101.")],
    json_: Json = False,
) -> None:
    """Show a prime contract: values, customer and payment terms.

    Example: sowctl contracts show 31 --project 101
    """
    result = app_context(ctx).call(
        "finance.prime_contract",
        query={"project_id": project, "prime_contract_id": prime_contract_id},
        positional=frozenset({"prime_contract_id"}),
    )
    if json_:
        emit_json(result)
        return
    for contract in result["data"]:
        emit_object(flatten(contract, grouping=render.is_tty()))


def flatten(contract: dict, *, grouping: bool) -> dict:
    """One level of key/value pairs: money with 2+ decimals, customer and terms spelled out."""
    from sowctl.foundation import money  # imported when used (decimal): keeps start-up light

    shown = {key: contract.get(key) for key in FIELDS}
    for key in MONEY_FIELDS:
        shown[key] = money.display(contract.get(key), grouping=grouping)
    for key, value in (contract.get("customer") or {}).items():
        shown[f"customer.{key}"] = value
    terms = contract.get("payment_terms") or {}
    for key, value in terms.items():
        shown[f"payment_terms.{key}"] = value
    return shown
