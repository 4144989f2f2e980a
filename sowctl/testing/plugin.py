"""The pytest plugin of sowctl (entry point ``pytest11``: active once sowctl is installed).

Fixtures (used only by the tests that ask for them):

* ``sowctl_server`` (session): ``sowctl serve`` on a free port with the admin API on,
  stopped by its PID at the end; attributes ``url``, ``admin_token``, ``admin``. Under
  pytest-xdist each worker has its own server and database.
* ``sowctl_service`` (per test): a clean state with the test's dataset, a fresh token
  and API key; attributes ``url``, ``token``, ``api_key``, ``org``, ``company``,
  ``client`` (a ``sowctl.Client``) and ``admin`` (an ``AdminClient``: faults, clock,
  checkpoints, ``verify``...). The state is a dataset load the first time, and a
  checkpoint restore for every later test with the same dataset (milliseconds).

* ``sowctl_receiver`` (per test): a ``WebhookReceiver`` on a free local port that collects
  webhook deliveries and checks their Standard Webhooks signature with its ``secret`` (give it
  to the subscription); ``respond(500, 500)`` makes the next deliveries fail, and
  ``wait_for("item.created", data={...})`` waits for a matching event, failing with the closest.
  With ``--sowctl-server`` the subscription is a sandbox's, which reaches 127.0.0.1 only when
  the shared server runs on the same host with ``--webhook-allow-network 127.0.0.1/32``.

Markers: ``sowctl_dataset(path_or_dict, user=, org=, company=, role=)`` (a path is
relative to the test file), ``sowctl_faults(**config)`` (the ``/_admin/faults`` JSON),
``sowctl_latency(ms)`` or ``sowctl_latency(min_ms, max_ms)``, ``sowctl_clock(timestamp)``.

Options: ``--sowctl-contract off|report|strict`` (serve in that contract mode: strict refuses
every request relying on sowctl's extensions, so a suite run with it proves its client uses only
what the service describes), ``--sowctl-db URL`` (a database the tests own, usually PostgreSQL: it is emptied;
under xdist each worker uses ``NAME_gwN``, created when missing) and ``--sowctl-server URL``
(an already running, shared ``sowctl serve --admin-token T``; the token from
``--sowctl-admin-token`` or ``SOWCTL_ADMIN_TOKEN``). On a shared server the session (each
xdist worker) makes a sandbox of its own and removes it at the end, or, given a sandbox's
admin token (``sowctl sandbox create``), uses that sandbox: every reset, dataset,
checkpoint, fault and request log is that sandbox's organization's, so other jobs on the
server are untouched. A dataset's organization becomes the sandbox's (one organization per
dataset); ``sowctl_clock`` cannot be used there (one service clock serves every sandbox).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a test asks for a fixture: pytest runs without sowctl stay fast
    from sowctl.testing import AdminClient, SandboxSession, SowctlServer

CHECKPOINT_PREFIX = "pytest-"
MARKERS = (
    "sowctl_dataset(dataset, user=None, org=None, company=None, role='member'): the dataset "
    "(a JSON file relative to the test file, or a dict) that sowctl_service starts from",
    "sowctl_faults(**config): faults for this test, as PUT /_admin/faults takes them "
    "(rate, status, mode, routes, count, latencyMs)",
    "sowctl_latency(ms, max_ms=None): latency added to every API request in this test",
    "sowctl_clock(timestamp): the service clock, frozen at this time for this test",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sowctl", "sowctl serve as a test double")
    group.addoption(
        "--sowctl-db",
        metavar="URL",
        help="Serve from this database (a PostgreSQL URL; the tests empty it) instead of a temp SQLite file.",
    )
    group.addoption(
        "--sowctl-server",
        metavar="URL",
        help="Use this running 'sowctl serve --admin-token T' instead of starting one.",
    )
    group.addoption(
        "--sowctl-contract",
        choices=("off", "report", "strict"),
        default=None,
        help="Serve in this contract mode: strict refuses (400) every request that relies on "
        "more than the service's description, so the suite proves the code under test does not; "
        "report only marks them (GET /_admin/contract lists them).",
    )
    group.addoption(
        "--sowctl-admin-token",
        metavar="TOKEN",
        default=os.environ.get("SOWCTL_ADMIN_TOKEN"),
        help="The admin token of --sowctl-server (default: SOWCTL_ADMIN_TOKEN).",
    )


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)


# --- the server -------------------------------------------------------------------------------


@dataclass
class ServerHandle:
    """What ``sowctl_server`` gives: where the server is and how to administer it."""

    url: str
    admin_token: str
    admin: AdminClient
    process: SowctlServer | None = None  # None for --sowctl-server
    prepared: set[str] = field(default_factory=set)  # checkpoints this session saved
    sandbox: SandboxSession | None = None  # --sowctl-server: this session's sandbox


@pytest.fixture(scope="session")
def sowctl_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    """``sowctl serve`` with the admin API on, for the whole session (one per xdist worker)."""
    from sowctl.testing import AdminClient, AdminError, SandboxSession, SowctlServer

    config = request.config
    url = config.getoption("--sowctl-server")
    if url:
        token = config.getoption("--sowctl-admin-token")
        if not token:
            raise pytest.UsageError(
                "--sowctl-server needs --sowctl-admin-token TOKEN (or SOWCTL_ADMIN_TOKEN)"
            )
        if config.getoption("--sowctl-contract"):
            raise pytest.UsageError(
                "--sowctl-contract: contract mode is the whole server's; start the shared server "
                "with 'sowctl serve --contract MODE' instead"
            )
        url = url.rstrip("/")
        with contextlib.ExitStack() as stack:
            try:
                session = stack.enter_context(SandboxSession.opened(url, token))
            except AdminError as exc:
                raise pytest.UsageError(f"--sowctl-server {url}: no sandbox to work in: {exc}") from None
            yield ServerHandle(url, session.admin_token, session.admin, sandbox=session)
        return
    directory = tmp_path_factory.mktemp("sowctl")
    database = config.getoption("--sowctl-db") or str(directory / "sowctl.db")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and config.getoption("--sowctl-db"):
        database = _worker_database(database, worker)
    contract = config.getoption("--sowctl-contract")
    server = SowctlServer(database, directory / "server.log", *(["--contract", contract] if contract else []))
    try:
        with AdminClient(server.url, server.admin_token) as admin:
            yield ServerHandle(server.url, server.admin_token, admin, server)
    finally:
        server.stop()


def _worker_database(url: str, worker: str) -> str:
    """``NAME_gwN`` on the same PostgreSQL server, created when missing (a SQLite file: ``FILE-gwN``)."""
    from urllib.parse import urlsplit, urlunsplit

    if not url.startswith(("postgres://", "postgresql://")):
        path = Path(url.removeprefix("sqlite:///"))
        return str(path.with_name(f"{path.stem}-{worker}{path.suffix}"))
    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'postgres'}_{worker}"
    try:
        import psycopg2
    except ImportError:
        raise pytest.UsageError(
            "--sowctl-db with pytest-xdist needs psycopg2 (pip install psycopg2-binary)"
        ) from None
    conn = psycopg2.connect(url)
    conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cursor.fetchone() is None:
                cursor.execute(f'CREATE DATABASE "{name}"')
    finally:
        conn.close()
    return urlunsplit(parts._replace(path="/" + name))


# --- one test's service -----------------------------------------------------------------------


@dataclass
class Service:
    """What ``sowctl_service`` gives one test."""

    url: str
    token: str | None
    api_key: str | None
    org: str | None
    company: str | None
    client: Any  # sowctl.Client
    admin: AdminClient


@pytest.fixture
def sowctl_service(request: pytest.FixtureRequest, sowctl_server: ServerHandle) -> Iterator[Service]:
    """A clean state with the test's dataset (marker ``sowctl_dataset``), faults, latency and clock."""
    from sowctl.backends.client import Client

    admin = sowctl_server.admin
    dataset, options = _dataset(request)
    sandbox = sowctl_server.sandbox
    if sandbox is not None:
        dataset, options = sandbox.dataset(dataset, options)
    _prepare(sowctl_server, dataset)
    _apply_markers(request, admin, sandbox is not None)
    if sandbox is None:
        user, org, company = _identity(dataset, options)
    else:  # user ids are the server's: the sandbox's own user unless the dataset names one
        user, org, company = _identity(dataset, options, sandbox.user_id)
        org = org or sandbox.organization_id
    token = admin.token(user, org, options.get("role", "member")) if user and org else None
    api_key = admin.api_key(org) if org else None
    client = Client(sowctl_server.url, token=token, api_key=api_key, org=org, company=company, retries=0)
    try:
        yield Service(sowctl_server.url, token, api_key, org, company, client, admin)
    finally:
        client.close()


