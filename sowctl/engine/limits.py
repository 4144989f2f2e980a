"""What the engine holds every client and every caller to: deadlines, sizes, memory, threads."""

from __future__ import annotations

from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class Limits:
    """One worker's limits (``sowctl serve`` passes the same to every worker)."""

    # Threads that run the application; requests wait for one in their caller's turn.
    threads: int = 4
    # A connection must send a request's whole head within this many seconds of opening, or of
    # its previous answer (a new, idle or kept-alive connection alike), else it is closed.
    head_timeout: float = 5.0
    # A request's body must arrive whole within this many seconds of its head, else 408.
    body_timeout: float = 30.0
    # The request line (method, target, version) and the header block; past them 414 and 431.
    max_request_line: int = 32 * KIB
    max_header_bytes: int = 16 * KIB
    # The largest body a route takes unless the application's Hooks.body_limit says otherwise.
    max_body_bytes: int = MIB
    # A response: each piece must be taken within send_timeout, and the time spent waiting for
    # the client over the whole may not pass send_timeout + one second per min_send_rate bytes.
    send_timeout: float = 30.0
    min_send_rate: int = 64 * KIB
    # Open connections per worker; further clients wait in the listen backlog.
    max_connections: int = 1000
    backlog: int = 2048
    # Bodies one worker holds at once beyond the first free_body_bytes of each request; a body
    # that would pass it is answered 503 (unless it is the only large one).
    max_buffered_bytes: int = 64 * MIB
    free_body_bytes: int = 64 * KIB
    # A request that waited this long for a thread is answered 503 with Retry-After.
    queue_timeout: float = 30.0
    # The processor time a caller may take: cpu_burst seconds at once, refilled at cpu_share
    # seconds per second. A caller past it, while others want a thread, runs one request at a
    # time and after everyone else's (sowctl.engine.turns); alone, it runs as before.
    cpu_burst: float = 2.0
    cpu_share: float = 0.5
    # How long a thread runs Python before another may take the interpreter (None: Python's
    # 5 ms). A request waiting behind a processor-bound one waits up to this at each
    # database call, so shorter keeps ordinary requests quick beside heavy ones.
    switch_interval: float | None = None
    # Helper processes per worker for heavy requests (sowctl.engine.heavy; 0: none, every
    # request runs in the worker's threads); how many steps of priority they run below the
    # worker (nice: the system gives ordinary requests the processor first); a caller's heavy
    # requests waiting for one, at most (past it 503); and the processor seconds a caller may
    # spend of its bucket before all its requests count as heavy while others are active.
    heavy_processes: int = 0
    heavy_nice: int = 10
    heavy_queue: int = 2
    heavy_cpu: float = 0.5
    # Seconds a stopping worker gives requests under way before it is killed. 10, not 5: on a
    # machine with both CPUs taken, a worker with a helper process to end took over 5 s to stop.
    graceful_timeout: float = 10.0

    @property
    def head_buffer_bytes(self) -> int:
        """The parser's buffer for a head: a head longer than this is refused by the parser
        itself (431, without a body); shorter ones reach the engine's own checks."""
        return max(64 * KIB, self.max_request_line + self.max_header_bytes + 4 * KIB)
