"""Where an import reads its records from: a parsed dict, or a JSON file streamed kind by kind.

A streamed file is never held in memory: a first pass checks its shape (an object
whose keys are record kinds, each an array) and counts the records, then the
importer reads one kind at a time, in batches, with ijson's C parser. Whatever the
streaming parser cannot reproduce exactly as ``json.loads`` would (broken JSON,
whose error message names a line and column; escaped surrogates, which it would
replace; integers beyond 64 bits) falls back to ``json.loads`` of the whole file,
so every file is read as before, and files of that kind are the rare case.

The first pass also measures the nesting, piece by piece, before the parser is given each
piece (``json_input.DepthGauge``): a file nested deeper than ``limits.MAX_JSON_DEPTH`` is
refused there, naming the line and column, in memory that does not grow with the depth
(the streaming parser's own grows with its square: 20,000 levels took 1 GiB).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import IO, Any

from sowctl.foundation import json_input
from sowctl.foundation.errors import InvalidInput, Issue, UsageError, quoted
from sowctl.schemas import dataset as s

BATCH = 1000  # raw records validated at once: big enough for pydantic's per-call cost to vanish

# Records that hold records of their own: (kind, key of the nested array).
NESTED = {"clients": "contacts", "budgetViewSnapshots": "line_items", "purchaseOrders": "line_items"}

# \uD800-\uDFFF escapes: ijson would turn a lone one into "?"; json.loads keeps it (then refused).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# The only way JSON text can hold a NUL (a raw one is a syntax error); an escaped backslash
# before it is a false alarm, which costs only the exact check.
_NUL_ESCAPE = re.compile(rb"\\u0000")


class DatasetSource:
    """Records of a dataset, per kind, in batches of raw (parsed, not yet validated) records."""

    def __init__(self, counts: dict[str, int], total: int, *, may_hold_nul: bool = True) -> None:
        self.counts = counts  # records per kind the file holds (kinds absent: not listed)
        self.total = total  # records, nested ones (contacts, lines) included
        # False when the text was read and holds no NUL escape: no record can hold unstorable
        # text (a lone surrogate sends the file to json.loads), so nothing need look for it.
        self.may_hold_nul = may_hold_nul

    def batches(self, kind: str) -> Iterator[list[Any]]:
        raise NotImplementedError


class DictSource(DatasetSource):
    """A dataset already parsed (tests, the demo, the admin API's body)."""

    def __init__(self, data: Any) -> None:
        if not isinstance(data, dict):
            raise InvalidInput(
                "a dataset must be a JSON object with keys such as organizations, items, dependencies",
                [Issue((), "must be a JSON object")],
            )
        _refuse_unknown(list(data))
        self.data = data
        counts = {kind: len(value) if isinstance(value, list) else -1 for kind, value in data.items()}
        counts = {kind: count for kind, count in counts.items() if data[kind] is not None}
        nested = sum(
            len(record.get(NESTED[kind]) or ())
            for kind in NESTED
            if isinstance(data.get(kind), list)
            for record in data[kind]
            if isinstance(record, dict) and isinstance(record.get(NESTED[kind]), list)
        )
        super().__init__(counts, sum(max(0, n) for n in counts.values()) + nested)

    def batches(self, kind: str) -> Iterator[list[Any]]:
        records = self.data[kind]
        for start in range(0, len(records), BATCH):
            yield records[start : start + BATCH]


class StreamSource(DatasetSource):
    """A dataset file read in passes: never more than one batch of raw records in memory."""

    def __init__(
        self,
        open_file: Callable[[], IO[bytes]],
        counts: dict[str, int],
        total: int,
        name: str,
        *,
        may_hold_nul: bool = True,
    ) -> None:
        self.open_file = open_file
        self.name = name
        with open_file() as handle:
            self.version = _version(handle)
        super().__init__(counts, total, may_hold_nul=may_hold_nul)

    def batches(self, kind: str) -> Iterator[list[Any]]:
        import ijson

        remaining = self.counts.get(kind, 0)
        with self.open_file() as handle:
            # Each pass must read the file the first one checked (the import is rolled back).
            if _version(handle) != self.version:
                raise InvalidInput(f"{self.name} changed while it was being imported: nothing was imported")
            records = ijson.items(handle, f"{kind}.item", use_float=True)
            # The first pass counted them: stop at the last one, not at the end of the file.
            while remaining > 0 and (batch := list(islice(records, min(BATCH, remaining)))):
                remaining -= len(batch)
                yield batch


def open_dataset(file: Path) -> DatasetSource:
    """The dataset in ``file`` ("-": stdin), streamed; UsageError if it cannot be read,
    InvalidInput if it is not JSON or not a dataset's shape."""
    name = "stdin" if str(file) == "-" else str(file)
    if str(file) == "-":
        import sys

        # A pipe cannot be read twice: kept, as bytes (the text of a stand-in stdin, encoded).
        try:
            raw = getattr(sys.stdin, "buffer", None)
            body = raw.read() if raw is not None else sys.stdin.read().encode("utf-8", "surrogatepass")
        except OSError as exc:
            raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
        return dataset_from_bytes(body, name)
    try:
        with open(file, "rb"):
            pass
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    return _stream(lambda: open(file, "rb"), name)


def dataset_from_bytes(body: bytes, name: str) -> DatasetSource:
    """The dataset in a body already in memory, streamed from it (no parsed copy)."""
    return _stream(lambda: io.BytesIO(body), name)


def _stream(open_file: Callable[[], IO[bytes]], name: str) -> DatasetSource:
    try:
        shape = _shape(open_file)
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    except json_input.JsonTooDeep as exc:
        raise _too_deep(name, exc) from None
    if shape is None:  # beyond what the streaming parser reproduces: parse as a whole
        with open_file() as handle:
            return DictSource(parse_json(handle.read(), name))
    counts, total, nul = shape
    return StreamSource(open_file, counts, total, name, may_hold_nul=nul)


def _version(handle: IO[bytes]) -> tuple[int, int] | None:
    """Size and modification time of a file (None for a buffer, which cannot change)."""
    try:
        stat = os.fstat(handle.fileno())
    except (OSError, io.UnsupportedOperation):
        return None
    return stat.st_size, stat.st_mtime_ns


def _shape(open_file: Callable[[], IO[bytes]]) -> tuple[dict[str, int], int, bool] | None:
    """Records per kind, in all, and whether the text escapes a NUL, after checking the
    shape; None: read it with json.loads."""
    import ijson

    counts: dict[str, int] = {}
    _Shape.nested, _Shape.filling = 0, None
    with open_file() as handle:
        scanned = _Scanned(handle)
        if scanned.peek() != b"{":
            return None  # not an object (or not JSON): json.loads says which
        try:
            # Each record is built as a _Shape, which keeps nothing: one pass at C speed.
            for key, value in ijson.kvitems(scanned, "", map_type=_Shape, use_float=True):
                if key in counts:
                    return None  # a repeated kind: json.loads keeps the last one, as before
                counts[key] = len(value) if isinstance(value, list) else -1 if value is not None else -2
        except json_input.JsonTooDeep:
            raise
        except (ijson.JSONError, ijson.IncompleteJSONError, UnicodeDecodeError, ValueError):
            return None
        if scanned.surrogates:
            return None
    _refuse_unknown(list(counts))
    counts = {kind: count for kind, count in counts.items() if count != -2}  # "kind": null
    return counts, sum(max(0, n) for n in counts.values()) + _Shape.count_nested(), scanned.nul


class _Shape:
    """A JSON object read only to be counted: keeps nothing but the number of nested records.

    A nested array is handed over empty and filled after: it is counted when the next one
    comes (or at the end, ``count_nested``), so only one record's array is ever kept."""

    __slots__ = ()
    nested = 0
    filling: list[Any] | None = None

    def __setitem__(self, key: str, value: Any) -> None:
        if key in _NESTED_KEYS and isinstance(value, list):
            _Shape.count_nested()
            _Shape.filling = value

    @staticmethod
    def count_nested() -> int:
        if _Shape.filling is not None:
            _Shape.nested += len(_Shape.filling)
            _Shape.filling = None
        return _Shape.nested


_NESTED_KEYS = frozenset(NESTED.values())


class _Scanned:
    """A file that notes, as it is read, whether it escapes a surrogate or a NUL, and
    refuses a piece that nests too deep before handing it on (``JsonTooDeep``)."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.tail = b""
        self.head = b""
        self.surrogates = False
        self.nul = False
        self.depth = json_input.DepthGauge()

    def peek(self) -> bytes:
        """The first byte that is not white space (read, and given back by the next read)."""
        self.head = self.handle.read(4096)
        return self.head.lstrip()[:1]

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # ijson's probe for bytes or text
        data, self.head = self.head + self.handle.read(size), b""
        self.depth.feed(data)
        seen = self.tail + data
        if not self.surrogates and _SURROGATE_ESCAPE.search(seen):
            self.surrogates = True
        if not self.nul and _NUL_ESCAPE.search(seen):
            self.nul = True
        self.tail = seen[-5:]  # an escape cut by a chunk boundary (or several, if tiny)
        return data


def _refuse_unknown(keys: list[str]) -> None:
    unknown = [key for key in keys if key not in s.RECORD_MODELS]
    if unknown:
        raise InvalidInput(
            f"unknown record kind {quoted(unknown[0])} (expected: {', '.join(s.KINDS)})",
            [Issue((key,), "unknown record kind") for key in unknown],
        )


def parse_json(text: bytes | str, name: str) -> Any:
    """``json.loads``, its errors as InvalidInput naming ``name``, line and column."""
    try:
        return json_input.loads(text)
    except json_input.JsonTooDeep as exc:
        raise _too_deep(name, exc) from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except ValueError as exc:
        raise InvalidInput(f"{name} is not valid JSON: {exc}") from None


def _too_deep(name: str, exc: json_input.JsonTooDeep) -> InvalidInput:
    return InvalidInput(f"{name}: {exc}", [Issue((), str(exc))])