@pytest.fixture
def sowctl_receiver() -> Iterator[Any]:  # a sowctl.testing.receiver.WebhookReceiver
    """A local webhook receiver with a fresh signing secret, closed after the test."""
    from sowctl.testing.receiver import WebhookReceiver

    with WebhookReceiver(WebhookReceiver.new_secret()) as receiver:
        yield receiver


def _dataset(request: pytest.FixtureRequest) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    marker = request.node.get_closest_marker("sowctl_dataset")
    if marker is None:
        return None, {}
    if len(marker.args) != 1:
        # pytest.fail without its traceback: the mistake is in the marker, not in the plugin.
        pytest.fail("sowctl_dataset takes one dataset: a JSON file path or a dict", pytrace=False)
    source = marker.args[0]
    if isinstance(source, dict):
        return source, dict(marker.kwargs)
    path = Path(source)
    if not path.is_absolute():
        path = Path(request.node.path).parent / path
    from sowctl.foundation import json_input

    try:
        text = path.read_text(encoding="utf-8")
        json_input.check_depth(text)  # JsonTooDeep is a ValueError: said below
        return json.loads(text), dict(marker.kwargs)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        pytest.fail(f"@pytest.mark.sowctl_dataset: cannot read {path}: {reason}", pytrace=False)
    except ValueError as exc:
        pytest.fail(f"@pytest.mark.sowctl_dataset: {path} is not valid JSON: {exc}", pytrace=False)


