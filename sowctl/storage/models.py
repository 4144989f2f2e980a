"""Peewee models: the whole data model of the dataset format.

Models bind to ``database_proxy``; ``sowctl.storage.database.open_database`` initialises it.
Column names are snake_case; the API's camelCase names live in the schemas.
Money is stored as canonical decimal text so that no backend rounds it.
Each foreign key ``x`` has its raw column ``x_id`` beside it (peewee adds that accessor);
the annotations under each key say so to the type checker.
"""

from __future__ import annotations

from decimal import Decimal

import peewee as pw

database_proxy = pw.DatabaseProxy()


class MoneyField(pw.TextField):
    """Exact decimal stored as text: SQLite's NUMERIC affinity would turn it into a float."""

    def db_value(self, value: Decimal | str | None) -> str | None:
        if value is None:
            return None
        return str(Decimal(value))

    def python_value(self, value: str | None) -> Decimal | None:
        return None if value is None else Decimal(value)


def _count() -> pw.IntegerField:
    """A count that starts at 0, also for rows inserted without it (a dataset import's)."""
    return pw.IntegerField(default=0, constraints=[pw.SQL("DEFAULT 0")])


class BaseModel(pw.Model):
    class Meta:
        database = database_proxy
        legacy_table_names = False


class Meta(BaseModel):
    """Key/value facts about the database itself (schema version, fixed clock)."""

    key = pw.CharField(primary_key=True, max_length=64)
    value = pw.TextField()


# --- organisations and people ------------------------------------------------


