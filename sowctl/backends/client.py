"""``sowctl.Client``: the API from Python scripts and tests, over the CLI's remote backend.

    from sowctl import Client, NotFound

    with Client("http://127.0.0.1:8000", token="sowt_...") as api:
        sow = api.sows.create(id="sow-1", projectId=project_id, title="Phase 1")
        item = api.items.create("sow-1", title="Foundations", type="requirement")
        titles = [i["title"] for i in api.items.list("sow-1")]  # every page
        try:
            api.items.get("missing")
        except NotFound:
            ...

One method per operation of the API, grouped by resource (``items``, ``sows``,
``deps``, ``chain``, ``finance``, ``projects``, ``clients``). Keyword arguments
are the API's own field and parameter names; methods return the API's JSON
(dicts and lists). Lists fetch every page. Errors are the typed exceptions of
``sowctl.foundation.errors`` (``InvalidInput`` with ``issues``, ``Unauthorized``,
``Forbidden``, ``NotFound``, ``RateLimited``, ``ServiceUnavailable``,
``RemoteError``), exactly as the CLI maps them. Group B calls (``finance``)
need ``api_key``, ``org`` and ``company``; the others need ``token``.
Safe requests are retried on 429/502/503/504 and dropped connections
(``retries``; 0 turns it off).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sowctl.backends.remote import RemoteBackend
from sowctl.backends.settings import Settings

if TYPE_CHECKING:
    import httpx

Json = Any


def _fields(body: dict[str, Any] | None, fields: dict[str, Any]) -> dict[str, Any]:
    return {**(body or {}), **fields}


def _query(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


class Client:
    """A client of a sowctl server (or the service itself) at ``server``."""

    def __init__(
        self,
        server: str,
        *,
        token: str | None = None,
        api_key: str | None = None,
        org: str | None = None,
        company: str | None = None,
        timeout: float = 10.0,
        retries: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """``transport``: an httpx transport, e.g. ``httpx.WSGITransport(app=...)`` for an in-process app."""
        # The CLI's checks: a bad URL or a credential a header cannot carry is a UsageError
        # (never an httpx error quoting the secret); a CRLF file's trailing CR is dropped.
        settings = Settings(
            server=server, token=token, api_key=api_key, org=org, company=company, timeout=timeout
        ).check()
        self._backend = RemoteBackend(settings, transport=transport)
        if retries is not None:
            self._backend.retries = max(0, retries)
        self.server = self._backend.base_url
        self.items = Items(self)
        self.sows = Sows(self)
        self.deps = Dependencies(self)
        self.chain = Chain(self)
        self.finance = Finance(self)
        self.projects = Projects(self)
        self.clients = Clients(self)

    def call(
        self,
        operation: str,
        params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
    ) -> Json:
        """Any operation by its registry name (``"items.create"``); what the methods use."""
        return self._backend.call(operation, params, query, body)

    def close(self) -> None:
        self._backend.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self._backend.shown_url!r})"


class _Resource:
    def __init__(self, client: Client) -> None:
        self._client = client

    def _call(
        self, name: str, params: dict[str, str] | None = None, query: Any = None, body: Any = None
    ) -> Json:
        return self._client.call(name, params, query, body)


class Items(_Resource):
    def list(self, sow_id: str, *, type: str | None = None, parent_id: str | None = None) -> list[Json]:
        return self._call("items.list", {"sowId": sow_id}, _query({"type": type, "parentId": parent_id}))

    def get(self, item_id: str) -> Json:
        return self._call("items.get", {"itemId": item_id})

    def create(self, sow_id: str, body: dict[str, Any] | None = None, **fields: Any) -> Json:
        return self._call("items.create", {"sowId": sow_id}, body=_fields(body, fields))

    def update(self, item_id: str, body: dict[str, Any] | None = None, **fields: Any) -> Json:
        return self._call("items.update", {"itemId": item_id}, body=_fields(body, fields))

    def delete(self, item_id: str) -> Json:
        return self._call("items.delete", {"itemId": item_id})

    def reorder(self, sow_id: str, body: dict[str, Any] | None = None, **fields: Any) -> Json:
        return self._call("items.reorder", {"sowId": sow_id}, body=_fields(body, fields))


class Sows(_Resource):
    def list(self, *, project_id: str | None = None) -> list[Json]:
        return self._call("sows.list", query=_query({"projectId": project_id}))

    def create(self, body: dict[str, Any] | None = None, **fields: Any) -> Json:
        return self._call("sows.create", body=_fields(body, fields))


class Dependencies(_Resource):
    def list(
        self,
        *,
        sow_id: str | None = None,
        item_id: str | None = None,
        status: str | None = None,
        type: str | None = None,
    ) -> list[Json]:
        query = _query({"sowId": sow_id, "itemId": item_id, "status": status, "type": type})
        return self._call("deps.list", query=query)

    def get(self, dependency_id: str) -> Json:
        return self._call("deps.get", {"dependencyId": dependency_id})

    def create(self, body: dict[str, Any] | None = None, **fields: Any) -> Json:
        return self._call("deps.create", body=_fields(body, fields))

    def update(self, dependency_id: str, body: dict[str, Any] | None = None, **fields: Any) -> Json:
        return self._call("deps.update", {"dependencyId": dependency_id}, body=_fields(body, fields))

    def delete(self, dependency_id: str) -> Json:
        return self._call("deps.delete", {"dependencyId": dependency_id})


class Chain(_Resource):
    def get(self, sow_id: str, *, format: str | None = None, include: str | None = None) -> Json:
        return self._call("chain.get", query=_query({"sowId": sow_id, "format": format, "include": include}))


class Finance(_Resource):
    """Group B: needs ``api_key``, ``org`` and ``company``; counts against the rate limit."""

    def create_purchase_order(self, body: dict[str, Any] | None = None, **fields: Any) -> Json:
        return self._call("finance.create_po", body=_fields(body, fields))

    def purchase_orders(self, project_id: str | int) -> Json:
        return self._call("finance.list_pos", query={"project_id": project_id})

    def budget_views(self, project_id: str | int) -> Json:
        return self._call("finance.budget_views", query={"project_id": project_id})

    def snapshots(self, project_id: str | int) -> Json:
        return self._call("finance.snapshots", query={"project_id": project_id})

    def snapshot(self, project_id: str | int, snapshot_id: str | int) -> Json:
        return self._call("finance.snapshot", query={"project_id": project_id, "snapshot_id": snapshot_id})

    def prime_contract(self, project_id: str | int, prime_contract_id: str | int) -> Json:
        query = {"project_id": project_id, "prime_contract_id": prime_contract_id}
        return self._call("finance.prime_contract", query=query)


class Projects(_Resource):
    def list(self, *, status: str | None = None, client_id: str | None = None) -> Json:
        return self._call("projects.list", query=_query({"status": status, "clientId": client_id}))


class Clients(_Resource):
    def list(self) -> Json:
        return self._call("clients.list")
