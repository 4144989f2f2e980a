"""Pages of a SOW's items (``services.item_pages``): the same items and bodies as the whole
list, in the same order, at any depth, in a fixed number of queries; and ``row_dumper``,
which writes them, giving exactly what the response model dumps."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import ClassVar

import peewee as pw
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from sowctl import operations
from sowctl.foundation import clock
from sowctl.operations.items import ITEM_JSON
from sowctl.schemas.common import CamelOut, Timestamp, dump
from sowctl.schemas.items import ItemOut
from sowctl.schemas.rows import row_dumper
from sowctl.services import item_pages
from sowctl.services.access import Caller
from sowctl.services.lookup import Lookup
from sowctl.storage import database as db_module
from sowctl.storage import models as m
from sowctl.storage import tallies

LOCAL = Caller.local()
T0 = datetime(2026, 3, 16, 9, 30, 0)


def api(name: str, params=None, query=None, body=None):
    return operations.call_local(name, LOCAL, params, query, body)


def page(sow_id: str, number: int, limit: int, **query) -> tuple[list[dict], int]:
    op = operations.get("items.list")
    request = operations.build_request(
        op, LOCAL, {"sowId": sow_id}, query, offset=(number - 1) * limit, limit=limit
    )
    result = op.run(request)
    return result.body, result.total


@pytest.fixture
def big_sow(db) -> tuple[str, list[str]]:
    """A SOW of 3 requirements and 57 task items, with many ties in orderIndex and
    createdAt (so the order rests on every key), some tasks completed."""
    clock.set_fixed_now(T0)
    api("sows.create", body={"title": "Big", "id": "sow-big"})
    requirements = [
        api(
            "items.create",
            {"sowId": "sow-big"},
            body={"title": f"R{k}", "type": "requirement", "orderIndex": k},
        )
        for k in range(3)
    ]
    tasks = []
    for n in range(57):
        clock.set_fixed_now(T0 + timedelta(seconds=n % 4))
        body = {"title": f"T{n}", "type": "task_item", "orderIndex": n % 5}
        if n % 3:
            body["parentItemId"] = requirements[n % 3]["id"]
        tasks.append(api("items.create", {"sowId": "sow-big"}, body=body))
    for task in tasks[::4]:
        api("items.update", {"itemId": task["id"]}, body={"status": "completed"})
    return "sow-big", [r["id"] for r in requirements]


def test_pages_are_slices_of_the_whole_list_at_every_depth(big_sow):
    sow_id, requirements = big_sow
    whole = api("items.list", {"sowId": sow_id})
    assert len(whole) == 60
    keys = [(i["orderIndex"], i["createdAt"], i["id"]) for i in whole]
    assert keys == sorted(keys)  # orderIndex, then createdAt, then id
    for limit in (1, 7, 60, 100):
        collected = []
        for number in range(1, 60 // limit + 3):
            body, total = page(sow_id, number, limit)
            assert total == 60
            collected += body
        assert collected == whole  # every body identical, requirements' statuses included
    shown = {i["id"]: i["status"] for i in whole}
    assert any(shown[r] == "in_progress" for r in requirements)


def test_filtered_pages_and_a_page_past_the_end(big_sow):
    sow_id, requirements = big_sow
    tasks = api("items.list", {"sowId": sow_id}, {"type": "task_item"})
    assert len(tasks) == 57
    assert page(sow_id, 2, 10, type="task_item") == (tasks[10:20], 57)
    children = api("items.list", {"sowId": sow_id}, {"parentId": requirements[1]})
    assert page(sow_id, 1, 5, parentId=requirements[1]) == (children[:5], len(children))
    assert page(sow_id, 1, 5, type="requirement", parentId=requirements[1]) == ([], 0)
    assert page(sow_id, 99, 10) == ([], 60)  # past the end: no items, the total still told


def count_queries(monkeypatch) -> list[str]:
    executed: list[str] = []
    database = m.database_proxy.obj
    original = database.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        if not sql.startswith("PREPARE "):  # PostgreSQL: once per connection, not per page
            executed.append(sql)
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(database, "execute_sql", counting)
    return executed


def test_a_page_costs_the_same_few_queries_whatever_its_size_or_depth(big_sow, monkeypatch):
    sow_id, _ = big_sow
    executed = count_queries(monkeypatch)
    shown_requirements = 0
    for number, limit in ((1, 1), (1, 60), (6, 10), (30, 2)):
        executed.clear()
        body, _ = page(sow_id, number, limit)
        shown_requirements += sum(item["type"] == "requirement" for item in body)
        # the SOW and the page with its count: a requirement's status needs no subtree
        assert len(executed) == 2, executed
    assert shown_requirements > 0


def test_the_page_ids_come_from_the_list_order_index(db):
    """Schema v7: an index in list order, so a deep OFFSET skips index entries only."""
    columns = [index.columns for index in db.get_indexes("item")]
    assert ["sow_id", "order_index", "created_at", "id"] in columns
    assert ["sow_id", "order_index"] not in columns  # replaced: it is a prefix of the new one


def test_v5_replaces_the_old_index_on_a_v4_database(db_url):
    database = db_module.open_database(db_url)
    database.execute_sql('DROP INDEX "item_sow_id_order_index_created_at_id"')
    database.execute_sql('CREATE INDEX "item_sow_id_order_index" ON "item" ("sow_id", "order_index")')
    m.Meta.update(value="4").where(m.Meta.key == "schema_version").execute()
    database.close()
    database = db_module.open_database(db_url)
    try:
        columns = [index.columns for index in database.get_indexes("item")]
        assert ["sow_id", "order_index", "created_at", "id"] in columns
        assert ["sow_id", "order_index"] not in columns
        assert db_module.schema_version() == db_module.SCHEMA_VERSION
    finally:
        database.close()


# --- row_dumper ------------------------------------------------------------------


def test_the_page_columns_are_item_out_fields_in_order():
    sent = len(ItemOut.model_fields)
    assert list(item_pages.PageRow._fields[:sent]) == list(ItemOut.model_fields)
    assert item_pages.COLUMNS[sent:] == tallies.FIELDS  # the counts a status comes from
    assert len(item_pages.PageRow._fields) == len(item_pages.COLUMNS)


maybe_text = st.none() | st.text(max_size=20)
moments = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31))


@given(
    title=st.text(min_size=1, max_size=20),
    description=maybe_text,
    type_=st.sampled_from(["requirement", "task_item"]),
    parent=maybe_text,
    order=st.integers(0, 2**31 - 1),
    status=st.sampled_from(["pending", "in_progress", "completed", "cancelled"]),
    created=moments,
    updated=moments,
    user=maybe_text,
)
def test_row_dumper_gives_what_the_model_dumps(
    title, description, type_, parent, order, status, created, updated, user
):
    values = ["id-1", title, description, type_, "sow-1", parent, order, status, created, updated, user]
    expected = dump(ItemOut(**dict(zip(ItemOut.model_fields, values, strict=True))))
    assert row_dumper(ItemOut)(values) == expected
    # what either driver returns: datetimes, or the text SQLite keeps
    as_stored = [str(v) if isinstance(v, datetime) else v for v in values]
    assert row_dumper(ItemOut)(as_stored) == row_dumper(ItemOut)(values) == expected
    # given fields are arguments, the row's own values at their places and after the
    # model's fields left out
    given = row_dumper(ItemOut, given=("status", "sow_id"))
    row = [*values[:4], "stored-key", *values[5:7], "stored", *values[8:], 1, 2]
    assert given(row, status, "sow-1") == expected
    assert ITEM_JSON(row, "sow-1", status) == expected  # the items operations' dumper


def test_row_dumper_refuses_a_given_field_the_model_lacks():
    with pytest.raises(TypeError, match="ItemOut has no field total"):
        row_dumper(ItemOut, given=("total",))


def test_row_dumper_refuses_models_it_cannot_reproduce():
    class Plain(BaseModel):
        name: str

    class Nested(CamelOut):
        children: list[ItemOut]

    class Fine(CamelOut):
        wire_nulls: ClassVar[frozenset[str]] = frozenset({"ended_at"})
        started_at: Timestamp
        ended_at: Timestamp | None

    with pytest.raises(TypeError, match="not a response model"):
        row_dumper(Plain)
    with pytest.raises(TypeError, match=r"Nested\.children"):
        row_dumper(Nested)
    assert row_dumper(Fine)([T0, None]) == {"startedAt": "2026-03-16T09:30:00Z", "endedAt": None}


def test_a_timestamp_before_year_1000_keeps_four_digits():
    assert clock.format_timestamp(datetime(999, 1, 2, 3, 4, 5)) == "0999-01-02T03:04:05Z"


def test_stored_text_and_datetimes_give_the_same_timestamp():
    assert clock.format_timestamp("2026-03-16 09:30:00") == "2026-03-16T09:30:00Z"
    assert clock.format_timestamp("2026-03-16 09:30:00.999999") == "2026-03-16T09:30:00Z"
    assert clock.format_timestamp("2026-03-16 09:30:00+02:00") == "2026-03-16T07:30:00Z"
    assert clock.format_timestamp(datetime(2026, 3, 16, 9, 30, 0, 999999)) == "2026-03-16T09:30:00Z"


@given(
    query=st.dictionaries(st.sampled_from(["type", "parentId", "x y", "é"]), st.text(max_size=5), max_size=3),
    page=st.integers(1, 60),
    limit=st.integers(1, 100),
    total=st.integers(0, 5000),
)
def test_link_header_is_the_plain_urlencode_of_each_page(query, page, limit, total):
    """The Link header encodes the other parameters once; each link is what encoding all
    of them for that page gives."""
    import math
    from urllib.parse import quote, urlencode

    from sowctl.server.http import link_header

    last = max(1, math.ceil(total / limit))
    target = "http://h" + quote("/api/sow/s 1/items", safe="/:@!$&'()*+,;=-._~")
    expected = [
        f'<{target}?{urlencode({**query, "page": str(n), "limit": str(limit)})}>; rel="{rel}"'
        for rel, n in (
            ([("next", page + 1)] if page < last else [])
            + ([("prev", min(page - 1, last))] if page > 1 else [])
            + [("first", 1), ("last", last)]
        )
    ]
    assert link_header("http://h", "/api/sow/s 1/items", query, page, limit, total) == ", ".join(expected)


def test_the_total_is_counted_again_only_after_a_change(big_sow, db, monkeypatch):
    """SQLite keeps a connection's counts while nothing is committed; every backend tells
    the right total after a write, its own or another connection's."""
    sow_id, _ = big_sow
    used = []
    original = Lookup.all
    monkeypatch.setattr(Lookup, "all", lambda self, *values: used.append(self) or original(self, *values))
    assert page(sow_id, 2, 10)[1] == 60
    used.clear()
    assert page(sow_id, 3, 10)[1] == 60
    counted_again = item_pages._PAGES[(False, False, "counted")] in used
    assert counted_again == (not isinstance(db, pw.SqliteDatabase))
    api("items.create", {"sowId": sow_id}, body={"title": "new", "type": "task_item"})  # this connection
    assert page(sow_id, 3, 10)[1] == 61
    other = threading.Thread(  # another connection (peewee: one per thread)
        target=lambda: (
            api("items.create", {"sowId": sow_id}, body={"title": "other", "type": "task_item"}),
            db.close(),
        )
    )
    other.start()
    other.join()
    assert page(sow_id, 3, 10)[1] == 62
    assert page(sow_id, 1, 10, type="requirement")[1] == 3  # each filter counted for itself


