"""The ``sowctl`` root command: global options, command groups, and error → exit code."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated

import typer

from sowctl.context import AppContext
from sowctl.settings import Settings

app = typer.Typer(
    name="sowctl",
    help="Work items, dependencies, budgets and purchase orders of the Project Delivery "
    "Service: on a local database, or against a server.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# (module, attribute, name): each module holds one command group or one top-level command.
GROUPS = [
    ("sowctl.commands.sows", "app", "sows"),
    ("sowctl.commands.items", "app", "items"),
    ("sowctl.commands.deps", "app", "deps"),
    ("sowctl.commands.chain", "app", "chain"),
    ("sowctl.commands.po", "app", "po"),
    ("sowctl.commands.budgets", "app", "budgets"),
    ("sowctl.commands.contracts", "app", "contracts"),
    ("sowctl.commands.projects", "app", "projects"),
    ("sowctl.commands.clients", "app", "clients"),
    ("sowctl.commands.tokens", "app", "tokens"),
    ("sowctl.commands.keys", "app", "keys"),
    ("sowctl.commands.config", "app", "config"),
]
COMMANDS = [
    ("sowctl.commands.dataset", "import_command", "import"),
    ("sowctl.commands.dataset", "export_command", "export"),
    ("sowctl.commands.serve", "serve", "serve"),
    ("sowctl.commands.status", "status", "status"),
    ("sowctl.commands.replay", "replay", "replay"),
]


@app.callback()
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
        typer.Option("--token", envvar="SOWCTL_TOKEN", help="Bearer token (Groups A and C)."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="SOWCTL_API_KEY", help="API key (Group B)."),
    ] = None,
    org: Annotated[
        str | None,
        typer.Option("--org", envvar="SOWCTL_ORG", help="Organization id (Group B; scopes local B/C)."),
    ] = None,
    company: Annotated[
        str | None,
        typer.Option("--company", envvar="SOWCTL_COMPANY", help="Company id (Group B)."),
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
) -> None:
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
        )
    )


def _register() -> None:
    for module_name, attribute, name in GROUPS + COMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # not built yet
                continue
            raise
        target = getattr(module, attribute)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=name)
        else:
            app.command(name)(target)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every failure becomes one line on stderr and an exit code."""
    from sowctl.errors import ExitCode, SowctlError

    try:
        result = app(args=argv, prog_name="sowctl", standalone_mode=False)
        return int(result) if isinstance(result, int) else 0
    except SowctlError as exc:
        _fail(exc.message)
        return int(exc.exit_code)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        _fail("aborted")
        return 130
    except typer.TyperException as exc:  # click's usage errors and bad parameters
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            _fail(str(exc))
        return int(getattr(exc, "exit_code", ExitCode.INVALID_INPUT) or ExitCode.INVALID_INPUT)
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        # `sowctl ... | head`: the reader left; that is not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        if os.environ.get("SOWCTL_DEBUG"):
            raise
        _fail(f"unexpected error: {type(exc).__name__}: {exc} (set SOWCTL_DEBUG=1 for details)")
        return int(ExitCode.FAILURE)


def _fail(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()


if __name__ == "__main__":
    raise SystemExit(main())
