"""The output options every command shares, added in one place: ``--jq``, ``--columns``, ``--no-pager``.

``OutputGroup`` is the root command's class: when click resolves a command, its
parameters get plain metavars (``SOW_ID``, ``TEXT``) instead of Typer's ``{sow_id}``
and ``<str>``, and the output options are added:

* ``--jq EXPR`` to every command that has ``--json`` (it implies ``--json``);
* ``--no-pager`` to those of them that only show data (``SHOWING``), and ``--columns``
  to those that show tables or records (``TABULAR``).

Their values reach ``sowctl.render`` through ``sowctl.output.state`` for the time the
command runs.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from typer.core import TyperArgument, TyperGroup, TyperOption

from sowctl.output import state

if TYPE_CHECKING:  # Typer carries its own copy of click: its classes are not the click package's
    import click

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
    showing = command.name in SHOWING
    added = [
        TyperOption(
            param_decls=["--jq", "jq_expression"],
            metavar="EXPR",
            help="Filter the JSON body with a jq expression (implies --json); "
            "strings print raw, one result per line.",
        )
    ]
    if command.name in TABULAR:
        added.append(
            TyperOption(
                param_decls=["--columns", "output_columns"],
                metavar="NAMES",
                help="Show these columns (or fields), comma-separated, e.g. id,title.",
            )
        )
    if showing:
        added.append(
            TyperOption(
                param_decls=["--no-pager", "no_pager"],
                is_flag=True,
                default=False,
                help="Print long output straight to the terminal, without SOWCTL_PAGER or PAGER.",
            )
        )
    help_option = [p for p in command.params if "--help" in getattr(p, "opts", ())]
    rest = [p for p in command.params if p not in help_option]
    command.params = rest + added + help_option
    command.callback = _wrapped(command.callback, json_name, names.get("--quiet"))


def _wrapped(callback: Any, json_name: str, quiet_name: str | None) -> Any:
    @functools.wraps(callback)
    def run(**kwargs: Any) -> Any:
        from sowctl.errors import UsageError
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
        previous = state.current
        state.current = state.Shape(jq=expression, columns=columns)
        try:
            with paged(no_pager is False):
                return callback(**kwargs)
        finally:
            state.current = previous

    return run


def _plain_metavars(command: click.Command) -> None:
    for param in command.params:
        if not hasattr(getattr(param, "type", None), "name"):
            continue  # a Typer whose parameters have no click type: its own metavars stay
        if isinstance(param, TyperArgument) and param.metavar is None:
            param.metavar = (param.name or "value").upper()
            param.__class__ = _Argument
            if param.type.name in ("text", "str", "string", "path"):  # the name says what it is
                param.type = _plain(param.type)
        elif isinstance(param, TyperOption) and param.metavar is None and not param.is_flag:
            param.metavar = _type_metavar(param.type)


_TYPE_METAVARS = {
    "integer": "INTEGER",
    "integer range": "INTEGER",
    "float": "NUMBER",
    "float range": "NUMBER",
}


def _type_metavar(kind: click.ParamType) -> str:
    choices = getattr(kind, "choices", None)
    if choices is not None:
        return "|".join(str(choice) for choice in choices)
    if kind.name in ("filename", "file"):
        return "FILE"
    return _TYPE_METAVARS.get(kind.name, kind.name.upper() if kind.name in ("path",) else "TEXT")


def _plain(kind: click.ParamType) -> click.ParamType:
    """The same type, showing no type name in help."""
    import copy

    plain = copy.copy(kind)  # keeps its settings (a Path's exists=, dir_okay=...)
    plain.__class__ = type("Plain" + type(kind).__name__, (type(kind),), {"get_metavar": _no_metavar})
    return plain


def _no_metavar(self: Any, param: Any, ctx: Any = None) -> str:
    return ""


class _Argument(TyperArgument):
    """An argument shown as ``SOW_ID`` (required) or ``[SOW_ID]`` (optional) in usage lines."""

    def make_metavar(self, ctx: click.Context, *, usage: bool = False) -> str:
        name = self.metavar or (self.name or "").upper()
        if usage and not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")
