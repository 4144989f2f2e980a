"""Options and behaviours shared by the commands (output switches, creation, confirmation)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from sowctl.output.terminal import current

Json = Annotated[bool, typer.Option("--json", help="Print exactly the API's JSON body, nothing else.")]
# The admin token of a sowctl test double (``/_admin``), for the commands that call it.
AdminToken = Annotated[
    str | None,
    typer.Option(
        "--admin-token",
        envvar="SOWCTL_ADMIN_TOKEN",
        help="The server's admin token (serve --admin prints it; serve --exec sets SOWCTL_ADMIN_TOKEN).",
        show_default=False,
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print ids only, one per line.")]
# The SOW argument of a command: completed from the database or server in use.
SowArgument = Annotated[
    str,
    typer.Argument(help="The SOW's id.", autocompletion=lambda ctx, incomplete: _sow_ids(ctx, incomplete)),
]
QuietCreate = Annotated[bool, typer.Option("--quiet", "-q", help="Print only the new id (for scripts).")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation on a terminal.")]


def _sow_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    from sowctl.commands._complete import sow_ids

    return sow_ids(ctx, incomplete)


def read_secret(what: str) -> str:
    """A secret from the terminal without echo, or the first line of piped stdin, so it
    stays out of the shell's history (``config set token -``, ``--token -``)."""
    if sys.stdin is not None and sys.stdin.isatty():
        import getpass

        value = getpass.getpass(f"{what}: ")
    else:
        value = (sys.stdin.readline() if sys.stdin is not None else "").strip()
    if not value:
        from sowctl.foundation.errors import UsageError

        raise UsageError(f"no {what} given on standard input")
    return value


def emit_created(record: dict, *, json_mode: bool, quiet: bool, id_key: str = "id") -> None:
    """A created record: its JSON body, only its id (``-q``), or its fields."""
    from sowctl.output.render import emit_object, text

    if quiet and not json_mode:
        current().out.write(text(record.get(id_key)) + "\n")
    else:
        emit_object(record, json_mode=json_mode)


def needs_confirmation(yes: bool) -> bool:
    """Ask only a person: not with --yes, and never when input is not a terminal (a script
    piping or redirecting stdin keeps working as before, as with ``rm`` without ``-i``)."""
    return not yes and sys.stdin is not None and sys.stdin.isatty()


def confirm(question: str) -> None:
    """Ask ``question`` [y/N] on the terminal; anything but yes stops: "cancelled", exit 1
    (the command did not do what it was asked, so ``&&`` goes no further)."""
    current().err.write(question + " [y/N] ")
    current().err.flush()
    answer = sys.stdin.readline()
    if answer.strip().lower() not in ("y", "yes"):
        raise typer.Abort()
