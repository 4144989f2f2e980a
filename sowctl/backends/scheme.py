"""A server URL with the wrong scheme, told apart from a server that is down; redirects.

An ``https://`` URL for a plain-HTTP server either fails the TLS handshake at once (the
server answered the ClientHello in HTTP: "wrong version number") or hangs in it (the
server waits for the end of a request head that never comes) until the connect timeout.
Neither is worth retrying: the next attempt meets the same server. So the first failure
is diagnosed, with at most one short plain-HTTP probe, and said in one line."""

from __future__ import annotations

import socket
import ssl

import httpx

MAX_REDIRECTS = 5
# Redirects that keep the method and body; 301, 302 and 303 do so for a GET only.
_KEEPING = frozenset({307, 308})
PROBE_TIMEOUT = 1.0  # seconds for the plain-HTTP probe's connect, and again for its answer
# OpenSSL's reasons for a handshake answered by something that is not TLS.
_NOT_TLS_REASONS = frozenset(
    {"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"}
)


def plain_http_instead(base_url: str, exc: Exception) -> str | None:
    """For an ``https://`` URL whose server speaks plain HTTP: the one line to say; else None."""
    url = httpx.URL(base_url)
    if url.scheme != "https":
        return None
    if _answered_not_tls(exc) or (isinstance(exc, httpx.ConnectTimeout) and _speaks_plain_http(url)):
        plain = base_url.replace("https://", "http://", 1) if base_url.startswith("https://") else "http://…"
        return f"server at {base_url} speaks plain HTTP, not HTTPS: use {plain}"
    return None


def https_instead(base_url: str, exc: Exception) -> str | None:
    """For an ``http://`` URL whose server answered a plain request with something else (a
    TLS alert, a reset, nothing): the one line to say when a TLS handshake there succeeds;
    else None."""
    url = httpx.URL(base_url)
    answered_oddly = isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError)  # a reset, an alert
    if url.scheme != "http" or not answered_oddly or not _speaks_tls(url):
        return None
    return (
        f"server at {base_url} speaks HTTPS, not plain HTTP: use {base_url.replace('http://', 'https://', 1)}"
    )


def tls_hint(base_url: str) -> str:
    """What a failed ``http://`` connection adds: the server may want HTTPS."""
    if httpx.URL(base_url).scheme != "http":
        return ""
    return f" (if the server speaks HTTPS, use {base_url.replace('http://', 'https://', 1)})"


def _answered_not_tls(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLError) and getattr(current, "reason", None) in _NOT_TLS_REASONS:
            return True
        if any(reason in str(current) for reason in _NOT_TLS_REASONS):
            return True
        current = current.__cause__ or current.__context__
    return False


def _speaks_plain_http(url: httpx.URL) -> bool:
    """Whether the host answers a plain ``HEAD /`` with an HTTP status line (bounded by
    ``PROBE_TIMEOUT`` twice); a host that cannot be reached is not HTTP either."""
    port = url.port or 443
    try:
        with socket.create_connection((url.host, port), timeout=PROBE_TIMEOUT) as sock:
            sock.sendall(f"HEAD / HTTP/1.0\r\nHost: {url.host}\r\n\r\n".encode("ascii", "replace"))
            return sock.recv(5) == b"HTTP/"
    except OSError:
        return False


def followed_redirect(base_url: str, method: str, response: httpx.Response, hops: int) -> str | None:
    """The URL a 3xx sends the request to, when it is followed: on the server's own origin
    (scheme, host and port: the credentials never leave it), keeping the method, at most
    ``MAX_REDIRECTS`` times. None: reported instead (``redirect_refusal``)."""
    target = _location(response)
    if target is None or hops >= MAX_REDIRECTS or _origin(target) != _origin(httpx.URL(base_url)):
        return None
    if response.status_code not in _KEEPING and method != "GET":
        return None
    return str(target)


def redirect_refusal(shown_url: str, method: str, response: httpx.Response) -> str:
    """One line for a redirect not followed, naming where it leads and what to do."""
    target = _location(response)
    status = response.status_code
    if target is None:
        return f"server at {shown_url} answered {method} with HTTP {status} and no usable Location"
    if _origin(target) != _origin(httpx.URL(shown_url)):
        port = f":{target.port}" if target.port else ""  # no user:password@ from the Location
        origin = f"{target.scheme}://{target.host}{port}"
        return (
            f"server at {shown_url} redirects to another origin ({origin}), where sowctl does not "
            f"send your credentials: if that is the server, use --server {origin}"
        )
    return f"server at {shown_url} answered {method} with HTTP {status} (a redirect sowctl does not follow)"


def _location(response: httpx.Response) -> httpx.URL | None:
    try:
        location = response.headers.get("location")
        return response.url.join(location) if location else None
    except (httpx.InvalidURL, ValueError):
        return None


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


def _speaks_tls(url: httpx.URL) -> bool:
    """Whether the host completes a TLS handshake (its certificate unchecked: this only
    tells the protocol), within ``PROBE_TIMEOUT`` for the connect and again for the handshake."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        sock = socket.create_connection((url.host, url.port or 80), timeout=PROBE_TIMEOUT)
        with sock, context.wrap_socket(sock, server_hostname=url.host):
            return True
    except OSError:  # ssl.SSLError included: not TLS
        return False
