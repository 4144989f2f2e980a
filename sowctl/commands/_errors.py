"""Click's usage errors and database errors as the one line sowctl prints for them."""

from __future__ import annotations

import sys
from collections.abc import Callable

import typer


def usage_error(exc: typer.TyperException, fail: Callable[..., None]) -> int:
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
    fail(message, "usage", code, issues=_usage_issues(exc, problem))
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


def database_error(exc: BaseException) -> str | None:
    """One line for a database error: what its code means (``sowctl.storage.failures``: unavailable,
    busy, cannot store), else its first line; None for any other error."""
    if sys.modules.get("peewee") is None:  # not imported: it cannot be a database error
        return None
    import peewee

    from sowctl.storage.failures import classify

    failure = classify(exc)
    if failure is not None:
        return failure.describe()
    return f"database error: {first_line(exc)}" if isinstance(exc, peewee.PeeweeException) else None


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
