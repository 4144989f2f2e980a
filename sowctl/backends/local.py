"""Local mode: operations run in process on a Peewee database, with full rights."""

from __future__ import annotations

from typing import Any

from sowctl.services.access import Caller


class LocalBackend:
    mode = "local"

    def __init__(self, db: str, org: str | None = None, company: str | None = None, *, chosen: bool = False):
        self.db_url = db
        self.chosen = chosen  # named by --db/SOWCTL_DB/a profile: its directory is not created
        # --org scopes Groups B and C (their API takes an organization) and the SOW commands
        # (which organization a new SOW goes to). Items, dependencies and chains are reached
        # with full rights on every organization of the file: --org only tells apart a SOW
        # id that several organizations use, it never hides a record. The changes feed
        # (events.*) is --org's events only, as a token's is its organization's.
        self.scoped = Caller.local(org)
        self.caller = Caller.local(prefers=org)
        self.company = company
        self._opened = False

    def open(self, *, create: bool = True) -> None:
        """Open the database; a reader (``create=False``) never creates a missing file."""
        if not self._opened:
            from sowctl.storage.database import open_database, require_directory

            if create and self.chosen:
                require_directory(self.db_url)
            open_database(self.db_url, create=create)
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

        op = operations.get(name)
        created = self._new_file() if op.write else None
        self.open(create=op.write)
        query = {k: str(v) for k, v in (query or {}).items() if v is not None}
        try:
            return operations.call_local(
                name, self._caller(name), params, query, body, company_id=self.company
            )
        except BaseException:
            if created is not None:  # a refused first write leaves no new, empty database behind
                from sowctl.storage.created_files import remove_sqlite_file

                remove_sqlite_file(created)
                self._opened = False
            raise

    def call_typed(
        self, name: str, params: dict[str, str] | None = None, query: dict[str, Any] | None = None
    ) -> Any:
        from sowctl import operations

        self.open(create=False)
        query = {k: str(v) for k, v in (query or {}).items() if v is not None}
        return operations.call_local_typed(name, self._caller(name), params, query, company_id=self.company)

    def _new_file(self) -> Any:
        """The SQLite file opening will create (a mistyped --db, say), else None."""
        if self._opened:
            return None
        from sowctl.storage.created_files import new_sqlite_file

        return new_sqlite_file(self.db_url)

    def call_page(
        self, name: str, params: dict[str, str] | None, query: dict[str, Any] | None, *, page: int, limit: int
    ) -> tuple[Any, int | None]:
        """One page of a paginated list, as the server pages it: its JSON body and the total."""
        from sowctl import operations
        from sowctl.schemas.lazy import materialize

        op = operations.get(name)
        self.open(create=False)
        query = {k: str(v) for k, v in (query or {}).items() if v is not None}
        request = operations.build_request(
            op,
            self._caller(name),
            params,
            query,
            offset=(page - 1) * limit,
            limit=limit,
            company_id=self.company,
        )
        result = op.run(request)
        return materialize(result.body), result.total

    def _caller(self, name: str) -> Caller:
        from sowctl import operations

        return (
            self.scoped
            if operations.get(name).group.organization_scoped or name.startswith(("sows.", "events."))
            else self.caller
        )
