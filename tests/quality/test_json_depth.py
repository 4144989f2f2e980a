"""``json_input.DepthGauge`` and ``check_depth`` find exactly the nesting a JSON parser sees,
however the text is cut into pieces (a file is read 64 KiB at a time): brackets inside strings,
escaped quotes and backslashes, a piece that ends inside a string or inside an escape. Checked
against a byte-by-byte reference on random JSON texts, cut at random places."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sowctl.foundation import json_input
from sowctl.foundation.json_input import DepthGauge, JsonTooDeep, check_depth

# Strings rich in what the gauge must get right: brackets, quotes and backslashes, escaped or not.
PARTS = ['"', "\\", "[", "]", "{", "}", "a", "\n", "ü", "\\\\", '\\"']
TRICKY = st.lists(st.sampled_from(PARTS), max_size=12).map("".join)
VALUES = st.recursive(
    st.none() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY, inner, max_size=3),
    max_leaves=40,
)


def reference(text: bytes, limit: int) -> tuple[int, int, int, int] | None:
    """(line, column in characters, offset of the line, offset) of the bracket that opens
    level ``limit + 1``, or None."""
    depth, inside, escaped, line, line_start = 0, False, False, 1, 0
    for index, byte in enumerate(text):
        if inside:
            if escaped:
                escaped = False
            elif byte == ord("\\"):
                escaped = True
            elif byte == ord('"'):
                inside = False
        elif byte == ord('"'):
            inside = True
        elif byte in b"[{":
            depth += 1
            if depth > limit:
                return line, len(text[line_start:index].decode("utf-8", "replace")) + 1, line_start, index
        elif byte in b"]}":
            depth -= 1
        if byte == ord("\n"):
            line, line_start = line + 1, index + 1
    return None


def gauged(text: bytes, limit: int, cuts: list[int]) -> tuple[int, int] | None:
    gauge, start = DepthGauge(limit), 0
    try:
        for end in [*sorted(set(cuts)), len(text)]:
            gauge.feed(text[start:end])
            start = end
    except JsonTooDeep as exc:
        return exc.line, exc.column
    return None


@given(VALUES, st.integers(0, 8), st.lists(st.integers(0, 10_000), max_size=8), st.booleans())
def test_the_gauge_refuses_exactly_where_the_text_goes_too_deep(value, limit, cuts, indent) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=1 if indent else None).encode()
    cuts = [cut % (len(text) + 1) for cut in cuts]
    expected, got = reference(text, limit), gauged(text, limit, cuts)
    assert (expected is None) == (got is None)
    if expected is not None:
        line, column, line_start, at = expected
        assert got[0] == line
        if not any(line_start < cut <= at for cut in cuts):  # else a column in bytes, not characters
            assert got[1] == column


@pytest.mark.parametrize(
    "text",
    [
        b'["\\\\", [[[]]]]',  # an escaped backslash ends the string
        b'["\\"[[[[[", 1]',  # an escaped quote does not
        b'["\\\\\\"[[[[[", 1]',
        b'{"k": "]]]]]]", "v": [[[[[]]]]]}',
    ],
)
def test_every_cut_of_a_tricky_text_gives_the_same_answer(text: bytes) -> None:
    expected = reference(text, 3)
    for cut in range(len(text) + 1):
        assert gauged(text, 3, [cut]) == (expected and expected[:2]), cut
        for second in range(cut, len(text) + 1):
            assert (gauged(text, 3, [cut, second]) is None) == (expected is None), (cut, second)


def test_text_and_bytes_are_refused_alike_and_loads_checks_first() -> None:
    deep = '{"ü": ' + "[" * 65 + "]" * 65 + "}"
    with pytest.raises(JsonTooDeep) as as_text:
        check_depth(deep)
    with pytest.raises(JsonTooDeep) as as_bytes:
        check_depth(deep.encode())
    assert str(as_text.value) == str(as_bytes.value)
    assert str(as_text.value) == "arrays and objects are nested more than 64 levels deep (line 1, column 70)"
    with pytest.raises(JsonTooDeep):
        json_input.loads(deep)
    at_limit = json_input.loads('{"ü": ' + "[" * 63 + "]" * 63 + "}")
    assert list(at_limit) == ["ü"]


def test_a_long_string_of_escaped_quotes_is_read_in_linear_time() -> None:
    # A pattern that restarts at each escaped quote of an unclosed string takes minutes here.
    text = b'["' + b'\\"' * 3_000_000 + b'"]'
    gauge = DepthGauge()
    for start in range(0, len(text), 65536):
        gauge.feed(text[start : start + 65536])
    check_depth(text)
    assert gauge.depth == 0
