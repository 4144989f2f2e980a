"""Dataset key -> database column, per kind: what import writes and export reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from operator import attrgetter
from typing import Any

import peewee as pw

from sowctl.schemas import dataset as s
from sowctl.storage import models as m

# --- columns: dataset key -> database column, per kind ----------------------------
#
# Import stores the record attribute behind each key in its column; export selects
# each column under its key. Nested parts (contacts, lines, vendor, cost_code) and
# derived columns (a dependency's SOW and ordering edge) are handled by hand.

_Columns = dict[str, pw.Field]
Progress = Callable[[int, int], None]  # (done, total), called as import or export goes

COLUMNS: dict[str, tuple[type[m.BaseModel], _Columns]] = {
    "organizations": (m.Organization, {"id": m.Organization.id, "name": m.Organization.name}),
    "users": (
        m.User,
        {"id": m.User.id, "organizationId": m.User.organization, "name": m.User.name, "email": m.User.email},
    ),
    "clients": (
        m.Client,
        {
            "id": m.Client.id,
            "organizationId": m.Client.organization,
            "name": m.Client.name,
            "description": m.Client.description,
            "website": m.Client.website,
            "industry": m.Client.industry,
            "isPinned": m.Client.is_pinned,
            "pinnedAt": m.Client.pinned_at,
            "createdAt": m.Client.created_at,
            "updatedAt": m.Client.updated_at,
        },
    ),
    "contacts": (
        m.Contact,
        {
            "id": m.Contact.id,
            "clientId": m.Contact.client,
            "name": m.Contact.name,
            "email": m.Contact.email,
            "phone": m.Contact.phone,
            "role": m.Contact.role,
            "isPrimary": m.Contact.is_primary,
            "createdAt": m.Contact.created_at,
            "updatedAt": m.Contact.updated_at,
        },
    ),
    "projects": (
        m.Project,
        {
            "id": m.Project.id,
            "organizationId": m.Project.organization,
            "name": m.Project.name,
            "description": m.Project.description,
            "status": m.Project.status,
            "clientId": m.Project.client,
            "contactId": m.Project.contact,
            "startDate": m.Project.start_date,
            "endDate": m.Project.end_date,
            "ownerUserId": m.Project.owner_user_id,
            "isPinned": m.Project.is_pinned,
            "pinnedAt": m.Project.pinned_at,
            "createdAt": m.Project.created_at,
            "updatedAt": m.Project.updated_at,
        },
    ),
    "sows": (
        m.Sow,
        {"id": m.Sow.id, "projectId": m.Sow.project, "title": m.Sow.title, "createdAt": m.Sow.created_at},
    ),
    "items": (
        m.Item,
        {
            "id": m.Item.id,
            "sowId": m.Item.sow,
            "title": m.Item.title,
            "description": m.Item.description,
            "type": m.Item.type,
            "parentItemId": m.Item.parent,
            "orderIndex": m.Item.order_index,
            "status": m.Item.status,
            "createdByUserId": m.Item.created_by_user_id,
            "createdAt": m.Item.created_at,
            "updatedAt": m.Item.updated_at,
        },
    ),
    "dependencies": (
        m.Dependency,
        {
            "id": m.Dependency.id,
            "sourceItemId": m.Dependency.source_item,
            "targetItemId": m.Dependency.target_item,
            "dependencyType": m.Dependency.dependency_type,
            "riskLevel": m.Dependency.risk_level,
            "status": m.Dependency.status,
            "isExternal": m.Dependency.is_external,
            "externalTarget": m.Dependency.external_target,
            "externalOwner": m.Dependency.external_owner,
            "contactEmail": m.Dependency.contact_email,
            "vendor": m.Dependency.vendor,
            "slaDate": m.Dependency.sla_date,
            "escalationDate": m.Dependency.escalation_date,
            "notes": m.Dependency.notes,
            "createdByUserId": m.Dependency.created_by_user_id,
            "createdAt": m.Dependency.created_at,
            "updatedAt": m.Dependency.updated_at,
        },
    ),
    "companies": (
        m.Company,
        {"id": m.Company.id, "organizationId": m.Company.organization, "name": m.Company.name},
    ),
    "financialProjects": (
        m.FinancialProject,
        {
            "id": m.FinancialProject.id,
            "companyId": m.FinancialProject.company,
            "name": m.FinancialProject.name,
            "projectId": m.FinancialProject.project,
        },
    ),
    "vendors": (m.Vendor, {"id": m.Vendor.id, "companyId": m.Vendor.company, "name": m.Vendor.name}),
    "costCodes": (
        m.CostCode,
        {
            "id": m.CostCode.id,
            "companyId": m.CostCode.company,
            "full_code": m.CostCode.full_code,
            "name": m.CostCode.name,
        },
    ),
    "commitments": (
        m.Commitment,
        {
            "id": m.Commitment.id,
            "project_id": m.Commitment.financial_project,
            "title": m.Commitment.title,
            "vendor_id": m.Commitment.vendor,
        },
    ),
    "budgetViews": (
        m.BudgetView,
        {
            "id": m.BudgetView.id,
            "project_id": m.BudgetView.financial_project,
            "name": m.BudgetView.name,
            "description": m.BudgetView.description,
            "created_at": m.BudgetView.created_at,
            "updated_at": m.BudgetView.updated_at,
        },
    ),
    "budgetViewSnapshots": (
        m.BudgetViewSnapshot,
        {
            "id": m.BudgetViewSnapshot.id,
            "budget_view_id": m.BudgetViewSnapshot.budget_view,
            "project_id": m.BudgetViewSnapshot.financial_project,
            "name": m.BudgetViewSnapshot.name,
            "description": m.BudgetViewSnapshot.description,
            "created_at": m.BudgetViewSnapshot.created_at,
            "created_by": m.BudgetViewSnapshot.created_by,
        },
    ),
    "snapshotLines": (
        m.SnapshotLineItem,
        {
            "id": m.SnapshotLineItem.id,
            "code": m.SnapshotLineItem.code,
            "description": m.SnapshotLineItem.description,
            "original_budget": m.SnapshotLineItem.original_budget,
            "current_budget": m.SnapshotLineItem.current_budget,
            "committed": m.SnapshotLineItem.committed,
            "spent": m.SnapshotLineItem.spent,
            "projected_total": m.SnapshotLineItem.projected_total,
            "variance": m.SnapshotLineItem.variance,
        },
    ),
    "primeContracts": (
        m.PrimeContract,
        {
            "id": m.PrimeContract.id,
            "project_id": m.PrimeContract.financial_project,
            "title": m.PrimeContract.title,
            "description": m.PrimeContract.description,
            "contract_number": m.PrimeContract.contract_number,
            "status": m.PrimeContract.status,
            "contract_date": m.PrimeContract.contract_date,
            "start_date": m.PrimeContract.start_date,
            "estimated_completion_date": m.PrimeContract.estimated_completion_date,
            "original_contract_value": m.PrimeContract.original_contract_value,
            "current_contract_value": m.PrimeContract.current_contract_value,
            "executed_change_orders_value": m.PrimeContract.executed_change_orders_value,
            "pending_change_orders_value": m.PrimeContract.pending_change_orders_value,
            "customer": m.PrimeContract.customer,
            "payment_terms": m.PrimeContract.payment_terms,
        },
    ),
    "purchaseOrders": (
        m.PurchaseOrder,
        {
            "id": m.PurchaseOrder.id,
            "number": m.PurchaseOrder.number,
            "status": m.PurchaseOrder.status,
            "title": m.PurchaseOrder.title,
            "original_amount": m.PurchaseOrder.original_amount,
            "revised_amount": m.PurchaseOrder.revised_amount,
            "total_amount": m.PurchaseOrder.total_amount,
            "project_id": m.PurchaseOrder.financial_project,
            "commitment_id": m.PurchaseOrder.commitment,
            "created_at": m.PurchaseOrder.created_at,
        },
    ),
    "purchaseOrderLines": (
        m.PurchaseOrderLine,
        {
            "id": m.PurchaseOrderLine.id,
            "description": m.PurchaseOrderLine.description,
            "amount": m.PurchaseOrderLine.amount,
            "quantity": m.PurchaseOrderLine.quantity,
            "unit_cost": m.PurchaseOrderLine.unit_cost,
        },
    ),
}
_RECORD_MODEL = {
    **s.RECORD_MODELS,
    "contacts": s.ContactRecord,
    "snapshotLines": s.SnapshotLineRecord,
    "purchaseOrderLines": s.PurchaseOrderLineRecord,
}


def _getter(kind: str) -> Callable[[Any], tuple]:
    """The record's values in COLUMNS order, as one C-level call per record."""
    attribute = {info.alias or name: name for name, info in _RECORD_MODEL[kind].model_fields.items()}
    names = [attribute[key] for key in COLUMNS[kind][1]]
    return attrgetter(*names)


def _stamp(records: Iterable[Any], moment: datetime, *names: str) -> None:
    """Timestamps missing from a record are set at import time."""
    for record in records:
        for name in names:
            if getattr(record, name) is None:
                setattr(record, name, moment)


def _getter_name(kind: str, key: str) -> str:
    model = _RECORD_MODEL[kind]
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return name
    raise KeyError(key)
