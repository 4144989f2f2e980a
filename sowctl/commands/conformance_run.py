"""``sowctl conformance``'s run, kept out of the command module so that stays thin.

Resolves each server's settings as every command does (option > environment > profile),
runs the scenario of ``sowctl.conformance`` against it (and the second server), and prints
the summary: one line per difference, or ``--json``, and the ``--report`` files.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from sowctl.backends.remote import RemoteBackend
from sowctl.commands._context import app_context
from sowctl.conformance import admin_answer, compare
from sowctl.conformance import run as play
from sowctl.conformance.scenario import Plan
from sowctl.foundation import json_input
from sowctl.foundation.errors import InvalidInput, UsageError
from sowctl.gate import reports
from sowctl.gate.reports import conformance as conformance_reports
from sowctl.output.cells import styled
from sowctl.output.render import console, emit_summary, text
from sowctl.output.terminal import current

REPORT_FORMATS = ("junit", "markdown", "sarif")


@dataclass(frozen=True)
class Options:
    against: str | None
    compare: str | None
    allow_writes: bool
    admin_token: str | None
    sow: str | None
    project: int | None
    prime_contract: int | None
    purchase_order: Path | None
    reports: list[str]
    json_: bool


def run(ctx: typer.Context, options: Options) -> int:
    """0: no difference; 1: differences; a run that cannot happen raises (exit 2-5)."""
    specs = _report_specs(options)
    given = app_context(ctx).options
    first = _settings(given, options.against or given.with_profile().server, "--against")
    servers = [first] + ([_settings(given, options.compare, "--compare")] if options.compare else [])
    if not (first.token or first.api_key):
        raise UsageError(
            "conformance needs credentials: --token (dependencies, items, projects, clients) and/or "
            "--api-key with --org and --company (purchase orders, budgets, prime contracts)"
        )
    order = _body(options.purchase_order)
    backends = [RemoteBackend(settings) for settings in servers]
    try:
        plan = Plan(
            token=first.token,
            api_key=first.api_key,
            org=first.org,
            company=first.company,
            sow=options.sow,
            project=options.project,
            prime_contract=options.prime_contract,
            purchase_order=order,
            writes=options.allow_writes or _test_doubles(backends, options.admin_token),
        )
        runs = [play(backend, plan) for backend in backends]
    finally:
        for backend in backends:
            backend.close()
    summary = _summary(runs, compare.compare(*runs) if len(runs) == 2 else [], plan)
    current().decide_exit(0 if summary["passed"] else 1)
    for spec in sorted(specs, key=lambda spec: spec.to_stdout):
        reports.write(spec, _render(spec.fmt, summary))
    if not any(spec.to_stdout for spec in specs):
        emit_summary(summary, json_=options.json_, table=_table, lines=_lines)
    return 0 if summary["passed"] else 1


def _test_doubles(backends: list[RemoteBackend], admin_token: str | None) -> bool:
    """Whether every server is a sowctl test double with ``admin_token`` (writes are then safe);
    a server that is not is a usage error, rather than a run quietly left read-only."""
    if not admin_token:
        return False
    for backend in backends:
        status = admin_answer(backend, admin_token)
        if status != 200:
            answered = "no answer" if status is None else f"HTTP {status}"
            raise UsageError(
                f"--admin-token: {backend.shown_url} is not a sowctl test double with this admin token "
                f"(GET /_admin/faults: {answered}); without it the run only reads"
            )
    return True


def _report_specs(options: Options) -> list:
    specs, problem = reports.parse_specs(options.reports)
    wrong = next((spec for spec in specs if spec.fmt not in REPORT_FORMATS), None)
    if problem is None and wrong is not None:
        problem = InvalidInput.for_field(
            "--report", f"format {wrong.fmt!r} is not offered here (choose from junit, markdown, sarif)"
        )
    if problem is not None:
        raise problem
    if options.json_ and any(spec.to_stdout for spec in specs):
        raise InvalidInput.for_field("--report", "- (stdout) cannot be combined with --json")
    return specs


def _settings(given: Any, server: str | None, option: str) -> Any:
    """The settings of one server: the global options with it as --server, the profile filled in."""
    if not server:
        raise UsageError(f"{option} URL is missing (or give --server, or a profile with a server)")
    return replace(given, server=server, db=None).with_profile().check()


def _body(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InvalidInput.for_field("--purchase-order", f"cannot read {path}: {reason}") from None
    try:
        return json_input.loads(text)
    except ValueError as exc:  # JsonTooDeep among them
        raise InvalidInput.for_field("--purchase-order", f"{path} is not JSON: {exc}") from None


def _summary(runs: list, compared: list, plan: Any) -> dict[str, Any]:
    differences = [
        {"server": one.server, **difference.as_dict()} for one in runs for difference in one.differences
    ]
    differences += [{"server": "comparison", **difference.as_dict()} for difference in compared]
    counts = Counter(difference["kind"] for difference in differences)
    return {
        "servers": [one.server for one in runs],
        "readOnly": not plan.writes,
        "requests": [len(one.exchanges) for one in runs],
        "counts": dict(sorted(counts.items())),
        "differences": differences,
        "skipped": list(dict.fromkeys(reason for one in runs for reason in one.skipped)),
        "passed": not differences,
    }


def _render(fmt: str, summary: dict[str, Any]) -> str:
    render = {"junit": conformance_reports.junit, "sarif": conformance_reports.sarif}
    return render.get(fmt, conformance_reports.markdown)(summary)


def _lines(summary: dict[str, Any]) -> None:
    """Piped: KIND REQUEST WHERE DETAIL SERVER per difference, ``skipped`` lines, then the result."""
    write = current().out.write
    for difference in summary["differences"]:
        where = f"{difference['method']} {difference['path']}"
        write(
            f"{difference['kind']}\t{text(where)}\t{text(difference['where'])}\t{text(difference['detail'])}"
            f"\t{text(difference['server'])}\n"
        )
    for reason in summary["skipped"]:
        write(f"skipped\t{text(reason)}\n")
    write(f"result\t{_verdict(summary)}\t{' + '.join(map(str, summary['requests']))} requests\n")


def _verdict(summary: dict[str, Any]) -> str:
    return "passed" if summary["passed"] else f"failed ({len(summary['differences'])} differences)"


def _table(summary: dict[str, Any]) -> None:
    out = console()
    title = styled(f"Conformance of {' and '.join(summary['servers'])}")
    table = Table(title=title, header_style="bold")
    compared = len(summary["servers"]) > 1
    for header in ("KIND", "REQUEST", "WHERE", "DIFFERENCE", *(["SERVER"] if compared else [])):
        table.add_column(header)
    for d in summary["differences"]:
        cells = [(d["kind"], "red"), f"{d['method']} {d['path']}", d["where"], d["detail"]]
        table.add_row(*(styled(cell) for cell in cells + ([d["server"]] if compared else [])))
    if summary["differences"]:
        out.print(table)
    for reason in summary["skipped"]:
        out.print(styled(("not checked: " + reason, "dim")))
    style = "bold green" if summary["passed"] else "bold red"
    out.print(styled((_verdict(summary), style), f" ({' + '.join(map(str, summary['requests']))} requests)"))
