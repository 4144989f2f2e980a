"""Group B's prime contracts: a contract of a project, its customer and payment terms,
amounts as JSON numbers with the decimal's exact digits (``MoneyNumber``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, get_args

from pydantic import BaseModel

from sowctl.schemas.common import ApiOut, Field, Timestamp
from sowctl.schemas.external import MoneyNumber, ProjectQuery, QueryId

# --- requests ---------------------------------------------------------------------


class PrimeContractQuery(ProjectQuery):
    prime_contract_id: QueryId = Field(description="Prime contract id.")


# --- responses --------------------------------------------------------------------


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
