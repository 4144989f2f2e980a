"""How ``sowctl chain check`` delivers its verdict and reports: a reader of stdout that leaves early
keeps the check's exit code, and report files are written through symlinks, FIFOs and devices
(``sowctl.foundation.files``) rather than replacing them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sowctl.foundation import clock
from sowctl.schemas.items import ItemCreate
from sowctl.schemas.sows import SowCreate
from sowctl.services import items, sows
from sowctl.services.access import Caller
from sowctl.storage import models as m
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


# --- report files: what the path names is kept (sowctl.foundation.files) ---------------------------------


@pytest.fixture
def failing_sow(db) -> str:
    from sowctl import operations

    sow = sows.create_sow(MEMBER, SowCreate(title="Tower A")).id
    a = items.create_item(MEMBER, sow, ItemCreate(title="Pour slab", type="task_item")).id
    b = items.create_item(MEMBER, sow, ItemCreate(title="Cure slab", type="task_item")).id
    body = {"sourceItemId": b, "targetItemId": a, "dependencyType": "depends_on", "riskLevel": "critical"}
    operations.call_local("deps.create", MEMBER, body=body)
    return sow


def leftovers(folder: Path) -> list[str]:
    """Temp files a writer left behind (``.NAME.xxxx``)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_symlinked_report_path_stays_a_link_to_the_new_report(cli, failing_sow, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "chain.sarif").write_text("old")
    link = tmp_path / "chain.sarif"
    link.symlink_to(reports / "chain.sarif")
    dangling = tmp_path / "new.xml"
    dangling.symlink_to(reports / "new.xml")  # the file it names does not exist yet
    result = cli("chain", "check", failing_sow, "--report", f"sarif={link}", "--report", f"junit={dangling}")
    assert result.exit_code == 1, result.stderr
    assert link.is_symlink() and dangling.is_symlink()
    assert ci_reports.sarif(reports / "chain.sarif")["runs"][0]["results"][0]["ruleId"] == "critical"
    assert ci_reports.junit(reports / "new.xml")["critical"][0]["result"] == "failure"
    assert leftovers(tmp_path) == leftovers(reports) == []


def test_an_export_through_a_symlink_keeps_the_link(cli, failing_sow, tmp_path: Path) -> None:
    """Exports use the same writer as the reports."""
    target = tmp_path / "backups" / "latest.json"
    target.parent.mkdir()
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    result = cli("export", link)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and '"sows"' in target.read_text()


def test_a_fifo_report_path_is_written_into_for_its_reader(cli, failing_sow, tmp_path: Path) -> None:
    import stat
    import threading

    fifo = tmp_path / "chain.sarif"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = cli("chain", "check", failing_sow, "--report", f"sarif={fifo}")
    reader.join(timeout=30)
    assert result.exit_code == 1, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # not replaced by a regular file
    document = json.loads(received[0])
    ci_reports.validate_sarif(document)
    assert document["runs"][0]["results"][0]["ruleId"] == "critical"
    assert leftovers(tmp_path) == []


def test_an_error_report_never_waits_for_a_fifo_without_a_reader(tmp_path: Path) -> None:
    """The check failed after its reader had read a report from the FIFO and gone: the error
    report skips it (it would wait for a reader forever), and the command ends."""
    import threading

    from sowctl.commands.chain_check import _report_failure
    from sowctl.foundation.errors import NotFound
    from sowctl.gate.reports import ReportSpec

    fifo, plain = tmp_path / "chain.sarif", tmp_path / "chain.xml"
    os.mkfifo(fifo)
    specs = [ReportSpec("sarif", str(fifo)), ReportSpec("junit", str(plain))]
    failure = NotFound("SOW sow-x not found")
    worker = threading.Thread(target=_report_failure, args=("sow-x", specs, failure), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()  # it did not wait for a reader
    assert "SOW sow-x not found" in plain.read_text()  # the other report still says why


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_device_that_refuses_the_report_is_an_error_naming_it(cli, failing_sow) -> None:
    """/dev/full refuses every write (ENOSPC): exit 2, and the device node is left as it is (the
    writer used to rename a temp file over it, as root too)."""
    import stat

    result = cli("chain", "check", failing_sow, "--report", "sarif=/dev/full")
    assert result.exit_code == 2
    assert "--report: cannot write /dev/full: No space left on device" in result.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_regular_report_file_is_still_replaced_whole(cli, failing_sow, tmp_path: Path) -> None:
    """A reader that opened the old report reads all of it: the new one is renamed over it."""
    path = tmp_path / "chain.sarif"
    path.write_text("old report")
    with open(path) as reader:
        result = cli("chain", "check", failing_sow, "--report", f"sarif={path}")
        assert reader.read() == "old report"
    assert result.exit_code == 1, result.stderr
    assert ci_reports.sarif(path)["runs"][0]["results"][0]["ruleId"] == "critical"
    assert leftovers(tmp_path) == []


@pytest.mark.slow  # a sowctl subprocess, for a real stdout redirected to a file
def test_a_report_to_dev_stdout_redirected_to_a_file_is_the_file_s_content(
    failing_sow, db_url: str, tmp_path: Path
) -> None:
    """``--report markdown=/dev/stdout > out.md``: written through stdout, not by opening
    /dev/stdout again (which truncates out.md under what was already written)."""
    out = tmp_path / "out.md"
    with open(out, "wb") as handle:
        done = subprocess.run(
            [sys.executable, "-m", "sowctl", "chain", "check", failing_sow, "--report=markdown=/dev/stdout"],
            stdout=handle,
            stderr=subprocess.PIPE,
            env={**os.environ, "SOWCTL_DB": db_url},
        )
    assert done.returncode == 1, done.stderr
    text = out.read_text()
    first_line = text.split("\n", 1)[0]
    assert first_line.startswith("## sowctl chain check of SOW "), text[:200]
    assert first_line.endswith(": failed"), text[:200]
    assert text.count("## sowctl chain check") == 1
