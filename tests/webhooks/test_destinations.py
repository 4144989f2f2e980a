"""Where a sandbox's webhooks may be delivered: the destinations refused when a subscription is
made (400 naming ``url``, nothing stored), the address checked again at each delivery and the
request sent to that checked address (a name rebound to loopback is refused, nothing fetched),
no redirect followed, the server-wide admin token's localhost receivers untouched, and the
operator's ``--webhook-allow-network``."""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from sowctl.server.webhook_dispatcher import Dispatcher, pinned_targets
from sowctl.services import events, sandboxes, webhooks
from sowctl.storage import models as m
from sowctl.storage.database import write_transaction
from sowctl.storage.webhook_models import WebhookSubscription
from tests.support.doubles import ADMIN, ORG, in_process, load
from tests.support.receiver import Receiver

pytestmark = pytest.mark.database

LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)
PUBLIC = "93.184.215.14"  # a public address nothing in these tests connects to

REFUSED = [
    ("127.0.0.1", "127.0.0.1 is a loopback address"),
    ("127.9.9.9", "127.9.9.9 is a loopback address"),
    ("[::1]", "::1 is a loopback address"),
    ("169.254.169.254", "169.254.169.254 is a link-local (the cloud metadata service's range) address"),
    ("[fe80::1]", "fe80::1 is a link-local"),
    ("10.1.2.3", "10.1.2.3 is a private address"),
    ("172.16.0.1", "172.16.0.1 is a private address"),
    ("172.31.255.254", "172.31.255.254 is a private address"),
    ("192.168.1.1", "192.168.1.1 is a private address"),
    ("[fc00::1]", "fc00::1 is a private address"),
    ("[fd12:3456::1]", "fd12:3456::1 is a private address"),
    ("0.0.0.0", "0.0.0.0 is an unspecified address"),
    ("[::]", ":: is an unspecified address"),
    ("224.0.0.1", "224.0.0.1 is a multicast address"),
    ("[ff02::1]", "ff02::1 is a multicast address"),
    ("240.0.0.1", "240.0.0.1 is a reserved address"),
    ("255.255.255.255", "255.255.255.255 is a reserved address"),
    ("100.64.0.1", "100.64.0.1 is a non-public address"),
    ("[::ffff:127.0.0.1]", "is a loopback (IPv4 127.0.0.1 inside IPv6) address"),
    ("[::ffff:169.254.169.254]", "(IPv4 169.254.169.254 inside IPv6)"),
    ("[::ffff:10.0.0.1]", "is a private (IPv4 10.0.0.1 inside IPv6) address"),
    ("[64:ff9b::a9fe:a9fe]", "(IPv4 169.254.169.254 inside IPv6)"),
    ("[2002:c0a8:101::1]", "2002:c0a8:101::1 is a private (IPv4 192.168.1.1 inside IPv6) address"),
    # Spelled as no IP literal is, but resolved to one by the system's resolver.
    ("2130706433", "2130706433 resolves to 127.0.0.1, a loopback address"),
    ("localhost", "localhost resolves to"),
]


@pytest.fixture
def client(migrated_db_url: str) -> httpx.Client:
    return in_process(migrated_db_url)


def new_sandbox(client: httpx.Client) -> dict[str, Any]:
    made = client.post("/_admin/sandboxes", json={"name": "ci job"}, headers=ADMIN)
    assert made.status_code == 201, made.text
    return made.json()


