"""``sowctl chain check``: the CI gate's run, kept out of the command module so that stays thin.

Reads the options' files, asks for the chain's report (``schemas.chain.ChainReport``: made in
process, or read back from the server's body), applies the gate's rules (``gate.risks``,
``gate.verdict``) and hands the summary to the
writers of ``sowctl.gate.reports``. When the check cannot run, every report named is
still written, saying why, and GitHub Actions gets an ``::error`` line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from sowctl.foundation.errors import ExitCode, InvalidInput, SowctlError
from sowctl.output.render import console, emit_summary, text
from sowctl.output.terminal import current


@dataclass(frozen=True)
class CheckOptions:
    fail_on: str | None
    due_within: str | None
    reports: list[str]
    baseline: Path | None
    write_baseline: Path | None
    accepted_risks: Path | None
    json_: bool


def _read(path: Path, option: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InvalidInput.for_field(option, f"cannot read {path}: {reason}") from None


def _in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def run(ctx: typer.Context, sow_id: str, options: CheckOptions) -> int:
    """Exit code of the check: 0 passed, 1 failed; an error (exit 2-5) propagates."""
    from sowctl.gate import reports
    from sowctl.services.collector import collector_paused

    specs, problem = reports.parse_specs(options.reports)
    try:
        if problem is not None:
            raise problem
        # Findings and reports are a few hundred thousand small objects that all stay alive:
        # the cyclic collector would run over them again and again for nothing.
        with collector_paused():
            summary, titles = _summary(ctx, sow_id, options, specs)
            for_reports = {**summary, reports.ITEM_TITLES: titles}
            # The verdict is known before anything is printed: a reader of stdout that leaves
            # early (`| head -1`) must not turn a failed check into a pass.
            current().decide_exit(0 if summary["passed"] else 1)
            # The files first, stdout last: a reader leaving early cannot stop a file's report.
            for spec in sorted(specs, key=lambda spec: spec.to_stdout):
                reports.write(spec, reports.render(spec.fmt, for_reports))
    except BrokenPipeError:
        raise  # stdout's reader left: the check ran, and its report files stand
    except Exception as exc:
        _report_failure(sow_id, specs, exc)
        raise
    if not any(spec.to_stdout for spec in specs):
        emit_summary(summary, json_=options.json_, table=_table, lines=_lines)
    if _in_github_actions():
        from sowctl.gate.reports.github import annotations

        stream = current().err if options.json_ or any(spec.to_stdout for spec in specs) else current().out
        for line in annotations(summary):
            stream.write(line + "\n")
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            try:
                reports.append_step_summary(step_summary, reports.render("markdown", for_reports))
            except SowctlError as exc:  # the verdict stands; the job summary is a courtesy
                current().err.write(f"warning: {exc.message}\n")
    return 0 if summary["passed"] else 1


def _summary(
    ctx: typer.Context, sow_id: str, options: CheckOptions, specs: list
) -> tuple[dict[str, Any], dict[str, str | None]]:
    """The gate's summary, and the titles of the chain's items by id (for the reports)."""
    from sowctl.commands._context import app_context
    from sowctl.gate import risks, verdict

    if options.json_ and any(spec.to_stdout for spec in specs):
        raise InvalidInput.for_field("--report", "- (stdout) cannot be combined with --json")
    # Every option is checked before the first call: a typo is exit 2 even for a missing SOW.
    kinds = risks.parse_fail_on(options.fail_on)
    days = risks.parse_due_within(options.due_within)
    baseline = None
    if options.baseline is not None:
        baseline = verdict.parse_baseline(_read(options.baseline, "--baseline"))
    accepted = None
    if options.accepted_risks is not None:
        accepted = verdict.parse_accepted(_read(options.accepted_risks, "--accepted-risks"))
    query = {"sowId": sow_id, "format": "flat", "include": risks.INCLUDE}
    report = app_context(ctx).call("chain.get", query=query, positional=frozenset({"sowId"}), typed=True)
    summary = risks.check_chain(report, kinds, days)
    if options.write_baseline is not None:
        from sowctl.gate.reports import ReportSpec, write

        document = verdict.baseline_document(summary)
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        write(ReportSpec("baseline", str(options.write_baseline)), text, option="--write-baseline")
        if baseline is None:  # judged by the baseline just written, unless an older one was given
            baseline = {finding["fingerprint"] for finding in document["findings"]}
    return verdict.apply_gate(summary, baseline, accepted), risks.titles(report)


def _report_failure(sow_id: str, specs: list, exc: Exception) -> None:
    """Write the error into every report named (best effort) and tell GitHub Actions why."""
    from sowctl.gate import reports

    if isinstance(exc, SowctlError):
        message, code = exc.message, int(exc.exit_code)
    else:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        message, code = f"{type(exc).__name__}: {first}", int(ExitCode.FAILURE)
    for spec in specs:
        try:
            # A FIFO whose reader has gone (it read the report before the failure) is skipped,
            # not waited for: the command must end.
            text = reports.render_error(spec.fmt, sow_id, message, code)
            reports.write(spec, text, wait_for_reader=False)
        except SowctlError:
            pass  # this path cannot be written; the error line on stderr still says why the check failed
    if _in_github_actions():
        from sowctl.gate.reports.github import error_annotation

        current().err.write(error_annotation(sow_id, message, code) + "\n")
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            try:
                reports.append_step_summary(
                    step_summary, reports.render_error("markdown", sow_id, message, code)
                )
            except SowctlError:
                pass


# --- the summary on stdout ------------------------------------------------------------------


def _verdict(summary: dict[str, Any], kind: str) -> str:
    if kind not in summary["failOn"]:
        return "ignored"
    return "fail" if any(f["fails"] for f in summary["findings"] if f["kind"] == kind) else "pass"


def _lines(summary: dict[str, Any]) -> None:
    """Piped: KIND COUNT VERDICT per kind, KIND DEPENDENCY DESCRIPTION STATE per finding, then the result."""
    write = current().out.write
    for kind, count in summary["counts"].items():
        write(f"{kind}\t{count}\t{_verdict(summary, kind)}\n")
    for finding in summary["findings"]:
        dep_id, line = finding["dependencyId"], finding["message"]
        if dep_id is not None:  # the message starts with "DEPENDENCY_ID: ", a column of its own here
            line = line[len(dep_id) + 2 :]
        write(f"{finding['kind']}\t{text(dep_id or '-')}\t{text(line)}\t{finding['state']}\n")
    current().out.write(f"result\t{'passed' if summary['passed'] else 'failed'}\n")


def _table(summary: dict[str, Any]) -> None:
    from rich.table import Table

    from sowctl.output.cells import styled

    out = console()
    table = Table(title=styled(f"Dependency check of SOW {summary['sowId']}"), header_style="bold")
    for header in ("ISSUE", "COUNT", "FAILS THE CHECK", "RESULT"):
        table.add_column(header, justify="right" if header == "COUNT" else "left")
    styles = {"fail": "[bold red]fail[/]", "pass": "[green]pass[/]", "ignored": "[dim]ignored[/]"}
    for kind, count in summary["counts"].items():
        checked = kind in summary["failOn"]
        table.add_row(kind, str(count), "yes" if checked else "no", styles[_verdict(summary, kind)])
    out.print(table)
    for finding in summary["findings"]:
        style = "red" if finding["fails"] else ("dim" if finding["state"] != "new" else "yellow")
        state = "" if finding["state"] == "new" else f" [{finding['state']}]"
        out.print(styled((finding["kind"], style), f" {finding['message']}{state}"))
    out.print("[bold green]passed[/]" if summary["passed"] else "[bold red]failed[/]")
