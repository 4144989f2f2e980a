"""The output options, added by a decorator on the commands that print resources:
``--jq``, ``--columns``, ``--no-pager``.

``@output_options()`` goes under ``@app.command(...)`` of a command that has ``--json``
(its ``json_`` parameter) and adds ``--jq EXPR`` (it implies ``--json``); ``pager=True`` adds
``--no-pager`` (commands that only show data, and never ask a question), ``columns=True`` adds
``--columns`` (those that show tables or records). Their values reach ``sowctl.output.render``
through the run's terminal (``sowctl.output.terminal``) for the time the command runs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from sowctl.output.terminal import Shape, current

_JSON = "json_"  # the parameter of --json, and of --quiet, in every command (sowctl.commands._options)
_QUIET = "quiet"


def output_options(*, columns: bool = False, pager: bool = False) -> Callable[[Callable], Callable]:
    """Add ``--jq`` (and ``--columns``, ``--no-pager`` when asked) to a command function:
    Typer reads them from the signature of the function it registers."""

    def decorate(function: Callable) -> Callable:
        signature = inspect.signature(function, eval_str=True)
        names = signature.parameters
        if _JSON not in names:
            raise TypeError(f"{function.__name__}: output options need a {_JSON} (--json) parameter")
        added = [_JQ] + ([_COLUMNS] if columns else []) + ([_NO_PAGER] if pager else [])
        wrapper = _wrapped(function, _JSON, _QUIET if _QUIET in names else None)
        every = [*names.values(), *added]
        wrapper.__signature__ = signature.replace(parameters=every)
        wrapper.__annotations__ = {p.name: p.annotation for p in every}
        return wrapper

    return decorate


_JQ = inspect.Parameter(
    "jq_expression",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        typer.Option(
            "--jq",
            metavar="EXPR",
            help="Filter the JSON body with a jq expression (implies --json); "
            "strings print raw, one result per line.",
        ),
    ],
)
_COLUMNS = inspect.Parameter(
    "output_columns",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        typer.Option(
            "--columns",
            metavar="NAMES",
            help="Show these columns (or fields), comma-separated, e.g. id,title.",
        ),
    ],
)
_NO_PAGER = inspect.Parameter(
    "no_pager",
    inspect.Parameter.KEYWORD_ONLY,
    default=False,
    annotation=Annotated[
        bool,
        typer.Option(
            "--no-pager",
            help="Print long output straight to the terminal, without SOWCTL_PAGER or PAGER.",
        ),
    ],
)


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
        terminal = current()
        previous, terminal.shape = terminal.shape, Shape(jq=expression, columns=columns)
        try:
            with paged(no_pager is False):
                return callback(**kwargs)
        finally:
            terminal.shape = previous

    return run
