"""SOWs: start from an empty database (a default organization and project), list, scope."""

from __future__ import annotations

from datetime import datetime

import pytest

from sowctl import operations
from sowctl.foundation import clock
from sowctl.foundation.errors import Forbidden, InvalidInput, NotFound
from sowctl.services.access import Caller
from sowctl.services.sows import DEFAULT_ORG_ID, DEFAULT_PROJECT_NAME
from sowctl.storage import models as m

T0 = datetime(2026, 3, 16, 9, 30, 0)
SOW_FIELDS = ["id", "projectId", "title", "createdAt", "itemCount"]


def test_sows_create_on_an_empty_database_makes_the_defaults(cli, db_url):
    clock.set_fixed_now(T0)
    result = cli("sows", "create", "Phase 1", "--json")
    assert result.exit_code == 0, result.stderr
    sow = result.json()
    assert list(sow) == SOW_FIELDS
    assert (sow["title"], sow["createdAt"], sow["itemCount"]) == ("Phase 1", "2026-03-16T09:30:00Z", 0)
    assert m.Organization.get_by_id(DEFAULT_ORG_ID).id == "local"
    project = m.Project.get_by_id(sow["projectId"])
    assert (project.name, project.organization_id) == (DEFAULT_PROJECT_NAME, "local")
    assert m.Sow.get_by_id(sow["id"]).project_id == project.id


def test_the_default_project_is_reused(cli):
    first = cli("sows", "create", "A", "--json").json()
    second = cli("sows", "create", "B", "--json").json()
    assert first["projectId"] == second["projectId"]
    assert first["id"] != second["id"]
    assert m.Project.select().count() == 1
    assert m.Organization.select().count() == 1


def test_items_create_works_on_a_fresh_database(cli):
    assert cli("sows", "create", "S", "--id", "s1").exit_code == 0
    result = cli("items", "create", "s1", "--title", "First task", "--json")
    assert result.exit_code == 0, result.stderr
    item = result.json()
    assert (item["sowId"], item["type"], item["status"], item["orderIndex"]) == (
        "s1",
        "task_item",
        "pending",
        0,
    )
    assert cli("sows", "list", "--json").json()[0]["itemCount"] == 1


def test_piped_sows_create_prints_key_value_lines(cli):
    clock.set_fixed_now(T0)
    result = cli("sows", "create", "Phase 1", "--id", "s1")
    lines = dict(line.split("\t", 1) for line in result.stdout.splitlines())
    assert lines["id"] == "s1" and lines["title"] == "Phase 1" and lines["itemCount"] == "0"


def test_sows_list_outputs(cli):
    clock.set_fixed_now(T0)
    cli("sows", "create", "First", "--id", "s1")
    cli("sows", "create", "Second", "--id", "s2")
    cli("items", "create", "s2", "--title", "t")
    cli("items", "create", "s2", "--title", "u")
    project = m.Project.get().id
    piped = cli("sows", "list")
    assert piped.exit_code == 0
    assert piped.stdout.splitlines() == [
        f"s1\t{project}\t0\t2026-03-16T09:30:00Z\tFirst",
        f"s2\t{project}\t2\t2026-03-16T09:30:00Z\tSecond",
    ]
    assert cli("sows", "list", "-q").stdout == "s1\ns2\n"
    listed = cli("sows", "list", "--json").json()
    assert [(s["id"], s["itemCount"]) for s in listed] == [("s1", 0), ("s2", 2)]
    assert all(list(s) == SOW_FIELDS for s in listed)


