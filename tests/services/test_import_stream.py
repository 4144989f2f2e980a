"""The streamed import of a file (``source.open_dataset``) gives what the parsed dataset gives:
keys in any order, children before their parents, nested records, errors; and a file that
changes between its passes is refused with nothing written.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from sowctl.foundation import clock
from sowctl.foundation.errors import InvalidInput
from sowctl.services.dataset import export_dataset, import_dataset
from sowctl.services.dataset.source import StreamSource, dataset_from_bytes, open_dataset
from sowctl.services.demo_data import demo_dataset
from tests.support.dataset import database_rows, minimal, wipe


@pytest.fixture(autouse=True)
def fixed_clock() -> None:
    clock.set_fixed_now(datetime.datetime(2026, 3, 16, 12, 0, 0))


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def shuffled(data: dict[str, Any]) -> dict[str, Any]:
    """Kinds in reverse order, each kind's records reversed: children before parents."""
    return {kind: list(reversed(records)) for kind, records in reversed(list(data.items()))}


def test_a_streamed_file_in_any_order_imports_as_the_parsed_dataset(db, tmp_path: Path) -> None:
    import datetime

    data = demo_dataset(datetime.date(2026, 1, 15))
    counts = import_dataset(data)
    expected = export_dataset()
    wipe()
    source = open_dataset(write(tmp_path / "reversed.json", shuffled(data)))
    assert isinstance(source, StreamSource)  # streamed, not the json.loads fallback
    assert import_dataset(source) == counts
    assert export_dataset() == expected


def test_a_streamed_file_reports_the_problems_the_parsed_dataset_reports(db, tmp_path: Path) -> None:
    data = minimal()
    data["items"][1]["parentItemId"] = "nope"
    data["dependencies"] = [{**data["dependencies"][0], "id": "dep-x", "sourceItemId": "ghost"}]
    data["users"].append({"id": "user-2", "organizationId": "org-1", "name": 7})
    with pytest.raises(InvalidInput) as parsed:
        import_dataset(json.loads(json.dumps(data)))
    with pytest.raises(InvalidInput) as streamed:
        import_dataset(open_dataset(write(tmp_path / "bad.json", shuffled(data) | {"users": data["users"]})))
    assert streamed.value.message == parsed.value.message
    del data["users"][1]  # only reference problems now: every one of them, in the same order
    with pytest.raises(InvalidInput) as parsed:
        import_dataset(json.loads(json.dumps(data)))
    with pytest.raises(InvalidInput) as streamed:
        import_dataset(dataset_from_bytes(json.dumps(data).encode(), "body"))
    assert streamed.value.issues == parsed.value.issues
    assert database_rows() == {table: [] for table in database_rows()}


def test_progress_of_a_streamed_file_counts_nested_records(db, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    source = open_dataset(write(tmp_path / "min.json", minimal()))
    import_dataset(source, progress=lambda done, total: calls.append((done, total)))
    total = sum(len(v) for v in minimal().values()) + 1  # the client's contact
    assert calls[0] == (0, total) and calls[-1] == (total, total)


def test_a_file_changed_between_passes_is_refused_and_nothing_is_written(db, tmp_path: Path) -> None:
    path = write(tmp_path / "data.json", minimal())
    source = open_dataset(path)
    before = database_rows()
    data = minimal()
    data["organizations"][0]["name"] = "Changed meanwhile"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    with pytest.raises(InvalidInput, match="changed while it was being imported"):
        import_dataset(source)
    assert database_rows() == before


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 6, 7])
def test_the_scan_finds_a_nul_escape_cut_by_any_chunk_boundary(chunk: int) -> None:
    import io

    from sowctl.services.dataset.source import _Scanned

    for pad in range(chunk):
        scanned = _Scanned(io.BytesIO(b'{"a": ["' + b"x" * pad + b'\\u0000"]}'))
        scanned.peek()
        scanned.head = b""  # read every byte through read(), in chunks of ``chunk``
        scanned.handle.seek(0)
        while scanned.read(chunk):
            pass
        assert scanned.nul, pad


