"""``sowctl mcp``: the operation registry's tools (``sowctl.mcp.tools``) over the Model
Context Protocol, with the official SDK's low-level server (the ``mcp`` package, optional).

A failed call is a tool error (``isError``) carrying the typed error's message and code,
never a traceback; the operations run one at a time in a worker thread, since the backends
(Peewee's connection, httpx's client) are synchronous.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sowctl.backends.remote import RemoteBackend
from sowctl.foundation.errors import SowctlError, UsageError
from sowctl.foundation.version import VERSION
from sowctl.mcp import tools
from sowctl.testing.admin import AdminClient

if TYPE_CHECKING:
    from sowctl.backends import Backend

INSTALL_HINT = "pip install mcp"
# The admin token of the server at --server (``serve --admin --exec`` sets it for its command).
ADMIN_TOKEN_ENV = "SOWCTL_ADMIN_TOKEN"
INSTRUCTIONS = (
    "Tools of sowctl: SOWs, their items and dependencies, the dependency chain, budgets, purchase "
    "orders, projects and clients. Lists are paged (page, limit; the answer gives the total). "
    "Write tools exist only when the server was started with --allow-writes."
)


def require_sdk() -> None:
    """Refuse, in one line with the install hint, when the MCP SDK is not installed."""
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        raise UsageError(f"sowctl mcp needs the MCP Python SDK: {INSTALL_HINT}") from None


def build_server(backend: Backend, *, allow_writes: bool, admin: AdminClient | None = None) -> Any:
    """The MCP server (``mcp.server.lowlevel.Server``) of the tools ``allow_writes`` permits;
    with ``admin`` (the server's admin API) and writes allowed, the admin tools too."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    specs = {spec.name: spec for spec in tools.tools(allow_writes=allow_writes, admin=admin is not None)}
    listed = [_tool(types, spec) for spec in specs.values()]
    one_at_a_time = anyio.CapacityLimiter(1)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        spec = specs.get(params.name)
        if spec is None:
            return _refusal(types, _unknown_tool(params.name, allow_writes))
        try:
            return await anyio.to_thread.run_sync(
                _answer, types, backend, spec, params.arguments, admin, limiter=one_at_a_time
            )
        except SowctlError as exc:
            return _refusal(types, exc)

    return Server(
        "sowctl",
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_stdio(backend: Backend, *, allow_writes: bool) -> None:
    """Serve on stdin/stdout until the client closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    admin = admin_client(backend, allow_writes=allow_writes, environ=os.environ)
    server = build_server(backend, allow_writes=allow_writes, admin=admin)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        if admin is not None:
            admin.close()


def admin_client(backend: Backend, *, allow_writes: bool, environ: Mapping[str, str]) -> AdminClient | None:
    """The admin API of the server at --server, when writes are allowed and ``environ`` holds
    its admin token; None otherwise (in local mode there is no test double to drive)."""
    token = environ.get(ADMIN_TOKEN_ENV, "").strip()
    if not (allow_writes and token and isinstance(backend, RemoteBackend)):
        return None
    return AdminClient(backend.base_url, token, timeout=backend.timeout)


def _tool(types: Any, spec: tools.ToolSpec) -> Any:
    annotations = types.ToolAnnotations(
        read_only_hint=not spec.write,
        destructive_hint=spec.destructive if spec.write else None,
        idempotent_hint=spec.operation.method in ("GET", "PUT", "DELETE"),
        open_world_hint=False,
    )
    return types.Tool(
        name=spec.name, description=spec.description, input_schema=spec.input_schema, annotations=annotations
    )


def _answer(
    types: Any, backend: Backend, spec: tools.ToolSpec, arguments: dict | None, admin: AdminClient | None
) -> Any:
    try:
        value = tools.call(backend, spec, arguments, admin)
    except SowctlError:
        raise
    except Exception as exc:  # a bug or a database failure: one line, never a traceback
        raise _unexpected(exc) from None
    text = tools.answer_text(value)
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def _refusal(types: Any, exc: SowctlError) -> Any:
    data = tools.error_data(exc)
    text = f"{exc.message} (code {data['code']}, status {data['status']})"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content={"error": data}, is_error=True
    )


def _unknown_tool(name: str, allow_writes: bool) -> SowctlError:
    from sowctl import operations
    from sowctl.foundation.errors import Forbidden, NotFound

    known = {tools.tool_name(op) for op in operations.load_all().values()}
    if name in known and not allow_writes:
        return Forbidden(f"{name} changes data: start sowctl mcp with --allow-writes to use it")
    if name in {tools.tool_name(op) for op in tools.admin_operations()}:
        return Forbidden(
            f"{name} drives the test double: start sowctl mcp --allow-writes with --server and "
            f"{ADMIN_TOKEN_ENV} (the server's admin token) to use it"
        )
    return NotFound(f"no tool {name}")


def _unexpected(exc: Exception) -> SowctlError:
    from sowctl.storage.failures import classify

    failure = classify(exc) if "peewee" in sys.modules else None
    if failure is not None:
        return failure.error()
    first = str(exc).splitlines()[0] if str(exc) else ""
    return SowctlError(f"unexpected error: {type(exc).__name__}: {first}")
