"""The ``sowctl`` root command: global options, command groups, and error → exit code."""

from __future__ import annotations

import functools
import os
import sys
from typing import Annotated, Any, NoReturn

import typer
import typer.main

from sowctl.backends.settings import Settings
from sowctl.commands import COMMANDS, GROUP_NAMES, GROUPS, command_function, group_app
from sowctl.commands._context import AppContext, option_source, resolve_mode
from sowctl.output.options import OutputGroup

# The root command: global options and the top-level commands; groups join it per run.
root_app = typer.Typer(
    name="sowctl",
    help="Work items, dependencies, budgets and purchase orders of the Project Delivery "
    "Service: on a local database, or against a server.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    cls=OutputGroup,  # adds --jq, --columns, --no-pager and plain metavars to the commands
    context_settings={"help_option_names": ["-h", "--help"]},
)

# The root's options that take a value, by parameter name and by flag.
_VALUE_OPTION_NAMES = {
    "db": "--db",
    "server": "--server",
    "token": "--token",
    "api_key": "--api-key",
    "org": "--org",
    "company": "--company",
    "profile": "--profile",
    "timeout": "--timeout",
}


def _print_version(value: bool) -> None:
    if value:
        from sowctl.foundation.version import VERSION

        sys.stdout.write(f"sowctl {VERSION}\n")
        raise typer.Exit(0)


@root_app.callback()
def root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            envvar="SOWCTL_DB",
            help="Local mode: SQLite file path or database URL "
            "(sqlite:///path, postgresql://user@host:port/db).",
        ),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option("--server", envvar="SOWCTL_SERVER", help="Remote mode: the API's base URL."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="SOWCTL_TOKEN",
            help='Bearer token (sows, items, deps, chain, projects, clients); "-" reads it from '
            "stdin (or asks, on a terminal).",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="SOWCTL_API_KEY",
            help='API key (po, budgets, contracts); "-" reads it from stdin.',
        ),
    ] = None,
    org: Annotated[
        str | None,
        typer.Option(
            "--org",
            envvar="SOWCTL_ORG",
            help="Organization id (with the API key: po, budgets, contracts). Local mode: scopes "
            "po, budgets, contracts, "
            "projects, clients and sows; for items, deps and chain it only tells apart a SOW id "
            "that several organizations use.",
        ),
    ] = None,
    company: Annotated[
        str | None,
        typer.Option(
            "--company",
            envvar="SOWCTL_COMPANY",
            help="Company id (with the API key: po, budgets, contracts).",
        ),
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option("--profile", envvar="SOWCTL_PROFILE", help="Named profile of the config file."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", envvar="SOWCTL_TIMEOUT", help="Remote mode: seconds to wait for the server."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = False,
) -> None:
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
        given={name for name in _VALUE_OPTION_NAMES if option_source(ctx, name) == "COMMANDLINE"},
    )


for _module, _function, _name in COMMANDS:  # top-level commands: their docstrings are their help
    root_app.command(_name)(command_function(_module, _function))


@functools.cache
def whole_app() -> typer.Typer:
    """The root with every command group in full (what shell completion walks); also
    ``sowctl.cli.app``."""
    return _with_groups(loaded=GROUP_NAMES)


def _with_groups(loaded: frozenset[str], sub: str | None = None) -> typer.Typer:
    """The root with each group: those in ``loaded`` from their modules (only ``sub`` of
    their commands in full, when given), every other one an empty stand-in with the same
    name and help, so its module is not imported."""
    import copy

    tree = copy.copy(root_app)
    tree.registered_groups = []
    for name, help_text in GROUPS:
        if name in loaded:
            group = copy.copy(group_app(name))
            if sub is not None:
                group.registered_commands = _stand_ins(group.registered_commands, keep=sub)
        else:
            group = typer.Typer(no_args_is_help=True)
        tree.add_typer(group, name=name, help=help_text)
    return tree


def __getattr__(name: str) -> Any:
    if name == "app":  # the complete CLI, for callers that walk or run it whole
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Global options that take a value: the command's name is the first other argument.
_VALUE_OPTIONS = frozenset(_VALUE_OPTION_NAMES.values())


def _invoked(argv: list[str]) -> str | None:
    """The name of the command or group the arguments invoke (None: the root's help)."""
    args = iter(argv)
    for arg in args:
        if arg == "--":
            return next(args, None)
        if arg in _VALUE_OPTIONS:
            next(args, None)
        elif arg in ("-h", "--help"):
            return None
        elif not arg.startswith("-"):
            return arg
    return None


def _narrowing(args: list[str]) -> tuple[str | None, str | None]:
    """What the arguments invoke: a top-level name, and the command within it when it
    is a group's (None: the group's help, or not a group)."""
    name = _invoked(args)
    if name not in GROUP_NAMES or name not in args:
        return name, None
    sub = _invoked(args[args.index(name) + 1 :])
    return name, sub if sub in {
        _command_name(command) for command in group_app(name).registered_commands
    } else None


