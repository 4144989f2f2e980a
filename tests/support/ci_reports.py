"""Readers of the CI reports for the tests, with the tools CI systems' own readers resemble:

* SARIF: validated against the official SARIF 2.1.0 JSON schema with jsonschema. The schema is
  not copied into this repository (it carries no licence statement); it is read from the
  project's shared folder (``shared/schemas/sarif-schema-2.1.0.json`` beside or above the
  checkout, or the workplace's ``/work/shared/schemas``) or from ``SOWCTL_TEST_SARIF_SCHEMA``.
* JUnit XML: parsed with junitparser.
* GitLab Code Quality: GitLab's documented required fields and their types.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

SCHEMA_NAME = "sarif-schema-2.1.0.json"
GITLAB_SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


@functools.cache
def _sarif_validator():
    import jsonschema

    override = os.environ.get("SOWCTL_TEST_SARIF_SCHEMA")
    candidates = [Path(override)] if override else []
    here = Path(__file__).resolve()
    candidates += [parent / "shared" / "schemas" / SCHEMA_NAME for parent in here.parents]
    # A clone made elsewhere (CI clones into a temporary folder) finds the workplace's copy.
    candidates.append(Path("/work/shared/schemas") / SCHEMA_NAME)
    for path in candidates:
        if path.is_file():
            schema = json.loads(path.read_text(encoding="utf-8"))
            jsonschema.Draft4Validator.check_schema(schema)
            return jsonschema.Draft4Validator(schema)
    raise AssertionError(
        f"the official SARIF schema ({SCHEMA_NAME}) was not found in a shared/schemas folder above "
        f"{here.parent}; set SOWCTL_TEST_SARIF_SCHEMA to its path"
    )


def validate_sarif(document: Any) -> None:
    errors = sorted(_sarif_validator().iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5])


def sarif(path: Path) -> dict[str, Any]:
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    validate_sarif(document)
    return document


def junit(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Test cases by the last part of their class name (the risk kind, or the SOW id for an
    error), each ``{"name", "result": passed|failure|skipped|error, "message"}``."""
    from junitparser import Error, Failure, JUnitXml, Skipped

    xml = JUnitXml.fromfile(str(path))
    cases: dict[str, list[dict[str, Any]]] = {}
    total = 0
    for suite in xml:
        counted = {"failures": 0, "skipped": 0, "errors": 0}
        for case in suite:
            total += 1
            result, message = "passed", None
            for outcome in case.result:
                for cls, name, counter in ((Failure, "failure", "failures"), (Skipped, "skipped", "skipped"),
                                           (Error, "error", "errors")):  # fmt: skip
                    if isinstance(outcome, cls):
                        result, message = name, outcome.message
                        counted[counter] += 1
            key = case.classname.rsplit(".", 1)[-1]
            cases.setdefault(key, []).append({"name": case.name, "result": result, "message": message})
        assert (suite.failures, suite.skipped, suite.errors) == tuple(counted.values()), suite.name
        assert suite.tests == len(list(suite))
    assert xml.tests == total
    return cases


def gitlab(path: Path) -> list[dict[str, Any]]:
    issues = json.loads(Path(path).read_text(encoding="utf-8"))
    assert isinstance(issues, list)
    prints = [issue["fingerprint"] for issue in issues]
    assert len(prints) == len(set(prints)), "fingerprints must be unique"
    for issue in issues:
        assert isinstance(issue["description"], str) and issue["description"]
        assert isinstance(issue["check_name"], str) and issue["check_name"]
        assert isinstance(issue["fingerprint"], str) and issue["fingerprint"]
        assert issue["severity"] in GITLAB_SEVERITIES
        assert isinstance(issue["location"]["path"], str) and issue["location"]["path"]
        assert isinstance(issue["location"]["lines"]["begin"], int)
    return issues
