"""Parity: the same command on the same data prints the same result in local and remote mode.

One demo database (``sowctl.services.demo_data``) is copied twice before a real
``sowctl serve --port 0`` starts on one copy. Every case runs in process twice:
local mode (``--db`` the other copy) and remote mode (``--server`` with a member
token and an API key of org-acme). Reads compare ``--json`` stdout (and piped TSV
for a few) and the one-line stderr of errors byte for byte, plus exit codes, error
cases included. Writes run in
the same order on both copies, so the two databases stay alike; their outputs are
compared with generated ids, fresh timestamps and the acting user normalized.

Local runs pass ``--org org-acme --company comp-acme-llc`` so their Group B/C and
``sows`` commands see what the token and key of org-acme see. Items, dependencies and
chains are never scoped by organization in local mode (full rights on the file), so the
local copy holds no SOW of another organization: it is the file an org-acme user would
have. The server's copy keeps Globex's, which its token must not see.
"""

from __future__ import annotations

import datetime
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sowctl.services import demo_data as demo
from tests.support.cli import mode_neutral

pytestmark = pytest.mark.slow

ORG, COMPANY = demo.DEMO_ORG, demo.DEMO_COMPANY
SOW = demo.DEMO_SOW
PROJECT = demo.DEMO_PROJECT_ID


@dataclass(frozen=True)
class Env:
    url: str
    local_db: Path
    remote_db: Path
    token: str
    viewer_token: str
    api_key: str
    globex_item: str
    globex_dep: str | None
    started: datetime.datetime


def _prepare(path: Path) -> tuple[str, str, str, dict]:
    from sowctl.services import credentials
    from sowctl.services.dataset import import_dataset
    from sowctl.storage import models
    from sowctl.storage.database import open_database

    data = demo.demo_dataset(datetime.datetime.now(datetime.UTC).date())
    database = open_database(str(path))
    try:
        import_dataset(data)
        token = credentials.create_token(demo.DEMO_USER, ORG, "member").secret
        viewer = credentials.create_token("user-parity-viewer", ORG, "viewer").secret
        key = credentials.create_key(ORG).secret
    finally:
        database.close()
        models.database_proxy.initialize(None)
    return token, viewer, key, data


def _drop_other_organizations_sows(path: Path) -> None:
    """Globex's SOWs, items and dependencies out of the local copy (see the module's doc)."""
    from sowctl.storage import models as m
    from sowctl.storage.database import open_database

    database = open_database(str(path))
    try:
        with database.atomic():
            sows = [
                s.key for s in m.Sow.select().where(m.Sow.organization == demo.GLOBEX_ORG)
            ]  # storage keys
            items = [i.id for i in m.Item.select().where(m.Item.sow.in_(sows))]
            m.Dependency.delete().where(
                m.Dependency.source_item.in_(items) | m.Dependency.target_item.in_(items)
            ).execute()
            m.Item.update(parent=None).where(m.Item.id.in_(items)).execute()
            m.Item.delete().where(m.Item.id.in_(items)).execute()
            m.Sow.delete().where(m.Sow.key.in_(sows)).execute()
    finally:
        database.close()
        m.database_proxy.initialize(None)


