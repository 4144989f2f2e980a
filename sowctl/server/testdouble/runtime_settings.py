"""The run-time settings the admin API stores in ``Meta`` rows, read back by every worker: a
row that cannot be read (written by another sowctl version, or broken) means the start-up
setting, never a failed request."""

from __future__ import annotations

import json
from datetime import datetime

from sowctl.foundation import clock
from sowctl.server.testdouble import contract_mode
from sowctl.server.testdouble.faults import FaultConfig


def stored_faults(raw: str | None, default: FaultConfig) -> FaultConfig:
    if raw is None:
        return default
    try:
        return FaultConfig.from_json(json.loads(raw))
    except Exception:
        return default


def stored_contract(raw: str | None, default: str) -> str:
    if raw is None:
        return default
    try:
        mode = json.loads(raw).get("mode")
    except Exception:
        return default
    return mode if mode in contract_mode.MODES else default


def stored_clock(raw: str | None, default: datetime | None) -> datetime | None:
    if raw is None:
        return default
    try:
        value = json.loads(raw).get("now")
        return clock.parse_timestamp(value) if value else None
    except Exception:
        return default


def stored_sandbox_faults(raw: str | None) -> dict[str, FaultConfig]:
    """Each sandbox's fault config (``services.sandbox_state``), by organization."""
    if raw is None:
        return {}
    try:
        stored = json.loads(raw)
    except ValueError:
        return {}
    found: dict[str, FaultConfig] = {}
    for organization_id, config in stored.items() if isinstance(stored, dict) else ():
        try:
            found[organization_id] = FaultConfig.from_json(config)
        except Exception:  # one broken entry costs only its own sandbox its faults
            continue
    return found
