"""The attacks of ``bench/bench_servers.py``: what each server does to ordinary requests
while clients misbehave, and how it frames what a lenient parser would misread.

Imported by bench_servers.py (``run_part``); not a script of its own.
"""

from __future__ import annotations

import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

bench_servers = sys.modules["bench_servers"] if "bench_servers" in sys.modules else sys.modules["__main__"]
Server = bench_servers.Server
HOST = bench_servers.HOST
ORDINARY_ARGS = ["-t1", "-c4", "--latency", "--timeout", "10s"]
STATUS = re.compile(rb"HTTP/1\.[01] (\d{3})")


def run_part(part: str, dataset, variants: list, ns) -> str:
    if part == "attacks":
        return attacks(dataset, variants, ns.attack_duration, ns.scenarios)
    if part == "smuggling":
        return smuggling(dataset, variants)
    if part == "emfile":
        return emfile(dataset, variants)
    if part == "slowreader":
        return slow_readers(ns.cache_dir, dataset.workdir, variants)
    if part == "pipelinehold":
        return pipelined_non_readers(dataset, variants)
    raise SystemExit(f"unknown part {part}")


def note(text: str) -> None:
    print(f"# {text}", file=sys.stderr, flush=True)


def bearer(dataset) -> dict[str, str]:
    return {"Authorization": f"Bearer {dataset.targets.token}"}


# --- attackers that hold sockets -------------------------------------------------------------------


class Holder:
    """``count`` sockets kept open against a server: ``idle`` sends nothing, ``head`` a request
    line and then one header byte a second, ``body`` a head announcing 1000 bytes and then one
    byte of it a second. A socket the server closes is replaced at once (a persistent attacker);
    how long each lived, and what the server answered it, is recorded."""

    def __init__(self, address: tuple[str, int], count: int, mode: str, token: str) -> None:
        self.address, self.count, self.mode = address, count, mode
        self.start_bytes = {
            "idle": b"",
            "head": b"GET /healthz HTTP/1.1\r\nHost: x\r\n",
            "body": (
                b"POST /api/sows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: 1000\r\n\r\n"
            ),
        }[mode]
        self.sockets: dict[socket.socket, float] = {}
        self.closed_after: list[float] = []
        self.answers: Counter[str] = Counter()
        self.failed = 0
        self.opened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._fill()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in self.sockets:
            sock.close()

    def summary(self) -> str:
        if not self.closed_after:
            text = f"none closed ({self.opened} opened)"
        else:
            ages = sorted(self.closed_after)
            text = (
                f"{len(ages)} closed, after {statistics.median(ages):.1f} s (median; "
                f"{ages[0]:.1f}-{ages[-1]:.1f})"
            )
        if self.answers:
            text += "; answered " + ", ".join(f"{s} x{n}" for s, n in sorted(self.answers.items()))
        if self.failed:
            text += f"; {self.failed} connects failed"
        return text

    def _fill(self) -> None:
        while len(self.sockets) < self.count and not self._stop.is_set():
            try:
                sock = socket.create_connection(self.address, timeout=2)
                if self.start_bytes:
                    sock.sendall(self.start_bytes)
            except OSError:
                self.failed += 1
                if self.failed % 50 == 0:
                    return  # the listen queue is full: try again next tick
                continue
            sock.setblocking(False)
            self.sockets[sock] = time.monotonic()
            self.opened += 1

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for sock in list(self.sockets):
                if self._closed(sock) or (self.mode != "idle" and not self._send(sock)):
                    self.closed_after.append(time.monotonic() - self.sockets.pop(sock))
                    sock.close()
            self._fill()

    def _closed(self, sock: socket.socket) -> bool:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if data:
            for status in STATUS.findall(data):
                self.answers[status.decode()] += 1
            return False
        return True

    def _send(self, sock: socket.socket) -> bool:
        try:
            sock.send(b"X" if self.mode == "head" else b" ")
        except BlockingIOError:
            return True
        except OSError:
            return False
        return True


