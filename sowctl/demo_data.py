"""A realistic, deterministic demo dataset in the import/export format (contract §9).

`sowctl serve --demo` loads it into an empty database, and the tests and docs use
it as a known fixture. Everything is derived from the `today` argument, so the
same day always gives the same dataset, while "overdue" and "upcoming" dates stay
meaningful whenever the demo is run.

What it shows:

* org-acme (Acme Build) holds most of the data: three projects with varied
  statuses, two SOWs, a nested item hierarchy, internal dependencies of all five
  types, external vendor dependencies (one critical, one overdue, one blocked,
  some resolved or cancelled) and the Group B financial data of company
  comp-acme-llc.
* org-globex holds a little data of each kind, so that a token or API key of one
  organization can be shown not to see the other's records.

This module deliberately imports nothing from the rest of sowctl (only the
standard library), so it can be used by the importer, the server and the tests
without import cycles.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

from sowctl.services.item_rules import calculated_statuses

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


# --------------------------------------------------------------------------- helpers


def _ts(today: datetime.date, days_ago: int, hour: int = 9, minute: int = 0) -> str:
    """A UTC timestamp `days_ago` days before `today`, in the contract's exact shape.

    Callers always pass days_ago >= 1 so that no timestamp lies in the future,
    whatever the time of day the demo is loaded.
    """
    day = today - datetime.timedelta(days=days_ago)
    return f"{day.isoformat()}T{hour:02d}:{minute:02d}:00Z"


def _day_ts(today: datetime.date, offset_days: int) -> str:
    """Midnight UTC of today + offset (may be in the future: planned dates)."""
    day = today + datetime.timedelta(days=offset_days)
    return f"{day.isoformat()}T00:00:00Z"


def _date(today: datetime.date, offset_days: int) -> str:
    """A calendar date (YYYY-MM-DD) relative to today; negative means in the past."""
    return (today + datetime.timedelta(days=offset_days)).isoformat()


def _money(value: str) -> float:
    """Decimal-looking JSON number for Group B number fields (snapshots, prime contracts).

    Values are written as strings in the tables below and converted here, so a
    value like "1200.50" survives as the float 1200.5 whose repr is exact enough
    for Decimal(str(x)) to give back the intended cents.
    """
    return float(Decimal(value))


# --------------------------------------------------------------------------- Group A/C


def _organizations() -> list[dict[str, Any]]:
    return [
        {"id": DEMO_ORG, "name": "Acme Build"},
        {"id": GLOBEX_ORG, "name": "Globex Construction"},
    ]


def _users() -> list[dict[str, Any]]:
    rows = [
        ("user-ada", DEMO_ORG, "Ada Lovelace", "ada@acme-build.example"),
        ("user-grace", DEMO_ORG, "Grace Hopper", "grace@acme-build.example"),
        ("user-alan", DEMO_ORG, "Alan Turing", "alan@acme-build.example"),
        ("user-hank", GLOBEX_ORG, "Hank Scorpio", "hank@globex.example"),
        ("user-frank", GLOBEX_ORG, "Frank Grimes", "frank@globex.example"),
    ]
    return [
        {"id": uid, "organizationId": org, "name": name, "email": email} for uid, org, name, email in rows
    ]


def _clients(today: datetime.date) -> list[dict[str, Any]]:
    def contact(
        cid: str,
        client_id: str,
        name: str,
        email: str,
        phone: str,
        role: str,
        primary: bool,
        days_ago: int,
    ) -> dict[str, Any]:
        return {
            "id": cid,
            "clientId": client_id,
            "name": name,
            "email": email,
            "phone": phone,
            "role": role,
            "isPrimary": primary,
            "createdAt": _ts(today, days_ago, 10),
            "updatedAt": _ts(today, days_ago, 10),
        }

    return [
        {
            "id": CLIENT_NORTHWIND,
            "organizationId": DEMO_ORG,
            "name": "Northwind Properties",
            "description": "Commercial real-estate developer; owner of the Tower A office block.",
            "website": "https://northwind-properties.example",
            "industry": "Real Estate",
            # Pinned so the demo shows a pinned client at the top of listings.
            "isPinned": True,
            "pinnedAt": _ts(today, 30, 14, 5),
            "createdAt": _ts(today, 400, 9),
            "updatedAt": _ts(today, 30, 14, 5),
            "contacts": [
                contact(
                    CONTACT_NORTHWIND_MARIA,
                    CLIENT_NORTHWIND,
                    "Maria Chen",
                    "maria.chen@northwind-properties.example",
                    "+1-555-0101",
                    "Development Director",
                    True,
                    400,
                ),
                contact(
                    CONTACT_NORTHWIND_JONAS,
                    CLIENT_NORTHWIND,
                    "Jonas Berg",
                    "jonas.berg@northwind-properties.example",
                    "+1-555-0102",
                    "Owner's Representative",
                    False,
                    380,
                ),
                contact(
                    CONTACT_NORTHWIND_PRIYA,
                    CLIENT_NORTHWIND,
                    "Priya Nair",
                    "priya.nair@northwind-properties.example",
                    "+1-555-0103",
                    "Accounts Payable",
                    False,
                    200,
                ),
            ],
        },
        {
            "id": CLIENT_HARBOR_HEALTH,
            "organizationId": DEMO_ORG,
            "name": "Harbor Health Partners",
            "description": "Regional outpatient clinic operator.",
            "website": "https://harborhealth.example",
            "industry": "Healthcare",
            "isPinned": False,
            "pinnedAt": None,
            "createdAt": _ts(today, 260, 11),
            "updatedAt": _ts(today, 90, 16),
            "contacts": [
                contact(
                    CONTACT_HARBOR_SAMUEL,
                    CLIENT_HARBOR_HEALTH,
                    "Samuel Okafor",
                    "s.okafor@harborhealth.example",
                    "+1-555-0201",
                    "Facilities Manager",
                    True,
                    260,
                ),
                contact(
                    CONTACT_HARBOR_LENA,
                    CLIENT_HARBOR_HEALTH,
                    "Lena Novak",
                    "l.novak@harborhealth.example",
                    "+1-555-0202",
                    "Procurement Lead",
                    False,
                    250,
                ),
            ],
        },
        {
            "id": CLIENT_INITECH,
            "organizationId": GLOBEX_ORG,
            "name": "Initech Hosting",
            "description": "Colocation provider retrofitting its primary data center.",
            "website": "https://initech-hosting.example",
            "industry": "Data Centers",
            "isPinned": False,
            "pinnedAt": None,
            "createdAt": _ts(today, 150, 8),
            "updatedAt": _ts(today, 150, 8),
            "contacts": [
                contact(
                    CONTACT_INITECH_PETER,
                    CLIENT_INITECH,
                    "Peter Gibbons",
                    "peter.gibbons@initech-hosting.example",
                    "+1-555-0301",
                    "Operations Manager",
                    True,
                    150,
                ),
            ],
        },
    ]


def _projects(today: datetime.date) -> list[dict[str, Any]]:
    return [
        {
            "id": PROJECT_TOWER_A,
            "organizationId": DEMO_ORG,
            "name": "Tower A Office Block",
            "description": "Ten-storey steel-frame office tower with curtain-wall facade.",
            "status": "active",
            "clientId": CLIENT_NORTHWIND,
            "contactId": CONTACT_NORTHWIND_MARIA,
            "startDate": _day_ts(today, -120),
            "endDate": _day_ts(today, 420),
            "ownerUserId": "user-ada",
            "isPinned": True,
            "pinnedAt": _ts(today, 20, 8, 30),
            "createdAt": _ts(today, 150, 9),
            "updatedAt": _ts(today, 20, 8, 30),
        },
        {
            "id": PROJECT_HARBOR_CLINIC,
            "organizationId": DEMO_ORG,
            "name": "Harbor Clinic Fit-out",
            "description": "Interior fit-out of a two-floor outpatient clinic; paused for permits.",
            "status": "on_hold",
            "clientId": CLIENT_HARBOR_HEALTH,
            "contactId": CONTACT_HARBOR_SAMUEL,
            "startDate": _day_ts(today, -200),
            "endDate": None,
            "ownerUserId": "user-grace",
            "isPinned": False,
            "pinnedAt": None,
            "createdAt": _ts(today, 230, 13),
            "updatedAt": _ts(today, 60, 17),
        },
        {
            "id": PROJECT_RIVERSIDE_GARAGE,
            "organizationId": DEMO_ORG,
            "name": "Riverside Parking Garage",
            "description": "Four-level precast parking structure, handed over last quarter.",
            "status": "completed",
            "clientId": CLIENT_NORTHWIND,
            "contactId": CONTACT_NORTHWIND_JONAS,
            "startDate": _day_ts(today, -540),
            "endDate": _day_ts(today, -45),
            "ownerUserId": "user-alan",
            "isPinned": False,
            "pinnedAt": None,
            "createdAt": _ts(today, 560, 9),
            "updatedAt": _ts(today, 45, 15),
        },
        {
            "id": PROJECT_GLOBEX_DC,
            "organizationId": GLOBEX_ORG,
            "name": "Data Center Power Retrofit",
            "description": "UPS, switchgear and generator upgrade in a live data hall.",
            "status": "active",
            "clientId": CLIENT_INITECH,
            "contactId": CONTACT_INITECH_PETER,
            "startDate": _day_ts(today, -90),
            "endDate": _day_ts(today, 270),
            "ownerUserId": "user-hank",
            "isPinned": False,
            "pinnedAt": None,
            "createdAt": _ts(today, 100, 9),
            "updatedAt": _ts(today, 100, 9),
        },
    ]


def _sows() -> list[dict[str, Any]]:
    return [
        {"id": DEMO_SOW, "projectId": PROJECT_TOWER_A, "title": "Tower A Phase 1: Structure and Envelope"},
        {
            "id": "sow-harbor-fitout",
            "projectId": PROJECT_HARBOR_CLINIC,
            "title": "Harbor Clinic Interior Fit-out",
        },
        {"id": GLOBEX_SOW, "projectId": PROJECT_GLOBEX_DC, "title": "Data Center Retrofit Phase 1: Power"},
    ]


# Item table: (id, sowId, parentItemId, type, title, description, status, created_days_ago,
# createdByUserId). Parents come before their children so an importer can insert in
# file order. Requirement statuses here are only the stored default; the calculated
# value replaces them below. Siblings are listed in their intended order, and
# orderIndex is numbered 0..n-1 per sibling level from that order.
_R, _T = "requirement", "task_item"
_ITEMS: list[tuple[str, str, str | None, str, str, str, str, int, str]] = [
    # --- sow-tower-a-ph1 (org-acme): the main demo SOW
    (
        "item-001",
        DEMO_SOW,
        None,
        _R,
        "Foundations and substructure",
        "Piles, pile caps and the basement box.",
        "pending",
        110,
        "user-ada",
    ),
    (
        "item-002",
        DEMO_SOW,
        "item-001",
        _T,
        "Pour pile caps",
        "Form, reinforce and pour the 24 pile caps; 28-day cube tests.",
        "completed",
        110,
        "user-ada",
    ),
    (
        "item-003",
        DEMO_SOW,
        "item-001",
        _T,
        "Waterproof basement walls",
        "Apply and inspect the bentonite membrane to the retaining walls.",
        "completed",
        108,
        "user-grace",
    ),
    (
        "item-004",
        DEMO_SOW,
        None,
        _R,
        "Structural frame",
        "Steel frame and composite floors, levels 1-10.",
        "pending",
        105,
        "user-ada",
    ),
    (
        "item-005",
        DEMO_SOW,
        "item-004",
        _R,
        "Steel erection",
        "Erection of the steel frame in two tiers.",
        "pending",
        105,
        "user-ada",
    ),
    (
        "item-006",
        DEMO_SOW,
        "item-005",
        _T,
        "Approve steel shop drawings",
        "Engineer of record reviews and stamps the fabricator's shop drawings.",
        "completed",
        104,
        "user-grace",
    ),
    (
        "item-007",
        DEMO_SOW,
        "item-005",
        _T,
        "Erect levels 1-5 steel",
        "First erection tier, including temporary bracing.",
        "in_progress",
        100,
        "user-ada",
    ),
    (
        "item-008",
        DEMO_SOW,
        "item-007",
        _T,
        "Bolt-up and torque inspection L1-L3",
        "Third-party inspection of high-strength bolted connections.",
        "completed",
        95,
        "user-alan",
    ),
    (
        "item-009",
        DEMO_SOW,
        "item-007",
        _T,
        "Bolt-up and torque inspection L4-L5",
        "Third-party inspection of high-strength bolted connections.",
        "pending",
        95,
        "user-alan",
    ),
    (
        "item-010",
        DEMO_SOW,
        "item-005",
        _T,
        "Erect levels 6-10 steel",
        "Second erection tier; starts once the first tier is signed off.",
        "pending",
        100,
        "user-ada",
    ),
    (
        "item-011",
        DEMO_SOW,
        "item-004",
        _T,
        "Pour composite floor decks",
        "Metal deck, shear studs and concrete topping on all levels.",
        "pending",
        98,
        "user-grace",
    ),
    (
        "item-012",
        DEMO_SOW,
        None,
        _R,
        "Building envelope",
        "Curtain wall and roofing to make the building weather-tight.",
        "pending",
        90,
        "user-ada",
    ),
    (
        "item-013",
        DEMO_SOW,
        "item-012",
        _T,
        "Curtain wall mock-up test",
        "Air, water and structural test of the visual mock-up (ASTM E331).",
        "in_progress",
        90,
        "user-grace",
    ),
    (
        "item-014",
        DEMO_SOW,
        "item-012",
        _T,
        "Install curtain wall L1-L5",
        "Unitised panel installation on the lower five floors.",
        "pending",
        88,
        "user-grace",
    ),
    (
        "item-015",
        DEMO_SOW,
        "item-012",
        _T,
        "Install roof membrane",
        "Thermoplastic membrane roofing with tapered insulation.",
        "pending",
        85,
        "user-alan",
    ),
    (
        "item-016",
        DEMO_SOW,
        None,
        _R,
        "Site logistics",
        "Temporary works that support the structure phase.",
        "pending",
        80,
        "user-alan",
    ),
    (
        "item-017",
        DEMO_SOW,
        "item-016",
        _T,
        "Temporary personnel hoist",
        "Rack-and-pinion hoist; dropped after the tower crane plan changed.",
        "cancelled",
        80,
        "user-alan",
    ),
    # --- sow-harbor-fitout (org-acme, project on hold)
    (
        "item-018",
        "sow-harbor-fitout",
        None,
        _T,
        "Existing conditions survey",
        "Laser scan of both floors before demolition.",
        "completed",
        190,
        "user-grace",
    ),
    (
        "item-019",
        "sow-harbor-fitout",
        None,
        _R,
        "Interior fit-out",
        "Partitions, services and finishes for the clinic floors.",
        "pending",
        185,
        "user-grace",
    ),
    (
        "item-020",
        "sow-harbor-fitout",
        "item-019",
        _T,
        "MEP rough-in",
        "Mechanical, electrical and plumbing rough-in before walls close.",
        "in_progress",
        185,
        "user-grace",
    ),
    (
        "item-021",
        "sow-harbor-fitout",
        "item-019",
        _T,
        "Drywall partitions",
        "Framing, boarding and taping of all partitions.",
        "pending",
        185,
        "user-grace",
    ),
    # --- sow-globex-dc-ph1 (org-globex): a little data for isolation demos
    (
        "item-022",
        GLOBEX_SOW,
        None,
        _R,
        "Power upgrade",
        "Replace the UPS and add generator capacity without an outage.",
        "pending",
        85,
        "user-hank",
    ),
    (
        "item-023",
        GLOBEX_SOW,
        "item-022",
        _T,
        "Install UPS modules",
        "Two 500 kVA modular UPS frames in the electrical room.",
        "in_progress",
        85,
        "user-hank",
    ),
    (
        "item-024",
        GLOBEX_SOW,
        "item-022",
        _T,
        "Generator load-bank test",
        "Four-hour load-bank test at full rated load.",
        "pending",
        84,
        "user-frank",
    ),
    (
        "item-025",
        GLOBEX_SOW,
        None,
        _T,
        "Cooling capacity audit",
        "Check CRAH capacity against the new IT load.",
        "completed",
        80,
        "user-frank",
    ),
]


def _items(today: datetime.date) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    next_index: dict[tuple[str, str | None], int] = {}
    for item_id, sow_id, parent, kind, title, desc, status, days_ago, user in _ITEMS:
        level = (sow_id, parent)
        order_index = next_index.get(level, 0)
        next_index[level] = order_index + 1
        items.append(
            {
                "id": item_id,
                "sowId": sow_id,
                "title": title,
                "description": desc,
                "type": kind,
                "parentItemId": parent,
                "orderIndex": order_index,
                "status": status,
                "createdByUserId": user,
                "createdAt": _ts(today, days_ago, 9, 15),
                # Work in progress was touched recently; the rest when it was created.
                "updatedAt": _ts(today, 2 if status == "in_progress" else days_ago, 16, 40),
            }
        )

    # The demo stores the calculated status, so the dataset agrees with what the API shows.
    shown = calculated_statuses((i["id"], i["parentItemId"], i["type"], i["status"]) for i in items)
    for item in items:
        item["status"] = shown[item["id"]]
    return items


def _internal(
    today: datetime.date,
    dep_id: str,
    source: str,
    target: str,
    dep_type: str,
    risk: str,
    status: str,
    sla: int | None,
    notes: str,
    user: str,
    days_ago: int,
) -> dict[str, Any]:
    dep: dict[str, Any] = {
        "id": dep_id,
        "sourceItemId": source,
        "targetItemId": target,
        "dependencyType": dep_type,
        "riskLevel": risk,
        "status": status,
        "isExternal": False,
        "slaDate": _date(today, sla) if sla is not None else None,
        "notes": notes,
        "createdByUserId": user,
        "createdAt": _ts(today, days_ago, 11, 20),
    }
    if status != "active":
        # Only dependencies that were changed after creation carry updatedAt.
        dep["updatedAt"] = _ts(today, max(1, days_ago - 20), 15, 0)
    return dep


def _external(
    today: datetime.date,
    dep_id: str,
    source: str,
    dep_type: str,
    risk: str,
    status: str,
    target: str,
    owner: str,
    email: str,
    vendor: str,
    sla: int,
    escalation: int,
    notes: str,
    user: str,
    days_ago: int,
) -> dict[str, Any]:
    dep: dict[str, Any] = {
        "id": dep_id,
        "sourceItemId": source,
        "targetItemId": None,
        "dependencyType": dep_type,
        "riskLevel": risk,
        "status": status,
        "isExternal": True,
        "externalTarget": target,
        "externalOwner": owner,
        "contactEmail": email,
        "vendor": vendor,
        "slaDate": _date(today, sla),
        "escalationDate": _date(today, escalation),
        "notes": notes,
        "createdByUserId": user,
        "createdAt": _ts(today, days_ago, 11, 45),
    }
    if status != "active":
        dep["updatedAt"] = _ts(today, max(1, days_ago - 20), 15, 30)
    return dep


def _dependencies(today: datetime.date) -> list[dict[str, Any]]:
    # Ordering reminder (contract §7.2): depends_on/prerequisite/successor put the
    # target before the source, blocks puts the source before the target. Every
    # ordered edge below follows the real construction sequence, so the graph is
    # acyclic, cancelled edges included (reactivating them stays legal too).
    t = today
    return [
        # ---- sow-tower-a-ph1, internal: all five types
        _internal(
            t,
            "dep-001",
            "item-007",
            "item-006",
            "depends_on",
            "high",
            "resolved",
            -70,
            "Steel cannot be fabricated or erected before the shop drawings are stamped.",
            "user-ada",
            100,
        ),
        _internal(
            t,
            "dep-002",
            "item-011",
            "item-010",
            "prerequisite",
            "medium",
            "active",
            45,
            "Decks on the upper floors follow the second steel tier.",
            "user-grace",
            98,
        ),
        _internal(
            t,
            "dep-003",
            "item-002",
            "item-007",
            "blocks",
            "high",
            "resolved",
            -80,
            "Column base plates sit on the pile caps.",
            "user-ada",
            105,
        ),
        _internal(
            t,
            "dep-004",
            "item-014",
            "item-013",
            "successor",
            "high",
            "active",
            30,
            "Panel production is released only after the mock-up passes.",
            "user-grace",
            88,
        ),
        _internal(
            t,
            "dep-005",
            "item-015",
            "item-014",
            "related_to",
            "low",
            "active",
            None,
            "Roof and curtain wall share the parapet detail; coordinate flashing.",
            "user-alan",
            85,
        ),
        _internal(
            t,
            "dep-006",
            "item-010",
            "item-009",
            "depends_on",
            "medium",
            "active",
            14,
            "Upper tier erection waits for sign-off of the L4-L5 connections.",
            "user-ada",
            95,
        ),
        _internal(
            t,
            "dep-007",
            "item-003",
            "item-011",
            "blocks",
            "low",
            "resolved",
            -60,
            "Basement slab pour needs the waterproofing closed out.",
            "user-grace",
            98,
        ),
        _internal(
            t,
            "dep-008",
            "item-009",
            "item-008",
            "depends_on",
            "low",
            "cancelled",
            None,
            "Superseded: the inspector now covers L1-L5 in one visit.",
            "user-alan",
            95,
        ),
        # ---- sow-tower-a-ph1, external vendors
        _external(
            t,
            "dep-009",
            "item-014",
            "depends_on",
            "critical",
            "active",
            "Curtain wall panel delivery (batch 1)",
            "Tom Reyes",
            "t.reyes@skyline-glazing.example",
            "Skyline Glazing Systems",
            10,
            12,
            "Glass supplier allocation cut; no alternative supplier can meet the spec in time.",
            "user-grace",
            60,
        ),
        _external(
            t,
            "dep-010",
            "item-013",
            "prerequisite",
            "high",
            "active",
            "Facade mock-up test report",
            "Dr. Ines Walter",
            "ines.walter@coastal-testlabs.example",
            "Coastal Test Labs",
            -5,
            -2,
            "Report was promised for last week; chase the lab daily.",
            "user-grace",
            45,
        ),
        _external(
            t,
            "dep-011",
            "item-006",
            "depends_on",
            "medium",
            "resolved",
            "Steel fabricator shop drawing package",
            "Ravi Patel",
            "ravi.patel@keystone-steel.example",
            "Keystone Steel Fabricators",
            -75,
            -72,
            "Delivered and approved.",
            "user-ada",
            104,
        ),
        _external(
            t,
            "dep-012",
            "item-011",
            "depends_on",
            "medium",
            "blocked",
            "City building department: deck pour inspection permit",
            "Permit desk",
            "permits@city-building.example",
            "City Building Department",
            20,
            25,
            "Application on hold until the revised fire-rating letter is filed.",
            "user-ada",
            40,
        ),
        _external(
            t,
            "dep-013",
            "item-015",
            "depends_on",
            "low",
            "cancelled",
            "Original roofing membrane supplier",
            "Dana Kim",
            "dana.kim@roofco.example",
            "RoofCo Supply",
            -10,
            -7,
            "Supplier replaced; membrane now comes through the roofing subcontractor.",
            "user-alan",
            70,
        ),
        # ---- sow-harbor-fitout (project on hold)
        _internal(
            t,
            "dep-014",
            "item-021",
            "item-020",
            "depends_on",
            "medium",
            "active",
            60,
            "Walls close only after MEP rough-in is inspected.",
            "user-grace",
            185,
        ),
        _internal(
            t,
            "dep-015",
            "item-018",
            "item-020",
            "blocks",
            "low",
            "resolved",
            -150,
            "Rough-in layout comes from the survey model.",
            "user-grace",
            188,
        ),
        # ---- sow-globex-dc-ph1 (org-globex)
        _internal(
            t,
            "dep-016",
            "item-024",
            "item-023",
            "depends_on",
            "high",
            "active",
            21,
            "Load-bank test runs through the new UPS output boards.",
            "user-hank",
            84,
        ),
        _external(
            t,
            "dep-017",
            "item-023",
            "depends_on",
            "medium",
            "active",
            "Utility feeder upgrade",
            "Olga Ivanova",
            "o.ivanova@metro-power.example",
            "Metro Power and Light",
            35,
            40,
            "Second utility feeder must be live before UPS cut-over.",
            "user-hank",
            80,
        ),
    ]


# --------------------------------------------------------------------------- Group B


def _companies() -> list[dict[str, Any]]:
    return [
        {"id": DEMO_COMPANY, "organizationId": DEMO_ORG, "name": "Acme Build LLC"},
        {"id": GLOBEX_COMPANY, "organizationId": GLOBEX_ORG, "name": "Globex Construction Inc"},
    ]


def _financial_projects() -> list[dict[str, Any]]:
    return [
        {"id": DEMO_PROJECT_ID, "companyId": DEMO_COMPANY, "name": "Tower A", "projectId": PROJECT_TOWER_A},
        {
            "id": 102,
            "companyId": DEMO_COMPANY,
            "name": "Harbor Clinic Fit-out",
            "projectId": PROJECT_HARBOR_CLINIC,
        },
        {"id": 201, "companyId": GLOBEX_COMPANY, "name": "DC Power Retrofit", "projectId": PROJECT_GLOBEX_DC},
    ]


def _vendors() -> list[dict[str, Any]]:
    return [
        {"id": 7, "companyId": DEMO_COMPANY, "name": "Keystone Steel Fabricators"},
        {"id": 8, "companyId": DEMO_COMPANY, "name": "Skyline Glazing Systems"},
        {"id": 9, "companyId": DEMO_COMPANY, "name": "Bayside Concrete Co"},
        {"id": 10, "companyId": DEMO_COMPANY, "name": "Harborline Interiors"},
        {"id": 20, "companyId": GLOBEX_COMPANY, "name": "Metro Electrical Contractors"},
    ]


# Cost codes follow MasterFormat divisions, written "DD-NNN".
_COST_CODES: list[tuple[int, str, str, str]] = [
    (1, DEMO_COMPANY, "01-500", "Temporary Facilities and Controls"),
    (2, DEMO_COMPANY, "03-300", "Cast-in-Place Concrete"),
    (3, DEMO_COMPANY, "05-120", "Structural Steel"),
    (4, DEMO_COMPANY, "08-440", "Curtain Wall and Glazed Assemblies"),
    (5, DEMO_COMPANY, "07-540", "Thermoplastic Membrane Roofing"),
    (6, DEMO_COMPANY, "26-050", "Common Work Results for Electrical"),
    (7, DEMO_COMPANY, "09-210", "Gypsum Board Assemblies"),
    (8, DEMO_COMPANY, "23-050", "Common Work Results for HVAC"),
    (30, GLOBEX_COMPANY, "26-320", "Packaged Generator Assemblies"),
    (31, GLOBEX_COMPANY, "26-335", "Static Uninterruptible Power Supply"),
]


def _cost_codes() -> list[dict[str, Any]]:
    return [
        {"id": cid, "companyId": company, "full_code": code, "name": name}
        for cid, company, code, name in _COST_CODES
    ]


def _commitments() -> list[dict[str, Any]]:
    return [
        {"id": "5001", "project_id": DEMO_PROJECT_ID, "title": "Structural steel package", "vendor_id": 7},
        {"id": "5002", "project_id": DEMO_PROJECT_ID, "title": "Curtain wall package", "vendor_id": 8},
        {"id": "5003", "project_id": DEMO_PROJECT_ID, "title": "Foundations and concrete", "vendor_id": 9},
        {"id": "5004", "project_id": 102, "title": "Clinic interior fit-out subcontract", "vendor_id": 10},
        {"id": "6001", "project_id": 201, "title": "UPS and switchgear supply", "vendor_id": 20},
    ]


def _budget_views(today: datetime.date) -> list[dict[str, Any]]:
    rows = [
        (
            11,
            DEMO_PROJECT_ID,
            "Original vs. Current",
            "Original budget against the current approved budget, by cost code.",
            140,
            7,
        ),
        (
            12,
            DEMO_PROJECT_ID,
            "Monthly Forecast",
            "Projected cost to complete, refreshed at each month end.",
            120,
            3,
        ),
        (13, 102, "Fit-out Budget", "Budget tracking for the clinic fit-out.", 200, 60),
        (14, 201, "Retrofit Budget", "Budget tracking for the power retrofit.", 85, 10),
    ]
    return [
        {
            "id": vid,
            "project_id": pid,
            "name": name,
            "description": desc,
            "created_at": _ts(today, created, 8, 0),
            "updated_at": _ts(today, updated, 17, 30),
        }
        for vid, pid, name, desc, created, updated in rows
    ]


# Snapshot line items: (code, description, original, current, committed, spent, projected).
# Values are strings so the cents are exact; variance is derived, never typed in.
_SnapshotLine = tuple[str, str, str, str, str, str, str]
_SNAPSHOTS: list[tuple[int, int, int, str, str, int, list[_SnapshotLine]]] = [
    (
        21,
        11,
        DEMO_PROJECT_ID,
        "Month-end snapshot",
        "Original vs. current at month end.",
        7,
        [
            (
                "01-500",
                "Temporary facilities",
                "850000.00",
                "872500.50",
                "610000.00",
                "402315.75",
                "880120.25",
            ),
            (
                "03-300",
                "Foundations and concrete",
                "1450000.00",
                "1502340.25",
                "1498000.00",
                "1210450.10",
                "1495200.00",
            ),
            (
                "05-120",
                "Structural steel",
                "2310000.00",
                "2398750.75",
                "2375000.00",
                "1320600.40",
                "2425300.50",
            ),
            ("08-440", "Curtain wall", "1780000.00", "1780000.00", "1642300.00", "215400.00", "1769850.35"),
            ("07-540", "Roofing", "325000.00", "318200.60", "296500.00", "0.00", "311075.10"),
            ("26-050", "Electrical", "980000.00", "1004500.45", "712300.00", "188250.90", "1001200.00"),
        ],
    ),
    (
        22,
        12,
        DEMO_PROJECT_ID,
        "Forecast snapshot",
        "Cost-to-complete forecast.",
        3,
        [
            (
                "03-300",
                "Foundations and concrete",
                "1450000.00",
                "1502340.25",
                "1498000.00",
                "1265300.80",
                "1501999.99",
            ),
            (
                "05-120",
                "Structural steel",
                "2310000.00",
                "2398750.75",
                "2375000.00",
                "1401250.00",
                "2441800.20",
            ),
            ("08-440", "Curtain wall", "1780000.00", "1780000.00", "1642300.00", "254300.45", "1812500.00"),
            ("26-050", "Electrical", "980000.00", "1004500.45", "712300.00", "201900.10", "998750.30"),
            (
                "01-500",
                "Temporary facilities",
                "850000.00",
                "872500.50",
                "615500.00",
                "430120.60",
                "884300.00",
            ),
        ],
    ),
    (
        23,
        13,
        102,
        "Pre-suspension snapshot",
        "Taken when the fit-out was put on hold.",
        60,
        [
            ("01-500", "General conditions", "120000.00", "120000.00", "64000.00", "41250.35", "118400.00"),
            (
                "09-210",
                "Partitions and ceilings",
                "310000.00",
                "322450.80",
                "298000.00",
                "12400.00",
                "325100.60",
            ),
            ("23-050", "HVAC rough-in", "275000.00", "275000.00", "240150.25", "98020.75", "271300.25"),
            ("26-050", "Electrical rough-in", "198500.00", "205250.50", "187000.00", "76500.10", "209875.00"),
        ],
    ),
    (
        24,
        14,
        201,
        "Kick-off snapshot",
        "Baseline at contract award.",
        10,
        [
            ("26-335", "UPS modules", "940000.00", "962300.40", "955000.00", "310000.00", "960150.00"),
            ("26-320", "Generator upgrade", "720000.00", "720000.00", "0.00", "0.00", "735600.75"),
            (
                "26-335",
                "Switchgear modifications",
                "410000.00",
                "418750.25",
                "402500.00",
                "51200.50",
                "417900.00",
            ),
            ("26-320", "Load-bank testing", "38500.00", "38500.00", "0.00", "0.00", "38500.00"),
        ],
    ),
]


def _budget_view_snapshots(today: datetime.date) -> list[dict[str, Any]]:
    snapshots: list[dict[str, Any]] = []
    line_id = 1  # line item ids are unique across all snapshots
    for sid, view_id, project_id, name, desc, days_ago, lines in _SNAPSHOTS:
        line_items: list[dict[str, Any]] = []
        for code, ldesc, original, current, committed, spent, projected in lines:
            line_items.append(
                {
                    "id": line_id,
                    "code": code,
                    "description": ldesc,
                    "original_budget": _money(original),
                    "current_budget": _money(current),
                    "committed": _money(committed),
                    "spent": _money(spent),
                    "projected_total": _money(projected),
                    # Stored explicitly (contract §7.3 allows it); computed in Decimal so
                    # it is exactly current_budget - projected_total, cents included.
                    "variance": float(Decimal(current) - Decimal(projected)),
                }
            )
            line_id += 1
        is_globex = project_id == 201
        snapshots.append(
            {
                "id": sid,
                "budget_view_id": view_id,
                "project_id": project_id,
                "name": name,
                "description": desc,
                "created_at": _ts(today, days_ago, 18, 0),
                "created_by": (
                    {"id": 2, "name": "Hank Scorpio", "email": "hank@globex.example"}
                    if is_globex
                    else {"id": 1, "name": "Ada Lovelace", "email": "ada@acme-build.example"}
                ),
                "line_items": line_items,
            }
        )
    return snapshots


def _prime_contract(
    today: datetime.date,
    pc_id: int,
    project_id: int,
    title: str,
    desc: str,
    number: str,
    status: str,
    dates: tuple[int, int, int],
    original: str,
    executed: str,
    pending: str,
    customer: dict[str, Any],
    payment_terms: dict[str, Any],
) -> dict[str, Any]:
    contract_date, start, completion = dates
    return {
        "id": pc_id,
        "project_id": project_id,
        "title": title,
        "description": desc,
        "contract_number": number,
        "status": status,
        "contract_date": _day_ts(today, contract_date),
        "start_date": _day_ts(today, start),
        "estimated_completion_date": _day_ts(today, completion),
        "original_contract_value": _money(original),
        # Current value = original + executed change orders; pending ones do not count yet.
        "current_contract_value": float(Decimal(original) + Decimal(executed)),
        "executed_change_orders_value": _money(executed),
        "pending_change_orders_value": _money(pending),
        "customer": customer,
        "payment_terms": payment_terms,
    }


def _prime_contracts(today: datetime.date) -> list[dict[str, Any]]:
    monthly = {
        "type": "Progress Billing",
        "payment_schedule": "Monthly",
        "retention_percentage": 10.0,
        "days_until_due": 30,
    }
    return [
        _prime_contract(
            today,
            31,
            DEMO_PROJECT_ID,
            "Tower A Prime Contract",
            "Design-bid-build contract for Tower A structure, envelope and fit-out.",
            "PC-2024-031",
            "Active",
            (-135, -120, 420),
            "12450000.00",
            "312450.75",
            "84300.00",
            {
                "id": 501,
                "name": "Northwind Properties",
                "contact_name": "Maria Chen",
                "contact_email": "maria.chen@northwind-properties.example",
                "contact_phone": "+1-555-0101",
            },
            monthly,
        ),
        _prime_contract(
            today,
            32,
            102,
            "Harbor Clinic Fit-out Contract",
            "Lump-sum interior fit-out of the clinic floors.",
            "PC-2024-032",
            "Suspended",
            (-215, -200, 160),
            "903500.00",
            "12750.50",
            "0.00",
            {
                "id": 502,
                "name": "Harbor Health Partners",
                "contact_name": "Samuel Okafor",
                "contact_email": "s.okafor@harborhealth.example",
                "contact_phone": "+1-555-0201",
            },
            {
                "type": "Lump Sum",
                "payment_schedule": "Milestone",
                "retention_percentage": 5.0,
                "days_until_due": 45,
            },
        ),
        _prime_contract(
            today,
            41,
            201,
            "DC Power Retrofit Contract",
            "Guaranteed maximum price contract for the power retrofit.",
            "GX-PC-0041",
            "Active",
            (-95, -90, 270),
            "2108500.00",
            "22300.40",
            "15750.00",
            {
                "id": 601,
                "name": "Initech Hosting",
                "contact_name": "Peter Gibbons",
                "contact_email": "peter.gibbons@initech-hosting.example",
                "contact_phone": "+1-555-0301",
            },
            {
                "type": "Guaranteed Maximum Price",
                "payment_schedule": "Monthly",
                "retention_percentage": 7.5,
                "days_until_due": 30,
            },
        ),
    ]


def _purchase_orders() -> list[dict[str, Any]]:
    vendors = {v["id"]: v for v in _vendors()}
    cost_codes = {cid: (code, name) for cid, _company, code, name in _COST_CODES}
    # (id, number, status, title, project_id, commitment_id, vendor_id,
    #  [(description, amount, cost_code_id)])
    table: list[tuple[int, str, str, str, int, str, int, list[tuple[str, str, int]]]] = [
        (
            9001,
            "PO-101-0001",
            "issued",
            "Upper tier steel members",
            DEMO_PROJECT_ID,
            "5001",
            7,
            [
                ("Columns L6-L10, W14 sections", "48250.00", 3),
                ("Moment connection plates and bolts", "12875.50", 3),
                ("Shop drawing revision fees", "1500.00", 1),
            ],
        ),
        (
            9002,
            "PO-101-0002",
            "draft",
            "Curtain wall visual mock-up",
            DEMO_PROJECT_ID,
            "5002",
            8,
            [("Visual mock-up panels", "23400.25", 4), ("Mock-up water test rig", "3150.00", 4)],
        ),
    ]
    orders: list[dict[str, Any]] = []
    line_id = 1
    for po_id, number, status, title, project_id, commitment_id, vendor_id, lines in table:
        line_items: list[dict[str, Any]] = []
        total = Decimal("0.00")
        for desc, amount, cc_id in lines:
            code, name = cost_codes[cc_id]
            line_items.append(
                {
                    "id": line_id,
                    "description": desc,
                    "amount": amount,
                    "cost_code": {"id": cc_id, "full_code": code, "name": name},
                }
            )
            total += Decimal(amount)  # money is summed as Decimal, never float
            line_id += 1
        amount_str = str(total)
        orders.append(
            {
                "id": po_id,
                "number": number,
                "status": status,
                "title": title,
                "vendor": {"id": vendor_id, "name": vendors[vendor_id]["name"]},
                # A new order is not yet revised, so all three amounts equal the line sum.
                "original_amount": amount_str,
                "revised_amount": amount_str,
                "total_amount": amount_str,
                "line_items": line_items,
                "project_id": project_id,
                "commitment_id": commitment_id,
            }
        )
    return orders


# --------------------------------------------------------------------------- entry point


def demo_dataset(today: datetime.date) -> dict[str, Any]:
    """Return the demo dataset (contract §9 format) with dates relative to `today`.

    Deterministic: the same `today` always yields an equal dict. A fresh dict is
    built on every call, so callers may mutate the result freely.
    """
    return {
        "organizations": _organizations(),
        "users": _users(),
        "clients": _clients(today),
        "projects": _projects(today),
        "sows": _sows(),
        "items": _items(today),
        "dependencies": _dependencies(today),
        "companies": _companies(),
        "financialProjects": _financial_projects(),
        "vendors": _vendors(),
        "costCodes": _cost_codes(),
        "commitments": _commitments(),
        "budgetViews": _budget_views(today),
        "budgetViewSnapshots": _budget_view_snapshots(today),
        "primeContracts": _prime_contracts(today),
        "purchaseOrders": _purchase_orders(),
    }
