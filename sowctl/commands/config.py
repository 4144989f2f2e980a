"""sowctl config: named profiles of connection settings in the TOML config file."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from sowctl.backends import profiles
from sowctl.commands._context import app_context
from sowctl.commands._options import Json, read_secret
from sowctl.foundation.errors import NotFound, UsageError, quoted
from sowctl.foundation.redaction import secret_hint
from sowctl.output.options import output_options
from sowctl.output.render import Column, emit_json, emit_rows
from sowctl.output.terminal import current

app = typer.Typer(no_args_is_help=True)  # its help: sowctl.commands.GROUPS

ProfileOption = Annotated[
    str | None,
    typer.Option(
        "--profile",
        "-p",
        help="Profile to use (default: the global --profile, then the current one, then 'default').",
        show_default=False,
    ),
]
ShowSecrets = Annotated[bool, typer.Option("--show-secrets", help="Print tokens and API keys in full.")]
KEYS_HELP = ", ".join(profiles.PROFILE_KEYS)


def shown(key: str, value: Any, show_secrets: bool = False) -> Any:
    return secret_hint(str(value)) if key in profiles.SECRET_KEYS and not show_secrets else value


def _key(key: str) -> str:
    name = key.strip().lower().replace("-", "_")
    if name not in profiles.PROFILE_KEYS:
        raise UsageError(f"unknown key {quoted(key)}; keys are: {KEYS_HELP}")
    return name


def _profile_name(ctx: typer.Context, data: dict, requested: str | None) -> str:
    return profiles.active_profile_name(data, requested or app_context(ctx).options.profile)


def _value(key: str, text: str) -> Any:
    if key == "timeout":
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not value > 0:
            raise UsageError(f"timeout must be a positive number of seconds, not {quoted(text)}")
        return value
    if key == "server" and not text.startswith(("http://", "https://")):
        raise UsageError(f"server must be an http:// or https:// URL, not {quoted(text)}")
    if not text:
        raise UsageError(f"{key} must not be empty (use 'sowctl config unset {key}')")
    return text


@app.command("set")
def set_value(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help=f"One of: {KEYS_HELP}.", show_default=False)],
    value: Annotated[
        str | None,
        typer.Argument(
            help='The value to store. For token and api_key, "-" or nothing reads it from stdin, '
            "or asks for it without echo on a terminal, so it stays out of the shell history.",
            show_default=False,
        ),
    ] = None,
    profile: ProfileOption = None,
) -> None:
    """Store KEY=VALUE in a profile (the file is written atomically, mode 0600).

    Example: sowctl config set server http://127.0.0.1:8000 --profile dev
    Example: sowctl config set token --profile dev
    """
    name = _key(key)
    if value is None or value == "-":
        if name not in profiles.SECRET_KEYS:
            raise UsageError(
                f"give a value for {name}" + (" ('-' reads only token and api_key)" if value else "")
            )
        value = read_secret(name)
    stored = _value(name, value)
    data = profiles.load()
    target = _profile_name(ctx, data, profile)
    values = data.setdefault("profiles", {}).setdefault(target, {})
    values[name] = stored
    other = {"server": "db", "db": "server"}.get(name)
    if other and other in values:
        # A profile is local or remote, never both: the newer choice wins.
        del values[other]
        current().err.write(f"note: removed {other} from profile {target} (it now uses {name})\n")
    path = profiles.save(data)
    current().err.write(f"set {name} in profile {target} ({path})\n")


@app.command("unset")
def unset_value(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help=f"One of: {KEYS_HELP}.", show_default=False)],
    profile: ProfileOption = None,
) -> None:
    """Remove KEY from a profile.

    Example: sowctl config unset token --profile dev
    """
    name = _key(key)
    data = profiles.load()
    target = _profile_name(ctx, data, profile)
    values = data.get("profiles", {}).get(target, {})
    if name not in values:
        raise NotFound(f"{name} is not set in profile {target}")
    del values[name]
    profiles.save(data)
    current().err.write(f"removed {name} from profile {target}\n")


@app.command("get")
def get_value(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help=f"One of: {KEYS_HELP}.", show_default=False)],
    profile: ProfileOption = None,
    show_secrets: ShowSecrets = False,
) -> None:
    """Print one value of a profile (tokens and API keys masked unless --show-secrets).

    Example: sowctl config get server --profile dev
    """
    name = _key(key)
    data = profiles.load()
    target = _profile_name(ctx, data, profile)
    values = profiles.profile(data, target)
    if name not in values:
        raise NotFound(f"{name} is not set in profile {target}")
    value = values[name]
    current().out.write(f"{shown(name, value, show_secrets)}\n")


@app.command("list")
@output_options(columns=True, pager=True)
def list_profiles(
    ctx: typer.Context,
    show_secrets: ShowSecrets = False,
    json_: Json = False,
) -> None:
    """Show every profile and its values; the current profile is marked with *.

    Example: sowctl config list
    """
    data = profiles.load()
    current = _profile_name(ctx, data, None)
    shown_profiles = {
        name: {key: shown(key, value, show_secrets) for key, value in values.items()}
        for name, values in sorted(data.get("profiles", {}).items())
    }
    if json_:
        emit_json({"current": current, "path": str(profiles.config_path()), "profiles": shown_profiles})
        return
    rows = [
        {"profile": name, "current": "*" if name == current else "", "key": key, "value": value}
        for name, values in shown_profiles.items()
        for key, value in (values.items() or [("", "")])
    ]
    columns = [Column("CURRENT", "current"), Column("PROFILE", "profile"), Column("KEY", "key")]
    emit_rows(rows, [*columns, Column("VALUE", "value")], title=str(profiles.config_path()))


@app.command("use")
def use_profile(
    name: Annotated[str, typer.Argument(help="The profile to make current.", show_default=False)],
) -> None:
    """Make NAME the current profile (used when --profile and SOWCTL_PROFILE are absent).

    Example: sowctl config use dev
    """
    data = profiles.load()
    if name not in data.get("profiles", {}) and name != "default":
        raise NotFound(
            f"no profile {name!r} in {profiles.config_path()}; "
            f"create it with 'sowctl config set server URL --profile {name}'"
        )
    data["current"] = name
    profiles.save(data)
    current().err.write(f"current profile: {name}\n")


@app.command("path")
def show_path() -> None:
    """Print the config file's path.

    Example: sowctl config path
    """
    current().out.write(f"{profiles.config_path()}\n")
