"""The CLI in a real pseudo-terminal: ids, enum values and money are never broken.

The demo dataset is loaded with every item and dependency id replaced by a uuid
(what a real database holds), then each listing runs on a pty of 80 and of 120
columns. Every id and amount must appear whole on one line, and no line may be
wider than the terminal. Each run starts sowctl on a pty (about a second): the quick loop
keeps one listing at 80 columns, the table that folds into records and the narrow trees;
the rest are marked slow.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from rich.cells import cell_len

from sowctl.foundation import money
from sowctl.services import demo_data
from tests.support.terminal import run_in_terminal

SOW = demo_data.DEMO_SOW
PROJECT = str(demo_data.DEMO_PROJECT_ID)


def _sowctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """``sowctl ARGS`` in a fresh process (no terminal), its output as text."""
    return subprocess.run([sys.executable, "-m", "sowctl", *args], env=env, capture_output=True, text=True)


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env.update({"SOWCTL_CONFIG": str(tmp / "config.toml"), "SOWCTL_PAGER": "", "TZ": "UTC"})
    env.pop("NO_COLOR", None)  # colours on, as in a person's terminal (codes are removed before asserting)
    return env


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A database holding the demo dataset, its item and dependency ids made uuids."""
    tmp = tmp_path_factory.mktemp("terminal")
    data = demo_data.demo_dataset(datetime.date(2026, 11, 25))
    text = json.dumps(data)
    for record in data["items"] + data["dependencies"]:
        new = str(uuid.uuid5(uuid.NAMESPACE_URL, record["id"]))
        text = text.replace(json.dumps(record["id"]), json.dumps(new))
    (tmp / "demo.json").write_text(text)
    env = _env(tmp)
    db = tmp / "demo.db"
    done = _sowctl(env, "--db", str(db), "import", str(tmp / "demo.json"))
    assert done.returncode == 0, done.stderr
    return db, env


_JSON: dict[tuple[str, ...], object] = {}  # the demo database is only read: each answer once


def _json(demo, *args: str):
    db, env = demo
    key = (str(db), *args)
    if key in _JSON:
        return _JSON[key]
    done = _sowctl(env, "--db", str(db), *args, "--json")
    assert done.returncode == 0, done.stderr
    _JSON[key] = json.loads(done.stdout)
    return _JSON[key]


def _items(demo) -> list[str]:
    return [item["id"] for item in _json(demo, "items", "list", SOW)]


def _deps(demo) -> list[str]:
    values = []
    for dep in _json(demo, "deps", "list", "--sow", SOW):
        values += [dep["id"], dep["sourceItemId"], *([] if dep["isExternal"] else [dep["targetItemId"]])]
        values += [
            dep["dependencyType"],
            dep["riskLevel"],
            dep["status"],
            *filter(None, [dep.get("slaDate")]),
        ]
    return values


def _chain(demo) -> list[str]:
    values = []
    for entry in _json(demo, "chain", "show", SOW)["dependencies"]:
        values += [entry["id"], entry["sourceItem"]["id"], entry["dependencyType"], entry["status"]]
        if entry["targetItem"].get("id"):
            values.append(entry["targetItem"]["id"])
    return values


def _snapshot(demo) -> list[str]:
    detail = _json(demo, "budgets", "snapshot", "21", "--project", PROJECT)["data"]
    keys = ("original_budget", "current_budget", "committed", "spent", "projected_total", "variance")
    values = [money.display(line[key]) for line in detail["line_items"] for key in keys]
    values += [line["code"] for line in detail["line_items"]]
    return values + [money.display(detail["totals"][key]) for key in keys]


def _projects(demo) -> list[str]:
    return [project["id"] for project in _json(demo, "projects", "list")["projects"]]


LISTINGS = {
    "items list": (["items", "list", SOW], _items),
    "deps list": (["deps", "list", "--sow", SOW], _deps),
    "chain show": (["chain", "show", SOW], _chain),
    "budgets snapshot": (["budgets", "snapshot", "21", "--project", PROJECT], _snapshot),
    "projects list": (["projects", "list"], _projects),
}


@pytest.mark.parametrize(
    ("name", "columns"),
    [
        pytest.param(name, columns, marks=() if (name, columns) == ("items list", 80) else pytest.mark.slow)
        for columns in (80, 120, 160)
        for name in LISTINGS
    ],
)
def test_every_id_and_amount_is_whole_on_one_line(demo, name, columns):
    args, expected = LISTINGS[name]
    db, env = demo
    code, screen = run_in_terminal(["--db", str(db), *args], columns=columns, env=env)
    assert code == 0, screen
    lines = screen.splitlines()
    too_wide = [line for line in lines if cell_len(line) > columns]
    assert not too_wide, "\n".join(too_wide)
    values = expected(demo)
    assert values
    broken = [value for value in values if not any(value in line for line in lines)]
    assert not broken, f"split or cut at {columns} columns: {broken}\n{screen}"


