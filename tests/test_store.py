"""The event log (controller.table.store): append-only, durable, and refusing any file that is
not a log of ours without touching it."""

from __future__ import annotations

import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from controller.errors import StorageError
from controller.table import events as ev
from controller.table import store
from controller.table.store import APPLICATION_ID, SCHEMA_VERSION, EventLog, EventLogReader

REPO = Path(__file__).resolve().parent.parent


def session_started(n: int = 1, t: float = 1.0) -> ev.SessionStarted:
    return ev.SessionStarted(
        time=t, session=n, profile="shanghai", stake=1, seats=["A", "B", "C", "D"], dealer=0
    )


def filler(i: int, size: int = 0) -> ev.Learnt:
    return ev.Learnt(time=float(i), fact="pad", value=[i, "x" * size])


def sample_events() -> list[ev.Event]:
    return [
        session_started(1),
        ev.PhaseChanged(time=2.0, phase="shuffling", reason="start"),
        ev.HandStarted(time=3.0, session=1, hand=1, dealer=0, huangfan=0),
        ev.HandSettled(
            time=4.0,
            session=1,
            hand=1,
            wins=[{"winner": 2}],
            settlement={"hand": "平胡", "value": 3},
            payments={"0": -1, "1": "-1/2", "2": "5/2", "3": -1},
            next_dealer=1,
            huangfan_next=0,
        ),
        ev.FaultChanged(time=5.0, fault="jam", active=True, message="牌卡住了"),
        session_started(2, t=6.0),
        ev.PhaseChanged(time=7.0, phase="idle"),
    ]


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path)


