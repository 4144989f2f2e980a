"""sowctl deps: dependencies between items, or on external parties."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, Quiet, QuietCreate, Yes, confirm, emit_created, needs_confirmation
from sowctl.foundation.errors import UsageError
from sowctl.output import render
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_message, emit_object, emit_rows
from sowctl.schemas.vocabulary import DependencyKind, DependencyStatus, DependencyType, RiskLevel

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS


def _target(dep: dict) -> str:
    if dep.get("isExternal"):
        return f"external: {dep.get('externalTarget') or ''}"
    return dep.get("targetItemId") or ""


COLUMNS = [
    Column("ID", "id"),
    Column("SOURCE", "sourceItemId"),
    Column("TARGET", _target, kind=lambda d: "text" if d.get("isExternal") else "id", text_priority=3),
    Column("TYPE", "dependencyType", kind="enum"),
    Column(
        "RISK",
        "riskLevel",
        style=lambda d: "bold red" if d.get("riskLevel") == "critical" else None,
        kind="enum",
        priority=2,
    ),
    Column("STATUS", "status", kind="enum"),
    Column("SLA", "slaDate", kind="date", priority=2),
    Column("ESCALATION", "escalationDate", kind="date", default=False),
    Column("OWNER", "externalOwner", kind="text", default=False),
    Column("NOTES", "notes", kind="text", default=False),
    Column("CREATED", "createdAt", kind="datetime", default=False),
]

Status = Annotated[
    DependencyStatus | None,
    typer.Option("--status", help="active, resolved, cancelled or blocked.", show_default=False),
]
Risk = Annotated[
    RiskLevel | None, typer.Option("--risk", help="low, medium, high or critical.", show_default=False)
]


@app.command("list")
@output_options(columns=True, pager=True)
def list_deps(
    ctx: typer.Context,
    item: Annotated[str | None, typer.Option("--item", help="Only dependencies of this source item.")] = None,
    sow: Annotated[str | None, typer.Option("--sow", help="Only dependencies of this SOW.")] = None,
    status: Status = None,
    kind: Annotated[
        DependencyKind | None,
        typer.Option(
            "--type",
            help="critical (critical risk, still open), overdue (SLA date passed, still open) or external.",
            show_default=False,
        ),
    ] = None,
    json_: Json = False,
    quiet: Quiet = False,
) -> None:
    """List dependencies, oldest first.

    Example: sowctl deps list --sow sow-1 --type overdue
    """
    query = {"itemId": item, "sowId": sow, "status": status, "type": kind}
    deps = app_context(ctx).call("deps.list", query=query)
    emit_rows(deps, COLUMNS, json_mode=json_, quiet=quiet)


@app.command("get")
@output_options(columns=True, pager=True)
def get_dep(
    ctx: typer.Context,
    dependency_id: Annotated[str, typer.Argument(help="The dependency's id.")],
    json_: Json = False,
) -> None:
    """Show one dependency.

    Example: sowctl deps get dep-1
    """
    emit_object(app_context(ctx).call("deps.get", {"dependencyId": dependency_id}), json_mode=json_)


@app.command("create")
@output_options()
def create_dep(
    ctx: typer.Context,
    source: Annotated[str, typer.Option("--source", help="The item that has the dependency.")],
    dependency_type: Annotated[
        DependencyType,
        typer.Option("--type", help="depends_on, blocks, related_to, prerequisite or successor."),
    ],
    risk: Annotated[RiskLevel, typer.Option("--risk", help="low, medium, high or critical.")],
    target: Annotated[str | None, typer.Option("--target", help="The target item's id.")] = None,
    external: Annotated[
        str | None, typer.Option("--external", help="Name of the external system or vendor instead.")
    ] = None,
    owner: Annotated[str | None, typer.Option("--owner", help="External contact person.")] = None,
    email: Annotated[str | None, typer.Option("--email", help="E-mail of the external contact.")] = None,
    vendor: Annotated[str | None, typer.Option("--vendor", help="Vendor or organization name.")] = None,
    sla: Annotated[str | None, typer.Option("--sla", help="SLA date, YYYY-MM-DD.")] = None,
    escalation: Annotated[
        str | None, typer.Option("--escalation", help="Escalation date, YYYY-MM-DD.")
    ] = None,
    notes: Annotated[str | None, typer.Option("--notes", help="Free-text notes.")] = None,
    json_: Json = False,
    quiet: QuietCreate = False,
) -> None:
    """Create a dependency on an item (--target) or on an external party (--external).

    Refused when it would close a cycle: the error names the items of the cycle.

    Example: sowctl deps create --source slab --target rebar --type depends_on --risk high --sla 2026-12-01
    """
    if (target is None) == (external is None):
        raise UsageError("give exactly one of --target ITEM_ID or --external NAME")
    body = _without_none(
        sourceItemId=source,
        targetItemId=target,
        isExternal=True if external is not None else None,
        externalTarget=external,
        dependencyType=dependency_type,
        riskLevel=risk,
        externalOwner=owner,
        contactEmail=email,
        vendor=vendor,
        slaDate=sla,
        escalationDate=escalation,
        notes=notes,
    )
    emit_created(app_context(ctx).call("deps.create", body=body), json_mode=json_, quiet=quiet)


@app.command("update")
@output_options()
def update_dep(
    ctx: typer.Context,
    dependency_id: Annotated[str, typer.Argument(help="The dependency's id.")],
    status: Status = None,
    risk: Risk = None,
    sla: Annotated[
        str | None, typer.Option("--sla", help="SLA date, YYYY-MM-DD ('none' clears it).", show_default=False)
    ] = None,
    escalation: Annotated[
        str | None,
        typer.Option(
            "--escalation", help="Escalation date, YYYY-MM-DD ('none' clears it).", show_default=False
        ),
    ] = None,
    notes: Annotated[str | None, typer.Option("--notes", help="Replace the notes.")] = None,
    json_: Json = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the dependency's id.")] = False,
) -> None:
    """Change a dependency's status, risk, dates or notes.

    Moving a cancelled dependency back to another status is refused when it would close a cycle.

    Example: sowctl deps update dep-1 --status resolved
    """
    body = _without_none(status=status, riskLevel=risk, notes=notes)
    for key, value in (("slaDate", sla), ("escalationDate", escalation)):
        if value is not None:
            body[key] = "" if value.strip().lower() == "none" else value  # "" removes the date
    if not body:  # an empty update would still stamp updatedAt
        from sowctl.foundation.errors import UsageError

        raise UsageError("nothing to update: give --status, --risk, --sla, --escalation or --notes")
    dep = app_context(ctx).call("deps.update", {"dependencyId": dependency_id}, body=body)
    emit_created(dep, json_mode=json_, quiet=quiet)


@app.command("delete")
@output_options()
def delete_dep(
    ctx: typer.Context,
    dependency_id: Annotated[str, typer.Argument(help="The dependency's id.")],
    yes: Yes = False,
    json_: Json = False,
) -> None:
    """Delete a dependency (on a terminal, after asking; --yes skips the question).

    Example: sowctl deps delete dep-1 --yes
    """
    context = app_context(ctx)
    if needs_confirmation(yes):
        dep = context.call("deps.get", {"dependencyId": dependency_id})
        confirm(
            f"Delete dependency {render.text(dependency_id)} ({render.text(dep.get('sourceItemId'))} "
            f"{render.text(dep.get('dependencyType'))} {render.text(_target(dep))})?"
        )
    result = context.call("deps.delete", {"dependencyId": dependency_id})
    emit_message(result["message"], json_mode=json_, body=result)


def _without_none(**fields: object) -> dict:
    return {key: value for key, value in fields.items() if value is not None}