class Organization(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    name = pw.TextField()


class User(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    organization = pw.ForeignKeyField(Organization, backref="users", on_delete="CASCADE")
    organization_id: str
    name = pw.TextField(default="")
    email = pw.TextField(null=True)


# --- Group C: clients and projects -------------------------------------------


class Client(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    organization = pw.ForeignKeyField(Organization, backref="clients", on_delete="CASCADE")
    organization_id: str
    name = pw.TextField()
    description = pw.TextField(null=True)
    website = pw.TextField(null=True)
    industry = pw.TextField(null=True)
    is_pinned = pw.BooleanField(default=False)
    pinned_at = pw.DateTimeField(null=True)
    created_at = pw.DateTimeField()
    updated_at = pw.DateTimeField()


class Contact(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    client = pw.ForeignKeyField(Client, backref="contacts", on_delete="CASCADE")
    client_id: str
    name = pw.TextField()
    email = pw.TextField(null=True)
    phone = pw.TextField(null=True)
    role = pw.TextField(null=True)
    is_primary = pw.BooleanField(default=False)
    created_at = pw.DateTimeField()
    updated_at = pw.DateTimeField()


class Project(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    organization = pw.ForeignKeyField(Organization, backref="projects", on_delete="CASCADE")
    organization_id: str
    name = pw.TextField()
    description = pw.TextField(null=True)
    status = pw.CharField(max_length=16, default="active", index=True)
    client = pw.ForeignKeyField(Client, null=True, backref="projects", on_delete="SET NULL")
    client_id: str | None
    contact = pw.ForeignKeyField(Contact, null=True, backref="projects", on_delete="SET NULL")
    contact_id: str | None
    start_date = pw.DateTimeField(null=True)
    end_date = pw.DateTimeField(null=True)
    owner_user_id = pw.CharField(max_length=64, null=True)
    is_pinned = pw.BooleanField(default=False)
    pinned_at = pw.DateTimeField(null=True)
    created_at = pw.DateTimeField()
    updated_at = pw.DateTimeField()
    client_name: str | None  # only on the rows of a listing that joins the client's name


# --- Group A: SOWs, items, dependencies ---------------------------------------


class Sow(BaseModel):
    """A SOW's ``id`` is unique within its organization only (schema v6), so that no
    organization can take, or learn of, an id another one uses. Items and dependencies
    refer to the storage ``key``, which is never shown: the same text as ``id`` unless
    another organization's SOW already had that key, then a fresh random one."""

    key = pw.CharField(primary_key=True, max_length=64, column_name="id")
    id = pw.CharField(max_length=64, column_name="public_id")
    # Denormalised from the project (which never changes organization): the namespace.
    organization = pw.ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: str
    project = pw.ForeignKeyField(Project, backref="sows", on_delete="CASCADE")
    project_id: str
    title = pw.TextField(default="")
    created_at = pw.DateTimeField()

    class Meta:
        indexes = ((("organization", "id"), True),)


class Item(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    sow = pw.ForeignKeyField(Sow, backref="items", on_delete="CASCADE")
    sow_id: str
    parent = pw.ForeignKeyField("self", null=True, backref="children", on_delete="CASCADE")
    parent_id: str | None
    type = pw.CharField(max_length=16)
    title = pw.TextField()
    description = pw.TextField(null=True)
    order_index = pw.IntegerField(default=0)
    status = pw.CharField(max_length=16, default="pending")
    created_by_user_id = pw.CharField(max_length=64, null=True)
    created_at = pw.DateTimeField()
    updated_at = pw.DateTimeField()
    # Position in its organization's topological order of the ordering edges
    # (``services.graph``: rank(before) < rank(after) for every edge), kept by the
    # dependency service; null for an item that never had an edge. Added by schema v3.
    topo_rank = pw.BigIntegerField(null=True, index=True)
    # How many task items lie below this item, by status (``storage.tallies``): a requirement's
    # shown status comes from them and its own row, without reading its subtree. Kept by
    # every write that adds, removes or changes a task item below. Added by schema v8.
    pending_below = _count()
    in_progress_below = _count()
    completed_below = _count()
    cancelled_below = _count()

    class Meta:
        # (sow, order_index, created_at, id) is the list order: a page's ids come from the
        # index alone, OFFSET skips index entries without reading rows or sorting (schema v7,
        # which replaced an index on (sow, order_index)).
        indexes = (
            (("sow", "order_index", "created_at", "id"), False),
            (("parent", "order_index"), False),
        )


class Dependency(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    # Denormalised from the source item: the sowId filter and the chain read by it.
    sow = pw.ForeignKeyField(Sow, backref="dependencies", on_delete="CASCADE")
    sow_id: str
    source_item = pw.ForeignKeyField(Item, backref="outgoing", on_delete="CASCADE")
    source_item_id: str
    target_item = pw.ForeignKeyField(Item, null=True, backref="incoming", on_delete="CASCADE")
    target_item_id: str | None
    dependency_type = pw.CharField(max_length=16)
    risk_level = pw.CharField(max_length=16)
    status = pw.CharField(max_length=16, default="active", index=True)
    is_external = pw.BooleanField(default=False)
    external_target = pw.TextField(null=True)
    external_owner = pw.TextField(null=True)
    contact_email = pw.TextField(null=True)
    vendor = pw.TextField(null=True)
    sla_date = pw.DateField(null=True)
    escalation_date = pw.DateField(null=True)
    notes = pw.TextField(null=True)
    created_by_user_id = pw.CharField(max_length=64, null=True)
    created_at = pw.DateTimeField()
    updated_at = pw.DateTimeField(null=True)
    # The ordering edge this dependency imposes ("before" item comes first), kept in sync
    # by the dependency service; both null for related_to, external and cancelled ones.
    # Indexed so a cycle check walks only the reachable part of the graph.
    before_item_id = pw.CharField(max_length=64, null=True, index=True)
    after_item_id = pw.CharField(max_length=64, null=True, index=True)
    # Denormalised from the SOW (schema v8), for the list's index below; every writer fills it
    # (a migrated database's rows were filled from their SOW).
    organization_id = pw.CharField(max_length=64, null=True)

    class Meta:
        # Covering index of the cycle check's recursive walk: it reads both columns from
        # the index alone, never the (wide) table row; 3x faster on a dense 10k-item SOW.
        # The list order by organization and by SOW (schema v8): a page's ids come from
        # the index in order, and a deep OFFSET skips index entries, never rows or a sort.
        indexes = (
            (("before_item_id", "after_item_id"), False),
            (("organization_id", "created_at", "id"), False),
            (("sow", "created_at", "id"), False),
        )


# --- Group B: companies and financial records ---------------------------------


class Company(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    organization = pw.ForeignKeyField(Organization, backref="companies", on_delete="CASCADE")
    organization_id: str
    name = pw.TextField()


class FinancialProject(BaseModel):
    id = pw.BigIntegerField(primary_key=True)
    company = pw.ForeignKeyField(Company, backref="financial_projects", on_delete="CASCADE")
    company_id: str
    name = pw.TextField(default="")
    project = pw.ForeignKeyField(Project, null=True, on_delete="SET NULL")
    project_id: str | None
    # The highest PO-<id>-<n> number allocated so far, so that a new order costs O(1);
    # null until the first order is created after a migration or an import (then counted).
    po_high_water = pw.BigIntegerField(null=True)


class Vendor(BaseModel):
    id = pw.BigIntegerField(primary_key=True)
    company = pw.ForeignKeyField(Company, backref="vendors", on_delete="CASCADE")
    company_id: str
    name = pw.TextField()


class CostCode(BaseModel):
    id = pw.BigIntegerField(primary_key=True)
    company = pw.ForeignKeyField(Company, backref="cost_codes", on_delete="CASCADE")
    company_id: str
    full_code = pw.TextField()
    name = pw.TextField(default="")


class Commitment(BaseModel):
    id = pw.CharField(primary_key=True, max_length=64)
    financial_project = pw.ForeignKeyField(FinancialProject, backref="commitments", on_delete="CASCADE")
    financial_project_id: int
    title = pw.TextField(default="")
    vendor = pw.ForeignKeyField(Vendor, null=True, on_delete="SET NULL")
    vendor_id: int | None


class BudgetView(BaseModel):
    id = pw.BigIntegerField(primary_key=True)
    financial_project = pw.ForeignKeyField(FinancialProject, backref="budget_views", on_delete="CASCADE")
    financial_project_id: int
    name = pw.TextField()
    description = pw.TextField(null=True)
    created_at = pw.DateTimeField()
    updated_at = pw.DateTimeField()


class BudgetViewSnapshot(BaseModel):
    id = pw.BigIntegerField(primary_key=True)
    budget_view = pw.ForeignKeyField(BudgetView, backref="snapshots", on_delete="CASCADE")
    budget_view_id: int
    financial_project = pw.ForeignKeyField(FinancialProject, on_delete="CASCADE")
    financial_project_id: int
    name = pw.TextField()
    description = pw.TextField(null=True)
    created_at = pw.DateTimeField()
    created_by = pw.JSONField(null=True)  # {"id", "name", "email"}, as the API shows it


class SnapshotLineItem(BaseModel):
    # Line ids repeat across snapshots in the source data, so they are not the key.
    row_id = pw.AutoField()
    snapshot = pw.ForeignKeyField(BudgetViewSnapshot, backref="line_items", on_delete="CASCADE")
    snapshot_id: int
    id = pw.BigIntegerField()
    position = pw.IntegerField(default=0)
    code = pw.TextField(default="")
    description = pw.TextField(null=True)
    original_budget = MoneyField()
    current_budget = MoneyField()
    committed = MoneyField()
    spent = MoneyField()
    projected_total = MoneyField()
    variance = MoneyField(null=True)  # null: computed as current_budget - projected_total


class PrimeContract(BaseModel):
    id = pw.BigIntegerField(primary_key=True)
    financial_project = pw.ForeignKeyField(FinancialProject, backref="prime_contracts", on_delete="CASCADE")
    financial_project_id: int
    title = pw.TextField(default="")
    description = pw.TextField(null=True)
    contract_number = pw.TextField(null=True)
    status = pw.TextField(default="Active")
    contract_date = pw.DateTimeField(null=True)
    start_date = pw.DateTimeField(null=True)
    estimated_completion_date = pw.DateTimeField(null=True)
    original_contract_value = MoneyField(default="0")
    current_contract_value = MoneyField(default="0")
    executed_change_orders_value = MoneyField(default="0")
    pending_change_orders_value = MoneyField(default="0")
    customer = pw.JSONField(null=True)
    payment_terms = pw.JSONField(null=True)


class PurchaseOrder(BaseModel):
    id = pw.BigAutoField()
    financial_project = pw.ForeignKeyField(FinancialProject, backref="purchase_orders", on_delete="CASCADE")
    financial_project_id: int
    commitment = pw.ForeignKeyField(Commitment, null=True, on_delete="SET NULL")
    commitment_id: str | None
    number = pw.CharField(max_length=64)
    status = pw.CharField(max_length=32)
    title = pw.TextField()
    vendor = pw.ForeignKeyField(Vendor, on_delete="RESTRICT")
    vendor_id: int
    original_amount = MoneyField()
    revised_amount = MoneyField()
    total_amount = MoneyField()
    created_at = pw.DateTimeField()

    class Meta:
        indexes = ((("financial_project", "number"), True),)


class PurchaseOrderLine(BaseModel):
    id = pw.BigAutoField()
    purchase_order = pw.ForeignKeyField(PurchaseOrder, backref="lines", on_delete="CASCADE")
    purchase_order_id: int
    position = pw.IntegerField(default=0)
    description = pw.TextField()
    amount = MoneyField()
    cost_code = pw.ForeignKeyField(CostCode, on_delete="RESTRICT")
    cost_code_id: int
    quantity = MoneyField(null=True)
    unit_cost = MoneyField(null=True)


# --- credentials and rate limiting --------------------------------------------


class ApiToken(BaseModel):
    """A bearer token for Groups A and C; only its SHA-256 hash is stored."""

    id = pw.CharField(primary_key=True, max_length=64)
    token_hash = pw.CharField(max_length=64, unique=True)
    hint = pw.CharField(max_length=16)  # first characters, for listings
    user = pw.ForeignKeyField(User, on_delete="CASCADE")
    user_id: str
    organization = pw.ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: str
    role = pw.CharField(max_length=16, default="member")
    created_at = pw.DateTimeField()
    revoked_at = pw.DateTimeField(null=True)


class ApiKey(BaseModel):
    """A Group B API key; only its SHA-256 hash is stored."""

    id = pw.CharField(primary_key=True, max_length=64)
    key_hash = pw.CharField(max_length=64, unique=True)
    hint = pw.CharField(max_length=16)
    organization = pw.ForeignKeyField(Organization, on_delete="CASCADE")
    organization_id: str
    created_at = pw.DateTimeField()
    revoked_at = pw.DateTimeField(null=True)


class RateCounter(BaseModel):
    """Requests counted per API key and window, shared by every server worker."""

    api_key = pw.ForeignKeyField(ApiKey, on_delete="CASCADE")
    api_key_id: str
    window = pw.CharField(max_length=8)  # "minute" or "day"
    window_start = pw.BigIntegerField()  # epoch seconds of the window's start
    count = pw.IntegerField(default=0)

    class Meta:
        primary_key = pw.CompositeKey("api_key", "window", "window_start")


ALL_MODELS: list[type[BaseModel]] = [
    Meta,
    Organization,
    User,
    Client,
    Contact,
    Project,
    Sow,
    Item,
    Dependency,
    Company,
    FinancialProject,
    Vendor,
    CostCode,
    Commitment,
    BudgetView,
    BudgetViewSnapshot,
    SnapshotLineItem,
    PrimeContract,
    PurchaseOrder,
    PurchaseOrderLine,
    ApiToken,
    ApiKey,
    RateCounter,
]


# --- schema v2: the test-double request log (``sowctl serve --admin``) ----------


class RequestLog(BaseModel):
    """One API request as ``GET /_admin/requests`` shows it; bounded (oldest rows pruned).

    Bodies are stored masked and truncated; credentials are never stored.
    """

    id = pw.AutoField()
    at = pw.CharField(max_length=32)  # wall-clock UTC with milliseconds (not the service clock)
    request_id = pw.CharField(max_length=32, null=True)
    method = pw.CharField(max_length=16)
    path = pw.TextField()
    query = pw.TextField(null=True)  # JSON object
    status = pw.IntegerField(null=True)  # null: the connection was dropped (fault)
    latency_ms = pw.FloatField()
    group = pw.CharField(max_length=1, null=True, column_name="api_group")
    identity = pw.TextField(null=True)  # JSON object, never a secret
    request_body = pw.TextField(null=True)
    request_truncated = pw.BooleanField(default=False)
    response_body = pw.TextField(null=True)
    response_truncated = pw.BooleanField(default=False)
    fault = pw.TextField(null=True)  # JSON object: the injected fault, if any
    headers = pw.TextField(null=True)  # JSON object: request headers, never a credential one (v5)
    contract = pw.TextField(null=True)  # JSON array: contract mode's marks, when it is on (v10)
    # The caller's organization (from its token or key), so that a sandbox's admin token
    # sees and clears only its own requests (v13); null when the caller is unknown.
    organization_id = pw.CharField(max_length=64, null=True)

    class Meta:
        indexes = ((("organization_id", "id"), False),)


# Created by migration v2 (``db._v2_request_log``), not by v1: v1 is released and
# creates exactly ALL_MODELS. Tables that hold no dataset records (neither exported
# nor imported), but are emptied by ``POST /_admin/reset``.
V2_MODELS: list[type[BaseModel]] = [RequestLog]


# --- schema v11: the outbox of events (``services.events``) -------------------------


class Event(BaseModel):
    """One committed change, written in the transaction that made it (a transactional
    outbox): the changes feed and the webhook deliveries read these rows.

    ``id`` orders the events of one organization in commit order: every write that records
    one holds the organization's event lock until it commits (``services.events``).
    """

    id = pw.AutoField()
    organization_id = pw.CharField(max_length=64)
    type = pw.CharField(max_length=48)  # "item.created", "dependency.deleted", ...
    resource_id = pw.CharField(max_length=64)
    occurred_at = pw.DateTimeField()  # the service clock's time of the change
    payload = pw.TextField()  # the event as the feed and deliveries show it (JSON)
    traceparent = pw.CharField(max_length=64, null=True)  # the request's, for its deliveries (v14)

    class Meta:
        indexes = ((("organization_id", "id"), False),)


# Tables of the event machinery: not dataset records, emptied by ``POST /_admin/reset``.
V11_MODELS: list[type[BaseModel]] = [Event]