def test_a_page_again_and_the_next_page_start_from_a_known_row(big_sow, db, monkeypatch):
    """SQLite: a page asked for again is read from its first row's sort key, the next page
    from the key of the row before it; the bodies are those the offset gives, ties in
    orderIndex and createdAt included, and a write makes the pages read by offset again."""
    sow_id, _ = big_sow
    on_sqlite = isinstance(db, pw.SqliteDatabase)
    used = []
    original = Lookup.all
    monkeypatch.setattr(Lookup, "all", lambda self, *values: used.append(self) or original(self, *values))
    modes = {lookup: mode for (t, p, mode), lookup in item_pages._PAGES.items() if not t and not p}
    whole = api("items.list", {"sowId": sow_id})
    read = []
    for number in (2, 2, 3, 4, 3, 5):
        used.clear()
        assert page(sow_id, number, 7) == (whole[(number - 1) * 7 : number * 7], 60)
        read += [modes[lookup] for lookup in used if lookup in modes]
    # page 2 counted; again, from its first row; 3, 4 after the row before them; 3 again
    # from its first row, 5 after the last row of 4
    assert read == (["counted", "from", "after", "after", "from", "after"] if on_sqlite else ["counted"] * 6)
    tasks = api("items.list", {"sowId": sow_id}, {"type": "task_item"})
    for number in (2, 2, 3):  # a filter's pages are kept apart from the whole list's
        assert page(sow_id, number, 7, type="task_item") == (tasks[(number - 1) * 7 : number * 7], 57)
    moved = whole[15]["id"]  # on page 3
    api("items.update", {"itemId": moved}, body={"orderIndex": 0})
    whole = api("items.list", {"sowId": sow_id})
    used.clear()
    assert page(sow_id, 3, 7) == (whole[14:21], 60)
    assert [modes[lookup] for lookup in used if lookup in modes] == ["counted"]


def test_what_a_connection_keeps_of_pages_is_bounded(big_sow, db, monkeypatch):
    sow_id, _ = big_sow
    monkeypatch.setattr(item_pages, "_KNOWN_MAX", 10)
    for number in range(1, 30):
        page(sow_id, number, 2)
    known = item_pages._known()
    assert known is None or 0 < len(known) <= 10
