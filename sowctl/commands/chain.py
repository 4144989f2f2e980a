"""sowctl chain: a SOW's dependency chain as a table, tree or diagram; the CI check; ready items."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from sowctl.commands._context import app_context
from sowctl.commands._options import Json, SowArgument
from sowctl.output.options import output_options
from sowctl.output.render import (
    Column,
    console,
    deepest_tree_level,
    emit_json,
    emit_line,
    emit_rows,
    is_tty,
    no_columns,
    text,
)
from sowctl.output.terminal import current

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

SowId = SowArgument


class Format(StrEnum):
    table = "table"
    tree = "tree"
    json = "json"
    mermaid = "mermaid"
    dot = "dot"


def _flags(report: dict) -> dict[str, str]:
    """Dependency id -> "critical", "overdue" or both, from the report's issues."""
    flags: dict[str, list[str]] = {}
    for kind in ("critical", "overdue"):
        for entry in report["issues"][kind]:
            flags.setdefault(entry["id"], []).append(kind)
    return {dep_id: ",".join(kinds) for dep_id, kinds in flags.items()}


# The describing rules live with the risk rules (gate.risks); imported when used, since
# every command module is imported at start-up and remote mode loads no service module.
def _item(ref: dict) -> str:
    from sowctl.gate.risks import item_label

    return item_label(ref)


def _is_external(entry: dict) -> bool:
    from sowctl.gate.risks import is_external

    return is_external(entry)


def _target(entry: dict) -> str:
    ref = entry["targetItem"]
    return f"external: {ref['title']}" if _is_external(entry) else ref["id"]


# What the CLI's own views ask the chain for, on top of the API's plain body.
EXTENSIONS = "criticalPath,external"


def _chain(ctx: typer.Context, sow_id: str, fmt: str, include: str | None = EXTENSIONS) -> dict:
    query = {"sowId": sow_id, "format": fmt}
    if include:
        query["include"] = include
    return app_context(ctx).call("chain.get", query=query, positional=frozenset({"sowId"}))


