"""Import checks of the items (hierarchy, on compact facts) and dependencies (batch by batch)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from sys import intern
from typing import Any, NamedTuple

import peewee as pw

from sowctl.foundation.budgets import MAX_HIERARCHY_DEPTH
from sowctl.schemas import dataset as s
from sowctl.schemas.vocabulary import MAX_ORDER_INDEX
from sowctl.services import dependency_rules as rules
from sowctl.services.dataset.columns import _getter, _stamp
from sowctl.services.dataset.import_state import ImportState
from sowctl.services.dataset.problems import _Problems
from sowctl.services.dataset.validation import validated_batches
from sowctl.services.dataset.writer import BATCH_ROWS
from sowctl.services.graph import ordering_edge  # the one rule for before/after
from sowctl.services.item_rules import depth_problem, parents_first
from sowctl.services.items import item_level
from sowctl.storage import models as m
from sowctl.storage.peewee_compat import tuples


class _ItemFact(NamedTuple):
    """What the checks need of an item (a few words, not the record): (SOW key, type) first,
    as the database's items are known by."""

    sow_id: str
    type: str
    id: str
    parent_item_id: str | None


class _OrderIndexes:
    """A missing orderIndex: one more than the largest among earlier siblings, in the file
    and in the database (read the first time an item lacks one).

    Siblings are known by their parent's id (the string the facts hold: no copy, no tuple
    per level), top-level items by ``(SOW key,)``: kept for every level of a big file."""

    def __init__(self, checks: ItemChecks) -> None:
        self.checks = checks
        self.highest: dict[str | tuple[str], int] = {}  # level -> largest orderIndex so far
        self.database_read = False

    def fill(self, i: int, r: s.ItemRecord, parent_id: str | None) -> None:
        level = parent_id if parent_id is not None else (r.sow_id,)
        highest = self.highest
        if r.order_index is None:
            if not self.database_read:
                self.database_read = True
                for (sow, parent), value in self.checks._highest_order_indexes().items():
                    key = parent if parent is not None else (sow,)
                    highest[key] = max(value, highest.get(key, value))
            r.order_index = highest[level] + 1 if level in highest else 0
            if r.order_index > MAX_ORDER_INDEX:
                message = f"must be given: a sibling already has the largest one ({MAX_ORDER_INDEX})"
                self.checks.problems.add("items", i, r.id, "orderIndex", message)
        highest[level] = max(r.order_index, highest.get(level, r.order_index))