def assert_refused(path: Path, *words: str) -> str:
    """Opening ``path`` raises StorageError with a one-line message naming the file, and leaves
    its bytes as they were."""
    before = path.read_bytes()
    with pytest.raises(StorageError) as info:
        EventLog(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    for word in words:
        assert word in message
    assert path.read_bytes() == before
    return message


def assert_untouched_foreign(path: Path, *words: str) -> None:
    """A file that is not ours: refused before SQLite opens it, so not even a -wal or -shm
    file appears beside it."""
    siblings = sorted(p.name for p in path.parent.iterdir())
    assert_refused(path, *words)
    assert sorted(p.name for p in path.parent.iterdir()) == siblings


# -- appending and reading -----------------------------------------------------------------------


def test_append_and_read_back_in_memory():
    with EventLog(":memory:") as log:
        assert log.last_seq() == 0 and list(log.events()) == []
        assert log.append(sample_events()[0]) == 1
        assert log.append_many(sample_events()[1:]) == [2, 3, 4, 5, 6, 7]
        assert log.append_many([]) == []
        assert log.last_seq() == 7
        assert [e for _, e in log.events()] == sample_events()
        assert [s for s, _ in log.events(after=4)] == [5, 6, 7]


def test_rows_hold_time_type_session_and_the_json(tmp_path):
    path = tmp_path / "table.db"
    with EventLog(path) as log:
        log.append(ev.PhaseChanged(time=0.5, phase="idle"))  # before any session: no session
        log.append_many(sample_events())
    rows = raw(path).execute("SELECT seq, time, type, session, body FROM events").fetchall()
    assert [r[3] for r in rows] == [None, 1, 1, 1, 1, 1, 2, 2]
    assert [r[2] for r in rows] == ["phase", *(e.type for e in sample_events())]
    assert rows[4][1] == 4.0 and rows[4][4] == ev.event_to_json_text(sample_events()[3])
    # the session is remembered across a reopen
    with EventLog(path) as log:
        log.append(filler(9))
    assert raw(path).execute("SELECT session FROM events WHERE seq = 9").fetchone() == (2,)


def test_durability_settings_and_marks(tmp_path):
    path = tmp_path / "table.db"
    with EventLog(path) as log:
        conn = log._conn
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    db = raw(path)
    assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_reopening_after_close_gives_the_same_events(tmp_path):
    path = tmp_path / "table.db"
    with EventLog(path) as log:
        log.append_many(sample_events())
        log.append_many(filler(i, 300) for i in range(1200))  # several read batches
        written = list(log.events())
    assert len(written) == 1207
    with EventLog(path) as log:
        assert list(log.events()) == written and log.last_seq() == 1207
        assert log.append(filler(0)) == 1208
    # closing folded the WAL back: the main file alone is the whole log (a backup by copy)
    assert (
        not (tmp_path / "table.db-wal").exists() or (tmp_path / "table.db-wal").stat().st_size == 0
    )


def test_closed_log_raises_storage_error():
    log = EventLog(":memory:")
    log.close()
    log.close()
    with pytest.raises(StorageError, match="closed"):
        log.append(filler(1))
    with pytest.raises(StorageError, match="closed"):
        log.last_seq()


def test_an_event_that_cannot_be_stored_writes_nothing():
    with EventLog(":memory:") as log:
        log.append(filler(1))
        bad = ev.Learnt(time=2.0, fact="dice", value=object())  # not JSON
        with pytest.raises(StorageError, match="learnt event cannot be stored"):
            log.append_many([filler(2), bad, filler(3)])
        assert log.last_seq() == 1
        with pytest.raises(TypeError):
            log.append("not an event")  # type: ignore[arg-type]


# -- append-only ---------------------------------------------------------------------------------


def test_the_module_never_changes_or_removes_a_row():
    text = Path(store.__file__).read_text(encoding="utf-8")
    dml = re.compile(r"\b(UPDATE\s+\w+\s+SET|DELETE\s+FROM|REPLACE|UPSERT|DROP|TRUNCATE\s+TABLE)\b")
    assert not dml.findall(text.upper())


def test_the_database_refuses_update_and_delete(tmp_path):
    path = tmp_path / "table.db"
    with EventLog(path) as log:
        log.append_many(sample_events())
    db = raw(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE events SET body = '{}' WHERE seq = 1")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM events")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("INSERT OR REPLACE INTO events VALUES (2, 1.0, 'phase', NULL, '{}')")
    db.rollback()
    with EventLog(path) as log:
        assert [e for _, e in log.events()] == sample_events()


# -- rows that cannot be read back ---------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, body, words",
    [
        ("phase", "not json", "not JSON"),
        ("phase", '{"type":"phase","time":1,"phase":"x","v":99}', "schema version 99"),
        ("mystery", '{"type":"mystery","time":1}', "cannot be read"),
        ("fault", '{"type":"phase","time":1,"phase":"x"}', "filed as 'fault'"),
    ],
)
def test_a_row_that_cannot_be_read_back_names_its_seq(tmp_path, kind, body, words):
    path = tmp_path / "table.db"
    with EventLog(path) as log:
        log.append_many([filler(1), filler(2)])
    db = raw(path)
    db.execute(
        "INSERT INTO events (time, type, session, body) VALUES (1, ?, NULL, ?)", (kind, body)
    )
    db.commit()
    db.close()
    with EventLog(path) as log:
        read = log.events()
        assert [next(read)[0], next(read)[0]] == [1, 2]
        with pytest.raises(StorageError, match=r"event 3 cannot be read back|event 3 says") as info:
            next(read)
        assert words in str(info.value) and "\n" not in str(info.value)


# -- files that are not ours ---------------------------------------------------------------------


def make_log(path: Path, n: int = 200, size: int = 300) -> None:
    with EventLog(path) as log:
        log.append_many([session_started(1), *(filler(i, size) for i in range(n))])


