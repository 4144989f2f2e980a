"""sowctl: command-line client and local server for the Project Delivery Service API.

``sowctl.Client`` (``sowctl.backends.client``) calls the API from Python; it and the error
types are imported on first use, so ``import sowctl`` (and the CLI's start-up) stays
light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sowctl.foundation.version import VERSION as __version__  # noqa: F401  (sowctl.__version__)

if TYPE_CHECKING:
    from sowctl.backends.client import Client

_ERRORS = frozenset(
    {
        "SowctlError",
        "InvalidInput",
        "NotFound",
        "Unauthorized",
        "Forbidden",
        "RateLimited",
        "ServiceUnavailable",
        "RemoteError",
    }
)
__all__ = ["Client", *sorted(_ERRORS)]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from sowctl.backends.client import Client

        return Client
    if name in _ERRORS:
        from sowctl.foundation import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'sowctl' has no attribute {name!r}")
