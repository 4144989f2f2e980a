"""What Group B's records share (the ``/api/external`` API: purchase orders, budgets,
prime contracts): their ids, their money, the wording of a refused request, the project query.

Group B's field names are the API's own (snake_case), so its models derive from ``ApiModel``.
Money is ``Decimal`` end to end: decimal strings in purchase-order requests and
responses, JSON numbers with the decimal's exact digits in snapshots and prime
contracts (see ``sowctl.foundation.money`` for the rules and the one documented limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from sowctl.foundation import money
from sowctl.foundation.errors import Issue
from sowctl.schemas.common import ApiModel, Field
from sowctl.schemas.vocabulary import MAX_BIGINT

MAX_ID = MAX_BIGINT
DECIMAL_PATTERN = rf"^\d{{1,{money.MAX_INTEGER_DIGITS}}}(\.\d{{1,{money.MAX_FRACTION_DIGITS}}})?$"

# --- field types ------------------------------------------------------------------


def _missing() -> PydanticCustomError:
    return PydanticCustomError("missing", "Field required")


def _parse_query_id(value: Any) -> int:
    """An integer id in a query string: a string of digits."""
    if value is None or value == "":
        raise _missing()
    if not isinstance(value, str) or not value.isascii() or not value.isdigit():
        raise ValueError("must be an integer")
    return _id_in_range(int(value) if len(value) < 25 else MAX_ID + 1)


def _parse_body_id(value: Any) -> int:
    """An integer id in a JSON body: a JSON number without a fraction (7, 7.0 or 7e0).

    The spec types these ids as numbers, so a string ("7") is refused like any wrong type.
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be an integer (a JSON number)")
    return _id_in_range(value)


def _id_in_range(value: int) -> int:
    if value < 0 or value > MAX_ID:
        raise ValueError(f"must be an integer between 0 and {MAX_ID}")
    return value


def _parse_money(value: Any) -> Decimal:
    if value is None:
        raise _missing()
    return money.parse_decimal(value)


QueryId = Annotated[
    int,
    PlainValidator(_parse_query_id),
    WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_ID}),
]
BodyId = Annotated[
    int,
    PlainValidator(_parse_body_id),
    WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_ID}),
]
MoneyIn = Annotated[
    Decimal,
    PlainValidator(_parse_money),
    WithJsonSchema({"type": "string", "pattern": DECIMAL_PATTERN, "example": "1250.00"}),
]
MoneyString = Annotated[
    Decimal,
    PlainValidator(money.from_number),
    PlainSerializer(money.to_string, return_type=str),
    WithJsonSchema({"type": "string", "pattern": r"^-?\d+\.\d{2,}$", "example": "1250.00"}),
]
MoneyNumber = Annotated[
    Decimal,
    PlainValidator(money.from_number),
    PlainSerializer(money.to_number, return_type=float),
    WithJsonSchema({"type": "number"}),
]


def _field_path(path: Sequence[str | int]) -> str:
    """("line_items", 0, "amount") -> "line_items[0].amount"."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def describe_issues(issues: Sequence[Issue], where: str = "") -> str:
    """Group B wording: "Missing required parameter X[ in query parameters]"."""
    messages = []
    for issue in issues:
        name = _field_path(issue.path) or "request body"
        if issue.message == "is required":
            messages.append(f"Missing required parameter {name}{where}")
        else:
            reason = issue.message
            if reason.startswith("input should be a valid dictionary"):
                reason = "must be an object"
            messages.append(f"Invalid parameter {name}{where}: {reason}")
    return "; ".join(messages)


# --- requests ---------------------------------------------------------------------


class _QueryModel(ApiModel):
    @classmethod
    def describe_errors(cls, issues: Sequence[Issue]) -> str:
        return describe_issues(issues, " in query parameters")


class ProjectQuery(_QueryModel):
    project_id: QueryId = Field(description="Financial project id.")
