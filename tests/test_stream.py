"""The live feed (webui/stream.py): a snapshot first, every event, a snapshot after each burst;
a slow page dropped, never waited for; the cap; and the same through a real waitress server."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from controller.table import events as ev
from webui import create_app
from webui.server import Server
from webui.stream import HEARTBEAT, Broker, StreamFull, encode_frame


class FakeTable:
    """What the broker needs of a table: subscribe and snapshot; ``emit`` plays the
    controller's thread."""

    def __init__(self) -> None:
        self.subscribers: list[Any] = []
        self.seq = 0
        self.snapshots = 0
        self._asked = threading.Condition()

    def subscribe(self, callback):
        self.subscribers.append(callback)
        return lambda: self.subscribers.remove(callback)

    def snapshot(self) -> dict[str, Any]:
        with self._asked:
            self.snapshots += 1
            self._asked.notify_all()
        return {"seq": self.seq}

    def wait_snapshots(self, n: int, timeout: float = 5.0) -> bool:
        """Wait until the broker has asked for ``n`` snapshots in all (a burst is over)."""
        with self._asked:
            return self._asked.wait_for(lambda: self.snapshots >= n, timeout)

    def emit(self, *events: ev.Event) -> None:
        for e in events:
            self.seq += 1
            for cb in list(self.subscribers):
                cb(e)


def phase(name: str) -> ev.PhaseChanged:
    return ev.PhaseChanged(time=1.0, phase=name, reason="because\nof a newline")


def parse(frame: bytes) -> tuple[str, Any]:
    fields = dict(
        line.split(": ", 1) for line in frame.decode().strip().split("\n") if ": " in line
    )
    return fields["event"], json.loads(fields["data"])


def drain(broker: Broker, client, n: int, timeout: float = 2.0) -> list[tuple[str, Any]]:
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        frame = client.next(0.05)
        if frame is not None:
            out.append(parse(frame))
    return out


def test_a_frame_is_one_data_line_whatever_the_text():
    frame = encode_frame("phase", {"reason": "a\nb\r\nc", "名": "东"}, 7)
    assert frame.endswith(b"\n\n")
    lines = frame.decode().split("\n")
    assert lines[:2] == ["id: 7", "event: phase"]
    assert lines[2].startswith("data: ") and "东" in lines[2]
    assert lines[3:] == ["", ""]


def test_snapshot_first_then_events_then_one_snapshot_per_burst():
    table = FakeTable()
    broker = Broker(table, coalesce_s=0.05)
    try:
        client = broker.open()
        assert drain(broker, client, 1) == [
            ("snapshot", {"seq": 0, "server_time": pytest.approx(time.time(), abs=5)})
        ]
        before = table.snapshots
        table.emit(*(phase(f"p{i}") for i in range(10)))
        frames = drain(broker, client, 11)
        assert [k for k, _ in frames] == ["phase"] * 10 + ["snapshot"]
        assert [d["phase"] for _, d in frames[:10]] == [f"p{i}" for i in range(10)]
        assert frames[-1][1]["seq"] == 10
        assert table.snapshots == before + 1  # one snapshot for the burst, not one per event
    finally:
        broker.close()


def test_every_page_gets_every_event_and_ids_rise():
    table = FakeTable()
    broker = Broker(table, coalesce_s=0.01)
    try:
        clients = [broker.open() for _ in range(5)]
        table.emit(phase("playing"))
        for client in clients:
            raw = []
            deadline = time.monotonic() + 2
            while len(raw) < 3 and time.monotonic() < deadline:
                frame = client.next(0.05)
                if frame is not None:
                    raw.append(frame)
            kinds = [parse(f)[0] for f in raw]
            assert kinds == ["snapshot", "phase", "snapshot"]
            ids = [int(f.split(b"\n")[0].split(b": ")[1]) for f in raw]
            assert ids == sorted(ids) and len(set(ids)) == 3
    finally:
        broker.close()


def test_the_cap_refuses_one_more_and_a_closed_page_frees_its_place():
    table = FakeTable()
    broker = Broker(table, max_clients=2)
    try:
        a = broker.open()
        broker.open()
        with pytest.raises(StreamFull, match="2 live pages"):
            broker.open()
        a.close()
        a.close()  # twice is fine
        assert broker.clients == 1
        broker.open()
    finally:
        broker.close()


