"""The one object every command receives: settings, backend and output switches."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from sowctl.settings import Settings

if TYPE_CHECKING:
    import typer

    from sowctl.backends import Backend


class AppContext:
    def __init__(self, options: Settings) -> None:
        self._options = options

    @property
    def options(self) -> Settings:
        """The global options as given (option or environment), before any profile is read."""
        return self._options

    @cached_property
    def settings(self) -> Settings:
        return self._options.with_profile().check()

    @cached_property
    def backend(self) -> Backend:
        settings = self.settings
        if settings.remote:
            from sowctl.backends.remote import RemoteBackend

            return RemoteBackend(settings)
        from sowctl.backends.local import LocalBackend

        return LocalBackend(settings.database, settings.org, settings.company)

    def call(
        self,
        name: str,
        params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        *,
        all_pages: bool = True,
    ) -> Any:
        return self.backend.call(name, params, query, body, all_pages=all_pages)

    def open_local_database(self, command: str) -> None:
        """Admin commands work on the database itself, so they refuse remote mode."""
        if self.settings.remote:
            from sowctl.errors import UsageError

            raise UsageError(
                f"'sowctl {command}' needs direct database access (local mode); "
                "it cannot run against --server. Use --db, or run it where the database is."
            )
        from sowctl.db import open_database

        open_database(self.settings.database)


def app_context(ctx: typer.Context) -> AppContext:
    root = ctx.find_root()
    if not isinstance(root.obj, AppContext):
        root.obj = AppContext(Settings())
    return root.obj
