"""Schemathesis, as its users run it: the CLI against a real ``sowctl serve --workers 2``.

tests/quality/test_fuzz.py drives the Bottle app in process, with real ids mixed in; this run
goes through everything in front of it too (the engine's request parsing, its limits,
the access log), where an HTML error page or an undocumented 414 would hide from the
in-process run. ``SOWCTL_FUZZ_LIVE_EXAMPLES`` and ``SOWCTL_FUZZ_SEED`` widen the
hunt (15 examples per operation, seed 1 in CI). Both authentication schemes are sent
on every request; each route reads its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import Server, demo_secrets

pytestmark = pytest.mark.slow  # property runs, fuzzing, real servers: the full suite only

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "response_headers_conformance",
    ]
)


def test_schemathesis_cli_finds_nothing_against_a_real_server(db_url: str, tmp_path: Path) -> None:
    executable = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert executable is not None, "schemathesis is a test dependency: its CLI must be installed"
    server = Server(
        db_url,
        "--demo",
        "--workers",
        "2",
        "--quiet",
        "--rate-per-minute",
        "1000000",
        "--rate-per-day",
        "100000000",
    )
    try:
        token, api_key = demo_secrets("\n".join(server.read_stdout_until("API key")))
        result = subprocess.run(
            [
                executable,
                "run",
                f"{server.url}/openapi.json",
                "--checks",
                CHECKS,
                "--max-examples",
                os.environ.get("SOWCTL_FUZZ_LIVE_EXAMPLES", "15"),
                "--seed",
                os.environ.get("SOWCTL_FUZZ_SEED", "1"),
                "-H",
                f"Authorization: Bearer {token}",
                "-H",
                f"x-api-key: {api_key}",
                "-H",
                "x-organization-id: org-acme",
                "-H",
                "x-company-id: comp-acme-llc",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,  # the CLI keeps its state in ./.schemathesis
        )
    finally:
        server.stop()
    server_log = "\n".join(server.stderr_lines[-60:])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:] + "\nserver:\n" + server_log
