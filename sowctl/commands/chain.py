"""sowctl chain: a SOW's dependency chain, as a table, tree or diagram, and the CI check (contract §6)."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from sowctl.commands._options import Json, SowArgument
from sowctl.context import app_context
from sowctl.render import (
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

app = typer.Typer(
    help="The dependency chain of a SOW: show it, or check it in CI.\n\nExample: sowctl chain check sow-1",
    no_args_is_help=True,
)

SowId = SowArgument
KIND_TITLES = {
    "circular": "Circular dependency",
    "critical": "Critical dependency",
    "overdue": "Overdue dependency",
    "blocked": "Blocked dependency",
}
# GitHub shows only the first few annotations of a step; past this many per kind,
# one more line says how many were left out (the summary still counts them all).
MAX_ANNOTATIONS = 50


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


def _item(ref: dict) -> str:
    return ref["title"] if ref.get("id") is None else f"{ref['title']} ({ref['id']})"


def _is_external(entry: dict) -> bool:
    return entry.get("isExternal", entry["targetItem"].get("id") is None)


def _target(entry: dict) -> str:
    ref = entry["targetItem"]
    return f"external: {ref['title']}" if _is_external(entry) else ref["id"]


# What the CLI's own views ask the chain for, on top of the API's plain body.
EXTENSIONS = "criticalPath,external"


def _chain(ctx: typer.Context, sow_id: str, fmt: str, include: str | None = EXTENSIONS) -> dict:
    query = {"sowId": sow_id, "format": fmt}
    if include:
        query["include"] = include
    return app_context(ctx).call("chain.get", query=query)


@app.command("show")
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
        from sowctl.chart import to_dot, to_mermaid

        report = _chain(ctx, sow_id, "flat")
        sys.stdout.write(to_mermaid(report) if fmt is Format.mermaid else to_dot(report))
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
        stack = [(node, 0) for node in reversed(report["items"])]
        while stack:
            node, depth = stack.pop()
            indent = "  " * depth
            cells = [
                indent + text(node["title"]),
                *(text(node[k]) for k in ("type", "status", "id")),
            ]
            sys.stdout.write("\t".join(cells) + "\n")
            for entry in node["dependencies"]:
                cells = [
                    f"{indent}  -> {text(entry['dependencyType'])}",
                    *(text(value) for value in (_target(entry), entry["riskLevel"], entry["status"])),
                    flags.get(entry["id"], ""),
                    text(entry["id"]),
                ]
                sys.stdout.write("\t".join(cells) + "\n")
            stack.extend((child, depth + 1) for child in reversed(node["children"]))
        return
    from rich.tree import Tree

    from sowctl.render import styled

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
def check(
    ctx: typer.Context,
    sow_id: SowId,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Comma-separated issue kinds that fail the check: circular, critical, overdue, "
            "blocked (default: circular,critical,overdue).",
            show_default=False,
        ),
    ] = None,
    json_: Annotated[
        bool,
        typer.Option("--json", help='Print the summary {"sowId", "failOn", "counts", "issues", "passed"}.'),
    ] = False,
) -> None:
    """Exit 1 when the SOW's chain has any issue named by --fail-on, 0 when it has none.

    Exit 2-5 mean the check could not run (bad option, unknown SOW = 3, ...). Piped
    output: one line per kind (KIND, COUNT, pass/fail/ignored), one per issue
    (KIND, DEPENDENCY_ID or "-", DESCRIPTION), then "result passed|failed". With
    GITHUB_ACTIONS=true it also prints ::error annotations for failing kinds and
    ::warning for the others (on stderr when --json keeps stdout for the JSON).

    Example: sowctl chain check sow-1 --fail-on circular,critical
    """
    from sowctl.services.chain import check_chain, parse_fail_on

    kinds = parse_fail_on(fail_on)  # before any call: a typo is exit 2 even for a missing SOW
    summary = check_chain(_chain(ctx, sow_id, "flat"), kinds)
    if json_:
        emit_json(summary)
    elif is_tty():
        _summary_table(summary)
    else:
        _summary_lines(summary)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        stream = sys.stderr if json_ else sys.stdout
        for line in annotations(summary):
            stream.write(line + "\n")
    raise typer.Exit(0 if summary["passed"] else 1)


def describe(kind: str, issue: Any, *, with_id: bool = True) -> str:
    """One line for an issue: a cycle's path, or a dependency and what it links."""
    if kind == "circular":
        return "circular dependency: " + " -> ".join([*issue, issue[0]])
    return (
        f"{issue['id'] + ': ' if with_id else ''}{_item(issue['sourceItem'])} {issue['dependencyType']} "
        f"{_target(issue) if _is_external(issue) else _item(issue['targetItem'])} "
        f"(risk {issue['riskLevel']}, {issue['status']})"
    )


def _summary_lines(summary: dict) -> None:
    for kind, count in summary["counts"].items():
        verdict = ("fail" if count else "pass") if kind in summary["failOn"] else "ignored"
        sys.stdout.write(f"{kind}\t{count}\t{verdict}\n")
    for kind, found in summary["issues"].items():
        for issue in found:
            dep_id = "-" if kind == "circular" else text(issue["id"])
            sys.stdout.write(f"{kind}\t{dep_id}\t{text(describe(kind, issue, with_id=False))}\n")
    sys.stdout.write(f"result\t{'passed' if summary['passed'] else 'failed'}\n")


def _summary_table(summary: dict) -> None:
    from rich.table import Table

    from sowctl.render import styled

    out = console()
    table = Table(title=styled(f"Dependency check of SOW {summary['sowId']}"), header_style="bold")
    for header in ("ISSUE", "COUNT", "FAILS THE CHECK", "RESULT"):
        table.add_column(header, justify="right" if header == "COUNT" else "left")
    for kind, count in summary["counts"].items():
        checked = kind in summary["failOn"]
        result = ("[bold red]fail[/]" if count else "[green]pass[/]") if checked else "[dim]ignored[/]"
        table.add_row(kind, str(count), "yes" if checked else "no", result)
    out.print(table)
    for kind, found in summary["issues"].items():
        for issue in found:
            style = "red" if kind in summary["failOn"] else "yellow"
            out.print(styled((kind, style), " " + describe(kind, issue)))
    out.print("[bold green]passed[/]" if summary["passed"] else "[bold red]failed[/]")


def _escape_data(value: str) -> str:
    """Workflow-command message escaping (GitHub's toolkit: %, CR, LF), after the values are made safe."""
    return text(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotations(summary: dict) -> list[str]:
    """GitHub Actions ``::error``/``::warning`` lines: errors for the kinds that fail the check."""
    lines = []
    for kind, found in summary["issues"].items():
        level = "error" if kind in summary["failOn"] else "warning"
        title = _escape_property(f"{KIND_TITLES[kind]} in SOW {summary['sowId']}")
        for issue in found[:MAX_ANNOTATIONS]:
            lines.append(f"::{level} title={title}::{_escape_data(describe(kind, issue))}")
        if len(found) > MAX_ANNOTATIONS:
            more = len(found) - MAX_ANNOTATIONS
            lines.append(f"::{level} title={title}::{more} more {kind} issue(s) not annotated")
    return lines
