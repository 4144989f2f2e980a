"""Group B's purchase orders: the request that makes one, the order as answered, a page of
orders, and what an order of a project may name (its options).

Amounts are decimal strings both ways (``schemas.external``: ``MoneyIn``, ``MoneyString``).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import PlainValidator, WithJsonSchema

from sowctl.foundation import money
from sowctl.foundation.budgets import MAX_LINE_ITEMS
from sowctl.foundation.errors import Issue
from sowctl.schemas.common import ApiBody, ApiOut, Field, NonEmptyStr, bounded_list
from sowctl.schemas.external import BodyId, MoneyIn, MoneyString, describe_issues
from sowctl.schemas.vocabulary import PurchaseOrderStatus

# --- field types ------------------------------------------------------------------


def _parse_body_text_id(value: Any) -> str:
    """An id the spec types as a string (project_id, commitment_id): numbers are refused."""
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if not value.strip() or len(value) > 64:
        raise ValueError("must be a non-empty id of at most 64 characters")
    return value


def _parse_quantity(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    quantity = money.from_number(value)
    if quantity < 0:
        raise ValueError("must not be negative")
    if abs(quantity) >= Decimal(10) ** money.MAX_INTEGER_DIGITS:
        raise ValueError(f"must be less than 10^{money.MAX_INTEGER_DIGITS}")
    return quantity


# project_id is a string in the purchase-order request (spec 2.3), an integer elsewhere;
# any string is taken, and one that names no project is 404 (services.external_scope.project_for).
ProjectIdIn = Annotated[
    str,
    PlainValidator(_parse_body_text_id),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 64, "example": "101"}),
]
CommitmentId = Annotated[
    str,
    PlainValidator(_parse_body_text_id),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 64, "example": "5001"}),
]
QuantityIn = Annotated[
    Decimal,
    PlainValidator(_parse_quantity),
    WithJsonSchema({"type": "number", "minimum": 0}),
]

# --- requests ---------------------------------------------------------------------


class PurchaseOrderLineIn(ApiBody):
    description: NonEmptyStr
    amount: MoneyIn = Field(description="Decimal string, at most 4 fraction digits, not negative.")
    cost_code_id: BodyId
    quantity: QuantityIn | None = None
    unit_cost: MoneyIn | None = None


if TYPE_CHECKING:  # what the validator built below accepts, for the type checker
    PurchaseOrderLinesIn = list[PurchaseOrderLineIn]
else:
    PurchaseOrderLinesIn = bounded_list(PurchaseOrderLineIn, MAX_LINE_ITEMS, "line item", at_least=1)


class PurchaseOrderIn(ApiBody):
    """A purchase order, with its JSON types: project_id and commitment_id strings, vendor_id
    and cost_code_id numbers (a whole number, 7 or 7.0), amounts decimal strings."""

    project_id: ProjectIdIn
    commitment_id: CommitmentId
    title: NonEmptyStr
    vendor_id: BodyId
    status: PurchaseOrderStatus
    line_items: Annotated[
        PurchaseOrderLinesIn,
        Field(description=f"1 to {MAX_LINE_ITEMS} line items."),
    ]

    @classmethod
    def describe_errors(cls, issues: Sequence[Issue]) -> str:
        return describe_issues(issues)


# --- responses --------------------------------------------------------------------


class VendorRef(ApiOut):
    id: int
    name: str


class CostCodeRef(ApiOut):
    id: int
    full_code: str
    name: str


class PurchaseOrderLineOut(ApiOut):
    id: int
    description: str
    amount: MoneyString
    cost_code: CostCodeRef


class PurchaseOrderOut(ApiOut):
    id: int
    number: str
    status: str
    title: str
    vendor: VendorRef
    original_amount: MoneyString
    revised_amount: MoneyString
    total_amount: MoneyString
    line_items: list[PurchaseOrderLineOut]


class PurchaseOrderList(ApiOut):
    data: list[PurchaseOrderOut]


class CommitmentRef(ApiOut):
    id: str
    title: str
    vendor_id: int | None = None


class PurchaseOrderOptions(ApiOut):
    """What a purchase order of a project may name (sowctl extension): the vendors and
    cost codes of the project's company and the project's commitments, by id."""

    vendors: list[VendorRef]
    cost_codes: list[CostCodeRef]
    commitments: list[CommitmentRef]