def test_a_wide_terminal_shows_a_table_with_titles_shortened(demo):
    db, env = demo
    code, screen = run_in_terminal(["--db", str(db), "items", "list", SOW], columns=80, env=env)
    assert code == 0
    lines = screen.splitlines()
    assert lines[0].split() == ["ID", "TYPE", "STATUS", "TITLE"]  # ORDER and PARENT left out to fit
    assert any(line.rstrip().endswith("…") for line in lines)  # a long title shortened, not wrapped
    assert "not shown at 80 columns: order, parent (--columns to choose)" in screen
    # one line per item: the table has a header, its rule, 17 rows and the note
    assert len([line for line in lines if line.strip()]) == 2 + 17 + 1


def test_a_table_that_cannot_fit_becomes_records(demo):
    db, env = demo
    code, screen = run_in_terminal(["--db", str(db), "deps", "list", "--sow", SOW], columns=80, env=env)
    assert code == 0
    dep = _json(demo, "deps", "list", "--sow", SOW)[0]
    block = screen.split("\n\n")[0].splitlines()
    assert block[0].split() == ["ID", dep["id"]]
    assert block[1].split() == ["SOURCE", dep["sourceItemId"]]


@pytest.mark.parametrize("view", ["deps list", "items list", "items get"])
def test_records_at_40_columns_put_an_id_that_does_not_fit_beside_its_name_on_its_own_line(demo, view):
    """A uuid is 36 cells: beside "SOURCE  " it would pass 40 columns. It goes, whole, on
    the line after its name (a text value still wraps beside its name)."""
    db, env = demo
    items = _json(demo, "items", "list", SOW)
    child = next(item for item in items if item["parentItemId"])
    args = {
        "deps list": ["deps", "list", "--sow", SOW],
        "items list": ["items", "list", SOW],
        "items get": ["items", "get", child["id"]],
    }[view]
    code, screen = run_in_terminal(["--db", str(db), *args], columns=40, env=env)
    assert code == 0, screen
    lines = [line.rstrip() for line in screen.splitlines()]
    assert not [line for line in lines if cell_len(line) > 40], screen
    ids = {"deps list": _deps(demo)[:2], "items list": _items(demo)}.get(
        view, [child["id"], child["parentItemId"]]
    )
    assert all(uuid.UUID(value) for value in ids)
    for value in ids:
        at = next((n for n, line in enumerate(lines) if line.strip() == value), None)
        assert at is not None, f"{value} split or not alone on its line at 40 columns:\n{screen}"
        assert lines[at - 1].strip() in ("ID", "SOURCE", "PARENT", "id", "parentItemId")  # its name, above it
    if view == "items get":  # text beside its name, wrapped under itself
        assert lines[next(n for n, line in enumerate(lines) if line.strip() == "id") + 2].startswith("title ")


def test_a_record_whose_names_leave_no_room_at_40_columns_puts_each_value_under_its_name(demo):
    """contracts show has names of 36 cells (``payment_terms.retention_percentage``): beside
    them 2 cells were left, and every value was folded into a sliver ("Nort/hwin/d")."""
    db, env = demo
    project = demo_data.demo_dataset(datetime.date(2026, 11, 25))["primeContracts"][0]
    args = ["--org", demo_data.DEMO_ORG, "--company", demo_data.DEMO_COMPANY]
    args += ["contracts", "show", str(project["id"]), "--project", str(project["project_id"])]
    code, screen = run_in_terminal(["--db", str(db), *args], columns=40, env=env)
    assert code == 0, screen
    lines = [line.rstrip() for line in screen.splitlines()]
    assert not [line for line in lines if cell_len(line) > 40], screen
    name = lines.index("customer.name")
    assert lines[name + 1] == "  " + project["customer"]["name"]
    value = lines.index("original_contract_value") + 1
    assert lines[value].strip().replace(",", "") == f"{project['original_contract_value']:.2f}"
    email = project["customer"]["contact_email"]
    assert email in [line.strip() for line in lines]  # whole, on one line


# --- deps list on mixed data: internal targets (ids) and external ones (long names) ----------

_EXTERNAL = [
    "Municipal building permit office, northern district planning and zoning department",
    "Steel fabricator shop drawings approval round two with the structural engineer of record",
]


