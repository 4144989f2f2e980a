"""Group B test data, built with the models directly (shared by the finance tests).

Two organizations; org-acme has two companies so that "a company of the right
organization, but not the project's" can be tested. Money values are chosen so
that float arithmetic would drift (0.10 + 0.20) and so that some variances are
stored and some computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sowctl.services import credentials
from sowctl.storage import models as m
from tests.support.templates import seeded

ORG = "org-acme"
COMPANY = "comp-acme-llc"
OTHER_COMPANY = "comp-acme-east"  # same organization, different company
GLOBEX_ORG = "org-globex"
GLOBEX_COMPANY = "comp-globex"
PROJECT = 101
CREATED = datetime(2026, 3, 1, 9, 30, 0)
UPDATED = datetime(2026, 3, 10, 17, 45, 5)


@dataclass
class FinanceData:
    key: str  # an API key of org-acme
    key_id: str
    globex_key: str
    globex_key_id: str


def _line(snapshot: int, line_id: int, position: int, code: str, *values: str, variance: str | None = None):
    original, current, committed, spent, projected = (Decimal(v) for v in values)
    m.SnapshotLineItem.create(
        snapshot=snapshot,
        id=line_id,
        position=position,
        code=code,
        description=f"{code} work",
        original_budget=original,
        current_budget=current,
        committed=committed,
        spent=spent,
        projected_total=projected,
        variance=None if variance is None else Decimal(variance),
    )


def build_finance() -> FinanceData:
    """Create the Group B records (the database must be open, empty) and two API keys; on
    SQLite a copy of the records made once per process (tests/support/templates.py)."""
    return seeded("finance", _build_finance)


def _build_finance() -> FinanceData:
    m.Organization.create(id=ORG, name="Acme Build")
    m.Organization.create(id=GLOBEX_ORG, name="Globex")
    m.Company.create(id=COMPANY, organization=ORG, name="Acme Build LLC")
    m.Company.create(id=OTHER_COMPANY, organization=ORG, name="Acme East")
    m.Company.create(id=GLOBEX_COMPANY, organization=GLOBEX_ORG, name="Globex Inc")
    for pid, company, name in [
        (PROJECT, COMPANY, "Tower A"),
        (102, COMPANY, "Clinic"),
        (103, OTHER_COMPANY, "East Depot"),
        (201, GLOBEX_COMPANY, "DC Retrofit"),
    ]:
        m.FinancialProject.create(id=pid, company=company, name=name)
    for vid, company, name in [
        (7, COMPANY, "Keystone Steel"),
        (8, COMPANY, "Skyline Glazing"),
        (9, OTHER_COMPANY, "East Concrete"),
        (20, GLOBEX_COMPANY, "Metro Electrical"),
    ]:
        m.Vendor.create(id=vid, company=company, name=name)
    for cid, company, code, name in [
        (3, COMPANY, "05-120", "Structural Steel"),
        (4, COMPANY, "08-440", "Curtain Wall"),
        (5, OTHER_COMPANY, "03-300", "Concrete"),
        (30, GLOBEX_COMPANY, "26-320", "Generators"),
    ]:
        m.CostCode.create(id=cid, company=company, full_code=code, name=name)
    for commitment, pid, vendor in [("5001", PROJECT, 7), ("5002", 102, 8), ("6001", 201, 20)]:
        m.Commitment.create(
            id=commitment, financial_project=pid, title=f"Package {commitment}", vendor=vendor
        )

    for vid, pid, name in [(11, PROJECT, "Original vs. Current"), (12, PROJECT, "Forecast"), (14, 201, "GX")]:
        m.BudgetView.create(
            id=vid,
            financial_project=pid,
            name=name,
            description=f"{name} view" if vid != 12 else None,
            created_at=CREATED,
            updated_at=UPDATED,
        )
    ada = {"id": 1, "name": "Ada Lovelace", "email": "ada@acme.example"}
    m.BudgetViewSnapshot.create(
        id=21,
        budget_view=11,
        financial_project=PROJECT,
        name="Month end",
        description="At month end",
        created_at=CREATED,
        created_by=ada,
    )
    # Variance stored on the first line, computed on the others; 0.10 + 0.20 must total 0.30.
    _line(21, 1, 0, "01-500", "0.10", "0.10", "0.10", "0.10", "0.30", variance="-0.20")
    _line(21, 2, 1, "03-300", "0.20", "0.20", "0.20", "0.20", "0.10")
    _line(21, 3, 2, "05-120", "1000000.00", "1200000.50", "900000.25", "300000.75", "1250000.60")
    m.BudgetViewSnapshot.create(
        id=22,
        budget_view=12,
        financial_project=PROJECT,
        name="Empty forecast",
        description=None,
        created_at=UPDATED,
        created_by=None,
    )
    m.BudgetViewSnapshot.create(
        id=24,
        budget_view=14,
        financial_project=201,
        name="GX kick-off",
        description="",
        created_at=CREATED,
        created_by={"id": 2, "name": "Hank", "email": "hank@globex.example"},
    )
    _line(24, 1, 0, "26-320", "10.00", "10.00", "0.00", "0.00", "12.00")

    m.PrimeContract.create(
        id=31,
        financial_project=PROJECT,
        title="Tower A Prime Contract",
        description="Design-bid-build",
        contract_number="PC-2024-031",
        status="Active",
        contract_date=datetime(2025, 11, 1),
        start_date=datetime(2025, 11, 16),
        estimated_completion_date=datetime(2027, 5, 10),
        original_contract_value=Decimal("12450000.00"),
        current_contract_value=Decimal("12762450.75"),
        executed_change_orders_value=Decimal("312450.75"),
        pending_change_orders_value=Decimal("84300.10"),
        customer={
            "id": 501,
            "name": "Northwind Properties",
            "contact_name": "Maria Chen",
            "contact_email": "maria@northwind.example",
            "contact_phone": "+1-555-0101",
        },
        payment_terms={
            "type": "Progress Billing",
            "payment_schedule": "Monthly",
            "retention_percentage": 10.0,
            "days_until_due": 30,
        },
    )
    m.PrimeContract.create(id=41, financial_project=201, title="GX contract", status="Active")

    acme = credentials.create_key(ORG)
    globex = credentials.create_key(GLOBEX_ORG)
    return FinanceData(acme.secret, acme.id, globex.secret, globex.id)


def po_body(**changes) -> dict:
    """A valid purchase-order request for project 101; ``changes`` replace fields."""
    body = {
        "project_id": str(PROJECT),
        "commitment_id": "5001",
        "title": "Upper tier steel",
        "vendor_id": 7,
        "status": "draft",
        "line_items": [
            {"description": "Columns", "amount": "0.10", "cost_code_id": 3},
            {
                "description": "Plates",
                "amount": "0.20",
                "cost_code_id": 4,
                "quantity": 2,
                "unit_cost": "0.10",
            },
        ],
    }
    body.update(changes)
    return body


# `sowctl po create` with the options every test of it needs (its lines are added per test).
CREATE = ["po", "create", "--project", "101", "--commitment", "5001", "--title", "Steel", "--vendor", "7"]
