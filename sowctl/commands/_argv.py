"""The root command's arguments: which command they invoke, and global options moved before it."""

from __future__ import annotations

from typing import Any, NoReturn

# The root's options that take a value, by parameter name and by flag.
VALUE_OPTION_NAMES = {
    "db": "--db",
    "server": "--server",
    "token": "--token",
    "api_key": "--api-key",
    "org": "--org",
    "company": "--company",
    "profile": "--profile",
    "timeout": "--timeout",
}
# Global options that take a value: the command's name is the first other argument.
VALUE_OPTIONS = frozenset(VALUE_OPTION_NAMES.values())


def invoked(argv: list[str]) -> str | None:
    """The name of the command or group the arguments invoke (None: the root's help)."""
    args = iter(argv)
    for arg in args:
        if arg == "--":
            return next(args, None)
        if arg in VALUE_OPTIONS:
            next(args, None)
        elif arg in ("-h", "--help"):
            return None
        elif not arg.startswith("-"):
            return arg
    return None


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
            step = 2 if arg in VALUE_OPTIONS else 1
            if start is not None and arg.split("=", 1)[0] in VALUE_OPTIONS:  # items --server URL list
                if step == 2 and index + 1 >= len(argv):
                    _missing_value(arg)
                hoisted += argv[index : index + step]
            elif start is not None:
                middle += argv[index : index + step]
            index += step
            continue
        sub = _subcommand(command, arg)
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
        elif name in VALUE_OPTIONS:
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


def _subcommand(group: Any, name: str) -> Any:
    """The command ``name`` of ``group``, built now if the group defers it (``LazyGroup``)."""
    load = getattr(group, "load", None)
    return load(name) if load is not None else group.commands.get(name)
