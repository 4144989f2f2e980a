"""Import checks of the Group B (external API) records: projects, master data, snapshots, orders."""

from __future__ import annotations

from typing import Any

from sowctl.foundation import money
from sowctl.services.dataset.columns import _getter, _stamp
from sowctl.services.dataset.import_state import ImportState
from sowctl.storage import models as m


class ExternalChecks(ImportState):
    """The Group B part of the importer's checks (mixed into ``importer._Importer``)."""

    def _financial_projects(self, company_org: dict[str, str], project_org: dict[str, str]) -> dict[int, str]:
        kind = "financialProjects"
        records = self.records[kind]
        existing = self.db_financial_projects
        self._owned(kind, "financial project", "companyId", company_org, existing, "company")
        for i, r in enumerate(records):
            if r.project_id is None:
                continue
            if r.project_id not in project_org:
                self._missing(kind, i, r.id, "projectId", "project", r.project_id)
            elif r.company_id in company_org and project_org[r.project_id] != company_org[r.company_id]:
                message = (
                    f"project {r.project_id} belongs to another organization than company {r.company_id}"
                )
                self.problems.add(kind, i, r.id, "projectId", message)
        self._flat(kind, records)
        return {**existing, **{r.id: r.company_id for r in records}}

    def _master_data(
        self, kind: str, label: str, model: type[m.Vendor | m.CostCode], company_org: dict[str, str]
    ) -> dict[int, str]:
        """Vendors and cost codes: an id and a company each."""
        records = self.records[kind]
        existing = self._load(model.id, model.company)
        self._owned(kind, label, "companyId", company_org, existing, "company")
        self._flat(kind, records)
        return {**existing, **{r.id: r.company_id for r in records}}

    def _commitments(self, fp_company: dict[int, str], vendor_company: dict[int, str]) -> dict[str, int]:
        kind = "commitments"
        records = self.records[kind]
        self._owned(kind, "commitment", "project_id", fp_company, self.db_commitments, "project")
        for i, r in enumerate(records):
            if r.vendor_id is None:
                continue
            if r.vendor_id not in vendor_company:
                self._missing(kind, i, r.id, "vendor_id", "vendor", r.vendor_id)
            elif r.project_id in fp_company and vendor_company[r.vendor_id] != fp_company[r.project_id]:
                message = f"vendor {r.vendor_id} is not a vendor of the project's company"
                self.problems.add(kind, i, r.id, "vendor_id", message)
        self._flat(kind, records)
        return {**self.db_commitments, **{r.id: r.project_id for r in records}}

    def _snapshots(self, view_fp: dict[int, int], fp_company: dict[int, str]) -> None:
        kind = "budgetViewSnapshots"
        records = self.records[kind]
        self._owned(
            kind,
            "budget view snapshot",
            "project_id",
            fp_company,
            self._load(m.BudgetViewSnapshot.id),
            "project",
        )
        line_getter = _getter("snapshotLines")
        lines: list[tuple] = []
        for i, r in enumerate(records):
            view = r.budget_view_id
            if view not in view_fp:
                self._missing(kind, i, r.id, "budget_view_id", "budget view", view)
            elif view_fp[view] != r.project_id:
                message = f"budget view {view} belongs to project {view_fp[view]}, not {r.project_id}"
                self.problems.add(kind, i, r.id, "budget_view_id", message)
            r.created_by = r.created_by.model_dump(mode="json") if r.created_by is not None else None
            lines.extend((*line_getter(line), r.id, k) for k, line in enumerate(r.line_items))
        _stamp(records, self.now, "created_at")
        self._flat(kind, records)
        self._table("snapshotLines", lines, extra=(m.SnapshotLineItem.snapshot, m.SnapshotLineItem.position))

    def _purchase_orders(
        self,
        fp_company: dict[int, str],
        commitment_fp: dict[str, int],
        vendor_company: dict[int, str],
        cost_code_company: dict[int, str],
    ) -> None:
        kind = "purchaseOrders"
        records = self.records[kind]
        add = self.problems.add
        self._owned(kind, "purchase order", "project_id", fp_company, self.db_purchase_orders, "project")
        numbers = {(fp, number): None for fp, number in self.db_purchase_orders.values()}
        number_where: dict[tuple[int, str], int] = {}
        line_ids = self._load(m.PurchaseOrderLine.id)
        line_where: dict[int, str] = {}
        file_line_ids = [line.id for r in records for line in r.line_items if line.id is not None]
        next_line_id = max([0, *line_ids, *file_line_ids]) + 1
        line_getter = _getter("purchaseOrderLines")
        lines = []
        for i, r in enumerate(records):
            company = fp_company.get(r.project_id)
            key = (r.project_id, r.number)
            if key in number_where:
                also = f"{kind}[{number_where[key]}]"
                message = f"duplicate number {r.number} in project {r.project_id} (also {also})"
                add(kind, i, r.id, "number", message)
            elif key in numbers:
                add(kind, i, r.id, "number", f"number {r.number} already exists in project {r.project_id}")
            number_where.setdefault(key, i)
            self._order_references(i, r, company, commitment_fp, vendor_company)
            for k, line in enumerate(r.line_items):
                where = f"line_items[{k}]"
                if line.id is None:
                    line.id, next_line_id = next_line_id, next_line_id + 1
                elif line.id in line_where:
                    add(kind, i, r.id, f"{where}.id", f"duplicate line id (also {line_where[line.id]})")
                elif line.id in line_ids:
                    message = f"purchase order line {line.id} already exists in the database"
                    add(kind, i, r.id, f"{where}.id", message)
                line_where.setdefault(line.id, f"{kind}[{i}].{where}")
                code = line.cost_code.id
                if code not in cost_code_company:
                    self._missing(kind, i, r.id, f"{where}.cost_code.id", "cost code", code)
                elif company is not None and cost_code_company[code] != company:
                    message = f"cost code {code} is not a cost code of the project's company"
                    add(kind, i, r.id, f"{where}.cost_code.id", message)
                lines.append((*line_getter(line), r.id, k, code))
            # Left out, the amounts of a purchase order are the exact sum of its lines, as the
            # API computes them.
            total = money.total(line.amount for line in r.line_items)
            for name in ("original_amount", "revised_amount", "total_amount"):
                if getattr(r, name) is None:
                    setattr(r, name, total)
        _stamp(records, self.now, "created_at")
        getter = _getter(kind)
        self._table(kind, [(*getter(r), r.vendor.id) for r in records], extra=(m.PurchaseOrder.vendor,))
        self._table(
            "purchaseOrderLines",
            lines,
            extra=(
                m.PurchaseOrderLine.purchase_order,
                m.PurchaseOrderLine.position,
                m.PurchaseOrderLine.cost_code,
            ),
        )

    def _order_references(
        self,
        i: int,
        r: Any,
        company: str | None,
        commitment_fp: dict[str, int],
        vendor_company: dict[int, str],
    ) -> None:
        """The commitment and the vendor purchase order ``r`` (``purchaseOrders[i]``) names."""
        kind = "purchaseOrders"
        if r.commitment_id is not None:
            if r.commitment_id not in commitment_fp:
                self._missing(kind, i, r.id, "commitment_id", "commitment", r.commitment_id)
            elif commitment_fp[r.commitment_id] != r.project_id:
                message = f"commitment {r.commitment_id} belongs to project {commitment_fp[r.commitment_id]}"
                self.problems.add(kind, i, r.id, "commitment_id", message)
        if r.vendor.id not in vendor_company:
            self._missing(kind, i, r.id, "vendor.id", "vendor", r.vendor.id)
        elif company is not None and vendor_company[r.vendor.id] != company:
            message = f"vendor {r.vendor.id} is not a vendor of the project's company"
            self.problems.add(kind, i, r.id, "vendor.id", message)

    # -- writing --
