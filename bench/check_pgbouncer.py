#!/usr/bin/env python3
"""``sowctl serve`` behind PgBouncer in transaction pooling mode: a check, not a timing.

    python bench/check_pgbouncer.py      # needs pgbouncer on PATH (apt-get install -y pgbouncer)

Starts PgBouncer on a free port (``pool_mode = transaction``, 3 server connections for
every client: consecutive statements of one client land on different server
connections) in front of the PostgreSQL at ``--pg-url``, makes a fresh database,
migrates it and loads a few records through PgBouncer, then runs ``sowctl serve
--workers 2`` on it and, from 16 threads at once: reads items and pages of items,
creates items and dependencies in two organizations, and races pairs of requests
that would together close a dependency cycle (exactly one of each pair must win).
Every answer must be the expected one; the script exits non-zero otherwise.
PgBouncer refuses to run as root, so as root it runs as ``--pgbouncer-user``.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

DB_NAME = "sowctl_pgbouncer_check"
ORGS = ("org-a", "org-b")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def admin(pg_url: str):
    import psycopg2

    parts = urlsplit(pg_url)
    conn = psycopg2.connect(
        dbname=parts.path.lstrip("/") or "postgres",
        user=parts.username or "postgres",
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
    )
    conn.autocommit = True
    return conn


def start_pgbouncer(pg_url: str, workdir: Path, run_as: str) -> tuple[subprocess.Popen, int]:
    parts = urlsplit(pg_url)
    port = free_port()
    user = parts.username or "postgres"
    (workdir / "users.txt").write_text(f'"{user}" ""\n')
    (workdir / "pgbouncer.ini").write_text(
        f"[databases]\n{DB_NAME} = host={parts.hostname or '127.0.0.1'} port={parts.port or 5432} "
        f"dbname={DB_NAME}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n"
        f"unix_socket_dir =\nauth_type = trust\nauth_file = {workdir / 'users.txt'}\n"
        "pool_mode = transaction\ndefault_pool_size = 3\nmax_client_conn = 200\n"
        f"logfile = {workdir / 'pgbouncer.log'}\n"
    )
    command = ["pgbouncer", str(workdir / "pgbouncer.ini")]
    if os.geteuid() == 0:
        account = pwd.getpwnam(run_as)
        os.chown(workdir, account.pw_uid, account.pw_gid)
        for path in workdir.iterdir():
            os.chown(path, account.pw_uid, account.pw_gid)
        command += ["-u", run_as]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.1)
    log = (workdir / "pgbouncer.log").read_text() if (workdir / "pgbouncer.log").exists() else ""
    raise SystemExit(
        f"pgbouncer did not start: {process.stdout.read().decode() if process.stdout else ''}{log}"
    )


def prepare(url: str) -> dict[str, str]:
    """Organizations, a SOW each, 300 items in the first, a token each; through PgBouncer."""
    from datetime import datetime

    from sowctl.services import credentials
    from sowctl.storage import models as m
    from sowctl.storage.database import open_database

    database = open_database(url)
    moment = datetime(2026, 1, 1)
    tokens = {}
    try:
        with database.atomic():
            for org in ORGS:
                m.Organization.create(id=org, name=org)
                m.Project.create(
                    id=f"p-{org}", organization=org, name=org, created_at=moment, updated_at=moment
                )
                m.Sow.create(
                    key=f"sow-{org}",
                    id=f"sow-{org}",
                    organization=org,
                    project=f"p-{org}",
                    title=org,
                    created_at=moment,
                )
            m.Item.insert_many(
                [
                    {
                        "id": f"item-{k:03d}",
                        "sow": f"sow-{ORGS[0]}",
                        "type": "task_item",
                        "title": f"Item {k}",
                        "order_index": k % 7,
                        "created_at": moment,
                        "updated_at": moment,
                    }
                    for k in range(300)
                ]
            ).execute()
        for org in ORGS:
            tokens[org] = credentials.create_token(f"user-{org}", org, "member").secret
    finally:
        database.close()
    return tokens


def start_server(url: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["PYTHONUNBUFFERED"] = "1"
    process = subprocess.Popen(
        [sys.executable, "-m", "sowctl", "--db", url, "serve", "--port", "0", "--workers", "2", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith("Listening on "):
            threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
            return process, line.removeprefix("Listening on ").strip()
    raise SystemExit("sowctl serve did not start behind pgbouncer")


def run_checks(base: str, tokens: dict[str, str]) -> tuple[list[str], int]:
    problems: list[str] = []
    lock = threading.Lock()
    sent = [0]

    def count(_request: httpx.Request) -> None:
        with lock:
            sent[0] += 1

    def expect(label: str, response: httpx.Response, status: int) -> httpx.Response:
        if response.status_code != status:
            with lock:
                problems.append(f"{label}: {response.status_code} {response.text[:200]}")
        return response

    def reader(k: int) -> None:
        headers = {"Authorization": f"Bearer {tokens[ORGS[0]]}"}
        with httpx.Client(
            base_url=base, headers=headers, timeout=30, event_hooks={"request": [count]}
        ) as client:
            for n in range(40):
                item = f"item-{(k * 40 + n) % 300:03d}"
                expect("get item", client.get(f"/api/items/{item}"), 200)
                page = expect(
                    "page", client.get(f"/api/sow/sow-{ORGS[0]}/items?page={n % 4 + 1}&limit=100"), 200
                )
                total = page.headers.get("X-Total-Count", "")
                if page.status_code == 200 and not (total.isdigit() and int(total) >= 300):
                    problems.append(f"page total {total!r}")

    def writer(k: int) -> None:
        org = ORGS[k % 2]
        headers = {"Authorization": f"Bearer {tokens[org]}"}
        with httpx.Client(
            base_url=base, headers=headers, timeout=30, event_hooks={"request": [count]}
        ) as client:
            made = []
            for n in range(15):
                body = {"title": f"W{k}-{n}", "type": "task_item"}
                response = expect("create item", client.post(f"/api/sow/sow-{org}/items", json=body), 201)
                if response.status_code == 201:
                    made.append(response.json()["id"])
            for later, earlier in zip(made[1:], made, strict=False):
                body = {
                    "sourceItemId": later,
                    "targetItemId": earlier,
                    "dependencyType": "depends_on",
                    "riskLevel": "low",
                }
                expect("create dependency", client.post("/api/dependencies", json=body), 201)

    def racer(k: int) -> None:
        headers = {"Authorization": f"Bearer {tokens[ORGS[1]]}"}
        with httpx.Client(
            base_url=base, headers=headers, timeout=30, event_hooks={"request": [count]}
        ) as client:
            for n in range(5):
                a, b = (
                    client.post(
                        f"/api/sow/sow-{ORGS[1]}/items", json={"title": f"R{k}-{n}-{s}", "type": "task_item"}
                    )
                    for s in "ab"
                )
                if a.status_code != 201 or b.status_code != 201:
                    problems.append("race setup failed")
                    continue
                x, y = a.json()["id"], b.json()["id"]
                pair = [
                    {
                        "sourceItemId": x,
                        "targetItemId": y,
                        "dependencyType": "depends_on",
                        "riskLevel": "low",
                    },
                    {
                        "sourceItemId": y,
                        "targetItemId": x,
                        "dependencyType": "depends_on",
                        "riskLevel": "low",
                    },
                ]
                with ThreadPoolExecutor(2) as both:
                    answers = list(both.map(lambda b: client.post("/api/dependencies", json=b), pair))
                codes = sorted(r.status_code for r in answers)
                refused = [r for r in answers if r.status_code == 400]
                if codes != [201, 400] or "circular dependency" not in refused[0].text:
                    problems.append(f"cycle race answered {codes}: exactly one of the two must win")

    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(reader, k) for k in range(8)]
        futures += [pool.submit(writer, k) for k in range(4)]
        futures += [pool.submit(racer, k) for k in range(4)]
        for future in futures:
            future.result()
    return problems, sent[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--pgbouncer-user", default="postgres")
    args = parser.parse_args()
    if shutil.which("pgbouncer") is None:
        raise SystemExit("pgbouncer is not installed (apt-get install -y pgbouncer)")
    conn = admin(args.pg_url)
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}"')
        cur.execute(f'CREATE DATABASE "{DB_NAME}"')
    bouncer = server = None
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        os.chmod(workdir, 0o755)
        try:
            bouncer, port = start_pgbouncer(args.pg_url, workdir, args.pgbouncer_user)
            parts = urlsplit(args.pg_url)
            url = urlunsplit(
                parts._replace(netloc=f"{parts.username or 'postgres'}@127.0.0.1:{port}", path="/" + DB_NAME)
            )
            tokens = prepare(url)
            server, base = start_server(url)
            started = time.monotonic()
            problems, sent = run_checks(base, tokens)
            elapsed = time.monotonic() - started
        finally:
            for process in (server, bouncer):
                if process is not None and process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(10)
    with conn.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (DB_NAME,))
        cur.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}"')
    conn.close()
    if problems:
        print(f"FAILED behind pgbouncer (transaction pooling): {len(problems)} problems", file=sys.stderr)
        for problem in problems[:20]:
            print("  " + problem, file=sys.stderr)
        raise SystemExit(1)
    print(
        f"ok: sowctl serve --workers 2 behind pgbouncer (pool_mode = transaction, 3 server connections): "
        f"{sent:,} requests from 16 threads in {elapsed:.1f} s, every answer as expected, "
        "every cycle race won by exactly one request"
    )


if __name__ == "__main__":
    main()