PIPELINE_LUA = """
-- 16 pipelined GETs of the same URL (with its -H headers) in every write
init = function(args)
  local r = {}
  for i = 1, 16 do r[i] = wrk.format(nil) end
  req = table.concat(r)
end
request = function() return req end
"""


def pipelined_in_order(server, dataset) -> str:
    """16 requests in one write, alternating get item and hello world: how many answers came
    back, in order, before the server closed or went quiet."""
    import h11

    item = f"/api/items/{dataset.targets.item_id}"
    paths = [item if k % 2 == 0 else "/hello" for k in range(16)]
    auth = bearer(dataset)["Authorization"]
    wire = b"".join(
        f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n\r\n".encode() for path in paths
    )
    client = h11.Connection(h11.CLIENT)
    in_order = 0
    with socket.create_connection((HOST, server.port), timeout=5) as sock:
        sock.sendall(wire)
        for path in paths:
            client.send(h11.Request(method="GET", target=path, headers=[("Host", "x")]))
            client.send(h11.EndOfMessage())
            status, body = 0, b""
            while True:
                event = client.next_event()
                if event is h11.NEED_DATA:
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    client.receive_data(data)
                    if not data:
                        return f"{in_order}/16 in order, then closed"
                    continue
                if isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
            expected = b"Hello, World!" if path == "/hello" else dataset.targets.item_id.encode()
            if status != 200 or expected not in body:
                return f"{in_order}/16 in order, then {status} {body[:60]!r}"
            in_order += 1
            client.start_next_cycle()
    return f"{in_order}/16 in order"


SCENARIOS = [
    "none",
    "200 slow heads",
    "8 slow bodies",
    "200 idle sockets",
    "1000 idle sockets",
    "pipelining client",
]


