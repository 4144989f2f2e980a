"""The scenario: every route of the description asked, its answers judged as they come.

The requests follow the description, not sowctl: the documented credentials per group
(a bearer token for Groups A and C; an API key with the organization and company headers,
under the names each route documents, for Group B), the documented refusals (401 without
credentials, 404 for an id no record has, 400 for a missing required field or query
parameter, 400 for a dependency that would close a cycle) and pagination (``page``/``limit``,
Group C's ``limit``/``offset``).

Read-only unless ``writes`` is on: then items and dependencies are created in the SOW
given, changed, reordered and deleted again, and the refused requests with a body are
sent. The data read is found on the server (a dependency's item names its SOW) or named
by the caller (the SOW, the financial project, the prime contract).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from sowctl.conformance.checks import Answer, Difference, differences, route_of
from sowctl.foundation.errors import Unauthorized

_UNKNOWN_NUMBER = 987654321  # a Group B id no record has (ids there are numbers)

READ_ONLY_SKIPPED = (
    "creating, changing, reordering and deleting items and dependencies, the refused dependency cycle "
    "and the refusals of a body without a required field (read-only: give --allow-writes against "
    "a server whose data may change, or a test double's --admin-token)"
)


@dataclass(frozen=True)
class Plan:
    """What the caller gives the scenario: credentials, the data to read, whether it may write."""

    token: str | None = None
    api_key: str | None = None
    org: str | None = None
    company: str | None = None
    sow: str | None = None
    project: int | None = None
    prime_contract: int | None = None
    purchase_order: Any = None  # a create-purchase-order body (writes only)
    writes: bool = False
    # The same unknown ids on every server compared, so their error texts can match.
    unknown: str = field(default_factory=lambda: f"conformance-unknown-{uuid.uuid4().hex[:12]}")


@dataclass(frozen=True)
class Exchange:
    step: str
    method: str
    path: str
    expected: int
    answer: Answer


@dataclass
class Run:
    """One server's answers to the scenario, and where they depart from the description."""

    server: str
    exchanges: list[Exchange] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


# Sends one request: (method, path with query, headers, JSON body or None) -> the answer.
Send = Callable[[str, str, dict[str, str], Any], Answer]


def segment(value: Any) -> str:
    """A path segment: an id as the server gave it (or the caller did), made safe for a URL."""
    return quote(str(value), safe="")


