"""Records of the dataset format, as ``sowctl import`` validates them.

Field names are the API's own: camelCase for the Group A/C records (and for the
``companyId``/``projectId`` links of the Group B master data, as a dataset file writes them),
snake_case for the Group B records. An unknown key is an error naming the record and
the field: a misspelt ``parentItemID`` or ``staus`` would otherwise be dropped silently
(API request bodies, unlike datasets, tolerate unknown fields).

Types are strict: a string where a number belongs, an unknown enum value or a
malformed timestamp is an error that names the record and the field. Timestamps
accept any ISO 8601 form (``Z``, an offset, or none meaning UTC) and are kept as
naive UTC to the second, the storage convention. A timestamp left out is None
here; the importer sets it to the import time.

Lists are validated per kind with a ``TypeAdapter`` (see ``ADAPTERS``), which runs
in pydantic's Rust core; the few Python validators are tiny.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, ConfigDict, PlainValidator, TypeAdapter

from sowctl.foundation.budgets import MAX_CONTACTS, MAX_LINE_ITEMS, MAX_SNAPSHOT_LINES
from sowctl.foundation.clock import parse_timestamp
from sowctl.schemas import finance
from sowctl.schemas.common import (
    ApiModel,
    CamelModel,
    DateStr,
    Field,
    NonEmptyStr,
    PathId,
    StrictBool,
    StrictInt,
    StrictStr,
    bounded_list,
)
from sowctl.schemas.dependencies import Email
from sowctl.schemas.finance import MoneyIn
from sowctl.schemas.vocabulary import (
    MAX_BIGINT,
    MAX_ORDER_INDEX,
    DependencyStatus,
    DependencyType,
    ItemStatus,
    ItemType,
    ProjectStatus,
    PurchaseOrderStatus,
    RiskLevel,
)

_DECIMAL_RE = re.compile(r"^-?\d+(\.\d+)?\Z", re.ASCII)  # as sowctl.foundation.money reads them


def _timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        return parse_timestamp(value.isoformat())
    if not isinstance(value, str):
        raise ValueError("must be a timestamp string (YYYY-MM-DDThh:mm:ssZ)")
    try:
        if len(value) == 20 and value[19] == "Z" and value[10] == "T":
            return datetime.fromisoformat(value[:19])  # the contract's shape: already UTC, whole seconds
        return parse_timestamp(value)
    except ValueError:
        raise ValueError("must be a timestamp in the form YYYY-MM-DDThh:mm:ssZ") from None


def _decimal_string(value: Any) -> Decimal:
    if not isinstance(value, str) or not _DECIMAL_RE.match(value):
        raise ValueError('must be a decimal string such as "1250.00"')
    return Decimal(value)


def _number(value: Any) -> Decimal:
    """A JSON number (or a decimal string) as an exact Decimal; floats by their repr."""
    if isinstance(value, bool):
        raise ValueError("must be a number")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return Decimal(repr(value))
    if isinstance(value, str) and _DECIMAL_RE.match(value):
        return Decimal(value)
    raise ValueError("must be a number")


def _json_number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    return value


# Plain validators replace pydantic's own parsing: one small Python call per value.
TimestampIn = Annotated[datetime, PlainValidator(_timestamp)]
DecimalString = Annotated[Decimal, PlainValidator(_decimal_string)]
Number = Annotated[Decimal, PlainValidator(_number)]
JsonNumber = Annotated[int | float, PlainValidator(_json_number)]  # kept as written (inside JSON columns)
RecordId = Annotated[StrictStr, Field(min_length=1, max_length=64)]  # header values: any text
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def _uuid(value: str) -> str:
    if not _UUID_RE.match(value):
        raise ValueError("must be a uuid, such as 3f2b8c1e-7d4a-4e5b-9c6f-0a1b2c3d4e5f")
    return value


# Projects, clients and contacts are identified by uuids in the service (spec 2.8, 2.9),
# and clients generated from its description parse them as such.
UuidId = Annotated[StrictStr, AfterValidator(_uuid)]
IntId = Annotated[StrictInt, Field(ge=0, le=MAX_BIGINT)]
ShortText = Annotated[StrictStr, Field(max_length=64)]


class _CamelRecord(CamelModel):
    model_config = ConfigDict(extra="forbid")


class _ApiRecord(ApiModel):
    model_config = ConfigDict(extra="forbid")


# --- Group A/C ------------------------------------------------------------------


class OrganizationRecord(_CamelRecord):
    id: RecordId
    name: StrictStr


class UserRecord(_CamelRecord):
    id: RecordId
    organization_id: RecordId
    name: StrictStr = ""
    email: StrictStr | None = None


class ContactRecord(_CamelRecord):
    id: UuidId
    # Optional: the enclosing client is the contact's client; when given it must agree.
    client_id: UuidId | None = None
    name: StrictStr
    email: StrictStr | None = None
    phone: StrictStr | None = None
    role: StrictStr | None = None
    is_primary: StrictBool = False
    created_at: TimestampIn | None = None
    updated_at: TimestampIn | None = None


# Nested lists, counted before their records are validated (a dataset may bring no more than
# the API would answer, or make: an order of at most MAX_LINE_ITEMS lines).
if TYPE_CHECKING:  # what the validators built below accept, for the type checker
    Contacts = list[ContactRecord]
else:
    Contacts = bounded_list(ContactRecord, MAX_CONTACTS, "contact")


class ClientRecord(_CamelRecord):
    id: UuidId
    organization_id: RecordId
    name: StrictStr
    description: StrictStr | None = None
    website: StrictStr | None = None
    industry: StrictStr | None = None
    is_pinned: StrictBool = False
    pinned_at: TimestampIn | None = None
    contacts: Contacts = Field(default_factory=list)
    created_at: TimestampIn | None = None
    updated_at: TimestampIn | None = None


class ProjectRecord(_CamelRecord):
    id: UuidId
    organization_id: RecordId
    name: StrictStr
    description: StrictStr | None = None
    status: ProjectStatus = "active"
    client_id: UuidId | None = None
    contact_id: UuidId | None = None
    start_date: TimestampIn | None = None
    end_date: TimestampIn | None = None
    # A free string, as in the API: not checked against the users (like createdByUserId).
    owner_user_id: ShortText | None = None
    is_pinned: StrictBool = False
    pinned_at: TimestampIn | None = None
    created_at: TimestampIn | None = None
    updated_at: TimestampIn | None = None


class SowRecord(_CamelRecord):
    id: PathId
    project_id: RecordId
    title: StrictStr = ""
    created_at: TimestampIn | None = None


class ItemRecord(_CamelRecord):
    id: PathId
    sow_id: RecordId
    # The organization of the item's SOW: needed only where several organizations have a SOW
    # of that id (export writes it there, and only there).
    organization_id: RecordId | None = None
    title: NonEmptyStr
    description: StrictStr | None = None
    type: ItemType
    parent_item_id: RecordId | None = None
    # Absent: one more than the largest among its siblings (file and database), as the API does.
    order_index: Annotated[StrictInt, Field(ge=0, le=MAX_ORDER_INDEX)] | None = None
    status: ItemStatus = "pending"
    created_by_user_id: ShortText | None = None
    created_at: TimestampIn | None = None
    updated_at: TimestampIn | None = None


class DependencyRecord(_CamelRecord):
    id: PathId
    source_item_id: RecordId
    target_item_id: RecordId | None = None
    dependency_type: DependencyType
    risk_level: RiskLevel
    status: DependencyStatus = "active"
    # Absent: external when only externalTarget is given, as the API decides.
    is_external: StrictBool | None = None
    external_target: StrictStr | None = None
    external_owner: StrictStr | None = None
    contact_email: Email | None = None  # as the API checks it
    vendor: StrictStr | None = None
    sla_date: DateStr | None = None
    escalation_date: DateStr | None = None
    notes: StrictStr | None = None
    created_by_user_id: ShortText | None = None
    created_at: TimestampIn | None = None
    # None stays None: a dependency that was never updated has no updatedAt.
    updated_at: TimestampIn | None = None


# --- Group B --------------------------------------------------------------------


class CompanyRecord(_CamelRecord):
    id: RecordId
    organization_id: RecordId
    name: StrictStr


class FinancialProjectRecord(_ApiRecord):
    id: IntId
    company_id: RecordId = Field(alias="companyId")
    name: StrictStr = ""
    project_id: RecordId | None = Field(default=None, alias="projectId")


class VendorRecord(_ApiRecord):
    id: IntId
    company_id: RecordId = Field(alias="companyId")
    name: StrictStr


class CostCodeRecord(_ApiRecord):
    id: IntId
    company_id: RecordId = Field(alias="companyId")
    full_code: StrictStr
    name: StrictStr = ""


class CommitmentRecord(_ApiRecord):
    id: RecordId
    project_id: IntId
    title: StrictStr = ""
    vendor_id: IntId | None = None


class BudgetViewRecord(_ApiRecord):
    id: IntId
    project_id: IntId
    name: StrictStr
    description: StrictStr | None = None
    created_at: TimestampIn | None = None
    updated_at: TimestampIn | None = None


class SnapshotAuthor(_ApiRecord):
    id: StrictInt
    name: StrictStr = ""
    email: StrictStr | None = None


class SnapshotLineRecord(_ApiRecord):
    # Line ids repeat across snapshots in real data; they are kept as given.
    id: IntId
    code: StrictStr = ""
    description: StrictStr | None = None
    original_budget: Number
    current_budget: Number
    committed: Number
    spent: Number
    projected_total: Number
    # Absent or null: the API computes current_budget - projected_total.
    variance: Number | None = None


if TYPE_CHECKING:  # what the validators built below accept, for the type checker
    SnapshotLines = list[SnapshotLineRecord]
else:
    SnapshotLines = bounded_list(SnapshotLineRecord, MAX_SNAPSHOT_LINES, "line item")


class BudgetViewSnapshotRecord(_ApiRecord):
    id: IntId
    budget_view_id: IntId
    project_id: IntId
    name: StrictStr
    description: StrictStr | None = None
    created_at: TimestampIn | None = None
    created_by: SnapshotAuthor | None = None
    line_items: SnapshotLines = Field(default_factory=list)


class Customer(finance.Customer):
    """The API's customer of a prime contract, as a dataset holds it: strict, no unknown key,
    its id and name required, its nulls kept (stored as written)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    wire_nulls = frozenset(finance.Customer.model_fields)

    id: StrictInt
    name: StrictStr


