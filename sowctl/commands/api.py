"""sowctl api METHOD PATH: any route of the API, with the CLI's mode, credentials and profiles."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qsl, urlsplit

import typer

from sowctl.commands._context import app_context
from sowctl.foundation.budgets import MAX_BODY_BYTES, MAX_DATASET_BYTES
from sowctl.foundation.errors import NotFound, PayloadTooLarge, UsageError, quoted

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
QUERY_METHODS = frozenset({"GET", "DELETE"})  # their -f/-F fields go to the query string
DATASET_ROUTE = "/_admin/dataset"  # the one route that takes more than 1 MiB (the admin token's)


def api_command(
    ctx: typer.Context,
    method: Annotated[str, typer.Argument(help="GET, POST, PUT, PATCH or DELETE.")],
    path: Annotated[str, typer.Argument(help="The route, with its query string: /api/sows?limit=5.")],
    field: Annotated[
        list[str] | None,
        typer.Option("--field", "-f", help="KEY=VALUE, a string field (repeatable).", show_default=False),
    ] = None,
    typed_field: Annotated[
        list[str] | None,
        typer.Option(
            "--typed-field",
            "-F",
            help="KEY=VALUE with true, false, null and numbers as JSON, @FILE for a file's text.",
            show_default=False,
        ),
    ] = None,
    input_file: Annotated[
        typer.FileText | None,
        typer.Option("--input", help='The JSON request body from a file ("-": stdin).'),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", "-H", help='"Name: value" for the server (repeatable).', show_default=False),
    ] = None,
    paginate: Annotated[
        bool, typer.Option("--paginate", help="Every page of a list, printed as one JSON array.")
    ] = False,
    include: Annotated[
        bool, typer.Option("--include", "-i", help="Print the status line and headers first (remote mode).")
    ] = False,
    json_: Annotated[
        bool, typer.Option("--json", help="Errors as JSON objects too (the body is always JSON).")
    ] = False,
) -> None:
    """Call any route and print its JSON body, as the commands do (exit codes by status).

    Remote mode sends the request with the credentials of the route's group (token; API key
    with --org and --company) and of the profile; a route no operation declares (/_admin)
    gets the bearer token. Local mode runs the same operation in process, with full rights;
    its lists are always whole, as with --paginate, and -H is not used.
    GET and DELETE send -f/-F fields in the query string, other methods as a JSON body.

    Example: sowctl api GET /api/sow/sow-1/items --paginate
    """
    from sowctl.output.render import emit_json

    verb = method.upper()
    if verb not in METHODS:
        raise UsageError(f"METHOD must be one of {', '.join(METHODS)}, not {quoted(method)}")
    route, query = _split(path)
    limit = _body_limit(route)
    body = _body(verb, query, _fields(field or [], typed_field or [], limit), input_file, limit)
    headers = _headers(header or [])  # checked in both modes, so a typo is found in either
    context = app_context(ctx)
    if include and (paginate or not context.settings.remote):
        raise UsageError("-i shows one answer of a server: not with --paginate, nor in local mode")
    if context.settings.remote:
        answer = _remote(context, verb, route, query, body, headers, paginate=paginate, include=include)
    else:
        answer = _local(context, verb, route, query, body)
    if answer is not None:
        emit_json(answer)


def _body_limit(route: str) -> int:
    """The most a body for ``route`` may hold, as the server counts it: read no further."""
    return MAX_DATASET_BYTES if route == DATASET_ROUTE else MAX_BODY_BYTES


def _read_bounded(handle: Any, limit: int) -> str:
    """At most ``limit`` bytes of text: a longer one is refused as the server would (413)."""
    text = handle.read(limit + 1)  # characters: never fewer than the bytes they encode to
    if len(text) > limit or len(text.encode("utf-8")) > limit:
        raise PayloadTooLarge.over(limit)
    return text


def _body(verb: str, query: dict[str, str], fields: dict[str, Any], input_file: Any, limit: int) -> Any:
    """The request body; GET and DELETE put the fields in ``query`` instead."""
    if fields and input_file is not None:
        raise UsageError("give the body with --input or with -f/-F fields, not both")
    if verb in QUERY_METHODS:
        query.update({key: _query_text(value) for key, value in fields.items()})
        return _read_input(input_file, limit) if input_file is not None else None
    return _read_input(input_file, limit) if input_file is not None else (fields or None)


def _remote(context: Any, verb: str, route: str, query: dict, body: Any, headers: dict, **how: bool) -> Any:
    """Any route on the server: a declared one with its group's credentials."""
    from sowctl.operations.routes import match

    matched = match(verb, route)
    return context.backend.raw(
        matched[0] if matched else None, verb, route, query, body, headers,
        paginate=how["paginate"], answered=_print_head if how["include"] else None,
    )  # fmt: skip


def _local(context: Any, verb: str, route: str, query: dict, body: Any) -> Any:
    """The declared operation of ``route``, in process: what the server would run."""
    from sowctl.operations.routes import match

    matched = match(verb, route)
    if matched is None:
        raise NotFound(f"no route for {verb} {route}")
    operation, params = matched
    return context.call(operation.name, params, query, body, from_options=False)


def _print_head(response: Any) -> None:
    """The status line and headers, as ``curl -i`` shows them (terminal-safe)."""
    import sys

    from sowctl.output.safe import clean

    lines = [f"{response.http_version} {response.status_code} {response.reason_phrase}"]
    lines += [f"{name}: {value}" for name, value in response.headers.items()]
    sys.stdout.write("".join(clean(line) + "\n" for line in lines) + "\n")


def _split(path: str) -> tuple[str, dict[str, str]]:
    if not path.startswith("/"):
        raise UsageError(f"PATH must start with / (a route, e.g. /api/sows), not {quoted(path)}")
    parts = urlsplit(path)
    return parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))


def _pair(text: str, option: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise typer.BadParameter(f"{quoted(text)} is not KEY=VALUE", param_hint=option)
    return key, value


def _fields(strings: list[str], typed: list[str], limit: int) -> dict[str, Any]:
    out: dict[str, Any] = dict(_pair(text, "-f") for text in strings)
    for text in typed:
        key, value = _pair(text, "-F")
        out[key] = _typed(value, limit)
    return out


def _typed(value: str, limit: int) -> Any:
    """-F's value: JSON's true, false, null and numbers; @FILE a file's text; else the string."""
    if value.startswith("@"):
        try:
            with open(value[1:], encoding="utf-8") as handle:
                return _read_bounded(handle, limit)
        except OSError as exc:
            problem = f"cannot read {quoted(value[1:])}: {exc.strerror}"
            raise typer.BadParameter(problem, param_hint="-F") from None
    if value in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[value]
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def _query_text(value: Any) -> str:
    """A field's value in a query string: JSON's spelling of true, false and null."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


def _read_input(stream: Any, limit: int) -> Any:
    from sowctl.foundation import json_input

    text = _read_bounded(stream, limit)
    try:
        return json_input.loads(text)
    except json_input.JsonTooDeep as exc:
        raise typer.BadParameter(str(exc), param_hint="--input") from None
    except ValueError as exc:  # bad JSON or UTF-8
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--input") from None


def _headers(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise typer.BadParameter(f"{quoted(line)} is not 'Name: value'", param_hint="-H")
        out[name.strip()] = value.strip()
    return out