class Scenario:
    def __init__(self, send: Send, plan: Plan, server: str) -> None:
        self.send = send
        self.plan = plan
        self.run = Run(server)

    # --- one request -------------------------------------------------------------------

    def ask(
        self,
        step: str,
        method: str,
        path: str,
        expected: int,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        credentials: bool = True,
    ) -> Any:
        """Send, record and judge one request; its JSON body when it answered ``expected``."""
        template = route_of(path)
        assert template is not None, path
        full = path + ("?" + urlencode(query) if query else "")
        headers = self._credentials(template[0], template[1], method) if credentials else {}
        answer = self.send(method, full, headers, body)
        self.run.exchanges.append(Exchange(step, method, full, expected, answer))
        if credentials and answer.status == 401 and expected != 401:
            which = "--api-key" if template[0].startswith("/api/external/") else "--token"
            raise Unauthorized(f"the server refused {which}: {method} {full} answered 401")
        self.run.differences.extend(differences(step, method, full, expected, answer))
        return answer.json() if answer.status == expected else None

    def _credentials(self, template: str, route: dict, method: str) -> dict[str, str]:
        if not template.startswith("/api/external/"):
            return {"Authorization": f"Bearer {self.plan.token}"}
        headers = {"x-api-key": str(self.plan.api_key)}
        scope = [p["name"] for p in route[method.lower()]["parameters"] if p["in"] == "header"]
        organization = next(name for name in scope if "organization" in name)
        company = next(name for name in scope if "company" in name)
        return {**headers, organization: str(self.plan.org), company: str(self.plan.company)}

    def pagination(self, step: str, method: str, path: str, detail: str) -> None:
        template = route_of(path.split("?", 1)[0])
        route = template[0] if template else path
        self.run.differences.append(Difference(step, method, path, route, "pagination", "(root)", detail))

    # --- the whole scenario ---------------------------------------------------------------

    def play(self) -> Run:
        plan = self.plan
        if plan.token:
            self.group_c()
            self.group_a()
        else:
            self.run.skipped.append("dependencies, items, projects and clients: no --token")
        if plan.api_key and plan.org and plan.company:
            self.group_b()
        else:
            self.run.skipped.append(
                "purchase orders, budgets and prime contracts: they need --api-key, --org and --company"
            )
        if not plan.writes:
            self.run.skipped.append(READ_ONLY_SKIPPED)
        return self.run

    # --- Group C ----------------------------------------------------------------------------

    def group_c(self) -> None:
        for path, key in (("/projects", "projects"), ("/clients", "clients")):
            self.ask(f"{key}: without credentials", "GET", path, 401, credentials=False)
            whole = self.ask(f"{key}: list", "GET", path, 200)
            first = self.ask(f"{key}: first of limit=1", "GET", path, 200, query={"limit": 1, "offset": 0})
            second = self.ask(f"{key}: second of limit=1", "GET", path, 200, query={"limit": 1, "offset": 1})
            self._check_offsets(key, path, whole, first, second)
        self.ask("projects: status filter", "GET", "/projects", 200, query={"status": "active"})

    def _check_offsets(self, key: str, path: str, whole: Any, first: Any, second: Any) -> None:
        pages = (whole, first, second)
        if not all(isinstance(page, dict) and isinstance(page.get(key), list) for page in pages):
            return
        for page, offset in ((first, 0), (second, 1)):
            if len(page[key]) > 1:
                step, shown = f"{key}: first of limit=1", f"{path}?limit=1&offset={offset}"
                self.pagination(step, "GET", shown, f"limit=1 answered {len(page[key])} {key}")
        if first[key] and second[key] and first[key][0].get("id") == second[key][0].get("id"):
            self.pagination(
                f"{key}: second of limit=1",
                "GET",
                f"{path}?limit=1&offset=1",
                "offset=1 answered the same record as offset=0",
            )

    # --- Group A ----------------------------------------------------------------------------

    def group_a(self) -> None:
        unknown = self.plan.unknown
        self.ask("dependencies: without credentials", "GET", "/api/dependencies", 401, credentials=False)
        listed = self.ask(
            "dependencies: page 1 of limit=2", "GET", "/api/dependencies", 200, query={"page": 1, "limit": 2}
        )
        if isinstance(listed, list) and len(listed) > 2:
            self.pagination(
                "dependencies: page 1 of limit=2",
                "GET",
                "/api/dependencies?page=1&limit=2",
                f"limit=2 answered {len(listed)} dependencies",
            )
        self.ask("dependency: unknown id", "GET", f"/api/dependencies/{segment(unknown)}", 404)
        self.ask("item: unknown id", "GET", f"/api/items/{segment(unknown)}", 404)
        self.ask("chain: without sowId", "GET", "/api/dependencies/chain", 400)
        sow = self.plan.sow or self._sow_of(listed)
        if sow is None:
            self.run.skipped.append(
                "a SOW's items and chain: no dependency on the server names one; give --sow"
            )
            return
        self.ask("dependencies: of the SOW", "GET", "/api/dependencies", 200, query={"sowId": sow})
        self._items_pages(sow)
        self.ask("chain: flat", "GET", "/api/dependencies/chain", 200, query={"sowId": sow})
        self.ask("chain: tree", "GET", "/api/dependencies/chain", 200, query={"sowId": sow, "format": "tree"})
        if self.plan.writes:
            self.group_a_writes(sow)

    def _sow_of(self, listed: Any) -> str | None:
        if not isinstance(listed, list) or not listed or not isinstance(listed[0], dict):
            return None
        path = f"/api/dependencies/{segment(listed[0].get('id'))}"
        dependency = self.ask("dependency: by id", "GET", path, 200)
        source = (dependency or {}).get("sourceItemId")
        item = self.ask("item: by id", "GET", f"/api/items/{segment(source)}", 200) if source else None
        sow = (item or {}).get("sowId")
        return sow if isinstance(sow, str) and sow else None

    def _items_pages(self, sow: str) -> None:
        path = f"/api/sow/{segment(sow)}/items"
        pages = []
        for page in (1, 2):
            step = f"items: page {page} of limit=2"
            answer = self.ask(step, "GET", path, 200, query={"page": page, "limit": 2})
            if isinstance(answer, list) and len(answer) > 2:
                self.pagination(
                    step, "GET", f"{path}?page={page}&limit=2", f"limit=2 answered {len(answer)} items"
                )
            pages.append(answer if isinstance(answer, list) else [])
        ids = [{item.get("id") for item in page if isinstance(item, dict)} for page in pages]
        if ids[0] & ids[1]:
            self.pagination(
                "items: page 2 of limit=2", "GET", f"{path}?page=2&limit=2", "page 2 repeats items of page 1"
            )

    def group_a_writes(self, sow: str) -> None:
        items = f"/api/sow/{segment(sow)}/items"
        first = self.ask(
            "item: create", "POST", items, 201, body={"title": "Conformance A", "type": "requirement"}
        )
        second = self.ask(
            "item: create another", "POST", items, 201, body={"title": "Conformance B", "type": "requirement"}
        )
        self.ask("item: create without title", "POST", items, 400, body={"type": "requirement"})
        self.ask(
            "dependency: create without sourceItemId",
            "POST",
            "/api/dependencies",
            400,
            body={"dependencyType": "depends_on", "riskLevel": "low"},
        )
        created = [item["id"] for item in (first, second) if isinstance(item, dict) and "id" in item]
        if len(created) == 2:
            self._dependencies_between(*created)
            self.ask(
                "items: reorder",
                "PUT",
                f"{items}/reorder",
                200,
                body={"items": [{"id": created[1], "orderIndex": 0}, {"id": created[0], "orderIndex": 1}]},
            )
        for item_id in created:
            path = f"/api/items/{segment(item_id)}"
            self.ask("item: by id", "GET", path, 200)
            self.ask("item: update", "PUT", path, 200, body={"status": "in_progress"})
        for item_id in reversed(created):
            self.ask("item: delete", "DELETE", f"/api/items/{segment(item_id)}", 200)

    def _dependencies_between(self, first: str, second: str) -> None:
        body = {
            "sourceItemId": first,
            "targetItemId": second,
            "dependencyType": "depends_on",
            "riskLevel": "low",
        }
        created = self.ask("dependency: create", "POST", "/api/dependencies", 201, body=body)
        reverse = {**body, "sourceItemId": second, "targetItemId": first}
        self.ask("dependency: create closing a cycle", "POST", "/api/dependencies", 400, body=reverse)
        if not isinstance(created, dict) or "id" not in created:
            return
        path = f"/api/dependencies/{segment(created['id'])}"
        self.ask("dependency: by id", "GET", path, 200)
        self.ask("dependency: update", "PUT", path, 200, body={"riskLevel": "high"})
        self.ask("dependency: delete", "DELETE", path, 200)
        self.ask("dependency: deleted", "GET", path, 404)

    # --- Group B ----------------------------------------------------------------------------

    def group_b(self) -> None:
        views, snapshots = "/api/external/budget-views", "/api/external/budget-view-snapshots"
        snapshot, prime = "/api/external/budget-view-snapshot", "/api/external/prime-contract-details"
        self.ask(
            "budget views: without credentials",
            "GET",
            views,
            401,
            query={"project_id": _UNKNOWN_NUMBER},
            credentials=False,
        )
        self.ask("budget views: without project_id", "GET", views, 400)
        self.ask("budget views: unknown project", "GET", views, 404, query={"project_id": _UNKNOWN_NUMBER})
        self.ask(
            "prime contract: without prime_contract_id",
            "GET",
            prime,
            400,
            query={"project_id": _UNKNOWN_NUMBER},
        )
        if self.plan.writes:
            self.ask(
                "purchase order: empty body", "POST", "/api/external/create-purchase-order", 400, body={}
            )
            if self.plan.purchase_order is not None:
                body = self.plan.purchase_order
                self.ask(
                    "purchase order: create", "POST", "/api/external/create-purchase-order", 200, body=body
                )
        project = self.plan.project
        if project is None:
            self.run.skipped.append(
                "a financial project's budget views, snapshots and prime contract: give --project"
            )
            return
        self.ask("budget views: of the project", "GET", views, 200, query={"project_id": project})
        listed = self.ask("snapshots: of the project", "GET", snapshots, 200, query={"project_id": project})
        found = (listed or {}).get("data") if isinstance(listed, dict) else None
        if isinstance(found, list) and found and isinstance(found[0], dict):
            query = {"project_id": project, "snapshot_id": found[0].get("id")}
            self.ask("snapshot: by id", "GET", snapshot, 200, query=query)
        self.ask(
            "snapshot: unknown id",
            "GET",
            snapshot,
            404,
            query={"project_id": project, "snapshot_id": _UNKNOWN_NUMBER},
        )
        if self.plan.prime_contract is not None:
            query = {"project_id": project, "prime_contract_id": self.plan.prime_contract}
            self.ask("prime contract: by id", "GET", prime, 200, query=query)
        else:
            self.run.skipped.append("a prime contract's details: give --prime-contract")
        self.ask(
            "prime contract: unknown id",
            "GET",
            prime,
            404,
            query={"project_id": project, "prime_contract_id": _UNKNOWN_NUMBER},
        )
