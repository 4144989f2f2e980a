"""Every list a request body or a dataset record may hold has a maximum, checked on the list's
length before any of its elements is validated; and a refusal lists at most
``MAX_REPORTED_ISSUES`` problems and counts the rest."""

from __future__ import annotations

import typing
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ValidationError

from sowctl import operations
from sowctl.foundation.budgets import MAX_MESSAGE_CHARS, MAX_REPORTED_ISSUES
from sowctl.foundation.errors import InvalidInput, Issue
from sowctl.schemas import dataset
from sowctl.schemas.common import StrictInt, parse, validation_error


def _list_fields(model: type[BaseModel], seen: set[type] | None = None) -> list[tuple[type, str]]:
    """(model, field name) of every list field of ``model`` and of the models it holds."""
    seen = set() if seen is None else seen
    if model in seen:
        return []
    seen.add(model)
    found = []
    for name, info in model.model_fields.items():
        for inner in _types(info.annotation):
            if typing.get_origin(inner) is list:
                found.append((model, name))
            elif isinstance(inner, type) and issubclass(inner, BaseModel):
                found += _list_fields(inner, seen)
    return found


def _types(annotation: Any) -> list[Any]:
    """``annotation`` and, through Annotated, unions and lists, the types inside it."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _types(typing.get_args(annotation)[0])
    if origin in (typing.Union, type(int | None)):
        return [found for arg in typing.get_args(annotation) for found in _types(arg)]
    if origin is list:
        return [annotation, *_types(typing.get_args(annotation)[0])]
    return [annotation]


def _models() -> list[type[BaseModel]]:
    bodies = {op.body for op in operations.load_all().values() if op.body is not None}
    return sorted(bodies | set(dataset.RECORD_MODELS.values()), key=lambda model: model.__name__)


LIST_FIELDS = sorted({field for model in _models() for field in _list_fields(model)}, key=str)


def test_the_lists_are_found() -> None:
    names = {f"{model.__name__}.{name}" for model, name in LIST_FIELDS}
    assert {"PurchaseOrderIn.line_items", "ReorderRequest.items", "ClientRecord.contacts"} <= names
    assert {"BudgetViewSnapshotRecord.line_items", "PurchaseOrderRecord.line_items"} <= names


@pytest.mark.parametrize(("model", "name"), LIST_FIELDS, ids=lambda value: getattr(value, "__name__", value))
def test_every_list_is_counted_before_its_elements_are_validated(model: type[BaseModel], name: str) -> None:
    field = model.model_fields[name]
    key = field.alias or name
    schema = model.model_json_schema(by_alias=True)["properties"][key]
    limit = schema.get("maxItems")
    assert isinstance(limit, int), f"{model.__name__}.{name} has no maximum"

    # One more element than the limit, none of them valid: a single problem, the count.
    with pytest.raises(ValidationError) as refused:
        model.model_validate({key: [0] * (limit + 1)}, by_alias=True)
    about_list = [error for error in refused.value.errors() if error["loc"][0] == key]
    assert len(about_list) == 1, about_list[:3]
    assert about_list[0]["loc"] == (key,)
    assert f"must contain at most {limit} " in str(about_list[0]["ctx"]["error"])
    assert f"(this one has {limit + 1})" in str(about_list[0]["ctx"]["error"])


class _ManyFields(BaseModel):
    values: list[StrictInt]


def test_a_refusal_lists_the_first_problems_and_counts_the_rest() -> None:
    with pytest.raises(ValidationError) as refused:
        _ManyFields.model_validate({"values": ["x"] * 500})

    error = validation_error(refused.value)

    shown = [f"values.{index}: must be an integer" for index in range(MAX_REPORTED_ISSUES)]
    assert error.message == "; ".join(shown) + f" (and {500 - MAX_REPORTED_ISSUES} more problems)"
    assert error.issues[:MAX_REPORTED_ISSUES] == [
        Issue(("values", index), "must be an integer") for index in range(MAX_REPORTED_ISSUES)
    ]
    assert error.issues[MAX_REPORTED_ISSUES:] == [Issue((), f"and {500 - MAX_REPORTED_ISSUES} more problems")]


def test_group_b_wording_is_followed_by_the_count() -> None:
    body = {"line_items": [{}] * 100}
    with pytest.raises(InvalidInput) as refused:
        parse(operations.get("finance.create_po").body, body)
    # 5 top-level fields and 3 per line are missing: the first 20 are named.
    assert refused.value.message.startswith("Missing required parameter project_id; ")
    assert refused.value.message.endswith(f"(and {5 + 300 - MAX_REPORTED_ISSUES} more problems)")
    assert len(refused.value.issues) == MAX_REPORTED_ISSUES + 1


def test_every_error_is_bounded_where_it_is_made() -> None:
    issues = [Issue(("k" * 10_000, index), "x" * 10_000) for index in range(100)]

    error = InvalidInput("m" * 1_000_000, issues)

    assert len(error.message) == MAX_MESSAGE_CHARS and "m…m" in error.message
    assert len(error.issues) == MAX_REPORTED_ISSUES + 1
    assert all(len(issue.message) <= MAX_MESSAGE_CHARS for issue in error.issues)
    assert all(len(str(part)) <= 80 for issue in error.issues for part in issue.path)
    assert error.issues[-1] == Issue((), f"and {100 - MAX_REPORTED_ISSUES} more problems")
    # Passed on (as a surface rewording a message does), a bounded list stays as it is.
    assert InvalidInput("again", error.issues).issues == error.issues
