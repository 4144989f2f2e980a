"""``serve --demo``: the demo dataset in an empty database, and credentials to try it with."""

from __future__ import annotations

from dataclasses import dataclass

from sowctl.foundation import clock
from sowctl.foundation.errors import UsageError
from sowctl.services import credentials, demo_data
from sowctl.storage import models as m


@dataclass(frozen=True)
class DemoAccess:
    token: str
    api_key: str
    loaded: bool  # whether the dataset was loaded now (False: it was already there)


def ensure_demo() -> DemoAccess:
    """Load the demo dataset into an empty database (a database holding the demo
    organization keeps its data) and issue a fresh admin token and API key for it.

    A database holding other data is refused: the demo never mixes into real data.
    """
    loaded = False
    if not m.Organization.select().exists():
        from sowctl.services.dataset import import_dataset

        import_dataset(demo_data.demo_dataset(clock.today()))
        loaded = True
    elif m.Organization.get_or_none(m.Organization.id == demo_data.DEMO_ORG) is None:
        raise UsageError(
            f"--demo: the database already holds data and no demo organization {demo_data.DEMO_ORG}; "
            "use an empty database (e.g. --db demo.db) for the demo"
        )
    token = credentials.create_token(demo_data.DEMO_USER, demo_data.DEMO_ORG, "admin").secret
    key = credentials.create_key(demo_data.DEMO_ORG).secret
    return DemoAccess(token, key, loaded)
