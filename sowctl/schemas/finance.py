"""Group B request and response models (spec §2.3 to 2.7, §4.3; contract §7.3).

Field names are the API's own (snake_case), so these models use ``ApiModel``.
Money is ``Decimal`` end to end: decimal strings in purchase-order requests and
responses, JSON numbers with the decimal's exact digits in snapshots and prime
contracts (see ``sowctl.money`` for the rules and the one documented limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, PlainSerializer, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from sowctl import money
from sowctl.errors import Issue
from sowctl.schemas.common import ApiModel, Field, NonEmptyStr, Timestamp

MAX_ID = 2**63 - 1  # the id columns are 64-bit integers
MAX_LINE_ITEMS = 1000
DECIMAL_PATTERN = rf"^\d{{1,{money.MAX_INTEGER_DIGITS}}}(\.\d{{1,{money.MAX_FRACTION_DIGITS}}})?$"

# Spec §3 shows draft and issued as examples only; these are the statuses we accept
# (the usual purchase-order life cycle). Anything else is a 400 naming the choices.
PO_STATUSES = (
    "draft",
    "pending",
    "processing",
    "submitted",
    "issued",
    "approved",
    "partially_received",
    "received",
    "closed",
    "void",
)
PurchaseOrderStatus = Literal[
    "draft",
    "pending",
    "processing",
    "submitted",
    "issued",
    "approved",
    "partially_received",
    "received",
    "closed",
    "void",
]


# --- field types ------------------------------------------------------------------


def _missing() -> PydanticCustomError:
    return PydanticCustomError("missing", "Field required")


def _parse_id(value: Any) -> int:
    """An integer id, sent as a JSON integer or a string of digits (query strings)."""
    if value is None or value == "":
        raise _missing()
    if isinstance(value, bool):
        raise ValueError("must be an integer")
    if isinstance(value, str):
        if not value.isascii() or not value.isdigit():
            raise ValueError("must be an integer")
        value = int(value)
    if not isinstance(value, int):
        raise ValueError("must be an integer")
    if value < 0 or value > MAX_ID:
        raise ValueError(f"must be an integer between 0 and {MAX_ID}")
    return value


def _parse_commitment_id(value: Any) -> str:
    if value is None or value == "":
        raise _missing()
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError("must be a string")
    text = str(value)
    if not text.strip() or len(text) > 64:
        raise ValueError("must be a non-empty id of at most 64 characters")
    return text


def _parse_money(value: Any) -> Decimal:
    if value is None:
        raise _missing()
    return money.parse_decimal(value)


def _parse_quantity(value: Any) -> Decimal:
    quantity = money.from_number(value)
    if quantity < 0:
        raise ValueError("must not be negative")
    if abs(quantity) >= Decimal(10) ** money.MAX_INTEGER_DIGITS:
        raise ValueError(f"must be less than 10^{money.MAX_INTEGER_DIGITS}")
    return quantity


IdInt = Annotated[
    int,
    PlainValidator(_parse_id),
    WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_ID}),
]
# project_id is a string in spec §2.3 but an integer everywhere else: both are accepted.
ProjectIdIn = Annotated[
    int,
    PlainValidator(_parse_id),
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": r"^\d+$"}, {"type": "integer", "minimum": 0}]}),
]
CommitmentId = Annotated[
    str,
    PlainValidator(_parse_commitment_id),
    WithJsonSchema({"type": "string", "example": "5001"}),
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


def _line_count(lines: list) -> list:
    if not lines:
        raise ValueError("must contain at least one line item")
    if len(lines) > MAX_LINE_ITEMS:
        raise ValueError(f"must contain at most {MAX_LINE_ITEMS} line items")
    return lines


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
    project_id: IdInt = Field(description="Financial project id.")


class SnapshotQuery(ProjectQuery):
    snapshot_id: IdInt = Field(description="Budget view snapshot id.")


class PrimeContractQuery(ProjectQuery):
    prime_contract_id: IdInt = Field(description="Prime contract id.")


class PurchaseOrderLineIn(ApiModel):
    description: NonEmptyStr
    amount: MoneyIn = Field(description="Decimal string, at most 4 fraction digits, not negative.")
    cost_code_id: IdInt
    quantity: QuantityIn | None = None
    unit_cost: MoneyIn | None = None


class PurchaseOrderIn(ApiModel):
    """Spec §2.3. Ids may be sent as JSON integers or strings of digits."""

    project_id: ProjectIdIn
    commitment_id: CommitmentId
    title: NonEmptyStr
    vendor_id: IdInt
    status: PurchaseOrderStatus
    line_items: Annotated[
        list[PurchaseOrderLineIn],
        AfterValidator(_line_count),
        Field(
            description=f"1 to {MAX_LINE_ITEMS} line items.",
            json_schema_extra={"minItems": 1, "maxItems": MAX_LINE_ITEMS},  # _line_count checks them
        ),
    ]

    @classmethod
    def describe_errors(cls, issues: Sequence[Issue]) -> str:
        return _describe(issues)


# --- responses --------------------------------------------------------------------


class VendorRef(ApiModel):
    id: int
    name: str


class CostCodeRef(ApiModel):
    id: int
    full_code: str
    name: str


class PurchaseOrderLineOut(ApiModel):
    id: int
    description: str
    amount: MoneyString
    cost_code: CostCodeRef


class PurchaseOrderOut(ApiModel):
    id: int
    number: str
    status: str
    title: str
    vendor: VendorRef
    original_amount: MoneyString
    revised_amount: MoneyString
    total_amount: MoneyString
    line_items: list[PurchaseOrderLineOut]


class PurchaseOrderList(ApiModel):
    data: list[PurchaseOrderOut]


class BudgetViewOut(ApiModel):
    id: int
    name: str
    description: str | None
    created_at: Timestamp
    updated_at: Timestamp
    project_id: int


class BudgetViewList(ApiModel):
    data: list[BudgetViewOut]


class UserRef(ApiModel):
    id: int | str | None = None
    name: str | None = None
    email: str | None = None


class SnapshotSummary(ApiModel):
    id: int
    name: str
    description: str | None
    created_at: Timestamp
    budget_view_id: int
    project_id: int
    created_by: UserRef | None


class SnapshotTotals(ApiModel):
    original_budget: MoneyNumber
    current_budget: MoneyNumber
    committed: MoneyNumber
    spent: MoneyNumber
    projected_total: MoneyNumber
    variance: MoneyNumber


class SnapshotLine(ApiModel):
    id: int
    code: str
    description: str | None
    original_budget: MoneyNumber
    current_budget: MoneyNumber
    committed: MoneyNumber
    spent: MoneyNumber
    projected_total: MoneyNumber
    variance: MoneyNumber


class SnapshotDetail(SnapshotSummary):
    line_items: list[SnapshotLine]
    totals: SnapshotTotals


class SnapshotList(ApiModel):
    data: list[SnapshotSummary]


class SnapshotResponse(ApiModel):
    data: SnapshotDetail


class Customer(ApiModel):
    id: int | str | None = None
    name: str | None = None
    contact_name: str | None = None
    contact_email: str | None = None
    contact_phone: str | None = None


class PaymentTerms(ApiModel):
    type: str | None = None
    payment_schedule: str | None = None
    retention_percentage: MoneyNumber | None = None
    days_until_due: int | None = None


class PrimeContractOut(ApiModel):
    id: int
    title: str
    description: str | None
    contract_number: str | None
    status: str
    contract_date: Timestamp | None
    start_date: Timestamp | None
    estimated_completion_date: Timestamp | None
    original_contract_value: MoneyNumber
    current_contract_value: MoneyNumber
    executed_change_orders_value: MoneyNumber
    pending_change_orders_value: MoneyNumber
    project_id: int
    customer: Customer | None
    payment_terms: PaymentTerms | None


class PrimeContractResponse(ApiModel):
    data: list[PrimeContractOut]


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