def _mixed_dependencies(tmp: Path, env: dict[str, str]) -> Path:
    """Two SOWs of internal and external dependencies: ``short`` with short ids (a table fits
    at 80 columns), ``long`` with uuids and a 64-character id (the longest an id may be)."""
    project, near, big = str(uuid.UUID(int=7)), str(uuid.UUID(int=98)), str(uuid.UUID(int=99))
    items = {"short": ["s-1", "s-2", "s-3", near], "long": ["l-1", "l-2", big]}
    shapes = {
        "short": [("dep-1", "s-1", near), ("dep-2", "s-2", _EXTERNAL[0]), ("dep-3", "s-3", _EXTERNAL[1])],
        "long": [
            (str(uuid.UUID(int=1)), "l-1", "l-2"),
            (str(uuid.UUID(int=2)), "l-2", _EXTERNAL[0]),
            ("d" * 64, "l-1", big),
            (str(uuid.UUID(int=3)), big, _EXTERNAL[1]),
        ],
    }
    deps = []
    for dep_id, source, target in shapes["short"] + shapes["long"]:
        external = target in _EXTERNAL
        deps.append(
            {"id": dep_id, "sourceItemId": source, "targetItemId": None if external else target,
             "isExternal": external, **({"externalTarget": target} if external else {}),
             "dependencyType": "depends_on", "riskLevel": "critical", "status": "active",
             "slaDate": "2026-12-01"}
        )  # fmt: skip
    data = {
        "organizations": [{"id": "org-1", "name": "Org"}],
        "projects": [{"id": project, "organizationId": "org-1", "name": "P", "status": "active"}],
        "sows": [{"id": sow, "projectId": project, "title": sow} for sow in items],
        "items": [
            {"id": item, "sowId": sow, "title": item, "type": "task_item"}
            for sow, ids in items.items()
            for item in ids
        ],
        "dependencies": deps,
    }
    (tmp / "mixed.json").write_text(json.dumps(data))
    db = tmp / "mixed.db"
    done = _sowctl(env, "--db", str(db), "import", str(tmp / "mixed.json"))
    assert done.returncode == 0, done.stderr
    return db


