"""The one object every command receives: settings, backend and output switches."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import typer

from sowctl.backends.settings import CREDENTIALS as _REMOTE_CREDENTIALS
from sowctl.backends.settings import Settings
from sowctl.output.terminal import current

if TYPE_CHECKING:
    import typer

    from sowctl.backends import Backend


class AppContext:
    def __init__(self, options: Settings, given: set[str] | frozenset[str] = frozenset()) -> None:
        self._options = options
        self.given = frozenset(given)  # global options typed on the command line (parameter names)

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

        self._check_local_credentials(settings)
        return LocalBackend(settings.database, settings.org, settings.company, chosen=settings.db is not None)

    def _check_local_credentials(self, settings: Settings) -> None:
        """A token or key without a server would be ignored: local mode has full rights.

        Typed on the command line, that is a mistake worth stopping for (exit 2); from the
        environment (set for another shell's server, say) it is said on stderr, unless
        --db chose local mode explicitly.
        """

        from sowctl.foundation.errors import UsageError

        for name, option, env in _REMOTE_CREDENTIALS:
            if not getattr(self._options, name):
                continue
            if name in self.given:
                raise UsageError(
                    f"{option} is for remote mode and no server is set: add --server URL "
                    f"(local mode uses no credentials; it has full rights on {settings.database})"
                )
            if "db" not in self.given:
                current().err.write(
                    f"warning: {env} is set but no server is: running in local mode on "
                    f"{settings.database} (set SOWCTL_SERVER or --server for remote mode)\n"
                )

    def call(
        self,
        name: str,
        params: dict[str, str] | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        *,
        all_pages: bool = True,
        from_options: bool = True,
        positional: frozenset[str] = frozenset(),
        typed: bool = False,
    ) -> Any:
        """Run one operation. ``from_options``: the body and query were built from options,
        so a refusal names the options (a body read from a file keeps the API's names);
        ``positional``: the query fields the command took as arguments (``chain show SOW_ID``);
        ``typed``: answer the operation's record, not its JSON body (``Backend.call_typed``)."""
        from sowctl.commands._fields import refuse_empty
        from sowctl.foundation.errors import InvalidInput

        refuse_empty({**{field: (query or {}).get(field) for field in positional}, **(params or {})})
        if from_options:  # an empty filter (``--item "$UNSET"``) would list everything
            for field, value in (query or {}).items():
                if value == "" and field not in positional:
                    from sowctl.commands._fields import speak_cli

                    empty = InvalidInput.for_field(field, "must not be empty")
                    raise speak_cli(empty, query or {}, params, positional)
        _refuse_unreachable(params)
        try:
            if typed:
                return self.backend.call_typed(name, params, query)
            return self.backend.call(name, params, query, body, all_pages=all_pages)
        except InvalidInput as exc:
            if not from_options:
                raise
            from sowctl.commands._fields import speak_cli

            sent = {**(query or {}), **(body if isinstance(body, dict) else {})}
            raise speak_cli(exc, sent, params, positional) from None

    def open_local_database(self, command: str, *, write: bool = True) -> None:
        """Admin commands work on the database itself, so they refuse remote mode."""
        if self.settings.remote:
            from sowctl.foundation.errors import UsageError

            raise UsageError(
                f"'sowctl {command}' needs direct database access (local mode); "
                "it cannot run against --server. Use --db, or run it where the database is."
            )
        from sowctl.storage.database import open_database, require_directory

        if write and self.settings.db is not None:
            require_directory(self.settings.db)
        open_database(self.settings.database, create=write)


def _refuse_unreachable(params: dict[str, str] | None) -> None:
    """An id no record can have, since it cannot be part of a URL: not found, in both modes
    alike (the server would answer "no route" for it, local mode "not found")."""
    from sowctl.commands._fields import NOUN_FOR
    from sowctl.foundation.errors import NotFound
    from sowctl.schemas.common import unreachable_id

    for name, value in (params or {}).items():
        if isinstance(value, str) and unreachable_id(value):
            raise NotFound(f"{NOUN_FOR.get(name, name)} {value} not found")


def app_context(ctx: typer.Context) -> AppContext:
    root = ctx.find_root()
    if not isinstance(root.obj, AppContext):
        root.obj = AppContext(Settings())
    return root.obj


def resolve_mode(ctx: typer.Context, db: str | None, server: str | None) -> tuple[str | None, str | None]:
    """Option beats environment for the mode too: ``--server`` with SOWCTL_DB set means remote.

    Both given at the same level (two options, or two environment variables) stay
    both set, and ``Settings.check`` refuses them as a usage error.
    """
    if not (db and server):
        return db, server
    db_source, server_source = (option_source(ctx, name) for name in ("db", "server"))
    if db_source == "COMMANDLINE" and server_source != "COMMANDLINE":
        return db, None
    if server_source == "COMMANDLINE" and db_source != "COMMANDLINE":
        return None, server
    return db, server


def option_source(ctx: typer.Context, name: str) -> str | None:
    source = ctx.get_parameter_source(name)
    return getattr(source, "name", None)
