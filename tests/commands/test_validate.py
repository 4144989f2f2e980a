"""sowctl validate: datasets, baselines and accepted-risk files judged by the rules of the
commands that read them, without touching any database."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from sowctl.services import demo_data
from tests.support.cli import run_main

ACCEPTED = """
[[accepted]]
kind = "critical"
dependency = "dep-009"
owner = "ada@example.com"
reason = "Supplier confirmed in writing"
expires = 2099-12-31
"""


def _demo() -> dict:
    return json.loads(json.dumps(demo_data.demo_dataset(datetime.date(2026, 1, 5)), default=str))


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_demo()))
    broken = _demo()
    broken["items"][0]["sowId"] = "no-such-sow"
    broken["dependencies"][0]["targetItemId"] = broken["dependencies"][0]["sourceItemId"]
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps(broken))
    db = tmp_path / "demo.db"
    assert run_main("--db", db, "import", good).exit_code == 0
    baseline = tmp_path / "baseline.json"
    run_main("--db", db, "chain", "check", demo_data.DEMO_SOW, "--write-baseline", baseline)
    accepted = tmp_path / "accepted-risks.toml"
    accepted.write_text(ACCEPTED)
    return {"good": good, "broken": bad, "baseline": baseline, "accepted": accepted, "db": db}


def test_good_files_of_each_kind_pass(files: dict[str, Path]) -> None:
    result = run_main("validate", files["good"], files["baseline"], files["accepted"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"ok\tdataset\t{files['good']}",
        f"ok\tbaseline\t{files['baseline']}",
        f"ok\taccepted-risks\t{files['accepted']}",
    ]


def test_a_broken_dataset_is_refused_with_each_of_its_problems_as_import_refuses_it(files) -> None:
    result = run_main("validate", files["good"], files["broken"])
    assert result.exit_code == 2
    assert result.stdout == f"ok\tdataset\t{files['good']}\n"
    problems = result.stderr.splitlines()
    assert f"{files['broken']}: items.0.sowId: SOW no-such-sow not found" in problems
    assert f"{files['broken']}: dependencies.0.targetItemId: an item cannot depend on itself" in problems
    imported = run_main("--db", files["db"].with_name("fresh.db"), "import", files["broken"])
    assert imported.exit_code == 2
    assert "SOW no-such-sow not found" in imported.stderr


def test_a_dataset_is_checked_against_an_empty_database_and_nothing_is_written(files, tmp_path) -> None:
    before = sorted(tmp_path.iterdir())
    assert run_main("validate", files["good"], files["good"]).exit_code == 0  # no clash with itself
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"version": 2, "tool": "sowctl chain check", "findings": []}', "unsupported baseline version 2"),
        (
            '{"version": 1, "tool": "sowctl chain check", "findings": [{"kind": "critical"}]}',
            "findings[0].fingerprint: must be a non-empty string",
        ),
    ],
)
def test_a_broken_baseline_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(text)
    result = run_main("validate", baseline)
    assert result.exit_code == 2
    assert result.stderr == f"{baseline}: baseline: {problem}\n"


def test_a_broken_accepted_risks_file_is_refused_naming_the_entry_and_field(tmp_path: Path) -> None:
    accepted = tmp_path / "accepted-risks.toml"
    accepted.write_text(ACCEPTED.replace('reason = "Supplier confirmed in writing"\n', ""))
    result = run_main("validate", accepted)
    assert result.exit_code == 2
    problem = "accepted risks: accepted[0].reason: is required (a non-empty string)"
    assert result.stderr == f"{accepted}: {problem}\n"


def test_kind_can_be_named_and_an_unreadable_file_is_reported(files, tmp_path: Path) -> None:
    as_dataset = run_main("validate", "--kind", "dataset", files["baseline"])
    assert as_dataset.exit_code == 2
    assert as_dataset.stderr.startswith(f"{files['baseline']}: ")
    missing = tmp_path / "missing.json"
    result = run_main("validate", missing, files["accepted"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{missing}: cannot read")
    assert result.stdout == f"ok\taccepted-risks\t{files['accepted']}\n"
