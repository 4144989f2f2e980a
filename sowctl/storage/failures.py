"""What a database failure means, read from its code: the one place that classifies them.

Every surface asks ``classify``: the server (503 with ``Retry-After``, ``/healthz``), the
CLI's local mode (exit 5, one line) and the storage layer's own reruns (``db.with_retries``,
``db.retry_serialization_failures``). What decides is the code the driver gives:

* PostgreSQL's SQLSTATE (psycopg2's ``pgcode``): the exact code, else its class (the first
  two characters: ``08`` connection exception, ``53`` insufficient resources, ``58``
  system error);
* SQLite's result code (``sqlite_errorcode`` of Python's ``sqlite3`` exceptions): its
  primary code, the low byte (``SQLITE_IOERR_WRITE`` is an ``SQLITE_IOERR``).

Peewee wraps the driver's exception in its own class of the same name and keeps it as
``orig`` (``PeeweeException.orig``).

The kinds, and what each surface does with them:

* ``CONFLICT`` (40001 serialization failure, 40P01 deadlock): the database rolled the whole
  transaction back; it is run again (``Operation.run``), and a 503 once the attempts run out.
* ``BUSY`` (55P03 lock timeout, 57014 statement timeout, class 53 but 53100: too many
  connections, out of memory; ``SQLITE_BUSY``, ``SQLITE_LOCKED``, ``SQLITE_NOMEM``): 503;
  reads meeting a SQLite lock are run again first.
* ``UNAVAILABLE`` (class 08, 57P01-57P05 shutting down, starting up, crashed, 25P03;
  ``SQLITE_CANTOPEN``): the database cannot be reached; 503, and the server drops the
  connection so that the next request opens a new one.
* ``STORAGE`` (53100 disk full, class 58 I/O errors, 25006 read-only, XX001/XX002 corrupt;
  ``SQLITE_FULL``, ``SQLITE_IOERR``, ``SQLITE_READONLY``, ``SQLITE_PERM``, ``SQLITE_CORRUPT``,
  ``SQLITE_NOTADB``): the database cannot store; 503, and ``/healthz`` answers 503 until a
  probe write succeeds. Corruption is not transient, yet it is no bug of sowctl's either:
  the operator must restore the database, and a 503 with a failing ``/healthz`` is what
  takes the instance out of service and tells them so; a 500 would send them looking for
  a bug. Retrying clients give up after their few attempts.
* anything else (a constraint, an SQL error): a bug, 500 with a traceback in the log.

Words of a message are read only where the driver gives no code: libpq reports a
connection that could not be made or was lost without an SQLSTATE (psycopg2 raises
``OperationalError`` with ``pgcode`` None even when the server said why, e.g. FATAL
"the database system is starting up", 57P03), so such an error is a 503 whatever it says,
and its words only name the likely SQLSTATE, for the log (and "busy" rather than
"unavailable" for too many clients); and an error with no driver exception under it
(raised by peewee or by sowctl) is matched by its words.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import Enum

import peewee as pw

from sowctl.foundation.errors import ServiceUnavailable


class Kind(Enum):
    CONFLICT = "conflict"
    BUSY = "busy"
    UNAVAILABLE = "unavailable"
    STORAGE = "storage"


# What the log and the CLI call each kind.
_LABELS = {
    Kind.CONFLICT: "busy",
    Kind.BUSY: "busy",
    Kind.UNAVAILABLE: "unavailable",
    Kind.STORAGE: "cannot store",
}
_ANSWERS = {
    Kind.CONFLICT: "the database is busy; retry later",
    Kind.BUSY: "the database is busy; retry later",
    Kind.UNAVAILABLE: "the database is unavailable; retry later",
    Kind.STORAGE: "the database cannot store anything now; retry later",
}

_SQLSTATES: dict[str, tuple[Kind, str]] = {
    "40001": (Kind.CONFLICT, "serialization_failure"),
    "40P01": (Kind.CONFLICT, "deadlock_detected"),
    "55P03": (Kind.BUSY, "lock_not_available"),
    "57014": (Kind.BUSY, "query_canceled"),
    "53000": (Kind.BUSY, "insufficient_resources"),
    "53200": (Kind.BUSY, "out_of_memory"),
    "53300": (Kind.BUSY, "too_many_connections"),
    "53400": (Kind.BUSY, "configuration_limit_exceeded"),
    "08000": (Kind.UNAVAILABLE, "connection_exception"),
    "08001": (Kind.UNAVAILABLE, "sqlclient_unable_to_establish_sqlconnection"),
    "08003": (Kind.UNAVAILABLE, "connection_does_not_exist"),
    "08004": (Kind.UNAVAILABLE, "sqlserver_rejected_establishment_of_sqlconnection"),
    "08006": (Kind.UNAVAILABLE, "connection_failure"),
    "08007": (Kind.UNAVAILABLE, "transaction_resolution_unknown"),
    "08P01": (Kind.UNAVAILABLE, "protocol_violation"),
    "57000": (Kind.UNAVAILABLE, "operator_intervention"),
    "57P01": (Kind.UNAVAILABLE, "admin_shutdown"),
    "57P02": (Kind.UNAVAILABLE, "crash_shutdown"),
    "57P03": (Kind.UNAVAILABLE, "cannot_connect_now"),
    "57P04": (Kind.UNAVAILABLE, "database_dropped"),
    "57P05": (Kind.UNAVAILABLE, "idle_session_timeout"),
    "25P03": (Kind.UNAVAILABLE, "idle_in_transaction_session_timeout"),
    # CockroachDB: the commit's outcome is unknown; like a commit that got no answer, not rerun.
    "40003": (Kind.UNAVAILABLE, "statement_completion_unknown"),
    "53100": (Kind.STORAGE, "disk_full"),
    "58000": (Kind.STORAGE, "system_error"),
    "58030": (Kind.STORAGE, "io_error"),
    "58P01": (Kind.STORAGE, "undefined_file"),
    "58P02": (Kind.STORAGE, "duplicate_file"),
    "25006": (Kind.STORAGE, "read_only_sql_transaction"),
    "XX001": (Kind.STORAGE, "data_corrupted"),
    "XX002": (Kind.STORAGE, "index_corrupted"),
}
_SQLSTATE_CLASSES: dict[str, Kind] = {"08": Kind.UNAVAILABLE, "53": Kind.BUSY, "58": Kind.STORAGE}

# SQLite's primary result codes (the low byte of an extended one).
_SQLITE: dict[int, tuple[str, Kind]] = {
    3: ("SQLITE_PERM", Kind.STORAGE),
    5: ("SQLITE_BUSY", Kind.BUSY),
    6: ("SQLITE_LOCKED", Kind.BUSY),
    7: ("SQLITE_NOMEM", Kind.BUSY),
    8: ("SQLITE_READONLY", Kind.STORAGE),
    10: ("SQLITE_IOERR", Kind.STORAGE),
    11: ("SQLITE_CORRUPT", Kind.STORAGE),
    13: ("SQLITE_FULL", Kind.STORAGE),
    14: ("SQLITE_CANTOPEN", Kind.UNAVAILABLE),
    15: ("SQLITE_PROTOCOL", Kind.BUSY),
    22: ("SQLITE_NOLFS", Kind.STORAGE),
    26: ("SQLITE_NOTADB", Kind.STORAGE),
}
_SQLITE_BY_NAME = {name: (number, kind) for number, (name, kind) in _SQLITE.items()}
# Locks SQLite gives up on at once or after the busy timeout: a read may simply run again.
_SQLITE_RERUN = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})

# Only for errors that carry no code (see the module's docstring): the code a message names.
_WORDS: tuple[tuple[str, str], ...] = (
    ("database is locked", "SQLITE_BUSY"),
    ("database table is locked", "SQLITE_LOCKED"),
    ("disk is full", "SQLITE_FULL"),
    ("disk i/o error", "SQLITE_IOERR"),
    ("readonly database", "SQLITE_READONLY"),
    ("file is not a database", "SQLITE_NOTADB"),
    ("disk image is malformed", "SQLITE_CORRUPT"),
    ("unable to open database file", "SQLITE_CANTOPEN"),
    ("could not serialize", "40001"),
    ("restart transaction", "40001"),
    ("deadlock detected", "40P01"),
    ("the database system is starting up", "57P03"),
    ("the database system is shutting down", "57P03"),
    ("the database system is in recovery mode", "57P03"),
    ("accepting connections", "57P03"),  # "is not (yet) accepting connections": recovery, standby
    ("too many clients", "53300"),
    ("connection slots are reserved", "53300"),
    ("terminating connection due to administrator command", "57P01"),
    ("terminating connection because of crash", "57P02"),
    ("server closed the connection", "08006"),
    ("connection refused", "08001"),
    ("could not connect", "08001"),
    ("connection already closed", "08003"),
)
_DRIVERS = ("sqlite3", "psycopg2", "psycopg")
_CODE_ATTRIBUTES = ("pgcode", "sqlstate", "sqlite_errorcode")
_CONNECTION_FAILURE = "08006"  # what a code-less libpq error is when its words name nothing
_DETAIL_CHARS = 400


@dataclass(frozen=True)
class DatabaseFailure:
    """A classified failure: ``code`` is the SQLSTATE or SQLite's (extended) code name."""

    kind: Kind
    code: str
    detail: str  # the driver's message, on one line
    name: str = ""  # PostgreSQL's condition name
    inferred: bool = False  # the code was read from the message: the driver gave none
    rerun: bool = False  # the same statements may simply run again now

    @property
    def answer(self) -> str:
        """What an API client is told (nothing of the database's own message)."""
        return _ANSWERS[self.kind]

    def describe(self) -> str:
        """One line for the server's log and the CLI: kind, code, and the database's words."""
        code = " ".join(part for part in (self.code, self.name) if part)
        if self.inferred:
            code += ", read from the message"
        return f"database {_LABELS[self.kind]} ({code}): {self.detail}"

    def error(self) -> DatabaseUnavailable:
        return DatabaseUnavailable(self)


