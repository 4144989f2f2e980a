#!/usr/bin/env python3
"""A plain CRUD peer for the write benchmark: FastAPI + SQLModel over sowctl's own tables.

    python bench/peer_crud.py --db DB_URL_OR_PATH --port 8001 --workers 2

What a team might write instead of sowctl for "create an item, create a dependency" on the
same database (``bench/bench_write_peer.py`` measures one against the other). It is written
only for that benchmark and never imported by sowctl. Per request it does:

* the bearer token: the SHA-256 of the secret looked up in ``api_token`` (not revoked), one
  SELECT, which gives the caller's user and organization;
* ``POST /api/sow/{sowId}/items``: the SOW's storage key by its public id within the
  caller's organization (one SELECT), then one INSERT into ``item`` with the NOT NULL
  columns (``order_index`` 0, ``status`` pending); 404 for a SOW of another organization;
* ``POST /api/dependencies``: both items with their SOW, within the caller's organization
  (one SELECT), then one INSERT into ``dependency`` (``sow_id`` is the source item's, as the
  column requires); 404 when either item is not the caller's;
* COMMIT, and the row as JSON (status 201).

No hierarchy rules, no sibling order, no cycle check, no ranks, no tallies, no events, no
advisory lock, no rate limit: the foreign keys are the database's (SQLite: ``foreign_keys``
on). SQLite connections get sowctl's pragmas (WAL, ``synchronous=normal``, the same busy
timeout), so both sides write with the same durability. Sessions keep their objects after
COMMIT (``expire_on_commit=False``): returning the row reads nothing back. Each worker keeps
up to 16 connections open (``POOL_SIZE``), so that no request opens one.

Run under uvicorn (default settings: its asyncio loop, httptools when installed), the
synchronous endpoints in FastAPI's thread pool. With ``SOWCTL_BENCH_COUNTS`` set (the
benchmark's ``cost.environment``), the statements SQLAlchemy sends are counted as
``bench/cost.py`` counts Peewee's.
"""

import argparse
import hashlib
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, Header, HTTPException
from pydantic import BaseModel, ConfigDict, NaiveDatetime
from pydantic.alias_generators import to_camel
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, create_engine, select

BENCH = Path(__file__).resolve().parent
DB_ENV = "PEER_CRUD_DB"
SQLITE_PRAGMAS = ("journal_mode=wal", "foreign_keys=1", "synchronous=normal", "cache_size=-32000")
# Kept connections per worker: wrk's 32 connections over 2 workers. More would outgrow a
# shared PostgreSQL's max_connections (100: 2 x 32 did, "too many clients already").
POOL_SIZE = 16
BUSY_TIMEOUT_MS = 5000  # sowctl's default lock timeout (SOWCTL_DB_LOCK_TIMEOUT, 5 s)


# --- sowctl's tables, the columns the inserts fill ------------------------------------------


class ApiToken(SQLModel, table=True):
    __tablename__ = "api_token"
    id: str = Field(primary_key=True)
    token_hash: str
    user_id: str
    organization_id: str
    revoked_at: NaiveDatetime | None = None


class Sow(SQLModel, table=True):
    __tablename__ = "sow"
    id: str = Field(primary_key=True)  # the storage key items refer to
    public_id: str
    organization_id: str


class Item(SQLModel, table=True):
    __tablename__ = "item"
    id: str = Field(primary_key=True)
    sow_id: str
    parent_id: str | None = None
    type: str
    title: str
    description: str | None = None
    order_index: int = 0
    status: str = "pending"
    created_by_user_id: str | None = None
    created_at: NaiveDatetime
    updated_at: NaiveDatetime


class Dependency(SQLModel, table=True):
    __tablename__ = "dependency"
    id: str = Field(primary_key=True)
    sow_id: str
    source_item_id: str
    target_item_id: str | None = None
    dependency_type: str
    risk_level: str
    status: str = "active"
    is_external: bool = False
    notes: str | None = None
    sla_date: date | None = None
    created_by_user_id: str | None = None
    created_at: NaiveDatetime
    organization_id: str | None = None


# --- request bodies --------------------------------------------------------------------------


class Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ItemIn(Body):
    title: str
    type: str
    description: str | None = None


class DependencyIn(Body):
    source_item_id: str
    target_item_id: str
    dependency_type: str
    risk_level: str
    notes: str | None = None


# --- the application ---------------------------------------------------------------------------


