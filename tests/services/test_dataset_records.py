"""The dataset format holds every field the API answers: each dataset record is read off the
API's output model, so a field added to an output model is imported and exported without
another edit (``schemas.dataset.derived_record``)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from sowctl.schemas import budgets, contracts, purchase_orders
from sowctl.schemas import dataset as s
from sowctl.schemas.cli_output import OrganizationOut
from sowctl.schemas.clients import ClientOut, ContactOut
from sowctl.schemas.common import Timestamp
from sowctl.schemas.dependencies import DependencyOut
from sowctl.schemas.items import ItemOut
from sowctl.schemas.projects import ProjectOut
from sowctl.schemas.sows import SowOut
from sowctl.services.dataset import export_dataset, import_dataset
from sowctl.services.dataset.columns import COLUMNS
from sowctl.services.demo_data import demo_dataset

# What the API answers for each record a dataset holds (written out here, not read off the
# records, so a record declared by hand again would have to list every field to pass), and
# what it works out as it answers rather than stores: counts, a linked record's name, totals.
ANSWERED: dict[str, tuple[type[BaseModel], frozenset[str]]] = {
    "organizations": (OrganizationOut, frozenset()),
    "clients": (ClientOut, frozenset()),
    "contacts": (ContactOut, frozenset()),
    "projects": (ProjectOut, frozenset({"clientName", "sowCount"})),
    "sows": (SowOut, frozenset({"itemCount"})),
    "items": (ItemOut, frozenset()),
    "dependencies": (DependencyOut, frozenset()),
    "vendors": (purchase_orders.VendorRef, frozenset()),
    "costCodes": (purchase_orders.CostCodeRef, frozenset()),
    "commitments": (purchase_orders.CommitmentRef, frozenset()),
    "budgetViews": (budgets.BudgetViewOut, frozenset()),
    "budgetViewSnapshots": (budgets.SnapshotDetail, frozenset({"totals"})),
    "snapshotLines": (budgets.SnapshotLine, frozenset()),
    "primeContracts": (contracts.PrimeContractOut, frozenset()),
    "purchaseOrders": (purchase_orders.PurchaseOrderOut, frozenset()),
    "purchaseOrderLines": (purchase_orders.PurchaseOrderLineOut, frozenset()),
}
# Objects the API answers inside a record, and the dataset record that holds them there.
NESTED: dict[type[BaseModel], Any] = {
    contracts.Customer: s.PrimeContractRecord.model_fields["customer"],
    contracts.PaymentTerms: s.PrimeContractRecord.model_fields["payment_terms"],
    budgets.UserRef: s.BudgetViewSnapshotRecord.model_fields["created_by"],
    purchase_orders.VendorRef: s.PurchaseOrderRecord.model_fields["vendor"],
    purchase_orders.CostCodeRef: s.PurchaseOrderLineRecord.model_fields["cost_code"],
}


def _keys(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def _record_of(field: Any) -> type[BaseModel]:
    """The model a record field holds (``X | None`` -> X)."""
    kinds = [field.annotation, *getattr(field.annotation, "__args__", ())]
    return next(kind for kind in kinds if isinstance(kind, type) and issubclass(kind, BaseModel))


def test_every_kind_of_record_is_pinned_here() -> None:
    # A kind of record the API answers and this test does not know is a new one to list above.
    read_off = {kind for kind, record in s.STORED_RECORDS.items() if record.answered is not None}
    assert read_off == set(ANSWERED)
    assert {kind for kind in s.STORED_RECORDS if kind not in ANSWERED} == {
        "users",
        "companies",
        "financialProjects",
    }


@pytest.mark.parametrize("kind", sorted(ANSWERED))
def test_a_dataset_record_has_every_field_the_api_answers(kind: str) -> None:
    answered, computed = ANSWERED[kind]
    record = s.STORED_RECORDS[kind]
    assert computed <= _keys(answered)
    assert _keys(answered) - computed <= _keys(record)
    assert record.computed == {
        name for name, info in answered.model_fields.items() if (info.alias or name) in computed
    }


@pytest.mark.parametrize("answered", list(NESTED), ids=lambda model: model.__name__)
def test_an_object_answered_inside_a_record_has_every_field_in_the_dataset(answered: type[BaseModel]) -> None:
    record = _record_of(NESTED[answered])
    assert record.answered is answered
    assert _keys(answered) <= _keys(record)


@pytest.mark.parametrize("kind", sorted(set(ANSWERED) & set(COLUMNS)))
def test_every_answered_field_is_stored_and_exported(db: Any, kind: str) -> None:
    answered, computed = ANSWERED[kind]
    import_dataset(demo_dataset(datetime.date(2026, 3, 16)))
    exported = export_dataset()
    written = _exported_records(exported, kind)
    assert written, f"the demo dataset has no {kind}"
    missing = _keys(answered) - computed - set(written[0])
    assert not missing, f"{kind}: answered by the API, not exported: {sorted(missing)}"


def _exported_records(exported: dict[str, list[dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    inside = {"contacts": ("clients", "contacts"), "snapshotLines": ("budgetViewSnapshots", "line_items")}
    inside["purchaseOrderLines"] = ("purchaseOrders", "line_items")
    if kind in inside:
        outer, field = inside[kind]
        return [inner for record in exported[outer] for inner in record[field]]
    return exported[kind]


# --- a field added to an output model ----------------------------------------------------


class _ItemWithRisk(ItemOut):
    risk_note: str | None = None
    reviewed_at: Timestamp | None = None


def test_a_field_added_to_an_output_model_reaches_the_dataset_record() -> None:
    record = s.derived_record(
        "ItemWithRiskRecord",
        _ItemWithRisk,
        first=("id", "sow_id"),
        read={"id": s.PathId},
    )
    assert {"riskNote", "reviewedAt"} <= _keys(record)
    base = {"id": "i-1", "title": "T", "type": "requirement", "sowId": "s", "status": "pending"}
    base |= {"parentItemId": None, "orderIndex": 0}
    read = record.model_validate(
        {**base, "riskNote": "late vendor", "reviewedAt": "2026-03-16T09:30:00+01:00"}
    )
    assert read.risk_note == "late vendor"
    assert read.reviewed_at == datetime.datetime(2026, 3, 16, 8, 30)  # as every dataset timestamp: UTC
    assert record.model_validate(base).reviewed_at is None  # left out: the import time, as for createdAt
    # Of the type a dataset writes it in: strict, named when wrong.
    with pytest.raises(ValidationError) as refused:
        record.model_validate({**base, "riskNote": 7})
    assert [(error["loc"], error["type"]) for error in refused.value.errors()] == [
        (("riskNote",), "string_type")
    ]


def test_an_answered_type_the_dataset_has_no_form_for_is_refused_when_the_record_is_declared() -> None:
    class Tagged(ItemOut):
        tags: set[str] = set()

    with pytest.raises(TypeError, match="tags"):
        s.derived_record("TaggedRecord", Tagged)


def test_a_record_cannot_declare_a_field_the_api_does_not_answer() -> None:
    with pytest.raises(TypeError, match="statuss"):
        s.derived_record("Misspelt", ItemOut, read={"statuss": s.StrictStr})
