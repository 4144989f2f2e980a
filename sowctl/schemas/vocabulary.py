"""The service's value sets and the ranges of its stored values, defined once for requests,
responses and datasets. What one request or file may hold (counts, depths) is in
``sowctl.foundation.budgets``."""

from __future__ import annotations

from typing import Literal, get_args

ItemType = Literal["requirement", "task_item"]
ItemStatus = Literal["pending", "in_progress", "completed", "cancelled"]
DependencyType = Literal["depends_on", "blocks", "related_to", "prerequisite", "successor"]
RiskLevel = Literal["low", "medium", "high", "critical"]
DependencyStatus = Literal["active", "resolved", "cancelled", "blocked"]
DependencyKind = Literal["critical", "overdue", "external"]  # the list filter's "type"
ProjectStatus = Literal["active", "on_hold", "completed", "archived"]
Role = Literal["viewer", "member", "admin"]  # of a bearer token
ChainFormat = Literal["flat", "tree"]  # a chain body: dependencies listed, or items nested
RunMode = Literal["local", "remote"]  # where the CLI runs an operation
FindingState = Literal["new", "baseline", "accepted", "expired"]  # a CI gate finding's
# The spec shows draft and issued as examples only; these are the statuses accepted
# (the usual purchase-order life cycle). Anything else is a 400 naming the choices.
PurchaseOrderStatus = Literal[
    "draft",
    "pending",
    "processing",
    "submitted",
    "issued",
    "approved",
    "partially_received",
    "received",
    "closed",
    "void",
]

ITEM_TYPES: tuple[str, ...] = get_args(ItemType)
ITEM_STATUSES: tuple[str, ...] = get_args(ItemStatus)
DEPENDENCY_TYPES: tuple[str, ...] = get_args(DependencyType)
RISK_LEVELS: tuple[str, ...] = get_args(RiskLevel)
DEPENDENCY_STATUSES: tuple[str, ...] = get_args(DependencyStatus)
DEPENDENCY_KINDS: tuple[str, ...] = get_args(DependencyKind)
PROJECT_STATUSES: tuple[str, ...] = get_args(ProjectStatus)
PO_STATUSES: tuple[str, ...] = get_args(PurchaseOrderStatus)
ROLES: tuple[str, ...] = get_args(Role)
CHAIN_FORMATS: tuple[str, ...] = get_args(ChainFormat)
FINDING_STATES: tuple[str, ...] = get_args(FindingState)

MAX_ORDER_INDEX = 2**31 - 1  # orderIndex is a 32-bit integer column
MAX_BIGINT = 2**63 - 1  # the integer id columns are 64-bit
