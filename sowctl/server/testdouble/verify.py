"""Request patterns over the request log: filters, verification and near-miss reports.

A pattern (``GET /_admin/requests`` query, or the body of ``POST
/_admin/requests/verify``) may name:

* ``method``; ``path``: an fnmatch pattern (``/api/sow/*/items``);
* ``status``: ``201`` or a class ``4xx``; ``group``: ``A``, ``B`` or ``C``;
* ``caller``: a user id, API key id or organization id of the request's caller;
* ``query``: parameters that must be present with these values;
* ``headers``: request headers that must be present with these values (names in
  any case; credential headers are never recorded, so never matched);
* ``body``: a subset of the request body (objects match when every given key
  matches, lists element by element, other values by equality);
* ``contract``: what contract mode found the request relies on: a departure's code
  (``route.extension``), ``any`` (at least one) or ``none``; ``{"contract": "any",
  "exactly": 0}`` says no request relied on more than the service's description.

A verification adds one count: ``{"exactly": n}``, ``{"atLeast": n}`` or
``{"atMost": n}`` (default: at least 1). When it does not hold, the report
lists the closest recorded requests (fewest differences first) with what
differed, so a test failure says "body.title: expected 'Walls', got 'Wall'"
rather than "0 != 1".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from sowctl.foundation.errors import InvalidInput
from sowctl.foundation.redaction import MASK, is_secret_field, is_secret_header, mask_text, redact_value
from sowctl.operations.groups import Group

COUNTS = ("exactly", "atLeast", "atMost")
FIELDS = ("method", "path", "status", "group", "caller", "query", "headers", "body", "contract")
CLOSEST = 3


@dataclass(frozen=True)
class Pattern:
    method: str | None = None
    path: str | None = None
    status: str | None = None
    group: str | None = None
    caller: str | None = None
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False
    contract: str | None = None  # a departure's code, "any" or "none"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pattern:
        unknown = sorted(set(data) - set(FIELDS) - set(COUNTS))
        if unknown:
            expected = ", ".join((*FIELDS, *COUNTS))
            raise InvalidInput.for_field(unknown[0], f"unknown field (expected: {expected})")
        text = {
            name: _text(data, name) for name in ("method", "path", "status", "group", "caller", "contract")
        }
        if text["group"] is not None and text["group"].upper() not in tuple(Group):
            raise InvalidInput.for_field("group", "must be A, B or C")
        status = text["status"]
        if status is not None and not _status_ok(status):
            raise InvalidInput.for_field(
                "status", "must be an HTTP status such as 201, or a class such as 4xx"
            )
        query = data.get("query") or {}
        if not isinstance(query, dict):
            raise InvalidInput.for_field("query", "must be an object of parameter names and values")
        headers = data.get("headers") or {}
        if not isinstance(headers, dict):
            raise InvalidInput.for_field("headers", "must be an object of header names and values")
        secret = sorted(name for name in headers if is_secret_header(str(name)))
        if secret:
            raise InvalidInput.for_field(
                "headers", f"{secret[0]} carries credentials and is never recorded: match on caller instead"
            )
        return cls(
            method=text["method"].upper() if text["method"] else None,
            path=text["path"],
            status=status.lower() if status else None,
            group=text["group"].upper() if text["group"] else None,
            caller=text["caller"],
            query={str(k): str(v) for k, v in query.items()},
            headers={str(k).lower(): str(v) for k, v in headers.items()},
            body=data.get("body"),
            has_body="body" in data,
            contract=text["contract"],
        )

    def describe(self) -> str:
        parts = [self.method or "any method", mask_text(self.path) if self.path else "any path"]
        # What the pattern expects is echoed masked, as the log masks what was sent.
        if self.query:
            parts.append("?" + "&".join(f"{k}={_shown(k, v)}" for k, v in self.query.items()))
        if self.headers:
            parts.append("with headers " + ", ".join(f"{k}: {_shown(k, v)}" for k, v in self.headers.items()))
        if self.has_body:
            parts.append(f"with body {json.dumps(redact_value(self.body), ensure_ascii=False)}")
        for name in ("status", "group", "caller", "contract"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name} {value}")
        return " ".join(parts)

    def differences(self, entry: dict[str, Any]) -> list[str]:
        """What differs between this pattern and one request-log entry ([] when it matches)."""
        found: list[str] = []
        if self.method and entry["method"] != self.method:
            found.append(f"method: expected {self.method}, got {entry['method']}")
        if self.path and not fnmatchcase(entry["path"], self.path):
            found.append(f"path: expected {mask_text(self.path)}, got {entry['path']}")
        if self.status and not _status_matches(self.status, entry.get("status")):
            found.append(f"status: expected {self.status}, got {entry.get('status')}")
        if self.group and entry.get("group") != self.group:
            found.append(f"group: expected {self.group}, got {entry.get('group')}")
        if self.caller and self.caller not in _callers(entry.get("identity")):
            found.append(f"caller: expected {self.caller}, got {_caller_text(entry.get('identity'))}")
        query = entry.get("query") or {}
        for name, value in self.query.items():
            if query.get(name) != value:
                got = "nothing" if name not in query else repr(query[name])
                found.append(f"query.{name}: expected {_shown(name, value)!r}, got {got}")
        headers = entry.get("headers") or {}
        for name, value in self.headers.items():
            if headers.get(name) != value:
                got = "nothing" if name not in headers else repr(headers[name])
                found.append(f"headers.{name}: expected {_shown(name, value)!r}, got {got}")
        if self.has_body:
            found.extend(_subset("body", self.body, entry.get("requestBody")))
        if self.contract is not None and not _contract_matches(self.contract, entry.get("contract") or []):
            codes = ", ".join(mark["code"] for mark in entry.get("contract") or []) or "none"
            found.append(f"contract: expected {self.contract}, got {codes}")
        return found


def _contract_matches(expected: str, marks: list[dict[str, Any]]) -> bool:
    if expected == "any":
        return bool(marks)
    if expected == "none":
        return not marks
    return any(mark["code"] == expected for mark in marks)


def filter_query(query: dict[str, str]) -> Pattern:
    """The pattern of ``GET /_admin/requests``'s query (limit aside)."""
    return Pattern.from_json(
        {k: v for k, v in query.items() if k in FIELDS and k not in ("query", "headers", "body")}
    )


