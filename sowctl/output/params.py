"""What a command's parameter takes, and how its help shows it, the same on every Typer release.

What a parameter takes is read from its declaration (the command function's signature: the
Python type and the ``typer.Option``/``typer.Argument`` beside it), never from the objects
Typer builds from it, which differ between releases (click parameter types up to 0.28, type
descriptors from 0.29). The metavars sowctl sets from it (``TEXT``, ``INTEGER``, ``a|b``,
``FILE``) and the wording of refused values therefore do not depend on the Typer in use.
"""

from __future__ import annotations

import inspect
import io
import types
import weakref
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from typer.core import TyperArgument
from typer.models import ParameterInfo

from sowctl.foundation.errors import quoted

if TYPE_CHECKING:  # Typer carries its own copy of click: its classes are not the click package's
    from typer import _click as click


@dataclass(frozen=True)
class Declared:
    """A parameter's declaration: the Python type of one value (``X | None``, ``list[X]`` and
    ``Annotated`` taken off) and the ``typer.Option``/``typer.Argument`` given with it."""

    annotation: Any = str
    info: ParameterInfo | None = None

    @property
    def low(self) -> float | None:
        return getattr(self.info, "min", None)

    @property
    def high(self) -> float | None:
        return getattr(self.info, "max", None)


# The declarations of the parameters of the commands sowctl runs (``declare``), by parameter.
_DECLARED: weakref.WeakKeyDictionary[Any, Declared] = weakref.WeakKeyDictionary()


def declare(command: click.Command) -> None:
    """Record the declarations of ``command``'s parameters, read from its callback's signature."""
    callback = getattr(command, "callback", None)
    if callback is None:
        return
    try:
        signature = inspect.signature(callback, eval_str=True)
    except (TypeError, ValueError, NameError):  # not a function sowctl declared
        return
    for param in command.params:
        found = signature.parameters.get(param.name or "")
        if found is not None:
            _DECLARED[param] = declaration(found.annotation, found.default)


def declaration(annotation: Any, default: Any = None) -> Declared:
    """The ``Declared`` of a parameter annotated ``annotation`` (its default may be the
    ``typer.Option``)."""
    info = default if isinstance(default, ParameterInfo) else None
    if get_origin(annotation) is Annotated:
        annotation, *extras = get_args(annotation)
        info = next((extra for extra in extras if isinstance(extra, ParameterInfo)), info)
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        annotation = kept[0] if len(kept) == 1 else str
    if get_origin(annotation) is list:  # a repeatable option: what one value is
        annotation = get_args(annotation)[0]
    return Declared(annotation, info)


def declared(param: Any) -> Declared:
    """The declaration of ``param`` (a text parameter when sowctl did not declare it)."""
    try:
        return _DECLARED.get(param) or Declared()
    except TypeError:  # not weakly referenceable: not a click parameter
        return Declared()


_METAVARS = {"file": "FILE", "path": "PATH", "int": "INTEGER", "float": "NUMBER"}


def choices(param: Any) -> list[str] | None:
    """The values a fixed-value parameter accepts, as typed on the command line (else None)."""
    annotation = declared(param).annotation
    if get_origin(annotation) is Literal:
        return [str(value) for value in get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [str(member.value) for member in annotation]
    return None


def kind(param: Any) -> str:
    """``choice``, ``file``, ``path``, ``int``, ``float``, ``bool`` or ``text``."""
    if choices(param) is not None:
        return "choice"
    annotation = declared(param).annotation
    if not isinstance(annotation, type):
        return "text"
    for python_type, name in (
        (bool, "bool"),
        (io.IOBase, "file"),
        (Path, "path"),
        (int, "int"),
        (float, "float"),
    ):
        if issubclass(annotation, python_type):
            return name
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
    declare(command)
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


def _untyped(kind: click.types.ParamType) -> click.types.ParamType:
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

    Only click's and Typer's public methods are overridden: ``get_usage_pieces`` (the usage
    line), ``make_metavar`` and ``get_help_record`` (the plain help's name column) and
    ``display_type_rich`` (the type column of Typer's help, from 0.29)."""

    def make_metavar(self, ctx: click.Context | None = None, *, usage: bool = False) -> str:
        name = self.metavar or (self.name or "").upper()
        if usage and not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [self.make_metavar(ctx, usage=True)]

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        record = super().get_help_record(ctx)
        if record is None:
            return None
        shown = self.display_type_rich(ctx) if kind(self) not in ("text", "path") else None
        return (f"{self.make_metavar(ctx)} {shown}" if shown else self.make_metavar(ctx)), record[1]

    def display_type_rich(self, ctx: click.Context) -> str | None:
        if kind(self) in ("text", "path"):
            return None
        shown = getattr(super(), "display_type_rich", None)  # Typer before 0.29 has none
        return shown(ctx) if shown is not None else None


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
    low, high = declared(param).low, declared(param).high
    value, reason = error.get("input"), error.get("type", "")
    if what == "choice" and reason == "value_error":
        return str(error.get("ctx", {}).get("error", "")) or None
    if what not in ("int", "float"):
        return None
    convert = int if what == "int" else float
    ranged = low is not None or high is not None
    if reason.startswith(("greater_than", "less_than")) and ranged:
        try:
            number = convert(value)
        except (TypeError, ValueError):
            return None
        return f"{number} is not in the range {_describe_range(low, high)}."
    if reason.endswith(("_parsing", "_type", "_from_float")):
        return f"{quoted(value)} is not a valid {what}{' range' if ranged else ''}."
    return None


def _describe_range(low: float | None, high: float | None) -> str:
    if low is None:
        return f"x<={high}"
    if high is None:
        return f"x>={low}"
    return f"{low}<=x<={high}"
