"""sowctl replay: run the requests of a ``serve --record`` file again, locally or against a server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sowctl.commands._context import app_context
from sowctl.output.options import output_options
from sowctl.output.terminal import current


@output_options()
def replay(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A JSON-lines file written by 'sowctl serve --record FILE'.")],
    continue_on_error: Annotated[
        bool,
        typer.Option("--continue-on-error", help="Replay the remaining requests after a failure."),
    ] = False,
    json_: Annotated[
        bool,
        typer.Option(
            "--json", help='Print {"replayed", "failed", "skipped", "failures", "ids"} instead of a summary.'
        ),
    ] = False,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Local mode: generate ids from this seed (as 'serve --seed')."),
    ] = None,
    fixed_clock: Annotated[
        str | None,
        typer.Option(
            "--clock", metavar="TIMESTAMP", help="Local mode: freeze the clock (as 'serve --clock')."
        ),
    ] = None,
) -> None:
    """Replay recorded write requests in order, against --db (local) or --server (remote).

    Local mode runs each request as the recorded caller (user, organization and
    role, or API key organization and company). Remote mode sends the same
    requests with your --token / --api-key. Ids created anew are mapped, so later
    requests find them; with the recording server's --seed and --clock, local
    replay reproduces the very same ids and timestamps. Stops at the first
    failure (exit code as for that request) unless --continue-on-error.

    Example: sowctl --db copy.db replay session.jsonl
    """
    from sowctl.backends import replay as service
    from sowctl.foundation import clock
    from sowctl.foundation.errors import UsageError

    context = app_context(ctx)
    entries = service.read_file(file)
    if context.settings.remote:
        if seed is not None or fixed_clock is not None:
            raise UsageError("--seed and --clock apply to local mode; start the server with them instead")
        from sowctl.backends.remote import RemoteBackend

        run = service.remote_runner(RemoteBackend(context.settings))
    else:
        context.open_local_database("replay")
        if fixed_clock is not None:
            clock.set_fixed_now(clock.parse_clock(fixed_clock, "--clock"))
        if seed is not None:
            clock.seed(seed)
        run = service.run_local

    def report(failure: dict) -> None:
        from sowctl.output.render import text  # the recording's paths and errors are printed safely

        line = f"line {failure['line']}: {failure['method']} {failure['path']}: {failure['error']}"
        current().err.write(f"error: {text(line)}\n")

    outcome = service.replay(entries, run, continue_on_error=continue_on_error, on_failure=report)
    if json_:
        from sowctl.output.render import emit_json

        emit_json(outcome.summary())
    else:
        summary = f"{outcome.replayed} replayed, {len(outcome.failures)} failed"
        if outcome.skipped:
            summary += f", {outcome.skipped} not attempted"
        current().out.write(summary + "\n")
    if outcome.failures:
        raise typer.Exit(outcome.exit_code)
