"""Reading JSON text: the one ``json.loads`` for request bodies, body files and datasets.

Nesting is bounded before anything is parsed: ``check_depth`` (and ``DepthGauge``, for a
text read in pieces) scans the bytes for brackets outside strings, in memory that does not
grow with the depth, and refuses arrays and objects nested more than
``limits.MAX_JSON_DEPTH`` levels (``JsonTooDeep``, a ValueError). Without it, ``json.loads``
stops at Python's recursion limit (a RecursionError, at a depth that depends on the
caller's stack), and the streaming parser of datasets grew with the square of the depth.

Python refuses to convert an integer of more than 4,300 digits (a guard against
quadratic-time conversion), and ``json.loads`` passes that refusal on as an error about
the whole document, in Python's words. Such a number is valid JSON, and only the field
that holds it is wrong: it is read as a ``TooLongInteger`` marker, which no field's
validation accepts, and ``schemas.common`` words the refusal with the field's name.
"""

from __future__ import annotations

import json
import re
import secrets
from itertools import accumulate
from typing import Any

from sowctl.foundation.budgets import MAX_JSON_DEPTH

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
    """``json.loads`` with integers too long for Python read as ``TooLongInteger``, of a
    text nested at most ``MAX_JSON_DEPTH`` levels (``JsonTooDeep`` otherwise)."""
    check_depth(text)
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


# --- nesting ------------------------------------------------------------------------

_CHUNK = 1 << 20  # bytes of a text in memory scanned at once: the scan's copies stay this small


class JsonTooDeep(ValueError):
    """A JSON text with arrays and objects nested more than ``limit`` levels."""

    def __init__(self, limit: int, line: int, column: int) -> None:
        super().__init__(
            f"arrays and objects are nested more than {limit} levels deep (line {line}, column {column})"
        )
        self.limit, self.line, self.column = limit, line, column


def check_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse ``text`` (``JsonTooDeep``) if it nests arrays and objects more than ``limit``
    levels; valid or not, it is not parsed. Cheap for most texts: one with at most ``limit``
    opening brackets in all cannot nest deeper, and is not scanned."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= limit:
            return
        text = text.encode("utf-8", "surrogatepass")
    elif text.count(b"[") + text.count(b"{") <= limit:
        return
    gauge = DepthGauge(limit)
    for start in range(0, len(text), _CHUNK):
        gauge.feed(text[start : start + _CHUNK])


# Only the bytes that shape a JSON text are kept: quotes and brackets.
_NOT_MARK = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_MARKED_STRING = re.compile(rb'"[^"]*"')  # in those marks, a string that holds brackets
# The rest of a string whose start came before (on the text itself, escapes and all), and a
# token of the text: a string, or a bracket. Both linear: their classes never overlap.
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_SIGNED = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # +1 / -1 as signed bytes


class DepthGauge:
    """The nesting of a JSON text fed in pieces (a file as it is read): ``feed`` raises
    ``JsonTooDeep`` in the piece that opens one level too many, before a parser is given
    it. Keeps the depth, whether a string is open, and the line count: nothing that grows.

    A bracket is inside a string when an odd number of quotes (not escaped) come before
    it. So escapes are taken out (``\\`` pairs, then ``\"``), every other byte but quotes
    and brackets is dropped, and adjacent quotes with them (a string without brackets, or
    the end of one and the start of the next, changes no bracket's side): all at C speed,
    whatever the number of strings. What little is left is walked.
    """

    def __init__(self, limit: int = MAX_JSON_DEPTH) -> None:
        self.limit = limit
        self.depth = 0
        self.in_string = False
        self.escaped = False  # the last piece ended on a backslash that escapes this one's first byte
        self.line = 1  # of the start of the next piece
        self.line_start = 0  # offset of that line's start from the next piece's (<= 0)

    def feed(self, piece: bytes) -> None:
        was_in_string, was_escaped = self.in_string, self.escaped
        body = piece[1:] if was_escaped else piece
        self.escaped = False
        if b"\\" in body:
            trailing = len(body) - len(body.rstrip(b"\\"))
            if trailing % 2:  # the last backslash escapes the next piece's first byte
                body, self.escaped = body[:-1], True
            body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
        marks = body.translate(None, _NOT_MARK)
        if was_in_string:
            marks = b'"' + marks
        if b'"' in marks:
            marks = _MARKED_STRING.sub(b"", marks.replace(b'""', b""))
            opener = marks.find(b'"')  # a string this piece opens and does not close
            self.in_string = opener >= 0
            if self.in_string:
                marks = marks[:opener]
        else:
            self.in_string = False
        if marks:
            self._count(marks, piece, was_in_string, was_escaped)
        newlines = piece.count(b"\n")
        self.line += newlines
        self.line_start = (piece.rfind(b"\n") + 1 if newlines else self.line_start) - len(piece)

    def _count(self, brackets: bytes, piece: bytes, in_string: bool, escaped: bool) -> None:
        opened = brackets.count(b"[") + brackets.count(b"{")
        if self.depth + opened > self.limit:
            steps = memoryview(brackets.translate(_SIGNED)).cast("b")
            if max(accumulate(steps, initial=self.depth)) > self.limit:
                self._refuse(piece, in_string, escaped)
        self.depth += 2 * opened - len(brackets)

    def _refuse(self, piece: bytes, in_string: bool, escaped: bool) -> None:
        """Raise JsonTooDeep at the bracket of ``piece`` that goes one level too deep."""
        start = int(escaped)
        if in_string:
            rest = _STRING_REST.match(piece, start)
            start = rest.end() if rest else len(piece)
        depth, at = self.depth, len(piece)
        for token in _TOKEN.finditer(piece, start):
            if token[0] in (b"[", b"{"):
                depth += 1
                if depth > self.limit:
                    at = token.start()
                    break
            elif token[0] in (b"]", b"}"):
                depth -= 1
        newline = piece.rfind(b"\n", 0, at)
        line = self.line + piece.count(b"\n", 0, at)
        column = len(piece[newline + 1 : at].decode("utf-8", "replace")) + 1
        if newline < 0:
            column -= self.line_start  # the line began in an earlier piece (bytes, then)
        raise JsonTooDeep(self.limit, line, column)
