"""The TOML config file: named profiles of connection settings.

Read with tomllib, written atomically with tomli-w (temp file, fsync, rename)
and created with mode 0600, since profiles may hold tokens and API keys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, overload

PROFILE_KEYS = ("server", "token", "api_key", "org", "company", "db", "timeout")
SECRET_KEYS = ("token", "api_key")


def default_sqlite_path() -> Path:
    """``sowctl.db`` in the per-user app dir: the database when neither --db nor --server is set."""
    return app_dir() / "sowctl.db"


def app_dir() -> Path:
    from typer import get_app_dir

    return Path(get_app_dir("sowctl"))


def config_path() -> Path:
    """``config.toml`` in the app dir; ``SOWCTL_CONFIG`` points elsewhere (tests, CI)."""
    override = os.environ.get("SOWCTL_CONFIG")
    return Path(override) if override else app_dir() / "config.toml"


def load(path: Path | None = None) -> dict[str, Any]:
    import tomllib  # imported when used: every command imports this module at start-up

    from sowctl.foundation.errors import InvalidInput

    path = path or config_path()
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"config file {path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib's parser recurses; memory stays flat until it stops
        raise InvalidInput(f"config file {path}: arrays or tables nest too deep to be read") from None
    except OSError as exc:  # a directory, no permission...
        raise InvalidInput(f"cannot read config file {path}: {exc.strerror or exc}") from None
    if not isinstance(data.get("profiles", {}), dict):
        raise InvalidInput(f"config file {path}: 'profiles' must be a table")
    return data


def save(data: dict[str, Any], path: Path | None = None) -> Path:
    import tempfile

    import tomli_w

    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            tomli_w.dump(data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def active_profile_name(data: dict[str, Any], requested: str | None) -> str:
    return requested or data.get("current") or "default"


def profile(data: dict[str, Any], name: str) -> dict[str, Any]:
    values = data.get("profiles", {}).get(name, {})
    if not isinstance(values, dict):
        from sowctl.foundation.errors import InvalidInput

        raise InvalidInput(f"config file {config_path()}: profile {name!r} must be a table")
    return dict(values)


@overload
def mask_url(url: str) -> str: ...
@overload
def mask_url(url: None) -> None: ...
def mask_url(url: str | None) -> str | None:
    """A server or database URL with its password and query values (if any) replaced by ***:
    a query may carry a key or a password (``?api_key=``, ``?sslpassword=``)."""
    if not url or "://" not in url:
        return url
    from urllib.parse import urlsplit, urlunsplit

    url, question, query = url.partition("?")
    if question:
        query, hash_mark, fragment = query.partition("#")
        masked = "&".join(f"{field.partition('=')[0]}=***" for field in query.split("&") if field)
        query = f"?{masked}{hash_mark}{fragment}"
    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        url = urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    return url + query
