"""SOW models. SOWs have no route in the service spec; ours are an extension."""

from __future__ import annotations

from sowctl.schemas.common import CamelBody, CamelOut, NonEmptyStr, PathId, StrictStr, Timestamp


class SowCreate(CamelBody):
    title: NonEmptyStr
    project_id: StrictStr | None = None
    id: PathId | None = None


class SowOut(CamelOut):
    id: str
    project_id: str
    title: str
    created_at: Timestamp
    item_count: int


class SowUpdate(CamelBody):
    title: NonEmptyStr


class SowDeleted(CamelOut):
    message: str
    deleted_items: int
    deleted_dependencies: int
