"""Metavars and refused-value messages come from a parameter's declaration (its Python type and
``typer.Option``), not from what a Typer release builds of it. Typer 0.29 words refused values
through pydantic: its side is given here as it raises them (a pydantic error as the cause), so
the rewording is tested on any installed Typer."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Literal

import annotated_types
import pytest
import typer
from pydantic import BeforeValidator, TypeAdapter, ValidationError

from sowctl.output import params
from tests.support.cli import run_main


class Color(StrEnum):
    red = "red"
    blue = "blue"


def _param(annotation, low=None, high=None):
    """The option the installed Typer makes of ``annotation``, declared as sowctl declares
    the parameters of the commands it runs."""
    import typer.main

    def command(value=None) -> None:
        pass

    option = typer.Option("--value", min=low, max=high)
    command.__annotations__ = {"value": Annotated[annotation, option], "return": None}
    app = typer.Typer(add_completion=False)
    app.command()(command)
    built = typer.main.get_command(app)
    params.declare(built)
    return built.params[0]


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, "TEXT"),
        (str | None, "TEXT"),
        (int, "INTEGER"),
        (float, "NUMBER"),
        (list[str], "TEXT"),
        (Path, "PATH"),
        (Path | None, "PATH"),
        (typer.FileText, "FILE"),
        (Color, "red|blue"),
        (Literal["a", "b"], "a|b"),
    ],
)
def test_metavar_from_the_declaration(annotation, expected):
    assert params.metavar(_param(annotation)) == expected


def test_a_ranged_integer_is_an_integer():
    assert params.metavar(_param(int, low=0, high=9)) == "INTEGER"


def test_an_undeclared_parameter_takes_text():
    assert params.kind(SimpleNamespace(name="x", opts=["--x"], metavar=None)) == "text"


def _refused(annotation, value, param):
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError as cause:
        error = typer.BadParameter("pydantic's wording", param=param)  # as Typer 0.29 raises it
        error.__cause__ = cause
        return error
    raise AssertionError("accepted")


def test_refused_values_are_worded_as_click_words_them():
    integer = _param(int)
    assert params.bad_value_message(_refused(int, "abc", integer)) == "'abc' is not a valid int."
    number = _param(float)
    assert params.bad_value_message(_refused(float, "x", number)) == "'x' is not a valid float."
    port = _param(int, low=0, high=65535)
    assert params.bad_value_message(_refused(int, "x", port)) == "'x' is not a valid int range."
    ranged = Annotated[int, annotated_types.Le(65535)]
    assert params.bad_value_message(_refused(ranged, "99999999", port)) == (
        "99999999 is not in the range 0<=x<=65535."
    )
    share = _param(float, low=0.0, high=1.0)
    at_most_one = Annotated[float, annotated_types.Le(1.0)]
    assert (
        params.bad_value_message(_refused(at_most_one, "2", share)) == "2.0 is not in the range 0.0<=x<=1.0."
    )


def test_a_refused_choice_loses_pydantic_prefix():
    def one_of(value):
        raise ValueError(f"{value!r} is not one of 'red', 'blue'.")

    color = _param(Color)
    refused = _refused(Annotated[str, BeforeValidator(one_of)], "re", color)
    assert "Value error" in str(refused.__cause__)
    assert params.bad_value_message(refused) == "'re' is not one of 'red', 'blue'."


def test_click_messages_are_kept():
    assert params.bad_value_message(typer.BadParameter("'x' is not a valid int.")) is None


def test_refused_values_on_the_command_line():
    """The installed Typer's errors, as sowctl prints them (the same on every supported Typer)."""
    result = run_main("serve", "--port", "99999999")
    assert result.exit_code == 2
    assert "Invalid value for '--port': 99999999 is not in the range 0<=x<=65535." in result.stderr
    result = run_main("items", "list", "s-1", "--type", "req")
    assert "'req' is not one of 'requirement', 'task_item'; did you mean 'requirement'?" in result.stderr


def test_help_shows_integer_options_as_integer():
    help_text = run_main("serve", "--help").stdout
    assert "--port" in help_text
    assert " INTEGER [0<=x<=65535] " in help_text
    assert " TEXT [0<=x<=65535]" not in help_text
