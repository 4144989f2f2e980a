"""sowctl schema: a versioned JSON Schema per command's --json output.

Every --json run of the test suite is checked against these schemas (tests/support/
json_output.py, called by the CLI runner in both modes); the commands few other tests run
with --json are run here.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from typer.main import get_command

from sowctl.cli import app
from sowctl.output import json_schemas
from tests.support.cli import run_main
from tests.support.json_output import command_of


def commands_with_json() -> set[str]:
    found = set()
    for name, command in get_command(app).commands.items():
        for sub, leaf in getattr(command, "commands", {None: command}).items():
            if any("--json" in getattr(param, "opts", ()) for param in leaf.params):
                found.add(name if sub is None else f"{name} {sub}")
    return found


# The schema of `sowctl conformance --json` (a model in sowctl.schemas.cli_output, its entry in
# sowctl.output.json_schemas) comes with the integration of the change that owns those modules;
# remove this set then.


def test_every_command_with_json_output_has_a_schema() -> None:
    assert commands_with_json() == set(json_schemas.commands())


@pytest.mark.parametrize("command", json_schemas.commands())
def test_each_schema_is_valid_and_versioned(command: str) -> None:
    result = run_main("schema", *command.split())

    assert result.exit_code == 0, result.stderr
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["x-sowctl-output-version"] == json_schemas.OUTPUT_VERSION
    assert schema["title"] == f"sowctl {command} --json"


def test_schema_lists_the_commands_and_refuses_an_unknown_one() -> None:
    listed = run_main("schema")
    assert listed.exit_code == 0 and listed.stdout.split("\n")[:2] == ["status", "import"]

    refused = run_main("schema", "items", "lst")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr == "error: no JSON output for 'items lst'; did you mean 'items list'?\n"


def test_an_output_that_breaks_its_schema_is_caught() -> None:
    """The check the suite runs on every --json output fails on a missing field."""
    validator = jsonschema.Draft202012Validator(json_schemas.schema("orgs list"))
    assert not list(validator.iter_errors([{"id": "o", "name": "O", "sowCount": 1}]))
    assert list(validator.iter_errors([{"id": "o", "name": "O"}]))


def test_command_of_skips_global_options() -> None:
    assert command_of(["--db", "x.db", "--timeout", "3", "items", "list", "sow-1"]) == "items list"
    assert command_of(["--server=http://h", "status", "--json"]) == "status"


def test_admin_commands_print_what_their_schemas_say(cli, tmp_path) -> None:
    """import, orgs, tokens revoke, keys revoke and sows delete, checked by the CLI runner."""
    assert cli("orgs", "create", "org-2", "--json").exit_code == 0
    assert cli("orgs", "list", "--json").json()[0]["id"] == "org-2"
    token = cli("tokens", "create", "--user", "u", "--org", "org-2").stdout.strip()
    assert token
    token_id = cli("tokens", "list", "--json").json()[0]["id"]
    assert cli("tokens", "revoke", token_id, "--json").json() == {"id": token_id, "revoked": True}
    assert cli("keys", "create", "--org", "org-2").exit_code == 0
    key_id = cli("keys", "list", "--json").json()[0]["id"]
    assert cli("keys", "revoke", key_id, "--json").json() == {"id": key_id, "revoked": True}
    assert cli("sows", "create", "T", "--id", "sow-9", "--org", "org-2", "-q").exit_code == 0
    deleted = cli("sows", "delete", "sow-9", "--yes", "--json")
    assert deleted.exit_code == 0 and deleted.json()["deletedItems"] == 0
    exported = tmp_path / "out.json"
    assert cli("export", str(exported)).exit_code == 0
    imported = run_main("--db", str(tmp_path / "copy.db"), "import", str(exported), "--json")
    assert imported.exit_code == 0 and imported.json()["imported"]["organizations"] == 1
