"""The options of sowctl serve that need more than Typer's checks: the test double's (faults,
latency, clock, seed, record, admin token), the networks sandboxes' webhooks may reach and the
memory cap on buffered request bodies."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sowctl.foundation.errors import InvalidInput, UsageError, quoted
from sowctl.foundation.networks import Network, parse_networks


def test_double_options(
    *,
    workers: int,
    admin_token: str | None,
    admin: bool,
    latency: str | None,
    fault_rate: float,
    fault_status: int,
    fault_mode: str,
    fault_route: list[str],
    seed: int | None,
    fixed_clock: str | None,
    record: Path | None,
) -> dict[str, Any]:
    """ServerSettings fields of the test-double options (``sowctl.server.testdouble.layer``);
    exit 2 when wrong."""
    from sowctl.foundation import clock
    from sowctl.server.testdouble.faults import FaultConfig, parse_latency

    if admin and admin_token is not None:
        raise UsageError("use --admin (a generated token) or --admin-token TOKEN, not both")
    if admin_token is not None and not admin_token.strip():
        raise UsageError("--admin-token must not be empty")
    if seed is not None and workers > 1:
        raise UsageError(
            "--seed needs a single worker: each worker would generate the same ids and tokens "
            f"(got --workers {workers})"
        )
    try:
        latency_ms = parse_latency(latency) if latency is not None else None
    except ValueError as exc:
        raise UsageError(f"--latency: {exc}") from None
    try:
        faults = FaultConfig(
            latency_ms=latency_ms,
            rate=fault_rate,
            status=fault_status,
            mode=fault_mode,
            routes=tuple(fault_route),
        )
    except InvalidInput as exc:
        option = {"latencyMs": "--latency", "mode": "--fault-mode"}.get(
            str(exc.issues[0].path[0]), "--fault-route"
        )
        raise UsageError(f"{option}: {exc.issues[0].message}") from None
    fixed_now = clock.parse_clock(fixed_clock, "--clock") if fixed_clock is not None else None
    record_path = None
    if record is not None:
        from sowctl.server.testdouble.recorder import check_writable

        try:
            check_writable(str(record))
        except OSError as exc:
            raise UsageError(f"--record: cannot write {record}: {exc.strerror or exc}") from None
        record_path = str(record.resolve())
    if admin:
        from sowctl.foundation.redaction import ADMIN_TOKEN_PREFIX

        admin_token = clock.new_secret(ADMIN_TOKEN_PREFIX)
    return {
        "admin_token": admin_token.strip() if admin_token else None,
        "faults": faults if faults.active else None,
        "fixed_now": fixed_now,
        "seed": seed,
        "record_path": record_path,
    }


ENV_BUFFER_CAP = "SOWCTL_SERVE_BUFFER_MIB"


def buffer_cap() -> int:
    """Bytes of large request bodies one worker buffers at once (``SOWCTL_SERVE_BUFFER_MIB``)."""
    from sowctl.server.configuration import MIB, ServerSettings

    text = os.environ.get(ENV_BUFFER_CAP, "").strip()
    if not text:
        return ServerSettings.max_buffered_bytes
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 1_000_000:
        raise UsageError(
            f"{ENV_BUFFER_CAP} must be a whole number of MiB from 1 to 1000000, not {quoted(text)}"
        )
    return int(text) * MIB


def webhook_networks(values: list[str]) -> tuple[Network, ...]:
    """The networks of ``--webhook-allow-network``; exit 2 naming the option when one is none."""
    try:
        return parse_networks(values)
    except ValueError as exc:
        raise UsageError(f"--webhook-allow-network: {exc}") from None
