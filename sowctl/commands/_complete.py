"""Shell completion of ids, from the current database or server ("where cheap": SOW ids).

A shell asks while the user types, so this never writes, never creates a database, never
prints anything but candidates, and gives up silently on any error.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

COMPLETION_TIMEOUT = 2.0  # seconds


def sow_ids(ctx: Any, incomplete: str) -> list[str]:
    """The SOW ids starting with ``incomplete``, in the mode the command line selects."""
    import os

    from sowctl.backends.settings import Settings
    from sowctl.commands._context import AppContext, resolve_mode

    root = ctx.find_root()
    params = dict(root.params)
    params["db"], params["server"] = resolve_mode(root, params.get("db"), params.get("server"))
    names = ("db", "server", "token", "api_key", "org", "company", "profile")
    # The shell waits for this process: one quick try, no retries with backoff.
    os.environ["SOWCTL_RETRIES"] = "0"
    settings = Settings(**{name: params.get(name) for name in names}, timeout=COMPLETION_TIMEOUT)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            sows = AppContext(settings).call("sows.list")
    except Exception:  # a completion that fails offers nothing, it never shows an error
        return []
    return [sow["id"] for sow in sows if isinstance(sow.get("id"), str) and sow["id"].startswith(incomplete)]