def test_a_file_without_a_nul_escape_skips_the_search_and_one_with_it_is_refused(db, tmp_path: Path) -> None:
    data = minimal()
    clean = open_dataset(write(tmp_path / "clean.json", data))
    assert isinstance(clean, StreamSource) and not clean.may_hold_nul
    data["items"][0]["title"] = "a\x00b"
    dirty = open_dataset(write(tmp_path / "dirty.json", data))
    assert isinstance(dirty, StreamSource) and dirty.may_hold_nul
    before = database_rows()
    with pytest.raises(InvalidInput) as refused:
        import_dataset(dirty)
    assert "items[0]" in refused.value.message and "NUL" in refused.value.message
    assert database_rows() == before


def many_items(count: int) -> dict[str, Any]:
    """``minimal()`` with ``count`` items: requirement i+1 under requirement i // 2 (a heap)."""
    data = minimal()
    data["dependencies"] = []
    data["items"] = [
        {
            "id": f"item-{i:05}",
            "sowId": "sow-1",
            "title": f"Item {i}",
            "type": "requirement",
            "parentItemId": f"item-{(i - 1) // 2:05}" if i else None,
        }
        for i in range(count)
    ]
    return data


def test_an_invalid_first_batch_is_reported_not_a_crash(db, tmp_path: Path) -> None:
    data = many_items(2500)  # three batches of 1,000: the first is refused as invalid
    data["items"][0]["type"] = "epic"
    data["items"][1600]["parentItemId"] = "item-01500"  # the 600th record read, the 500th kept
    before = database_rows()
    with pytest.raises(InvalidInput) as refused:
        import_dataset(open_dataset(write(tmp_path / "data.json", data)))
    assert "items[0]" in refused.value.message and "type" in refused.value.message
    assert database_rows() == before


class CountingSource(StreamSource):
    """A streamed file that counts how often each kind is read."""

    reads: dict[str, int]

    def batches(self, kind: str):  # type: ignore[no-untyped-def]
        self.reads[kind] = self.reads.get(kind, 0) + 1
        yield from super().batches(kind)


def counting(path: Path) -> CountingSource:
    source = open_dataset(path)
    assert isinstance(source, StreamSource)
    source.__class__ = CountingSource
    source.reads = {}
    return source  # type: ignore[return-value]


def test_items_in_tree_order_are_read_once_and_out_of_order_twice_with_the_same_result(
    db, tmp_path: Path
) -> None:
    data = many_items(2500)
    del data["items"][7]["parentItemId"]  # a missing orderIndex among given ones is filled in file order
    for i, item in enumerate(data["items"]):
        if i % 3:
            item["orderIndex"] = i
    in_order = counting(write(tmp_path / "in-order.json", data))
    counts = import_dataset(in_order)
    assert in_order.reads["items"] == 1 and counts["items"] == 2500
    expected = export_dataset()
    wipe()
    out_of_order = counting(write(tmp_path / "reversed.json", shuffled(data)))
    assert import_dataset(out_of_order) == counts
    assert out_of_order.reads["items"] == 2
    exported = export_dataset()
    # The same rows; the orderIndex of an item that had none depends on the file's order.
    given = {item["id"] for item in data["items"] if "orderIndex" in item}
    strip = [{k: v for k, v in r.items() if k != "orderIndex" or r["id"] in given} for r in exported["items"]]
    want = [{k: v for k, v in r.items() if k != "orderIndex" or r["id"] in given} for r in expected["items"]]
    assert strip == want


def test_export_puts_each_parent_before_its_children_so_its_file_imports_in_one_pass(
    db, tmp_path: Path
) -> None:
    data = many_items(50)
    # Ids that sort children first: "z-..." for the low items, "a-..." for the deep ones.
    renamed = {item["id"]: ("z-" if i < 10 else "a-") + item["id"] for i, item in enumerate(data["items"])}
    for item in data["items"]:
        item["id"] = renamed[item["id"]]
        if item["parentItemId"] is not None:
            item["parentItemId"] = renamed[item["parentItemId"]]
    import_dataset(data)
    exported = export_dataset()
    ids = [item["id"] for item in exported["items"]]
    assert sorted(ids) != ids  # not in id order: some parents sort after their children
    seen: set[str] = set()
    for item in exported["items"]:
        assert item["parentItemId"] is None or item["parentItemId"] in seen, item["id"]
        seen.add(item["id"])
    wipe()
    again = counting(write(tmp_path / "export.json", exported))
    import_dataset(again)
    assert again.reads["items"] == 1
    assert export_dataset() == exported