def test_refuses_a_file_that_is_not_sqlite(tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("the scores, by hand\n", encoding="utf-8")
    assert_untouched_foreign(text, "not a mahjong-table event log", "not an SQLite database")
    noise = tmp_path / "noise.db"
    noise.write_bytes(random.Random(1).randbytes(20_000))
    assert_untouched_foreign(noise, "not an SQLite database")


def test_refuses_another_programs_database(tmp_path):
    path = tmp_path / "other.db"
    db = raw(path)
    db.execute("CREATE TABLE contacts (name TEXT)")
    db.execute("INSERT INTO contacts VALUES ('张三')")
    db.commit()
    db.close()
    message = assert_refused(path, "another program's database?", "choose another data folder")
    assert "not a mahjong-table event log" in message
    assert_untouched_foreign(path)


def test_refuses_a_database_with_another_application_id(tmp_path):
    path = tmp_path / "other.db"
    db = raw(path)
    db.execute("PRAGMA application_id = 1234")
    db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, body TEXT)")
    db.commit()
    db.close()
    assert_untouched_foreign(path, "another program's database?")


def test_refuses_our_mark_on_unknown_tables(tmp_path):
    path = tmp_path / "table.db"
    make_log(path, n=3)
    db = raw(path)
    db.execute("CREATE TABLE extras (x)")
    db.commit()
    db.close()
    assert_refused(path, "tables this program does not know")


