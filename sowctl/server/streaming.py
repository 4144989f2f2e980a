"""JSON response bodies written piece by piece, for answers whose size the caller controls.

A chain report repeats each item's title in every dependency entry that names it: 2,000
dependencies between two items with 10,000-character titles make a body of hundreds of
megabytes from a few kilobytes of stored data. ``json_bytes`` would build that body as
one string and then one bytes object in the worker. ``iter_json`` yields the very same
bytes (``json_bytes(value) == b"".join(iter_json(value))``) in chunks of about
``CHUNK_CHARS`` characters, so a worker holds the report's data (titles stored once,
shared by the entries) plus a chunk, whatever the body's size.

Arrays and objects are walked member by member; runs of small members (``_is_small``: no
array of containers inside, so their size is that of the stored strings they hold, not a
count of repeats) are encoded together by the C encoder, in batches of about a chunk.
A ``LazyArray`` (a page of purchase orders) is written member by member as its members are
made, so only the member being written is held, not the array.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from sowctl.engine.memory import release_free_memory
from sowctl.schemas.lazy import LazyArray
from sowctl.server.responses import log_failure

CHUNK_CHARS = 32 * 1024  # 32 to 128 KiB of UTF-8
_MAX_BATCH = 1024
# An answer this large made and freed enough memory to be worth handing back (sowctl.engine.memory).
TRIM_AFTER_BYTES = 1024 * 1024
_CONTAINERS = frozenset({dict, list, tuple, LazyArray})

# The same options as sowctl.server.http.json_bytes, so the bytes are the same.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def iter_json(value: Any, chunk_chars: int = CHUNK_CHARS) -> Iterator[bytes]:
    """``json_bytes(value)`` in UTF-8 chunks of about ``chunk_chars`` characters."""
    if _is_small(value) or type(value) not in _CONTAINERS:
        yield _encode(value).encode("utf-8")
        return
    # One loop over a stack of containers being written, not generators nested as deep as the
    # tree: each piece would otherwise pass up through every level.
    stack = [_container(value)]
    pending: list[str] = []
    size = 0
    while stack:
        piece = next(stack[-1], None)
        if piece is None:
            stack.pop()
        elif isinstance(piece, str):
            pending.append(piece)
            size += len(piece)
            if size >= chunk_chars:
                yield "".join(pending).encode("utf-8")
                pending.clear()
                size = 0
        else:  # (member,): a large member, written next
            stack.append(_container(piece[0]))
    if pending:
        yield "".join(pending).encode("utf-8")


def _container(value: Any) -> Iterator[str | tuple[Any]]:
    """The text of a large array or object: its small members in runs (one C-encoder call each,
    batched to make about a chunk), commas, brackets; each large member as ``(member,)``."""
    if type(value) is LazyArray:
        yield from _lazy(value)
        return
    if isinstance(value, dict):
        items = list(value.items())
        values: Sequence[Any] = [item for _name, item in items]
        yield "{"
    else:
        items = None
        values = value
        yield "["
    batch = 1  # then as many as make about a chunk, judged by the last run
    index, count = 0, len(values)
    while index < count:
        comma = "," if index else ""
        if not _is_small(values[index]):
            yield comma if items is None else comma + _key(items[index][0]) + ":"
            yield (values[index],)
            index += 1
            continue
        end = index + 1
        while end < count and end - index < batch and _is_small(values[end]):
            end += 1
        text = _encode(list(values[index:end]) if items is None else dict(items[index:end]))
        yield comma + text[1:-1]  # the members of a JSON array or object: its text without brackets
        each = max(1, len(text) // (end - index))  # titles may be 1 character or 10,000
        batch = max(1, min(_MAX_BATCH, CHUNK_CHARS // each))
        index = end
    yield "]" if items is None else "}"


def _lazy(value: LazyArray) -> Iterator[str | tuple[Any]]:
    """The text of a lazy array: each member as it is made, encoded whole when small (its members
    are made in batches already, and are not kept to be encoded together)."""
    yield "["
    comma = ""
    for member in value:
        if _is_small(member):
            yield comma + _encode(member)
        else:
            yield comma
            yield (member,)
        comma = ","
    yield "]"


def _key(key: Any) -> str:
    """An object key as json writes it (a non-string key becomes a string, as in json.dumps)."""
    return _encode({key: None})[1:-6]


def _is_small(value: Any) -> bool:
    """Whether ``value`` is encoded in one call: a scalar, an array of scalars, or an object of
    scalars, empty arrays and objects of scalars (a dependency entry). Its size is then that of
    the stored strings it holds, never a count of repeats, which only arrays bring. (Exact
    types, not isinstance: twice as fast on the report's many entries; a subclass is encoded
    whole, correctly.)"""
    kind = type(value)
    if kind is LazyArray:
        return False
    if kind is dict:
        for item in value.values():
            kind = type(item)
            if kind is LazyArray:
                return False
            if kind is dict:
                for inner in item.values():
                    if type(inner) in _CONTAINERS:
                        return False
            elif (kind is list or kind is tuple) and item:
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:
            if type(item) in _CONTAINERS:
                return False
    return True


class StreamedJson:
    """A WSGI response body: ``iter_json(value)``, then ``on_close`` exactly once.

    ``on_close`` runs when the body is exhausted, fails, or is closed unread (a HEAD
    request, a client that went away), whichever comes first: the server calls
    ``close()`` in every case (PEP 3333).
    """

    def __init__(self, value: Any, environ: dict, on_close: Callable[[], None] | None = None) -> None:
        self._chunks: Iterator[bytes] | None = iter_json(value)
        self._environ = environ
        self._on_close = on_close
        self._ahead: list[bytes] = []  # read by ``small``, not yet sent
        self._sent = 0  # bytes handed to the server

    def small(self) -> bytes | None:
        """The whole body when it fits in one chunk (the body is then closed), else None.

        An ordinary report is thus answered exactly as before, with ``Content-Length``;
        only a large one goes out in chunks."""
        self._ahead = list(itertools.islice(self, 2))
        if len(self._ahead) == 2:
            return None
        self.close()
        return self._ahead[0] if self._ahead else b""

    def __iter__(self) -> StreamedJson:
        return self

    def __next__(self) -> bytes:
        if self._ahead:
            return self._ahead.pop(0)
        if self._chunks is None:
            raise StopIteration
        try:
            chunk = next(self._chunks)
            self._sent += len(chunk)
            return chunk
        except StopIteration:
            self.close()
            raise
        except Exception as exc:
            # Headers are sent by now: the server can only cut the connection. Say why.
            log_failure(self._environ, exc)
            self.close()
            raise

    def close(self) -> None:
        chunks, self._chunks = self._chunks, None  # and the report with it: its memory is free
        on_close, self._on_close = self._on_close, None
        try:
            if chunks is not None:
                chunks.close()  # type: ignore[attr-defined]
        finally:
            if on_close is not None:
                on_close()
            if chunks is not None and self._sent >= TRIM_AFTER_BYTES:
                release_free_memory()
