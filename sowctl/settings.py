"""Resolved global settings: option > environment > profile > default (contract §2).

Typer resolves option-over-environment itself (``envvar=``); what is still
unset here is filled from the selected profile of the config file.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from sowctl import config
from sowctl.errors import UsageError


@dataclass(frozen=True)
class Settings:
    db: str | None = None
    server: str | None = None
    token: str | None = None
    api_key: str | None = None
    org: str | None = None
    company: str | None = None
    profile: str | None = None
    timeout: float = 10.0

    @property
    def remote(self) -> bool:
        return bool(self.server)

    def with_profile(self) -> Settings:
        """Fill unset values from the profile (never overriding options or env)."""
        data = config.load()
        name = config.active_profile_name(data, self.profile)
        values = config.profile(data, name)
        if self.profile and self.profile not in data.get("profiles", {}):
            raise UsageError(f"profile {self.profile!r} is not in {config.config_path()}")
        updates = {}
        explicit_db, explicit_server = self.db is not None, self.server is not None
        for field in fields(self):
            if field.name in ("profile",) or getattr(self, field.name) not in (None, field.default):
                continue
            if field.name in values:
                updates[field.name] = values[field.name]
        if explicit_db and "server" in updates:
            updates.pop("server")  # an explicit --db means local mode, whatever the profile says
        if explicit_server and "db" in updates:
            updates.pop("db")
        if "timeout" in updates:
            try:
                updates["timeout"] = float(updates["timeout"])
            except (TypeError, ValueError):
                raise UsageError(f"profile {name}: timeout must be a number") from None
        return replace(self, profile=name, **updates)

    def check(self) -> Settings:
        if self.db and self.server:
            raise UsageError("--db and --server cannot be used together (local or remote mode?)")
        return self