def test_sows_create_in_a_named_project(cli):
    cli("sows", "create", "seed")  # makes the local organization
    m.Project.create(id="p-2", organization="local", name="Tower", created_at=T0, updated_at=T0)
    result = cli("sows", "create", "In tower", "--project", "p-2", "--id", "s-t", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["projectId"] == "p-2"
    assert cli("sows", "list", "--project", "p-2", "-q").stdout == "s-t\n"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("sows", "create", "X", "--project", "nope"), 3, "error: project nope not found\n"),
        (("sows", "create", "X", "--id", "s1"), 2, "error: invalid --id 's1': SOW s1 already exists\n"),
        (("sows", "create", "  "), 2, "error: invalid --title '  ': must not be empty\n"),
        (("sows", "create"), 2, "error: Missing argument"),
    ],
)
def test_refused_sows_create(cli, args, code, message):
    cli("sows", "create", "Existing", "--id", "s1")
    before = list(m.Sow.select(m.Sow.id, m.Sow.title).tuples())
    result = cli(*args)
    assert result.exit_code == code
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
    assert result.stdout == ""
    assert list(m.Sow.select(m.Sow.id, m.Sow.title).tuples()) == before


def test_local_org_option_scopes_sows(cli):
    assert cli("sows", "create", "L", "--id", "s-l").exit_code == 0
    assert cli("orgs", "create", "acme").exit_code == 0
    assert cli("--org", "acme", "sows", "create", "A", "--id", "s-a").exit_code == 0
    assert m.Sow.get_by_id("s-a").project.organization_id == "acme"
    assert m.Sow.get_by_id("s-l").project.organization_id == "local"
    assert cli("--org", "acme", "sows", "list", "-q").stdout == "s-a\n"
    # No --org: every organization (two creates may share a timestamp or not: order aside).
    assert sorted(cli("sows", "list", "-q").stdout.split()) == ["s-a", "s-l"]


# --- the service, as the server's callers see it ------------------------------------


def test_a_token_caller_creates_in_its_own_organization(db):
    clock.set_fixed_now(T0)
    m.Organization.create(id="org-2", name="Two")
    member = Caller(user_id="u", organization_id="org-2", role="member")
    sow = operations.call_local("sows.create", member, body={"title": "Mine"})
    assert m.Project.get_by_id(sow["projectId"]).organization_id == "org-2"
    other = Caller(user_id="v", organization_id="org-3", role="member")
    m.Organization.create(id="org-3", name="Three")
    assert operations.call_local("sows.list", other) == []
    assert [s["id"] for s in operations.call_local("sows.list", member)] == [sow["id"]]


def test_a_project_of_another_organization_does_not_exist(db):
    m.Organization.create(id="org-2", name="Two")
    m.Organization.create(id="org-3", name="Three")
    m.Project.create(id="p-3", organization="org-3", name="Theirs", created_at=T0, updated_at=T0)
    member = Caller(user_id="u", organization_id="org-2", role="member")
    with pytest.raises(NotFound, match="project p-3 not found"):
        operations.call_local("sows.create", member, body={"title": "X", "projectId": "p-3"})
    assert m.Sow.select().count() == 0


def test_a_viewer_cannot_create_a_sow(db):
    viewer = Caller(user_id="u", organization_id="local", role="viewer")
    with pytest.raises(Forbidden):
        operations.call_local("sows.create", viewer, body={"title": "X"})
    assert m.Sow.select().count() == 0 and m.Project.select().count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "title"),
        ({"title": 3}, "title"),
        ({"title": "x", "id": 5}, "id"),
        ({"title": "x", "projectId": 1}, "projectId"),
    ],
)
def test_sow_create_validation(db, body, field):
    with pytest.raises(InvalidInput) as info:
        operations.call_local("sows.create", Caller.local(), body=body)
    assert [issue.path for issue in info.value.issues] == [(field,)]
    assert m.Sow.select().count() == 0


# --- local mode never invents an organization (issue 28) -----------------------------