class DatabaseUnavailable(ServiceUnavailable):
    """A database failure as the typed error every surface answers: 503, exit 5."""

    def __init__(self, failure: DatabaseFailure) -> None:
        super().__init__(failure.describe())
        self.failure = failure

    @property
    def api_message(self) -> str:
        return self.failure.answer


def classify(exc: BaseException) -> DatabaseFailure | None:
    """What ``exc`` means (module docstring); None for anything that is not a database
    failure sowctl can answer with a 503: a bug."""
    driver = _driver_error(exc)
    if driver is None:
        return _from_words(_one_line(exc)) if isinstance(exc, pw.PeeweeException) else None
    detail = _one_line(driver)
    number = getattr(driver, "sqlite_errorcode", None)
    if number is not None:
        primary = _SQLITE.get(number & 0xFF)
        if primary is None:
            return None
        return _from_code(primary[0], getattr(driver, "sqlite_errorname", None) or primary[0], detail)
    code = _sqlstate_of(driver)
    if code:
        return _from_code(code, code, detail)
    if _is_connection_error(driver):  # libpq: no code for a connection not made, or lost
        return _from_words(detail) or _from_code(
            _CONNECTION_FAILURE, _CONNECTION_FAILURE, detail, inferred=True
        )
    return None  # e.g. the sqlite3 module's own refusals (a closed database, a bad binding)


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE a PostgreSQL driver gave with ``exc``, if any."""
    driver = _driver_error(exc)
    return _sqlstate_of(driver) if driver is not None else None


def is_conflict(exc: BaseException) -> bool:
    """Whether the database rolled ``exc``'s transaction back so that it may run again."""
    failure = classify(exc)
    return failure is not None and failure.kind is Kind.CONFLICT


