"""One sandbox's state: its records emptied, checkpointed and restored, its faults kept, and
nothing of any other organization touched (``services.sandboxes``).

Checkpoints of a sandbox copy its organization's rows (``organization_rows``) into tables of
their own, ``CREATE TABLE ... AS SELECT ... WHERE``, so no row travels through Python, as the
server's own checkpoints do. Their list is one ``Meta`` row per sandbox,
``sandbox-checkpoints:<organization>`` (``{name: {"slot", "schema", "createdAt", "records",
"faults"}}``); a copy's table is ``sowctl_sbx_<digest>_<slot>_<table>``, where the digest is
the organization's, so a name never reaches SQL and two sandboxes' checkpoints of the same
name never meet.

A sandbox's faults are one entry of the ``Meta`` row ``sandbox-faults`` (``{organization:
fault config JSON}``), which the test double reads with its other run-time settings.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import peewee as pw
from pydantic import ValidationError

from sowctl.foundation.budgets import MAX_SANDBOX_CHECKPOINTS
from sowctl.foundation.errors import Forbidden, InvalidInput, Issue, NotFound
from sowctl.schemas.admin import CheckpointOut, FaultConfigOut
from sowctl.services.dataset import import_dataset
from sowctl.services.dataset.columns import COLUMNS
from sowctl.services.graph import mark_ranks_stale
from sowctl.services.organization_rows import RECORD_TABLES, rows_of
from sowctl.storage import models as m
from sowctl.storage import sandbox_models
from sowctl.storage import webhook_models as w
from sowctl.storage.database import SCHEMA_VERSION, write_transaction
from sowctl.storage.peewee_compat import primary_key, tuples

FAULTS_KEY = "sandbox-faults"
CHECKPOINTS_PREFIX = "sandbox-checkpoints:"
# What a sandbox's checkpoint holds beyond its records: its credentials as they were (a token
# issued after the save is gone after a restore, as with the server's checkpoints).
CREDENTIAL_TABLES: list[type[m.BaseModel]] = [m.RateCounter, m.ApiToken, m.ApiKey]
# Children before parents: the order rows can be deleted in (reversed: inserted in).
CHECKPOINT_TABLES: list[type[m.BaseModel]] = [*CREDENTIAL_TABLES, *RECORD_TABLES, m.User]


# What a sandbox's reset empties besides its credentials: records, request log, events, and
# its webhook subscriptions with their delivery logs (as a reset of the whole server does).
_EMPTIED: list[type[m.BaseModel]] = [
    *RECORD_TABLES,
    m.RequestLog,
    m.Event,
    w.WebhookRedelivery,
    w.WebhookDelivery,
    w.WebhookSubscription,
]


def _sql(statement: str, params: tuple | list = ()) -> None:
    m.database_proxy.obj.execute_sql(statement, params)


def _delete(model: type[m.BaseModel], organization_id: str) -> None:
    model.delete().where(rows_of(model, organization_id)).execute()


def sandbox_user(organization_id: str) -> str:
    """The user of the bearer token a sandbox is made with."""
    return f"{organization_id}-ci"


def empty_organization(organization_id: str, keep_credentials: bool) -> None:
    """Delete the organization's records, request log, events, users and credentials; with
    ``keep_credentials`` the sandbox's own user, its tokens and the API keys stay (the CI job
    keeps working), and a dataset's users, with the tokens issued to them, go."""
    with write_transaction(f"org:{organization_id}"):
        _delete(m.RateCounter, organization_id)
        tokens, users = rows_of(m.ApiToken, organization_id), rows_of(m.User, organization_id)
        if keep_credentials:
            own = sandbox_user(organization_id)
            tokens, users = tokens & (m.ApiToken.user != own), users & (m.User.id != own)
        else:
            _delete(m.ApiKey, organization_id)
        m.ApiToken.delete().where(tokens).execute()
        for model in _EMPTIED:
            _delete(model, organization_id)
        m.User.delete().where(users).execute()


# --- faults ------------------------------------------------------------------------------------


