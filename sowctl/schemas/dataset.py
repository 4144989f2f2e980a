"""Records of the dataset format, as ``sowctl import`` validates them and ``sowctl export``
writes them.

The API's output model is the declaration: a record that is an API object is read off it
(``derived_record``): every field the API answers, under the API's name and of the type a dataset
writes it in (``schemas.dataset_values``), and only the fields a dataset has besides (the
owning organization, the ids of the records it belongs to, the request fields a dataset may
set). So a field added to an output model reaches the dataset format, the column map
(``services.dataset.columns``) and the export without another edit. A record states only
where the dataset's rule differs from the API's answer: the id a client chooses, a default
the API would set when the record is made, the bound of a list.

Field names are the API's own: camelCase for the Group A/C records (and for the
``companyId``/``projectId`` links of the Group B master data, as a dataset file writes them),
snake_case for the Group B records. An unknown key is an error naming the record and
the field: a misspelt ``parentItemID`` or ``staus`` would otherwise be dropped silently
(API request bodies, unlike datasets, tolerate unknown fields).

Lists are validated per kind with a ``TypeAdapter`` (see ``ADAPTERS``), which runs
in pydantic's Rust core; the few Python validators are tiny.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model

from sowctl.foundation.budgets import MAX_CONTACTS, MAX_LINE_ITEMS, MAX_SNAPSHOT_LINES
from sowctl.schemas import budgets, contracts, purchase_orders
from sowctl.schemas.cli_output import OrganizationOut
from sowctl.schemas.clients import ClientOut, ContactOut
from sowctl.schemas.common import (
    ApiModel,
    CamelModel,
    Field,
    NonEmptyStr,
    PathId,
    StrictBool,
    StrictInt,
    StrictStr,
    bounded_list,
)
from sowctl.schemas.dataset_values import (
    DecimalString,
    FieldDefinition,
    IntId,
    JsonNumber,
    Number,
    RecordId,
    ShortText,
    TimestampIn,
    UuidId,
    dataset_type,
)
from sowctl.schemas.dependencies import DependencyOut, Email
from sowctl.schemas.external import MoneyIn
from sowctl.schemas.items import ItemOut
from sowctl.schemas.projects import ProjectOut
from sowctl.schemas.sows import SowOut
from sowctl.schemas.vocabulary import (
    MAX_ORDER_INDEX,
    DependencyStatus,
    ItemStatus,
    ProjectStatus,
    PurchaseOrderStatus,
)


class _CamelRecord(CamelModel):
    model_config = ConfigDict(extra="forbid")

    # The API's output model a record is read off, and its fields the dataset does not hold.
    answered: ClassVar[type[BaseModel] | None] = None
    computed: ClassVar[frozenset[str]] = frozenset()


class _ApiRecord(ApiModel):
    model_config = ConfigDict(extra="forbid")

    answered: ClassVar[type[BaseModel] | None] = None
    computed: ClassVar[frozenset[str]] = frozenset()


# The dataset record of each object the API answers within another (a contract's customer).
_NESTED: dict[type, Any] = {}


def derived_record(
    name: str,
    answered: type[BaseModel],
    *,
    read: dict[str, Any] | None = None,
    adds: dict[str, Any] | None = None,
    computed: tuple[str, ...] = (),
    first: tuple[str, ...] = (),
    last: tuple[str, ...] = (),
    doc: str | None = None,
    nested: bool = False,
) -> Any:
    """The dataset record ``name`` of ``answered``, an API output model (typed Any: its fields
    are made here, at run time).

    Every answered field, of its ``dataset_type`` or as ``read`` says (the fields whose dataset
    rule differs: a type, or (type, default)), except ``computed`` (what the API works out as it
    answers: a count, a linked record's name); then ``adds``, the fields only a dataset has. Keys
    in this order: ``first``, the answered fields in the API's order, the added ones, ``last``
    (the order export writes and import reports problems in). ``nested``: this is the record
    of ``answered`` wherever the API answers it within another record.
    """
    read, adds = read or {}, adds or {}
    names = [field for field in answered.model_fields if field not in computed]
    placed = (*first, *last)
    misnamed = (
        (set(read) - set(names))
        | (set(computed) - set(answered.model_fields))
        | (set(adds) & set(answered.model_fields))
        | (set(placed) - set(names) - set(adds))
    )
    if misnamed:
        raise TypeError(f"{answered.__name__} has no field {sorted(misnamed)} to read as declared")
    fields: dict[str, FieldDefinition] = {}
    for field in (*first, *(field for field in (*names, *adds) if field not in placed), *last):
        if field in adds or field in read:
            definition = adds[field] if field in adds else read[field]
            fields[field] = definition if isinstance(definition, tuple) else (definition, ...)
        else:
            info = answered.model_fields[field]
            hint = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
            fields[field] = dataset_type(field, hint, _NESTED)
    base = _CamelRecord if issubclass(answered, CamelModel) else _ApiRecord
    model: Any = create_model(name, __base__=base, __doc__=doc, __module__=__name__, **fields)  # type: ignore[call-overload]
    model.answered, model.computed = answered, frozenset(computed)
    if nested:
        _NESTED[answered] = model
    return model


# --- Group A/C ------------------------------------------------------------------

OrganizationRecord = derived_record("OrganizationRecord", OrganizationOut)


class UserRecord(_CamelRecord):
    """A user: no API object (the users are the service's; a dataset brings them)."""

    id: RecordId
    organization_id: RecordId
    name: StrictStr = ""
    email: StrictStr | None = None


ContactRecord = derived_record(
    "ContactRecord",
    ContactOut,
    read={
        # Optional: the enclosing client is the contact's client; when given it must agree.
        "client_id": (UuidId | None, None),
        "is_primary": (StrictBool, False),
    },
)


# Nested lists, counted before their records are validated (a dataset may bring no more than
# the API would answer, or make: an order of at most MAX_LINE_ITEMS lines).
Contacts = bounded_list(ContactRecord, MAX_CONTACTS, "contact")

ClientRecord = derived_record(
    "ClientRecord",
    ClientOut,
    first=("id", "organization_id"),
    read={"is_pinned": (StrictBool, False), "contacts": (Contacts, Field(default_factory=list))},
)

ProjectRecord = derived_record(
    "ProjectRecord",
    ProjectOut,
    first=("id", "organization_id"),
    computed=("client_name", "sow_count"),
    read={
        "status": (ProjectStatus, "active"),
        # A free string, as in the API: not checked against the users (like createdByUserId).
        "owner_user_id": (ShortText | None, None),
        "is_pinned": (StrictBool, False),
    },
)

SowRecord = derived_record(
    "SowRecord", SowOut, computed=("item_count",), read={"id": PathId, "title": (StrictStr, "")}
)

ItemRecord = derived_record(
    "ItemRecord",
    ItemOut,
    first=("id", "sow_id", "organization_id"),
    last=("created_by_user_id", "created_at", "updated_at"),
    read={
        "id": PathId,
        "title": NonEmptyStr,
        # Absent: one more than the largest among its siblings (file and database), as the API does.
        "order_index": (Annotated[StrictInt, Field(ge=0, le=MAX_ORDER_INDEX)] | None, None),
        "status": (ItemStatus, "pending"),
        "created_by_user_id": (ShortText | None, None),
    },
    # The organization of the item's SOW: needed only where several organizations have a SOW
    # of that id (export writes it there, and only there).
    adds={"organization_id": (RecordId | None, None)},
)

DependencyRecord = derived_record(
    "DependencyRecord",
    DependencyOut,
    last=("created_by_user_id", "created_at", "updated_at"),
    read={
        "id": PathId,
        "status": (DependencyStatus, "active"),
        # Absent: external when only externalTarget is given, as the API decides.
        "is_external": (StrictBool | None, None),
        "contact_email": (Email | None, None),  # as the API checks it
        "created_by_user_id": (ShortText | None, None),
    },
)


# --- Group B --------------------------------------------------------------------


class CompanyRecord(_CamelRecord):
    """A company: no API object (a financial project's owner, as the service keeps it)."""

    id: RecordId
    organization_id: RecordId
    name: StrictStr


class FinancialProjectRecord(_ApiRecord):
    """A financial project: no API object (the ``project_id`` of the Group B answers)."""

    id: IntId
    company_id: RecordId = Field(alias="companyId")
    name: StrictStr = ""
    project_id: RecordId | None = Field(default=None, alias="projectId")


_COMPANY = {"company_id": (RecordId, Field(alias="companyId"))}

VendorRecord = derived_record(
    "VendorRecord", purchase_orders.VendorRef, first=("id", "company_id"), adds=_COMPANY
)

CostCodeRecord = derived_record(
    "CostCodeRecord",
    purchase_orders.CostCodeRef,
    first=("id", "company_id"),
    adds=_COMPANY,
    read={"name": (StrictStr, "")},
)

CommitmentRecord = derived_record(
    "CommitmentRecord",
    purchase_orders.CommitmentRef,
    first=("id", "project_id"),
    adds={"project_id": IntId},
    read={"title": (StrictStr, "")},
)

BudgetViewRecord = derived_record("BudgetViewRecord", budgets.BudgetViewOut, first=("id", "project_id"))

SnapshotAuthor = derived_record(
    "SnapshotAuthor", budgets.UserRef, read={"id": StrictInt, "name": (StrictStr, "")}, nested=True
)

SnapshotLineRecord = derived_record(
    "SnapshotLineRecord",
    budgets.SnapshotLine,
    read={
        "code": (StrictStr, ""),
        # Absent or null: the API computes current_budget - projected_total.
        "variance": (Number | None, None),
    },
    doc="A line of a snapshot; line ids repeat across snapshots in real data, and are kept as given.",
)

SnapshotLines = bounded_list(SnapshotLineRecord, MAX_SNAPSHOT_LINES, "line item")

BudgetViewSnapshotRecord = derived_record(
    "BudgetViewSnapshotRecord",
    budgets.SnapshotDetail,
    first=("id", "budget_view_id", "project_id"),
    computed=("totals",),
    read={"line_items": (SnapshotLines, Field(default_factory=list))},
)

CustomerRecord = derived_record(
    "CustomerRecord",
    contracts.Customer,
    read={"id": StrictInt, "name": StrictStr},
    doc="The API's customer of a prime contract, as a dataset holds it: its id and name required,"
    " its nulls kept (stored as written).",
    nested=True,
)

PaymentTermsRecord = derived_record(
    "PaymentTermsRecord",
    contracts.PaymentTerms,
    read={"retention_percentage": (JsonNumber | None, None)},  # kept as written, not a Decimal
    doc="The API's payment terms, as a dataset holds them: nulls kept, the retention percentage"
    " the JSON number written (stored as such).",
    nested=True,
)


# What every prime contract has is required: an import invents no title, status or amount.
PrimeContractRecord = derived_record(
    "PrimeContractRecord", contracts.PrimeContractOut, first=("id", "project_id")
)

_ABSENT = (StrictStr | None, None)  # the referenced record's (ignored here)

VendorRef = derived_record(
    "VendorRef",
    purchase_orders.VendorRef,
    read={"name": _ABSENT},
    doc="``vendor`` of a purchase order; its name is the vendor record's (ignored here).",
    nested=True,
)

CostCodeRef = derived_record(
    "CostCodeRef",
    purchase_orders.CostCodeRef,
    read={"full_code": _ABSENT, "name": _ABSENT},
    doc="``cost_code`` of a line; full_code and name come from the cost code record.",
    nested=True,
)


PurchaseOrderLineRecord = derived_record(
    "PurchaseOrderLineRecord",
    purchase_orders.PurchaseOrderLineOut,
    read={
        "id": (IntId | None, None),  # absent: numbered after the largest line id in file and database
        "amount": MoneyIn,  # as the API takes it: not negative, at most 4 fraction digits
    },
    # The request's fields: a dataset may set what a new purchase order's line has.
    adds={"quantity": (Number | None, None), "unit_cost": (MoneyIn | None, None)},
)

PurchaseOrderLines = bounded_list(PurchaseOrderLineRecord, MAX_LINE_ITEMS, "line item")
_AMOUNT = (DecimalString | None, None)  # absent: the sum of the line amounts, as for a new purchase order

PurchaseOrderRecord = derived_record(
    "PurchaseOrderRecord",
    purchase_orders.PurchaseOrderOut,
    first=("id", "project_id", "commitment_id"),
    adds={
        "project_id": IntId,
        "commitment_id": (RecordId | None, None),
        "created_at": (TimestampIn | None, None),
    },
    read={
        "number": RecordId,
        "status": PurchaseOrderStatus,  # what the API takes: a file cannot hold what it would refuse
        "original_amount": _AMOUNT,
        "revised_amount": _AMOUNT,
        "total_amount": _AMOUNT,
        "line_items": (PurchaseOrderLines, Field(default_factory=list)),
    },
)


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
# Every record a dataset holds, with those held inside another kind's records (each stored in
# a table of its own).
STORED_RECORDS: dict[str, Any] = {
    **RECORD_MODELS,
    "contacts": ContactRecord,
    "snapshotLines": SnapshotLineRecord,
    "purchaseOrderLines": PurchaseOrderLineRecord,
}

ADAPTERS: dict[str, TypeAdapter] = {
    kind: TypeAdapter(list[model])  # type: ignore[valid-type]  # a list type made at run time
    for kind, model in RECORD_MODELS.items()
}