def _prepare(server: ServerHandle, dataset: dict[str, Any] | None) -> None:
    """The dataset's state: restored from its checkpoint, or loaded once and checkpointed."""
    text = json.dumps(dataset, sort_keys=True, separators=(",", ":"))
    name = CHECKPOINT_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:24]
    if name in server.prepared:
        server.admin.restore(name)
        return
    if dataset is None:
        server.admin.reset()
    else:
        from sowctl.testing.admin import AdminError

        try:
            server.admin.load(dataset, replace=True)
        except AdminError as exc:  # the dataset is wrong, not the plugin: no traceback into it
            pytest.fail(f"@pytest.mark.sowctl_dataset: the dataset was refused: {exc}", pytrace=False)
    server.admin.checkpoint(name)
    server.prepared.add(name)


def _apply_markers(request: pytest.FixtureRequest, admin: AdminClient, shared: bool = False) -> None:
    faults: dict[str, Any] = {}
    marker = request.node.get_closest_marker("sowctl_faults")
    if marker is not None:
        faults.update(marker.kwargs)
    marker = request.node.get_closest_marker("sowctl_latency")
    if marker is not None:
        faults["latencyMs"] = list(marker.args) if len(marker.args) == 2 else marker.args[0]
    if faults:
        admin.set_faults(faults)
    marker = request.node.get_closest_marker("sowctl_clock")
    if marker is not None:
        if shared:
            pytest.fail(
                "@pytest.mark.sowctl_clock: a shared server (--sowctl-server) has one service clock "
                "for every sandbox; freeze it on a server of this run's own",
                pytrace=False,
            )
        admin.freeze_clock(marker.args[0])


def _identity(
    dataset: dict[str, Any] | None, options: dict[str, Any], default_user: str = "pytest-user"
) -> tuple[str | None, str | None, str | None]:
    """(user, organization, company): the marker's, else the dataset's first of each (a token
    needs a user: ``default_user`` when there is none, which the admin API creates)."""
    dataset = dataset or {}
    org = options.get("org") or _first(dataset.get("organizations"), "id")
    users = [u for u in dataset.get("users") or [] if isinstance(u, dict) and u.get("organizationId") == org]
    user = options.get("user") or _first(users, "id")
    if org and not user:
        user = default_user
    companies = [
        c for c in dataset.get("companies") or [] if isinstance(c, dict) and c.get("organizationId") == org
    ]
    company = options.get("company") or _first(companies, "id")
    return user, org, company


def _first(records: Any, key: str) -> str | None:
    for record in records or []:
        if isinstance(record, dict) and record.get(key) is not None:
            return str(record[key])
    return None
