"""The admin API declared once (``sowctl.operations.admin``): what is served, documented and sent
by the admin client is what is declared, and nothing of it leaks into the service's API."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from sowctl import operations
from sowctl.operations import routes
from sowctl.operations.admin import ADMIN, TAG
from sowctl.server.app import create_app
from sowctl.server.configuration import ServerSettings
from sowctl.server.http import route_path
from sowctl.server.testdouble.admin_api import HANDLERS
from sowctl.testing.admin import AdminClient
from tests.support.doubles import ADMIN as ADMIN_HEADERS
from tests.support.doubles import ADMIN_TOKEN, in_process

# The one operation the admin client does not send: POST /_admin/faults, PUT's twin.
ALIASES = {"admin.faults.set": "admin.faults.replace"}


def served_admin_routes(app: Any) -> set[tuple[str, str]]:
    return {(route.method, route.rule) for route in app.routes if route.rule.startswith("/_admin")}


def test_every_admin_route_served_is_declared_and_every_declaration_served(migrated_db_url: str) -> None:
    app = create_app(migrated_db_url, ServerSettings(admin_token=ADMIN_TOKEN))
    declared = {(op.method, route_path(op.path)) for op in ADMIN.values()}
    assert served_admin_routes(app) == declared
    assert len(declared) == len(ADMIN) == 36
    assert {route.name for route in app.routes if route.rule.startswith("/_admin")} == ADMIN.keys()
    assert app.body_limits == {
        op.path: (op.max_body_bytes, app.body_limits[op.path][1])
        for op in ADMIN.values()
        if op.max_body_bytes
    }


def test_without_an_admin_token_no_admin_route_exists(migrated_db_url: str) -> None:
    app = create_app(migrated_db_url, ServerSettings(seed=1))  # the test double, without /_admin
    assert served_admin_routes(app) == set()
    assert app.body_limits == {}


def test_every_declaration_has_its_handler_and_every_handler_its_declaration() -> None:
    assert HANDLERS.keys() == ADMIN.keys()
    for alias, operation in ALIASES.items():
        assert HANDLERS[alias] is HANDLERS[operation]
        assert (ADMIN[alias].path, ADMIN[alias].body, ADMIN[alias].response) == (
            ADMIN[operation].path,
            ADMIN[operation].body,
            ADMIN[operation].response,
        )


def test_admin_operations_are_not_the_service_s() -> None:
    registry = operations.load_all()
    assert not ADMIN.keys() & registry.keys()
    assert not [op for op in registry.values() if op.path.startswith("/_admin") or op.group == "admin"]
    assert all(op.group == "admin" and op.path.startswith("/_admin/") for op in ADMIN.values())
    # sowctl api sends an /_admin path as a path no operation declares, as before
    assert routes.match("POST", "/_admin/reset") is None


def test_admin_operations_are_no_mcp_tools() -> None:
    from sowctl.mcp import tools

    names = {spec.operation.name for spec in tools.tools(allow_writes=True)}
    assert names and not names & ADMIN.keys()


# --- the OpenAPI document ---------------------------------------------------------------------


def test_the_document_of_a_server_with_an_admin_token_lists_each_admin_operation(
    migrated_db_url: str,
) -> None:
    import openapi_spec_validator as validator

    document = in_process(migrated_db_url).get("/openapi.json").json()
    validator.validate(document)
    documented = {
        item["operationId"]: (method.upper(), path, item)
        for path, methods in document["paths"].items()
        for method, item in methods.items()
    }
    for op in ADMIN.values():
        method, path, item = documented[op.name]
        assert (method, path) == (op.method, op.path)
        assert item["tags"] == [TAG] and item["security"] == [{"adminToken": []}]
        assert str(op.status) in item["responses"] and "401" in item["responses"]
        assert ("requestBody" in item) == (op.body is not None)
    tagged = {name for name, (_, _, item) in documented.items() if TAG in item["tags"]}
    assert tagged == ADMIN.keys()
    assert TAG in [tag["name"] for tag in document["tags"]]
    assert document["components"]["securitySchemes"]["adminToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": document["components"]["securitySchemes"]["adminToken"]["description"],
    }
    verify = document["paths"]["/_admin/requests/verify"]["post"]["responses"]
    assert verify["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/VerificationReport"
    }
    dataset = document["paths"]["/_admin/dataset"]["post"]
    assert dataset["responses"]["413"]["description"] == "Request body larger than 256 MiB"
    assert [p["name"] for p in dataset["parameters"]] == ["replace"]


def test_without_an_admin_token_the_document_has_no_admin_operation(migrated_db_url: str) -> None:
    for admin_off in (
        in_process(migrated_db_url, admin=False),
        in_process(migrated_db_url, admin=False, seed=1),
    ):
        document = admin_off.get("/openapi.json").json()
        assert not [path for path in document["paths"] if path.startswith("/_admin")]
        assert TAG not in [tag["name"] for tag in document["tags"]]
        assert "adminToken" not in document["components"]["securitySchemes"]
        assert "TokenIssued" not in document["components"]["schemas"]


# --- the admin client ---------------------------------------------------------------------------


def test_the_admin_client_sends_each_declared_operation() -> None:
    sent: list[tuple[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append((request.method, request.url.path))
        found = [op for op in ADMIN.values() if _matches(op, request.method, request.url.path)]
        assert len(found) == 1, (request.method, request.url.path)
        body = {"imported": {}, "token": "t", "key": "k", "matched": 1}
        return httpx.Response(found[0].status, json=body)

    with AdminClient("http://double.test", ADMIN_TOKEN, transport=httpx.MockTransport(answer)) as admin:
        admin.reset()
        admin.load({}, replace=True)
        admin.export()
        admin.token("user", "org")
        admin.api_key("org")
        admin.faults()
        admin.set_faults(rate=1)
        admin.clear_faults()
        admin.clock()
        admin.freeze_clock(None)
        admin.set_contract_mode("report")
        admin.contract()
        admin.requests(limit=5)
        admin.pact(consumer="web", method="GET")
        admin.clear_requests()
        admin.verify("GET", "/projects")
        admin.checkpoints()
        admin.checkpoint("start")
        admin.restore("start")
        admin.delete_checkpoint("start")
        admin.create_webhook("http://127.0.0.1:9/hook", "org")
        admin.webhooks()
        admin.webhook("wh_1")
        admin.resume_webhook("wh_1")
        admin.webhook_deliveries("wh_1")
        admin.redeliver("wh_1", "evt_0000000000000001")
        admin.delete_webhook("wh_1")
        admin.set_delivery_faults({"kind": "drop", "count": 1})
        admin.delivery_faults()
        admin.clear_delivery_faults()
        admin.create_sandbox(ttl="1h", name="ci")
        admin.sandboxes()
        admin.delete_sandbox("sbx-1")
        admin.events(limit=5, type="item.*")
        assert list(admin.stream_events(organization="org")) == []  # the mock answers no event
    used = {op.name for op in ADMIN.values() for method, path in sent if _matches(op, method, path)}
    assert used == ADMIN.keys() - ALIASES.keys()


def _matches(op: operations.Operation, method: str, path: str) -> bool:
    parts, pattern = path.split("/"), op.path.split("/")
    return (
        op.method == method
        and len(parts) == len(pattern)
        and all(want.startswith("{") or want == part for want, part in zip(pattern, parts, strict=True))
    )


def test_the_admin_client_refuses_an_answer_other_than_the_declared_status() -> None:
    from sowctl.testing.admin import AdminError

    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"token": "t"}))
    with (
        AdminClient("http://double.test", ADMIN_TOKEN, transport=transport) as admin,
        pytest.raises(AdminError, match=r"POST /_admin/tokens: HTTP 200"),
    ):
        admin.token("user", "org")  # declared 201


# --- bodies validated by the declared models, worded as before ----------------------------------


@pytest.mark.parametrize(
    ("path", "body", "error"),
    [
        ("/_admin/clock", {}, 'now: is required: a timestamp such as "2026-01-01T00:00:00Z", or null'),
        ("/_admin/clock", {"now": 5}, "now: must be a timestamp string or null"),
        ("/_admin/clock", {"now": "soon"}, None),
        ("/_admin/clock", [], "the request body must be a JSON object"),
        ("/_admin/tokens", {"organizationId": "o"}, "userId: is required"),
        ("/_admin/tokens", {}, "userId: is required"),  # the first problem, as before
        ("/_admin/tokens", {"userId": None, "organizationId": "o"}, "userId: is required"),
        ("/_admin/tokens", {"userId": " ", "organizationId": "o"}, "userId: must be a non-empty string"),
        (
            "/_admin/tokens",
            {"userId": "u", "organizationId": "o", "role": 3},
            "role: must be a non-empty string",
        ),
        ("/_admin/keys", None, "the request body must be a JSON object"),
        (
            "/_admin/checkpoints",
            {},
            "name: must be 1 to 48 letters, digits, '.', '_' or '-', starting with a letter or digit",
        ),
    ],
)
def test_small_bodies_are_refused_in_the_admin_api_s_words(
    migrated_db_url: str, path: str, body: Any, error: str | None
) -> None:
    client = in_process(migrated_db_url)
    content = b"" if body is None else json.dumps(body).encode()
    response = client.post(
        path, content=content, headers={**ADMIN_HEADERS, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    if error is not None:
        assert response.json() == {"error": error}
    else:
        assert response.json()["error"].startswith("now: ")


# --- every answer is what its declaration documents ----------------------------------------------


def test_every_admin_answer_matches_its_documented_schema(migrated_db_url: str) -> None:
    import jsonschema

    from tests.support.doubles import SOW, bearer, dataset, load

    client = in_process(migrated_db_url)
    document = client.get("/openapi.json").json()
    token = load(client)["token"]
    client.get(f"/api/sows/{SOW}", headers=bearer(token))
    steps: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/_admin/dataset", {}),
        (
            "POST",
            "/_admin/tokens",
            {"json": {"userId": "user-x", "organizationId": dataset()["organizations"][0]["id"]}},
        ),
        ("POST", "/_admin/keys", {"json": {"organizationId": dataset()["organizations"][0]["id"]}}),
        ("GET", "/_admin/faults", {}),
        ("PUT", "/_admin/faults", {"json": {"latencyMs": [1, 2], "routes": ["GET /nothing"]}}),
        ("POST", "/_admin/faults", {"json": {"rate": 0.5, "count": 3, "routes": ["GET /nothing"]}}),
        ("DELETE", "/_admin/faults", {}),
        ("POST", "/_admin/clock", {"json": {"now": "2030-01-01T00:00:00Z"}}),
        ("GET", "/_admin/clock", {}),
        ("PUT", "/_admin/contract", {"json": {"mode": "report"}}),
        ("GET", "/_admin/contract", {}),
        ("GET", "/_admin/requests", {"params": {"limit": 5}}),
        ("GET", "/_admin/requests/pact", {"params": {"consumer": "web", "method": "GET"}}),
        ("POST", "/_admin/requests/verify", {"json": {"method": "GET", "path": f"/api/sows/{SOW}"}}),
        ("POST", "/_admin/requests/verify", {"json": {"path": "/api/sows/other", "exactly": 1}}),
        ("POST", "/_admin/checkpoints", {"json": {"name": "first"}}),
        ("GET", "/_admin/checkpoints", {}),
        ("POST", "/_admin/checkpoints/first/restore", {}),
        ("DELETE", "/_admin/checkpoints/first", {}),
        ("DELETE", "/_admin/requests", {}),
        *_webhook_steps(client, token),
        ("GET", "/_admin/events", {"params": {"limit": 5}}),
        ("POST", "/_admin/dataset", {"params": {"replace": "true"}, "json": dataset()}),
        ("POST", "/_admin/sandboxes", {"json": {"ttl": "1h", "name": "ci"}}),
        ("GET", "/_admin/sandboxes", {}),
        ("DELETE", "/_admin/sandboxes/{made}", {}),
        ("POST", "/_admin/reset", {}),
    ]
    answered = {_stream_documented(client, document)}
    made = ""
    for method, template, sent in steps:
        path = template.format(made=made)
        response = client.request(method, path, headers=ADMIN_HEADERS, **sent)
        if path == "/_admin/sandboxes" and method == "POST":
            made = response.json()["organizationId"]
        (op,) = [op for op in ADMIN.values() if _matches(op, method, path)]
        documented = document["paths"][op.path][method.lower()]["responses"]
        assert str(response.status_code) in documented, (op.name, response.text)
        assert response.status_code in (op.status, *op.answers), (op.name, response.text)
        schema = documented[str(response.status_code)]["content"]["application/json"]["schema"]
        root = {**schema, "components": document["components"]}
        jsonschema.Draft202012Validator(root).validate(response.json())
        _no_undocumented_fields(response.json(), schema, document)
        answered.add(op.name)
    assert answered == ADMIN.keys()


def _webhook_steps(client: httpx.Client, token: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every webhook operation, on a subscription made here and an event of its organization."""
    from tests.support.doubles import ORG, SOW, bearer

    created = client.post(
        "/_admin/webhooks",
        json={"url": "http://127.0.0.1:9/hook", "organizationId": ORG},
        headers=ADMIN_HEADERS,
    )
    assert created.status_code == 201, created.text
    hook = created.json()["id"]
    item = client.post(
        f"/api/sow/{SOW}/items", json={"title": "Hooked", "type": "requirement"}, headers=bearer(token)
    )
    assert item.status_code == 201, item.text
    event = client.get(f"/_admin/webhooks/{hook}", headers=ADMIN_HEADERS).json()["lastEventId"]
    return [
        ("POST", "/_admin/webhooks", {"json": {"url": "https://example.test/h", "organizationId": ORG}}),
        ("GET", "/_admin/webhooks", {}),
        ("GET", f"/_admin/webhooks/{hook}", {}),
        ("POST", f"/_admin/webhooks/{hook}/resume", {}),
        (
            "POST",
            f"/_admin/webhooks/{hook}/redeliver",
            {"json": {"eventId": event or "evt_0000000000000001"}},
        ),
        ("GET", f"/_admin/webhooks/{hook}/deliveries", {"params": {"limit": 5}}),
        ("DELETE", f"/_admin/webhooks/{hook}", {}),
        ("PUT", "/_admin/webhook-faults", {"json": {"rules": [{"kind": "delay", "delayMs": 5}]}}),
        ("GET", "/_admin/webhook-faults", {}),
        ("DELETE", "/_admin/webhook-faults", {}),
    ]


def _stream_documented(client: Any, document: dict[str, Any]) -> str:
    """The event stream answers its documented content type (its first line read, then closed)."""
    op = ADMIN["admin.events.stream"]
    documented = document["paths"][op.path]["get"]["responses"]["200"]["content"]
    with client.stream("GET", op.path, headers=ADMIN_HEADERS) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] in documented
        assert next(response.iter_lines()) == "retry: 1000"
    return op.name


def _no_undocumented_fields(body: Any, schema: dict[str, Any], document: dict[str, Any]) -> None:
    """Every field of an answer is one its model declares (unless the model takes any)."""
    if "items" in schema:
        for entry in body:
            _no_undocumented_fields(entry, schema["items"], document)
        return
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    model = document["components"]["schemas"].get(name, schema)
    if isinstance(body, dict) and "properties" in model and model.get("additionalProperties") is not True:
        assert set(body) <= set(model["properties"]), (name, sorted(set(body) - set(model["properties"])))
