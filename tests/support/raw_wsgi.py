"""A client that calls the WSGI app exactly as a WSGI server does (a PEP 3333 environ, no
httpx): ``PATH_INFO`` as latin-1 decoded bytes, as the engine hands it over, so raw paths such
as ``../`` or invalid UTF-8 reach the server unnormalised. ``make_env`` loads the demo dataset
and makes a member token and an API key; ``Env.send(op)`` sends an operation's valid request
(``VALID_QUERY`` / ``VALID_BODY``) with parts of it replaced. ``dump`` is the whole database as
text, to show a refused request changed nothing.
"""

from __future__ import annotations

import datetime
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urlencode

from sowctl import operations
from sowctl.operations import Operation
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.services import credentials, demo_data
from sowctl.services.dataset import import_dataset
from sowctl.storage import models as m
from tests.support.templates import seeded

OPS = sorted(operations.load_all().values(), key=lambda op: op.name)


def ids(op: Operation) -> str:
    """A test id: the operation's name."""
    return op.name


def query_params(op: Operation) -> list[str]:
    """The query parameters ``op`` takes, by their names on the wire."""
    names = [info.alias or name for name, info in (op.query.model_fields if op.query else {}).items()]
    if op.paginated:
        names += ["page", "limit"]
    return names


LEAF_ITEM = "item-002"  # a task item of DEMO_SOW without children
OTHER_LEAF = "item-003"
PARAM_IDS = {"sowId": demo_data.DEMO_SOW, "itemId": LEAF_ITEM, "dependencyId": "dep-001"}
PROJECT = str(demo_data.DEMO_PROJECT_ID)
VALID_QUERY: dict[str, dict[str, str]] = {
    "chain.get": {"sowId": demo_data.DEMO_SOW},
    "finance.budget_views": {"project_id": PROJECT},
    "finance.snapshots": {"project_id": PROJECT},
    "finance.snapshot": {"project_id": PROJECT, "snapshot_id": "21"},
    "finance.prime_contract": {"project_id": PROJECT, "prime_contract_id": "31"},
    "finance.list_pos": {"project_id": PROJECT},
    "finance.po_options": {"project_id": PROJECT},
}
VALID_BODY: dict[str, dict[str, Any]] = {
    "items.create": {"title": "New task", "type": "task_item"},
    "items.update": {"title": "Renamed"},
    "items.reorder": {"items": [{"id": LEAF_ITEM, "orderIndex": 3}]},
    "deps.create": {
        "sourceItemId": LEAF_ITEM,
        "targetItemId": OTHER_LEAF,
        "dependencyType": "related_to",
        "riskLevel": "low",
    },
    "deps.update": {"notes": "checked"},
    "sows.create": {"title": "Phase 9", "projectId": demo_data.PROJECT_TOWER_A},
    "sows.update": {"title": "Phase 9"},
    "finance.create_po": {
        "project_id": str(demo_data.DEMO_PROJECT_ID),
        "commitment_id": "5001",
        "title": "Anchor bolts",
        "vendor_id": 7,
        "status": "draft",
        "line_items": [{"description": "Bolts", "amount": "120.50", "cost_code_id": 3}],
    },
}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Env:
    app: Any
    token: str
    api_key: str
    errors: io.StringIO = field(default_factory=io.StringIO)

    def call(
        self,
        method: str,
        raw_path: str,
        query: str = "",
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        chunked: bool = False,
    ) -> Reply:
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote_to_bytes(raw_path).decode("latin-1"),
            "QUERY_STRING": query,
            "SERVER_NAME": "test",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body or b""),
            "wsgi.errors": self.errors,
            "wsgi.multithread": False,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        if body is not None and not chunked:
            environ["CONTENT_LENGTH"] = str(len(body))
        if chunked:
            environ["HTTP_TRANSFER_ENCODING"] = "chunked"
        for name, value in (headers or {}).items():
            key = name.upper().replace("-", "_")
            if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                environ[key] = value
            else:
                environ["HTTP_" + key] = value
        seen: dict[str, Any] = {}

        def start_response(status: str, response_headers: list, exc_info: Any = None) -> None:
            seen["status"] = int(status.split(" ", 1)[0])
            seen["headers"] = {name.lower(): value for name, value in response_headers}

        result = self.app(environ, start_response)
        try:
            pieces: list[bytes] = []
            for piece in result:
                pieces.append(piece)
                # An event stream answers for minutes: its first piece says what it is.
                if piece and seen["headers"].get("content-type", "").startswith("text/event-stream"):
                    break
            payload = b"".join(pieces)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return Reply(seen["status"], seen["headers"], payload)

    def auth(self, op: Operation) -> dict[str, str]:
        if op.group == "B":
            names = (
                ("organization-id", "company-id")
                if op.path == "/api/external/create-purchase-order"
                else ("x-organization-id", "x-company-id")
            )
            return {"x-api-key": self.api_key, names[0]: demo_data.DEMO_ORG, names[1]: demo_data.DEMO_COMPANY}
        return {"Authorization": f"Bearer {self.token}"}

    def send(
        self,
        op: Operation,
        *,
        params: dict[str, str] | None = None,
        query: dict[str, str] | str | None = None,
        body: Any = ...,
        raw: bytes | None = None,
        content_type: str | None = "application/json",
        headers: dict[str, str] | None = None,
        chunked: bool = False,
    ) -> Reply:
        """``op`` with its valid request, parts of it replaced."""
        path = op.path
        for name in op.path_params:
            value = (params or {}).get(name, quote(PARAM_IDS[name], safe=""))
            path = path.replace("{" + name + "}", value)
        if query is None:
            query = VALID_QUERY.get(op.name, {})
        query_string = query if isinstance(query, str) else urlencode(query)
        if raw is None and op.body is not None:
            payload = VALID_BODY[op.name] if body is ... else body
            raw = json.dumps(payload).encode("ascii")  # \uXXXX escapes: lone surrogates too
        all_headers = {**self.auth(op), **(headers or {})}
        if raw is not None and content_type is not None:
            all_headers["Content-Type"] = content_type
        return self.call(op.method, path, query_string, raw, all_headers, chunked)


