"""Bad input on every route and on the CLI: a 4xx in the group's envelope (exit 2/3), never a
500 or a traceback, and the database left exactly as it was.

Every registered operation (``operations.load_all()``) is covered, so a new route is
tested as soon as it exists; the only per-route knowledge is a valid request
(``VALID_QUERY`` / ``VALID_BODY``), and a test fails when a route lacks one. Requests
go straight to the WSGI app with a PEP 3333 environ (``PATH_INFO`` as latin-1 decoded
bytes, exactly as the engine hands it over), so raw paths such as ``../`` or invalid
UTF-8 reach the server unnormalised.

Decisions pinned here:

* ids in the path: anything that names no record (``../../etc/passwd``, encoded
  slashes, NUL, 5,000 characters) is a 404 in the group's envelope; a path that is not
  UTF-8 is a 400 saying so, as a query string that is not;
* text fields: at most 10,000 characters for titles and names, 100,000 for
  descriptions and notes; longer is a 400 naming the field; id references have no
  length limit of their own and a long one is simply not found (404); a body above
  1 MiB is a 413 before it is read;
* NUL characters and unpaired surrogates are refused with 400 on every backend
  (PostgreSQL cannot store NUL); other control and unicode characters, quotes and
  SQL metacharacters are stored verbatim;
* numbers: negative, beyond the column's range, non-integer, 1e309 or a string of
  digits where a JSON number is expected are 400; Group A/C page sizes above the
  maximum are clamped (200).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from sowctl import operations
from sowctl.operations import Operation
from sowctl.services import demo_data
from sowctl.services.dataset import import_dataset
from sowctl.storage import models as m
from tests.support.raw_wsgi import (
    LEAF_ITEM,
    OPS,
    OTHER_LEAF,
    PARAM_IDS,
    VALID_BODY,
    VALID_QUERY,
    Env,
    Reply,
    dump,
    ids,
    make_env,
    query_params,
)
from tests.support.templates import seeded

pytestmark = pytest.mark.database  # refusals leave the database as it was, on each backend

MIB = 1024 * 1024

NUMERIC_QUERY = {"page", "limit", "offset", "project_id", "snapshot_id", "prime_contract_id"}
CLAMPED_QUERY = {"limit", "offset"}  # huge: clamped (limit) or past the end (offset), not refused
ENUM_QUERY = {"type", "status", "format"}


@pytest.fixture
def env(migrated_db_url: str) -> Iterator[Env]:
    yield make_env(migrated_db_url)
    m.database_proxy.obj.close()


def assert_refused(reply: Reply, op_or_group: Operation | str, statuses: set[int], before: str) -> None:
    """A 4xx from ``statuses`` in the group's envelope, with nothing changed."""
    group = op_or_group if isinstance(op_or_group, str) else op_or_group.group
    assert reply.status in statuses, (reply.status, reply.body[:300])
    assert reply.headers["content-type"] == "application/json", reply.headers
    assert b"Traceback" not in reply.body
    body = reply.json()
    if group == "C":
        assert set(body) == {"code", "message", "issues"}, body
        assert body["issues"] and all(set(issue) == {"path", "message"} for issue in body["issues"])
    else:
        assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"], body
    assert dump() == before, "a refused request changed the database"


BODY_OPS = [op for op in OPS if op.body is not None]
PATH_OPS = [op for op in OPS if op.path_params]
QUERY_OPS = [op for op in OPS if op.query is not None or op.paginated]


# --- the valid requests are valid (so every refusal below is the mutation's doing) ------


def test_every_route_has_a_valid_request() -> None:
    for op in OPS:
        assert all(name in PARAM_IDS for name in op.path_params), f"{op.name}: add its path ids"
        if op.body is not None:
            assert op.name in VALID_BODY, f"{op.name}: add a valid body to VALID_BODY"
        required = [
            info.alias or name
            for name, info in (op.query.model_fields if op.query else {}).items()
            if info.is_required()
        ]
        assert all(name in VALID_QUERY.get(op.name, {}) for name in required), f"{op.name}: VALID_QUERY"