def test_a_slow_page_is_dropped_and_the_controller_never_waits():
    table = FakeTable()
    broker = Broker(table, queue_frames=32, coalesce_s=0.001, burst_max_s=0.001)
    try:
        slow = broker.open()
        fast = broker.open()
        got: list[bytes] = []
        arrived = threading.Condition()
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                try:
                    frame = fast.next(0.05)
                except EOFError:
                    return
                if frame is not None:
                    with arrived:
                        got.append(frame)
                        arrived.notify_all()

        def has(name: str) -> bool:
            return any(parse(f) == ("phase", {**parse(f)[1], "phase": name}) for f in got)

        reader = threading.Thread(target=read)
        reader.start()
        took = 0.0
        for chunk in range(20):
            started = time.perf_counter()
            table.emit(*(phase(f"p{chunk * 10 + i}") for i in range(10)))
            took += time.perf_counter() - started
            # the next chunk waits for the page reading along to have this one: it keeps
            # up however slow the machine, and the page that reads nothing still falls behind
            last = f"p{chunk * 10 + 9}"
            with arrived:
                assert arrived.wait_for(lambda last=last: has(last), 5), last
        assert took < 0.2  # the subscriber only queues: the controller never waits
        stop.set()
        reader.join()
        assert slow.dropped and broker.dropped >= 1
        with pytest.raises(EOFError):
            slow.next(0.01)
        assert not fast.dropped
        assert sum(parse(f)[0] == "phase" for f in got) == 200
        assert broker.clients == 1
    finally:
        broker.close()


def test_a_newer_snapshot_replaces_one_not_yet_sent():
    table = FakeTable()
    broker = Broker(table, coalesce_s=0.001, burst_max_s=0.001)
    try:
        client = broker.open()
        asked = table.snapshots
        for i in range(5):
            table.emit(phase(f"p{i}"))
            # each its own burst, each followed by a snapshot: the next event waits for it
            assert table.wait_snapshots(asked + i + 1)
        frames = drain(broker, client, 7)
        # the first snapshot stays (a page draws from it); the four in between were replaced
        assert [k for k, _ in frames] == ["snapshot"] + ["phase"] * 5 + ["snapshot"]
        assert frames[-1][1]["seq"] == 5
        # that was the last burst's own snapshot, and nothing has happened since: no frame can
        # still be on its way, so none queued now means none was left over
        assert client.next(0) is None
    finally:
        broker.close()


def test_heartbeat_when_nothing_happens_and_close_ends_the_stream():
    table = FakeTable()
    broker = Broker(table, heartbeat_s=0.05)
    client = broker.open()
    stream = broker.stream(client)
    assert next(stream).startswith(b"retry: ")
    assert parse(next(stream))[0] == "snapshot"
    assert next(stream) == HEARTBEAT
    broker.close()
    assert list(stream) == []
    assert table.subscribers == []
    assert broker.clients == 0


def test_the_broker_starts_again_after_close():
    table = FakeTable()
    broker = Broker(table, coalesce_s=0.01)
    broker.open()
    broker.close()
    client = broker.open()
    try:
        table.emit(phase("playing"))
        assert [k for k, _ in drain(broker, client, 3)] == ["snapshot", "phase", "snapshot"]
        assert len(table.subscribers) == 1
    finally:
        broker.close()


def test_a_table_that_cannot_give_a_snapshot_leaves_the_broker_stopped():
    class Stuck(FakeTable):
        def snapshot(self):
            raise TimeoutError

    table = Stuck()
    broker = Broker(table)
    with pytest.raises(TimeoutError):
        broker.open()
    assert table.subscribers == [] and broker.clients == 0


def test_the_live_table_feeds_the_broker(live_table):
    broker = Broker(live_table.runtime, coalesce_s=0.01)
    try:
        client = broker.open()
        assert drain(broker, client, 1)[0][1]["phase"] == "idle"
        live_table.start_hand()
        final = live_table.runtime.snapshot()["seq"]  # every event of the start is in
        # read until the snapshot of that state comes (however long the bursts take on a
        # slow machine), not for a fixed half second
        frames: list[tuple[str, Any]] = []
        deadline = time.monotonic() + 20
        while not frames or frames[-1] != ("snapshot", {**frames[-1][1], "seq": final}):
            assert time.monotonic() < deadline, [k for k, _ in frames]
            frame = client.next(0.5)
            if frame is not None:
                frames.append(parse(frame))
        assert "hand_started" in [k for k, _ in frames]
        assert frames[-1][1]["phase"] == "playing"
    finally:
        broker.close()


