"""The table's event log: every event the controller produced, appended to one SQLite file.

The log is the table's memory. The state (:func:`controller.table.state.replay`) and the
ledger (:func:`controller.table.ledger.build_ledger`) are folded from it, so it must hold
exactly what was appended, in order, and survive a power cut: the controller appends a
settlement and only then tells the players it is settled, so :meth:`EventLog.append` returns
only once the event is on the disk (WAL journal, ``synchronous=FULL``).

Rows are only ever inserted: there is no statement in this module that changes or removes
one, and triggers in the database refuse it from any other program too. A row is
``(seq, time, type, session, body)`` with ``body`` the event's JSON
(:func:`controller.table.events.event_to_json_text`), so the file can be read without this
program (``sqlite3 table.db 'SELECT body FROM events'``).

The file is marked as ours (``PRAGMA application_id`` and the schema version in
``PRAGMA user_version``). A file that is not SQLite, is another program's database, was
written by a newer version, or is damaged is refused with a :class:`StorageError` that says
what to do, and is never changed.

One writer (the controller's thread) owns an :class:`EventLog`; readers on other threads (the
dashboard) each take their own read-only view with :meth:`EventLog.reader`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Self

from controller.errors import StorageError
from controller.table.events import Event, SessionStarted, event_from_json, event_to_json_text

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "EventLog", "EventLogReader"]

APPLICATION_ID = 0x4D4A544C
"""``PRAGMA application_id`` of a mahjong-table event log ("MJTL"): how a file is known as ours."""

SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the log's tables; a newer file is refused, never rewritten."""

BUSY_TIMEOUT_S = 5.0
"""How long a connection waits for another's lock (a reader checkpointing, a second process)
before giving up: long enough for any one transaction of ours, short enough that a stuck
second controller is reported rather than hanging the table."""

MEMORY = ":memory:"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_BATCH = 500  # rows read per query: lazily, without holding a read transaction open meanwhile

_SCHEMA = (
    "CREATE TABLE events ("
    " seq INTEGER PRIMARY KEY,"
    " time REAL NOT NULL,"
    " type TEXT NOT NULL,"
    " session INTEGER,"
    " body TEXT NOT NULL)",
    "CREATE TRIGGER events_no_update BEFORE UPDATE ON events"
    " BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END",
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events"
    " BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END",
    # an insert over an existing seq with an overwriting conflict clause removes a row, and
    # fires no delete trigger
    "CREATE TRIGGER events_no_overwrite BEFORE INSERT ON events"
    " WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq)"
    " BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END",
)
_OBJECTS = frozenset({"events", "events_no_update", "events_no_delete", "events_no_overwrite"})
_COLUMNS = ("seq", "time", "type", "session", "body")
_INSERT = "INSERT INTO events (time, type, session, body) VALUES (?, ?, ?, ?)"

Row = tuple[float, str, int | None, str]


# -- messages --------------------------------------------------------------------------------


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _hint(exc: BaseException) -> str:
    """What a person can do about an SQLite error, from its message (sqlite3 gives no codes on
    Python 3.11)."""
    text = str(exc).lower()
    if "full" in text:
        return "the disk is full: free some space"
    if "readonly" in text or "read-only" in text:
        return "the file or its folder is read-only: check the data folder's permissions"
    if "locked" in text or "busy" in text:
        return "another program holds the log: is a second controller running?"
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return "the file is damaged: restore it from a backup, or move it away"
    if "unable to open" in text:
        return "check that the data folder exists and is writable"
    if "closed" in text:
        return "the log was closed"
    return ""


def _sqlite_error(label: str, doing: str, exc: BaseException) -> StorageError:
    hint = _hint(exc)
    return StorageError(_one_line(f"{label}: {doing} failed ({exc}){': ' + hint if hint else ''}"))


def _not_ours(label: str, why: str) -> StorageError:
    return StorageError(
        f"{label} is not a mahjong-table event log ({why}): choose another data folder,"
        " or move the file away"
    )


def _damaged(label: str, detail: object) -> StorageError:
    return StorageError(
        _one_line(
            f"{label} is damaged ({detail}): restore it from a backup, or move it away"
            " to start a new log"
        )
    )


# -- opening ---------------------------------------------------------------------------------


def _ro_uri(path: Path) -> str:
    return path.resolve().as_uri() + "?mode=ro"


def _check_header(path: Path, label: str) -> bool:
    """Whether ``path`` holds anything (False: absent or empty, a new log to create). Refuses,
    from its first bytes and before SQLite opens it, a file that is not SQLite or is another
    program's database: opening such a file could leave ``-wal``/``-shm`` files beside it,
    or roll back its hot journal, and a file that is not ours is never touched."""
    if path.is_dir():
        raise StorageError(f"{label} is a folder, not an event log: name a file")
    try:
        with path.open("rb") as f:
            head = f.read(100)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StorageError(
            _one_line(f"{label} cannot be read ({exc.strerror}): check its permissions")
        ) from exc
    if not head:
        return False
    if not head.startswith(_SQLITE_MAGIC):
        raise _not_ours(label, "not an SQLite database")
    if len(head) < 100:
        raise _damaged(label, "its header is cut short")
    # the header's application_id (offset 68) is written when the log is created, before the
    # log turns to WAL, so it is in the main file even when later pages are still in the WAL
    if int.from_bytes(head[68:72], "big", signed=True) != APPLICATION_ID:
        raise _not_ours(label, "another program's database?")
    return True