@pytest.mark.parametrize("op", OPS, ids=ids)
def test_the_valid_request_succeeds(env: Env, op: Operation) -> None:
    reply = env.send(op)
    assert reply.status == op.status, reply.body[:300]


# --- ids in the path ---------------------------------------------------------------------

ODD_IDS = [
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%2e%2e",
    "..",
    "item-002%2F..%2F..",
    "%00",
    "item-002%00",
    "%E2%80%AE",
    "%27%20OR%20%271%27%3D%271",
    "x" * 5000,
    "%20",
]


@pytest.mark.parametrize("op", PATH_OPS, ids=ids)
def test_odd_ids_in_the_path_are_not_found(env: Env, op: Operation) -> None:
    before = dump()
    for name in op.path_params:
        for odd in ODD_IDS:
            reply = env.send(op, params={name: odd})
            assert_refused(reply, op, {404}, before)


NOT_UTF8 = [
    "%ff",
    "a%ffb",  # Bottle would drop the byte and read item "ab"
    "%ff%fe",
    "%C0%AE%C0%AE",  # overlong UTF-8 dots
    "%ED%A0%80",  # a UTF-8 encoded surrogate
]


@pytest.mark.parametrize("op", PATH_OPS, ids=ids)
def test_a_path_that_is_not_utf8_is_a_400_saying_so(env: Env, op: Operation) -> None:
    before = dump()
    for name in op.path_params:
        for odd in NOT_UTF8:
            reply = env.send(op, params={name: odd})
            assert_refused(reply, op, {400}, before)
            message = reply.json()["message" if op.group == "C" else "error"]
            assert message == "path is not valid UTF-8", message


@pytest.mark.parametrize(
    ("path", "group"), [("/api/nothing/%ff", "A"), ("/projects%ff", "C"), ("/x%ff", "A")]
)
def test_an_unrouted_path_that_is_not_utf8_is_a_400_too(env: Env, path: str, group: str) -> None:
    reply = env.call("GET", path, headers={"Authorization": f"Bearer {env.token}"})
    assert_refused(reply, group, {400}, dump())
    assert b"path is not valid UTF-8" in reply.body


@pytest.mark.parametrize(
    "raw_path", ["/api/../projects", "/api/items/../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/api%00"]
)
def test_traversal_outside_any_route_is_a_404(env: Env, raw_path: str) -> None:
    before = dump()
    reply = env.call("GET", raw_path, headers={"Authorization": f"Bearer {env.token}"})
    assert_refused(reply, "A", {404}, before)


# --- query parameters -----------------------------------------------------------------------


@pytest.mark.parametrize("op", QUERY_OPS, ids=ids)
def test_bad_query_values_are_refused(env: Env, op: Operation) -> None:
    before = dump()
    for name in query_params(op):
        valid = VALID_QUERY.get(op.name, {})
        cases: list[tuple[str, set[int]]] = [("\x00", {400}), ("a\x00", {400})]
        if name in NUMERIC_QUERY:
            cases += [(v, {400}) for v in ("-1", "abc", "1e309", "1.5", "0x10", "\uff11\uff12", " ")]
            if name not in CLAMPED_QUERY:
                cases += [("9" * 30, {400}), ("9" * 5000, {400})]
        elif name in ENUM_QUERY:
            cases += [("bogus", {400}), ("", {400}), ("ACTIVE", {400})]
        for value, statuses in cases:
            reply = env.send(op, query={**valid, name: value})
            assert_refused(reply, op, statuses, before)
        # the same parameter twice is ambiguous: refused
        doubled = urlencode({**valid, name: valid.get(name, "1")}) + "&" + urlencode({name: "2"})
        assert_refused(env.send(op, query=doubled), op, {400}, before)


@pytest.mark.parametrize("op", QUERY_OPS, ids=ids)
def test_odd_text_in_query_filters_is_harmless(env: Env, op: Operation) -> None:
    """Free-text filters (ids) with quotes, SQL, traversal or unicode: a plain no-match."""
    before = dump()
    valid = VALID_QUERY.get(op.name, {})
    for name in query_params(op):
        if name in NUMERIC_QUERY or name in ENUM_QUERY:
            continue
        for value in ("' OR '1'='1", "../../etc/passwd", "%", "_", "\u202e\U0001f600", "x" * 5000):
            reply = env.send(op, query={**valid, name: value})
            assert reply.status in (200, 400, 404), reply.body[:300]
            if reply.status == 200 and name != "clientId":
                body = reply.json()
                records = body if isinstance(body, list) else body.get("dependencies") or body.get("items")
                assert not records, f"{name}={value!r} matched records"
            assert dump() == before


