"""The API's operations as MCP tools: made from the operation registry, never one by hand.

Each tool is one operation: its name (``items.list`` is ``items_list``), its summary, and an
input schema built from its declaration: the path parameters, the query model's fields, a
``body`` that is the body model, and ``page``/``limit`` for a paginated list. A call runs
through the CLI's backend (in process, or the server at ``--server`` with the CLI's
credentials), so a tool validates and answers exactly as the API does. Nothing here knows
the MCP SDK: ``sowctl.mcp.serving`` serves these over stdio.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sowctl import operations
from sowctl.foundation.budgets import MAX_PAGE_SIZE
from sowctl.foundation.errors import InvalidInput, RemoteError, SowctlError, error_code
from sowctl.gate import risks
from sowctl.operations.admin import ADMIN
from sowctl.operations.groups import Group
from sowctl.testing.admin import AdminClient, AdminError, VerificationError

if TYPE_CHECKING:
    from sowctl.backends import Backend
    from sowctl.operations import Operation

DEFAULT_PAGE_SIZE = 20  # the API's own default page
# An answer larger than this is refused with a hint to ask for less: a tool's answer goes into
# an agent's context, and a whole SOW's chain can be megabytes.
MAX_ANSWER_CHARS = 200_000
# The admin operations offered as tools: what an agent testing a client needs, not datasets
# or credentials (which would hand it every secret of the test double), nor a webhook's
# creation (its answer holds the signing secret).
ADMIN_TOOLS = (
    "admin.reset",
    "admin.faults.get",
    "admin.faults.replace",
    "admin.faults.clear",
    "admin.clock.get",
    "admin.clock.set",
    "admin.requests.list",
    "admin.requests.verify",
    "admin.requests.pact",
    "admin.checkpoints.list",
    "admin.checkpoints.save",
    "admin.checkpoints.restore",
    "admin.checkpoints.delete",
    "admin.webhooks.list",
    "admin.webhooks.get",
    "admin.webhooks.delete",
    "admin.webhooks.resume",
    "admin.webhooks.deliveries",
    "admin.webhooks.redeliver",
    "admin.webhooks.faults.get",
    "admin.webhooks.faults.set",
    "admin.webhooks.faults.clear",
)

# Admin operations that replace the whole state, though not by a DELETE.
REPLACE_EVERYTHING = frozenset({"admin.reset", "admin.checkpoints.restore"})


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    operation: Operation
    # The CI gate's check (``sowctl chain check``) on the operation's chain report.
    gate: bool = False

    @property
    def write(self) -> bool:
        return self.operation.write

    @property
    def destructive(self) -> bool:
        return self.operation.method == "DELETE" or self.operation.name in REPLACE_EVERYTHING


def tool_name(op: Operation) -> str:
    return op.name.replace(".", "_")


def tools(*, allow_writes: bool, admin: bool = False) -> list[ToolSpec]:
    """A tool per operation of the registry: reads always, writes only when allowed; and,
    ``admin`` (a server with an admin token) and writes allowed, the admin tools."""
    registry = operations.load_all()
    specs = [
        ToolSpec(tool_name(op), describe(op), input_schema(op), op)
        for op in registry.values()
        if (allow_writes or not op.write) and not op.stream  # a stream never ends: no tool's answer
    ]
    specs.append(_chain_check_tool(registry["chain.get"]))
    if admin and allow_writes:
        specs += [ToolSpec(tool_name(op), describe(op), input_schema(op), op) for op in admin_operations()]
    return specs


def _chain_check_tool(chain: Operation) -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {
            "sowId": {"type": "string", "minLength": 1, "description": "the SOW whose chain to check"},
            "failOn": {
                "type": "string",
                "default": ",".join(risks.DEFAULT_FAIL_ON),
                "description": "the risk kinds that fail the check, comma-separated: "
                + ", ".join(risks.RISK_KINDS),
            },
            "dueWithin": {
                "type": "string",
                "default": f"{risks.DEFAULT_DUE_WITHIN_DAYS}d",
                "description": "how soon an SLA date counts as due soon: 14d, 2w",
            },
        },
        "required": ["sowId"],
        "additionalProperties": False,
    }
    description = (
        "Check a SOW's dependency chain for risks, as `sowctl chain check` does in CI: the "
        "counts by kind, each finding, and whether the check passed (passed: false when a kind "
        "in failOn is found)."
    )
    return ToolSpec("chain_check", description, schema, chain, gate=True)


def admin_operations() -> list[Operation]:
    return [ADMIN[name] for name in ADMIN_TOOLS]


def describe(op: Operation) -> str:
    text = f"{op.summary}. {op.method} {op.path}."
    if op.paginated:
        text += f" Paged: page (from 1) and limit (at most {MAX_PAGE_SIZE}); the answer gives the total."
    if op.list_key:
        text += f" Paged by limit (default {DEFAULT_PAGE_SIZE}, at most {MAX_PAGE_SIZE}) and offset."
    if op.write:
        text += " Changes data."
    return text


def input_schema(op: Operation) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, from the operation's Pydantic models."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    defs: dict[str, Any] = {}
    for name in op.path_params:
        properties[name] = {"type": "string", "minLength": 1, "description": f"the {name} in {op.path}"}
        required.append(name)
    if op.query is not None:
        schema = op.query.model_json_schema(by_alias=True)
        defs.update(schema.pop("$defs", {}))
        properties.update(schema.get("properties", {}))
        required += schema.get("required", [])
    if op.paginated:
        properties["page"] = {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "description": "page number, from 1",
        }
        properties["limit"] = {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_PAGE_SIZE,
            "default": DEFAULT_PAGE_SIZE,
            "description": "records per page",
        }
    if op.body is not None:
        schema = op.body.model_json_schema(by_alias=True)
        defs.update(schema.pop("$defs", {}))
        properties["body"] = schema
        required.append("body")
    result: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        result["required"] = required
    if defs:
        result["$defs"] = defs
    return result


def call(
    backend: Backend, spec: ToolSpec, arguments: dict[str, Any] | None, admin: AdminClient | None = None
) -> Any:
    """Run the tool's operation with ``arguments``; its answer as JSON-ready data."""
    op = spec.operation
    args = dict(arguments or {})
    unknown = sorted(set(args) - set(spec.input_schema["properties"]))
    if unknown:
        raise InvalidInput.for_field(unknown[0], f"is not an argument of {spec.name}")
    if spec.gate:
        return _chain_check(backend, args)
    params = {name: _text(args.pop(name, None), name) for name in op.path_params}
    body = args.pop("body", None)
    if op.body is not None and body is None:
        raise InvalidInput.for_field("body", "is required")
    if op.group is Group.ADMIN:
        return _call_admin(admin, op, params, args, body)
    if op.paginated:
        page = _count(args.pop("page", 1), "page")
        limit = _count(args.pop("limit", DEFAULT_PAGE_SIZE), "limit")
        if limit > MAX_PAGE_SIZE:
            raise InvalidInput.for_field("limit", f"must be at most {MAX_PAGE_SIZE}")
        records, total = backend.call_page(op.name, params, args, page=page, limit=limit)
        return {"page": page, "limit": limit, "total": total, "results": records}
    if op.list_key and args.get("limit") is None:
        args["limit"] = DEFAULT_PAGE_SIZE
    return backend.call(op.name, params, args, body, all_pages=False)


