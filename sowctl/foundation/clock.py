"""Time and id generation, in one place so they can be made deterministic.

Every timestamp and generated id in the core comes from here. ``serve --seed``
and ``/_admin/clock`` swap these sources for reproducible ones.
"""

from __future__ import annotations

import random
import secrets
import uuid
from datetime import UTC, date, datetime

TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_fixed_now: datetime | None = None
_rng: random.Random | None = None


def now() -> datetime:
    """Current UTC time as a naive datetime (the storage convention), to the second."""
    if _fixed_now is not None:
        return _fixed_now
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def is_fixed() -> bool:
    """Whether the clock is frozen (``serve --clock``, ``/_admin/clock``, tests)."""
    return _fixed_now is not None


def today() -> date:
    return now().date()


def set_fixed_now(moment: datetime | None) -> None:
    """Freeze the clock at ``moment`` (naive UTC), or unfreeze it with None."""
    global _fixed_now
    _fixed_now = moment.replace(microsecond=0) if moment is not None else None


def seed(value: int | None) -> None:
    """Make generated ids and secrets reproducible (None restores real randomness)."""
    global _rng
    _rng = random.Random(value) if value is not None else None


def new_id() -> str:
    """A new opaque resource id (a UUID string)."""
    if _rng is not None:
        return str(uuid.UUID(int=_rng.getrandbits(128), version=4))
    return str(uuid.uuid4())


def new_secret(prefix: str) -> str:
    """A new bearer token or API key: ``prefix`` plus 256 random bits, URL-safe."""
    if _rng is not None:
        return prefix + _rng.getrandbits(256).to_bytes(32, "big").hex()
    return prefix + secrets.token_urlsafe(32)


def format_timestamp(moment: datetime | str | None) -> str | None:
    """The API's form of a stored moment: a naive UTC datetime, an aware one, or the text
    SQLite keeps (``YYYY-MM-DD HH:MM:SS``, maybe with ``.ffffff``), which a page of items
    re-punctuates instead of parsing 200 times."""
    # The text first, in as few steps as can tell it (200 per page of items).
    if (
        type(moment) is str
        and moment[10:11] == " "
        and (len(moment) == 19 or (len(moment) == 26 and moment[19] == "."))
    ):
        return moment[:10] + "T" + moment[11:19] + "Z"
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    # isoformat: what TIMESTAMP_FORMAT describes, five times faster than strftime, and with
    # the four-digit year ISO 8601 wants before year 1000.
    return moment.isoformat(timespec="seconds") + "Z"


def parse_clock(text: object, field: str) -> datetime:
    """The time to freeze the clock at (``serve --clock``, ``replay --clock``,
    ``/_admin/clock``); InvalidInput naming ``field`` when ``text`` is not a timestamp."""
    from sowctl.foundation.errors import InvalidInput, quoted

    if not isinstance(text, str):
        raise InvalidInput.for_field(field, "must be a timestamp string such as 2026-01-01T00:00:00Z")
    try:
        return parse_timestamp(text)
    except ValueError:
        raise InvalidInput.for_field(
            field, f"{quoted(text)} is not a timestamp such as 2026-01-01T00:00:00Z"
        ) from None


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO 8601 timestamp to naive UTC; raises ValueError when malformed."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.replace(microsecond=0)
