"""sowctl wait: until a server is ready (GET /readyz answers 200), for scripts and CI steps."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from sowctl.foundation.errors import ServiceUnavailable, UsageError
from sowctl.output.terminal import current

FIRST_PAUSE = 0.1  # seconds between tries, doubled after each up to MAX_PAUSE
MAX_PAUSE = 2.0
MAX_TRY_SECONDS = 5.0  # one try never waits longer for an answer

if TYPE_CHECKING:
    import httpx


def wait(
    url: Annotated[
        str,
        typer.Argument(help="The server's URL (its /readyz is asked), or the full URL of a page to ask."),
    ],
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=0.0, max=86_400.0, help="Seconds to wait at most."),
    ] = 30.0,
) -> None:
    """Wait until the server at URL is ready: GET URL/readyz answers 200 (the server is up, and its
    database answers with the schema it needs). Tries again, at growing intervals up to 2 s,
    until --timeout; exits 0 once ready, 5 with the last reason otherwise.

    Example: sowctl wait http://127.0.0.1:8000 --timeout 60
    """
    import httpx

    from sowctl.backends.profiles import mask_url

    target = _target(url)
    shown = mask_url(target) or target
    deadline = time.monotonic() + timeout
    pause = FIRST_PAUSE
    with httpx.Client(follow_redirects=False, trust_env=False) as client:
        while True:
            left = deadline - time.monotonic()
            reason = _ask(client, target, max(0.05, min(MAX_TRY_SECONDS, left)))
            if reason is None:
                current().err.write(f"ready: {shown}\n")
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServiceUnavailable(f"{shown} not ready after {timeout:g} s: {reason}")
            time.sleep(min(pause, left))
            pause = min(pause * 2, MAX_PAUSE)


def _target(url: str) -> str:
    """The URL to ask: the server's /readyz, unless URL names a page of its own."""
    from urllib.parse import urlsplit

    text = url.strip()
    try:
        parts = urlsplit(text)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        valid = False
    if not valid:
        from sowctl.foundation.errors import quoted

        raise UsageError(f"URL must be an http:// or https:// URL with a host, not {quoted(text)}")
    if parts.path in ("", "/"):
        return text.rstrip("/") + "/readyz"
    return text


def _ask(client: httpx.Client, target: str, seconds: float) -> str | None:
    """None when ``target`` answers 200; else why not, in a few words."""
    import httpx

    try:
        response = client.get(target, timeout=seconds)
    except httpx.ConnectError:
        return "cannot connect"
    except httpx.TimeoutException:
        return f"no answer within {seconds:.1f} s"
    except httpx.HTTPError as exc:
        return f"connection failed ({type(exc).__name__})"
    if response.status_code == 200:
        return None
    return f"HTTP {response.status_code}"