@pytest.mark.parametrize("name", ["limit", "offset"])
def test_group_c_page_values_must_be_digits(env: Env, name: str) -> None:
    op = operations.get("projects.list")
    before = dump()
    for value in ("-1", "1e3", "abc", "", "1.0", "+5"):
        assert_refused(env.send(op, query={name: value}), op, {400}, before)
    assert env.send(op, query={name: "9" * 30}).status == 200  # clamped / past the end


# --- the body as a whole -----------------------------------------------------------------------


def too_long_integer(op: Operation) -> bytes:
    """The valid body with its first field a 5,000-digit integer (an unknown field is ignored)."""
    body = {**VALID_BODY[op.name], next(iter(VALID_BODY[op.name])): "@NUMBER@"}
    return json.dumps(body).replace('"@NUMBER@"', "9" * 5000).encode()


@pytest.mark.parametrize("op", BODY_OPS, ids=ids)
def test_malformed_bodies_are_refused(env: Env, op: Operation) -> None:
    before = dump()
    valid = json.dumps(VALID_BODY[op.name]).encode()
    cases: list[tuple[dict, set[int]]] = [
        ({"raw": b""}, {400}),  # missing body
        ({"raw": b"   \n"}, {400}),
        ({"raw": b"null"}, {400}),
        ({"raw": b"[]"}, {400}),
        ({"raw": b'"text"'}, {400}),
        ({"raw": b"42"}, {400}),
        ({"raw": b"{"}, {400}),
        ({"raw": valid[:-1]}, {400}),
        ({"raw": b"{'title': 'x'}"}, {400}),
        ({"raw": b'{"a": NaN}'}, {400}),
        ({"raw": b'{"a": Infinity}'}, {400}),
        ({"raw": b"\xff\xfe{}"}, {400}),  # not UTF-8
        ({"raw": b"[" * 100_000}, {400}),  # nested too deeply
        ({"raw": too_long_integer(op)}, {400}),  # valid JSON, but more digits than Python converts
        ({"raw": valid[:-1] + b', "' + next(iter(VALID_BODY[op.name])).encode() + b'": 1}'}, {400}),
        ({"raw": valid, "content_type": "text/plain"}, {400}),
        ({"raw": valid, "content_type": "application/x-www-form-urlencoded"}, {400}),
        ({"raw": valid, "content_type": "multipart/form-data; boundary=x"}, {400}),
        ({"raw": valid, "content_type": "application/xml"}, {400}),
        ({"raw": b'{"title": "' + b"x" * MIB + b'"}'}, {413}),
        ({"raw": b'{"title": "' + b"x" * MIB + b'"}', "chunked": True}, {413}),
        ({"raw": b"x" * (MIB + 1), "content_type": "text/plain"}, {413}),
    ]
    for kwargs, statuses in cases:
        reply = env.send(op, **kwargs)
        assert_refused(reply, op, statuses, before)
    # a Content-Length header that is not a number, or is absurd
    for length, statuses in (("12abc", {400}), ("\u00b2", {400}), ("-1", {400}), ("9" * 5000, {413})):
        reply = env.send(op, raw=valid, headers={"Content-Length": length})
        assert_refused(reply, op, statuses, before)


def test_a_body_without_content_type_is_read_as_json(env: Env) -> None:
    op = operations.get("items.create")
    assert env.send(op, content_type=None).status == 201


# --- every field of every body ---------------------------------------------------------------


def body_fields(op: Operation) -> dict[str, dict]:
    """Top-level fields of the body model, with their JSON schema (null branch removed)."""
    schema = op.body.model_json_schema(by_alias=True)
    fields = {}
    for name, prop in schema.get("properties", {}).items():
        options = [p for p in prop.get("anyOf", [prop]) if p != {"type": "null"}]
        fields[name] = {**prop, **options[0]} if len(options) == 1 else {**prop, "anyOf": options}
    return fields


