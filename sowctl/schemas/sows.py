"""SOW models. SOWs have no route in the service spec; ours are an extension."""

from __future__ import annotations

from typing import Annotated

from sowctl.schemas.common import CamelBody, CamelOut, Field, NonEmptyStr, StrictStr, Timestamp

# The id column holds 64 characters (PostgreSQL refuses more; SQLite would keep them).
SowId = Annotated[StrictStr, Field(min_length=1, max_length=64)]


class SowCreate(CamelBody):
    title: NonEmptyStr
    project_id: StrictStr | None = None
    id: SowId | None = None


class SowOut(CamelOut):
    id: str
    project_id: str
    title: str
    created_at: Timestamp
    item_count: int
