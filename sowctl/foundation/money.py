"""Exact money: parsing decimal strings, summing, and rendering for JSON and humans.

Money never passes through a float on its way from a request to storage and back.
The rules, in one place:

* **Requests** carry amounts as decimal strings: optional ``-``, digits, optionally
  ``.`` and 1 to ``MAX_FRACTION_DIGITS`` digits; at most ``MAX_INTEGER_DIGITS``
  digits before the point. No exponent, sign ``+``, spaces, ``NaN`` or
  ``Infinity``. JSON numbers are refused for amounts, since a float has already
  lost the exact value by the time the server sees it.
* **Purchase-order responses** render decimal strings with at least two fraction
  digits (``"30"`` → ``"30.00"``, ``"0.125"`` stays ``"0.125"``).
* **Snapshot and prime-contract responses** want JSON numbers. A number is emitted
  as the float whose shortest repr is the decimal's exact digits, which holds for
  every value with at most 15 significant digits (e.g. ``9999999999999.99``).
  Integral values beyond that are emitted as exact JSON integers; a non-integral
  value with more than 15 significant digits cannot be written exactly as a JSON
  number that every client parses as a double, and is rounded to the nearest
  double (documented limit; the stored value stays exact).
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterable
from decimal import Decimal

from sowctl.foundation.errors import quoted

MAX_FRACTION_DIGITS = 4
MAX_INTEGER_DIGITS = 15
# ASCII digits only, and \Z: "$" would let "12\n" through, \d "١٢" (Decimal() reads both).
_DECIMAL_RE = re.compile(r"^(-?)(\d+)(?:\.(\d+))?\Z", re.ASCII)
_CENTS = Decimal("0.01")
# Enough digits for MAX_INTEGER_DIGITS + MAX_FRACTION_DIGITS summed over millions of lines.
_CONTEXT = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN)


def parse_decimal(value: object, *, allow_negative: bool = False) -> Decimal:
    """A decimal string to Decimal; ValueError with a user-facing reason otherwise."""
    if isinstance(value, bool) or not isinstance(value, str):
        if isinstance(value, int | float):
            raise ValueError(f'must be a decimal string such as "{_example(value)}", not a JSON number')
        raise ValueError('must be a decimal string such as "1250.00"')
    match = _DECIMAL_RE.match(value)
    if match is None:
        raise ValueError(f'must be a decimal string such as "1250.00" (got {quoted(value)})')
    sign, whole, fraction = match.groups()
    if fraction is not None and len(fraction) > MAX_FRACTION_DIGITS:
        raise ValueError(f"must have at most {MAX_FRACTION_DIGITS} digits after the decimal point")
    if len(whole.lstrip("0")) > MAX_INTEGER_DIGITS:
        raise ValueError(f"must have at most {MAX_INTEGER_DIGITS} digits before the decimal point")
    amount = Decimal(value)
    if sign and amount != 0 and not allow_negative:
        raise ValueError("must not be negative")
    return abs(amount) if amount == 0 else amount  # "-0.00" is zero


def total(values: Iterable[Decimal]) -> Decimal:
    """Exact sum (never rounded by the default 28-digit context)."""
    result = Decimal(0)
    for value in values:
        result = _CONTEXT.add(result, value)
    return result


def subtract(left: Decimal, right: Decimal) -> Decimal:
    return _CONTEXT.subtract(left, right)


def to_string(value: Decimal) -> str:
    """Decimal string with at least two fraction digits, never in exponent form."""
    value = Decimal(value)
    if value == 0:
        value = abs(value)
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent > -2:
        value = value.quantize(_CENTS, context=_CONTEXT)
    else:
        stripped = value.normalize(_CONTEXT)
        stripped_exponent = stripped.as_tuple().exponent  # a letter for NaN and infinities
        small = isinstance(stripped_exponent, int) and stripped_exponent <= -2
        value = stripped if small else value.quantize(_CENTS, context=_CONTEXT)
    return format(value, "f")


def to_number(value: Decimal | None) -> float | int | None:
    """A JSON number with the decimal's exact digits where a double can hold them."""
    if value is None:
        return None
    value = Decimal(value)
    if value == 0:
        return 0.0  # never "-0.0"
    as_float = float(value)
    if Decimal(repr(as_float)) == value:
        return as_float
    if value == value.to_integral_value():
        return int(value)
    return as_float


def from_number(value: object) -> Decimal:
    """A JSON number (as parsed by ``json``) or decimal string to Decimal, via its repr."""
    if isinstance(value, bool):
        raise ValueError("must be a number")
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("must be a finite number")
        return Decimal(repr(value))
    if isinstance(value, str):
        return parse_decimal(value, allow_negative=True)
    raise ValueError("must be a number")


def display(value: object, *, grouping: bool = True) -> str:
    """Money for people: 2+ fraction digits, thousands separators if ``grouping``."""
    if value is None or value == "":
        return ""
    try:
        amount = Decimal(value) if isinstance(value, str) else from_number(value)
    except (ValueError, decimal.InvalidOperation):
        return str(value)
    text = to_string(amount)
    if not grouping:
        return text
    sign = "-" if text.startswith("-") else ""
    whole, _, fraction = text.lstrip("-").partition(".")
    return f"{sign}{int(whole):,}.{fraction}"


def _example(value: int | float) -> str:
    try:
        return to_string(from_number(value))
    except ValueError:
        return "1250.00"