def _chain_check(backend: Backend, args: dict[str, Any]) -> dict[str, Any]:
    fail_on = risks.parse_fail_on(_optional_text(args.get("failOn"), "failOn"))
    days = risks.parse_due_within(_optional_text(args.get("dueWithin"), "dueWithin"))
    query = {"sowId": _text(args.get("sowId"), "sowId"), "format": "flat", "include": risks.INCLUDE}
    return risks.check_chain(backend.call_typed("chain.get", {}, query), fail_on, days)


def _optional_text(value: Any, name: str) -> str | None:
    return None if value is None else _text(value, name)


def _call_admin(
    admin: AdminClient | None, op: Operation, params: dict[str, str], query: dict[str, Any], body: Any
) -> Any:
    """An admin tool's call, sent by the admin client; a refusal or a verification that does
    not hold is a typed error carrying the server's status and words."""
    if admin is None:
        raise InvalidInput(f"{tool_name(op)} needs a server with an admin token")
    try:
        return admin.call(op.name, params, {key: str(value) for key, value in query.items()}, body)
    except VerificationError as exc:
        raise RemoteError(409, str(exc)) from None
    except AdminError as exc:
        raise RemoteError(exc.status or 502, str(exc)) from None


def answer_text(value: Any) -> str:
    """The answer as compact JSON, refused when larger than an agent should be handed."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerTooLarge(
            f"the answer is {len(text):,} characters, more than the {MAX_ANSWER_CHARS:,} a tool answer "
            "may be: ask for less (a smaller page, a filter, the flat format)"
        )
    return text


def error_data(exc: SowctlError) -> dict[str, Any]:
    """What a failed call says: the stable code the CLI's JSON errors use, the HTTP status,
    the CLI's exit code and the message."""
    data: dict[str, Any] = {
        "code": exc.answered_code or error_code(exc),
        "status": exc.status,
        "exitCode": int(exc.exit_code),
        "message": exc.message,
    }
    if exc.issues:
        data["issues"] = [issue.as_dict() for issue in exc.issues]
    return data


class AnswerTooLarge(InvalidInput):
    pass


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput.for_field(name, "is required (a non-empty string)")
    return value


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput.for_field(name, "must be a positive integer")
    return value
