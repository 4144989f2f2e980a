"""How the operations' paths become bottle routes, and how a method a route does not take is
named when it is refused (405)."""

from __future__ import annotations

from sowctl.operations import Operation


def bottle_path(path: str) -> str:
    """``/api/sow/{sowId}/items`` → ``/api/sow/<sowId>/items``."""
    return "/".join(
        f"<{part[1:-1]}>" if part.startswith("{") and part.endswith("}") else part for part in path.split("/")
    )


def route_order(op: Operation) -> tuple:
    """Literal segments before parameters at each position (``/chain`` before ``/{id}``)."""
    return tuple(part.startswith("{") for part in op.path.split("/")), op.path, op.method


HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})


def method_phrase(method: str) -> str:
    """How a refusal names ``method``: "method PUT", or an unknown one as sent."""
    return f"method {method}" if method in HTTP_METHODS else method


def allowed_methods(allow: str) -> list[str]:
    """The methods of an ``Allow`` header, HEAD with GET (bottle answers it), sorted."""
    methods = {method.strip().upper() for method in allow.split(",") if method.strip()}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)
