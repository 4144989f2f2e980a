"""Resolved global settings: option > environment > profile > default.

Typer resolves option-over-environment itself (``envvar=``); what is still
unset here is filled from the selected profile of the config file.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

DEFAULT_TIMEOUT = 10.0  # seconds


@dataclass(frozen=True)
class Settings:
    db: str | None = None
    server: str | None = None
    token: str | None = None
    api_key: str | None = None
    org: str | None = None
    company: str | None = None
    profile: str | None = None
    # None until resolved: an explicit --timeout equal to the default still beats the profile.
    timeout: float | None = None

    @property
    def remote(self) -> bool:
        return bool(self.server)

    @property
    def database(self) -> str:
        """The local database: --db, or ``sowctl.db`` in the per-user app dir."""
        if self.db:
            return self.db
        from sowctl.backends.profiles import default_sqlite_path

        return str(default_sqlite_path())

    def with_profile(self) -> Settings:
        """Fill unset values from the profile (never overriding options or env)."""
        from sowctl.backends import profiles
        from sowctl.foundation.errors import UsageError

        data = profiles.load()
        name = profiles.active_profile_name(data, self.profile)
        values = profiles.profile(data, name)
        if self.profile and self.profile not in data.get("profiles", {}):
            raise UsageError(f"profile {self.profile!r} is not in {profiles.config_path()}")
        if not self.profile and name != "default" and name not in data.get("profiles", {}):
            # `current` names a profile that is gone: guessing a mode would be worse than stopping.
            raise UsageError(f"current profile {name!r} is not in {profiles.config_path()}")
        updates = {}
        explicit_db, explicit_server = self.db is not None, self.server is not None
        for field in fields(self):
            if field.name == "profile" or getattr(self, field.name) is not None:
                continue
            if field.name in values:
                value = values[field.name]
                if field.name != "timeout" and not isinstance(value, str):
                    raise UsageError(f"profile {name}: {field.name} must be a string")
                updates[field.name] = value
        if explicit_db and "server" in updates:
            updates.pop("server")  # an explicit --db means local mode, whatever the profile says
        if explicit_server and "db" in updates:
            updates.pop("db")
        if updates.get("db") and updates.get("server"):
            raise UsageError(
                f"profile {name} sets both db and server; remove one "
                f"('sowctl config unset db --profile {name}')"
            )
        if "timeout" in updates:
            try:
                updates["timeout"] = float(updates["timeout"])
            except (TypeError, ValueError):
                raise UsageError(f"profile {name}: timeout must be a number") from None
        if updates.get("timeout", self.timeout) is None:
            updates["timeout"] = DEFAULT_TIMEOUT
        return replace(self, profile=name, **updates)

    def check(self) -> Settings:
        from sowctl.foundation.errors import UsageError

        if self.db and self.server:
            raise UsageError("--db and --server cannot be used together (local or remote mode?)")
        if self.timeout is not None and not self.timeout > 0:
            raise UsageError(f"--timeout must be a positive number of seconds, not {self.timeout:g}")
        if self.server:
            check_server_url(self.server)
        elif self.db:
            from sowctl.storage.database import refuse_throwaway

            refuse_throwaway(self.db)
        updates: dict[str, Any] = {}  # cleaned credentials, by field name
        for name, option, env in CREDENTIALS:
            value = getattr(self, name)
            if value is None:
                continue
            # Local mode sends no credentials: an unusable one there is only stripped (and
            # reported as unused by the backend), never a reason to refuse the command.
            updates[name] = clean_credential(value, option, env) if self.server else value.strip()
        return replace(self, **updates)


# Credentials sent in HTTP headers: (setting, option, environment variable).
CREDENTIALS = (("token", "--token", "SOWCTL_TOKEN"), ("api_key", "--api-key", "SOWCTL_API_KEY"))


def clean_credential(value: str, option: str, env: str) -> str:
    """A token or key as a header can carry it, or a usage error that never shows the value.

    Surrounding whitespace (the CR of a CRLF secrets file, a pasted newline) is dropped,
    as reading it from stdin does; anything else outside printable ASCII would make the
    HTTP client fail with an error quoting the whole header, secret included.
    """
    from sowctl.foundation.errors import UsageError

    cleaned = value.strip()
    if not cleaned:
        raise UsageError(f"{option} (or {env}) is empty")
    if any(not (0x21 <= ord(char) <= 0x7E) for char in cleaned):
        raise UsageError(
            f"{option} (or {env}) contains a space, control or non-ASCII character; "
            "check the value (it is not shown here)"
        )
    return cleaned


def check_server_url(url: str) -> None:
    """``--server`` must be an http(s) URL with a host; say so before any request is made."""
    from urllib.parse import urlsplit

    from sowctl.foundation.errors import UsageError, quoted

    shown = quoted(url)  # the error printer makes it terminal-safe
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise UsageError(f"--server {shown} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--server must be an http:// or https:// URL with a host, not {shown}")