def attacks(dataset, variants: list, duration: float, only: str = "") -> str:
    scenarios = [name for name in SCENARIOS if re.search(only, name)]
    item = f"/api/items/{dataset.targets.item_id}"
    lua = dataset.workdir / "pipeline.lua"
    lua.write_text(PIPELINE_LUA)
    lines = [
        "| attack | server | ordinary requests answered | p50 ms | p99 ms | max ms | wrk errors "
        "| the attacker |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for scenario in scenarios:
        for variant in variants:
            server = Server(variant, dataset.copy())
            try:
                run, attacker = one_attack(server, scenario, dataset, item, lua, duration)
            finally:
                server.stop()
                server.log.close()
            note(
                f"attack {scenario:18} {variant.label:28} {run.requests:7} ok p50 {run.p50:8.2f} "
                f"p99 {run.p99:8.2f} max {run.max_ms:8.1f} errors {run.errors} | {attacker}"
            )
            latency = f"{run.p50:.1f} | {run.p99:.1f} | {run.max_ms:.0f}" if run.requests else "— | — | —"
            lines.append(
                f"| {scenario} | {variant.label} | {run.requests:,} | {latency} | {run.errors} | {attacker} |"
            )
    return (
        "### Ordinary requests under attack (1 worker, 4 threads)\n\n"
        f"Ordinary requests: `GET /api/items/ID` with a token, wrk -t1 -c4 --timeout 10s for "
        f"{duration:g} s, started 1 s after the attackers. Slow heads send a request line and then one "
        "header byte a second; slow bodies announce 1000 bytes and send one a second; idle sockets "
        "send nothing. An attacker's socket that the server closes is opened again at once; \"the "
        'attacker" says how many were closed and after how long, and what the server answered '
        "them. The pipelining client first checks that 16 requests in one write (get item and "
        "hello world alternately) are answered in order, then runs wrk with 16 pipelined get items "
        "per write on 4 connections while the ordinary requests are timed.\n\n" + "\n".join(lines)
    )


def one_attack(server, scenario: str, dataset, item: str, lua: Path, duration: float):
    headers = bearer(dataset)
    token = dataset.targets.token
    if scenario == "pipelining client":
        order = pipelined_in_order(server, dataset)
        out: dict = {}
        pipe_args = ["-t1", "-c4", "--timeout", "10s", "-s", str(lua)]
        flood = threading.Thread(
            target=lambda: out.update(run=bench_servers.wrk(server.url + item, pipe_args, duration, headers))
        )
        flood.start()
        time.sleep(0.5)
        run = bench_servers.wrk(server.url + item, ORDINARY_ARGS, duration - 1, headers)
        flood.join()
        piped = out["run"]
        return (
            run,
            f"{order}; 4 connections pipelining 16 at a time: {piped.rps:,.0f} req/s, errors {piped.errors}",
        )
    holder = None
    if scenario != "none":
        count, kind = scenario.split()[:2]
        mode = {"slow": "head" if "heads" in scenario else "body", "idle": "idle"}[kind]
        holder = Holder((HOST, server.port), int(count), mode, token)
        holder.start()
        time.sleep(1.0)
    try:
        run = bench_servers.wrk(server.url + item, ORDINARY_ARGS, duration, headers)
    finally:
        if holder is not None:
            holder.stop()
    return run, holder.summary() if holder else ""


# --- request smuggling ------------------------------------------------------------------------------


# Marks extra header lines that go after Transfer-Encoding rather than before it.
AFTER = b"\x00after\x00"


def smuggling_cases() -> list[tuple[str, bytes, bytes]]:
    """(name, extra header lines, body framing) of each probe; the body chunk is 26 bytes."""
    data = b'{"title":"","p":"xxxxxxx"}'
    assert len(data) == 0x1A
    end = b"\r\n0\r\n\r\n"
    return [
        ("control: valid chunk `1a`", b"", b"1a\r\n" + data + end),
        ("chunk size `0x1a`", b"", b"0x1a\r\n" + data + end),
        ("chunk size `+1a`", b"", b"+1a\r\n" + data + end),
        ("chunk size `0_1a`", b"", b"0_1a\r\n" + data + end),
        ("chunk size `` 1a ``", b"", b" 1a \r\n" + data + end),
        ("VT before the size", b"", b"\x0b1a\r\n" + data + end),
        ("bare LF after the size", b"", b"1a\n" + data + end),
        ("two junk bytes instead of CRLF", b"", b"1a\r\n" + data + b"XX0\r\n\r\n"),
        ("last chunk `-0`", b"", b"1a\r\n" + data + b"\r\n-0\r\n\r\n"),
        ("last chunk `0\\n\\n`", b"", b"1a\r\n" + data + b"\r\n0\n\n"),
        ("`Content-Length` then `Transfer-Encoding`", b"Content-Length: 5\r\n", b"0\r\n\r\n"),
        ("`Transfer-Encoding` then `Content-Length`", AFTER + b"Content-Length: 5\r\n", b"0\r\n\r\n"),
    ]


def smuggle_once(server, token: str, number: int, extra: bytes, framing: bytes) -> tuple[str, str]:
    """Send one malformed request with a create glued behind it in the same packet; what the
    connection answered, and whether the glued request ran (its SOW exists)."""
    auth = b"Authorization: Bearer " + token.encode() + b"\r\n"
    head = b"POST /api/sows HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth
    coding = b"Transfer-Encoding: chunked\r\n"
    if extra.startswith(AFTER):
        outer = head + coding + extra.removeprefix(AFTER) + b"\r\n" + framing
    else:
        outer = head + extra + coding + b"\r\n" + framing
    sow = f"smuggled-{number}"
    body = f'{{"title":"glued","id":"{sow}"}}'.encode()
    glued = head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    received, closed = b"", False
    with socket.create_connection((HOST, server.port), timeout=3) as sock:
        sock.sendall(outer + glued)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            except OSError:
                closed = True
                break
            if not data:
                closed = True
                break
            received += data
    statuses = ", ".join(s.decode() for s in STATUS.findall(received)) or "nothing"
    answer = statuses + (", closed" if closed else ", left open")
    with httpx.Client(base_url=server.url, timeout=10) as client:
        ran = (
            client.get(f"/api/sow/{sow}/items", headers={"Authorization": f"Bearer {token}"}).status_code
            == 200
        )
    return answer, "**glued request ran**" if ran else ""


def smuggling(dataset, variants: list) -> str:
    cases = smuggling_cases()
    cells: dict[str, list[str]] = {name: [] for name, _, _ in cases}
    counts = []
    for variant in variants:
        server = Server(variant, dataset.copy())
        ran = 0
        try:
            for number, (name, extra, framing) in enumerate(cases):
                answer, glued = smuggle_once(server, dataset.targets.token, number, extra, framing)
                ran += bool(glued) and number > 0
                cells[name].append(f"{answer}; {glued}" if glued else answer)
        finally:
            server.stop()
            server.log.close()
        counts.append(str(ran))
        note(f"smuggling {variant.label:28} glued requests run: {ran} of {len(cases) - 1}")
    labels = [v.label for v in variants]
    lines = ["| probe | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    lines += [f"| {name} | " + " | ".join(row) + " |" for name, row in cells.items()]
    lines.append(f"| **glued requests run (of {len(cases) - 1})** | " + " | ".join(counts) + " |")
    return (
        "### Malformed framing with a request glued behind it (1 worker)\n\n"
        "Each probe is one packet on a new connection: `POST /api/sows` with "
        "`Transfer-Encoding: chunked` and the framing named, then a well-formed `POST /api/sows` "
        "creating a SOW of its own. Cells: the statuses read on that connection within 3 s, "
        "whether the server closed it, and whether the glued create ran (its SOW exists).\n\n"
        + "\n".join(lines)
    )


# --- descriptor exhaustion --------------------------------------------------------------------------


def emfile(dataset, variants: list) -> str:
    lines = [
        "| server | started | a request while 400 sockets are open | alive after | "
        "requests after the sockets closed | workers replaced | log lines about descriptors |",
        "|---|---|---|---|---:|---|---:|",
    ]
    excerpts: list[str] = []
    for variant in variants:
        try:
            server = Server(variant, dataset.copy(), nofile=256)
        except RuntimeError as exc:
            lines.append(f"| {variant.label} | **no**: {str(exc)[-200:]} | | | | | |")
            continue
        try:
            row, first = one_emfile(server)
        finally:
            server.stop()
            server.log.close()
        note(f"emfile {variant.label:28} {row} {first}")
        lines.append(f"| {variant.label} | yes | " + " | ".join(row) + " |")
        if first:
            excerpts.append(f"* {variant.label}: `{first}`")
    return (
        "### Descriptor exhaustion (`ulimit -n 256`, soft and hard; 400 idle sockets held 6 s)\n\n"
        + "\n".join(lines)
        + ("\n\nThe first log line about descriptors:\n\n" + "\n".join(excerpts) if excerpts else "")
    )


def timed_get(url: str, timeout: float, headers: dict[str, str] | None = None) -> str:
    started = time.monotonic()
    try:
        with httpx.Client(timeout=timeout, headers=headers) as client:
            status = client.get(url).status_code
        return f"{status} in {time.monotonic() - started:.1f} s"
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__} after {time.monotonic() - started:.1f} s"


def one_emfile(server) -> list[str]:
    sockets = []
    failed = 0
    for _ in range(400):
        try:
            sockets.append(socket.create_connection((HOST, server.port), timeout=2))
        except OSError:
            failed += 1
    time.sleep(2)
    during = timed_get(server.url + "/healthz", 10)
    time.sleep(max(0.0, 4 - float(during.split()[-2]) if " in " in during else 0))
    for sock in sockets:
        sock.close()
    time.sleep(2)
    alive = server.alive()
    ok = sum(timed_get(server.url + "/healthz", 5).startswith("200") for _ in range(20))
    replaced = sorted(set(server.first_workers) - set(server.workers()))
    log = server.output()
    found = [line for line in log.splitlines() if re.search(r"Too many open files|EMFILE|Errno 24", line)]
    during += f" ({failed} of 400 connects failed)" if failed else ""
    row = [during, "yes" if alive else "**no**", f"{ok}/20", str(len(replaced)), f"{len(found):,}"]
    return row, (found[0].strip()[:200] if found else "")


# --- slow readers -------------------------------------------------------------------------------


def po_database(cache_dir: Path, orders: int) -> tuple[Path, str, str]:
    """The demo data with ``orders`` purchase orders of 1,000 lines (bench_po_list_memory's),
    built once; an API key of org-acme is made in each copy."""
    sys.path.insert(0, str(bench_servers.BENCH))
    po = bench_servers.load_module("bench_po_list_memory")
    path = cache_dir / f"slowreader-{orders}x1000-v1.db"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        po.seed(partial, orders, 1000, 950)
        bench_servers.load_module("bench_throughput")._checkpoint(partial)
        partial.rename(path)
    return path, po.ORG, po.COMPANY


def po_key(db: Path) -> str:
    from sowctl.services import credentials
    from sowctl.storage.database import open_database

    database = open_database(str(db))
    try:
        return credentials.create_key("org-acme").secret
    finally:
        database.close()


def established_peers(port: int) -> set[int]:
    """Client ports of the server's connections on ``port`` that are still established."""
    out = subprocess.run(
        ["ss", "-Htn", "state", "established", f"( sport = :{port} )"], capture_output=True, text=True
    ).stdout
    return {int(line.split()[-1].rsplit(":", 1)[1]) for line in out.splitlines() if line.strip()}


def non_reader(port: int, request: bytes) -> socket.socket:
    """A connection that sends ``request`` and never reads: a 16 KiB receive buffer (set before
    connecting, so the window it offers stays small)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    sock.settimeout(5)
    sock.connect((HOST, port))
    sock.sendall(request)
    return sock


def slow_readers(cache_dir: Path, workdir: Path, variants: list, readers: int = 2, orders: int = 40) -> str:
    template, org, company = po_database(cache_dir, orders)
    path = f"/api/external/purchase-orders?project_id=101&limit={orders}"
    lines = [
        "| server | RSS before MiB | peak MiB | answers cut (access log) | the same caller's next large "
        "answer, at 40 s | connections still open at 70 s | ordinary requests | p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---|---|---|---:|---:|---:|---:|",
    ]
    size = 0
    for variant in variants:
        db = workdir / "slowreader.db"
        bench_servers.fresh_file(template, db)
        headers = {"x-api-key": po_key(db), "x-organization-id": org, "x-company-id": company}
        logged = bench_servers.Variant(
            variant.name, variant.kind, variant.python, 1, variant.kind != "waitress", variant.http
        )
        server = Server(logged, str(db))
        try:
            with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
                client.get(path.replace(f"limit={orders}", "limit=1")).raise_for_status()
                if not size:
                    with client.stream("GET", path) as answer:
                        size = sum(len(chunk) for chunk in answer.iter_raw())
            row = one_slow_reader(server, path, headers, readers)
        finally:
            server.stop()
            server.log.close()
        note(f"slow readers {variant.label:28} {row}")
        lines.append(f"| {variant.label} | " + " | ".join(row) + " |")
    return (
        f"### Slow readers ({readers} clients of one API key ask for a page of {orders} purchase "
        f"orders, {size / 1e6:.0f} MB, and read nothing; 1 worker, 4 threads)\n\n"
        "Each reader's socket has a 16 KiB receive buffer. \"answers cut\": the access log's time "
        "and bytes handed over for each, where the server logs it (`--quiet` off for this part). "
        '"next large answer": one more such request of the same caller at 40 s (one caller holds '
        'at most 2 of the 3 report slots: 503 means the readers still hold theirs). "still open": '
        "the server's side of the readers' connections still ESTABLISHED (`ss`). Ordinary requests: "
        "`GET /healthz`, wrk -t1 -c4 for the first 5 s.\n\n" + "\n".join(lines)
    )


def one_slow_reader(server, path: str, headers: dict[str, str], count: int) -> list[str]:
    before = server.rss_kib()
    head = f"GET {path} HTTP/1.1\r\nHost: x\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    started = time.monotonic()
    held = [non_reader(server.port, (head + "\r\n").encode()) for _ in range(count)]
    ports = {sock.getsockname()[1] for sock in held}
    peak = before
    run = bench_servers.wrk(server.url + "/healthz", ORDINARY_ARGS, 5)
    afterwards = ""
    while time.monotonic() < started + 70:
        peak = max(peak, server.rss_kib())
        if not afterwards and time.monotonic() >= started + 40:
            afterwards = timed_get(server.url + path.replace("limit=40", "limit=2"), 30, headers)
        time.sleep(1)
    still = len(ports & established_peers(server.port))
    cut = [
        f"{float(m[2]) / 1000:.0f} s, {int(m[1]) / 1e6:.1f} MB"
        for m in re.finditer(r"purchase-orders\S* HTTP/1.1\" 200 (\d+) ([\d.]+)ms cut-short", server.output())
    ]
    for sock in held:
        sock.close()
    return [
        f"{before / 1024:,.0f}",
        f"{peak / 1024:,.0f}",
        "; ".join(cut) or ("not logged" if server.variant.kind == "waitress" else "none"),
        afterwards,
        f"**{still} of {count}**" if still else "0",
        f"{run.requests:,}",
        f"{run.p50:.1f}",
        f"{run.p99:.1f}",
        f"{run.max_ms:.0f}",
    ]


# --- pipelined requests never read ----------------------------------------------------------------


def pipelined_non_readers(dataset, variants: list, connections: int = 1000, requests: int = 60) -> str:
    """Each connection sends ``requests`` pipelined ``GET /openapi.json`` (no credentials) in
    one write and reads nothing: what is left of the server for everyone else."""
    lines = [
        "| server | server CPU for the attack | new client's /healthz at 20 s | at 50 s | "
        "attacker connections established at 50 s (`ss`) | RSS MiB before, at 50 s | "
        "after the attacker left |",
        "|---|---:|---|---|---:|---|---|",
    ]
    request = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * requests
    for variant in variants:
        server = Server(variant, dataset.copy())
        try:
            row = one_pipelined_non_reader(server, request, connections)
        finally:
            server.stop()
            server.log.close()
        note(f"pipelined non-readers {variant.label:28} {row}")
        lines.append(f"| {variant.label} | " + " | ".join(row) + " |")
    return (
        f"### Pipelined requests never read ({connections:,} connections, each sending {requests} "
        "`GET /openapi.json` (87 KB answers, no credentials) in one write and reading nothing; "
        "1 worker, default limits)\n\n" + "\n".join(lines)
    )


def one_pipelined_non_reader(server, request: bytes, connections: int) -> list[str]:
    before_rss = server.rss_kib()
    before_cpu = server.cpu_seconds()
    started = time.monotonic()
    held = []
    for _ in range(connections):
        try:
            held.append(non_reader(server.port, request))
        except OSError:
            break
    ports = {sock.getsockname()[1] for sock in held}
    time.sleep(max(0.0, started + 20 - time.monotonic()))
    at_20 = timed_get(server.url + "/healthz", 15)
    time.sleep(max(0.0, started + 50 - time.monotonic()))
    at_50 = timed_get(server.url + "/healthz", 15)
    still = len(ports & established_peers(server.port))
    rss = server.rss_kib()
    cpu = server.cpu_seconds() - before_cpu
    for sock in held:
        sock.close()
    time.sleep(1)
    after = timed_get(server.url + "/healthz", 15)
    opened = f" ({len(held)} opened)" if len(held) < connections else ""
    return [
        f"{cpu:.1f} s",
        at_20,
        at_50,
        f"{still:,}{opened}",
        f"{before_rss / 1024:,.0f}, {rss / 1024:,.0f}",
        after,
    ]
