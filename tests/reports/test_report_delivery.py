"""How ``sowctl chain check`` delivers its verdict and reports: a reader of stdout that leaves early
keeps the check's exit code, and report files are written through symlinks, FIFOs and devices
(``sowctl.files``) rather than replacing them."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sowctl import clock
from sowctl import models as m
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import items, sows
from sowctl.services.access import Caller
from tests.support import ci_reports

MEMBER = Caller(user_id="user-ada", organization_id="acme", role="member")


@pytest.fixture
def big_failing_sow(db) -> str:
    """A SOW with 1,500 open critical dependencies: its check fails, and its piped output (~250 kB)
    is far more than a pipe holds (64 kB), so sowctl is still writing when the reader leaves."""
    sow = sows.create_sow(MEMBER, SowCreate(title="Tower A")).id
    a = items.create_item(MEMBER, sow, ItemCreate(title="Pour slab", type="task_item")).id
    b = items.create_item(MEMBER, sow, ItemCreate(title="Cure slab", type="task_item")).id
    rows = [
        {
            "id": str(uuid.UUID(int=n)),
            "sow": sow,
            "source_item": a,
            "target_item": b,
            "dependency_type": "related_to",  # orders nothing: no cycle check, no ordering edge
            "risk_level": "critical",
            "notes": "n" * 40,
            "created_at": clock.now(),
        }
        for n in range(1500)
    ]
    for start in range(0, len(rows), 500):  # SQLite's limit on variables per statement
        m.Dependency.insert_many(rows[start : start + 500]).execute()
    return sow


def sowctl_piped_to_early_leaver(db_url: str, *args: str) -> tuple[int, bytes, bytes]:
    """``sowctl ARGS | head -1``: the exit status of sowctl, the line read, sowctl's stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sowctl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "SOWCTL_DB": db_url},
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves while sowctl is still writing
    stderr = proc.stderr.read()
    proc.stderr.close()
    return proc.wait(timeout=120), first, stderr


@pytest.mark.slow  # sowctl subprocesses on a SOW of 1,500 findings
def test_a_reader_leaving_early_does_not_turn_a_failed_check_into_a_pass(
    big_failing_sow: str, db_url: str, tmp_path: Path
) -> None:
    sow = big_failing_sow
    code, first, stderr = sowctl_piped_to_early_leaver(db_url, "chain", "check", sow)
    assert (code, first, stderr) == (1, b"circular\t0\tpass\n", b"")
    junit = tmp_path / "j.xml"
    code, first, stderr = sowctl_piped_to_early_leaver(
        db_url, "chain", "check", sow, "--report", f"junit={junit}"
    )
    assert (code, stderr) == (1, b"")
    failures = [c for c in ci_reports.junit(junit)["critical"] if c["result"] == "failure"]
    assert len(failures) == 1500  # the file report is whole, not the error report
    # A report on stdout beside a report file: the file is the check's report, whatever the reader does.
    sarif = tmp_path / "r.sarif"
    code, first, stderr = sowctl_piped_to_early_leaver(
        db_url, "chain", "check", sow, "--report", "junit=-", "--report", f"sarif={sarif}"
    )
    assert (code, stderr) == (1, b"")
    assert len(ci_reports.sarif(sarif)["runs"][0]["results"]) == 1500
    # A passing check stays a pass (exit 0) when its reader leaves.
    code, first, stderr = sowctl_piped_to_early_leaver(db_url, "chain", "check", sow, "--fail-on", "blocked")
    assert (code, stderr) == (0, b"")