def wrong_values(prop: dict, name: str = "") -> list[tuple[Any, set[int]]]:
    """Values of the wrong kind for a field with this schema, and the statuses allowed."""
    kind = prop.get("type")
    if "enum" in prop or "const" in prop:
        return [("bogus", {400}), ("", {400}), (1, {400}), ([], {400}), ({}, {400})]
    if kind == "string":
        values: list[tuple[Any, set[int]]] = [(1, {400}), (True, {400}), ([], {400}), ({}, {400})]
        if "maxLength" in prop:
            values.append(("y" * 900_000, {400}))
        else:  # an id reference: too long to exist
            values.append(("y" * 900_000, {400, 404}))
        # "" is a valid description or note, not a valid title or id: never a 500 either way
        return [*values, ("\x00", {400}), ("a\x00b", {400}), ("\ud800", {400}), ("", {200, 201, 400, 404})]
    if kind == "integer":
        return [
            ("1", {400}),  # the spec types it as a number: a string is the wrong JSON type
            (1.5, {400}),
            (True, {400}),
            (-1, {400}),
            (2**63, {400}),
            (10**30, {400}),
            (None, {400}),  # null is not a number; a field is left out to give no value
            ([], {400}),
        ]
    if kind == "number":
        return [("abc", {400}), ("2", {400}), (True, {400}), (-1, {400}), ([], {400}), (None, {400})]
    if kind == "boolean":
        return [("true", {400}), (1, {400}), ([], {400})]
    if kind == "array":
        return [("x", {400}), ({}, {400}), (1, {400}), ([], {400}), (["x"], {400}), ([None], {400})]
    # unions and nested objects
    return [(True, {400}), ([], {400}), ({}, {400}), (-1, {400}), ("abc", {400}), (1.5, {400})]


@pytest.mark.parametrize("op", BODY_OPS, ids=ids)
def test_every_body_field_refuses_wrong_values(env: Env, op: Operation) -> None:
    before = dump()
    for name, prop in body_fields(op).items():
        for value, statuses in wrong_values(prop, name):
            reply = env.send(op, body={**VALID_BODY[op.name], name: value})
            if reply.status < 400 and reply.status in statuses:  # an allowed value after all
                before = dump()
                continue
            try:
                assert_refused(reply, op, statuses, before)
            except AssertionError as exc:
                raise AssertionError(f"{op.name} {name}={str(value)[:40]!r}: {exc}") from None
            if reply.status == 400 and op.group == "C":
                continue
            if reply.status == 400 and len(str(value)) < 1000:
                # the message names the field (or, for a cross-field rule, the other one)
                assert name in reply.json()["error"] or "items" in reply.json()["error"], reply.json()


@pytest.mark.parametrize("raw_number", [b"1e309", b"-1e309", b"1E400", b"9223372036854775808", b"-1", b"0.5"])
def test_out_of_range_numbers_in_raw_json_are_400(env: Env, raw_number: bytes) -> None:
    before = dump()
    for op_name, template in (
        ("items.create", b'{"title": "t", "type": "task_item", "orderIndex": %s}'),
        ("items.update", b'{"orderIndex": %s}'),
        ("items.reorder", b'{"items": [{"id": "item-002", "orderIndex": %s}]}'),
        ("finance.create_po", None),
    ):
        op = operations.get(op_name)
        if template is None:
            body = json.dumps({**VALID_BODY[op_name], "vendor_id": 123456789}).encode()
            raw = body.replace(b"123456789", raw_number)
        else:
            raw = template % raw_number
        assert_refused(env.send(op, raw=raw), op, {400}, before)


@pytest.mark.parametrize(
    "amount",
    [
        *("-1.00", "1e309", "NaN", "Infinity", "1,000.00", "12.345678", "9" * 40, "", " 1", "0x10", 12.5),
        *("\uff11\uff12", "\u0661\u0662.\u0665\u0660", "12\n", "1_000", "+1"),  # fullwidth, Arabic-Indic
    ],
)
def test_bad_money_is_refused(env: Env, amount: Any) -> None:
    op = operations.get("finance.create_po")
    before = dump()
    line = {"description": "Bolts", "amount": amount, "cost_code_id": 3}
    reply = env.send(op, body={**VALID_BODY[op.name], "line_items": [line]})
    assert_refused(reply, op, {400}, before)
    assert "line_items[0].amount" in reply.json()["error"]


