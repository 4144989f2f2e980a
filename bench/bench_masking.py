#!/usr/bin/env python3
"""Benchmark the masking rule (``redaction.mask_body``) on bodies of every shape.

    python bench/bench_masking.py              # 1 MiB bodies, best of 3
    python bench/bench_masking.py --size 65536 --runs 5

The test double masks every request and response body it logs (up to the body limit,
1 MiB by default), and the server's log masks every line, so the rule must take time in
proportion to the text whatever the text is. Each body is made ``--size`` bytes long:
typical ones (valid JSON, the same JSON with a syntax error, a form, multipart, text) and
ones made to find quadratic work (long runs of quotes, backslashes, separators, tags,
brackets, part headers without a blank line, names with nothing after them). The table
shows milliseconds per body and per MiB; a shape much slower than the others per MiB, or
one growing faster than the size when ``--size`` doubles, is the thing to look at.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from sowctl.foundation.redaction import mask_body


def _repeat(piece: str, size: int) -> bytes:
    return (piece * (size // len(piece) + 1)).encode()[:size]


def _json_items(size: int) -> bytes:
    item = {"id": "item-1", "title": "Walls: phase 2", "dueDate": "2026-01-01T00:00:00Z", "password": "x"}
    count = size // len(json.dumps(item)) + 1
    return json.dumps([{**item, "id": f"item-{i}"} for i in range(count)]).encode()


SHAPES: dict[str, Callable[[int], bytes]] = {
    "valid JSON": _json_items,
    "JSON, syntax error": lambda size: _json_items(size)[:-1] + b",",
    "form": lambda size: _repeat("title=Walls&limit=5&password=x&", size),
    "multipart": lambda size: _repeat(
        '--b\r\nContent-Disposition: form-data; name="password"\r\n\r\nx\r\n', size
    ),
    "text lines": lambda size: _repeat("user: bob\ncookie: a=b\nnote: fine\n", size),
    "quotes": lambda size: _repeat('"a', size),
    "backslashes": lambda size: _repeat("\\", size - 1) + b'"',
    "escaped quotes": lambda size: _repeat('\\"', size),
    "separators": lambda size: _repeat("a:", size),
    "nested forms": lambda size: _repeat("x=", size - 12) + b"password=1",
    "tags": lambda size: _repeat("<password>", size),
    "open brackets": lambda size: b'{"password": ' + _repeat("[", size),
    "unclosed string": lambda size: b'"password": "' + _repeat('\\"', size),
    "part headers, no blank": lambda size: _repeat('Content-Disposition: name="pin"\n', size),
    "names, no values": lambda size: _repeat("password=", size),
    "pairs around one secret": lambda size: _repeat('{"x": 1, ', size) + b'"password": 1',
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1 << 20, help="bytes per body (default 1 MiB)")
    parser.add_argument("--runs", type=int, default=3, help="runs per shape; the best is shown")
    args = parser.parse_args()
    print(f"{'shape':26} {'ms':>8} {'ms/MiB':>8}")
    for name, make in SHAPES.items():
        body = make(args.size)
        best = float("inf")
        for _ in range(args.runs):
            started = time.perf_counter()
            mask_body(body, None, truncated=True)
            best = min(best, time.perf_counter() - started)
        print(f"{name:26} {best * 1000:8.1f} {best * 1000 / (len(body) / (1 << 20)):8.1f}")


if __name__ == "__main__":
    main()
