"""The wrong scheme for a server (issue 28): ``https://`` for a plain-HTTP server is said at
once in one line naming ``http://``, never retried as if the server were down."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class PlainServer:
    """A plain-HTTP server on a socket: ``hangs`` waits for a request head's end (as many
    servers do, so a TLS ClientHello hangs), else it answers whatever arrives with a 400."""

    hangs: bool
    sock: socket.socket = field(default_factory=lambda: socket.create_server(("127.0.0.1", 0)))
    connections: int = 0

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.sock.getsockname()[1]}"

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            conn.settimeout(5)
            try:
                while not data or (self.hangs and b"\r\n\r\n" not in data):
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                return


@pytest.fixture(params=[False, True], ids=["answers", "hangs"])
def plain(request) -> Iterator[PlainServer]:
    server = PlainServer(hangs=request.param)
    threading.Thread(target=server.serve, daemon=True).start()
    yield server
    server.sock.close()


def test_https_for_a_plain_http_server_is_said_at_once(cli, plain: PlainServer) -> None:
    result = cli("--server", plain.url, "--token", "t", "--timeout", "1", "sows", "list")
    assert result.exit_code == 5
    plain_url = plain.url.replace("https://", "http://")
    assert result.stderr == f"error: server at {plain.url} speaks plain HTTP, not HTTPS: use {plain_url}\n"
    # One attempt (and, when the handshake hung, one plain probe): no retries.
    assert plain.connections == (2 if plain.hangs else 1)


def test_a_tls_failure_of_another_kind_is_not_taken_for_plain_http() -> None:
    from sowctl.backends.scheme import plain_http_instead

    failure = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    assert plain_http_instead("https://127.0.0.1:1", failure) is None
    assert plain_http_instead("http://127.0.0.1:1", failure) is None


def test_a_server_url_ending_in_api_gets_a_hint(modes) -> None:
    from tests.support.client import SERVER

    result = modes.cli("--server", f"{SERVER}/api", "--token", modes.token, "sows", "get", "sow-1")
    assert result.exit_code == 3
    assert result.stderr.endswith(f" (--server is the base URL, without /api: {SERVER})\n"), result.stderr
    assert "/api/api/sows/sow-1" in result.stderr


def _redirecting_backend(location: str, status: int = 301):
    import httpx

    from sowctl.backends.remote import RemoteBackend
    from sowctl.backends.settings import Settings

    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.path == "/api/sows/":
            return httpx.Response(200, json=[])
        return httpx.Response(status, headers={"Location": location})

    settings = Settings(server="http://sowctl.test", token="sow_t")
    return RemoteBackend(settings, transport=httpx.MockTransport(answer)), seen


def test_a_redirect_on_the_same_origin_is_followed() -> None:
    backend, seen = _redirecting_backend("/api/sows/")
    assert backend.call("sows.list", all_pages=False) == []
    assert seen == ["http://sowctl.test/api/sows", "http://sowctl.test/api/sows/"]


def test_a_redirect_to_another_origin_is_reported_not_followed() -> None:
    from sowctl.foundation.errors import ServiceUnavailable

    backend, seen = _redirecting_backend("https://user:pw@sowctl.test:8443/api/sows")
    with pytest.raises(ServiceUnavailable) as refused:
        backend.call("sows.list", all_pages=False)
    assert refused.value.message == (
        "server at http://sowctl.test redirects to another origin (https://sowctl.test:8443), where "
        "sowctl does not send your credentials: if that is the server, use --server https://sowctl.test:8443"
    )
    assert len(seen) == 1


def test_a_write_is_not_resent_to_a_301() -> None:
    from sowctl.foundation.errors import ServiceUnavailable

    backend, seen = _redirecting_backend("/api/sows/")
    with pytest.raises(ServiceUnavailable, match="a redirect sowctl does not follow"):
        backend.call("sows.create", body={"title": "T"})
    assert len(seen) == 1


def test_ctrl_c_during_a_write_says_it_may_have_been_applied(cli, monkeypatch) -> None:
    import httpx

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(httpx.Client, "request", interrupted)
    result = cli("--server", "http://sowctl.test", "--token", "sow_t", "sows", "create", "T")
    assert result.exit_code == 130
    assert result.stderr == (
        "error: interrupted: the server may have applied POST /api/sows; check before resending\n"
    )
    read = cli("--server", "http://sowctl.test", "--token", "sow_t", "sows", "list")
    assert (read.exit_code, read.stderr) == (130, "error: interrupted\n")


TLS = Path(__file__).resolve().parents[1] / "support" / "tls"


@pytest.fixture
def tls_server() -> Iterator[tuple[str, list[int]]]:
    """A TLS server (a self-signed certificate) that closes any connection that is not TLS,
    as HTTPS servers do with a plain request: its http:// URL and a count of connections."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS / "cert.pem", TLS / "key.pem")
    sock = socket.create_server(("127.0.0.1", 0))
    connections = [0]

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            connections[0] += 1
            conn.settimeout(5)
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass  # a TLS client: handshake done, nothing to answer
            except OSError:  # plain HTTP: the handshake fails and the connection closes
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}", connections
    sock.close()


def test_http_for_an_https_server_is_said_at_once(cli, tls_server) -> None:
    url, connections = tls_server
    result = cli("--server", url, "--token", "t", "--timeout", "2", "sows", "list")
    assert result.exit_code == 5
    secure = url.replace("http://", "https://")
    assert result.stderr == f"error: server at {url} speaks HTTPS, not plain HTTP: use {secure}\n"
    assert connections[0] == 2  # the request and the probe: no retries