def is_rerunnable(exc: BaseException) -> bool:
    """Whether the statements that failed with ``exc`` may simply run again (a read)."""
    failure = classify(exc)
    return failure is not None and failure.rerun


# What a statement meets on a connection its server ended while it sat idle (a restart, a
# crash, a terminated or timed-out session), by its code or, when it has none, its words.
_HUNG_UP = frozenset({"57P01", "57P02", "57P05", "08003", "08006"})
_HUNG_UP_TLS = ("eof detected", "ssl connection has been closed unexpectedly")  # libpq over TLS


def is_hung_up(exc: BaseException) -> bool:
    """Whether ``exc`` says that the server had ended the connection: a code of
    ``_HUNG_UP``, or libpq's words for one (never the words of sowctl's own deadline, which
    name none of them: a database that does not answer is not asked again)."""
    driver = _driver_error(exc)
    if driver is None:
        return False
    words = _one_line(driver).lower()
    if any(ending in words for ending in _HUNG_UP_TLS):
        return True
    return (_sqlstate_of(driver) or _code_in_words(words)) in _HUNG_UP


def is_read_only(exc: BaseException) -> bool:
    """SQLITE_READONLY (any extended code): the connection cannot write."""
    failure = classify(exc)
    return failure is not None and failure.code.startswith("SQLITE_READONLY")


