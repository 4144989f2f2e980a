"""``GET /_admin/requests/pact``: the request log written as a Pact contract (specification V3).

One interaction per logged request, oldest first, described ``"<METHOD> <path> #<log id>"``:
the request as it was sent (method, path, query, the headers that change the answer, body)
and the answer (status, Content-Type, body). The log never holds a credential, so neither
does the pact: the verifier adds the provider's own (``Authorization``, ``X-API-Key``) as
custom headers.

Values the server makes up during a run are matched by shape, not equality, so a replay on
a server that made other ones still passes: the ids that creates answered with (wherever
they appear later), ``createdAt``/``updatedAt`` timestamps and request ids. Response headers
other than Content-Type (Date, X-Request-Id, rate-limit counters) are left out of the pact.

Requests that cannot be replayed exactly are left out, each listed with its reason in the
document's ``metadata.sowctl.omitted``: a body cut at the log's limit or holding a masked
secret, an answer made by an injected fault, a dropped connection or strict contract mode's
refusal, a body that is not JSON, and /_admin and console requests. The document is capped
at ``MAX_PACT_BYTES``.

There are no provider states but one, when asked (``state``): the first interaction names the
state the consumer's run started from (a checkpoint it restored, say); the verifier replays the
interactions in the file's order, so what a write made is there for the requests after it.

Why V3: every Pact verifier reads it (pact-python 4's, the Rust core's, Pact JVM, pact-js),
and these interactions need nothing V4 adds (message and plugin interactions, pending
flags); V3's ``matchingRules`` with ``regex`` and ``type`` matchers say all this needs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sowctl.foundation.errors import InvalidInput
from sowctl.foundation.redaction import MASK
from sowctl.schemas.admin import PARTY_NAME, PARTY_NAME_RULE
from sowctl.server.console import is_console_path
from sowctl.server.http import JSON_CONTENT_TYPE
from sowctl.server.testdouble import state, verify

SPECIFICATION = "3.0.0"
MAX_PACT_BYTES = 8 * 1024 * 1024
DEFAULT_CONSUMER = "sowctl-consumer"
DEFAULT_PROVIDER = "sowctl"
# Request headers that change the answer and carry no secret (the log never keeps a
# credential header): the body's type and Group B's organization and company headers.
REPLAYED_HEADERS = {
    "content-type": "Content-Type",
    "x-organization-id": "x-organization-id",
    "x-company-id": "x-company-id",
    "organization-id": "organization-id",
    "company-id": "company-id",
}
# Keys whose values the server makes at the time of the request.
TIMESTAMP_KEYS = frozenset({"createdAt", "updatedAt", "created_at", "updated_at"})
REQUEST_ID_KEYS = frozenset({"requestId", "request_id"})
UUID_REGEX = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
TIMESTAMP_REGEX = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$"
_UUID = re.compile(UUID_REGEX)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def participant_name(query: dict[str, str], field: str, default: str) -> str:
    """The consumer's, provider's or start state's name from the query (``PARTY_NAME``)."""
    text = query.get(field, default).strip()
    if not PARTY_NAME.fullmatch(text):
        raise InvalidInput.for_field(field, PARTY_NAME_RULE)
    return text


def contract(query: dict[str, str], keep: int) -> dict[str, Any]:
    """The pact of the logged requests (of the last ``keep``) that match ``query``'s filters."""
    consumer = participant_name(query, "consumer", DEFAULT_CONSUMER)
    provider = participant_name(query, "provider", DEFAULT_PROVIDER)
    start = participant_name(query, "state", "") if query.get("state", "").strip() else None
    pattern = verify.filter_query(query)
    entries = [entry for entry in state.recent_requests(keep) if not pattern.differences(entry)]
    return build(entries, consumer, provider, start)


def build(
    entries: list[dict[str, Any]], consumer: str, provider: str, start: str | None = None
) -> dict[str, Any]:
    """The Pact document of ``entries`` (the request log's entries, oldest first); ``start``:
    the provider state the first interaction names (where the consumer's run started)."""
    generated = generated_values(entries)
    interactions: list[dict[str, Any]] = []
    omitted: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        reason = omission(entry)
        interaction = None if reason else _interaction(entry, generated)
        if interaction is not None:
            size += len(json.dumps(interaction, ensure_ascii=False))
            if size > MAX_PACT_BYTES:
                reason, interaction = f"the pact reached its size limit ({MAX_PACT_BYTES} bytes)", None
        if interaction is None:
            omitted.append(
                {"id": entry["id"], "request": f"{entry['method']} {entry['path']}", "reason": reason}
            )
        else:
            interactions.append(interaction)
    if start is not None and interactions:
        interactions[0] = {"providerStates": [{"name": start}], **interactions[0]}
    return {
        "consumer": {"name": consumer},
        "provider": {"name": provider},
        "interactions": interactions,
        "metadata": {
            "pactSpecification": {"version": SPECIFICATION},
            "sowctl": {"interactions": len(interactions), "omitted": omitted},
        },
    }


