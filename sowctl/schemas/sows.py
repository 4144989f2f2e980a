"""SOW models. SOWs have no route in the service spec; ours are an extension."""

from __future__ import annotations

from sowctl.schemas.common import CamelModel, NonEmptyStr, StrictStr, Timestamp


class SowCreate(CamelModel):
    title: NonEmptyStr
    project_id: StrictStr | None = None
    id: StrictStr | None = None


class SowOut(CamelModel):
    id: str
    project_id: str
    title: str
    created_at: Timestamp
    item_count: int
