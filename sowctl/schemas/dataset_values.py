"""How a dataset file writes each value the API answers: the field types of the dataset records.

A dataset record is read off the API's output model (``schemas.dataset``): each field the
API answers becomes a field of the record of the type ``dataset_type`` gives, so a field added
to an output model is imported and exported without another edit. The types are strict: a
string where a number belongs, an unknown enum value or a malformed timestamp is an error that
names the record and the field. Timestamps accept any ISO 8601 form (``Z``, an offset, or none
meaning UTC) and are kept as naive UTC to the second, the storage convention; one left out is
None, and the importer sets it to the import time.

Plain validators replace pydantic's own parsing: one small Python call per value, so the
records still validate in pydantic's Rust core (see ``schemas.dataset.ADAPTERS``).
"""

from __future__ import annotations

import math
import re
import types
import typing
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, PlainValidator

from sowctl.foundation.clock import parse_timestamp
from sowctl.schemas.common import DateStr, Field, StrictBool, StrictInt, StrictStr, Timestamp
from sowctl.schemas.external import MoneyNumber
from sowctl.schemas.paging import UuidOut
from sowctl.schemas.vocabulary import MAX_BIGINT

_DECIMAL_RE = re.compile(r"^-?\d+(\.\d+)?\Z", re.ASCII)  # as sowctl.foundation.money reads them


def _timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        return parse_timestamp(value.isoformat())
    if not isinstance(value, str):
        raise ValueError("must be a timestamp string (YYYY-MM-DDThh:mm:ssZ)")
    try:
        if len(value) == 20 and value[19] == "Z" and value[10] == "T":
            return datetime.fromisoformat(value[:19])  # the contract's shape: already UTC, whole seconds
        return parse_timestamp(value)
    except ValueError:
        raise ValueError("must be a timestamp in the form YYYY-MM-DDThh:mm:ssZ") from None


def _decimal_string(value: Any) -> Decimal:
    if not isinstance(value, str) or not _DECIMAL_RE.match(value):
        raise ValueError('must be a decimal string such as "1250.00"')
    return Decimal(value)


def _number(value: Any) -> Decimal:
    """A JSON number (or a decimal string) as an exact Decimal; floats by their repr."""
    if isinstance(value, bool):
        raise ValueError("must be a number")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return Decimal(repr(value))
    if isinstance(value, str) and _DECIMAL_RE.match(value):
        return Decimal(value)
    raise ValueError("must be a number")


def _json_number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    return value


TimestampIn = Annotated[datetime, PlainValidator(_timestamp)]
DecimalString = Annotated[Decimal, PlainValidator(_decimal_string)]
Number = Annotated[Decimal, PlainValidator(_number)]
JsonNumber = Annotated[int | float, PlainValidator(_json_number)]  # kept as written (inside JSON columns)
RecordId = Annotated[StrictStr, Field(min_length=1, max_length=64)]  # header values: any text
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def _uuid(value: str) -> str:
    if not _UUID_RE.match(value):
        raise ValueError("must be a uuid, such as 3f2b8c1e-7d4a-4e5b-9c6f-0a1b2c3d4e5f")
    return value


# Projects, clients and contacts are identified by uuids in the service,
# and clients generated from its description parse them as such.
UuidId = Annotated[StrictStr, AfterValidator(_uuid)]
IntId = Annotated[StrictInt, Field(ge=0, le=MAX_BIGINT)]
ShortText = Annotated[StrictStr, Field(max_length=64)]

# What a dataset writes for each type the API answers with, where the field is no link.
_PLAIN: list[tuple[Any, Any]] = [
    (UuidOut, UuidId),
    (MoneyNumber, Number),
    (DateStr, DateStr),
    (str, StrictStr),
    (int, StrictInt),
    (bool, StrictBool),
]
# A link (``id``, ``x_id``) names a record: text of 1 to 64 characters, or a non-negative bigint.
_LINK = {str: RecordId, int: IntId}

FieldDefinition = tuple[Any, Any]  # (annotation, default or FieldInfo), as pydantic's create_model takes it


def dataset_type(name: str, hint: Any, nested: typing.Mapping[type, Any]) -> FieldDefinition:
    """The dataset's (type, default) of an answered field ``name`` of type ``hint``.

    A field the API may answer without a value (``X | None``) may be left out of a record; a
    timestamp may always be left out (the import time). An object the API answers within a
    record is the dataset record ``nested`` maps its model to. A type with no rule here is an
    error when the records are built: the record must then say how a dataset writes it.
    """
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        values = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(values) == 1:
            return dataset_type(name, values[0], nested)[0] | None, None
    if hint == Timestamp:
        return TimestampIn | None, None
    if typing.get_origin(hint) is Literal:
        return hint, ...
    if isinstance(hint, type) and issubclass(hint, BaseModel) and hint in nested:
        return nested[hint], ...
    if hint in (str, int) and (name == "id" or name.endswith("_id")):
        return _LINK[hint], ...
    for answered, written in _PLAIN:
        if hint == answered:
            return written, ...
    raise TypeError(f"{name}: the dataset has no form for {hint!r}; the record must declare one")
