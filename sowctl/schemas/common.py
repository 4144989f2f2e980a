"""Shared Pydantic building blocks: strict field types, parsing and dumping.

Request models use strict scalar types so that a wrong JSON type is a 400 that
names the field, and the same model validates CLI input and HTTP bodies alike.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from datetime import date, datetime
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_serializer,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonDict

from sowctl.foundation.budgets import MAX_REPORTED_ISSUES
from sowctl.foundation.clock import format_timestamp
from sowctl.foundation.errors import InvalidInput, Issue, bounded_issues, listed, more_problems
from sowctl.foundation.json_input import TooLongInteger

__all__ = [
    "ApiBody",
    "ApiModel",
    "ApiOut",
    "CamelBody",
    "CamelModel",
    "CamelOut",
    "DateStr",
    "Field",
    "NonEmptyStr",
    "StrictBool",
    "StrictInt",
    "StrictStr",
    "Timestamp",
    "WholeNumber",
    "bounded_list",
    "dump",
    "parse",
    "whole_number_between",
]

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_TEXT = 10_000  # titles and other short text; long notes get their own limit


def parse_date(value: Any) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _DATE_RE.match(value):
        raise ValueError("must be a date in the form YYYY-MM-DD")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError("must be a valid calendar date (YYYY-MM-DD)") from None


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


DateStr = Annotated[
    date,
    BeforeValidator(parse_date),
    PlainSerializer(lambda d: d.isoformat(), return_type=str),
    WithJsonSchema({"type": "string", "format": "date", "example": "2026-12-01"}),
]

Timestamp = Annotated[
    datetime,
    PlainSerializer(format_timestamp, return_type=str),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$",
        }
    ),
]


def _whole_number(value: Any) -> Any:
    """2.0 and 2e0 are the JSON number 2: accepted where an integer is needed."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer sent as any JSON number with no fraction (2, 2.0, 2e0); strings, booleans
# and fractions are refused with "must be an integer".
WholeNumber = Annotated[StrictInt, BeforeValidator(_whole_number)]


def whole_number_between(low: int, high: int) -> Any:
    """A ``WholeNumber`` from ``low`` to ``high``. The bounds must sit on the integer, inside
    the validator: put after it (``Annotated[WholeNumber, Field(ge=...)]``), Pydantic checks
    them as a generic constraint and its JSON schema says "ge"/"le", which are not JSON
    Schema, instead of "minimum"/"maximum"."""
    return Annotated[StrictInt, Field(ge=low, le=high), BeforeValidator(_whole_number)]


# max_length comes before the validator, so Pydantic applies it as a string constraint
# ("at most N characters"). The schema extra documents what _not_blank checks (a
# non-space character) without Pydantic checking it first with a vaguer message.
NonEmptyStr = Annotated[
    StrictStr,
    Field(max_length=MAX_TEXT, json_schema_extra={"minLength": 1, "pattern": r"\S"}),
    AfterValidator(_not_blank),
]


def bounded_list(item: Any, limit: int, noun: str, *, at_least: int = 0) -> Any:
    """A JSON array of at most ``limit`` ``item``s (and at least ``at_least``), its length
    checked before any element is validated: 250,000 empty objects are refused at once,
    with one problem, where validating them first took seconds and named 750,000 fields.
    ``noun`` (singular) words the refusal: "must contain at most 1000 line items (this one
    has 250000)", "must contain at least one line item".
    Anything but an array is left to the list's own validation ("must be an array")."""

    def count(value: Any) -> Any:
        if isinstance(value, list):
            if len(value) > limit:
                raise ValueError(f"must contain at most {limit} {noun}s (this one has {len(value)})")
            if len(value) < at_least:
                least = "one" if at_least == 1 else str(at_least)
                raise ValueError(f"must contain at least {least} {noun}{'' if at_least == 1 else 's'}")
        return value

    bounds: JsonDict = {"maxItems": limit, **({"minItems": at_least} if at_least else {})}
    return Annotated[list[item], BeforeValidator(count), Field(json_schema_extra=bounds)]


def unreachable_id(value: str) -> str | None:
    """Why ``value`` cannot be an id that is a URL path segment (/api/items/{itemId}), or None.

    A "/" is decoded back into a path separator by every server, and "." or ".." are
    removed by URL normalisation, so such a record could be created but never read,
    changed or deleted over HTTP.
    """
    if "/" in value:
        return "must not contain '/' (ids are part of URLs)"
    if value in (".", ".."):
        return f"must not be {value!r} (ids are part of URLs)"
    if _CONTROL.search(value):
        # A tab or newline in an id cannot be printed as it is (output is made safe for the
        # terminal), so `create -q` could not hand the id it made back to a script.
        return "must not contain control characters (tab, newline, ...)"
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _reachable_id(value: str) -> str:
    problem = unreachable_id(value)
    if problem:
        raise ValueError(problem)
    return value


