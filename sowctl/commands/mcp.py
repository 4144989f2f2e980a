"""sowctl mcp: the API's operations as tools of a Model Context Protocol server on stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from sowctl.commands._context import app_context


def mcp(
    ctx: typer.Context,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes",
            help="Also offer the tools that change data (create, update, delete, reorder). "
            "Without it every tool only reads.",
        ),
    ] = False,
) -> None:
    """Serve sowctl's operations as MCP tools on stdin/stdout, for an agent's MCP client.

    One tool per API operation, run in the mode in effect: the local database, or the server of
    --server with the same token, API key and profile as every other command. Only tools that
    read are offered unless --allow-writes is given. Needs the MCP Python SDK (pip install mcp).

    Example: sowctl --db sow.db mcp --allow-writes
    """
    from sowctl.mcp import serving

    serving.require_sdk()
    backend = app_context(ctx).backend
    serving.serve_stdio(backend, allow_writes=allow_writes)