class PaymentTerms(finance.PaymentTerms):
    """The API's payment terms, as a dataset holds them: strict, no unknown key, nulls kept,
    the retention percentage the JSON number written (stored as such)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    wire_nulls = frozenset(finance.PaymentTerms.model_fields)

    retention_percentage: JsonNumber | None = None  # type: ignore[assignment]  # kept as written, not a Decimal


class PrimeContractRecord(_ApiRecord):
    id: IntId
    project_id: IntId
    # What every prime contract has, required: an import invents no title, status or amount.
    title: StrictStr
    description: StrictStr | None = None
    contract_number: StrictStr | None = None
    status: StrictStr
    contract_date: TimestampIn | None = None
    start_date: TimestampIn | None = None
    estimated_completion_date: TimestampIn | None = None
    original_contract_value: Number
    current_contract_value: Number
    executed_change_orders_value: Number
    pending_change_orders_value: Number
    customer: Customer | None = None
    payment_terms: PaymentTerms | None = None


class VendorRef(_ApiRecord):
    """``vendor`` of a purchase order; its name is the vendor record's (ignored here)."""

    id: IntId
    name: StrictStr | None = None


class CostCodeRef(_ApiRecord):
    """``cost_code`` of a line; full_code and name come from the cost code record."""

    id: IntId
    full_code: StrictStr | None = None
    name: StrictStr | None = None


