"""Import: check every record against the file and the database, then write all or nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Container

from sowctl.foundation import clock
from sowctl.schemas import dataset as s
from sowctl.services.collector import collector_paused
from sowctl.services.dataset.columns import Progress, _getter, _stamp
from sowctl.services.dataset.external_checks import ExternalChecks
from sowctl.services.dataset.item_checks import ItemChecks
from sowctl.services.dataset.source import DatasetSource, DictSource
from sowctl.services.dataset.writer import _advance_sequences, small_page_cache
from sowctl.services.graph import (
    mark_ranks_stale,  # imported edges carry no topological rank
)
from sowctl.storage import models as m
from sowctl.storage import tallies
from sowctl.storage.database import write_transaction
from sowctl.storage.peewee_compat import tuples


def import_dataset(
    data: dict | DatasetSource, *, progress: Progress | None = None, scope: str | None = None
) -> dict[str, int]:
    """Load a dataset, all or nothing; returns the number of records per kind.

    ``data`` is a parsed dataset or a ``DatasetSource`` (a file streamed kind by kind:
    only one kind's records, and the compact facts later kinds refer to, are held).
    Each kind is validated, checked and inserted in turn inside one transaction; any
    problem rolls all of it back. Problems with the records themselves (types,
    fields) are reported alone, as they make reference checks meaningless.
    ``progress(done, total)`` is called after each inserted batch (rows of all tables).
    ``scope``: a sandbox's organization, the only one whose records the file may name.
    """
    source = data if isinstance(data, DatasetSource) else DictSource(data)
    with collector_paused(), small_page_cache():
        with write_transaction("import"):
            importer = _Importer(source, clock.now(), progress, scope)
            importer.check_and_build()
            importer.invalid.raise_if_any()
            importer.problems.raise_if_any()
            _advance_sequences(importer.inserted)
            mark_ranks_stale(importer.ordered_organizations)
            # The counts below each item of the SOWs given items (new ones or under old ones).
            tallies.recount(importer.item_sows)
            # Imported numbers may be above a project's mark: count again at the next order.
            if importer.counted.get("purchaseOrders"):
                m.FinancialProject.update(po_high_water=None).where(
                    m.FinancialProject.po_high_water.is_null(False)
                ).execute()
        return importer.counts()


class _Importer(ExternalChecks, ItemChecks):
    """Checks references (file first, then database) and builds the rows to insert."""

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for kind in s.KINDS:
            counts[kind] = self.counted.get(kind, 0)
            if kind == "clients":
                counts["contacts"] = self.counted.get("contacts", 0)
        return counts

    # -- the checks, kind by kind, in reference order --

    def check_and_build(self) -> None:
        records, now = self.records, self.now
        # Group A/C
        self._unique("organizations", "organization", records["organizations"], self.db_organizations)
        self._flat("organizations", records["organizations"])
        organizations = {**self.db_organizations, **{r.id: None for r in records["organizations"]}}
        self._done("organizations")

        users = records["users"]
        self._owned("users", "user", "organizationId", organizations, self._load(m.User.id), "organization")
        self._flat("users", users)
        del users
        self._done("users")

        client_org, contact_client = self._clients(organizations)
        self._done("clients")
        project_org = self._projects(organizations, client_org, contact_client)
        self._done("projects")
        del contact_client

        sow_org, sow_keys = self._sows(project_org)
        self._done("sows")
        item_info = self._items(sow_org, sow_keys, self._sow_key_of(sow_org))
        self._done("items")
        del sow_keys
        self._dependencies(item_info, sow_org)
        del item_info

        # Group B
        companies = records["companies"]
        self._owned(
            "companies", "company", "organizationId", organizations, self.db_companies, "organization"
        )
        self._flat("companies", companies)
        company_org = {**self.db_companies, **{r.id: r.organization_id for r in companies}}
        del companies
        self._done("companies")

        fp_company = self._financial_projects(company_org, project_org)
        self._done("financialProjects")
        vendor_company = self._master_data("vendors", "vendor", m.Vendor, company_org)
        self._done("vendors")
        cost_code_company = self._master_data("costCodes", "cost code", m.CostCode, company_org)
        self._done("costCodes")
        commitment_fp = self._commitments(fp_company, vendor_company)
        self._done("commitments")

        views = records["budgetViews"]
        self._owned("budgetViews", "budget view", "project_id", fp_company, self.db_budget_views, "project")
        _stamp(views, now, "created_at", "updated_at")
        self._flat("budgetViews", views)
        view_fp = {**self.db_budget_views, **{r.id: r.project_id for r in views}}
        del views
        self._done("budgetViews")

        self._snapshots(view_fp, fp_company)
        self._done("budgetViewSnapshots")

        contracts = records["primeContracts"]
        existing = self._load(m.PrimeContract.id)
        self._owned("primeContracts", "prime contract", "project_id", fp_company, existing, "project")
        for r in contracts:
            r.customer = r.customer.model_dump(mode="json") if r.customer is not None else None
            r.payment_terms = r.payment_terms.model_dump(mode="json") if r.payment_terms is not None else None
        self._flat("primeContracts", contracts)
        del contracts
        self._done("primeContracts")

        self._purchase_orders(fp_company, commitment_fp, vendor_company, cost_code_company)
        self._done("purchaseOrders")

    def _clients(self, organizations: Container) -> tuple[dict[str, str], dict[str, str]]:
        records, now = self.records["clients"], self.now
        self._owned("clients", "client", "organizationId", organizations, self.db_clients, "organization")
        contact_client = dict(self.db_contacts)
        contact_where: dict[str, str] = {}
        contacts = []
        for i, r in enumerate(records):
            for j, c in enumerate(r.contacts):
                field = f"contacts[{j}]"
                if c.id in contact_where:
                    message = f"duplicate contact id (also {contact_where[c.id]})"
                    self.problems.add("clients", i, r.id, f"{field}.id", message)
                    continue
                if c.id in contact_client:
                    message = f"contact {c.id} already exists in the database"
                    self.problems.add("clients", i, r.id, f"{field}.id", message)
                    continue
                if c.client_id is not None and c.client_id != r.id:
                    message = f"must be the enclosing client's id {r.id}"
                    self.problems.add("clients", i, r.id, f"{field}.clientId", message)
                c.client_id = r.id
                contact_where[c.id] = f"clients[{i}].{field}"
                contact_client[c.id] = r.id
                contacts.append(c)
        _stamp(records, now, "created_at", "updated_at")
        _stamp(contacts, now, "created_at", "updated_at")
        self._flat("clients", records)
        self._flat("contacts", contacts)
        return {**self.db_clients, **{r.id: r.organization_id for r in records}}, contact_client

    def _projects(
        self, organizations: dict[str, None], client_org: dict[str, str], contact_client: dict[str, str]
    ) -> dict[str, str]:
        records = self.records["projects"]
        self._owned("projects", "project", "organizationId", organizations, self.db_projects, "organization")
        add = self.problems.add
        for i, r in enumerate(records):
            org, client = r.organization_id, r.client_id
            if client is not None:
                if client not in client_org:
                    self._missing("projects", i, r.id, "clientId", "client", client)
                elif client_org[client] != org and {client_org[client], org} <= organizations.keys():
                    message = f"client {client} belongs to organization {client_org[client]}, not {org}"
                    add("projects", i, r.id, "clientId", message)
            if r.contact_id is not None:
                owner = contact_client.get(r.contact_id)
                if owner is None:
                    self._missing("projects", i, r.id, "contactId", "contact", r.contact_id)
                elif client is not None and client in client_org and owner != client:
                    message = f"contact {r.contact_id} is not a contact of client {client}"
                    add("projects", i, r.id, "contactId", message)
                elif client is None and client_org.get(owner) != org:
                    message = f"contact {r.contact_id} belongs to another organization"
                    add("projects", i, r.id, "contactId", message)
        _stamp(records, self.now, "created_at", "updated_at")
        self._flat("projects", records)
        return {**self.db_projects, **{r.id: r.organization_id for r in records}}

    def _keys_taken_elsewhere(self, records: list) -> set[str]:
        """A sandbox's load (``scope``) sees its own SOWs only; a key is the server's: the
        file's ids that another organization's SOWs hold as keys."""
        if self.scope is None:
            return set()
        ids = [r.id for r in records]
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            query = m.Sow.select(m.Sow.key).where(m.Sow.key.in_(ids[start : start + 500]))
            found.update(row[0] for row in tuples(query))
        return found

    def _sow_key_of(self, sow_org: dict[str, str | None]) -> dict[tuple[str, str], str]:
        """(organization, shown id) -> key of every SOW, the file's and the database's."""
        shown = {key: sow_id for key, sow_id, _ in self.db_sows}
        shown.update(self.sow_shown_ids)
        return {(org, shown[key]): key for key, org in sow_org.items() if org is not None}

    def _sows(self, project_org: dict[str, str]) -> tuple[dict[str, str | None], dict[str, list[str]]]:
        """SOW ids are unique per organization (``models.Sow``): checks, keys, rows.

        Returns the organization of every SOW key (file and database), and the keys each
        shown id names, for the items: the file's SOWs of that id if it has any, else
        the database's.
        """
        kind, records = "sows", self.records["sows"]
        taken = {key for key, _, _ in self.db_sows} | self._keys_taken_elsewhere(records)
        stored = {(org, sow_id) for _, sow_id, org in self.db_sows}
        where: dict[tuple[str, str], int] = {}
        sow_org: dict[str, str | None] = {key: org for key, _, org in self.db_sows}  # None: no project
        in_file: dict[str, list[str]] = defaultdict(list)
        rows = []
        getter = _getter(kind)
        _stamp(records, self.now, "created_at")
        for i, r in enumerate(records):
            org = project_org.get(r.project_id)
            if org is None:
                self._missing(kind, i, r.id, "projectId", "project", r.project_id)
            elif (org, r.id) in where:
                self.problems.add(kind, i, r.id, "id", f"duplicate id (also {kind}[{where[org, r.id]}])")
            elif (org, r.id) in stored:
                self.problems.add(kind, i, r.id, "id", f"SOW {r.id} already exists in the database")
            else:
                where[org, r.id] = i
            key = r.id if r.id not in taken else clock.new_id()
            taken.add(key)
            self.sow_shown_ids[key] = r.id
            sow_org[key] = org
            in_file[r.id].append(key)
            rows.append((*getter(r), key, org))
        self._table(kind, rows, extra=(m.Sow.key, m.Sow.organization))
        sow_keys: dict[str, list[str]] = defaultdict(list)
        for key, sow_id, _ in self.db_sows:
            sow_keys[sow_id].append(key)
        sow_keys.update(in_file)
        return sow_org, sow_keys
