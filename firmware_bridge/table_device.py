"""The host's view of the table: :class:`TableDevice`, blocking calls with timeouts and event
callbacks over the serial protocol.

The protocol itself (link epochs, the handshake, command ids and their exactly-once rules, MCU
restarts, status and events) is :class:`~firmware_bridge.session.DeviceSession`, which does no
I/O. This module is the blocking facade around it: one background thread owns the port. It
opens it (reopening with backoff after an unplug), reads it, writes what the session gives it
and runs the session's timers (keepalives, retransmissions, missed statuses). Callers hand
their commands to the session under a lock, wake that thread through a pipe, and wait on the
command's :meth:`PendingCommand.result`; events go to listeners on a second thread, in order.
Calls made while the link is down wait for it, within their timeout.

Every command is executed by the table exactly once or reported failed: commands carry ids the
MCU remembers, so a command resent after a lost acknowledgement or a reconnection is answered
from the MCU's memory instead of run again; a command that may have reached an MCU which then
restarted is failed with ``reason="mcu_reset"``, never resent blindly.

Example::

    from firmware_bridge.table_device import TableDevice

    with TableDevice("/dev/serial/by-id/usb-mahjong-table-mcu-if00") as table:
        table.add_listener(print)
        table.shuffle()
        table.lift_walls()
        die1, die2 = table.roll_dice()
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import select
import threading
import time
from collections.abc import Callable
from typing import Any

from firmware_bridge import protocol as p
from firmware_bridge.config import MAX_TIMEOUT, SerialConfig
from firmware_bridge.errors import BridgeConfigError, CommandFailed, InterlockError, LinkDown
from firmware_bridge.link import LinkStats
from firmware_bridge.serial_port import Backoff, SerialPort
from firmware_bridge.session import (
    DeviceSession,
    DiceRoll,
    Identity,
    McuEvent,
    McuStatus,
    SessionCommand,
    ShuffleResult,
)

__all__ = [
    "DiceRoll",
    "Identity",
    "McuEvent",
    "McuStatus",
    "PendingCommand",
    "ShuffleResult",
    "TableDevice",
]

log = logging.getLogger(__name__)

# the I/O thread's longest sleep with nothing due: a bound on the cost of any timer the
# session might not have reported
_IDLE_WAIT = 0.05


def _given(timeout: float | None, default: float) -> float:
    # None takes the configured default; 0 is a timeout of its own (and refused), not "none"
    return default if timeout is None else timeout


class _Port(SerialPort):
    """The serial port, plus the descriptor to wait on beside the I/O thread's wake-up pipe
    (a caller's command must not wait out a read timeout before it is written)."""

    def fileno(self) -> int | None:
        if self._fd is not None:
            return self._fd
        # pyserial's socket:// handler keeps its socket here; anything else is polled
        sock = getattr(self._ser, "_socket", None)
        try:
            return None if sock is None else sock.fileno()
        except OSError:
            return None


# --- commands in flight ---------------------------------------------------------------------


class PendingCommand(SessionCommand):
    """A command on its way. :meth:`result` waits for its outcome.

    States: ``held`` (waiting for the link), ``sent`` (given to the link), ``accepted`` (the
    table started it; an event will end it), ``done``, ``failed``.
    """

    def __init__(
        self,
        device: TableDevice,
        command: p.Command,
        timeout: float,
        *,
        internal: bool = False,
        urgent: bool = False,
    ) -> None:
        super().__init__(command, timeout, internal=internal, urgent=urgent)
        self._device = device
        self.deadline = time.monotonic() + timeout
        # held until the command is done: a plain lock is the cheapest thing to block on, and
        # each waiter releases it again for the next
        self._latch = threading.Lock()
        self._latch.acquire()

    def _finished(self) -> None:
        self._latch.release()

    def result(self, timeout: float | None = None) -> Any:
        """The outcome; raises the command's error, or :class:`CommandTimeout` when it has none
        by the deadline (``timeout`` seconds from now, else the command's own timeout)."""
        if not self._done:
            deadline = self.deadline if timeout is None else time.monotonic() + timeout
            left = min(deadline - time.monotonic(), threading.TIMEOUT_MAX)
            if left > 0 and self._latch.acquire(timeout=left):
                self._latch.release()
            if not self._done:
                self._device._abandon(self)
        if self._error is not None:
            raise self._error
        return self._value


# --- the device -----------------------------------------------------------------------------


class TableDevice:
    """The table's MCU over a serial link.

    :param port: a pyserial URL (device path, pty, ``socket://host:port``); defaults to
        ``config.port``
    :param config: timeouts and link settings (the ``[serial]`` table of the config file)
    :param start: open the link in the background at once (else call :meth:`start`)

    Blocking calls (:meth:`shuffle`, :meth:`roll_dice`, ...) take a ``timeout`` in seconds
    (default from the config) that covers waiting for the link too; they raise
    :class:`~firmware_bridge.errors.CommandTimeout`, :class:`~firmware_bridge.errors.CommandFailed`,
    :class:`~firmware_bridge.errors.InterlockError` or :class:`~firmware_bridge.errors.LinkDown`.
    Listeners added with :meth:`add_listener` receive :class:`McuEvent` objects on a separate
    thread, in order; a listener may call the device.

    Only the I/O thread touches the port (until :meth:`close` has stopped it). The session is
    guarded by one lock, taken by that thread to feed it and by callers to hand it commands.
    """

    def __init__(
        self,
        port: str | None = None,
        *,
        config: SerialConfig | None = None,
        start: bool = True,
    ) -> None:
        self.config = config or SerialConfig()
        url = port or self.config.port
        if not url:
            raise LinkDown("no serial port given: pass --port or set [serial] port")
        self.port_url = url
        self._port = _Port(url, baudrate=self.config.baudrate)
        self._session = DeviceSession(self.config, port_name=url)
        self._lock = threading.Lock()  # guards the session
        self.counters = self._session.counters
        self._ready = threading.Event()
        self._closed = threading.Event()
        # told each time the I/O thread has fed the session: wait_for's callers wake on it
        self._turned = threading.Condition()
        self._last_error = "not connected yet"
        self._backoff = Backoff(self.config.reconnect_min, self.config.reconnect_max)
        self._next_open = 0.0
        self._hand_in_progress = False
        self._listeners: list[Callable[[McuEvent], None]] = []
        self._events: queue.Queue[McuEvent | None] = queue.Queue()
        self._io_thread: threading.Thread | None = None
        self._dispatch_thread: threading.Thread | None = None
        # the I/O thread's wake-up pipe, and whether a byte is in it (one is enough); its
        # lock makes closing it and writing to it one at a time: a number closed by one
        # thread and then written to, or closed again, by another may belong to another
        # file of the process by then
        self._wake_r = self._wake_w = -1
        self._wake_sent = False
        self._wake_lock = threading.Lock()
        if start:
            self.start()

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background threads (done by the constructor unless ``start=False``)."""
        if self._io_thread is not None:
            return
        self._closed.clear()
        self._wake_sent = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._io_thread = threading.Thread(target=self._io_loop, name="table-io", daemon=True)
        self._dispatch_thread = threading.Thread(
            target=self._dispatch_loop, name="table-events", daemon=True
        )
        self._dispatch_thread.start()
        self._io_thread.start()

    def close(self) -> None:
        """Stop the threads and close the port; calls still waiting fail with LinkDown."""
        self._closed.set()
        self._wake()
        me = threading.current_thread()
        if self._io_thread is not None and self._io_thread is not me:
            self._io_thread.join(timeout=5)
        # the I/O thread has stopped: the port is this thread's now
        with self._lock:
            owed = self._session.close()
            self._publish()
        if owed and self._port.is_open:
            # the last answer acknowledged: kept unacknowledged, the MCU would resend it
            with contextlib.suppress(LinkDown):
                self._port.write(b"".join(owed))
        self._port.close()
        self._ready.clear()
        self._events.put(None)
        # a listener may close the device: its own thread cannot wait for itself
        if self._dispatch_thread not in (None, me):
            self._dispatch_thread.join(timeout=5)
        with self._wake_lock:  # two threads closing at once close each number once
            ends, (self._wake_r, self._wake_w) = (self._wake_r, self._wake_w), (-1, -1)
            for fd in ends:
                if fd >= 0:
                    with contextlib.suppress(OSError):  # closing must not fail the close
                        os.close(fd)
        self._io_thread = self._dispatch_thread = None
        self._notify()

    def __enter__(self) -> TableDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_ready(self, timeout: float | None = None) -> Identity:
        """Block until the link is up and the handshake done; returns the MCU's identity."""
        t = self.config.connect_timeout if timeout is None else timeout
        deadline = time.monotonic() + t
        # in slices: a close() from another thread ends the wait, as it ends every other
        while not self._ready.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if self._closed.is_set():
                raise LinkDown(f"the connection to {self.port_url} was closed")
            if time.monotonic() >= deadline:
                break
        fatal = self._session.fatal
        if fatal is not None:
            raise fatal
        if not self._ready.is_set():
            raise LinkDown(self._why_not_ready(t))
        identity = self._session.identity
        assert identity is not None
        return identity

    def wait_for(self, check: Callable[[], bool], timeout: float) -> bool:
        """Block until ``check()`` is true, or ``timeout`` seconds pass, or the device is
        closed; returns ``check()``'s last answer.

        ``check`` is asked again each time the I/O thread has fed the session (bytes read, a
        timer run, a command handed over, the link lost or opened): what it reads
        (:attr:`last_status`, a :class:`PendingCommand`'s ``state``, :attr:`link_stats`) can
        only change then. A caller waits here for a fresh status or a command the table has
        accepted instead of polling the device in a sleep loop. ``check`` runs on the
        caller's thread and must not block: it is asked under the lock that wakes waiters.
        """
        with self._turned:
            self._turned.wait_for(lambda: check() or self._closed.is_set(), timeout)
        return check()

    def _notify(self) -> None:
        with self._turned:
            self._turned.notify_all()

    def _why_not_ready(self, waited: float) -> str:
        """Why the link is not up after ``waited`` seconds, for a message: the port could not
        be opened or was lost (its own reason), or it is open and the MCU has not answered."""
        s = self._session
        phase, heard, since = s.phase, s.last_rx, s.phase_since
        if not self._port.is_open or phase == "closed":
            return f"the table at {self.port_url} is not reachable: {self._last_error}"
        if phase == "handshake" or heard >= since:
            return (
                f"the MCU on {self.port_url} answered but did not finish the handshake within "
                f"{waited:g} s"
            )
        return (
            f"the MCU did not answer on {self.port_url} within {waited:g} s: is this the "
            f"table's port, at {self.config.baudrate} baud, with the firmware running?"
        )

    # --- state for callers -------------------------------------------------------------------

    @property
    def identity(self) -> Identity | None:
        return self._session.identity

    @property
    def last_status(self) -> McuStatus | None:
        """The latest status the MCU reported (it reports every 200-500 ms)."""
        return self._session.status

    @property
    def ready(self) -> bool:
        """True while the link is up and handshaken."""
        return self._ready.is_set()

    @property
    def link_up(self) -> bool:
        return self._session.link_up

    @property
    def link_stats(self) -> LinkStats:
        """The link layer's counters (:class:`~firmware_bridge.link.LinkStats`)."""
        return self._session.link_stats

    @property
    def hand_in_progress(self) -> bool:
        return self._hand_in_progress

    def set_hand_in_progress(self, in_progress: bool) -> None:
        """Tell the interlock whether a hand is being played (no shuffle while it is)."""
        self._hand_in_progress = bool(in_progress)

    def add_listener(self, callback: Callable[[McuEvent], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[McuEvent], None]) -> None:
        self._listeners.remove(callback)

    # --- the commands ------------------------------------------------------------------------

    def identify(self, timeout: float | None = None) -> Identity:
        return self._call(p.Identify, _given(timeout, self.config.command_timeout))

    def status(self, timeout: float | None = None) -> McuStatus:
        """Ask the MCU for its status now (see :attr:`last_status` for the latest report)."""
        return self._call(p.GetStatus, _given(timeout, self.config.command_timeout))

    def shuffle(self, timeout: float | None = None) -> ShuffleResult:
        """Shuffle the tile set that has waited longest in the table. Refused (InterlockError)
        while a hand is in progress or the lid is open."""
        self._check_motion("shuffle", hand=True)
        return self._call(p.Shuffle, _given(timeout, self.config.shuffle_timeout))

    def lift_walls(self, timeout: float | None = None) -> int:
        """Raise the shuffled set as the four walls; returns the tile set raised."""
        self._check_motion("lift", hand=False)
        return self._call(p.LiftWalls, _given(timeout, self.config.walls_timeout))

    def lower_walls(self, timeout: float | None = None) -> int:
        """Lower the walls (the tiles go back into the table); returns the tile set."""
        self._check_motion("lower", hand=True)
        return self._call(p.LowerWalls, _given(timeout, self.config.walls_timeout))

    def roll_dice(self, timeout: float | None = None) -> DiceRoll:
        """Roll the table's electronic dice; returns both."""
        return self._call(p.RollDice, _given(timeout, self.config.dice_timeout))

    def lights(self, mask: int, level: int = 255, timeout: float | None = None) -> None:
        """Set the table lights: bit i of ``mask`` for light i (0-3 the sides, 4 the centre),
        ``level`` 0-255 their brightness."""
        if not 0 <= mask <= 0xFF or not 0 <= level <= 0xFF:
            raise CommandFailed(
                "lights: mask and level must be 0-255", command="lights", reason="bad_args"
            )
        self._call(p.Lights, _given(timeout, self.config.command_timeout), mask=mask, level=level)

    def clear_faults(self, timeout: float | None = None) -> None:
        """Clear latched faults (jam, tiles short, motor stall, emergency stop) once fixed."""
        self._call(p.ClearFaults, _given(timeout, self.config.command_timeout))

    def emergency_stop(self, timeout: float | None = None) -> None:
        """Stop every motor now. Never refused by an interlock, and sent ahead of anything
        queued; the table stays stopped until :meth:`clear_faults`."""
        pc = self.submit(p.EmergencyStop, _given(timeout, self.config.command_timeout), urgent=True)
        pc.result()

    def _check_motion(self, name: str, *, hand: bool) -> None:
        if hand and self._hand_in_progress:
            raise InterlockError(
                f"{name}: refused while a hand is in progress; finish or abandon the hand first",
                command=name,
                reason="hand_in_progress",
            )
        s = self._session
        if s.link_up and s.lid_open:
            raise InterlockError(
                f"{name}: refused because the table's lid is open; close it and try again",
                command=name,
                reason="lid_open",
            )

    def _call(self, cls: type[p.Command], timeout: float, **fields: Any) -> Any:
        return self.submit(cls, timeout, **fields).result()

    def submit(
        self, cls: type[p.Command], timeout: float, *, urgent: bool = False, **fields: Any
    ) -> PendingCommand:
        """Send a command without waiting; :meth:`PendingCommand.result` waits. Interlocks
        are the blocking methods' business: this sends what it is given."""
        # checked before anything is sent: a wait that cannot be waited fails the caller
        # with the command already running on the table
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout <= MAX_TIMEOUT
        ):
            raise BridgeConfigError(
                f"a command's timeout is seconds above 0 and at most {MAX_TIMEOUT:g}, "
                f"not {timeout!r}"
            )
        with self._lock:
            # under the lock: close() fails everything the session holds under it too, so a
            # command is either failed by it or refused here
            if self._closed.is_set():
                raise LinkDown(f"the connection to {self.port_url} is closed")
            session = self._session
            if session.fatal is not None:
                raise session.fatal
            pc = PendingCommand(self, session.new_command(cls, **fields), timeout, urgent=urgent)
            session.submit(pc, time.monotonic())
        self._wake()
        return pc

    def _abandon(self, pc: PendingCommand) -> None:
        """The caller's timeout expired: the session withdraws the command or keeps it for a
        late answer, and finishes it with the error the caller gets."""
        why = self._why_not_ready(pc.timeout)
        with self._lock:
            self._session.abandon(pc, why)
            self._publish()
        self._notify()

    # --- the I/O thread: the port's only user -------------------------------------------------

    def _wake(self) -> None:
        """Interrupt the I/O thread's wait: there is something to write."""
        if self._wake_sent:
            return
        with self._wake_lock:
            if self._wake_w < 0:  # closed
                return
            self._wake_sent = True
            with contextlib.suppress(BlockingIOError):  # full: the I/O thread is awake
                os.write(self._wake_w, b"\0")

    def _io_loop(self) -> None:
        while not self._closed.is_set():
            try:
                if self._port.is_open:
                    self._turn()
                else:
                    self._reopen()
            except Exception:  # the link must survive anything; log and carry on
                log.exception("unexpected error in the table link thread")
                self._closed.wait(0.05)
            self._notify()

    def _turn(self) -> None:
        """Wait for bytes, a wake-up or the session's next timer; feed the session; write
        what it gives."""
        with self._lock:
            due = self._session.next_deadline()
        wait = _IDLE_WAIT if due is None else min(_IDLE_WAIT, max(0.0, due - time.monotonic()))
        try:
            data = self._read(wait)
        except LinkDown as exc:
            self._lost(str(exc))
            return
        with self._lock:
            now = time.monotonic()
            session = self._session
            if data:
                session.receive_data(data, now)
                if session.phase in ("handshake", "ready"):
                    self._backoff.reset()  # the MCU answers on this port
            frames = session.poll(now)
            self._publish()
            ready = session.ready
        if ready != self._ready.is_set():
            if ready:
                self._ready.set()
            else:
                self._ready.clear()
        if frames:
            self._write(frames)

    def _read(self, wait: float) -> bytes:
        fd = self._port.fileno()
        if fd is None:
            # nothing to select on beside the pipe: poll, briefly, so that a command is not
            # held up for long
            return self._port.read(min(wait, 0.001))
        wake = self._wake_r
        ready = select.select((fd, wake), (), (), wait)[0]
        if wake in ready:
            with contextlib.suppress(OSError):
                os.read(wake, 64)
            # cleared after the pipe is emptied: a caller that found it set before has its
            # command taken by the session poll that follows
            self._wake_sent = False
        if fd in ready:
            return self._port.read(0)
        return b""

    def _write(self, frames: list[bytes]) -> None:
        try:
            self._port.write(b"".join(frames))
        except LinkDown as exc:
            # reopened by this thread; what was written is still in the link
            self._lost(str(exc))

    def _reopen(self) -> None:
        now = time.monotonic()
        if now < self._next_open:
            self._closed.wait(min(0.05, self._next_open - now))
            return
        try:
            self._port.open()
        except LinkDown as exc:
            self._last_error = str(exc)
            self._next_open = time.monotonic() + self._backoff.next()
            return
        with self._lock:
            self.counters["opens"] += 1
            now = time.monotonic()
            self._session.connection_made(now)
            frames = self._session.poll(now)
        self._ready.clear()
        if frames:
            self._write(frames)

    def _lost(self, why: str) -> None:
        self._port.close()
        self._last_error = why
        self._next_open = time.monotonic() + self._backoff.next()
        with self._lock:
            self._session.connection_lost(why, time.monotonic())
            self._publish()
        self._ready.clear()

    # --- listeners ---------------------------------------------------------------------------

    def _publish(self) -> None:
        """Hand the session's new events to the listeners' thread (under the session's lock,
        so that they keep the order the session made them in)."""
        for ev in self._session.take_events():
            self._events.put(ev)

    def _dispatch_loop(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            for cb in list(self._listeners):
                if self._closed.is_set():  # a listener may close the device: nothing after
                    break
                try:
                    cb(event)
                except BaseException:  # SystemExit too: it would end this thread, and with it
                    # every later event, without a word
                    log.exception("a table event listener failed on %s", event.kind)