def expected_count(data: dict[str, Any]) -> tuple[str, int]:
    given = [name for name in COUNTS if name in data]
    if len(given) > 1:
        raise InvalidInput.for_field(given[1], f"give one of {', '.join(COUNTS)}, not several")
    name = given[0] if given else "atLeast"
    value = data.get(name, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput.for_field(name, "must be a whole number from 0")
    return name, value


def count_holds(kind: str, expected: int, matched: int) -> bool:
    if kind == "exactly":
        return matched == expected
    if kind == "atLeast":
        return matched >= expected
    return matched <= expected


def describe_count(kind: str, expected: int) -> str:
    words = {"exactly": "exactly", "atLeast": "at least", "atMost": "at most"}[kind]
    return f"{words} {expected} request{'' if expected == 1 else 's'}"


def verify(data: Any, entries: list[dict[str, Any]]) -> tuple[bool, dict[str, Any]]:
    """(holds, report) of one verification over the request log (oldest first)."""
    if not isinstance(data, dict):
        raise InvalidInput.for_field(
            "pattern", "the body must be a JSON object: a request pattern and a count"
        )
    pattern = Pattern.from_json(data)
    kind, expected = expected_count(data)
    matches = [entry for entry in entries if not pattern.differences(entry)]
    holds = count_holds(kind, expected, len(matches))
    wanted = describe_count(kind, expected)
    report: dict[str, Any] = {
        "matched": len(matches),
        "expected": {kind: expected},
        "pattern": pattern.describe(),
        "requests": [_brief(entry) for entry in matches[-CLOSEST:]],
    }
    if holds:
        return True, report
    report["error"] = f"expected {wanted} matching {pattern.describe()}, found {len(matches)}"
    if len(matches) < expected:  # too few: what came closest; too many: "requests" shows them
        scored = sorted(
            ((pattern.differences(entry), -index, entry) for index, entry in enumerate(entries)),
            key=lambda found: (len(found[0]), found[1]),
        )
        report["closest"] = [{**_brief(entry), "differences": diffs} for diffs, _, entry in scored if diffs][
            :CLOSEST
        ]
    else:
        report["closest"] = []
    return False, report


def _brief(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "method", "path", "query", "status", "group", "identity", "requestBody")
    return {key: entry.get(key) for key in keys}


def _subset(where: str, expected: Any, actual: Any, secret: bool = False) -> list[str]:
    """What differs between an expected subset and a logged body; ``secret``: under a
    secret-named field, whose expected values are echoed as ``***``."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {_show(actual)}"]
        found: list[str] = []
        for key, value in expected.items():
            inner = secret or is_secret_field(str(key))
            path = f"{where}.{mask_text(str(key))}"
            if key not in actual:
                found.append(f"{path}: expected {_show(value, inner)}, got nothing")
            else:
                found.extend(_subset(path, value, actual[key], inner))
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {_show(expected, secret)}, got {_show(actual)}"]
        return [
            d
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for d in _subset(f"{where}[{i}]", e, a, secret)
        ]
    if expected != actual or (type(expected) is not type(actual) and not _numbers(expected, actual)):
        return [f"{where}: expected {_show(expected, secret)}, got {_show(actual)}"]
    return []


def _numbers(a: Any, b: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))


def _show(value: Any, secret: bool = False) -> str:
    if value is None:
        return "nothing"
    text = json.dumps(MASK if secret else redact_value(value), ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _shown(name: str, value: str) -> str:
    """A query or header value a pattern expects, as a report may echo it."""
    return MASK if is_secret_field(name) else mask_text(value)


def _text(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and name == "status":
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput.for_field(name, "must be a non-empty string")
    return value.strip()


def _status_ok(text: str) -> bool:
    text = text.lower()
    if len(text) != 3:
        return False
    return text.isdigit() or (text[0] in "12345" and text[1:] == "xx")


def _status_matches(wanted: str, status: int | None) -> bool:
    if status is None:
        return False
    if wanted.endswith("xx"):
        return str(status)[0] == wanted[0]
    return str(status) == wanted


def _callers(identity: dict[str, Any] | None) -> set[str]:
    if not identity:
        return set()
    return {str(identity[k]) for k in ("userId", "apiKeyId", "organizationId") if identity.get(k)}


def _caller_text(identity: dict[str, Any] | None) -> str:
    if not identity:
        return "an unknown caller"
    return identity.get("userId") or identity.get("apiKeyId") or "an unknown caller"