def test_a_900_kb_title_is_400_and_a_1_mb_one_is_413(env: Env) -> None:
    op = operations.get("items.create")
    before = dump()
    reply = env.send(op, body={"title": "t" * 900_000, "type": "task_item"})
    assert_refused(reply, op, {400}, before)
    assert reply.json()["error"].startswith("title: ")
    reply = env.send(op, body={"title": "t" * (MIB + 1), "type": "task_item"})
    assert_refused(reply, op, {413}, before)
    assert env.send(op, body={"title": "t" * 10_000, "type": "task_item"}).status == 201


# --- text that is valid: stored verbatim, no effect ---------------------------------------------

ODD_TEXT = [
    "'; DROP TABLE item; --",
    'Robert"); DELETE FROM dependency WHERE ("1"="1',
    "%s %d {0} {title} $1 ?",
    "\\x00 is not a NUL, \\u0000 neither",
    "tab\there\nnew line\r\n",
    "\x01\x07\x1b[31mred\x1b[0m\x7f",
    "\u202eright-to-left\u202c \u200b zero width",
    "emoji \U0001f3d7\ufe0f and e\u0301 combined",
    "\ufeffBOM \ufffd replacement",
    "<script>alert(1)</script>",
    "../../etc/passwd",
]


@pytest.mark.parametrize("text", ODD_TEXT)
def test_odd_text_is_stored_verbatim(env: Env, text: str) -> None:
    counts = {model: model.select().count() for model in (m.Item, m.Dependency, m.Sow, m.PurchaseOrder)}
    created = env.send(
        operations.get("items.create"), body={"title": text, "description": text, "type": "task_item"}
    )
    assert created.status == 201, created.body
    item = created.json()
    fetched = env.send(operations.get("items.get"), params={"itemId": item["id"]}).json()
    assert (fetched["title"], fetched["description"]) == (text, text)
    dep = env.send(
        operations.get("deps.create"),
        body={**VALID_BODY["deps.create"], "notes": text, "vendor": text, "externalOwner": text},
    )
    assert dep.status == 201 and dep.json()["notes"] == text
    order = env.send(
        operations.get("finance.create_po"), body={**VALID_BODY["finance.create_po"], "title": text}
    )
    assert order.status == 200 and order.json()["title"] == text
    after = {model: model.select().count() for model in counts}
    assert after == {model: count + (0 if model is m.Sow else 1) for model, count in counts.items()}


# --- Group B scope headers -------------------------------------------------------------------


@pytest.mark.parametrize(
    "organization, company, statuses",
    [
        ("", demo_data.DEMO_COMPANY, {400}),
        (demo_data.DEMO_ORG, "", {400}),
        ("../org-acme", demo_data.DEMO_COMPANY, {404}),
        (demo_data.DEMO_ORG, "' OR '1'='1", {404}),
        (demo_data.DEMO_ORG, "comp\x00", {404}),
        (demo_data.DEMO_ORG, "x" * 8000, {404}),
        (demo_data.GLOBEX_ORG, demo_data.GLOBEX_COMPANY, {404}),
        (demo_data.DEMO_ORG, demo_data.GLOBEX_COMPANY, {404}),
        ("ÿ\x80", "ÿ\x80", {404}),
    ],
)
def test_bad_scope_headers_are_refused(env: Env, organization: str, company: str, statuses: set[int]) -> None:
    before = dump()
    for op in (op for op in OPS if op.group == "B"):
        names = (
            ("organization-id", "company-id")
            if "create-purchase" in op.path
            else ("x-organization-id", "x-company-id")
        )
        reply = env.send(op, headers={names[0]: organization, names[1]: company})
        assert_refused(reply, op, statuses, before)


# --- the CLI ---------------------------------------------------------------------------------


