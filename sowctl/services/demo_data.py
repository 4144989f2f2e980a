"""A realistic, deterministic demo dataset in the import/export format.

``sowctl serve --demo`` loads it into an empty database, and the tests and docs use
it as a known fixture. The data is ``sowctl/data/demo.json``, written for the day
``ANCHOR``; ``demo_dataset(today)`` moves every date in it by ``today - ANCHOR``, so
"overdue" and "upcoming" stay meaningful whenever the demo is run, and the same day
always gives the same dataset.

What it shows:

* org-acme (Acme Build) holds most of the data: three projects with varied
  statuses, two SOWs, a nested item hierarchy, internal dependencies of all five
  types, external vendor dependencies (one critical, one overdue, one blocked,
  some resolved or cancelled) and the Group B financial data of company
  comp-acme-llc. Requirements carry their calculated statuses.
* org-globex holds a little data of each kind, so that a token or API key of one
  organization can be shown not to see the other's records.

Only the standard library is imported, so the importer, the server and the tests
may all use it.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
from importlib import resources
from typing import Any

DEMO_ORG = "org-acme"
DEMO_COMPANY = "comp-acme-llc"
DEMO_USER = "user-ada"
DEMO_SOW = "sow-tower-a-ph1"
DEMO_PROJECT_ID = 101  # the Group B (financial) project id of Tower A

# Not required by callers, but handy for docs and tests: the one dependency that
# `type=critical` returns and the one that `type=overdue` returns.
DEMO_CRITICAL_DEPENDENCY = "dep-009"
DEMO_OVERDUE_DEPENDENCY = "dep-010"

GLOBEX_ORG = "org-globex"
GLOBEX_COMPANY = "comp-globex-inc"
GLOBEX_SOW = "sow-globex-dc-ph1"

# Fixed uuids, generated once with uuid5(NS, name) where
# NS = uuid5(NAMESPACE_URL, "https://sowctl.example/demo"). They are written out
# literally so that docs and scripts can rely on them never changing.
CLIENT_NORTHWIND = "4a5b124e-2527-5646-a784-909bece0092e"
CLIENT_HARBOR_HEALTH = "5b148a0e-1763-5c2a-8bec-6fb74f46a8e2"
CLIENT_INITECH = "3b44cefd-b5ca-53d7-932d-882c0166b474"

CONTACT_NORTHWIND_MARIA = "2055ca1c-1387-5b5b-8dc3-f165e3c94906"
CONTACT_NORTHWIND_JONAS = "d4d9ee8f-8f13-5df0-bb4f-11be5a47e9ed"
CONTACT_NORTHWIND_PRIYA = "91c7d751-bc71-5b8c-9f56-d7c2919c4dd9"
CONTACT_HARBOR_SAMUEL = "e93a85ea-3ba1-56f9-a2b0-8abc66f344a5"
CONTACT_HARBOR_LENA = "0f355758-9913-5916-bf75-d3de54039056"
CONTACT_INITECH_PETER = "c50df109-09ce-5c33-8a4d-0f74f102b605"

PROJECT_TOWER_A = "abbe5264-4eb1-5dfa-b9a9-8c1bb5169ea4"
PROJECT_HARBOR_CLINIC = "e392fd4d-432d-50d2-a491-d0fb66bb8303"
PROJECT_RIVERSIDE_GARAGE = "113021a6-3fe4-542e-96a1-b15a46f76efd"
PROJECT_GLOBEX_DC = "ecec7c05-5dfa-5ccc-ad58-b192ec098cc9"

# The day the JSON file was written for, and the fields that hold dates or timestamps
# (every one of them moves with the day the demo is loaded).
ANCHOR = datetime.date(2026, 1, 1)
DATE_FIELDS = frozenset(
    {
        "createdAt",
        "updatedAt",
        "pinnedAt",
        "startDate",
        "endDate",
        "slaDate",
        "escalationDate",
        "created_at",
        "updated_at",
        "contract_date",
        "start_date",
        "estimated_completion_date",
    }
)


@functools.cache
def _stored() -> dict[str, Any]:
    return json.loads(resources.files("sowctl").joinpath("data/demo.json").read_text(encoding="utf-8"))


def demo_dataset(today: datetime.date) -> dict[str, Any]:
    """The demo dataset (the import/export format) with dates relative to ``today``.

    Deterministic: the same ``today`` always yields an equal dict. A fresh dict is
    returned on every call, so callers may change it freely.
    """
    data = copy.deepcopy(_stored())
    _move_dates(data, today - ANCHOR)
    return data


def _move_dates(value: Any, delta: datetime.timedelta) -> None:
    """Move every date and timestamp in ``value`` (nested dicts and lists) by ``delta``."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, item in node.items():
                if key in DATE_FIELDS and isinstance(item, str):
                    day = datetime.date.fromisoformat(item[:10]) + delta
                    node[key] = day.isoformat() + item[10:]
                elif isinstance(item, dict | list):
                    stack.append(item)