@functools.lru_cache(maxsize=64)
def _command(name: str | None, sub: str | None) -> Any:
    """The click command of the CLI narrowed to ``name`` and ``sub``, built once per process.

    A person's shell runs ``main`` once per process, but a program that embeds the CLI
    (the test suite runs it thousands of times) would pay several ms per call to rebuild
    the same tree. Click commands are not changed by running them (the output options
    are installed once, ``sowctl.output.options.install``), so one can serve every call.
    """
    return typer.main.get_command(_narrowed(name, sub))


def _narrowed(name: str | None, sub: str | None) -> typer.Typer:
    """The root with only the invoked command's tree in full; the others keep name and help.

    Typer builds the parameters of every command of every group before it runs
    one of them; this keeps start-up (and ``sowctl --help``) from paying for the
    commands that are not run, or for importing their modules. Help, errors and
    behaviour are unchanged.
    """
    import copy

    narrowed = copy.copy(_with_groups(loaded=GROUP_NAMES & {name}, sub=sub))
    narrowed.registered_commands = _stand_ins(root_app.registered_commands, keep=name)
    return narrowed


def _command_name(info: Any) -> str:
    return info.name or info.callback.__name__.lower().replace("_", "-")


def _stand_ins(commands: list, keep: str | None) -> list:
    """``commands`` with every one but ``keep`` replaced by a parameterless stand-in
    that has the same name and help (what a listing of the commands shows)."""
    import copy
    import inspect

    result = []
    for info in commands:
        if _command_name(info) != keep:
            original = info.callback
            info = copy.copy(info)
            info.name = _command_name(info)
            info.help = info.help if info.help is not None else inspect.getdoc(original)
            info.callback = _placeholder
        result.append(info)
    return result


def hoist_global_options(root_command: Any, argv: list[str]) -> list[str]:
    """Move global options given after the command (``items list S --server URL``) before it.

    gh accepts its global flags anywhere; click only before the subcommand. An option the
    command itself defines (``tokens create --org``) stays the command's. (Typer vendors its
    own click, so groups and options are recognised by what they have, not by class.)
    """
    command = root_command
    index, start = 0, None
    middle: list[str] = []  # what lies between the first group and the command, minus hoisted
    hoisted: list[str] = []
    while _is_group(command) and index < len(argv):
        arg = argv[index]
        if arg == "--":
            return argv
        if arg.startswith("-"):
            step = 2 if arg in _VALUE_OPTIONS else 1
            if start is not None and arg.split("=", 1)[0] in _VALUE_OPTIONS:  # items --server URL list
                if step == 2 and index + 1 >= len(argv):
                    _missing_value(arg)
                hoisted += argv[index : index + step]
            elif start is not None:
                middle += argv[index : index + step]
            index += step
            continue
        sub = command.commands.get(arg)
        if sub is None:
            return argv  # click reports the unknown command
        if start is None:
            start = index
        middle.append(arg)
        command, index = sub, index + 1
    if start is None or _is_group(command):
        return argv
    own: set[str] = set()
    takes_value: set[str] = set()
    for param in command.params:
        if getattr(param, "param_type_name", None) == "option":
            names = [*param.opts, *param.secondary_opts]
            own.update(names)
            if not param.is_flag and not param.count:
                takes_value.update(names)
    kept: list[str] = []
    rest = iter(argv[index:])
    for arg in rest:
        if arg == "--":
            kept += [arg, *rest]
            break
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in own:
            kept.append(arg)
            if name in takes_value and name == arg:  # its value may look like a global option
                value = next(rest, None)
                if value is not None:
                    kept.append(value)
        elif name in _VALUE_OPTIONS:
            if name != arg:  # --server=URL
                hoisted.append(arg)
                continue
            value = next(rest, None)
            if value is None:  # no value: moved, it would take the command's name as one
                _missing_value(arg)
            hoisted += [arg, value]
        else:
            kept.append(arg)
    return [*argv[:start], *hoisted, *middle, *kept]


def _missing_value(option: str) -> NoReturn:
    from sowctl.foundation.errors import UsageError

    raise UsageError(f"option {option} needs a value (see 'sowctl --help')")


def _is_group(command: Any) -> bool:
    return isinstance(getattr(command, "commands", None), dict)