def make_engine(db: str) -> Engine:
    # A connection for every request a worker may run at once, kept: SQLAlchemy's default pool
    # (5, and 10 more closed after each use) opened and closed connections on every request
    # under the benchmark's 32 connections, a backend started each time on PostgreSQL.
    pool = {"pool_size": POOL_SIZE, "max_overflow": 0}
    if "://" not in db:
        db = "sqlite:///" + str(Path(db).resolve())
    if db.startswith("sqlite"):
        sqlite_args = {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}
        engine = create_engine(db, connect_args=sqlite_args, **pool)

        @event.listens_for(engine, "connect")
        def pragmas(connection, _record) -> None:
            cursor = connection.cursor()
            for pragma in SQLITE_PRAGMAS:
                cursor.execute("PRAGMA " + pragma)
            cursor.close()

        return engine
    # psycopg2, the driver sowctl uses (SQLAlchemy 2.1 would take psycopg 3 for postgresql://).
    scheme, _, rest = db.partition("://")
    driver = "postgresql+psycopg2" if scheme in ("postgres", "postgresql") else scheme
    return create_engine(f"{driver}://{rest}", **pool)


@dataclass(frozen=True)
class Caller:
    user_id: str
    organization_id: str


def now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)  # naive UTC, as sowctl stores times


def create_app() -> FastAPI:
    sys.path.insert(0, str(BENCH))
    import bench_servers
    import cost

    # uvicorn --workers leaves TCP_NODELAY off on its workers' sockets (bench_servers.py says
    # how it caps every server at ~620 req/s); set it as a fixed uvicorn would.
    bench_servers._nodelay_on_inherited_sockets()
    engine = make_engine(os.environ[DB_ENV])
    if os.environ.get(cost.COUNTS_ENV):
        cost.count_sqlalchemy(engine)
    app = FastAPI(title="plain CRUD peer", docs_url=None, redoc_url=None, openapi_url=None)

    def session() -> Iterator[Session]:
        with Session(engine, expire_on_commit=False) as opened:
            yield opened

    Db = Annotated[Session, Depends(session)]

    def caller(db: Db, authorization: Annotated[str, Header()] = "") -> Caller:
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() != "bearer" or not secret:
            raise HTTPException(401, "missing bearer token")
        digest = hashlib.sha256(secret.encode()).hexdigest()
        found = db.exec(
            select(ApiToken.user_id, ApiToken.organization_id).where(
                ApiToken.token_hash == digest, col(ApiToken.revoked_at).is_(None)
            )
        ).first()
        if found is None:
            raise HTTPException(401, "unknown token")
        return Caller(*found)

    Who = Annotated[Caller, Depends(caller)]

    @app.post("/api/sow/{sow_id}/items", status_code=201)
    def create_item(sow_id: str, body: ItemIn, db: Db, who: Who) -> Item:
        key = db.exec(
            select(Sow.id).where(Sow.public_id == sow_id, Sow.organization_id == who.organization_id)
        ).first()
        if key is None:
            raise HTTPException(404, f"SOW {sow_id} not found")
        moment = now()
        item = Item(
            id=str(uuid.uuid4()),
            sow_id=key,
            type=body.type,
            title=body.title,
            description=body.description,
            created_by_user_id=who.user_id,
            created_at=moment,
            updated_at=moment,
        )
        db.add(item)
        db.commit()
        return item

    @app.post("/api/dependencies", status_code=201)
    def create_dependency(body: DependencyIn, db: Db, who: Who) -> Dependency:
        wanted = {body.source_item_id, body.target_item_id}
        rows = db.exec(
            select(Item.id, Item.sow_id)
            .join(Sow, col(Sow.id) == Item.sow_id)
            .where(col(Item.id).in_(wanted), Sow.organization_id == who.organization_id)
        ).all()
        sows = dict(rows)
        if set(sows) != wanted:
            raise HTTPException(404, "item not found")
        dependency = Dependency(
            id=str(uuid.uuid4()),
            sow_id=sows[body.source_item_id],
            source_item_id=body.source_item_id,
            target_item_id=body.target_item_id,
            dependency_type=body.dependency_type,
            risk_level=body.risk_level,
            notes=body.notes,
            created_by_user_id=who.user_id,
            created_at=now(),
            organization_id=who.organization_id,
        )
        db.add(dependency)
        db.commit()
        return dependency

    return app


def uvicorn_command(host: str, port: int, workers: int) -> list[str]:
    """uvicorn serving ``create_app`` (the database from ``PEER_CRUD_DB``): run as its own
    program, so that its spawned workers import this module once, as ``peer_crud``."""
    return [
        *(sys.executable, "-m", "uvicorn", "--factory", "peer_crud:create_app", "--app-dir", str(BENCH)),
        *("--host", host, "--port", str(port), "--workers", str(workers)),
        *("--log-level", "warning", "--no-access-log"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="SQLite path or PostgreSQL URL (sowctl's schema)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--workers", type=int, default=1)
    ns = parser.parse_args()
    os.environ[DB_ENV] = ns.db
    command = uvicorn_command(ns.host, ns.port, ns.workers)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