def test_refuses_a_newer_schema(tmp_path):
    path = tmp_path / "table.db"
    make_log(path, n=3)
    db = raw(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    message = assert_refused(path, "newer version", "update the program")
    assert f"log schema {SCHEMA_VERSION + 1}" in message


@pytest.mark.parametrize("keep", [0.3, 0.5, 0.9])
def test_refuses_a_truncated_log(tmp_path, keep):
    path = tmp_path / "table.db"
    make_log(path)
    data = path.read_bytes()
    page = 4096
    path.write_bytes(data[: int(len(data) * keep) // page * page + 123])
    assert_refused(path, "is damaged", "restore it from a backup")


def test_refuses_a_log_cut_inside_its_header(tmp_path):
    path = tmp_path / "table.db"
    make_log(path, n=3)
    path.write_bytes(path.read_bytes()[:60])
    assert_refused(path, "is damaged", "header is cut short")


def test_refuses_a_log_with_garbage_pages(tmp_path):
    path = tmp_path / "table.db"
    make_log(path)
    data = bytearray(path.read_bytes())
    assert len(data) > 8 * 4096
    # overwrite the root page of the events table's b-tree and a few of its leaves
    noise = random.Random(2)
    for p in (1, 3, 5):
        data[p * 4096 : (p + 1) * 4096] = noise.randbytes(4096)
    path.write_bytes(bytes(data))
    assert_refused(path, "is damaged")


def test_refuses_a_folder(tmp_path):
    with pytest.raises(StorageError, match="is a folder"):
        EventLog(tmp_path)


def test_a_missing_folder_is_named(tmp_path):
    path = tmp_path / "nowhere" / "table.db"
    with pytest.raises(StorageError) as info:
        EventLog(path)
    assert str(path) in str(info.value) and "data folder exists" in str(info.value)


def test_an_empty_file_becomes_a_log(tmp_path):
    path = tmp_path / "table.db"
    path.touch()
    with EventLog(path) as log:
        assert log.append(filler(1)) == 1


# -- disk full -----------------------------------------------------------------------------------


def test_disk_full_keeps_everything_appended_before(tmp_path):
    path = tmp_path / "table.db"
    log = EventLog(path)
    log.append_many(sample_events())
    pages = log._conn.execute("PRAGMA page_count").fetchone()[0]
    log._conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the disk, nearly full
    stored = list(log.events())
    with pytest.raises(StorageError) as info:
        for i in range(200):
            # a batch that fits only in part: all of it or none must be stored
            log.append_many([filler(i, 1500), filler(i, 1500), filler(i, 1500)])
            stored = list(log.events())
    message = str(info.value)
    assert str(path) in message and "disk is full" in message and "\n" not in message
    assert list(log.events()) == stored and len(stored) > len(sample_events())
    assert (log.last_seq() - len(sample_events())) % 3 == 0
    log.close()
    with EventLog(path) as again:
        assert list(again.events()) == stored


# -- readers on other threads --------------------------------------------------------------------


def test_a_reader_on_another_thread_sees_whole_prefixes(tmp_path):
    path = tmp_path / "table.db"
    seen: list[list[int]] = []
    errors: list[BaseException] = []
    with EventLog(path) as log:
        log.append(session_started())
        reader = log.reader()
        done = threading.Event()

        def read() -> None:
            try:
                while not done.is_set():
                    seen.append([s for s, _ in reader.events()])
            except BaseException as exc:  # reported on the test's thread
                errors.append(exc)

        thread = threading.Thread(target=read)
        thread.start()
        for i in range(40):
            log.append_many([filler(i), filler(i)])
        done.set()
        thread.join(timeout=10)
        assert reader.last_seq() == 81
        with pytest.raises(sqlite3.OperationalError):
            reader._conn.execute("INSERT INTO events (time, type, body) VALUES (1, 'x', '{}')")
        reader.close()
    assert not errors and seen
    for seqs in seen:
        assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) % 2 == 1


def test_an_in_memory_log_has_a_reader_too():
    with EventLog(":memory:") as log:
        log.append_many(sample_events())
        reader = log.reader()
        result: list[int] = []
        thread = threading.Thread(target=lambda: result.append(reader.last_seq()))
        thread.start()
        thread.join()
        assert result == [7] and list(reader.events()) == list(log.events())
        reader.close()
        assert log.last_seq() == 7  # the view's close leaves the writer's connection open


def test_a_reader_refuses_what_is_not_a_log(tmp_path):
    with pytest.raises(StorageError, match="does not exist"):
        EventLogReader(tmp_path / "missing.db")
    other = tmp_path / "other.db"
    db = raw(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(StorageError, match="not a mahjong-table event log"):
        EventLogReader(other)


# -- kill -9 in the middle of writing ------------------------------------------------------------

CHILD = """
import sys
from controller.table.events import Learnt
from controller.table.store import EventLog

log = EventLog(sys.argv[1])
run = int(sys.argv[2])
n = 0
while True:
    k = 1 + n % 4
    log.append_many([Learnt(time=float(n), fact="batch", value=[run, n, i, k, "x" * 200])
                     for i in range(k)])
    print(n, flush=True)  # batch n is committed
    n += 1
"""


def test_kill_9_while_appending_leaves_a_whole_log(tmp_path):
    path = tmp_path / "table.db"
    rng = random.Random(3)
    committed: dict[int, int] = {}  # run: batches the child said it had committed
    for run in range(4):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(run)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        # killed once it has committed a random number of batches, wherever it then is in
        # the next: counted off its own progress, not a sleep a slow machine may not fill
        wanted = rng.randint(1, 60)
        try:
            assert child.stdout is not None
            for n in range(wanted):
                assert child.stdout.readline() == f"{n}\n"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
        committed[run] = wanted
    with EventLog(path) as log:
        read = list(log.events())
    seqs = [s for s, _ in read]
    assert seqs == list(range(1, len(seqs) + 1))
    batches: dict[tuple[int, int], list[int]] = {}
    for _, event in read:
        assert isinstance(event, ev.Learnt) and event.fact == "batch"
        run, n, i, k, pad = event.value
        assert pad == "x" * 200 and k == 1 + n % 4
        batches.setdefault((run, n), []).append(i)
    # every batch is whole (append_many is one transaction), and each run appended something
    for (_, n), items in batches.items():
        assert items == list(range(1 + n % 4))
    assert {run for run, _ in batches} == {0, 1, 2, 3}
    # nothing committed was lost: every batch a run reported is there, and what it committed
    # after (before the kill landed) follows on without a gap
    for run, wanted in committed.items():
        got = sorted(n for r, n in batches if r == run)
        assert got[:wanted] == list(range(wanted)) and got == list(range(len(got)))
