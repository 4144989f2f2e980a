"""The ``sowctl`` root command: global options, command groups, and error → exit code."""

from __future__ import annotations

import functools
import inspect
import os
import sys
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from sowctl.backends.settings import Settings
from sowctl.commands import COMMANDS, GROUPS, command_function, group_app
from sowctl.commands._argv import VALUE_OPTION_NAMES, VALUE_OPTIONS, hoist_global_options, invoked
from sowctl.commands._context import AppContext, option_source, resolve_mode
from sowctl.commands._errors import database_error, first_line, usage_error
from sowctl.commands._lazy import LazyGroup
from sowctl.output.terminal import Terminal, current

# Names the tests and tools reach for here.
_VALUE_OPTIONS = VALUE_OPTIONS
_invoked = invoked


def _print_version(value: bool) -> None:
    if value:
        from sowctl.foundation.version import VERSION

        sys.stdout.write(f"sowctl {VERSION}\n")
        raise typer.Exit(0)


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="SOWCTL_DB",
        help="Local mode: SQLite file path or database URL (sqlite:///path, postgresql://user@host:port/db).",
    ),
]
ServerOption = Annotated[
    str | None,
    typer.Option("--server", envvar="SOWCTL_SERVER", help="Remote mode: the API's base URL."),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="SOWCTL_TOKEN",
        help='Bearer token (sows, items, deps, chain, projects, clients); "-" reads it from '
        "stdin (or asks, on a terminal).",
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="SOWCTL_API_KEY",
        help='API key (po, budgets, contracts); "-" reads it from stdin.',
    ),
]
OrgOption = Annotated[
    str | None,
    typer.Option(
        "--org",
        envvar="SOWCTL_ORG",
        help="Organization id (with the API key: po, budgets, contracts). Local mode: scopes "
        "po, budgets, contracts, "
        "projects, clients and sows; for items, deps and chain it only tells apart a SOW id "
        "that several organizations use.",
    ),
]
CompanyOption = Annotated[
    str | None,
    typer.Option(
        "--company",
        envvar="SOWCTL_COMPANY",
        help="Company id (with the API key: po, budgets, contracts).",
    ),
]
ProfileOption = Annotated[
    str | None,
    typer.Option("--profile", envvar="SOWCTL_PROFILE", help="Named profile of the config file."),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", envvar="SOWCTL_TIMEOUT", help="Remote mode: seconds to wait for the server."),
]
VersionOption = Annotated[
    bool,
    typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit."),
]


def root(
    ctx: typer.Context,
    db: DbOption = None,
    server: ServerOption = None,
    token: TokenOption = None,
    api_key: ApiKeyOption = None,
    org: OrgOption = None,
    company: CompanyOption = None,
    profile: ProfileOption = None,
    timeout: TimeoutOption = None,
    version: VersionOption = False,
) -> None:
    """The global options: the settings every command runs with (``ctx.obj``)."""
    db, server = resolve_mode(ctx, db, server)
    if token == "-" or api_key == "-":
        from sowctl.commands._options import read_secret

        token = read_secret("token") if token == "-" else token
        api_key = read_secret("API key") if api_key == "-" else api_key
    ctx.obj = AppContext(
        Settings(
            db=db,
            server=server,
            token=token,
            api_key=api_key,
            org=org,
            company=company,
            profile=profile,
            **({"timeout": timeout} if timeout is not None else {}),
        ),
        given={name for name in VALUE_OPTION_NAMES if option_source(ctx, name) == "COMMANDLINE"},
    )


