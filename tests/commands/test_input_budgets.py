"""What a file or a body given to the CLI may make sowctl do: every JSON reader refuses text nested
deeper than ``limits.MAX_JSON_DEPTH`` with exit 2 and a message naming the file and where (the
dataset importer before its streaming parser sees it: 20,000 levels in a 40 KB file took it to
1 GiB), lists are counted before their elements are validated, and a refusal lists a bounded
number of problems. The database is unchanged after each.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from sowctl.foundation.budgets import MAX_JSON_DEPTH, MAX_LINE_ITEMS, MAX_REORDER_ENTRIES, MAX_REPORTED_ISSUES
from sowctl.services import demo_data
from sowctl.services.dataset import import_dataset
from sowctl.storage import models as m

TODAY = datetime.date(2026, 1, 1)
TOO_DEEP = f"arrays and objects are nested more than {MAX_JSON_DEPTH} levels deep"


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def past_limit(text: str) -> int:
    """The column of the bracket that opens one level too many (no string here holds one)."""
    depth = 0
    for index, char in enumerate(text):
        depth += (char in "[{") - (char in "]}")
        if depth > MAX_JSON_DEPTH:
            return index + 1
    raise AssertionError("not too deep")


def rows() -> dict[str, int]:
    """Rows of every table: what a refused command must leave as it was."""
    return {model.__name__: model.select().count() for model in m.ALL_MODELS}


@pytest.fixture
def demo(db) -> dict:
    data = demo_data.demo_dataset(TODAY)
    import_dataset(data)
    return data


def bomb_dataset(tmp_path: Path, levels: int) -> Path:
    """A dataset whose one item's description is ``levels`` arrays deep (20,000: a 40 KB file)."""
    item = '{"id": "deep-1", "sowId": "%s", "title": "t", "type": "task_item", "description": %s}'
    path = tmp_path / "deep.json"
    path.write_text('{"items": [' + item % (demo_data.DEMO_SOW, nested(levels)) + "]}", encoding="utf-8")
    return path


# --- nesting ---------------------------------------------------------------------------------


# Deeper files are measured in tests/quality/test_import_memory.py, in a child process whose
# memory is capped: the code before this limit took 10 GB for a 2 MB one.
@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH, 20_000])
def test_import_refuses_a_dataset_nested_past_the_limit(cli, demo, tmp_path: Path, levels: int) -> None:
    path = bomb_dataset(tmp_path, levels)
    before = rows()

    result = cli("import", path)

    assert result.exit_code == 2
    column = past_limit(path.read_text())
    assert result.stderr == f"error: {path}: {TOO_DEEP} (line 1, column {column})\n"
    assert rows() == before


def test_import_refuses_a_deep_dataset_on_stdin_and_one_that_is_not_an_object(cli, demo) -> None:
    before = rows()
    text = '{"items": [' + nested(5000) + "]}"
    piped = cli("import", "-", input=text)
    assert piped.exit_code == 2
    assert piped.stderr == f"error: stdin: {TOO_DEEP} (line 1, column {past_limit(text)})\n"
    bare = cli("import", "-", input=nested(50_000))  # not an object: read as a whole, still refused
    assert (bare.exit_code, bare.stderr) == (2, f"error: stdin: {TOO_DEEP} (line 1, column 65)\n")
    assert rows() == before