def _start_server(db: Path, workdir: Path) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env.update(SOWCTL_CONFIG=str(workdir / "server-config.toml"), NO_COLOR="1", PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "sowctl", "--db", str(db), "serve", "--port", "0", "--quiet"]
    argv += ["--rate-per-minute", "100000", "--rate-per-day", "1000000"]
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=workdir
    )
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            match = re.search(r"https?://[^\s]+", line)
            if match and not found:
                found.append(match.group(0).rstrip("/"))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(60) or not found:
        process.kill()
        err = process.stderr.read() if process.stderr else ""
        raise RuntimeError(f"sowctl serve did not start: {err}")
    return process, found[0]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    workdir = tmp_path_factory.mktemp("parity")
    base = workdir / "base.db"
    token, viewer, key, data = _prepare(base)
    local_db, remote_db = workdir / "local.db", workdir / "remote.db"
    for target in (local_db, remote_db):
        shutil.copyfile(base, target)  # WAL checkpointed on close: the file is the whole database
    _drop_other_organizations_sows(local_db)
    globex_item = next(i["id"] for i in data["items"] if i["sowId"] == demo.GLOBEX_SOW)
    globex_items = {i["id"] for i in data["items"] if i["sowId"] == demo.GLOBEX_SOW}
    globex_dep = next((d["id"] for d in data["dependencies"] if d["sourceItemId"] in globex_items), None)
    # Records the import stamped (e.g. SOWs without createdAt) must not pass for fresh ones:
    # writes start in a later second than the import ended.
    imported = datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)
    time.sleep(1.05 - datetime.datetime.now(datetime.UTC).microsecond / 1e6)
    started = imported + datetime.timedelta(seconds=1)
    process, url = _start_server(remote_db, workdir)
    try:
        yield Env(url, local_db, remote_db, token, viewer, key, globex_item, globex_dep, started)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Pair:
    local: object
    remote: object


@pytest.fixture
def both(cli, env: Env) -> Callable[..., Pair]:
    """Run one command in local and in remote mode; returns both CliResults."""

    def run(*args: str, token: str | None = None) -> Pair:
        local = cli("--db", env.local_db, "--org", ORG, "--company", COMPANY, *args)
        remote = cli(*remote_args(env, token), *args)
        return Pair(local, remote)

    return run


def remote_args(env: Env, token: str | None = None) -> list[str]:
    return [
        "--server", env.url, "--token", token or env.token, "--api-key", env.api_key,
        "--org", ORG, "--company", COMPANY,
    ]  # fmt: skip


def assert_same(pair: Pair, exit_code: int | None = None) -> None:
    local, remote = pair.local, pair.remote
    assert (local.exit_code, local.stdout) == (remote.exit_code, remote.stdout), (
        f"local: {local.exit_code} {local.stderr!r}\nremote: {remote.exit_code} {remote.stderr!r}"
    )
    if exit_code is not None:
        assert local.exit_code == exit_code, local.stderr
    if local.exit_code not in (0, 1):  # 1: a check found issues, and says so on stdout
        assert local.stdout == ""
        # A line for a person, or with --json one JSON object (the server's answer adds its
        # status and request id)
        assert local.stderr.startswith(("error: ", "{")) and local.stderr.count("\n") == 1
        assert mode_neutral(remote.stderr) == local.stderr  # the same one line, whichever mode


# --- reads: identical bytes ------------------------------------------------------------------------