def _placeholder() -> None:  # stands in for a command that is not run
    raise AssertionError("a placeholder command was run")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every failure becomes one line on stderr (one JSON object with --json,
    ``sowctl.output.failure``) and an exit code."""
    from sowctl.foundation.errors import ExitCode, SowctlError
    from sowctl.output import failure, run_state

    global _json_errors
    run_state.decided_exit = None  # in process (tests) main runs many times
    args = list(sys.argv[1:] if argv is None else argv)
    _json_errors = failure.wants_json(args)
    try:
        # A shell asking for completions (the _SOWCTL_COMPLETE protocol) passes its words in
        # the environment, not argv: it gets the whole app.
        whole = "_SOWCTL_COMPLETE" in os.environ
        command = typer.main.get_command(whole_app()) if whole else _command(*_narrowing(args))
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
        if _json_errors:
            _fail("cancelled: nothing was changed", "aborted", int(ExitCode.CHECK_FAILED))
        else:
            sys.stderr.write("cancelled: nothing was changed\n")
        return int(ExitCode.CHECK_FAILED)
    except typer.TyperException as exc:  # click's usage errors and bad parameters
        return _usage_error(exc)
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
        database_error = _database_error(exc)
        if database_error is not None:
            # The database went away, is busy or locked, cannot store, or refused a statement.
            _fail(database_error, "database", int(ExitCode.FAILURE))
            return int(ExitCode.FAILURE)
        _fail(
            f"unexpected error: {type(exc).__name__}: {_first_line(exc)} (set SOWCTL_DEBUG=1 for details)",
            "internal",
            int(ExitCode.FAILURE),
        )
        return int(ExitCode.FAILURE)


def _with_more_hint(exc: Any) -> str:
    """A message that counts problems it does not list says where they are listed."""
    if _json_errors or len(exc.issues) < 2 or "more problem" not in exc.message:
        return exc.message
    return f"{exc.message}; --json lists them"


def _reader_left() -> int:
    """The exit code when stdout's reader left early: the command's decided one, else 0."""
    from sowctl.output import run_state

    try:  # later writes and the final flush go nowhere instead of failing again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (captured)
        pass
    return run_state.decided_exit if run_state.decided_exit is not None else 0


def _usage_error(exc: typer.TyperException) -> int:
    """Click's usage errors as one line (exit 2); a group called bare still shows its help."""
    from sowctl.foundation.errors import ExitCode

    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError":
        exc.show()  # type: ignore[attr-defined]
        return int(ExitCode.INVALID_INPUT)
    from sowctl.output.params import bad_value_message

    refused = bad_value_message(exc)  # Typer 0.29 words it otherwise
    if refused is not None:
        exc.message = refused
    format_message = getattr(exc, "format_message", None)
    message = format_message() if format_message else str(exc)
    message = _with_hint(message, _closest_choice(exc))
    problem = message
    if ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    # Click gives 1 to some parameter errors (e.g. an unreadable file); 1 means "check failed" here.
    code = int(getattr(exc, "exit_code", ExitCode.INVALID_INPUT) or ExitCode.INVALID_INPUT)
    code = code if code != int(ExitCode.CHECK_FAILED) else int(ExitCode.INVALID_INPUT)
    _fail(message, "usage", code, issues=_usage_issues(exc, problem))
    return code


def _usage_issues(exc: typer.TyperException, problem: str) -> list[dict] | None:
    """The option or argument click refused, as the JSON error's issue (None: none named)."""
    param = getattr(exc, "param", None)
    if param is None:
        return None
    is_option = getattr(param, "param_type_name", "") == "option" and param.opts
    # Typer 0.29's arguments have no ``human_readable_name``: their name, as help shows it.
    name = param.opts[0] if is_option else getattr(param, "human_readable_name", None)
    if not name:
        name = str(getattr(param, "name", "") or "").upper() or None
    if name is None:
        return None
    return [{"path": [], "option": name, "message": problem}]


def _closest_choice(exc: typer.TyperException) -> str:
    """For an option with a fixed set of values (``--type depends``): the likeliest one meant."""
    import re

    from sowctl.output.params import choices as accepted

    param = getattr(exc, "param", None)
    choices = accepted(param) if param is not None else None
    typed = re.match(r"'(.*?)' is not one of", getattr(exc, "message", "") or "")
    if not choices or not typed:
        return ""
    from sowctl.commands._fields import suggestion

    return suggestion(typed.group(1), [str(choice) for choice in choices])


def _with_hint(message: str, hint: str) -> str:
    return message.rstrip(".") + hint if hint else message


def _database_error(exc: BaseException) -> str | None:
    """One line for a database error: what its code means (``sowctl.storage.failures``: unavailable,
    busy, cannot store), else its first line; None for any other error."""
    if sys.modules.get("peewee") is None:  # not imported: it cannot be a database error
        return None
    import peewee

    from sowctl.storage.failures import classify

    failure = classify(exc)
    if failure is not None:
        return failure.describe()
    return f"database error: {_first_line(exc)}" if isinstance(exc, peewee.PeeweeException) else None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


_json_errors = False  # set by main from its arguments: failures as JSON objects


def _fail(message: str, code: str, exit_code: int, *, error: Any = None, issues: Any = None) -> None:
    from sowctl.output.failure import report

    report(message, as_json=_json_errors, code=code, exit_code=exit_code, error=error, issues=issues)


if __name__ == "__main__":
    raise SystemExit(main())