def test_serve_load_refuses_a_deep_dataset(cli, demo, fake_runner: dict, tmp_path: Path) -> None:
    path = bomb_dataset(tmp_path, 20_000)
    before = rows()

    result = cli("serve", "--load", path)

    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --load: {path}: {TOO_DEEP} (line 1, column ")
    assert "app" not in fake_runner  # refused before anything was served
    assert rows() == before


def test_from_file_bodies_are_refused_past_the_limit(cli, demo, tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    text = '{"items": [], "extra": ' + nested(MAX_JSON_DEPTH) + "}"
    body.write_text(text, encoding="utf-8")
    before = rows()
    for args in (["items", "reorder", demo_data.DEMO_SOW], ["po", "create"]):
        result = cli(*args, "--from-file", body)
        assert result.exit_code == 2, result.stderr
        assert f"--from-file: {TOO_DEEP} (line 1, column {past_limit(text)})" in result.stderr
    assert rows() == before


def test_replay_refuses_a_deep_record_line(cli, demo, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    line = {"method": "POST", "path": "/api/sows", "body": {"title": "x"}}
    deep = '{"method": "POST", "body": ' + nested(100_000) + "}"
    record.write_text(json.dumps(line) + "\n" + deep + "\n")
    before = rows()

    result = cli("replay", record)

    assert result.exit_code == 2
    assert f"line 2: {TOO_DEEP} (column {past_limit(deep)})" in result.stderr
    assert rows() == before


def test_chain_check_refuses_a_deep_baseline(cli, demo, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    text = '{"version": 1, "findings": ' + nested(100_000) + "}"
    baseline.write_text(text)

    result = cli("chain", "check", demo_data.DEMO_SOW, "--baseline", baseline)

    assert result.exit_code == 2
    assert f"--baseline: {TOO_DEEP} (line 1, column {past_limit(text)})" in result.stderr


def test_chain_check_refuses_deep_accepted_risks(cli, demo, tmp_path: Path) -> None:
    accepted = tmp_path / "accepted.toml"
    accepted.write_text("x = " + nested(100_000) + "\n")

    result = cli("chain", "check", demo_data.DEMO_SOW, "--accepted-risks", accepted)

    assert result.exit_code == 2
    assert "--accepted-risks: arrays or tables nest too deep to be read" in result.stderr


def test_a_deep_config_file_is_refused(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("x = " + nested(100_000) + "\n")
    monkeypatch.setenv("SOWCTL_CONFIG", str(config))

    result = cli("items", "list", "sow-1")

    assert result.exit_code == 2
    assert result.stderr == f"error: config file {config}: arrays or tables nest too deep to be read\n"


# --- lists and problems ------------------------------------------------------------------------


def test_a_dataset_order_of_too_many_lines_is_refused_by_its_count(cli, demo, tmp_path: Path) -> None:
    order = dict(demo["purchaseOrders"][0], id=99, number="PO-99")
    order["line_items"] = [0] * (MAX_LINE_ITEMS + 1)  # not even objects: never looked at
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({"purchaseOrders": [order]}))
    before = rows()

    result = cli("import", path)

    assert result.exit_code == 2
    assert result.stderr == (
        f"error: purchaseOrders[0] (id 99): line_items: must contain at most {MAX_LINE_ITEMS} "
        f"line items (this one has {MAX_LINE_ITEMS + 1})\n"
    )
    assert rows() == before


def test_items_reorder_lists_the_first_problems_and_counts_the_rest(cli, demo, tmp_path: Path) -> None:
    body = tmp_path / "reorder.json"
    body.write_text(json.dumps({"items": [{}] * MAX_REORDER_ENTRIES}))
    too_many = tmp_path / "too-many.json"
    too_many.write_text(json.dumps({"items": [{}] * (MAX_REORDER_ENTRIES + 1)}))
    before = rows()

    wrong = cli("items", "reorder", demo_data.DEMO_SOW, "--from-file", body)
    over = cli("items", "reorder", demo_data.DEMO_SOW, "--from-file", too_many)

    assert wrong.exit_code == over.exit_code == 2
    assert len(wrong.stderr) < 1000  # 600 KB before
    assert wrong.stderr.startswith("error: items.0.id: is required; items.0.orderIndex: is required;")
    rest = 2 * MAX_REORDER_ENTRIES - MAX_REPORTED_ISSUES
    assert wrong.stderr.endswith(f"(and {rest} more problems); --json lists them\n")
    limit, count = MAX_REORDER_ENTRIES, MAX_REORDER_ENTRIES + 1
    assert over.stderr == f"error: items: must contain at most {limit} items (this one has {count})\n"
    assert rows() == before
