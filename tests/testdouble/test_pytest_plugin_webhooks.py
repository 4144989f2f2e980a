"""The pytest plugin's ``sowctl_receiver`` in a sandbox of a shared server (``--sowctl-server``):
a throw-away project, run by pytest in a subprocess, subscribes the receiver (on 127.0.0.1)
and waits for a delivery. A server started with ``--webhook-allow-network 127.0.0.1/32``
delivers to it; one started without refuses the subscription, naming ``url`` and the option."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.server import Server

pytestmark = [pytest.mark.slow, pytest.mark.database]  # sandboxes on the run's backend

PROJECT_TEST = """
import pytest

PROJECT = "6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c10"
DATASET = {
    "organizations": [{"id": "org-1", "name": "Acme Build"}],
    "projects": [{"id": PROJECT, "organizationId": "org-1", "name": "Tower A"}],
    "sows": [{"id": "sow-1", "projectId": PROJECT, "title": "Phase 1"}],
}


@pytest.mark.sowctl_dataset(DATASET)
def test_a_new_item_is_delivered_signed(sowctl_service, sowctl_receiver):
    sowctl_service.admin.create_webhook(
        sowctl_receiver.url, sowctl_service.org, event_types=["item.*"], secret=sowctl_receiver.secret
    )
    sowctl_service.client.items.create("sow-1", title="Walls", type="requirement")
    delivery = sowctl_receiver.wait_for("item.created", data={"title": "Walls"}, timeout=20)
    assert delivery.signature_valid
"""


def _project(root: Path) -> Path:
    project = root / "webhook-project"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "webhook-project"
            version = "0.1"

            [tool.pytest.ini_options]
            testpaths = ["tests"]
            """
        )
    )
    (project / "tests" / "test_hooks.py").write_text(PROJECT_TEST)
    return project


def _pytest(project: Path, server: Server) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOWCTL_", "PYTEST_"))}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:randomly"),
            *("--sowctl-server", server.url, "--sowctl-admin-token", "sowa_shared"),
        ],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def test_a_sandbox_session_receives_on_localhost_when_the_operator_allows_it(
    tmp_path: Path, db_url: str
) -> None:
    server = Server(db_url, "--admin-token", "sowa_shared", "--webhook-allow-network", "127.0.0.1/32")
    try:
        done = _pytest(_project(tmp_path), server)
    finally:
        server.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "1 passed" in output, output


def test_a_sandbox_session_is_refused_localhost_without_the_operators_setting(
    tmp_path: Path, db_url: str
) -> None:
    server = Server(db_url, "--admin-token", "sowa_shared")
    try:
        done = _pytest(_project(tmp_path), server)
    finally:
        server.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "1 failed" in output, output
    assert "url: 127.0.0.1 is a loopback address" in output, output
    assert "sowctl serve --webhook-allow-network CIDR" in output, output