def as_sandbox(sandbox: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {sandbox['adminToken']}"}


def stored() -> int:
    return WebhookSubscription.select().count()


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Host names the system's resolver answers as the test says (the others as ever): what
    the checks and any connection would both see."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in answers:
            return real(host, port, *args, **kwargs)
        if not answers[name]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        address = answers[name].pop(0) if len(answers[name]) > 1 else answers[name][0]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


# --- made with a sandbox's admin token --------------------------------------------------------


@pytest.mark.parametrize(("host", "reason"), REFUSED)
def test_a_sandbox_cannot_subscribe_a_non_public_address(
    client: httpx.Client, host: str, reason: str
) -> None:
    sandbox = new_sandbox(client)
    refused = client.post(
        "/_admin/webhooks", json={"url": f"http://{host}:8080/hook"}, headers=as_sandbox(sandbox)
    )
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error.startswith("url: ") and reason in error, error
    assert "a sandbox's webhooks may reach public addresses only" in error
    assert "sowctl serve --webhook-allow-network" in error
    assert stored() == 0
    assert client.get("/_admin/webhooks", headers=ADMIN).json() == []


def test_a_sandbox_subscribes_a_public_address(client: httpx.Client, resolver: dict[str, list[str]]) -> None:
    sandbox = new_sandbox(client)
    resolver["hooks.example.test"] = [PUBLIC]
    for url in (f"https://{PUBLIC}/hook", "https://hooks.example.test/hook"):
        made = client.post("/_admin/webhooks", json={"url": url}, headers=as_sandbox(sandbox))
        assert made.status_code == 201, made.text
        assert made.json()["organizationId"] == sandbox["organizationId"]
    assert stored() == 2


def test_a_name_with_one_private_address_among_public_ones_is_refused(
    client: httpx.Client, resolver: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = new_sandbox(client)
    real = socket.getaddrinfo

    def both(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        if host != "split.example.test":
            return real(host, port, *args, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", both)
    refused = client.post(
        "/_admin/webhooks", json={"url": "http://split.example.test/hook"}, headers=as_sandbox(sandbox)
    )
    assert refused.status_code == 400
    assert refused.json()["error"].startswith(
        "url: split.example.test resolves to 10.0.0.7, a private address; "
    )
    assert stored() == 0


def test_a_host_that_does_not_resolve_is_refused(
    client: httpx.Client, resolver: dict[str, list[str]]
) -> None:
    sandbox = new_sandbox(client)
    resolver["nowhere.example.test"] = []
    refused = client.post(
        "/_admin/webhooks", json={"url": "http://nowhere.example.test/hook"}, headers=as_sandbox(sandbox)
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "url: the host 'nowhere.example.test' does not resolve to an address, "
        "so it cannot be checked"
    }
    assert stored() == 0


def test_the_server_wide_token_subscribing_for_a_sandbox_is_held_to_the_same_rule(
    client: httpx.Client,
) -> None:
    """That sandbox's token reads the subscription's delivery log, whoever made it."""
    sandbox = new_sandbox(client)
    body = {"url": "http://127.0.0.1:9/hook", "organizationId": sandbox["organizationId"]}
    refused = client.post("/_admin/webhooks", json=body, headers=ADMIN)
    assert refused.status_code == 400 and refused.json()["error"].startswith("url: 127.0.0.1 is a loopback")
    assert stored() == 0


def test_the_server_wide_token_still_subscribes_localhost_for_its_organizations(client: httpx.Client) -> None:
    load(client)
    for url in ("http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://10.0.0.1/hook"):
        made = client.post("/_admin/webhooks", json={"url": url, "organizationId": ORG}, headers=ADMIN)
        assert made.status_code == 201, made.text
    assert stored() == 3


def test_the_allowed_networks_let_a_sandbox_subscribe_them_only(migrated_db_url: str) -> None:
    client = in_process(migrated_db_url, webhook_allowed_networks=LOOPBACK)
    sandbox = new_sandbox(client)
    made = client.post(
        "/_admin/webhooks", json={"url": "http://127.0.0.1:9/hook"}, headers=as_sandbox(sandbox)
    )
    assert made.status_code == 201, made.text
    mapped = client.post(
        "/_admin/webhooks", json={"url": "http://[::ffff:127.0.0.1]:9/hook"}, headers=as_sandbox(sandbox)
    )
    assert mapped.status_code == 201, mapped.text
    refused = client.post(
        "/_admin/webhooks", json={"url": "http://10.0.0.1/hook"}, headers=as_sandbox(sandbox)
    )
    assert refused.status_code == 400 and refused.json()["error"].startswith("url: 10.0.0.1 is a private")
    assert stored() == 2


# --- at delivery ------------------------------------------------------------------------------


@pytest.fixture
def deliver(db: Any) -> Callable[..., Dispatcher]:
    def run(allowed: tuple[Any, ...] = ()) -> Dispatcher:
        sender = Dispatcher(
            lambda: db.connect(reuse_if_open=True), lambda: None, poll_seconds=0.05, allowed_networks=allowed
        )
        sender.poll_once()
        assert sender.settle(30)
        return sender

    return run


@pytest.fixture
def other_receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def sandbox_organization(db: Any) -> str:
    return str(sandboxes.create_sandbox("ci job", None).model_dump()["organizationId"])


def _deliveries(subscription_id: str) -> list[dict[str, Any]]:
    return [attempt.model_dump() for attempt in webhooks.deliveries(subscription_id)]


def change(organization_id: str, title: str = "Walls") -> None:
    with write_transaction(f"org:{organization_id}"):
        events.record(organization_id, "sow", "created", "sow-1", {"id": "sow-1", "title": title})


def subscribe(url: str, organization_id: str, allowed: tuple[Any, ...] = ()) -> dict[str, Any]:
    return webhooks.create(
        webhooks.NewWebhook(url=url, organization_id=organization_id), allowed
    ).model_dump()


def port_of(receiver: Receiver) -> int:
    return int(receiver.server.server_address[1])


def test_a_name_rebound_to_loopback_after_the_check_is_not_fetched(
    db: Any, deliver: Callable[..., Dispatcher], receiver: Receiver, resolver: dict[str, list[str]]
) -> None:
    organization = sandbox_organization(db)
    resolver["rebind.example.test"] = [PUBLIC]
    hook = subscribe(f"http://rebind.example.test:{port_of(receiver)}/hook", organization)
    resolver["rebind.example.test"] = ["127.0.0.1"]  # the attacker's DNS answers anew
    change(organization)
    deliver()
    (attempt,) = _deliveries(hook["id"])
    assert attempt["outcome"] == "failed" and attempt["status"] is None
    assert attempt["responseExcerpt"] is None
    assert attempt["error"] == (
        "refused: rebind.example.test resolves to 127.0.0.1, a loopback address; "
        "a sandbox's webhooks may reach public addresses only"
    )
    assert receiver.received == []
    assert webhooks.get(hook["id"]).model_dump()["consecutiveFailures"] == 1


def test_a_subscription_stored_before_the_rule_is_refused_at_delivery(
    db: Any, deliver: Callable[..., Dispatcher], receiver: Receiver
) -> None:
    organization = sandbox_organization(db)
    hook = subscribe(receiver.url, organization, LOOPBACK)  # allowed then; the server restarted without
    change(organization)
    deliver()
    (attempt,) = _deliveries(hook["id"])
    assert attempt["outcome"] == "failed" and attempt["error"].startswith("refused: 127.0.0.1 is a loopback")
    assert receiver.received == []


def test_a_delivery_connects_to_the_address_it_checked_with_the_host_name_kept(
    db: Any, deliver: Callable[..., Dispatcher], receiver: Receiver, resolver: dict[str, list[str]]
) -> None:
    """One lookup per delivery: a second one (here the name then answers nowhere) would fail."""
    organization = sandbox_organization(db)
    resolver["pinned.example.test"] = ["127.0.0.1"]
    url = f"http://pinned.example.test:{port_of(receiver)}/hook"
    hook = subscribe(url, organization, LOOPBACK)
    resolver["pinned.example.test"] = ["127.0.0.1", "203.0.113.1"]  # the first lookup's, then elsewhere
    change(organization)
    deliver(LOOPBACK)
    (got,) = receiver.wait_for(1)
    assert got.headers["host"] == f"pinned.example.test:{port_of(receiver)}"
    assert got.event["organizationId"] == organization
    (attempt,) = _deliveries(hook["id"])
    assert attempt["outcome"] == "delivered" and attempt["status"] == 200


def test_a_redirect_is_not_followed(
    db: Any, deliver: Callable[..., Dispatcher], receiver: Receiver, other_receiver: Receiver
) -> None:
    organization = sandbox_organization(db)
    hook = subscribe(receiver.url, organization, LOOPBACK)
    receiver.default = 302
    receiver.headers["Location"] = other_receiver.url
    change(organization)
    deliver(LOOPBACK)
    (attempt,) = _deliveries(hook["id"])
    assert attempt["outcome"] == "failed" and attempt["status"] == 302
    assert len(receiver.received) == 1 and other_receiver.received == []


def test_the_server_wide_organizations_still_deliver_to_a_localhost_receiver(
    db: Any, deliver: Callable[..., Dispatcher], receiver: Receiver
) -> None:
    m.Organization.create(id="org-local", name="Local")
    hook = subscribe(receiver.url, "org-local")
    change("org-local")
    deliver()
    (got,) = receiver.wait_for(1)
    assert got.event["organizationId"] == "org-local"
    assert _deliveries(hook["id"])[0]["outcome"] == "delivered"


# --- the operator's setting -------------------------------------------------------------------


def test_serve_takes_the_allowed_networks(cli: Any, fake_runner: dict) -> None:
    result = cli("serve", "--webhook-allow-network", "127.0.0.1", "--webhook-allow-network", "fd00::/8")
    assert result.exit_code == 0, result.stderr
    assert fake_runner["app"].settings.webhook_allowed_networks == (
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("fd00::/8"),
    )


def test_serve_refuses_a_network_that_is_none_naming_the_option(cli: Any, fake_runner: dict) -> None:
    result = cli("serve", "--webhook-allow-network", "10.0.0.0/33")
    assert result.exit_code == 2
    assert "--webhook-allow-network: '10.0.0.0/33' is not an IP network such as 10.0.0.0/8 or ::1/128" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr and "settings" not in fake_runner


def test_an_https_delivery_to_a_name_keeps_it_as_host_and_tls_server_name() -> None:
    checked = (ipaddress.ip_address(PUBLIC), ipaddress.ip_address("2606:2800:21f:cb07:6820:80da:af6b:8b2c"))
    first, second = pinned_targets("https://Hooks.example.test:8443/in?x=1", checked)
    assert first.url == f"https://{PUBLIC}:8443/in?x=1" and second.url.startswith("https://[2606:2800:")
    for target in (first, second):
        assert target.headers == {"Host": "Hooks.example.test:8443"}
        assert target.extensions == {"sni_hostname": "hooks.example.test"}
    (literal,) = pinned_targets(f"https://{PUBLIC}/in", checked[:1])
    assert (literal.url, literal.headers, literal.extensions) == (f"https://{PUBLIC}/in", {}, {})


TLS = Path(__file__).resolve().parents[1] / "support" / "tls"


@pytest.fixture
def tls_receiver() -> Iterator[dict[str, Any]]:
    """An HTTPS receiver on 127.0.0.1 whose certificate names hooks.example.test only; it
    records the TLS server name and Host header of each POST."""
    seen: dict[str, Any] = {"server_names": [], "hosts": []}
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS / "hooks-cert.pem", TLS / "hooks-key.pem")
    context.sni_callback = lambda _socket, name, _context: seen["server_names"].append(name)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen["hosts"].append(self.headers["Host"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen["port"] = server.server_address[1]
    yield seen
    server.shutdown()
    server.server_close()


def test_an_https_delivery_to_a_checked_address_verifies_the_certificate_of_the_name(
    db: Any, resolver: dict[str, list[str]], tls_receiver: dict[str, Any]
) -> None:
    organization = sandbox_organization(db)
    resolver["hooks.example.test"] = ["127.0.0.1"]
    url = f"https://hooks.example.test:{tls_receiver['port']}/hook"
    hook = subscribe(url, organization, LOOPBACK)
    change(organization)
    sender = Dispatcher(
        lambda: db.connect(reuse_if_open=True), lambda: None, poll_seconds=0.05, allowed_networks=LOOPBACK
    )
    # The receiver's certificate is the test's own: trust it, as a CA bundle would a real one.
    sender._guarded_http = httpx.Client(
        verify=ssl.create_default_context(cafile=str(TLS / "hooks-cert.pem")),
        follow_redirects=False,
        trust_env=False,
        limits=httpx.Limits(max_keepalive_connections=0),
    )
    sender.poll_once()
    assert sender.settle(30)
    (attempt,) = _deliveries(hook["id"])
    assert (attempt["outcome"], attempt["status"], attempt["error"]) == ("delivered", 204, None)
    assert tls_receiver["server_names"] == ["hooks.example.test"]
    assert tls_receiver["hosts"] == [f"hooks.example.test:{tls_receiver['port']}"]
