"""What a command's parameter takes, and how its help shows it, the same on every Typer we support.

Typer up to 0.28 gives each parameter a click type (``param.type``: ``IntParamType``,
``Choice``, ``Path``...); 0.29 replaced them with a type descriptor (``param.type_descriptor``:
the Python annotation and the ``typer.Option`` settings) and shows ``<str>``, ``<int>`` and
``<bool>`` where click showed ``TEXT``. ``kind`` and ``choices`` read either, so the metavars
sowctl sets from them (``TEXT``, ``INTEGER``, ``a|b``, ``FILE``) and its errors do not depend on
the version; which one is found is feature-detected, not read from a version number.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

from typer.core import TyperArgument

from sowctl.foundation.errors import quoted

if TYPE_CHECKING:  # Typer carries its own copy of click: its classes are not the click package's
    import click

_CLICK_KINDS = {
    "filename": "file",
    "file": "file",
    "path": "path",
    "int": "int",
    "integer": "int",
    "int range": "int",
    "integer range": "int",
    "float": "float",
    "float range": "float",
    "boolean": "bool",
    "bool": "bool",
}
_METAVARS = {"file": "FILE", "path": "PATH", "int": "INTEGER", "float": "NUMBER"}


def choices(param: Any) -> list[str] | None:
    """The values a fixed-value parameter accepts, as typed on the command line (else None)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        if descriptor.choices is None:
            return None
        return [str(c.value) if isinstance(c, Enum) else str(c) for c in descriptor.choices]
    found = getattr(getattr(param, "type", None), "choices", None)
    return None if found is None else [str(c.value) if isinstance(c, Enum) else str(c) for c in found]


def kind(param: Any) -> str:
    """``choice``, ``file``, ``path``, ``int``, ``float``, ``bool`` or ``text``."""
    if choices(param) is not None:
        return "choice"
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return _CLICK_KINDS.get(getattr(getattr(param, "type", None), "name", ""), "text")
    if descriptor.is_file:
        return "file"
    if descriptor.is_path:
        return "path"
    annotation = descriptor.annotation
    if get_origin(annotation) is list:  # a repeatable option: what one value is
        annotation = get_args(annotation)[0]
    if annotation is bool:
        return "bool"
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    return "text"


# A list of choices longer than this is not the metavar: help at 80 columns would cut it
# mid-word (``relate|d_to``). The option's name stands in, and its help lists the choices.
CHOICES_IN_METAVAR = 24


def metavar(param: Any) -> str:
    """An option's metavar: ``TEXT``, ``INTEGER``, ``NUMBER``, ``FILE``, ``PATH``, ``a|b|c``,
    or for many choices the option's name (``TYPE``)."""
    accepted = choices(param)
    if accepted is not None:
        listed = "|".join(accepted)
        if len(listed) <= CHOICES_IN_METAVAR:
            return listed
        longest = max(getattr(param, "opts", None) or [param.name or "value"], key=len)
        return longest.lstrip("-").replace("-", "_").upper()
    return _METAVARS.get(kind(param), "TEXT")


def _with_choices_listed(param: Any) -> None:
    """Many choices are named in the help, since the metavar does not show them."""
    accepted = choices(param)
    if accepted is None or len("|".join(accepted)) <= CHOICES_IN_METAVAR:
        return
    help_text = getattr(param, "help", None) or ""
    if not all(choice in help_text for choice in accepted):
        param.help = f"{help_text} One of: {', '.join(accepted)}.".strip()


_DONE = "_sowctl_plain_metavars"


def plain_metavars(command: click.Command) -> None:
    """Give every parameter of ``command`` (and of a group's commands) sowctl's metavar when
    click asks for them: that includes those Typer or click add after the command is made (the
    help option, the completion options). Idempotent."""
    if getattr(command, _DONE, False):
        return
    setattr(command, _DONE, True)
    for sub in (getattr(command, "commands", None) or {}).values():
        plain_metavars(sub)
    get_params = command.get_params

    def plain_params(ctx: click.Context) -> list[click.Parameter]:
        found = get_params(ctx)
        for param in found:
            plain(param)
        return found

    command.get_params = plain_params  # type: ignore[method-assign]


