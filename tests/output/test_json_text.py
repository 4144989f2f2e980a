"""The fast indented JSON writer prints exactly what ``json.dumps(indent=2)`` prints."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sowctl.output.json_output import dumps_indented

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
)
records = st.dictionaries(st.text(), scalars | values, max_size=6)


def expected(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


@given(st.lists(records | values, max_size=6))
def test_any_list_is_written_as_json_dumps_writes_it(value: list) -> None:
    assert dumps_indented(value) == expected(value)


@given(values)
def test_anything_else_is_json_dumps(value: Any) -> None:
    assert dumps_indented(value) == expected(value)


def test_records_with_control_characters_quotes_and_non_ascii() -> None:
    rows = [
        {"id": 'a\nb\t"c"\\', "title": "é 漢字 \u2028 \x7f", "n": 3, "done": True, "x": None},
        {"id": "plain", "nested": {"k": [1, "two\n"]}, "f": 1.5},
        {},
        {"id": "last"},
    ]
    assert dumps_indented(rows) == expected(rows)
    assert json.loads(dumps_indented(rows)) == rows


def test_bool_and_int_subclasses_are_left_to_json_dumps() -> None:
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    rows = [{"level": Level.HIGH, "ok": False}]
    assert dumps_indented(rows) == expected(rows)
