"""The output options every command shares, added in one place: ``--jq``, ``--columns``, ``--no-pager``.

``OutputGroup`` is the root command's class: when click resolves a command, its
parameters get plain metavars (``SOW_ID``, ``TEXT``) instead of Typer's ``{sow_id}``
and ``<str>``, and the output options are added:

* ``--jq EXPR`` to every command that has ``--json`` (it implies ``--json``);
* ``--no-pager`` to those of them that only show data (``SHOWING``), and ``--columns``
  to those that show tables or records (``TABULAR``).

Their values reach ``sowctl.output.render`` through ``sowctl.output.run_state`` for the time the
command runs.
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from sowctl.output import params, run_state

if TYPE_CHECKING:  # Typer carries its own copy of click: its classes are not the click package's
    from typer import _click as click

# Commands that read and show, and never ask a question: they may page, and choose columns.
SHOWING = frozenset(
    {
        "list",
        "get",
        "show",
        "tree",
        "views",
        "snapshots",
        "snapshot",
        "status",
        "check",
        "ready",
        "blocked",
        "options",
    }
)
# ... of which these print tables or records (trees, diagrams, check reports and the
# purchase-order choices, several lists at once, have no columns to choose).
TABULAR = SHOWING - {"tree", "check", "options"}
_DONE = "_sowctl_output_options"


class OutputGroup(TyperGroup):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_metavars(self)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            install(command)
        return command


def install(command: click.Command) -> None:
    """Add the output options to ``command`` (and a group's commands); idempotent."""
    if getattr(command, _DONE, False):
        return
    setattr(command, _DONE, True)
    _plain_metavars(command)
    if hasattr(command, "commands"):  # a group
        for sub in command.commands.values():
            install(sub)
        return
    names = {opt: param.name for param in command.params for opt in param.opts}
    json_name = names.get("--json")
    if json_name is None:  # commands that print no resources (config get, serve, ...)
        return
    added = [_output_option("--jq")]
    if command.name in TABULAR:
        added.append(_output_option("--columns"))
    if command.name in SHOWING:
        added.append(_output_option("--no-pager"))
    help_option = [p for p in command.params if "--help" in getattr(p, "opts", ())]
    rest = [p for p in command.params if p not in help_option]
    command.params = rest + added + help_option
    command.callback = _wrapped(command.callback, json_name, names.get("--quiet"))


def _wrapped(callback: Any, json_name: str, quiet_name: str | None) -> Any:
    @functools.wraps(callback)
    def run(**kwargs: Any) -> Any:
        from sowctl.foundation.errors import UsageError
        from sowctl.output.pager import paged

        expression = kwargs.pop("jq_expression", None)
        columns = kwargs.pop("output_columns", None)
        no_pager = kwargs.pop("no_pager", None)
        if expression is not None:
            kwargs[json_name] = True
        if columns is not None:
            if kwargs.get(json_name):
                raise UsageError(
                    "--columns chooses table columns; with --json or --jq, choose fields with --jq"
                )
            if quiet_name is not None and kwargs.get(quiet_name):
                raise UsageError("--columns and --quiet cannot be used together (--quiet prints ids only)")
            from sowctl.output.shaping import parse_columns

            columns = parse_columns(columns)
        previous = run_state.current
        run_state.current = run_state.Shape(jq=expression, columns=columns)
        try:
            with paged(no_pager is False):
                return callback(**kwargs)
        finally:
            run_state.current = previous

    return run


def _plain_metavars(command: click.Command) -> None:
    """Give every parameter of ``command`` sowctl's metavar when click asks for them: that
    includes those Typer or click add after the command is made (the help option, the
    completion options)."""
    get_params = command.get_params

    def plain_params(ctx: click.Context) -> list[click.Parameter]:
        found = get_params(ctx)
        for param in found:
            params.plain(param)
        return found

    command.get_params = plain_params  # type: ignore[method-assign]


def _output_option(name: str) -> click.Parameter:
    """A fresh copy of the output option ``name``, as the installed Typer builds it."""
    return copy.copy(_output_options()[name])


@functools.cache
def _output_options() -> dict[str, click.Parameter]:
    # Typer builds them from a function's signature, like every other option: how it builds
    # options (its parameter classes and their arguments) is its own business, and changed in 0.29.
    import typer.main

    template = typer.Typer(add_completion=False)
    template.command()(_output_signature)
    command = typer.main.get_command(template)
    return {param.opts[0]: param for param in command.params}


def _output_signature(
    jq_expression: Annotated[
        str | None,
        typer.Option(
            "--jq",
            metavar="EXPR",
            help="Filter the JSON body with a jq expression (implies --json); "
            "strings print raw, one result per line.",
        ),
    ] = None,
    output_columns: Annotated[
        str | None,
        typer.Option(
            "--columns",
            metavar="NAMES",
            help="Show these columns (or fields), comma-separated, e.g. id,title.",
        ),
    ] = None,
    no_pager: Annotated[
        bool,
        typer.Option(
            "--no-pager",
            help="Print long output straight to the terminal, without SOWCTL_PAGER or PAGER.",
        ),
    ] = False,
) -> None:
    """The output options (never run: ``_wrapped`` takes their values)."""
