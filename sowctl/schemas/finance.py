"""Group B request and response models.

Field names are the API's own (snake_case), so these models use ``ApiModel``.
Money is ``Decimal`` end to end: decimal strings in purchase-order requests and
responses, JSON numbers with the decimal's exact digits in snapshots and prime
contracts (see ``sowctl.foundation.money`` for the rules and the one documented limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, get_args

from pydantic import BaseModel, PlainSerializer, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from sowctl.foundation import money
from sowctl.foundation.budgets import MAX_LINE_ITEMS
from sowctl.foundation.errors import Issue
from sowctl.schemas.common import ApiBody, ApiModel, ApiOut, Field, NonEmptyStr, Timestamp, bounded_list
from sowctl.schemas.vocabulary import MAX_BIGINT, PO_STATUSES, PurchaseOrderStatus

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


def _parse_body_text_id(value: Any) -> str:
    """An id the spec types as a string (project_id, commitment_id): numbers are refused."""
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if not value.strip() or len(value) > 64:
        raise ValueError("must be a non-empty id of at most 64 characters")
    return value


def _parse_money(value: Any) -> Decimal:
    if value is None:
        raise _missing()
    return money.parse_decimal(value)


def _parse_quantity(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    quantity = money.from_number(value)
    if quantity < 0:
        raise ValueError("must not be negative")
    if abs(quantity) >= Decimal(10) ** money.MAX_INTEGER_DIGITS:
        raise ValueError(f"must be less than 10^{money.MAX_INTEGER_DIGITS}")
    return quantity


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
# project_id is a string in the purchase-order request (spec 2.3), an integer elsewhere;
# any string is taken, and one that names no project is 404 (services.finance.project_for).
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
MoneyIn = Annotated[
    Decimal,
    PlainValidator(_parse_money),
    WithJsonSchema({"type": "string", "pattern": DECIMAL_PATTERN, "example": "1250.00"}),
]
QuantityIn = Annotated[
    Decimal,
    PlainValidator(_parse_quantity),
    WithJsonSchema({"type": "number", "minimum": 0}),
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


def field_path(path: Sequence[str | int]) -> str:
    """("line_items", 0, "amount") -> "line_items[0].amount"."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _describe(issues: Sequence[Issue], where: str = "") -> str:
    """Group B wording: "Missing required parameter X[ in query parameters]"."""
    messages = []
    for issue in issues:
        name = field_path(issue.path) or "request body"
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
        return _describe(issues, " in query parameters")


class ProjectQuery(_QueryModel):
    project_id: QueryId = Field(description="Financial project id.")


class SnapshotQuery(ProjectQuery):
    snapshot_id: QueryId = Field(description="Budget view snapshot id.")


class PrimeContractQuery(ProjectQuery):
    prime_contract_id: QueryId = Field(description="Prime contract id.")


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
        return _describe(issues)


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


class BudgetViewOut(ApiOut):
    id: int
    name: str
    description: str | None = None
    created_at: Timestamp
    updated_at: Timestamp
    project_id: int


class BudgetViewList(ApiOut):
    data: list[BudgetViewOut]


class UserRef(ApiOut):
    id: int | None = None
    name: str | None = None
    email: str | None = None


class SnapshotSummary(ApiOut):
    id: int
    name: str
    description: str | None = None
    created_at: Timestamp
    budget_view_id: int
    project_id: int
    created_by: UserRef | None = None


class SnapshotTotals(ApiOut):
    original_budget: MoneyNumber
    current_budget: MoneyNumber
    committed: MoneyNumber
    spent: MoneyNumber
    projected_total: MoneyNumber
    variance: MoneyNumber


class SnapshotLine(ApiOut):
    id: int
    code: str
    description: str | None = None
    original_budget: MoneyNumber
    current_budget: MoneyNumber
    committed: MoneyNumber
    spent: MoneyNumber
    projected_total: MoneyNumber
    variance: MoneyNumber


class SnapshotDetail(SnapshotSummary):
    line_items: list[SnapshotLine]
    totals: SnapshotTotals


class SnapshotList(ApiOut):
    data: list[SnapshotSummary]


class SnapshotResponse(ApiOut):
    data: SnapshotDetail


class Customer(ApiOut):
    id: int | None = None
    name: str | None = None
    contact_name: str | None = None
    contact_email: str | None = None
    contact_phone: str | None = None


class PaymentTerms(ApiOut):
    type: str | None = None
    payment_schedule: str | None = None
    retention_percentage: MoneyNumber | None = None
    days_until_due: int | None = None


class PrimeContractOut(ApiOut):
    id: int
    title: str
    description: str | None = None
    contract_number: str | None = None
    status: str
    contract_date: Timestamp | None = None
    start_date: Timestamp | None = None
    estimated_completion_date: Timestamp | None = None
    original_contract_value: MoneyNumber
    current_contract_value: MoneyNumber
    executed_change_orders_value: MoneyNumber
    pending_change_orders_value: MoneyNumber
    project_id: int
    customer: Customer | None = None
    payment_terms: PaymentTerms | None = None


class PrimeContractResponse(ApiOut):
    data: list[PrimeContractOut]


def money_fields(model: type[ApiOut]) -> tuple[str, ...]:
    """The fields of ``model`` that hold an amount of money (exact decimals), in its order."""
    return tuple(name for name, info in model.model_fields.items() if info.annotation is Decimal)


def plain_fields(model: type[ApiOut]) -> tuple[str, ...]:
    """The fields of ``model`` that hold one value, not an object of their own, in its order."""
    return tuple(
        name
        for name, info in model.model_fields.items()
        if not any(_is_model(kind) for kind in (info.annotation, *get_args(info.annotation)))
    )


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


__all__ = [
    "PO_STATUSES",
    "BudgetViewList",
    "BudgetViewOut",
    "PrimeContractQuery",
    "PrimeContractResponse",
    "ProjectQuery",
    "PurchaseOrderIn",
    "PurchaseOrderList",
    "PurchaseOrderOut",
    "SnapshotDetail",
    "SnapshotList",
    "SnapshotQuery",
    "SnapshotResponse",
]