# -- through a real server -----------------------------------------------------------------------


class SseReader:
    """An HTTP client reading an event stream, frame by frame."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        self.conn.request("GET", "/api/events", headers={"Accept": "text/event-stream"})
        self.response = self.conn.getresponse()

    def frame(self) -> tuple[str, Any]:
        fields: dict[str, str] = {}
        while True:
            line = self.response.readline().decode()
            if not line:
                raise EOFError
            line = line.rstrip("\n")
            if not line:
                if "event" in fields:
                    return fields["event"], json.loads(fields["data"])
                continue
            if line.startswith(":"):
                continue
            key, _, value = line.partition(": ")
            fields[key] = value

    def until(self, kind: str) -> Any:
        while True:
            got, data = self.frame()
            if got == kind:
                return data

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def served(live_table, tmp_path: Path):
    def start(**config):
        app = create_app(live_table.runtime, data_dir=tmp_path, config=config)
        server = Server(app).start()
        started.append(server)
        return server

    started: list[Server] = []
    yield start
    for server in started:
        server.stop()


def test_a_page_sees_the_snapshot_then_an_event_within_a_second(live_table, served):
    server = served()
    reader = SseReader(server.port)
    try:
        assert reader.response.status == 200
        assert reader.response.getheader("Content-Type").startswith("text/event-stream")
        kind, data = reader.frame()
        assert kind == "snapshot" and data["seat_names"] == ["Ann", "Bo", "Cy", "Di"]
        started = time.monotonic()
        live_table.press(0, "confirm")  # the dealer starts a hand
        data = reader.until("hand_started")
        assert data["hand"] == 1
        assert time.monotonic() - started < 1.0
        assert reader.until("snapshot")["phase"] == "shuffling"
    finally:
        reader.close()


def test_over_the_stream_cap_a_page_gets_503_json(served):
    server = served(SSE_MAX_STREAMS=1)
    first = SseReader(server.port)
    try:
        assert first.frame()[0] == "snapshot"
        second = SseReader(server.port)
        assert second.response.status == 503
        assert "live pages" in json.loads(second.response.read())["error"]
        assert second.response.getheader("Retry-After") == "15"
        second.close()
    finally:
        first.close()


def test_twenty_pages_see_each_event_quickly(live_table, served):
    """The target: 20 open pages, an event's delay to each page p95 < 250 ms."""
    server = served()
    readers = [SseReader(server.port) for _ in range(20)]
    delays: list[float] = []
    lock = threading.Lock()
    rounds = 6
    sent: list[float] = []
    errors: list[BaseException] = []
    # how many pages are at each step: 0 their snapshot, i + 1 round i's event
    progress = threading.Condition()
    reached = [0] * (rounds + 1)

    def step(i: int) -> None:
        with progress:
            reached[i] += 1
            progress.notify_all()

    def everyone_at(i: int) -> bool:
        with progress:
            return progress.wait_for(lambda: reached[i] == len(readers) or bool(errors), 20)

    def follow(reader: SseReader) -> None:
        try:
            reader.until("snapshot")
            step(0)
            for i in range(rounds):
                reader.until("seat_seen")
                now = time.monotonic()
                with lock:
                    delays.append(now - sent[i])
                step(i + 1)
        except BaseException as exc:  # surface in the test's thread
            with progress:
                errors.append(exc)
                progress.notify_all()

    threads = [threading.Thread(target=follow, args=(r,)) for r in readers]
    for t in threads:
        t.start()
    try:
        assert everyone_at(0), errors  # every reader has its snapshot
        for i in range(rounds):
            sent.append(time.monotonic())
            live_table.seat(i % 4, flowers="1f")
            # one event at a time: each delay is that event's, not a queue's behind it
            assert everyone_at(i + 1), errors
        for t in threads:
            t.join(5)
    finally:
        for r in readers:
            r.close()
    assert not errors
    assert len(delays) == 20 * rounds
    delays.sort()
    p95 = delays[int(0.95 * len(delays)) - 1]
    print(f"20 pages: p95 {p95 * 1000:.1f} ms, max {delays[-1] * 1000:.1f} ms")
    assert p95 < 0.25, f"p95 {p95 * 1000:.0f} ms"
