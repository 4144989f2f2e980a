"""Local mode: operations run in process on a Peewee database, with full rights."""

from __future__ import annotations

from typing import Any

from sowctl.services.access import Caller


class LocalBackend:
    mode = "local"

    def __init__(self, db: str | None, org: str | None = None, company: str | None = None):
        self.db_url = db
        self.caller = Caller.local(org)
        self.company = company
        self._opened = False

    def open(self) -> None:
        if not self._opened:
            from sowctl.db import open_database

            open_database(self.db_url)
            self._opened = True

    def call(
        self,
        name: str,
        params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        *,
        all_pages: bool = True,
    ) -> Any:
        from sowctl import operations

        self.open()
        query = {k: str(v) for k, v in (query or {}).items() if v is not None}
        return operations.call_local(name, self.caller, params, query, body, company_id=self.company)
