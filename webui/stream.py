"""The dashboard's live feed: one subscription to the table, fanned out to every open page.

Server-Sent Events, because a page only listens and an ``EventSource`` reconnects by itself.
The controller calls a subscriber on its own thread for every event, and that thread decides
the table, so :meth:`Broker._on_event` only puts the event on a queue. One broker thread
takes them from there: it encodes each event once (not once per page), hands the bytes to
every page's own bounded queue, and when a burst of events is over (nothing new for
``coalesce_s``) takes *one* snapshot of the table and sends that too. A page therefore sees
``snapshot`` (the whole state, always enough to draw the page), the events that led to it
(for toasts and sounds), and a fresh ``snapshot`` after each burst, however many pages are
open: the cost of a burst is one snapshot and one encoding, plus one queue append per page.

A page that cannot keep up is dropped, never waited for: its queue is bounded, and the first
frame that does not fit closes its stream (its ``EventSource`` reconnects and starts again
from a snapshot). An older snapshot still waiting in a page's queue is replaced by a newer
one, since the newer one says everything the older did.

Each open stream holds one of the web server's threads for as long as it is open, so the
broker refuses more than ``max_clients`` (:class:`StreamFull`); see
:mod:`webui.server` for how the thread pool is sized from that cap.
"""

from __future__ import annotations

import collections
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Broker", "Client", "StreamFull", "encode_frame"]

log = logging.getLogger(__name__)

HEARTBEAT = b": keepalive\n\n"
RETRY_MS = 3000
"""How long an ``EventSource`` waits before reconnecting after its stream ended."""


class StreamFull(Exception):
    """As many streams are open as the server has threads set aside for them."""


