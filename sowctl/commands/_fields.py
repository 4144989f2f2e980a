"""The API's field names as the command line says them: the one place that maps them.

The API names what it refuses by its own field names (``dependencyType: must be one
of ...``, ``Invalid parameter project_id in query parameters``). A person at the
terminal typed ``--type`` and ``--project``, so errors of a call made from options are
reworded here, in local and remote mode alike: both receive the same message text from
the API (local mode runs the same validation in process), so rewording the text keeps
their output identical. Bodies read from a file (``--from-file``) keep the JSON names,
since those are what the user wrote.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sowctl.foundation.errors import InvalidInput, Issue, error_code, quoted, suggestion

# API field (body, query or path parameter) -> the option or argument that sets it.
OPTION_FOR: dict[str, str] = {
    # Group A
    "title": "--title",
    "type": "--type",
    "description": "--description",
    "parentItemId": "--parent",
    "parentId": "--parent",
    "orderIndex": "--order-index",
    "status": "--status",
    "id": "--id",
    "projectId": "--project",
    "sourceItemId": "--source",
    "targetItemId": "--target",
    "externalTarget": "--external",
    "externalOwner": "--owner",
    "contactEmail": "--email",
    "vendor": "--vendor",
    "dependencyType": "--type",
    "riskLevel": "--risk",
    "slaDate": "--sla",
    "escalationDate": "--escalation",
    "notes": "--notes",
    "itemId": "--item",
    "sowId": "--sow",
    # Group B
    "project_id": "--project",
    "commitment_id": "--commitment",
    "vendor_id": "--vendor",
    "line_items": "--line",
    # Group C
    "limit": "--limit",
    "since": "--since",
    "offset": "--offset",
    "clientId": "--client",
    # the test double's admin API (sowctl sandbox create)
    "ttl": "--ttl",
}

# Path parameter -> the command's argument that gives it (commands take these ids positionally).
ARGUMENT_FOR: dict[str, str] = {
    "sowId": "SOW_ID",
    "itemId": "ITEM_ID",
    "dependencyId": "DEPENDENCY_ID",
    "snapshot_id": "SNAPSHOT_ID",
    "prime_contract_id": "PRIME_CONTRACT_ID",
}

# Path parameter -> the word the API's "not found" messages use for it.
NOUN_FOR: dict[str, str] = {"itemId": "item", "dependencyId": "dependency", "sowId": "SOW"}

# Group B's wording, for query parameters and body fields (line_items[0].amount).
_QUERY_PARAMETER = re.compile(r"^Invalid parameter ([A-Za-z_]+)(\S*?)(?: in query parameters)?: (.*)$")
_FIELD = re.compile(r"^([A-Za-z_]+)((?:\.\w+)*): (.*)$")
_ONE_OF = "must be one of: "


def refuse_empty(arguments: Mapping[str, Any]) -> None:
    """An empty id argument (``items get ''``) is invalid input (exit 2), in every command and
    both modes alike: ``invalid ITEM_ID '': must not be empty``. ``arguments`` maps the API
    field (a path parameter, or a query field the command takes as an argument) or, for a
    command that calls no API, the argument's own name (``TOKEN``) to the value typed.

    Without it an empty path parameter made a URL with no route ("missing path parameter",
    exit 3) while an empty query argument was the API's "must not be empty" (exit 2)."""
    for field, value in arguments.items():
        if value == "":
            raise speak_cli(InvalidInput.for_field(field, "must not be empty"), {}, {field: value})


def speak_cli(
    error: InvalidInput,
    sent: Mapping[str, Any],
    path: Mapping[str, str] | None = None,
    positional: frozenset[str] = frozenset(),
) -> InvalidInput:
    """``error`` reworded with the options the user typed; ``sent`` maps API fields (query
    and body) to values, ``path`` the path parameters (the command's arguments), and
    ``positional`` names the query fields this command also takes as arguments."""
    path = {**{field: sent[field] for field in positional if field in sent}, **(path or {})}
    sent = {field: value for field, value in sent.items() if field not in positional}
    match = _QUERY_PARAMETER.match(error.message)
    if match:
        message = _part(match.group(1), match.group(2), match.group(3), sent, path) or error.message
    else:
        parts = error.message.split("; ")
        message = "; ".join(_reworded(part, sent, path) or part for part in parts)
    issues = [_with_option(issue, sent, path) for issue in error.issues]
    if message == error.message and issues == error.issues:
        return error
    reworded = InvalidInput(message, issues)
    reworded.answered_status, reworded.request_id = error.answered_status, error.request_id
    reworded.answered_code = error.answered_code or error_code(error)  # a cycle stays a cycle
    return reworded


def _with_option(issue: Issue, sent: Mapping[str, Any], path: Mapping[str, str]) -> Issue:
    """``issue`` naming the option or argument that set its field (``--errors json`` shows it)."""
    field = issue.path[0] if issue.path else None
    if not isinstance(field, str) or issue.option is not None:
        return issue
    option: str | None
    if field in path and field not in sent:
        option = ARGUMENT_FOR.get(field, field)
    elif field == "line_items":
        option = "--line"
    else:
        option = OPTION_FOR.get(field)
    return issue if option is None else Issue(issue.path, issue.message, option)


def _reworded(part: str, sent: Mapping[str, Any], path: Mapping[str, str]) -> str | None:
    match = _FIELD.match(part)
    if not match:
        return None
    return _part(match.group(1), match.group(2), match.group(3), sent, path)


def _part(
    field: str, rest: str, problem: str, sent: Mapping[str, Any], path: Mapping[str, str]
) -> str | None:
    if field in path and field not in sent:
        return f"invalid {ARGUMENT_FOR.get(field, field)} {quoted(path[field])}: {problem}"
    option = OPTION_FOR.get(field)
    if option is None:
        return None
    if field == "line_items" and rest:  # line_items.0.amount or [0].amount -> --line 1 (amount)
        index, _, inner = rest.replace("[", ".").replace("]", "").lstrip(".").partition(".")
        where = f"--line {int(index) + 1}" if index.isdigit() else "--line"
        return f"invalid {where}{f' ({inner})' if inner else ''}: {problem}"
    value = sent.get(field)
    shown = f" {quoted(value)}" if isinstance(value, str | int) and not isinstance(value, bool) else ""
    message = f"invalid {option}{shown}: {problem}"
    if problem.startswith(_ONE_OF):
        choices = [choice.strip() for choice in problem[len(_ONE_OF) :].split(",")]
        message += suggestion(value, choices)
    return message
