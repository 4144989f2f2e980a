""".pre-commit-hooks.yaml: the sowctl-validate hook run by pre-commit itself (try-repo, which
installs this checkout as a hook repository would be), in a repository of a user's files."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sowctl.services import demo_data

ROOT = Path(__file__).resolve().parents[2]
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
HOOK_TIMEOUT = 900  # seconds pre-commit may take to install the hook: a guard against a hang
ACCEPTED = """[[accepted]]
kind = "critical"
dependency = "dep-009"
owner = "ada@example.com"
reason = "Supplier confirmed in writing"
expires = 2099-12-31
"""


def _hook() -> dict:
    (hook,) = [hook for hook in HOOKS if hook["id"] == "sowctl-validate"]
    return hook


def test_the_hook_runs_sowctl_validate_on_the_files_sowctl_s_guides_keep_in_dot_sowctl() -> None:
    hook = _hook()
    assert hook["entry"] == "sowctl validate"
    assert hook["language"] == "python"  # pre-commit installs this repository: sowctl itself
    files = re.compile(hook["files"])
    for path in (".sowctl/baseline.json", ".sowctl/accepted-risks.toml", ".sowctl/datasets/tower-a.json"):
        assert files.search(path), path
    for path in ("package.json", "pyproject.toml", "docs/.sowctl/baseline.json", ".sowctl/notes.md"):
        assert not files.search(path), path


def _user_repository(tmp_path: Path, dataset: dict) -> Path:
    repo = tmp_path / "user-repo"
    (repo / ".sowctl" / "datasets").mkdir(parents=True)
    (repo / ".sowctl" / "datasets" / "tower-a.json").write_text(json.dumps(dataset))
    (repo / ".sowctl" / "accepted-risks.toml").write_text(ACCEPTED)
    (repo / "package.json").write_text('{"name": "not a dataset"}')  # left alone by the hook
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    return repo


def _try_hook(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """pre-commit try-repo: this checkout as the hook repository, on every file of ``repo``."""
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    }
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "sowctl-validate", "--all-files"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=HOOK_TIMEOUT,
    )


def _demo() -> dict:
    return json.loads(json.dumps(demo_data.demo_dataset(datetime.date(2026, 1, 5)), default=str))


@pytest.mark.slow
def test_pre_commit_accepts_a_good_dataset_and_refuses_a_broken_one(tmp_path: Path) -> None:
    good = _try_hook(_user_repository(tmp_path / "good", _demo()), tmp_path)
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"sowctl validate\.+Passed", good.stdout), good.stdout

    broken = _demo()
    broken["items"][0]["sowId"] = "no-such-sow"
    refused = _try_hook(_user_repository(tmp_path / "broken", broken), tmp_path)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert re.search(r"sowctl validate\.+Failed", refused.stdout), refused.stdout
    assert ".sowctl/datasets/tower-a.json: items.0.sowId: SOW no-such-sow not found" in refused.stdout