def _root_app() -> typer.Typer:
    """The root command with its global options and no commands yet."""
    app = typer.Typer(
        name="sowctl",
        help="Work items, dependencies, budgets and purchase orders of the Project Delivery "
        "Service: on a local database, or against a server.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
        pretty_exceptions_enable=False,
        cls=LazyGroup,  # builds a command when it runs; plain metavars (sowctl.output.params)
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(root)
    return app


@functools.cache
def whole_app() -> typer.Typer:
    """The root with every command and group in full (what the CLI reference walks); also
    ``sowctl.cli.app``."""
    app = _root_app()
    for module, function, name in COMMANDS:  # top-level commands: their docstrings are their help
        app.command(name)(command_function(module, function))
    for name, help_text in GROUPS:
        app.add_typer(group_app(name), name=name, help=help_text)
    return app


@functools.cache
def root_command() -> LazyGroup:
    """The root click command, built once per process: each command is listed from the
    registry (``sowctl.commands``) and built, its module imported, only when it runs.

    A program that embeds the CLI (the test suite runs ``main`` thousands of times) would pay
    several ms per call to rebuild the same commands; running a click command does not change
    it (``sowctl.output.options`` keeps no state between runs), so one serves every call."""
    root_group = typer.main.get_command(_root_app())
    assert isinstance(root_group, LazyGroup)
    for module, function, name in COMMANDS:
        callback = command_function(module, function)
        stand_in = TyperCommand(name=name, help=inspect.getdoc(callback))
        root_group.defer(stand_in, functools.partial(_built_command, name, callback))
    for name, help_text in GROUPS:
        group_stand_in = TyperGroup(name=name, help=help_text, no_args_is_help=True)
        root_group.defer(group_stand_in, functools.partial(_built_group, name, help_text))
    return root_group


def _built_command(name: str, callback: Any) -> Any:
    """The click command Typer makes of a top-level command's function."""
    app = typer.Typer(add_completion=False)
    app.command(name)(callback)
    return typer.main.get_command(app)


def _built_group(name: str, help_text: str) -> Any:
    """The click group Typer makes of a group's app, named and helped as the registry says."""
    app = typer.Typer(add_completion=False)
    app.add_typer(group_app(name), name=name, help=help_text)
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def __getattr__(name: str) -> Any:
    if name == "app":  # the complete CLI, for callers that walk or run it whole
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(
    argv: list[str] | None = None, terminal: Terminal | None = None, *, catch_exceptions: bool = True
) -> int:
    """Run the CLI; every failure becomes one line on stderr (one JSON object with --json,
    ``sowctl.output.failure``) and an exit code. ``terminal``: where output goes, and whether
    it is a terminal (by default stdout and stderr, asked). ``catch_exceptions=False`` (for a
    program that embeds the CLI, such as a test suite): an unexpected error, which would be
    reported as one, propagates with its traceback instead."""
    from sowctl.output import failure
    from sowctl.output.terminal import Terminal, running

    args = list(sys.argv[1:] if argv is None else argv)
    terminal = terminal if terminal is not None else Terminal()
    terminal.json_errors = failure.wants_json(args)
    terminal.decided_exit = None
    with running(terminal):
        return _run(args, catch_exceptions)


def _run(args: list[str], catch_exceptions: bool) -> int:
    from sowctl.foundation.errors import ExitCode, SowctlError
    from sowctl.output import failure

    try:
        command = root_command()
        result = command.main(
            args=hoist_global_options(command, args), prog_name="sowctl", standalone_mode=False
        )
        return int(result) if isinstance(result, int) else 0
    except SowctlError as exc:
        _fail(_with_more_hint(exc), failure.code_of(exc), int(exc.exit_code), error=exc)
        return int(exc.exit_code)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:  # "no" at a confirmation: a person's choice, not an error or Ctrl-C
        if current().json_errors:
            _fail("cancelled: nothing was changed", "aborted", int(ExitCode.CHECK_FAILED))
        else:
            current().err.write("cancelled: nothing was changed\n")
        return int(ExitCode.CHECK_FAILED)
    except typer.TyperException as exc:  # click's usage errors and bad parameters
        return usage_error(exc, _fail)
    except KeyboardInterrupt:
        _fail("interrupted", "interrupted", 130)
        return 130
    except BrokenPipeError:
        # `sowctl ... | head`: the reader left; that is not an error of ours, and it does not
        # change an exit code the command had decided (a failed check stays 1).
        return _reader_left()
    except SystemExit as exc:
        # Typer turns a broken pipe into sys.exit(1), and 1 means "check failed" here.
        if isinstance(exc.__context__, BrokenPipeError):
            return _reader_left()
        raise
    except Exception as exc:
        if os.environ.get("SOWCTL_DEBUG"):
            raise
        return _unexpected(exc, catch_exceptions)


def _unexpected(exc: Exception, catch_exceptions: bool) -> int:
    """A database error (gone, busy or locked, cannot store, a refused statement) or a bug."""
    from sowctl.foundation.errors import ExitCode

    failed_database = database_error(exc)
    if failed_database is None and not catch_exceptions:
        raise exc
    if failed_database is not None:
        _fail(failed_database, "database", int(ExitCode.FAILURE))
    else:
        _fail(
            f"unexpected error: {type(exc).__name__}: {first_line(exc)} (set SOWCTL_DEBUG=1 for details)",
            "internal",
            int(ExitCode.FAILURE),
        )
    return int(ExitCode.FAILURE)


def _with_more_hint(exc: Any) -> str:
    """A message that counts problems it does not list says where they are listed."""
    if current().json_errors or len(exc.issues) < 2 or "more problem" not in exc.message:
        return exc.message
    return f"{exc.message}; --json lists them"


def _reader_left() -> int:
    """The exit code when stdout's reader left early: the command's decided one, else 0."""
    try:  # later writes and the final flush go nowhere instead of failing again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, current().out.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (captured)
        pass
    decided = current().decided_exit
    return decided if decided is not None else 0


def _fail(message: str, code: str, exit_code: int, *, error: Any = None, issues: Any = None) -> None:
    from sowctl.output.failure import report

    as_json = current().json_errors
    report(message, as_json=as_json, code=code, exit_code=exit_code, error=error, issues=issues)


if __name__ == "__main__":
    raise SystemExit(main())