# The id of a SOW, item or dependency chosen by a client or a dataset: at most 64
# characters (PostgreSQL's column), and reachable as a URL path segment.
PathId = Annotated[StrictStr, Field(min_length=1, max_length=64), AfterValidator(_reachable_id)]


class ApiModel(BaseModel):
    """Base for models whose field names are the API's names as written (snake or camel)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=True)


class CamelModel(BaseModel):
    """Base for Group A/C models: Python snake_case attributes, camelCase on the wire."""

    model_config = ConfigDict(
        extra="ignore",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        defer_build=True,
    )


def _optional_not_null(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """JSON-schema hook: optional fields are optional, not nullable, except the spec's nulls."""
    keep = set(getattr(model, "_keep_null", ()))
    for name in getattr(model, "null_allowed", ()):
        keep.update((name, model.model_fields[name].alias or name))
    for name, prop in schema.get("properties", {}).items():
        if name in keep:
            continue
        variants = [variant for variant in prop.get("anyOf", ()) if variant != {"type": "null"}]
        if "anyOf" in prop and len(variants) < len(prop["anyOf"]):
            del prop["anyOf"]
            prop.update(variants[0] if len(variants) == 1 else {"anyOf": variants})
        if prop.get("default", ...) is None:
            del prop["default"]


