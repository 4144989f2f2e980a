"""X-Error-Code and X-Error-Issues: what a Group A/B refusal's message-only envelope cannot
carry, in headers a client reads (the CLI's --json errors in remote mode)."""

from __future__ import annotations

import json

from sowctl.foundation.errors import (
    ERROR_CODE_HEADER,
    ERROR_ISSUES_HEADER,
    CycleDetected,
    InvalidInput,
    Issue,
    NotFound,
)
from sowctl.server.envelopes import envelope


def test_the_code_of_every_refusal_is_sent() -> None:
    assert envelope("A", CycleDetected(["a", "b", "a"])).headers[ERROR_CODE_HEADER] == "cycle_detected"
    assert envelope("C", NotFound("gone")).headers[ERROR_CODE_HEADER] == "not_found"


def test_issues_go_in_a_header_only_where_the_body_has_none() -> None:
    error = InvalidInput("title: bad\x7f", [Issue(("title",), "bad\x7f")])
    sent = envelope("A", error).headers[ERROR_ISSUES_HEADER]
    assert sent.isascii() and "\x7f" not in sent and sent.isprintable()
    assert json.loads(sent) == [{"path": ["title"], "message": "bad\x7f"}]
    assert ERROR_ISSUES_HEADER not in envelope("C", error).headers  # its body lists them


def test_too_many_issues_for_a_header_are_left_to_the_message() -> None:
    error = InvalidInput("many", [Issue(("f",), "x" * 1000) for _ in range(10)])
    assert ERROR_ISSUES_HEADER not in envelope("B", error).headers