def all_faults() -> dict[str, FaultConfigOut]:
    """Each sandbox's fault config, by organization; an entry that is not one is left out
    (it costs only its own sandbox its faults, as the test double reads them)."""
    row = m.Meta.get_or_none(m.Meta.key == FAULTS_KEY)
    value = json.loads(row.value) if row is not None else {}
    found: dict[str, FaultConfigOut] = {}
    for organization_id, config in value.items() if isinstance(value, dict) else ():
        try:
            found[organization_id] = FaultConfigOut.model_validate(config)
        except ValidationError:
            continue
    return found


def set_faults(organization_id: str, config: FaultConfigOut | None) -> None:
    """The sandbox's fault config (None: none)."""
    with write_transaction("sandbox-faults"):
        faults = all_faults()
        if config is None:
            faults.pop(organization_id, None)
        else:
            faults[organization_id] = config
        stored = {organization: entry.model_dump() for organization, entry in faults.items()}
        text = json.dumps(stored, separators=(",", ":"))
        m.Meta.insert(key=FAULTS_KEY, value=text).on_conflict(
            conflict_target=[m.Meta.key], update={m.Meta.value: text}
        ).execute()


def forget_faults(organization_id: str) -> None:
    if organization_id in all_faults():
        set_faults(organization_id, None)


def take_fault(organization_id: str) -> bool:
    """Use up one failure of the sandbox's ``count``-limited config; False when none is left."""
    with write_transaction("sandbox-faults"):
        config = all_faults().get(organization_id)
        if config is None or config.count is None:
            return True
        if config.count <= 0:
            return False
        set_faults(organization_id, config.model_copy(update={"count": config.count - 1}))
    return True


# --- checkpoints -------------------------------------------------------------------------------


def _entries(organization_id: str) -> dict[str, dict[str, Any]]:
    row = m.Meta.get_or_none(m.Meta.key == CHECKPOINTS_PREFIX + organization_id)
    return json.loads(row.value) if row is not None else {}


def _store(organization_id: str, entries: dict[str, dict[str, Any]]) -> None:
    key = CHECKPOINTS_PREFIX + organization_id
    if not entries:
        m.Meta.delete().where(m.Meta.key == key).execute()
        return
    text = json.dumps(entries, separators=(",", ":"))
    m.Meta.insert(key=key, value=text).on_conflict(
        conflict_target=[m.Meta.key], update={m.Meta.value: text}
    ).execute()


def _copy_name(organization_id: str, slot: int, model: type[m.BaseModel]) -> str:
    digest = hashlib.sha256(organization_id.encode("utf-8")).hexdigest()[:12]
    return f"sowctl_sbx_{digest}_{slot}_{model._meta.table_name}"


def _columns(model: type[m.BaseModel]) -> str:
    return ", ".join(f'"{field.column_name}"' for field in model._meta.sorted_fields)


def list_checkpoints(organization_id: str) -> list[CheckpointOut]:
    return [
        CheckpointOut(name=name, createdAt=entry["createdAt"], records=entry["records"])
        for name, entry in sorted(_entries(organization_id).items())
    ]


def save_checkpoint(organization_id: str, name: str) -> CheckpointOut:
    """Copy the organization's records and credentials under ``name`` (replacing one of that name)."""
    with write_transaction(f"org:{organization_id}"):
        entries = _entries(organization_id)
        if name in entries:
            _drop(organization_id, entries.pop(name)["slot"])
        elif len(entries) >= MAX_SANDBOX_CHECKPOINTS:
            raise Forbidden(
                f"a sandbox keeps at most {MAX_SANDBOX_CHECKPOINTS} checkpoints: delete one first"
            )
        used = {entry["slot"] for entry in entries.values()}
        slot = next(n for n in range(1, len(used) + 2) if n not in used)
        records = 0
        for model in CHECKPOINT_TABLES:
            copy = _copy_name(organization_id, slot, model)
            select_sql, params = (
                model.select(*model._meta.sorted_fields).where(rows_of(model, organization_id)).sql()
            )
            _sql(f'DROP TABLE IF EXISTS "{copy}"')
            _sql(f'CREATE TABLE "{copy}" AS {select_sql}', params)
            if model in RECORD_TABLES:
                records += model.select().where(rows_of(model, organization_id)).count()
        created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        faults = all_faults().get(organization_id)
        entries[name] = {"slot": slot, "schema": SCHEMA_VERSION, "createdAt": created, "records": records}
        entries[name]["faults"] = None if faults is None else faults.model_dump()
        _store(organization_id, entries)
    return CheckpointOut(name=name, createdAt=created, records=records)