def plain(param: Any) -> None:
    """Give ``param`` sowctl's metavar (if it has none of its own); a flag shows none."""
    if param.metavar is not None:
        return
    if isinstance(param, TyperArgument):
        param.metavar = (param.name or "value").upper()
        if getattr(param, "type", None) is not None and kind(param) in ("text", "path"):
            param.type = _untyped(param.type)  # Typer < 0.29 shows the click type's name beside it
        param.__class__ = _Argument
    elif getattr(param, "is_flag", False) or getattr(param, "count", False):
        param.metavar = ""  # Typer 0.29 would show <bool>, earlier ones nothing
    else:
        param.metavar = metavar(param)
        _with_choices_listed(param)


def _untyped(kind: click.ParamType) -> click.ParamType:
    """The same click type, showing no type name in help."""
    import copy

    plain = copy.copy(kind)  # keeps its settings (a Path's exists=, dir_okay=...)
    plain.__class__ = type("Plain" + type(kind).__name__, (type(kind),), {"get_metavar": _no_metavar})
    return plain


def _no_metavar(self: Any, param: Any, ctx: Any = None) -> str:
    return ""


class _Argument(TyperArgument):
    """An argument shown as ``SOW_ID`` (required) or ``[SOW_ID]`` (optional) in usage lines, with
    no type beside its name in help when it takes text or a path (its name says what it is).

    ``make_metavar`` is what Typer before 0.29 calls; ``_usage_display_name``,
    ``_rich_display_name`` and ``display_type_rich`` what 0.29 calls."""

    def make_metavar(self, ctx: click.Context | None = None, *, usage: bool = False) -> str:
        name = self.metavar or (self.name or "").upper()
        if usage and not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:
        return self.make_metavar(usage=True)

    def _rich_display_name(self) -> str:  # despite its name: the plain help's (TYPER_USE_RICH=0)
        return self.make_metavar()

    def display_type_rich(self, ctx: click.Context) -> str | None:
        if kind(self) in ("text", "path"):
            return None
        return super().display_type_rich(ctx)


def bad_value_message(exc: Exception) -> str | None:
    """The message of a value the command line gave that its parameter refused, worded as
    Typer before 0.29 words it (click's types: ``'x' is not a valid int.``, ``'x' is not one
    of 'a', 'b'.``, ``9 is not in the range 0<=x<=5.``); None to keep the message as it is.

    Typer 0.29 converts values with pydantic and passes on its wording (``Input should be a
    valid integer, unable to parse string as an integer``); the pydantic error it raises from
    tells what was refused and why."""
    param = getattr(exc, "param", None)
    errors = getattr(exc.__cause__, "errors", None)
    if param is None or not callable(errors):
        return None
    found = errors()
    if not found:
        return None
    error, what = found[0], kind(param)
    value, reason = error.get("input"), error.get("type", "")
    if what == "choice" and reason == "value_error":
        return str(error.get("ctx", {}).get("error", "")) or None
    if what not in ("int", "float"):
        return None
    convert = int if what == "int" else float
    ranged = getattr(param, "min", None) is not None or getattr(param, "max", None) is not None
    if reason.startswith(("greater_than", "less_than")) and ranged:
        try:
            number = convert(value)
        except (TypeError, ValueError):
            return None
        return f"{number} is not in the range {_describe_range(param.min, param.max)}."
    if reason.endswith(("_parsing", "_type", "_from_float")):
        return f"{quoted(value)} is not a valid {what}{' range' if ranged else ''}."
    return None


def _describe_range(low: float | None, high: float | None) -> str:
    if low is None:
        return f"x<={high}"
    if high is None:
        return f"x>={low}"
    return f"{low}<=x<={high}"