def dump() -> str:
    """Every row of every table except the rate counters (a Group B request counts even
    when its input is bad): equal databases give equal text. The rows are read as stored,
    without the models' conversions (which cost most of the time of a bad-input test): a
    change that a conversion would hide shows too."""
    database = m.database_proxy.obj
    tables = {}
    for model in m.ALL_MODELS:
        if model is not m.RateCounter:
            table = model._meta.table_name
            rows = database.execute_sql(f'SELECT * FROM "{table}"').fetchall()
            tables[table] = sorted(repr(tuple(row)) for row in rows)
    return json.dumps(tables, sort_keys=True)


def make_env(db_url: str) -> Env:
    settings = ServerSettings(rate_per_minute=10**6, rate_per_day=10**7, access_log=False)
    app = create_app(db_url, settings)
    token, key = seeded("demo-env", _demo_with_secrets)  # on SQLite, a copy made once per process
    return Env(app, token, key)


def _demo_with_secrets() -> tuple[str, str]:
    import_dataset(demo_data.demo_dataset(datetime.date.today()))
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "member").secret
    return token, credentials.create_key(demo_data.DEMO_ORG).secret


def start_get(
    app: Any, url: str, headers: dict[str, str], errors: io.StringIO | None = None
) -> tuple[Iterator[bytes], tuple[str, list], Callable[[], None]]:
    """GET ``url`` from ``app`` as a WSGI server does, without reading the body:
    (body iterator, (status, headers), the body's close); the server's log goes to ``errors``."""
    path, _, query = url.partition("?")
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "test",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": errors if errors is not None else io.StringIO(),
        **{"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()},
    }
    seen: list[tuple[str, list]] = []
    body = app(environ, lambda status, headers, exc_info=None: seen.append((status, headers)))
    return iter(body), seen[0], getattr(body, "close", lambda: None)
