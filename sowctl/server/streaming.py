"""JSON response bodies written piece by piece, for answers whose size the caller controls.

A chain report repeats each item's title in every dependency entry that names it: 2,000
dependencies between two items with 10,000-character titles make a body of hundreds of
megabytes from a few kilobytes of stored data. ``json_bytes`` would build that body as
one string and then one bytes object in the worker. ``iter_json`` yields the very same
bytes (``json_bytes(value) == b"".join(iter_json(value))``) in chunks of about
``CHUNK_CHARS`` characters, so a worker holds the report's data (titles stored once,
shared by the entries) plus a chunk, whatever the body's size.

Lists are walked element by element; runs of elements holding no list are encoded
together by the C encoder, in batches sized so that a batch stays near a chunk.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

from sowctl.server.responses import log_exception

CHUNK_CHARS = 32 * 1024  # 32 to 128 KiB of UTF-8
_MAX_BATCH = 1024

# The same options as sowctl.server.http.json_bytes, so the bytes are the same.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def iter_json(value: Any, chunk_chars: int = CHUNK_CHARS) -> Iterator[bytes]:
    """``json_bytes(value)`` in UTF-8 chunks of about ``chunk_chars`` characters."""
    pending: list[str] = []
    size = 0
    for piece in _pieces(value):
        pending.append(piece)
        size += len(piece)
        if size >= chunk_chars:
            yield "".join(pending).encode("utf-8")
            pending.clear()
            size = 0
    if pending:
        yield "".join(pending).encode("utf-8")


def _pieces(value: Any) -> Iterator[str]:
    if isinstance(value, list | tuple):
        yield from _list_pieces(value)
    elif isinstance(value, dict) and not _is_flat(value):
        yield "{"
        first = True
        for key, item in value.items():
            yield ("" if first else ",") + _encode(key) + ":"
            first = False
            yield from _pieces(item)
        yield "}"
    else:
        yield _encode(value)


def _list_pieces(items: list | tuple) -> Iterator[str]:
    yield "["
    batch = 1  # then as many as make about a chunk
    index, count = 0, len(items)
    while index < count:
        comma = "," if index else ""
        if not _is_flat(items[index]):
            yield comma
            yield from _pieces(items[index])
            index += 1
            continue
        end = index + 1
        while end < count and end - index < batch and _is_flat(items[end]):
            end += 1
        text = _encode(items[index:end] if isinstance(items, list) else list(items[index:end]))
        yield comma + text[1:-1]  # a JSON array's elements are its text without the brackets
        # About a chunk per batch, judged by the last one: titles may be 1 character or 10,000.
        each = max(1, len(text) // (end - index))
        batch = max(1, min(_MAX_BATCH, CHUNK_CHARS // each))
        index = end
    yield "]"


def _is_flat(value: Any) -> bool:
    """Whether ``value`` holds no list at any depth (its size is then bounded by the data it
    holds, not by how often the report repeats it) and only string keys."""
    if isinstance(value, list | tuple):
        return False
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_flat(item) for key, item in value.items())
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
            return next(self._chunks)
        except StopIteration:
            self.close()
            raise
        except Exception:
            # Headers are sent by now: the server can only cut the connection. Say why.
            log_exception(self._environ)
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