def omission(entry: dict[str, Any]) -> str | None:
    """Why a logged request cannot be replayed exactly; None when it can."""
    path = entry["path"]
    if path == "/_admin" or path.startswith("/_admin/") or is_console_path(path):
        return "an /_admin or console request, not the service's API"
    if entry["status"] is None:
        return "the connection was dropped (an injected fault)"
    if entry["fault"]:
        return "answered by an injected fault, not by the service"
    if _refused_by_contract_mode(entry):
        return "refused by contract mode (strict), not by the service"
    if entry["requestBodyTruncated"] or entry["responseBodyTruncated"]:
        return "a body was cut at the request log's limit"
    for part in (path, entry["query"], entry["requestBody"], entry["responseBody"], _replayed(entry)):
        if MASK in (part if isinstance(part, str) else json.dumps(part, ensure_ascii=False)):
            return "a value was masked as a secret in the log"
    for name in ("requestBody", "responseBody"):
        if isinstance(entry[name], str):
            return "a body is not JSON"
    return None


def _refused_by_contract_mode(entry: dict[str, Any]) -> bool:
    """Strict contract mode's 400 names the departures it refused (message or issues)."""
    if entry["status"] != 400 or not entry["contract"]:
        return False
    answer = json.dumps(entry["responseBody"], ensure_ascii=False)
    return any(mark["code"] in answer for mark in entry["contract"])


def generated_values(entries: list[dict[str, Any]]) -> set[Any]:
    """The ids that creates answered with (2xx POST): made by the server during this run."""
    found: set[Any] = set()
    for entry in entries:
        body = entry["responseBody"]
        if entry["method"] != "POST" or not (200 <= (entry["status"] or 0) < 300):
            continue
        for record in (body, body.get("data") if isinstance(body, dict) else None):
            if isinstance(record, dict) and _is_id(record.get("id")):
                found.add(record["id"])
    return found


def _interaction(entry: dict[str, Any], generated: set[Any]) -> dict[str, Any]:
    request: dict[str, Any] = {"method": entry["method"], "path": entry["path"]}
    if entry["query"]:
        request["query"] = {key: [str(value)] for key, value in entry["query"].items()}
    headers = _replayed(entry)
    if headers:
        request["headers"] = headers
    if entry["requestBody"] is not None:
        request["body"] = entry["requestBody"]
    response: dict[str, Any] = {"status": entry["status"]}
    body = entry["responseBody"]
    if body is not None:
        response["headers"] = {"Content-Type": JSON_CONTENT_TYPE}
        response["body"] = body
        rules: dict[str, Any] = {}
        _match_generated(body, "$", generated, rules)
        if rules:
            response["matchingRules"] = {"body": rules}
    return {
        "description": f"{entry['method']} {entry['path']} #{entry['id']}",
        "request": request,
        "response": response,
    }


def _replayed(entry: dict[str, Any]) -> dict[str, str]:
    return {
        REPLAYED_HEADERS[name]: value for name, value in entry["headers"].items() if name in REPLAYED_HEADERS
    }


def _match_generated(value: Any, path: str, generated: set[Any], rules: dict[str, Any]) -> None:
    """Add a rule for each value under ``path`` that the server makes per run."""
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}['{_quoted(key)}']"
            matcher = _matcher(key, item, generated)
            if matcher is not None:
                rules[child] = {"matchers": [matcher], "combine": "AND"}
            else:
                _match_generated(item, child, generated, rules)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                _match_generated(item, f"{path}[{index}]", generated, rules)
            elif _generated(item, generated):
                rules[f"{path}[{index}]"] = {"matchers": [_id_matcher(item)], "combine": "AND"}


def _matcher(key: str, value: Any, generated: set[Any]) -> dict[str, Any] | None:
    if key in TIMESTAMP_KEYS and isinstance(value, str):
        return {"match": "regex", "regex": TIMESTAMP_REGEX}
    if key in REQUEST_ID_KEYS and isinstance(value, str):
        return {"match": "type"}
    if _generated(value, generated):
        return _id_matcher(value)
    return None


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _generated(value: Any, generated: set[Any]) -> bool:
    return _is_id(value) and value in generated


def _id_matcher(value: Any) -> dict[str, Any]:
    if isinstance(value, str) and _UUID.match(value):
        return {"match": "regex", "regex": UUID_REGEX}
    return {"match": "type"}


def _quoted(key: str) -> str:
    return key.replace("\\", "\\\\").replace("'", "\\'")
