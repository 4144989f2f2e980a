"""``json_bytes``: a list of ``PlainObjects`` (what ``row_dumper`` makes: strings, integers,
booleans and nulls) is written by pydantic's encoder, and gives the bytes ``json.dumps`` gives
for the same list, whatever the strings hold (control characters, quotes, backslashes,
characters beyond the BMP, line and paragraph separators)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sowctl.schemas.rows import PlainObjects
from sowctl.server.http import json_bytes

plain_values = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.text(
        st.characters(exclude_categories=("Cs",))  # a lone surrogate is no UTF-8: neither encoder writes it
    )
)
plain_objects = st.lists(st.dictionaries(st.text(max_size=8), plain_values, max_size=6), max_size=5)


def standard(data) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


@given(plain_objects)
def test_plain_objects_are_written_as_json_dumps_writes_them(objects):
    assert json_bytes(PlainObjects(objects)) == standard(objects) == json_bytes(objects)


def test_every_control_character_and_separator_is_written_alike():
    text = "".join(chr(c) for c in range(0x20)) + '"\\/\x7f\u2028\u2029é😀'
    objects = [{"title": text, "n": 7, "none": None, "yes": True}]
    assert json_bytes(PlainObjects(objects)) == standard(objects)


def test_a_lone_surrogate_is_refused_by_both_encoders():
    objects = [{"title": "\ud800"}]
    with pytest.raises(ValueError):
        json_bytes(PlainObjects(objects))
    with pytest.raises(ValueError):
        json_bytes(objects)