# --- helpers ----------------------------------------------------------------------------------


def _from_code(family: str, code: str, detail: str, *, inferred: bool = False) -> DatabaseFailure | None:
    """``family``: the SQLSTATE, or SQLite's primary code name; ``code``: what the log shows."""
    if family.startswith("SQLITE_"):
        sqlite_kind = _SQLITE_BY_NAME[family][1]
        return DatabaseFailure(sqlite_kind, code, detail, inferred=inferred, rerun=family in _SQLITE_RERUN)
    known = _SQLSTATES.get(family)
    kind = known[0] if known else _SQLSTATE_CLASSES.get(family[:2])
    if kind is None:
        return None
    name = known[1] if known else ""
    return DatabaseFailure(kind, code, detail, name, inferred, rerun=kind is Kind.CONFLICT)


def _driver_error(exc: BaseException) -> BaseException | None:
    """The driver's exception: ``exc`` itself, or what peewee (``orig``) or sowctl
    (``raise ... from``) wrapped. A driver's is one of a known driver's classes, or any
    exception that carries a code as they do (another DB-API driver, psycopg2cffi)."""
    current: BaseException | None = exc
    for _ in range(4):  # wrappers of wrappers, never a cycle
        if current is None:
            return None
        if _driver_of(current) or any(getattr(current, name, None) is not None for name in _CODE_ATTRIBUTES):
            return current
        current = getattr(current, "orig", None) or current.__cause__
    return None


def _sqlstate_of(driver: BaseException) -> str | None:
    return getattr(driver, "pgcode", None) or getattr(driver, "sqlstate", None)


def _from_words(detail: str) -> DatabaseFailure | None:
    """Only for an error with no code (module docstring)."""
    code = _code_in_words(detail)
    return _from_code(code, code, detail, inferred=True) if code else None


def _driver_of(exc: BaseException) -> str:
    """Which driver raised ``exc`` ("" for none): a driver not yet imported raised nothing."""
    for name in _DRIVERS:
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, module.Error):
            return name
    return ""


def _is_connection_error(driver: BaseException) -> bool:
    """A PostgreSQL driver's error of the classes libpq's code-less failures are raised as."""
    name = _driver_of(driver)
    module = sys.modules.get(name) if name in ("psycopg2", "psycopg") else None
    names = ("OperationalError", "InterfaceError")
    classes = tuple(cls for cls in (getattr(module, name, None) for name in names) if cls)
    return bool(classes) and isinstance(driver, classes)


def _code_in_words(text: str) -> str | None:
    lowered = text.lower()
    return next((code for words, code in _WORDS if words in lowered), None)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"