READS = [
    # sows
    (("sows", "list", "--json"), 0),
    (("sows", "list", "--project", demo.PROJECT_TOWER_A, "--json"), 0),
    (("sows", "list"), 0),
    # items
    (("items", "list", SOW, "--json"), 0),
    (("items", "list", SOW), 0),
    (("items", "list", SOW, "-q"), 0),
    (("items", "list", SOW, "--type", "requirement", "--json"), 0),
    (("items", "list", SOW, "--type", "task_item", "--json"), 0),
    (("items", "list", SOW, "--parent", "item-005", "--json"), 0),
    (("items", "list", SOW, "--parent", "item-nope", "--json"), 3),
    (("items", "list", SOW, "--parent", "item-nope"), 3),
    (("items", "list", SOW, "--type", "epic", "--json"), 2),
    (("items", "list", "sow-does-not-exist", "--json"), 3),
    (("items", "list", demo.GLOBEX_SOW, "--json"), 3),
    (("items", "get", "item-005", "--json"), 0),
    (("items", "get", "item-001"), 0),
    (("items", "get", "item-nope", "--json"), 3),
    (("items", "tree", SOW, "--json"), 0),
    (("items", "tree", "sow-nope", "--json"), 3),
    # an empty id argument is invalid input (exit 2) in every command, never "not found"
    (("items", "get", "", "--json"), 2),
    (("items", "list", "", "--json"), 2),
    (("items", "create", "", "--title", "x", "--type", "task_item"), 2),
    (("items", "update", "", "--title", "x"), 2),
    (("items", "delete", "", "--yes"), 2),
    (("deps", "get", "", "--json"), 2),
    (("deps", "delete", "", "--yes"), 2),
    (("chain", "check", ""), 2),
    (("budgets", "snapshot", "", "--project", str(PROJECT)), 2),
    (("contracts", "show", "", "--project", str(PROJECT)), 2),
    # dependencies
    (("deps", "list", "--json"), 0),
    (("deps", "list"), 0),
    (("deps", "list", "--sow", SOW, "--json"), 0),
    (("deps", "list", "--item", "item-014", "--json"), 0),
    (("deps", "list", "--item", "item-nope", "--json"), 3),
    (("deps", "list", "--item", "item-nope"), 3),
    (("deps", "list", "--type", "critical", "--json"), 0),
    (("deps", "list", "--type", "overdue", "--json"), 0),
    (("deps", "list", "--type", "external", "--json"), 0),
    (("deps", "list", "--status", "active", "--json"), 0),
    (("deps", "list", "--status", "cancelled", "--type", "external", "--json"), 0),
    (("deps", "list", "--type", "urgent", "--json"), 2),
    (("deps", "list", "--status", "done", "--json"), 2),
    (("deps", "list", "--sow", "sow-nope", "--json"), None),
    (("deps", "get", demo.DEMO_CRITICAL_DEPENDENCY, "--json"), 0),
    (("deps", "get", "dep-011", "--json"), 0),
    (("deps", "get", "dep-nope", "--json"), 3),
    # chain
    (("chain", "show", SOW, "--format", "json"), 0),
    (("chain", "show", SOW, "--json"), 0),
    (("chain", "show", "sow-nope", "--format", "json"), 3),
    (("chain", "check", SOW, "--json"), 1),  # the demo has critical and overdue dependencies
    (("chain", "check", SOW, "--fail-on", "blocked", "--json"), None),
    (("chain", "check", SOW, "--fail-on", "circular", "--json"), 0),
    (("chain", "check", SOW, "--fail-on", "circular"), 0),
    (("chain", "check", SOW, "--fail-on", "nonsense"), 2),
    (("chain", "check", "sow-nope"), 3),
    (("chain", "check", SOW, "--fail-on", "escalation,conflict,external", "--due-within", "9w"), None),
    (("chain", "check", SOW, "--fail-on", "blocked", "--report", "sarif=-"), None),
    (("chain", "check", SOW, "--report", "gitlab=-"), None),
    (("chain", "ready", SOW, "--json"), 0),
    (("chain", "blocked", SOW, "--json"), 0),
    (("chain", "blocked", SOW), 0),
    # Group C listing
    (("projects", "list", "--json"), 0),
    (("projects", "list"), 0),
    (("projects", "list", "--status", "active", "--json"), 0),
    (("projects", "list", "--client", demo.CLIENT_NORTHWIND, "--json"), 0),
    (("projects", "list", "--limit", "1", "--offset", "1", "--json"), 0),
    (("projects", "list", "--limit", "ten", "--json"), 2),
    (("projects", "list", "--status", "paused", "--json"), 2),
    (("clients", "list", "--json"), 0),
    (("clients", "list", "--limit", "2", "--json"), 0),
    (("clients", "list", "--offset", "-1", "--json"), 2),
    # Group B finance
    (("budgets", "views", "--project", str(PROJECT), "--json"), 0),
    (("budgets", "views", "--project", str(PROJECT)), 0),
    (("budgets", "views", "--project", "999", "--json"), 3),
    (("budgets", "views", "--project", "abc", "--json"), 2),
    (("budgets", "snapshots", "--project", str(PROJECT), "--json"), 0),
    (("budgets", "snapshot", "21", "--project", str(PROJECT), "--json"), 0),
    (("budgets", "snapshot", "999", "--project", str(PROJECT), "--json"), 3),
    (("budgets", "snapshot", "x", "--project", str(PROJECT), "--json"), 2),
    (("budgets", "views", "--project", "201", "--json"), 3),  # globex's project
    (("contracts", "show", "31", "--project", str(PROJECT), "--json"), 0),
    (("contracts", "show", "31", "--project", str(PROJECT)), 0),
    (("contracts", "show", "999", "--project", str(PROJECT), "--json"), 3),
    (("contracts", "show", "32", "--project", str(PROJECT), "--json"), 3),  # project 102's
    (("po", "list", "--project", str(PROJECT), "--json"), 0),
    (("po", "list", "--project", str(PROJECT)), 0),
    (("po", "list", "--project", "999", "--json"), 3),
]