class _RefusesNull(BaseModel, defer_build=True):
    """Request bodies: a field may be left out, but null is not a value of its type.

    The spec types every request field (a string, a number, a date), so null gets a
    400 naming the field, like any other wrong type. The fields the spec shows as
    null (an item's ``parentItemId``, an internal target's ``targetItemId``) are
    named in ``null_allowed`` (Python names).
    """

    null_allowed: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_null(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None and info.field_name not in cls.null_allowed:
            raise ValueError("must not be null")
        return value


class CamelBody(CamelModel, _RefusesNull):
    """A Group A request body (camelCase on the wire; null refused)."""

    model_config = ConfigDict(json_schema_extra=_optional_not_null)


class ApiBody(ApiModel, _RefusesNull):
    """A Group B request body (the API's snake_case names; null refused)."""

    model_config = ConfigDict(json_schema_extra=_optional_not_null)


class _OmitsAbsent(BaseModel, defer_build=True):
    """Response models: a field with no value is left out of the body, not sent as null.

    The spec types every field (a date, a uuid, a string), so a typed client cannot
    parse null in them ("a list response may omit fields that have no value"). The
    few fields the spec itself shows as null (an external dependency's
    ``targetItemId``, a top-level item's ``parentItemId``, a project's ``endDate``)
    are named in ``wire_nulls`` (Python names) and keep their null. In the JSON
    schema an omissible field is optional and not nullable.
    """

    wire_nulls: ClassVar[frozenset[str]] = frozenset()
    _keep_null: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        names = set(cls.wire_nulls)
        names.update(cls.model_fields[name].alias or name for name in cls.wire_nulls)
        cls._keep_null = frozenset(names)

    # No return annotation: Pydantic would take it as the JSON schema of the whole model.
    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        keep = self._keep_null
        return {key: value for key, value in data.items() if value is not None or key in keep}


class CamelOut(CamelModel, _OmitsAbsent):
    """A Group A/C response object (camelCase on the wire, absent values left out)."""

    model_config = ConfigDict(json_schema_extra=_optional_not_null)


class ApiOut(ApiModel, _OmitsAbsent):
    """A Group B response object (the API's snake_case names, absent values left out)."""

    model_config = ConfigDict(json_schema_extra=_optional_not_null)


M = TypeVar("M", bound=BaseModel)


def build_deferred_models() -> int:
    """Build now every imported sowctl model still waiting for its first use; return how many.

    The models defer building their validators (``defer_build``): a CLI command builds
    the two or three it uses, not all of them, which keeps its start-up short. The
    server calls this before it forks, so that no request pays for a build and the
    workers share the result.
    """
    built = 0
    pending: list[type[BaseModel]] = [BaseModel]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("sowctl.") and not cls.__pydantic_complete__:
            cls.model_rebuild()
            built += 1
    return built


def parse(model: type[M], data: Any) -> M:
    """Validate ``data`` against ``model``; raise InvalidInput naming each bad field."""
    if data is None:
        raise InvalidInput("request body is required", [Issue((), "request body is required")])
    if not isinstance(data, dict):
        raise InvalidInput("request body must be a JSON object", [Issue((), "must be a JSON object")])
    unstorable = unstorable_text(data) if may_hold_unstorable(data) else None
    if unstorable is not None:
        issues = [Issue(unstorable, UNSTORABLE_MESSAGE)]
        describe = getattr(model, "describe_errors", None)
        raise InvalidInput(describe(issues) if describe else issues[0].describe(), issues)
    if not data and _defaults_only(model):
        return model.model_construct()
    try:
        return model.model_validate(data, by_alias=True, by_name=False)  # the wire names only
    except ValidationError as exc:
        raise validation_error(exc, model) from None


@functools.cache
def _defaults_only(model: type[BaseModel]) -> bool:
    """True when validating ``{}`` can only give ``model``'s defaults: no field is required
    and no validator runs. Then ``parse`` constructs the model instead, and a command whose
    query is empty (``items list SOW``) never builds a validator: that build, and the plugin
    scan Pydantic runs at its first one, were a fifth of the command's start-up.
    """
    decorators = model.__pydantic_decorators__
    return (
        not model.model_config.get("validate_default")
        and not any(field.is_required() for field in model.model_fields.values())
        and not (decorators.validators or decorators.field_validators or decorators.root_validators)
        and not decorators.model_validators
    )


# NUL, which PostgreSQL text columns refuse, and lone surrogates, which are not
# encodable as UTF-8 (JSON allows "\ud800"): refused on every backend alike.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
UNSTORABLE_MESSAGE = "must not contain NUL characters or unpaired surrogates"


def has_unstorable(text: str) -> bool:
    return _UNSTORABLE.search(text) is not None


def escape_unstorable(text: str) -> str:
    """``text`` with NULs and lone surrogates written as ``\\uXXXX``: safe to print or encode."""
    return _UNSTORABLE.sub(lambda match: f"\\u{ord(match[0]):04x}", text)


_ESCAPED_UNSTORABLE = re.compile(r"\\x00|\\ud[89a-f]")


def may_hold_unstorable(data: Any) -> bool:
    """False when no string (or key) in ``data`` can hold a NUL or a lone surrogate: repr()
    escapes both (``\\x00``, ``\\udXXX``), at C speed, where walking the value costs a Python
    step per element (0.27 s for a body of 250,000 empty objects, against 0.02 s). True may
    be a false alarm (a backslash-x00 typed in a text): ``unstorable_text`` then says."""
    return _ESCAPED_UNSTORABLE.search(repr(data)) is not None


def unstorable_text(data: Any) -> tuple[str | int, ...] | None:
    """Path of a string (or key) in ``data`` that no backend can store; None if there is none.

    Iterative: JSON nested as deep as the parser allows must not overflow the stack.
    """
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _UNSTORABLE.search(value):
                return path
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _UNSTORABLE.search(key):
                    return (*path, escape_unstorable(key))  # the path is echoed in the error
                stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
    return None


def validation_error(exc: ValidationError, model: type[BaseModel] | None = None) -> InvalidInput:
    """InvalidInput listing the first problems (``MAX_REPORTED_ISSUES``) and counting the
    rest; a model may word the message itself.

    A model with a ``describe_errors(issues) -> str`` classmethod chooses the message
    (Group B's "Missing required parameter X in query parameters" wording); it is given
    the problems listed, and "(and K more problems)" follows its words.
    """
    errors = exc.errors(include_url=False)
    shown = [_issue(err) for err in errors[:MAX_REPORTED_ISSUES]]
    describe = getattr(model, "describe_errors", None)
    if describe is not None:
        message = describe(shown)
        if len(errors) > len(shown):
            message += f" ({more_problems(len(errors) - len(shown))})"
    else:
        message = listed([issue.describe() for issue in shown], len(errors))
    return InvalidInput(message, bounded_issues(shown, len(errors)))


def issues_of(exc: ValidationError) -> Iterator[Issue]:
    """Every problem of ``exc``, for a caller that counts them all (a dataset's problems)."""
    return (_issue(err) for err in exc.errors(include_url=False))


def _issue(err: Any) -> Issue:
    return Issue(tuple(err["loc"]), _message(err))


def _message(err: dict) -> str:
    if isinstance(err.get("input"), TooLongInteger):  # whatever the field takes, not that
        return err["input"].problem
    kind = err["type"]
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":  # only dataset records forbid them; request bodies ignore them
        return "unknown field"
    if kind in ("string_type", "int_type", "bool_type", "float_type", "dict_type", "list_type"):
        expected = {
            "string_type": "a string",
            "int_type": "an integer",
            "bool_type": "a boolean",
            "float_type": "a number",
            "dict_type": "an object",
            "list_type": "an array",
        }[kind]
        return f"must be {expected}"
    if kind == "literal_error":
        allowed = str(err.get("ctx", {}).get("expected", "")).replace("'", "")
        return "must be one of: " + allowed.replace(" or ", ", ")
    if kind == "value_error":
        return str(err.get("ctx", {}).get("error", err["msg"]))
    return err["msg"][0].lower() + err["msg"][1:] if err["msg"] else kind


def dump(value: Any) -> Any:
    """JSON-ready data (dicts, lists, str) of a model or a list of models."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list):
        return [dump(entry) for entry in value]
    return value