def _inspect(conn: sqlite3.Connection, label: str, *, fresh_ok: bool) -> bool:
    """Refuse a database that is not an event log of a schema this program reads; True when it
    is a new, empty database we may claim (only where ``fresh_ok``)."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    if app_id == 0 and version == 0 and not names:
        if fresh_ok:
            return True
        raise StorageError(f"{label} is an empty database, not an event log yet")
    if app_id != APPLICATION_ID:
        raise _not_ours(label, "another program's database?")
    if version > SCHEMA_VERSION:
        raise StorageError(
            f"{label} was written by a newer version of this program (log schema {version},"
            f" this one reads up to {SCHEMA_VERSION}): update the program, or choose another"
            " data folder"
        )
    columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(events)"))
    if version < 1 or names != _OBJECTS or columns != _COLUMNS:
        raise _not_ours(label, "it has tables this program does not know")
    return False


def _quick_check(conn: sqlite3.Connection, label: str) -> None:
    rows = conn.execute("PRAGMA quick_check").fetchall()
    if [r[0] for r in rows] != ["ok"]:
        raise _damaged(label, f"quick_check: {rows[0][0]}")


def _check_existing(path: Path, label: str) -> None:
    """Vet an existing file through a read-only connection, so that nothing is written to a
    file that turns out not to be ours or to be damaged."""
    try:
        conn = sqlite3.connect(_ro_uri(path), uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise _sqlite_error(label, "opening", exc) from exc
    try:
        _inspect(conn, label, fresh_ok=True)
        _quick_check(conn, label)
    except sqlite3.OperationalError as exc:  # locked, unreadable: the file may be fine
        raise _sqlite_error(label, "opening", exc) from exc
    except sqlite3.DatabaseError as exc:  # SQLITE_CORRUPT, SQLITE_NOTADB
        raise _damaged(label, exc) from exc
    finally:
        conn.close()


def _create_or_check(conn: sqlite3.Connection, label: str) -> None:
    """Inside one write transaction, so two processes opening a new file at once do not both
    create it: claim an empty database, or check again that the file is ours."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _inspect(conn, label, fresh_ok=True):
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def _label(path: str | Path) -> str:
    return "the in-memory event log" if str(path) == MEMORY else f"event log {path}"


# -- reading ---------------------------------------------------------------------------------