def encode_frame(kind: str, data: Any, frame_id: int) -> bytes:
    """One SSE frame. JSON has no raw newline in it (they are escaped inside strings), so the
    data is always one ``data:`` line."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"id: {frame_id}\nevent: {kind}\ndata: {text}\n\n".encode()


class Client:
    """One open stream: a bounded queue of encoded frames, filled by the broker thread and
    emptied by the web server's thread that writes them to the page."""

    def __init__(self, broker: Broker, limit: int) -> None:
        self._broker = broker
        self._limit = limit
        self._frames: collections.deque[tuple[str, bytes]] = collections.deque()
        self._cond = threading.Condition()
        self.closed = False
        self.dropped = False

    def push(self, frame: bytes, *, snapshot: bool = False, first: bool = False) -> bool:
        """Queue a frame; False (and the stream is closed) when the page has fallen too far
        behind. A snapshot replaces an older snapshot not yet sent, except the ``first``
        one: a page draws from its first frame."""
        with self._cond:
            if self.closed:
                return False
            if snapshot and any(kind == "snapshot" for kind, _ in self._frames):
                self._frames = collections.deque(f for f in self._frames if f[0] != "snapshot")
            if len(self._frames) >= self._limit:
                self.closed = self.dropped = True
                self._frames.clear()
                self._cond.notify_all()
                return False
            self._frames.append(("first" if first else "snapshot" if snapshot else "event", frame))
            self._cond.notify()
            return True

    def next(self, timeout: float) -> bytes | None:
        """The next frame; None when none came within ``timeout``. Raises
        :class:`EOFError` once the stream is closed."""
        with self._cond:
            if not self._frames and not self.closed:
                self._cond.wait(timeout)
            if self._frames and not self.closed:
                return self._frames.popleft()[1]
            if self.closed:
                raise EOFError
            return None

    def end(self) -> None:
        """Close the stream from the broker's side (the broker is closing)."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def close(self) -> None:
        """The page went away: free its place. Safe to call more than once."""
        self.end()
        self._broker._release(self)


class Broker:
    """Fans the table's events out to the open streams (see the module's docstring).

    ``table`` needs ``subscribe(callback) -> unsubscribe`` and ``snapshot() -> dict`` (a
    :class:`~controller.table.runtime.TableRuntime`). The broker starts on the first
    :meth:`open` (so a dashboard may be built before its table is started) and :meth:`close`
    stops it; a later :meth:`open` starts it again.
    """

    def __init__(
        self,
        table: Any,
        *,
        max_clients: int = 24,
        queue_frames: int = 256,
        heartbeat_s: float = 15.0,
        coalesce_s: float = 0.02,
        burst_max_s: float = 0.1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.table = table
        self.max_clients = max_clients
        self.queue_frames = queue_frames
        self.heartbeat_s = heartbeat_s
        self.coalesce_s = coalesce_s
        self.burst_max_s = burst_max_s
        self.clock = clock
        self._lock = threading.Lock()
        self._clients: set[Client] = set()
        self._inbox: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._latest: bytes | None = None
        self._next_id = 0
        self.dropped = 0
        """Streams dropped so far for falling behind."""

    # -- pages -------------------------------------------------------------------------------

    @property
    def clients(self) -> int:
        with self._lock:
            return len(self._clients)

    def open(self) -> Client:
        """A new stream, its first frame the latest snapshot. Raises :class:`StreamFull` at
        the cap, and whatever the table raises when it cannot give a snapshot (the broker
        then stays stopped)."""
        with self._lock:
            if len(self._clients) >= self.max_clients:
                raise StreamFull(f"{self.max_clients} live pages are open already")
            if self._thread is None:
                self._start()
            client = Client(self, self.queue_frames)
            assert self._latest is not None
            client.push(self._latest, snapshot=True, first=True)
            self._clients.add(client)
            return client

    def stream(self, client: Client) -> Iterator[bytes]:
        """What the web server writes to the page: the reconnect delay, then the frames as
        they come, with a comment line every ``heartbeat_s`` so proxies keep the connection
        and a page that went away is noticed."""
        try:
            yield f"retry: {RETRY_MS}\n\n".encode()
            while True:
                try:
                    frame = client.next(self.heartbeat_s)
                except EOFError:
                    return
                yield HEARTBEAT if frame is None else frame
        finally:
            client.close()

    def _release(self, client: Client) -> None:
        with self._lock:
            self._clients.discard(client)

    # -- the table -----------------------------------------------------------------------------

    def _start(self) -> None:
        """Subscribe, then take the first snapshot (called with the lock held). Events that
        come in between are sent again after it, which is harmless: a snapshot follows."""
        self._inbox = queue.Queue()
        unsubscribe = self.table.subscribe(self._on_event)
        try:
            self._latest = self._snapshot_frame(self.table.snapshot())
        except BaseException:
            unsubscribe()
            raise
        self._unsubscribe = unsubscribe
        self._thread = threading.Thread(target=self._run, name="dashboard-stream", daemon=True)
        self._thread.start()

    def _on_event(self, event: Any) -> None:
        """The subscriber, called on the controller's thread: only queue the event."""
        self._inbox.put(event)

    def _frame_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _snapshot_frame(self, snapshot: dict[str, Any]) -> bytes:
        return encode_frame("snapshot", {**snapshot, "server_time": self.clock()}, self._frame_id())

    def _run(self) -> None:
        inbox = self._inbox
        while True:
            item = inbox.get()
            if item is None:
                return
            # each event goes out as it comes; the snapshot waits for the burst to end
            deadline = time.monotonic() + self.burst_max_s
            while item is not None:
                self._send_event(item)
                if time.monotonic() >= deadline:
                    break
                try:
                    item = inbox.get(timeout=self.coalesce_s)
                except queue.Empty:
                    break
            if item is None:
                return
            try:
                snap = self._snapshot_frame(self.table.snapshot())
            except Exception as exc:  # the table stopped or is stuck: the events still went
                log.warning("no snapshot for the dashboard: %s", exc)
                continue
            with self._lock:
                self._latest = snap
            self._fan_out(snap, snapshot=True)

    def _send_event(self, event: Any) -> None:
        try:
            frame = encode_frame(event.type, event.to_json(), self._frame_id())
        except Exception:
            log.exception("an event the dashboard cannot send")
            return
        self._fan_out(frame, snapshot=False)

    def _fan_out(self, frame: bytes, *, snapshot: bool) -> None:
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            if not client.push(frame, snapshot=snapshot):
                if client.dropped:
                    self.dropped += 1
                    log.info("a dashboard page fell behind and was dropped")
                self._release(client)

    def close(self, timeout: float = 5.0) -> None:
        """Unsubscribe, stop the broker thread and end every open stream."""
        with self._lock:
            thread, self._thread = self._thread, None
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            clients, self._clients = list(self._clients), set()
            inbox = self._inbox
        if unsubscribe is not None:
            unsubscribe()
        if thread is not None:
            inbox.put(None)
            if thread is not threading.current_thread():
                thread.join(timeout)
        for client in clients:
            client.end()