def restore_checkpoint(organization_id: str, name: str) -> CheckpointOut:
    """The organization's records and credentials as saved under ``name``, all or nothing; its
    request log and events are emptied (they told of the state this replaces). The answer
    leaves ``createdAt`` unset: it says what was restored, not when it was saved."""
    entry = _entry(organization_id, name)
    if entry.get("schema") != SCHEMA_VERSION:
        raise InvalidInput.for_field(
            "name", f"checkpoint {name} was saved by another sowctl version: save it again"
        )
    with write_transaction(f"org:{organization_id}"):
        _taken_ids_check(organization_id, entry["slot"], name)
        empty_organization(organization_id, keep_credentials=False)
        for model in reversed(CHECKPOINT_TABLES):
            columns = _columns(model)
            copy = _copy_name(organization_id, entry["slot"], model)
            _sql(f'INSERT INTO "{model._meta.table_name}" ({columns}) SELECT {columns} FROM "{copy}"')
        saved_faults = entry.get("faults")
        set_faults(
            organization_id, None if saved_faults is None else FaultConfigOut.model_validate(saved_faults)
        )
        # The ranks came back with the edges, but the mark that says whether they are to be
        # trusted is the server's, not the checkpoint's: the next edge computes them again.
        mark_ranks_stale([organization_id])
    return CheckpointOut(name=name, records=entry["records"])


def _taken_ids_check(organization_id: str, slot: int, name: str) -> None:
    """Ids other than a SOW's are the server's, not an organization's: a restore must not bring
    back an id another organization took since the save (SQLite hands out a freed id again)."""
    for model in CHECKPOINT_TABLES:
        key = model._meta.primary_key
        if not isinstance(key, pw.Field) or isinstance(key, pw.CompositeKey):
            continue
        copy = pw.Table(_copy_name(organization_id, slot, model))
        saved = copy.select(pw.Column(copy, key.column_name))
        clash = model.select(key).where(key.in_(saved) & ~rows_of(model, organization_id)).limit(1)
        found = clash.scalar()
        if found is not None:
            raise InvalidInput.for_field(
                "name",
                f"checkpoint {name} cannot be restored: {model._meta.table_name} id {found} "
                "now belongs to another organization",
            )


def delete_checkpoint(organization_id: str, name: str) -> None:
    with write_transaction(f"org:{organization_id}"):
        entries = _entries(organization_id)
        entry = _entry(organization_id, name)
        _drop(organization_id, entry["slot"])
        del entries[name]
        _store(organization_id, entries)


def orphaned_checkpoints(limit: int) -> list[str]:
    """Organizations whose sandbox checkpoints outlived the sandbox (a server reset or restore
    removed it): up to ``limit``."""
    live = sandbox_models.Sandbox.select(sandbox_models.Sandbox.organization)
    keys = m.Meta.select(m.Meta.key).where(m.Meta.key.startswith(CHECKPOINTS_PREFIX))
    found = [key[len(CHECKPOINTS_PREFIX) :] for (key,) in tuples(keys.limit(limit * 10))]
    alive = (
        {org for (org,) in tuples(live.where(sandbox_models.Sandbox.organization.in_(found)))}
        if found
        else set()
    )
    return [org for org in found if org not in alive][:limit]


def drop_checkpoints(organization_id: str) -> None:
    """Every checkpoint of the sandbox, copies and list."""
    for entry in _entries(organization_id).values():
        _drop(organization_id, entry["slot"])
    _store(organization_id, {})


def _entry(organization_id: str, name: str) -> dict[str, Any]:
    entry = _entries(organization_id).get(name)
    if entry is None:
        raise NotFound(f"checkpoint {name} not found")
    return entry


def _drop(organization_id: str, slot: int) -> None:
    for model in CHECKPOINT_TABLES:
        _sql(f'DROP TABLE IF EXISTS "{_copy_name(organization_id, slot, model)}"')