@pytest.mark.parametrize(("args", "exit_code"), READS, ids=[" ".join(a) for a, _ in READS])
def test_read_parity(both, args, exit_code):
    assert_same(both(*args), exit_code)


def test_other_organizations_records_are_invisible_in_both(both, env):
    # Remotely hidden from org-acme's token; locally absent from org-acme's file.
    assert_same(both("items", "get", env.globex_item, "--json"), 3)
    assert_same(both("deps", "list", "--item", env.globex_item, "--json"), 3)
    assert_same(both("items", "list", SOW, "--parent", env.globex_item, "--json"), 3)
    if env.globex_dep:
        assert_same(both("deps", "get", env.globex_dep, "--json"), 3)


@pytest.mark.parametrize(
    "args",
    [
        ("items", "list", SOW, "--json"),
        ("deps", "list", "--json"),
        ("sows", "list", "--json"),
        ("projects", "list", "--json"),
        ("clients", "list", "--json"),
        ("budgets", "views", "--project", str(PROJECT), "--json"),
        ("po", "list", "--project", str(PROJECT), "--json"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_remote_lists_fetch_every_page(both, monkeypatch, args):
    """With pages of 2 records, remote mode fetches every page and still prints the same."""
    from sowctl.backends import remote

    monkeypatch.setattr(remote, "PAGE_SIZE", 2)
    assert_same(both(*args), 0)


# --- writes: same sequence on both copies, normalized ------------------------------------------------

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
TIMESTAMP = re.compile(r"\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)\b")
# A finding's fingerprint hashes the ids it involves, so generated ids give it a fresh value too.
FINGERPRINT = re.compile(r"\b[0-9a-f]{64}\b")
CALLER = re.compile(r'("createdByUserId": )"(local|' + re.escape(demo.DEMO_USER) + r')"')


def normalize(text: str, since: datetime.datetime, ids: dict[str, str]) -> str:
    """Generated ids and fingerprints become <id-N> (by first appearance), fresh timestamps <now>, and the
    acting user (``local`` in local mode, the token's user remotely) <caller>."""

    def new_id(match: re.Match) -> str:
        return ids.setdefault(match.group(0), f"<id-{len(ids) + 1}>")

    def fresh(match: re.Match) -> str:
        moment = datetime.datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%SZ")
        return "<now>" if moment >= since else match.group(1)

    text = UUID.sub(new_id, text)
    text = FINGERPRINT.sub(new_id, text)
    text = TIMESTAMP.sub(fresh, text)
    return CALLER.sub(r'\1"<caller>"', text)


class Transcript:
    """A scenario's results in one mode; ``new`` names the ids created on the way."""

    def __init__(self, run: Callable[..., object], since: datetime.datetime) -> None:
        self.run_cli = run
        self.since = since
        self.lines: list[tuple[int, str, str]] = []
        self.args: list[tuple[str, ...]] = []
        self.ids: dict[str, str] = {}

    def __call__(self, *args: str, unordered: bool = False):
        """Run one step; ``unordered``: lists whose order is (createdAt, id) hold records
        created in the same second, whose random ids order them differently per mode."""
        result = self.run_cli(*args)
        self.args.append(args)
        text = normalize(result.stdout, self.since, self.ids)
        if unordered and result.stdout:
            text = json.dumps(canonical(json.loads(text)), indent=2, sort_keys=True)
        stderr = normalize(mode_neutral(result.stderr), self.since, self.ids)
        self.lines.append((result.exit_code, text, stderr))
        return result


def canonical(value):
    """Every list of objects sorted by content (for steps whose order ties)."""
    if isinstance(value, dict):
        return {key: canonical(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [canonical(item) for item in value]
        if all(isinstance(item, dict) for item in items):
            items.sort(key=lambda item: json.dumps(item, sort_keys=True))
        return items
    return value


def run_scenario(cli, env: Env, scenario: Callable[[Transcript], None]) -> None:
    local = Transcript(
        lambda *a: cli("--db", env.local_db, "--org", ORG, "--company", COMPANY, *a), env.started
    )
    remote = Transcript(lambda *a: cli(*remote_args(env), *a), env.started)
    scenario(local)
    scenario(remote)
    for step, (mine, theirs) in enumerate(zip(local.lines, remote.lines, strict=True)):
        if mine != theirs:
            diff = difflib.unified_diff(
                (mine[1] + mine[2]).splitlines(),
                (theirs[1] + theirs[2]).splitlines(),
                "local",
                "remote",
                lineterm="",
                n=2,
            )
            pytest.fail(
                f"step {step} ({' '.join(map(str, local.args[step]))}): exit {mine[0]} vs {theirs[0]}\n"
                + "\n".join(diff)
            )


def created_id(result) -> str:
    assert result.exit_code == 0, result.stderr
    return result.json()["id"]


def scenario_sow_and_items(run: Transcript) -> None:
    run("sows", "create", "Parity SOW", "--id", "sow-parity", "--project", demo.PROJECT_TOWER_A, "--json")
    run("sows", "create", "Parity SOW again", "--id", "sow-parity", "--json")  # duplicate id
    req = created_id(
        run("items", "create", "sow-parity", "--title", "Req", "--type", "requirement", "--json")
    )
    a = created_id(run("items", "create", "sow-parity", "--title", "Task A", "--parent", req, "--json"))
    b = created_id(run("items", "create", "sow-parity", "--title", "Task B", "--parent", req, "--json"))
    run("items", "create", "sow-parity", "--title", "Bad", "--type", "requirement", "--parent", a, "--json")
    run("items", "create", "sow-parity", "--title", "Bad type", "--type", "epic", "--json")
    run("items", "create", "sow-parity", "--title", "", "--json")
    run("items", "create", "sow-nope", "--title", "Nowhere", "--json")
    run("items", "update", a, "--status", "completed", "--json")
    run("items", "update", b, "--status", "in_progress", "--title", "Task B (started)", "--json")
    run("items", "update", b, "--status", "finished", "--json")
    run("items", "update", "item-nope", "--title", "x", "--json")
    run("items", "get", req, "--json")  # calculated status: in_progress
    run("items", "reorder", "sow-parity", f"{a}=1", f"{b}=0", "--json")
    run("items", "reorder", "sow-parity", f"{a}=x")
    run("items", "list", "sow-parity", "--json", unordered=True)
    run("items", "tree", "sow-parity", "--json")
    run("sows", "list", "--json")
    run("items", "delete", b, "--json")
    run("items", "delete", b, "--json")
    run("items", "list", "sow-parity", "--json", unordered=True)


def scenario_dependencies(run: Transcript) -> None:
    x = created_id(run("items", "create", SOW, "--title", "Dep X", "--json"))
    y = created_id(run("items", "create", SOW, "--title", "Dep Y", "--json"))
    z = created_id(run("items", "create", SOW, "--title", "Dep Z", "--json"))
    d1 = created_id(
        run("deps", "create", "--source", x, "--target", y, "--type", "depends_on", "--risk", "high",
            "--sla", "2030-01-31", "--notes", "parity", "--json")
    )  # fmt: skip
    run("deps", "create", "--source", y, "--target", z, "--type", "depends_on", "--risk", "low", "--json")
    run("deps", "create", "--source", z, "--target", x, "--type", "depends_on", "--risk", "low", "--json")
    run("deps", "create", "--source", x, "--target", z, "--type", "successor", "--risk", "low", "--json")
    run("deps", "create", "--source", x, "--target", x, "--type", "depends_on", "--risk", "low", "--json")
    run(
        "deps",
        "create",
        "--source",
        x,
        "--target",
        "item-nope",
        "--type",
        "blocks",
        "--risk",
        "low",
        "--json",
    )
    run("deps", "create", "--source", x, "--target", y, "--type", "sometimes", "--risk", "low", "--json")
    run("deps", "create", "--source", x, "--target", y, "--type", "blocks", "--risk", "low",
        "--sla", "31/01/2030", "--json")  # fmt: skip
    ext = created_id(
        run("deps", "create", "--source", z, "--external", "Crane rental", "--type", "depends_on",
            "--risk", "critical", "--vendor", "LiftCo", "--owner", "Sam", "--email", "sam@liftco.example",
            "--sla", "2020-01-01", "--json")
    )  # fmt: skip
    run("deps", "update", d1, "--status", "resolved", "--risk", "medium", "--json")
    run("deps", "update", d1, "--status", "done", "--json")
    run("deps", "update", "dep-nope", "--status", "resolved", "--json")
    run("deps", "get", d1, "--json")
    run("deps", "list", "--item", z, "--json", unordered=True)
    run("deps", "list", "--type", "overdue", "--json", unordered=True)
    run("chain", "show", SOW, "--format", "json", unordered=True)
    run("chain", "check", SOW, "--fail-on", "overdue", "--json", unordered=True)
    run("deps", "delete", ext, "--json")
    run("deps", "delete", ext, "--json")
    run("items", "delete", y, "--json")  # takes its dependencies with it
    run("deps", "list", "--sow", SOW, "--json", unordered=True)


def scenario_purchase_orders(run: Transcript) -> None:
    project = str(PROJECT)
    run("po", "create", "--project", project, "--commitment", "5001", "--title", "Parity bolts",
        "--vendor", "7", "--status", "draft", "--line", "Bolts:0.10:3", "--line", "Nuts:0.20:3",
        "--json")  # fmt: skip
    run("po", "create", "--project", project, "--commitment", "5001", "--title", "Unknown vendor",
        "--vendor", "999", "--line", "Bolts:1.00:3", "--json")  # fmt: skip
    run("po", "create", "--project", project, "--commitment", "5001", "--title", "Other company's vendor",
        "--vendor", "20", "--line", "Bolts:1.00:3", "--json")  # fmt: skip
    run("po", "create", "--project", project, "--commitment", "5001", "--title", "Bad amount",
        "--vendor", "7", "--line", "Bolts:1,00:3", "--json")  # fmt: skip
    run("po", "create", "--project", project, "--commitment", "9999", "--title", "No commitment",
        "--vendor", "7", "--line", "Bolts:1.00:3", "--json")  # fmt: skip
    run("po", "create", "--project", "999", "--commitment", "5001", "--title", "No project",
        "--vendor", "7", "--line", "Bolts:1.00:3", "--json")  # fmt: skip
    unknown = run("po", "create", "--project", "abc", "--commitment", "5001", "--title", "Not a number",
        "--vendor", "7", "--line", "Bolts:1.00:3", "--json")  # fmt: skip
    assert (unknown.exit_code, json.loads(unknown.stderr)["message"]) == (3, "project abc not found")
    run("po", "list", "--project", project, "--json")


SCENARIOS = [scenario_sow_and_items, scenario_dependencies, scenario_purchase_orders]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_write_parity(cli, env, scenario):
    run_scenario(cli, env, scenario)


def test_writes_left_both_databases_alike(both):
    """After the write scenarios, every listing still agrees (modulo generated ids)."""
    for args in (("sows", "list", "--json"), ("deps", "list", "--json"), ("projects", "list", "--json")):
        pair = both(*args)
        assert pair.local.exit_code == pair.remote.exit_code == 0
        since = datetime.datetime(1970, 1, 1)
        assert normalize(pair.local.stdout, since, {}) == normalize(pair.remote.stdout, since, {})


# --- remote only: what local mode's full rights cannot show -------------------------------------------


def test_viewer_token_may_read_but_not_write(cli, env):
    viewer = remote_args(env, env.viewer_token)
    assert cli(*viewer, "items", "get", "item-001", "--json").exit_code == 0
    result = cli(*viewer, "items", "create", SOW, "--title", "Not allowed", "--json")
    assert result.exit_code == 4
    assert result.stdout == ""
    error = json.loads(result.stderr)
    assert (error["code"], error["status"]) == ("forbidden", 403) and "viewer" in error["message"]
    result = cli(*viewer, "deps", "update", "dep-002", "--status", "resolved")
    assert result.exit_code == 4
    local = cli("--db", env.local_db, "items", "get", "item-001", "--json")
    assert local.exit_code == 0  # local mode acts with full rights


def test_bad_token_and_key_exit_4(cli, env):
    args = ["--server", env.url, "--token", "sowt_not-a-real-token", "--api-key", "sowk_not-a-real-key"]
    args += ["--org", ORG, "--company", COMPANY]
    for command in (
        ("items", "list", SOW),
        ("projects", "list"),
        ("budgets", "views", "--project", str(PROJECT)),
    ):
        result = cli(*args, *command)
        assert result.exit_code == 4, (command, result.stderr)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_missing_credentials_exit_4_before_any_request(cli, env):
    result = cli("--server", env.url, "budgets", "views", "--project", str(PROJECT))
    assert result.exit_code == 4
    assert result.stderr == "error: remote mode needs --api-key (or SOWCTL_API_KEY) for this command\n"
    result = cli("--server", env.url, "projects", "list")
    assert result.exit_code == 4
    assert result.stderr == "error: remote mode needs --token (or SOWCTL_TOKEN) for this command\n"


def test_missing_org_or_company_is_a_usage_error_like_the_servers_400(cli, env):
    base = ["--server", env.url, "--api-key", env.api_key]
    result = cli(*base, "budgets", "views", "--project", str(PROJECT))
    assert result.exit_code == 2
    assert result.stderr == "error: remote mode needs --org (or SOWCTL_ORG) for this command\n"
    result = cli(*base, "--org", ORG, "budgets", "views", "--project", str(PROJECT))
    assert result.exit_code == 2
    assert result.stderr == "error: remote mode needs --company (or SOWCTL_COMPANY) for this command\n"


def test_status_against_the_live_server(cli, env):
    result = cli(*remote_args(env), "status", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["reachable"] is True


# --- admin commands refuse remote mode -------------------------------------------------------------------

ADMIN = [
    ("import", "dataset.json"),
    ("export",),
    ("export", "out.json"),
    ("tokens", "create", "--user", "u", "--org", ORG),
    ("tokens", "list"),
    ("tokens", "revoke", "tok"),
    ("keys", "create", "--org", ORG),
    ("keys", "list"),
    ("keys", "revoke", "key"),
    ("serve", "--port", "0"),
]


@pytest.mark.parametrize("args", ADMIN, ids=[" ".join(a) for a in ADMIN])
def test_admin_commands_refuse_remote_mode(cli, env, tmp_path, monkeypatch, args):
    (tmp_path / "dataset.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    result = cli("--server", env.url, "--token", env.token, *args)
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert "local mode" in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert not (tmp_path / "out.json").exists()


# --- start-up: the narrowed command tree behaves like the full one ------------------------------------------


def _full_app_output(args: list[str]) -> tuple[int, str]:
    """What the complete ``sowctl.cli.app`` prints (no narrowing), for comparison."""
    import contextlib
    import io

    from sowctl.cli import app

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            app(args=args, prog_name="sowctl", standalone_mode=False)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue()


@pytest.mark.parametrize(
    "args",
    [["--help"], ["-h"], ["--db", "x.db", "--help"], ["items", "--help"], ["deps", "list", "--help"]],
    ids=" ".join,
)
def test_narrowed_cli_shows_the_same_help(cli, args):
    result = cli(*args)
    assert (result.exit_code, result.stdout) == _full_app_output(args)
    assert "Commands" in result.stdout or "Options" in result.stdout


def test_narrowed_cli_picks_the_invoked_command():
    from sowctl.cli import _invoked

    assert _invoked(["--db", "items", "deps", "list"]) == "deps"
    assert _invoked(["--timeout", "3", "--json", "status"]) == "status"
    assert _invoked(["--db=x.db", "items", "list"]) == "items"
    assert _invoked(["--help", "items"]) is None
    assert _invoked([]) is None
    assert _invoked(["--", "chain"]) == "chain"


def test_json_output_imports_neither_rich_nor_httpx(tmp_path):
    db = tmp_path / "s.db"
    code = (
        "import sys\n"
        "from sowctl.cli import main\n"
        f"assert main(['--db', {str(db)!r}, 'sows', 'create', 'S', '--id', 's-1', '--json']) == 0\n"
        f"assert main(['--db', {str(db)!r}, 'items', 'list', 's-1', '--json']) == 0\n"
        f"assert main(['--db', {str(db)!r}, 'status', '--json']) == 0\n"
        "loaded = [m for m in ('rich', 'httpx', 'bottle') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["SOWCTL_CONFIG"] = str(tmp_path / "config.toml")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_command_imports_only_its_own_group(tmp_path):
    """`sowctl --help` lists every group from sowctl.commands.GROUPS; a run imports one."""
    code = (
        "import sys\n"
        "from sowctl.cli import main\n"
        "assert main(['--help']) == 0\n"
        f"assert main(['--db', {str(tmp_path / 's.db')!r}, 'items', 'list', 's-1', '--json']) == 2\n"
        "from sowctl.commands import GROUPS\n"
        "loaded = [name for name, _ in GROUPS if f'sowctl.commands.{name}' in sys.modules]\n"
        "assert loaded == ['items'], loaded\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["SOWCTL_CONFIG"] = str(tmp_path / "config.toml")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_remote_mode_imports_neither_peewee_nor_the_services(tmp_path):
    """Remote mode reads only the operations' declarations: no models, no database driver."""
    code = (
        "import sys\n"
        "from sowctl.cli import main\n"
        "code = main(['--server', 'http://127.0.0.1:9', '--token', 't', 'items', 'get', 'x', '--json'])\n"
        "assert code == 5, code\n"
        "loaded = [m for m in sys.modules if m in ('peewee', 'psycopg2', 'sowctl.storage.models')\n"
        "          or m.startswith('sowctl.services')]\n"
        "assert not loaded, loaded\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["SOWCTL_CONFIG"] = str(tmp_path / "config.toml")
    env["SOWCTL_RETRIES"] = "0"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "command", [("items", "tree", "x"), ("chain", "ready", "x"), ("chain", "blocked", "x")]
)
def test_remote_trees_and_readiness_load_no_storage(tmp_path, command):
    """The item tree's nesting and the readiness rules are pure (``services.hierarchy``,
    ``gate.risks``): remote mode loads no model and no database driver for them."""
    code = (
        "import sys\n"
        "from sowctl.cli import main\n"
        f"code = main(['--server', 'http://127.0.0.1:9', '--token', 't', *{list(command)!r}])\n"
        "assert code == 5, code\n"
        "loaded = [m for m in sys.modules if m in ('peewee', 'psycopg2', 'sowctl.storage.models')]\n"
        "assert not loaded, loaded\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["SOWCTL_CONFIG"] = str(tmp_path / "config.toml")
    env["SOWCTL_RETRIES"] = "0"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("org", "company"),
    [("org-nope", COMPANY), ("org-nope", "comp-nope"), (ORG, "comp-nope")],
)
@pytest.mark.parametrize(
    "args",
    [
        ("budgets", "views", "--project", str(PROJECT), "--json"),
        ("contracts", "show", "31", "--project", str(PROJECT), "--json"),
        ("po", "list", "--project", str(PROJECT), "--json"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_an_unknown_scope_names_the_same_missing_thing_in_both(cli, env, org, company, args):
    """The organization is checked first, then the company; local mode
    names what the server names (the server's key belongs to org-acme)."""
    scope = ["--org", org, "--company", company]
    local = cli("--db", env.local_db, *scope, *args)
    remote = cli("--server", env.url, "--token", env.token, "--api-key", env.api_key, *scope, *args)
    assert_same(Pair(local, remote), 3)
    missing = f"organization {org}" if org != ORG else f"company {company}"
    assert f"{missing} not found" in local.stderr
