"""Reading JSON text: the one ``json.loads`` for request bodies, body files and datasets.

Python refuses to convert an integer of more than 4,300 digits (a guard against
quadratic-time conversion), and ``json.loads`` passes that refusal on as an error about
the whole document, in Python's words. Such a number is valid JSON, and only the field
that holds it is wrong: it is read as a ``TooLongInteger`` marker, which no field's
validation accepts, and ``schemas.common`` words the refusal with the field's name.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

# Python's default limit (sys.get_int_max_str_digits()), fixed here so that what is
# accepted does not depend on how the interpreter was set up.
MAX_INTEGER_DIGITS = 4300


class TooLongInteger:
    """A JSON integer of more than ``MAX_INTEGER_DIGITS`` digits, unconverted."""

    __slots__ = ("digits", "text")

    def __init__(self, text: str) -> None:
        self.text = text  # sent on as written (remote mode), for the server to refuse
        self.digits = len(text.lstrip("-"))

    @property
    def problem(self) -> str:
        return f"must be a number of at most {MAX_INTEGER_DIGITS} digits (this one has {self.digits})"

    def __repr__(self) -> str:  # pydantic's own error text may show the input
        return f"<integer of {self.digits} digits>"


def parse_int(text: str) -> int | TooLongInteger:
    digits = len(text) - text.startswith("-")
    return int(text) if digits <= MAX_INTEGER_DIGITS else TooLongInteger(text)


def loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads`` with integers too long for Python read as ``TooLongInteger``."""
    return json.loads(text, parse_int=parse_int, **options)


def dumps(value: Any) -> str:
    """``json.dumps``, a ``TooLongInteger`` written back as the number it was read from."""
    found: list[str] = []
    token = secrets.token_hex(8)  # no text of the value can hold it by chance

    def number(item: Any) -> str:
        if not isinstance(item, TooLongInteger):
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
        found.append(item.text)
        return f"{token}{len(found) - 1}"

    text = json.dumps(value, default=number)
    for index, digits in enumerate(found):
        text = text.replace(f'"{token}{index}"', digits, 1)
    return text
