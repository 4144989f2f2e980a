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
    # Imported when used (decimal, the models): keeps start-up light.
    from sowctl.foundation import money
    from sowctl.schemas.contracts import PrimeContractOut, money_fields, plain_fields

    shown = {key: contract.get(key) for key in plain_fields(PrimeContractOut)}
    for key in money_fields(PrimeContractOut):
        shown[key] = money.display(contract.get(key), grouping=grouping)
    for key, value in (contract.get("customer") or {}).items():
        shown[f"customer.{key}"] = value
    terms = contract.get("payment_terms") or {}
    for key, value in terms.items():
        shown[f"payment_terms.{key}"] = value
    return shown