# --- datasets ----------------------------------------------------------------------------------


def load_dataset(organization_id: str, data: dict[str, Any], replace: bool) -> dict[str, int]:
    """Import ``data`` into the sandbox's organization only, all or nothing; with ``replace``
    its records go first, in the same transaction (its own credentials stay)."""
    data = _without_own_organization(organization_id, data)
    with write_transaction(f"org:{organization_id}"):
        _ids_taken_elsewhere(organization_id, data)
        if replace:
            empty_organization(organization_id, keep_credentials=True)
        return import_dataset(data, scope=organization_id)


def _without_own_organization(organization_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """The dataset without its ``organizations`` (the sandbox's exists; no other may be made)."""
    records = data.get("organizations") or []
    if not isinstance(records, list):
        return data  # the importer says what is wrong with it
    for index, record in enumerate(records):
        shown = record.get("id") if isinstance(record, dict) else None
        if shown != organization_id:
            message = f"a sandbox loads into its organization {organization_id} and cannot make another"
            raise Forbidden(
                f"organizations[{index}] (id {shown}): {message}",
                [Issue(("organizations", index, "id"), message)],
            )
    return {key: value for key, value in data.items() if key != "organizations"}


def _ids_taken_elsewhere(organization_id: str, data: dict[str, Any]) -> None:
    """Refuse, naming the record, an id another organization's record has: ids other than a
    SOW's are the server's (the importer, seeing only the sandbox, would not know)."""
    for kind, path, model, ids in _record_ids(data):
        key = primary_key(model)
        for start in range(0, len(ids), _ID_BATCH):
            batch = ids[start : start + _ID_BATCH]
            found = (
                model.select(key)
                .where(key.in_([value for _, value in batch]) & ~rows_of(model, organization_id))
                .limit(1)
                .scalar()
            )
            if found is not None:
                where = next(place for place, value in batch if str(value) == str(found))
                message = f"{kind} id {found} is taken by another organization on this server"
                raise InvalidInput(
                    f"{where} (id {found}): id: {message}", [Issue((*path(where), "id"), message)]
                )


_ID_BATCH = 500
# Records held inside others, whose ids are the server's too: (field, id key, table) by kind.
_NESTED: dict[str, tuple[tuple[str, str, type[m.BaseModel]], ...]] = {
    "clients": (("contacts", "id", m.Contact),),
    "purchaseOrders": (("line_items", "id", m.PurchaseOrderLine),),
}


def _record_ids(data: dict[str, Any]) -> list[tuple[str, Any, type[m.BaseModel], list[tuple[str, Any]]]]:
    """(kind, where -> issue path, table, [(where, id)]) of each kind whose ids are the server's."""
    found = []
    for kind, (model, _) in COLUMNS.items():
        records = data.get(kind)
        key = model._meta.primary_key
        if (
            model in (m.Sow, m.SnapshotLineItem)
            or not isinstance(records, list)
            or not isinstance(key, pw.Field)
        ):
            continue  # a SOW's id is its organization's; a line's repeats across snapshots
        ids = [
            (f"{kind}[{i}]", r["id"])
            for i, r in enumerate(records)
            if isinstance(r, dict) and _is_id(r.get("id"))
        ]
        found.append((kind, _issue_path, model, ids))
        for nested, key_name, table in _NESTED.get(kind, ()):
            inner = [
                (f"{kind}[{i}].{nested}[{j}]", c[key_name])
                for i, r in enumerate(records)
                if isinstance(r, dict) and isinstance(r.get(nested), list)
                for j, c in enumerate(r[nested])
                if isinstance(c, dict) and _is_id(c.get(key_name))
            ]
            found.append((nested, _issue_path, table, inner))
    return found


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _issue_path(where: str) -> tuple[Any, ...]:
    """``clients[3].contacts[0]`` -> ("clients", 3, "contacts", 0)."""
    parts: list[Any] = []
    for piece in where.split("."):
        name, _, index = piece.partition("[")
        parts += [name, int(index.rstrip("]"))]
    return tuple(parts)
