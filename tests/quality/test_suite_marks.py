"""The PostgreSQL pass of .ci/run runs only the tests marked ``database`` (tests/conftest.py
marks those of tests/db and tests/services that get a database): a test written for the
backends' differences must carry the mark, or it would never run on PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
DATABASE_FOLDERS = {"db", "services"}
# What a test written for a backend's differences reads: the backend the run chose.
BACKEND_AWARE = re.compile(r"SOWCTL_TEST_DB|db_url\.startswith\(\"postgres|\bis_postgres\b")


def test_every_test_module_that_reads_the_backend_is_marked_database() -> None:
    unmarked = []
    for path in sorted(TESTS.glob("*/test_*.py")):
        if path.parent.name in DATABASE_FOLDERS:
            continue
        text = path.read_text(encoding="utf-8")
        if BACKEND_AWARE.search(text) and "pytest.mark.database" not in text:
            unmarked.append(str(path.relative_to(TESTS)))
    assert not unmarked, f"mark these pytest.mark.database (module or test): {unmarked}"