@pytest.fixture
def demo_cli(cli, migrated_db_url: str):
    from sowctl.storage.database import open_database

    database = open_database(migrated_db_url)
    seeded("demo", lambda: import_dataset(demo_data.demo_dataset(datetime.date.today())))
    yield cli
    database.close()


SOW = demo_data.DEMO_SOW
CLI_CASES = [
    (["items", "create", SOW, "--title", ""], 2),
    (["items", "create", SOW, "--title", "   "], 2),
    (["items", "create", SOW, "--title", "t", "--type", "epic"], 2),
    (["items", "create", SOW, "--title", "t", "--order-index", "-1"], 2),
    (["items", "create", SOW, "--title", "t", "--order-index", str(2**63)], 2),
    (["items", "create", SOW, "--title", "t", "--order-index", "1e309"], 2),
    (["items", "create", SOW, "--title", "t", "--order-index", "abc"], 2),
    (["items", "create", SOW, "--title", "t" * 900_000], 2),
    (["items", "create", SOW, "--title", "a\udc80b"], 2),
    (["items", "create", SOW, "--title", "t", "--parent", "item-001/../item-002"], 3),
    (["items", "create", "../../etc/passwd", "--title", "t"], 3),
    (["items", "get", "../../etc/passwd"], 3),
    (["items", "get", "x" * 5000], 3),
    (["items", "update", LEAF_ITEM, "--status", "done"], 2),
    (["items", "update", LEAF_ITEM, "--title", ""], 2),
    (["items", "update", LEAF_ITEM, "--order-index", "-5"], 2),
    (["items", "delete", "' OR '1'='1"], 3),
    (["items", "list", SOW, "--type", "epic"], 2),
    (
        [
            "deps",
            "create",
            "--source",
            LEAF_ITEM,
            "--target",
            LEAF_ITEM,
            "--type",
            "depends_on",
            "--risk",
            "low",
        ],
        2,
    ),
    (
        [
            "deps",
            "create",
            "--source",
            LEAF_ITEM,
            "--target",
            OTHER_LEAF,
            "--type",
            "causes",
            "--risk",
            "low",
        ],
        2,
    ),
    (
        [
            "deps",
            "create",
            "--source",
            LEAF_ITEM,
            "--target",
            OTHER_LEAF,
            "--risk",
            "extreme",
            "--type",
            "depends_on",
        ],
        2,
    ),
    (
        [
            "deps",
            "create",
            "--source",
            LEAF_ITEM,
            "--target",
            OTHER_LEAF,
            "--sla",
            "2026-13-01",
            "--type",
            "depends_on",
            "--risk",
            "low",
        ],
        2,
    ),
    (
        [
            "deps",
            "create",
            "--source",
            LEAF_ITEM,
            "--target",
            OTHER_LEAF,
            "--sla",
            "tomorrow",
            "--type",
            "depends_on",
            "--risk",
            "low",
        ],
        2,
    ),
    (
        [
            "deps",
            "create",
            "--source",
            LEAF_ITEM,
            "--external",
            "V",
            "--email",
            "not-an-email",
            "--type",
            "depends_on",
            "--risk",
            "low",
        ],
        2,
    ),
    (
        [
            "deps",
            "create",
            "--source",
            LEAF_ITEM,
            "--target",
            "../../x",
            "--type",
            "depends_on",
            "--risk",
            "low",
        ],
        3,
    ),
    (["deps", "update", "dep-001", "--status", "open"], 2),
    (["deps", "list", "--status", "bogus"], 2),
    (["deps", "list", "--type", "bogus"], 2),
    (["chain", "show", "../../etc/passwd"], 3),
    (
        [
            "po",
            "create",
            "--project",
            "abc",
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "7",
            "--line",
            "Bolts:10.00:3",
        ],
        3,  # a string naming no project: not found, and nothing written
    ),
    (
        [
            "po",
            "create",
            "--project",
            "101",
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "-1",
            "--line",
            "Bolts:10.00:3",
        ],
        2,
    ),
    (
        [
            "po",
            "create",
            "--project",
            "101",
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "7",
            "--line",
            "Bolts:-10.00:3",
        ],
        2,
    ),
    (
        [
            "po",
            "create",
            "--project",
            "101",
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "7",
            "--line",
            "Bolts:1e309:3",
        ],
        2,
    ),
    (
        [
            "po",
            "create",
            "--project",
            "101",
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "7",
            "--line",
            "no-colons",
        ],
        2,
    ),
    (
        [
            "po",
            "create",
            "--project",
            str(2**63),
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "7",
            "--line",
            "Bolts:10.00:3",
        ],
        3,  # a string naming no project: not found, and nothing written
    ),
    (
        [
            "po",
            "create",
            "--project",
            "101",
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "7",
            "--line",
            "Bolts:10.00:\u00b2",
        ],
        2,
    ),
    (
        [
            "po",
            "create",
            "--project",
            "101",
            "--commitment",
            "5001",
            "--title",
            "t",
            "--vendor",
            "7",
            "--line",
            "Bolts:\u0661\u0662:3",
        ],
        2,
    ),
    (["budgets", "views", "--project", "-1"], 2),
    (["budgets", "snapshot", "--project", "101", "21x"], 2),
    (["projects", "list", "--limit", "-1"], 2),
    (["sows", "create", ""], 2),
    (["sows", "create", "t", "--id", "s" * 65], 2),
    (["tokens", "create", "--user", "u" * 65, "--org", demo_data.DEMO_ORG], 2),
    (["tokens", "create", "--user", "u", "--org", demo_data.DEMO_ORG, "--role", "root"], 2),
    (["tokens", "create", "--user", "u", "--org", "../org-acme"], 3),
    (["keys", "create", "--org", "x" * 5000], 3),
    (["tokens", "revoke", "x" * 5000], 3),
]


