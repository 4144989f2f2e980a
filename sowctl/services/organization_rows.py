"""Which rows of each table belong to one organization: what a sandbox's reset empties, its
checkpoints copy and its dataset loads may see (``services.sandboxes``).

Every record hangs off an organization, directly (a column) or through its parents; each
table's condition follows that path with subqueries on the parents' keys, so the database
picks the rows and none travels through Python.
"""

from __future__ import annotations

import peewee as pw

from sowctl.storage import models as m
from sowctl.storage import sandbox_models
from sowctl.storage import webhook_models as w


def _ids(model: type[m.BaseModel], key: pw.Field, organization_id: str) -> pw.SelectQuery:
    return model.select(key).where(rows_of(model, organization_id))


def rows_of(model: type[m.BaseModel], organization_id: str) -> pw.Expression:
    """The condition that selects ``model``'s rows of organization ``organization_id``."""
    org = organization_id
    direct = _DIRECT.get(model)
    if direct is not None:
        return direct == org
    if model is m.Contact:
        return m.Contact.client.in_(_ids(m.Client, m.Client.id, org))
    if model is m.Item:
        return m.Item.sow.in_(_ids(m.Sow, m.Sow.key, org))
    if model is m.Dependency:
        return m.Dependency.sow.in_(_ids(m.Sow, m.Sow.key, org))
    if model in (m.FinancialProject, m.Vendor, m.CostCode):
        return model.company.in_(_ids(m.Company, m.Company.id, org))
    if model in (m.Commitment, m.BudgetView, m.BudgetViewSnapshot, m.PrimeContract, m.PurchaseOrder):
        return model.financial_project.in_(_ids(m.FinancialProject, m.FinancialProject.id, org))
    if model is m.SnapshotLineItem:
        return m.SnapshotLineItem.snapshot.in_(_ids(m.BudgetViewSnapshot, m.BudgetViewSnapshot.id, org))
    if model is m.PurchaseOrderLine:
        return m.PurchaseOrderLine.purchase_order.in_(_ids(m.PurchaseOrder, m.PurchaseOrder.id, org))
    if model is m.RateCounter:
        return m.RateCounter.api_key.in_(_ids(m.ApiKey, m.ApiKey.id, org))
    if model in (w.WebhookDelivery, w.WebhookRedelivery):
        return model.subscription_id.in_(_ids(w.WebhookSubscription, w.WebhookSubscription.id, org))
    raise ValueError(f"no organization path for table {model._meta.table_name}")


_DIRECT: dict[type[m.BaseModel], pw.Field] = {
    m.Organization: m.Organization.id,
    m.User: m.User.organization,
    m.Client: m.Client.organization,
    m.Project: m.Project.organization,
    m.Sow: m.Sow.organization,
    m.Company: m.Company.organization,
    m.ApiToken: m.ApiToken.organization,
    m.ApiKey: m.ApiKey.organization,
    m.RequestLog: m.RequestLog.organization_id,
    m.Event: m.Event.organization_id,
    sandbox_models.Sandbox: sandbox_models.Sandbox.organization,
    w.WebhookSubscription: w.WebhookSubscription.organization_id,
}

# An organization's records, children before parents (the order rows can be deleted in):
# what a sandbox's reset empties and its checkpoints hold. Its credentials (tokens, keys and
# their users), its request log, its events and the organization itself are not records.
RECORD_TABLES: list[type[m.BaseModel]] = [
    m.PurchaseOrderLine,
    m.PurchaseOrder,
    m.PrimeContract,
    m.SnapshotLineItem,
    m.BudgetViewSnapshot,
    m.BudgetView,
    m.Commitment,
    m.CostCode,
    m.Vendor,
    m.FinancialProject,
    m.Company,
    m.Dependency,
    m.Item,
    m.Sow,
    m.Project,
    m.Contact,
    m.Client,
]