class PurchaseOrderLineRecord(_ApiRecord):
    id: IntId | None = None  # absent: numbered after the largest line id in file and database
    description: StrictStr
    amount: MoneyIn  # as the API takes it: not negative, at most 4 fraction digits
    cost_code: CostCodeRef
    quantity: Number | None = None
    unit_cost: MoneyIn | None = None


if TYPE_CHECKING:  # what the validators built below accept, for the type checker
    PurchaseOrderLines = list[PurchaseOrderLineRecord]
else:
    PurchaseOrderLines = bounded_list(PurchaseOrderLineRecord, MAX_LINE_ITEMS, "line item")


class PurchaseOrderRecord(_ApiRecord):
    id: IntId
    project_id: IntId
    commitment_id: RecordId | None = None
    number: RecordId
    status: PurchaseOrderStatus  # what the API takes: a file cannot hold what it would refuse
    title: StrictStr
    vendor: VendorRef
    # Absent: the sum of the line amounts, as for a new purchase order.
    original_amount: DecimalString | None = None
    revised_amount: DecimalString | None = None
    total_amount: DecimalString | None = None
    line_items: PurchaseOrderLines = Field(default_factory=list)
    created_at: TimestampIn | None = None


# Top-level keys of a dataset, in dependency order (a kind refers only to earlier ones).
RECORD_MODELS: dict[str, type[CamelModel] | type[ApiModel]] = {
    "organizations": OrganizationRecord,
    "users": UserRecord,
    "clients": ClientRecord,
    "projects": ProjectRecord,
    "sows": SowRecord,
    "items": ItemRecord,
    "dependencies": DependencyRecord,
    "companies": CompanyRecord,
    "financialProjects": FinancialProjectRecord,
    "vendors": VendorRecord,
    "costCodes": CostCodeRecord,
    "commitments": CommitmentRecord,
    "budgetViews": BudgetViewRecord,
    "budgetViewSnapshots": BudgetViewSnapshotRecord,
    "primeContracts": PrimeContractRecord,
    "purchaseOrders": PurchaseOrderRecord,
}
KINDS: tuple[str, ...] = tuple(RECORD_MODELS)

ADAPTERS: dict[str, TypeAdapter] = {
    kind: TypeAdapter(list[model])  # type: ignore[valid-type]  # a list type made at run time
    for kind, model in RECORD_MODELS.items()
}