@pytest.mark.slow
def test_deps_ids_stay_whole_at_80_columns_beside_long_external_targets(tmp_path):
    # A long external name never costs an id: it is shortened in a table, or the rows fold
    # into records (an id of up to 64 cells fits beside its name); TARGET, whose internal
    # cells are ids, is never cut either.
    env = _env(tmp_path)
    db = _mixed_dependencies(tmp_path, env)
    screens = {}
    for sow in ("short", "long"):
        code, screen = run_in_terminal(["--db", str(db), "deps", "list", "--sow", sow], columns=80, env=env)
        assert code == 0, screen
        lines = screen.splitlines()
        assert not [line for line in lines if cell_len(line) > 80], screen
        piped = subprocess.run(
            [sys.executable, "-m", "sowctl", "--db", str(db), "deps", "list", "--sow", sow, "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        deps = json.loads(piped.stdout)
        ids = [
            value for dep in deps for value in (dep["id"], dep["sourceItemId"], dep["targetItemId"]) if value
        ]
        assert len(deps) == (3 if sow == "short" else 4)
        broken = [value for value in ids if not any(value in line.split() for line in lines)]
        assert not broken, f"cut or split at 80 columns: {broken}\n{screen}"
        screens[sow] = lines
    # Short ids: a table, each dependency on one line; TARGET stays (an internal target is an
    # id) whole, the external names shortened to what is left, RISK and SLA left out first.
    short = screens["short"]
    assert short[0].split() == ["ID", "SOURCE", "TARGET", "TYPE", "STATUS"], short
    assert "not shown at 80 columns: risk, sla (--columns to choose)" in short
    rows = [line for line in short if line.startswith("dep-")]
    assert [row.split()[:3] for row in rows] == [
        ["dep-1", "s-1", str(uuid.UUID(int=98))],
        ["dep-2", "s-2", "external:"],
        ["dep-3", "s-3", "external:"],
    ]
    assert "external: Municipal building permit" in rows[1] and rows[1].count("…") == rows[2].count("…") == 1
    # Long ids: records, each id on the line of its name, the external names whole (wrapped).
    long = [line.rstrip() for line in screens["long"]]
    assert f"ID      {'d' * 64}" in long and f"TARGET  {uuid.UUID(int=99)}" in long
    assert " ".join(" ".join(long).split()).count(_EXTERNAL[1]) == 1


@pytest.mark.slow
def test_dates_are_readable_with_their_zone_on_a_terminal_and_iso_when_piped(demo):
    db, env = demo
    args = ["--db", str(db), "budgets", "snapshots", "--project", PROJECT]
    created = _json(demo, "budgets", "snapshots", "--project", PROJECT)["data"][0]["created_at"]
    moment = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    _, screen = run_in_terminal(args, columns=120, env={**env, "TZ": "Asia/Tokyo"})
    assert f"{moment.astimezone(datetime.timezone(datetime.timedelta(hours=9))):%Y-%m-%d %H:%M} JST" in screen
    assert created not in screen
    piped = subprocess.run([sys.executable, "-m", "sowctl", *args], env=env, capture_output=True, text=True)
    assert created in piped.stdout


# --- the pager ------------------------------------------------------------------------------


def _pager(tmp_path: Path) -> tuple[str, Path]:
    seen = tmp_path / "paged.txt"
    return f"{sys.executable} -c \"import sys; open({str(seen)!r}, 'w').write(sys.stdin.read())\"", seen


@pytest.mark.slow
def test_long_output_on_a_terminal_goes_through_the_pager(demo, tmp_path):
    db, env = demo
    pager, seen = _pager(tmp_path)
    code, screen = run_in_terminal(
        ["--db", str(db), "items", "list", SOW], columns=120, rows=10, env={**env, "SOWCTL_PAGER": pager}
    )
    assert code == 0
    assert seen.exists(), screen
    assert _items(demo)[0] in seen.read_text()
    assert _items(demo)[0] not in screen  # the pager had it, not the terminal


@pytest.mark.slow
def test_pager_variable_precedence_and_no_pager(demo, tmp_path):
    db, env = demo
    pager, seen = _pager(tmp_path)
    args = ["--db", str(db), "items", "list", SOW]
    # PAGER is used when SOWCTL_PAGER is not set
    env_pager = {k: v for k, v in env.items() if k != "SOWCTL_PAGER"}
    run_in_terminal(args, columns=120, rows=10, env={**env_pager, "PAGER": pager})
    assert seen.exists()
    seen.unlink()
    # --no-pager, an empty SOWCTL_PAGER, and short output: straight to the terminal
    _, screen = run_in_terminal(
        [*args, "--no-pager"], columns=120, rows=10, env={**env, "SOWCTL_PAGER": pager}
    )
    assert not seen.exists() and _items(demo)[0] in screen
    _, screen = run_in_terminal(
        args, columns=120, rows=10, env={**env_pager, "SOWCTL_PAGER": "", "PAGER": pager}
    )
    assert not seen.exists() and _items(demo)[0] in screen
    _, screen = run_in_terminal(args, columns=120, rows=100, env={**env, "SOWCTL_PAGER": pager})
    assert not seen.exists() and _items(demo)[0] in screen


@pytest.mark.slow
def test_piped_output_never_pages(demo, tmp_path):
    db, env = demo
    pager, seen = _pager(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "sowctl", "--db", str(db), "items", "list", SOW],
        env={**env, "SOWCTL_PAGER": pager, "LINES": "5"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and not seen.exists()
    assert len(done.stdout.splitlines()) == 17


@pytest.mark.slow
def test_a_pager_that_does_not_exist_still_shows_the_output(demo):
    db, env = demo
    code, screen = run_in_terminal(
        ["--db", str(db), "items", "list", SOW],
        columns=120,
        rows=10,
        env={**env, "SOWCTL_PAGER": "no-such-pager-here"},
    )
    assert code == 0
    assert "pager 'no-such-pager-here' not found" in screen
    assert _items(demo)[0] in screen


# --- items tree on a narrow terminal ----------------------------------------------------------


def _depths(items: list[dict]) -> dict[str, int]:
    parent = {item["id"]: item.get("parentItemId") for item in items}
    depth: dict[str, int] = {}
    for item_id in parent:
        level, up = 0, parent[item_id]
        while up is not None:
            level, up = level + 1, parent[up]
        depth[item_id] = level
    return depth


@pytest.mark.parametrize("columns", [44, 38])
def test_a_narrow_tree_keeps_the_hierarchy_visible_and_every_id_whole(demo, columns):
    """Where the guides leave no room, a node drawn higher than it is says by how many
    levels (">"); where not even that fits, the plain indented list is shown."""
    db, env = demo
    code, screen = run_in_terminal(["--db", str(db), "items", "tree", SOW], columns=columns, env=env)
    assert code == 0
    items = _json(demo, "items", "list", SOW)
    depth = _depths(items)
    lines = screen.splitlines()
    for item in items:
        (index,) = [n for n, line in enumerate(lines) if item["id"] in line.split()]  # whole, once
        if columns == 44:  # uuids leave room for the top level only
            start = next(n for n in range(index, -1, -1) if "── " in lines[n])  # the node's first line
            label = lines[start].split("── ", 1)[1].split()
            marker = label[0] if set(label[0]) == {">"} else ""
            assert len(marker) == depth[item["id"]], lines[start]
    if columns == 38:
        assert "├" not in screen and "└" not in screen  # the plain list