def _imported(cli, tmp_path, organizations: list[str]) -> None:
    """A database imported from a dataset: the n-th organization holds a SOW ``sow-<n>``."""
    import json

    projects = [f"00000000-0000-4000-8000-00000000a00{n}" for n in range(1, len(organizations) + 1)]
    dataset = {
        "organizations": [{"id": org, "name": org} for org in organizations],
        "projects": [
            {"id": project, "organizationId": org, "name": f"Project of {org}"}
            for project, org in zip(projects, organizations, strict=True)
        ],
        "sows": [
            {"id": f"sow-{n}", "projectId": project, "title": "SOW"} for n, project in enumerate(projects, 1)
        ],
    }
    path = tmp_path / "data.json"
    path.write_text(json.dumps(dataset))
    assert cli("import", str(path)).exit_code == 0


def _organizations() -> list[str]:
    return [org for (org,) in m.Organization.select(m.Organization.id).order_by(m.Organization.id).tuples()]


def test_the_only_organization_takes_the_new_sow(cli, tmp_path):
    _imported(cli, tmp_path, ["org-1"])
    created = cli("sows", "create", "Again", "--id", "sow-2", "--json")
    assert created.exit_code == 0, created.stderr
    assert m.Project.get_by_id(created.json()["projectId"]).organization_id == "org-1"
    assert _organizations() == ["org-1"]


def test_an_id_the_only_organization_has_is_refused_and_nothing_made(cli, tmp_path):
    _imported(cli, tmp_path, ["org-1"])
    again = cli("sows", "create", "Again", "--id", "sow-1")
    assert again.exit_code == 2 and "SOW sow-1 already exists" in again.stderr
    assert _organizations() == ["org-1"] and m.Sow.select().count() == 1
    assert cli("chain", "check", "sow-1").exit_code in (0, 1)  # the gate still runs


def test_several_organizations_need_org_and_are_listed(cli, tmp_path):
    _imported(cli, tmp_path, ["org-1", "org-2"])
    refused = cli("sows", "create", "Tower B")
    assert refused.exit_code == 2
    assert refused.stderr == (
        "error: the database holds 2 organizations (org-1, org-2): choose one with --org (or SOWCTL_ORG)\n"
    )
    assert m.Sow.select().count() == 2 and _organizations() == ["org-1", "org-2"]
    chosen = cli("--org", "org-2", "sows", "create", "Tower B", "--json")
    assert chosen.exit_code == 0, chosen.stderr
    assert m.Project.get_by_id(chosen.json()["projectId"]).organization_id == "org-2"


def test_a_mistyped_org_is_refused_with_the_closest_and_makes_nothing(cli, tmp_path):
    _imported(cli, tmp_path, ["org-bench"])
    typo = cli("--org", "org-bnech", "sows", "create", "X")
    assert typo.exit_code == 3
    assert typo.stderr == "error: organization org-bnech not found (--org); did you mean 'org-bench'?\n"
    assert _organizations() == ["org-bench"] and m.Sow.select().count() == 1


def test_an_id_another_organization_uses_needs_org(cli, tmp_path):
    _imported(cli, tmp_path, ["org-1", "org-2"])
    project = m.Project.select().where(m.Project.organization == "org-2").first()
    refused = cli("sows", "create", "Copy", "--id", "sow-1", "--project", project.id)
    assert refused.exit_code == 2 and "already exists in organization org-1" in refused.stderr
    assert "--org" in refused.stderr and m.Sow.select().count() == 2
    chosen = cli("--org", "org-2", "sows", "create", "Copy", "--id", "sow-1", "--project", project.id)
    assert chosen.exit_code == 0, chosen.stderr


def test_orgs_create_is_the_way_to_make_one(cli):
    made = cli("orgs", "create", "org-9", "--name", "Nine", "--json")
    assert made.exit_code == 0 and made.json() == {"id": "org-9", "name": "Nine"}
    again = cli("orgs", "create", "org-9")
    assert again.exit_code == 2 and "organization org-9 already exists" in again.stderr
    assert cli("sows", "create", "S", "--id", "s").exit_code == 0  # the only one: org-9
    listed = cli("orgs", "list", "--json")
    assert listed.json() == [{"id": "org-9", "name": "Nine", "sowCount": 1}]