def _cli_ids(case) -> str:
    args = case[0] if isinstance(case, tuple) else case
    return " ".join(arg[:20] for arg in args) if isinstance(args, list) else str(args)[:30]


@pytest.mark.parametrize("args, code", CLI_CASES, ids=[_cli_ids(c) for c in CLI_CASES])
def test_cli_refuses_bad_input_without_a_change(demo_cli, args: list[str], code: int) -> None:
    before = dump()
    result = demo_cli(*args)
    assert result.exit_code == code, (result.exit_code, result.stdout[:300], result.stderr[:300])
    assert result.stdout == ""
    assert result.stderr.count("\n") <= 3 and result.stderr.strip(), result.stderr
    assert dump() == before


@pytest.mark.parametrize(
    "content",
    [
        b'{"items": [{"id": "item-002", "orderIndex": 1}], "items": []}',
        b'{"items": [{"id": "item-002", "orderIndex": -1}]}',
        b'{"items": [{"id": "item-002", "orderIndex": 1e309}]}',
        b'{"items": [{"id": "item-002\\u0000", "orderIndex": 1}]}',
        b'{"items": ',
        b"\xff\xfe",
        b"[]",
    ],
)
def test_cli_refuses_bad_files(demo_cli, tmp_path, content: bytes) -> None:
    before = dump()
    path = tmp_path / "body.json"
    path.write_bytes(content)
    result = demo_cli("items", "reorder", SOW, "--from-file", str(path))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert dump() == before


@pytest.mark.parametrize(
    "dataset, field",
    [
        ({"organizations": [{"id": "org-nul", "name": "a\x00b"}]}, "name"),
        ({"organizations": [{"id": "org-\ud800", "name": "x"}]}, "id"),
        ({"organizations": [{"id": "org-x", "name": "x", "extra": {"deep": ["\x00"]}}]}, "extra.deep[0]"),
    ],
)
def test_import_refuses_unstorable_text_on_every_backend(
    demo_cli, tmp_path, dataset: dict, field: str
) -> None:
    before = dump()
    path = tmp_path / "data.json"
    path.write_text(json.dumps(dataset), encoding="utf-8")
    result = demo_cli("import", str(path))
    assert result.exit_code == 2, result.stderr
    assert "organizations[0]" in result.stderr and field in result.stderr
    assert "\x00" not in result.stderr
    assert dump() == before


def test_the_cli_never_prints_a_traceback_on_a_bad_database_url(cli) -> None:
    result = cli("--db", "mysql://nope", "items", "list", SOW)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
