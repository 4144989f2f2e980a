"""``schemas.common.parse``: an empty query or body gives exactly what validating it gives."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import BaseModel, field_validator, model_validator

from sowctl import operations
from sowctl.foundation.errors import InvalidInput
from sowctl.schemas.common import CamelModel, parse


def _declared_models() -> list[type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    for op in operations.load_all().values():
        for model in (op.query, op.body):
            if isinstance(model, type) and issubclass(model, BaseModel):
                models[f"{model.__module__}.{model.__qualname__}"] = model
    return [models[name] for name in sorted(models)]


@pytest.mark.parametrize("model", _declared_models(), ids=lambda model: model.__qualname__)
def test_an_empty_object_parses_as_validation_would(model: type[BaseModel]) -> None:
    try:
        validated = model.model_validate({}, by_alias=True, by_name=False)
    except Exception:
        with pytest.raises(InvalidInput):
            parse(model, {})
        return
    parsed = parse(model, {})
    assert type(parsed) is model
    assert parsed.model_dump() == validated.model_dump()
    assert parsed.model_fields_set == validated.model_fields_set


class _Checked(CamelModel):
    limit: int = 5

    @model_validator(mode="after")
    def _refuse_everything(self) -> _Checked:
        raise ValueError("refused")


class _ValidatedDefault(CamelModel):
    model_config = {"validate_default": True}
    name: str = "x"

    @field_validator("name")
    @classmethod
    def _refuse(cls, value: str) -> str:
        raise ValueError("refused")


class _Required(CamelModel):
    name: str


@pytest.mark.parametrize("model", [_Checked, _ValidatedDefault, _Required])
def test_an_empty_object_still_runs_validators_and_required_checks(model: type[BaseModel]) -> None:
    with pytest.raises(InvalidInput):
        parse(model, {})


def test_listing_items_builds_no_validator() -> None:
    # The build of a first validator imports Pydantic's plugin loader, which scans every
    # installed distribution's entry points: a fifth of `items list`'s start-up.
    code = (
        "import sys\n"
        "from sowctl import operations\n"
        "from sowctl.services.access import Caller\n"
        "op = operations.get('items.list')\n"
        "request = operations.build_request(op, Caller.local(None), {'sowId': 's'}, {})\n"
        "assert request.query.type is None and request.query.parent_id is None\n"
        "print('pydantic.plugin._loader' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
