"""Response models made from stored rows: one object (``from_row``) or, for long lists, a
generated function from a row's values to the JSON ``dump`` gives (``row_dumper``).

A response model's fields are named as the storage's columns are, so a service names only the
values that are not a column of that name.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, PlainSerializer

from sowctl.schemas.common import _OmitsAbsent

M = TypeVar("M", bound=BaseModel)


def row_values(model: type[BaseModel], row: Any, **given: Any) -> dict[str, Any]:
    """The values of ``model``'s fields, each read from the attribute of its name on ``row``
    (a stored record), except those ``given``: a response model names what it shows once."""
    return {name: given[name] if name in given else getattr(row, name) for name in model.model_fields}


def from_row(model: type[M], row: Any, **given: Any) -> M:
    """``model`` made from ``row`` (``row_values``)."""
    return model(**row_values(model, row, **given))


# --- many objects of one model, straight from stored values -------------------------


class PlainObjects(list):
    """JSON objects made by a ``row_dumper``: every value in them is a str, an int, a bool or
    None, which any JSON encoder writes the same way. The server writes such a list with
    pydantic's encoder (``server.http.json_bytes``), which gives the bytes ``json.dumps``
    gives for it in a third of the time (a page of 100 items: 45 µs against 135)."""

    __slots__ = ()


def row_dumper(model: type[BaseModel], given: Sequence[str] = ()) -> Callable[..., dict[str, Any]]:
    """A function from the values of ``model``'s fields (in declaration order) to the JSON
    object ``dump(model(...))`` gives for them, without building the model.

    For long lists of records read back from storage, where building and dumping one
    model per row cost more than the query (a page of 100 items: about 1 ms of 1.6).
    The values must be valid already (they were checked on their way in). Only models
    whose wire form this can reproduce are accepted: a response model (absent values
    left out, ``wire_nulls`` kept), fields of plain JSON types (str, int, bool,
    literals), optionally with a ``PlainSerializer`` (``Timestamp``, ``DateStr``);
    anything else is a TypeError here, at import, not a wrong body later.

    The fields named in ``given`` are the function's further arguments, in that order
    (a value the row holds only in another form: a calculated status); then the row may
    hold more values after the model's fields, which are left out: ``dump(row, *given)``.
    """
    if not issubclass(model, _OmitsAbsent):
        raise TypeError(f"{model.__name__} is not a response model")
    unknown = [name for name in given if name not in model.model_fields]
    if unknown:
        raise TypeError(f"{model.__name__} has no field {unknown[0]}")
    by_alias = bool(model.model_config.get("serialize_by_alias"))
    keep = model._keep_null
    # The function is generated, one line per field with the key and converter bound as
    # constants: a loop over a field plan costs twice as much per row in CPython.
    names, lines, namespace = [], [], {}
    for k, (name, info) in enumerate(model.model_fields.items()):
        key = (info.alias or name) if by_alias else name
        names.append(f"g{k}" if name in given else f"v{k}")
        convert = _plain_converter(model, name, info.annotation, info.metadata)
        value = names[-1]
        if convert is not None:
            namespace[f"c{k}"] = convert
            value = f"c{k}({value})"
        lines.append(f"    if {names[-1]} is not None: data[{key!r}] = {value}")
        if key in keep or name in keep:
            lines.append(f"    else: data[{key!r}] = None")
    position = {name: k for k, name in enumerate(model.model_fields)}
    # A given field's place in the row is skipped (``_``), and so are the row's further values
    # (sliced off: cheaper than a starred target, which makes a list of them).
    unpacked = ["_" if name.startswith("g") else name for name in names]
    source = "\n".join(
        [
            f"def dump_row({', '.join(['values', *(f'g{position[name]}' for name in given)])}):",
            f"    {', '.join(unpacked)}, = values{f'[:{len(names)}]' if given else ''}",
            "    data = {}",
            *lines,
            "    return data",
        ]
    )
    exec(compile(source, f"<row_dumper {model.__name__}>", "exec"), namespace)
    return namespace["dump_row"]


_PLAIN_JSON = (str, int, bool)


def _plain_converter(model: type, name: str, annotation: Any, metadata: list[Any]) -> Callable | None:
    """None when a field's value goes to JSON as it is; its serializer's function otherwise."""
    for entry in metadata:
        if isinstance(entry, PlainSerializer):
            return entry.func
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *extra = typing.get_args(annotation)
        return _plain_converter(model, name, base, [*extra, *metadata])
    if origin in (typing.Union, types.UnionType):
        variants = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(variants) == 1:
            return _plain_converter(model, name, variants[0], metadata)
    elif origin is Literal:
        if all(isinstance(arg, _PLAIN_JSON) for arg in typing.get_args(annotation)):
            return None
    elif annotation in _PLAIN_JSON:
        return None
    raise TypeError(f"{model.__name__}.{name}: row_dumper cannot dump {annotation!r}")