class EventLogReader:
    """A read-only view of an event log: its own connection (``mode=ro``), usable from any one
    thread at a time (calls are serialised by a lock), so the dashboard reads while the
    controller writes. Get one with :meth:`EventLog.reader`."""

    def __init__(self, path: str | Path) -> None:
        self._label = _label(path)
        self._lock = threading.RLock()
        self._owns_conn = True
        self._conn: sqlite3.Connection | None = None
        if str(path) == MEMORY:
            raise StorageError("an in-memory event log is read through EventLog.reader()")
        self._path: Path | None = Path(path)
        if not _check_header(self._path, self._label):
            raise StorageError(f"{self._label} does not exist or is empty: nothing to read")
        try:
            conn = sqlite3.connect(
                _ro_uri(self._path),
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise _sqlite_error(self._label, "opening", exc) from exc
        try:
            conn.execute("PRAGMA query_only = ON")
            _inspect(conn, self._label, fresh_ok=False)
        except (sqlite3.Error, StorageError) as exc:
            conn.close()
            if isinstance(exc, StorageError):
                raise
            raise _sqlite_error(self._label, "opening", exc) from exc
        self._conn = conn

    @classmethod
    def _sharing(cls, conn: sqlite3.Connection, lock: threading.RLock, label: str) -> Self:
        """A view over a writer's own connection: an in-memory log has no file for a second
        connection to open."""
        view = cls.__new__(cls)
        view._label, view._lock, view._conn = label, lock, conn
        view._owns_conn, view._path = False, None
        return view

    @property
    def label(self) -> str:
        """How messages name this log (``event log <path>``)."""
        return self._label

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError(f"{self._label} is closed")
        return self._conn

    def _read(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _sqlite_error(self._label, "reading", exc) from exc

    def events(self, after: int = 0) -> Iterator[tuple[int, Event]]:
        """``(seq, event)`` for every event after ``after``, in order. Read in batches, so a
        long replay holds no transaction open; events appended meanwhile are included. A row
        that cannot be read back raises :class:`StorageError` naming its seq: a hand missing
        from a replay would be money missing from the ledger, so nothing is skipped."""
        last = after
        while True:
            rows = self._read(
                "SELECT seq, type, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                (last, _BATCH),
            )
            for seq, kind, body in rows:
                yield seq, self._decode(seq, kind, body)
            if len(rows) < _BATCH:
                return
            last = rows[-1][0]

    def _decode(self, seq: int, kind: str, body: object) -> Event:
        try:
            event = event_from_json(body)
        except StorageError as exc:
            raise StorageError(
                _one_line(f"{self._label}: event {seq} cannot be read back ({exc})")
            ) from exc
        if event.type != kind:
            raise StorageError(
                f"{self._label}: event {seq} says it is {event.type!r} but is filed as {kind!r}"
            )
        return event

    def last_seq(self) -> int:
        """The seq of the last event, 0 for an empty log."""
        return int(self._read("SELECT COALESCE(MAX(seq), 0) FROM events")[0][0])

    def close(self) -> None:
        """Close the connection (a view over a writer's connection leaves it open). Closing
        twice is fine."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and self._owns_conn:
                conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._label}{' (closed)' if self._conn is None else ''}>"


# -- writing ---------------------------------------------------------------------------------


class EventLog(EventLogReader):
    """The append-only event log in the SQLite file at ``path`` (created if absent), or
    ``":memory:"`` for tests. Raises :class:`StorageError` for a file it must not use."""

    def __init__(self, path: str | Path) -> None:
        self._label = _label(path)
        self._lock = threading.RLock()
        self._owns_conn = True
        self._conn = None
        self._path = None if str(path) == MEMORY else Path(path)
        if self._path is not None and _check_header(self._path, self._label):
            _check_existing(self._path, self._label)
        conn = self._connect(path)
        try:
            _create_or_check(conn, self._label)
            # after the check: switching to WAL writes to the file, which must be ours by now
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            self._session = self._last_session(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise _sqlite_error(self._label, "opening", exc) from exc
        except StorageError:
            conn.close()
            raise
        self._conn = conn

    def _connect(self, path: str | Path) -> sqlite3.Connection:
        try:
            # check_same_thread off: the lock serialises use, and an in-memory log's reader
            # shares this connection from another thread
            conn = sqlite3.connect(
                str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise _sqlite_error(self._label, "opening", exc) from exc
        return conn

    @staticmethod
    def _last_session(conn: sqlite3.Connection) -> int | None:
        row = conn.execute(
            "SELECT session FROM events WHERE type = ? ORDER BY seq DESC LIMIT 1",
            (SessionStarted.__struct_config__.tag,),
        ).fetchone()
        return None if row is None else row[0]

    def reader(self) -> EventLogReader:
        """A read-only view for another thread: its own ``mode=ro`` connection to the file
        (for an in-memory log, a view sharing this one's connection under its lock)."""
        if self._path is None:
            return EventLogReader._sharing(self._connection(), self._lock, self._label)
        self._connection()
        return EventLogReader(self._path)

    def close(self) -> None:
        """Fold the WAL back into the main file (best effort: a reader in the middle of a read
        keeps its part), so that the file alone holds the whole log, as a copy taken for a
        backup expects; then close. Closing twice is fine."""
        with self._lock:
            if self._conn is not None and self._path is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            super().close()

    def append(self, event: Event) -> int:
        """Append one event; its seq once it is on the disk."""
        return self.append_many([event])[0]

    def append_many(self, events: Iterable[Event]) -> list[int]:
        """Append events in one transaction: all are on the disk when this returns, or (it
        raised :class:`StorageError`) none is, so what one input produced is never half
        stored. Their seqs, in order."""
        batch = list(events)
        if not batch:
            return []
        rows, session = self._rows(batch)
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                seqs = [int(conn.execute(_INSERT, row).lastrowid or 0) for row in rows]
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback(conn)
                raise _sqlite_error(self._label, f"appending {len(rows)} event(s)", exc) from exc
            self._session = session
        return seqs

    def _rows(self, batch: list[Event]) -> tuple[list[Row], int | None]:
        """The rows to insert, and the session the log is in after them. Each body is read back
        before it is written: an event that would not replay is refused now, not found later."""
        session = self._session
        rows: list[Row] = []
        for event in batch:
            if not isinstance(event, Event):
                raise TypeError(f"not a table event: {event!r}")
            if isinstance(event, SessionStarted):
                session = event.session
            own = getattr(event, "session", None)
            body = self._body(event)
            rows.append((event.time, event.type, own if isinstance(own, int) else session, body))
        return rows, session

    def _body(self, event: Event) -> str:
        try:
            body = event_to_json_text(event)
            event_from_json(body)
        except (TypeError, ValueError, StorageError) as exc:
            raise StorageError(
                _one_line(f"{self._label}: a {event.type} event cannot be stored ({exc})")
            ) from exc
        return body

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        # a rollback that fails too leaves a hot journal, which SQLite undoes on next use
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