@app.command("show")
@output_options(columns=True, pager=True)
def show(
    ctx: typer.Context,
    sow_id: SowId,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format",
            "-f",
            help="table; tree (items with their dependencies); json (the API body); "
            "mermaid or dot (diagram source: paste into Markdown, or render with Graphviz).",
        ),
    ] = Format.table,
    json_: Json = False,
    include: Annotated[
        str | None,
        typer.Option(
            "--include",
            help="With --json: extensions to add to the API body, comma-separated: criticalPath "
            "(the longest ordering chain), external (isExternal and externalTarget on entries).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show the dependencies of a SOW with their issues and critical path.

    --json prints the API's body for the chain (sowId, dependencies, issues),
    with the extensions named by --include. An external dependency's targetItem
    has only a title: the external party's name.

    Example: sowctl chain show sow-1 --format mermaid
    """
    if fmt is not Format.table:
        no_columns(f"--format {fmt.value}")
    if json_ or fmt is Format.json:
        # --format tree --json: the tree body, as the API gives it for format=tree
        emit_json(_chain(ctx, sow_id, "tree" if fmt is Format.tree else "flat", include))
    elif fmt is Format.tree:
        _show_tree(_chain(ctx, sow_id, "tree"))
    elif fmt in (Format.mermaid, Format.dot):
        from sowctl.output.chart import to_dot, to_mermaid

        report = _chain(ctx, sow_id, "flat")
        current().out.write(to_mermaid(report) if fmt is Format.mermaid else to_dot(report))
    else:
        _show_table(_chain(ctx, sow_id, "flat"))


def _show_table(report: dict) -> None:
    flags = _flags(report)
    columns = [
        Column("ID", "id"),
        Column("SOURCE", lambda e: e["sourceItem"]["id"]),
        Column("TARGET", _target, kind=lambda e: "text" if _is_external(e) else "id"),
        Column("TYPE", "dependencyType", kind="enum"),
        Column("RISK", "riskLevel", kind="enum", priority=2),
        Column("STATUS", "status", kind="enum"),
        Column(
            "ISSUES",
            lambda e: flags.get(e["id"], ""),
            style=lambda e: "bold red" if e["id"] in flags else None,
            kind="enum",
        ),
        # On a terminal wide enough, the titles of the items too (piped: only by --columns).
        Column("SOURCE TITLE", lambda e: e["sourceItem"]["title"], kind="text", priority=3, default=is_tty()),
        Column(
            "TARGET TITLE",
            lambda e: "" if _is_external(e) else e["targetItem"]["title"],
            kind="text",
            priority=3,
            default=is_tty(),
        ),
    ]
    if not is_tty():  # plain rows only, so cut/awk see one dependency per line
        emit_rows(report["dependencies"], columns)
        return
    emit_rows(report["dependencies"], columns, title=f"Dependency chain of SOW {report['sowId']}")
    issues = report["issues"]
    emit_line(
        f"circular: {len(issues['circular'])}  critical: {len(issues['critical'])}  "
        f"overdue: {len(issues['overdue'])}"
    )
    for cycle in issues["circular"]:
        emit_line("cycle: " + " -> ".join([*cycle, cycle[0]]), style="bold red")
    if report.get("criticalPath"):
        emit_line(
            f"critical path ({len(report['criticalPath'])} items): " + " -> ".join(report["criticalPath"])
        )


def _show_tree(report: dict) -> None:
    """Items in their hierarchy, each followed by the dependencies it is the source of."""
    flags = _flags(report)
    if not is_tty():
        # Walked with an explicit stack, deepest-first, like the Rich tree below.
        pending = [(node, 0) for node in reversed(report["items"])]
        while pending:
            node, depth = pending.pop()
            indent = "  " * depth
            cells = [
                indent + text(node["title"]),
                *(text(node[k]) for k in ("type", "status", "id")),
            ]
            current().out.write("\t".join(cells) + "\n")
            for entry in node["dependencies"]:
                cells = [
                    f"{indent}  -> {text(entry['dependencyType'])}",
                    *(text(value) for value in (_target(entry), entry["riskLevel"], entry["status"])),
                    flags.get(entry["id"], ""),
                    text(entry["id"]),
                ]
                current().out.write("\t".join(cells) + "\n")
            pending.extend((child, depth + 1) for child in reversed(node["children"]))
        return
    from rich.tree import Tree

    from sowctl.output.cells import styled

    tree = Tree(styled(("SOW " + report["sowId"], "bold")))
    deepest = deepest_tree_level()  # deeper nodes are drawn there, not dropped
    stack: list[tuple[Any, dict, int]] = [(tree, node, 0) for node in reversed(report["items"])]
    while stack:
        branch, node, level = stack.pop()
        kind = "R" if node["type"] == "requirement" else "T"
        sub = branch.add(styled((kind, "bold"), f" {node['title']} {node['status']} ", (node["id"], "dim")))
        for entry in node["dependencies"]:
            flag = flags.get(entry["id"])
            style = "bold red" if flag else ("dim" if entry["status"] in ("cancelled", "resolved") else "")
            label = (
                f"→ {entry['dependencyType']} {_item(entry['targetItem'])}  "
                f"risk {entry['riskLevel']}, {entry['status']}{'  ' + flag.upper() if flag else ''}"
            )
            sub.add(styled((label, style)))
        below = sub if level < deepest else branch
        stack.extend((below, child, min(level + 1, deepest)) for child in reversed(node["children"]))
    console().print(tree)


@app.command("check")
@output_options(pager=True)
def check(
    ctx: typer.Context,
    sow_id: SowId,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Comma-separated risk kinds that fail the check: circular, critical, overdue, blocked, "
            "escalation, conflict, external (default: circular,critical,overdue).",
            show_default=False,
        ),
    ] = None,
    due_within: Annotated[
        str | None,
        typer.Option(
            "--due-within",
            help="Look-ahead of the external risk: an active external dependency whose SLA date is "
            "within this many days, e.g. 14d or 2w (default: 14d).",
            show_default=False,
        ),
    ] = None,
    report: Annotated[
        list[str] | None,
        typer.Option(
            "--report",
            metavar="FORMAT=PATH",
            help="Also write a report: sarif, junit, gitlab (Code Quality JSON) or markdown; PATH - for "
            "stdout. Repeat for several.",
            show_default=False,
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="Fail only on findings not listed in this baseline file."),
    ] = None,
    write_baseline: Annotated[
        Path | None,
        typer.Option(
            "--write-baseline",
            help="Write every current finding to this baseline file (and judge by it, unless --baseline "
            "names an older one).",
        ),
    ] = None,
    accepted_risks: Annotated[
        Path | None,
        typer.Option(
            "--accepted-risks",
            help="TOML file of accepted findings, each with owner, reason and expires; they fail again "
            "once expired.",
        ),
    ] = None,
    json_: Annotated[
        bool,
        typer.Option(
            "--json",
            help='Print the summary {"sowId", "asOf", "failOn", "dueWithinDays", "counts", "issues", '
            '"findings", "usesBaseline", "passed"}.',
        ),
    ] = False,
) -> None:
    """Exit 1 when the SOW's chain has a new finding of a kind named by --fail-on, 0 when it has none.

    Exit 2-5 mean the check could not run (bad option, unknown SOW = 3, ...); every
    --report file is then written with the error. Piped output: one line per kind
    (KIND, COUNT, pass/fail/ignored), one per finding (KIND, DEPENDENCY_ID or "-",
    DESCRIPTION, STATE: new, baseline, accepted or expired), then "result passed|failed".
    With GITHUB_ACTIONS=true it also prints ::error annotations for failing findings
    (::warning and ::notice for the others; on stderr when stdout carries JSON or a
    report) and appends the Markdown report to $GITHUB_STEP_SUMMARY when that is set.

    Example: sowctl chain check sow-1 --fail-on circular,critical
    """
    from sowctl.commands.chain_check import CheckOptions, run

    options = CheckOptions(fail_on, due_within, report or [], baseline, write_baseline, accepted_risks, json_)
    raise typer.Exit(run(ctx, sow_id, options))


def _readiness(ctx: typer.Context, sow_id: str) -> dict:
    """The ready and waiting task items, judged on the chain's tree report (``chain check``'s
    rules on its record: made in process locally, read back from the server's body remotely)."""
    from sowctl.gate.risks import INCLUDE, readiness

    query = {"sowId": sow_id, "format": "tree", "include": INCLUDE}
    report = app_context(ctx).call("chain.get", query=query, positional=frozenset({"sowId"}), typed=True)
    return readiness(report)


@app.command("ready")
@output_options(columns=True, pager=True)
def ready(ctx: typer.Context, sow_id: SowId, json_: Json = False) -> None:
    """Task items that can start: not completed or cancelled, every prerequisite completed.

    A prerequisite is what an open (active or blocked) dependency makes the item wait for:
    the target of its depends_on, prerequisite or successor dependencies (an item, or an
    external party until the dependency is resolved), the source of a blocks dependency
    on it. Piped: ID, STATUS, TITLE per item. --json: {"sowId", "ready": [...]}.

    Example: sowctl chain ready sow-1
    """
    found = _readiness(ctx, sow_id)
    columns = [Column("ID", "id"), Column("STATUS", "status"), Column("TITLE", "title")]
    emit_rows(
        found["ready"],
        columns,
        json_mode=json_,
        body={"sowId": found["sowId"], "ready": found["ready"]},
        title=f"Ready task items of SOW {found['sowId']}",
    )


def _waits_for(row: dict) -> str:
    return ", ".join(
        f"{w['itemId']} ({w['status']})" if "itemId" in w else f"external: {w['title']} ({w['status']})"
        for w in row["waitsFor"]
    )


@app.command("blocked")
@output_options(columns=True, pager=True)
def blocked(ctx: typer.Context, sow_id: SowId, json_: Json = False) -> None:
    """Task items still waiting, each with what it waits for (the opposite of chain ready).

    Piped: ID, STATUS, TITLE, WAITS_FOR (item ids or external parties, each with its status)
    per item. --json: {"sowId", "waiting": [{..., "waitsFor": [{"dependencyId", "itemId",
    "title", "status"}]}]} (no itemId for an external party; its status is the dependency's).

    Example: sowctl chain blocked sow-1
    """
    found = _readiness(ctx, sow_id)
    columns = [
        Column("ID", "id"),
        Column("STATUS", "status"),
        Column("TITLE", "title"),
        Column("WAITS FOR", _waits_for),
    ]
    emit_rows(
        found["waiting"],
        columns,
        json_mode=json_,
        body={"sowId": found["sowId"], "waiting": found["waiting"]},
        title=f"Waiting task items of SOW {found['sowId']}",
    )