class ItemChecks(ImportState):
    """The items and dependencies part of the importer's checks (mixed into ``importer._Importer``)."""

    def _items(
        self,
        sow_org: dict[str, str | None],
        sow_keys: dict[str, list[str]],
        sow_key_of: dict[tuple[str, str], str],
    ) -> dict[str, tuple[str, str] | _ItemFact]:
        """One pass that writes every row it can as it reads (parents first, as a file in
        tree order has them), keeping compact facts for the hierarchy checks that follow;
        a second pass only for the items that came before their parent.

        Each item's ``sowId`` is replaced by its SOW's key first (what the row stores). A row
        is written only when the database will take it (its id new, its SOW known, its parent
        written); whatever the checks refuse after is rolled back with the rest.
        """
        kind = "items"
        facts: list[_ItemFact] = []
        first: dict[str, int] = {}  # id -> index of its first record
        sow_problems = _Problems()  # reported after the problems with ids, as they always were
        unplaced: set[int] = set()
        db_items = self.db_items
        order_indexes = _OrderIndexes(self)
        getter = _getter(kind)
        placed = bytearray()  # per fact: 1 once its row is written (a byte, not a set of ids)
        later: dict[str, int | None] = {}  # id of an item that waits for its parent -> its orderIndex
        rows: list[tuple] = []
        for offset, batch in validated_batches(kind, self.source, self.invalid):
            _stamp(batch, self.now, "created_at", "updated_at")
            for i, r in enumerate(batch, start=offset):
                org = r.organization_id
                if org is None:
                    keys = sow_keys.get(r.sow_id, [])
                else:
                    keys = [key] if (key := sow_key_of.get((org, r.sow_id))) is not None else []
                # A parent named earlier in the file: its id's string, not a copy of it.
                parent_id = r.parent_item_id
                earlier = None if parent_id is None else first.get(parent_id)
                if earlier is not None:
                    parent_id = facts[earlier].id
                # (Not ``i``: after a batch refused as invalid, the facts are fewer than the records.)
                n = len(facts)
                new = first.setdefault(r.id, n) == n and r.id not in db_items
                item_type = intern(r.type)
                if len(keys) == 1:
                    facts.append(_ItemFact(keys[0], item_type, r.id, parent_id))
                else:
                    facts.append(_ItemFact(r.sow_id, item_type, r.id, parent_id))
                    unplaced.add(i)
                    new = False
                    sow_problems.add(
                        kind, i, r.id, "sowId", _sow_problem(r.sow_id, org, ambiguous=bool(keys))
                    )
                placed.append(0)
                r.sow_id = facts[n].sow_id
                order_indexes.fill(i, r, parent_id)
                if not new:
                    continue  # refused below (a repeated id, an unknown SOW): never written
                if parent_id is None or (earlier is not None and placed[earlier]) or parent_id in db_items:
                    rows.append(getter(r))
                    placed[n] = 1
                else:
                    later[r.id] = r.order_index
            if len(rows) >= BATCH_ROWS:
                self._table(kind, rows)
                rows = []
                self.insert()
        self._table(kind, rows)
        self.insert()
        self.counted[kind] = len(facts)
        self.item_sows.update(fact.sow_id for fact in facts)
        del first
        if self.invalid.total:
            return dict(db_items)  # the records themselves are refused: nothing more to check
        self._check_hierarchy(facts, sow_problems, unplaced)
        if later and not self.problems.total:
            written = {fact.id for fact, done in zip(facts, placed, strict=True) if done}
            self._write_later_items(facts, later, written)
        return {**db_items, **{fact.id: fact for fact in facts}}

    def _check_hierarchy(self, facts: list[_ItemFact], sow_problems: _Problems, unplaced: set[int]) -> None:
        """Ids, SOWs, parents and depths of the file's items (``unplaced``: no SOW found)."""
        kind = "items"
        position = self._unique(kind, "item", facts, self.db_items)
        self.problems.absorb(sow_problems)
        self._check_parents(facts, position, unplaced)
        for i, level in self._levels(facts, position):
            problem = depth_problem(level - 1)
            if problem is not None:
                self.problems.add(kind, i, facts[i].id, "parentItemId", problem)
        self._parents_first(facts, position)

    def _check_parents(self, facts: list[_ItemFact], position: dict[str, int], unplaced: set[int]) -> None:
        db_items, add = self.db_items, self.problems.add
        for i, r in enumerate(facts):
            if i in unplaced:
                continue  # its parent's SOW cannot be compared: one problem is enough
            parent_id = r.parent_item_id
            if parent_id is None:
                continue
            if parent_id == r.id:
                add("items", i, r.id, "parentItemId", "an item cannot be its own parent")
                continue
            if parent_id in position:
                parent = facts[position[parent_id]]
                parent_sow, parent_type = parent.sow_id, parent.type
            elif parent_id in db_items:
                parent_sow, parent_type = db_items[parent_id]
            else:
                self._missing("items", i, r.id, "parentItemId", "item", parent_id)
                continue
            if parent_sow != r.sow_id:
                message = f"parent item {parent_id} is in SOW {parent_sow}, not {r.sow_id}"
                add("items", i, r.id, "parentItemId", message)
            elif parent_type == "task_item" and r.type == "requirement":
                message = f"a task item cannot contain a requirement ({parent_id} is a task_item)"
                add("items", i, r.id, "parentItemId", message)

    def _write_later_items(
        self, facts: list[_ItemFact], later: dict[str, int | None], placed: set[str]
    ) -> None:
        """The items that came before their parent, read again: each goes in right after its
        parent (the order ``_parents_first`` gives), with the orderIndex the first pass gave it."""
        getter = _getter("items")
        waiting: dict[str, list] = defaultdict(list)
        rows: list[tuple] = []
        again = validated_batches("items", self.source, _Problems(), storable_checked=True)  # reported
        for offset, batch in again:
            batch = [(i, r) for i, r in enumerate(batch, start=offset) if r.id in later]
            _stamp([r for _, r in batch], self.now, "created_at", "updated_at")
            for i, r in batch:
                r.sow_id = facts[i].sow_id
                r.order_index = later.pop(r.id)
                parent_id = r.parent_item_id
                if parent_id not in placed:
                    waiting[parent_id].append(r)
                    continue
                stack = [r]
                while stack:
                    record = stack.pop()
                    rows.append(getter(record))
                    placed.add(record.id)
                    stack.extend(reversed(waiting.pop(record.id, ())))
            if len(rows) >= BATCH_ROWS:
                self._table("items", rows)
                rows = []
                self.insert()
        self._table("items", rows)
        self.insert()

    def _highest_order_indexes(self) -> dict[tuple[str, str | None], int]:
        """(SOW key, parent) -> the largest orderIndex among the database's items."""
        if self.database_empty:
            return {}
        top = pw.fn.MAX(m.Item.order_index)
        query = m.Item.select(m.Item.sow, m.Item.parent, top).group_by(m.Item.sow, m.Item.parent)
        return {(sow, parent): value for sow, parent, value in tuples(query)}

    def _levels(self, records: Sequence[_ItemFact], position: dict[str, int]) -> Iterator[tuple[int, int]]:
        """Level (1: top level) of each record that has one, up through the file's items and
        then the database's. Items on a parent loop have none (``_parents_first`` reports
        the loop); a missing parent counts as none (reported already)."""
        known: dict[str, int] = {}
        for i, r in enumerate(records):
            if position.get(r.id) != i:
                continue  # a repeated or already stored id: reported already
            chain: list[str] = []
            on_chain: set[str] = set()
            node: str | None = r.id
            # Past the limit the exact level no longer matters: stop there (bounded work).
            while node in position and node not in known and node not in on_chain:
                if len(chain) > MAX_HIERARCHY_DEPTH:
                    break
                chain.append(node)
                on_chain.add(node)
                node = records[position[node]].parent_item_id
            if node in on_chain:
                continue
            if node in known:
                base = known[node]
            elif len(chain) > MAX_HIERARCHY_DEPTH:
                base = 0
            elif node is not None and node in self.db_items:
                base = known[node] = item_level(node)
            else:
                base = 0
            for k, item_id in enumerate(reversed(chain), start=1):
                known[item_id] = base + k
            yield i, known[r.id]

    def _parents_first(self, records: Sequence[_ItemFact], position: dict[str, int]) -> None:
        """Reports the parent loops: the items that never get their turn, parents first."""
        order = parents_first([r.id for r in records], [r.parent_item_id for r in records], position)
        if len(order) < len(records):
            stuck = sorted(set(range(len(records))).difference(order))
            self._report_parent_loops(records, position, stuck)

    def _report_parent_loops(
        self, records: Sequence[_ItemFact], position: dict[str, int], stuck: list[int]
    ) -> None:
        explained: set[str] = set()  # items on or below a loop already walked
        for i in stuck:
            chain: list[str] = []
            seen: dict[str, int] = {}
            node: str | None = records[i].id
            while node in position and node not in seen and node not in explained:
                seen[node] = len(chain)
                chain.append(node)
                node = records[position[node]].parent_item_id
            if node in seen:
                loop = chain[seen[node] :]
                start = loop.index(min(loop, key=position.__getitem__))
                loop = loop[start:] + loop[:start]
                message = "circular parent chain: " + " -> ".join([*loop, loop[0]])
                self.problems.add("items", position[loop[0]], loop[0], "parentItemId", message)
            explained.update(chain)

    def _dependencies(
        self, item_info: dict[str, tuple[str, str] | _ItemFact], sow_org: dict[str, str | None]
    ) -> None:
        """Checked and inserted batch by batch: the biggest kind, and one no other kind refers to."""
        kind = "dependencies"
        existing = self._load(m.Dependency.id)
        seen: dict[str, int] = {}  # id -> index, for "duplicate id (also dependencies[i])"
        # As for every kind: the problems with ids first, then the others.
        ids, others = _Problems(), _Problems()
        add = others.add
        getter = _getter(kind)
        dep = m.Dependency
        extra = (dep.sow, dep.before_item_id, dep.after_item_id, dep.organization_id)
        ordered: set[str | None] = set()
        for offset, records in validated_batches(kind, self.source, self.invalid):
            self.counted[kind] = self.counted.get(kind, 0) + len(records)
            rows = []
            _stamp(records, self.now, "created_at")  # updatedAt stays null: never updated
            for i, r in enumerate(records, start=offset):
                if r.id in seen:
                    ids.add(kind, i, r.id, "id", f"duplicate id (also {kind}[{seen[r.id]}])")
                elif r.id in existing:
                    ids.add(kind, i, r.id, "id", f"dependency {r.id} already exists in the database")
                else:
                    seen[r.id] = i
                source = item_info.get(r.source_item_id)
                if source is None:
                    add(kind, i, r.id, "sourceItemId", f"item {r.source_item_id} not found")
                target_id = r.target_item_id
                # The API's rules for the shape (dependency_rules), so an import refuses what it refuses.
                r.is_external = rules.is_external(r.is_external, target_id, r.external_target)
                shape = rules.shape_problems(r.is_external, r.source_item_id, target_id, r.external_target)
                for field, message in shape:
                    add(kind, i, r.id, field, message)
                if not shape and not r.is_external:
                    self._check_target(others, i, r, source, item_info, sow_org)
                edge = ordering_edge(r.dependency_type, r.source_item_id, target_id, r.status, r.is_external)
                before, after = edge if edge is not None else (None, None)
                sow = source[0] if source else None
                if before is not None:
                    ordered.add(sow_org.get(sow) if sow is not None else None)
                rows.append((*getter(r), sow, before, after, sow_org.get(sow) if sow is not None else None))
            self._table(kind, rows, extra=extra)
            del records, rows
            if ids.total or others.total:
                self.tables = []  # refused: rows no longer needed
            self.insert()
        self.problems.absorb(ids)
        self.problems.absorb(others)
        self.ordered_organizations = {org for org in ordered if org is not None}

    def _check_target(
        self,
        problems: _Problems,
        i: int,
        r: Any,
        source: Any,
        item_info: dict,
        sow_org: dict[str, str | None],
    ) -> None:
        """An internal dependency's target exists and is in the source item's organization."""
        target_id = r.target_item_id
        if target_id not in item_info:
            problems.add("dependencies", i, r.id, "targetItemId", f"item {target_id} not found")
        elif source is not None and _differ(sow_org.get(source[0]), sow_org.get(item_info[target_id][0])):
            message = f"item {target_id} belongs to another organization than item {r.source_item_id}"
            problems.add("dependencies", i, r.id, "targetItemId", message)


def _differ(first: str | None, second: str | None) -> bool:
    """Two known organizations that differ (an unknown one is reported where it is named)."""
    return first is not None and second is not None and first != second


def _sow_problem(sow_id: str, organization_id: str | None, *, ambiguous: bool) -> str:
    """Why an item's ``sowId`` names no one SOW."""
    if ambiguous:
        return (
            f"SOW {sow_id} is ambiguous: several organizations have a SOW of that id "
            "(say which with organizationId)"
        )
    if organization_id is not None:
        return f"SOW {sow_id} not found in organization {organization_id}"
    return f"SOW {sow_id} not found"
