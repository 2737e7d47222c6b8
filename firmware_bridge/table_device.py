"""The host's view of the table: :class:`TableDevice`, blocking calls with timeouts and event
callbacks over the serial protocol.

A background thread keeps the link: it opens the port (reopening with backoff after an
unplug), starts a link epoch, runs the handshake (identify, check the protocol version, push
the table configuration, read the status), watches the MCU's periodic status (missed statuses
mean the link is lost; a new boot id means the MCU restarted) and feeds the MCU's watchdog.
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

import collections
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from firmware_bridge import protocol as p
from firmware_bridge.config import MAX_TIMEOUT, SerialConfig
from firmware_bridge.errors import (
    BridgeConfigError,
    CommandFailed,
    CommandTimeout,
    InterlockError,
    LinkDown,
    MessageError,
)
from firmware_bridge.framing import FrameDecoder
from firmware_bridge.link import LinkEndpoint, LinkStats
from firmware_bridge.serial_port import Backoff, SerialPort

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

# a frame whose bytes stop arriving for this long is given up (a corrupted length byte
# promised more than was sent); generous for USB adapters that batch bytes for up to 16 ms
_STALE_PARTIAL = 0.02

# a bare ACK waits this long for the next command to carry it (far below the MCU's 25 ms
# retransmission timeout); see LinkEndpoint's ack_delay
_ACK_DELAY = 0.005

# how long the I/O thread leaves the port to callers after the last one stopped waiting, so
# that back-to-back calls each read their own answer (see TableDevice._wait)
_LINGER = 0.005

_OP_WORDS = {
    "shuffle": "shuffle",
    "lift": "raising of the walls",
    "lower": "lowering of the walls",
    "dice": "dice roll",
}


# --- values handed to callers ---------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """Who the table's MCU is (the answer to identify)."""

    name: str
    firmware: str
    protocol: int
    boot_id: int
    tile_sets: int
    tiles_per_set: int


def _given(timeout: float | None, default: float) -> float:
    # None takes the configured default; 0 is a timeout of its own (and refused), not "none"
    return default if timeout is None else timeout


@dataclass(frozen=True)
class McuStatus:
    """The table's state as last reported. ``faults`` holds fault names (``"jam"``,
    ``"tiles_short"``, ``"lid_open"``, ``"motor_stall"``, ``"watchdog"``, ``"estop"``)."""

    boot_id: int
    uptime: float
    state: str
    faults: tuple[str, ...]
    events: int
    table_set: int | None
    ready_set: int | None
    lights_mask: int
    lights_level: int
    executed: int
    duplicates: int
    replayed: int
    last_dice: tuple[int, int] | None

    @property
    def lid_open(self) -> bool:
        return "lid_open" in self.faults

    @classmethod
    def from_report(cls, r: p.StatusReport) -> McuStatus:
        try:
            state = p.State(r.state).name.lower()
        except ValueError:
            state = f"unknown({r.state})"
        return cls(
            boot_id=r.boot_id,
            uptime=r.uptime_ms / 1000,
            state=state,
            faults=tuple(p.fault_names(r.faults)),
            events=r.events,
            table_set=None if r.table_set == p.NO_SET else r.table_set,
            ready_set=None if r.ready_set == p.NO_SET else r.ready_set,
            lights_mask=r.lights_mask,
            lights_level=r.lights_level,
            executed=r.executed,
            duplicates=r.duplicates,
            replayed=r.replayed,
            last_dice=(r.die1, r.die2) if r.die1 else None,
        )


class DiceRoll(NamedTuple):
    """Both dice of a roll."""

    die1: int
    die2: int

    @property
    def total(self) -> int:
        return self.die1 + self.die2


@dataclass(frozen=True)
class ShuffleResult:
    """A finished shuffle: which of the table's tile sets is now shuffled and waiting below
    the table, and how many tiles the shuffler counted."""

    tile_set: int
    tiles: int


@dataclass(frozen=True)
class McuEvent:
    """Something that happened at the table, as handed to listeners.

    ``kind`` is one of: ``shuffle_done``, ``walls_up``, ``walls_down``, ``dice``, ``fault``,
    ``faults_cleared``, ``lid`` (from the MCU), and ``connected``, ``link_lost``,
    ``link_restored``, ``reset`` (the MCU restarted; the host has re-handshaken and
    resynchronised), ``late_result`` (the answer to a command whose caller had timed out)
    from the host. ``number`` is the MCU's event number (per boot), ``command_id`` the command
    whose operation the event ends.
    """

    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    number: int | None = None
    command_id: int | None = None
    boot_id: int | None = None
    time: float = field(default_factory=time.time)


def _event_data(msg: p.Event) -> dict[str, Any]:
    if isinstance(msg, p.ShuffleDone):
        return {"tile_set": msg.tile_set, "tiles": msg.tiles}
    if isinstance(msg, p.WallsUp | p.WallsDown):
        return {"tile_set": msg.tile_set}
    if isinstance(msg, p.DiceRolled):
        return {"dice": [msg.die1, msg.die2]}
    if isinstance(msg, p.FaultRaised):
        try:
            fault = p.Fault(msg.fault)
            return {"fault": fault.name.lower(), "label": fault.label, "detail": msg.detail}
        except ValueError:
            return {"fault": f"unknown({msg.fault})", "label": "unknown fault", "detail": 0}
    if isinstance(msg, p.LidChanged):
        return {"open": bool(msg.open)}
    if isinstance(msg, p.FaultsCleared):
        return {"cleared": p.fault_names(msg.cleared)}
    if isinstance(msg, p.McuReset):
        return {"boot_id": msg.boot_id, "reason": msg.reason}
    return {}


# --- commands in flight ---------------------------------------------------------------------


class PendingCommand:
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
        self._device = device
        self.command = command
        self.name = command.NAME
        self.cmd_id = command.cmd_id
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.internal = internal
        self.urgent = urgent
        self.state = "held"
        self.token: int | None = None
        self.ever_sent = False
        self.sent_epoch = 0  # the link epoch it was last sent in
        self.abandoned = False
        self.on_done: Callable[[PendingCommand], None] | None = None
        # set once, under the device's lock; waiters are woken through the device
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._done

    def _finish(self, value: Any = None, error: BaseException | None = None) -> None:
        if self._done:
            return
        self._value, self._error = value, error
        if not self.abandoned:
            # an abandoned command keeps its progress, so a late answer is still recognised
            self.state = "failed" if error else "done"
        self._done = True
        self._device._wake_waiters()
        if self.on_done is not None:
            self.on_done(self)

    def result(self, timeout: float | None = None) -> Any:
        """The outcome; raises the command's error, or :class:`CommandTimeout` when it has none
        by the deadline (``timeout`` seconds from now, else the command's own timeout)."""
        if not self._done:
            deadline = self.deadline if timeout is None else time.monotonic() + timeout
            self._device._wait(self, deadline)
            if not self._done:
                self._device._abandon(self)
        if self._error is not None:
            raise self._error
        return self._value

    def __repr__(self) -> str:
        return f"<PendingCommand {self.name} #{self.cmd_id} {self.state}>"


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

    One thread at a time reads the port: the I/O thread, or, while the link is up, a caller
    waiting for an answer (see :meth:`_wait`). Everything else is guarded by one lock, taken
    to process what was read and to send.
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
        self._port = SerialPort(url, baudrate=self.config.baudrate)
        self._lock = threading.RLock()
        self._link = self._new_link()
        self._decoder = FrameDecoder()
        self._instance = int.from_bytes(os.urandom(4), "little") or 1
        # ids start anywhere (never 0): a previous host's answer still on the line cannot
        # be taken for this one's command of the same id
        self._next_id = int.from_bytes(os.urandom(4), "little") % 0xFFFFFFFF + 1
        self._pending: dict[int, PendingCommand] = {}
        self._held: collections.deque[PendingCommand] = collections.deque()
        self._resend: list[PendingCommand] = []
        self._phase = "closed"
        self._phase_since = time.monotonic()
        self._ready = threading.Event()
        self._closed = threading.Event()
        self._port_broken = False
        self._last_error = "not connected yet"
        self._backoff = Backoff(self.config.reconnect_min, self.config.reconnect_max)
        self._next_open = 0.0
        self._last_rx = 0.0
        self._last_byte = 0.0
        self._last_tx = 0.0
        self._link_up = False
        self._ever_ready = False
        self._identity: Identity | None = None
        self._boot_id: int | None = None
        self._old_boots: set[int] = set()
        self._status: McuStatus | None = None
        # the last lid event this boot, (its number, open): newer than a status, it is the
        # lid's state (the periodic status lags an event by up to its interval)
        self._lid_event: tuple[int, bool] | None = None
        self._status_uptime = -1
        self._event_boot: int | None = None
        self._last_event_no = 0
        self._boot_changed_from: int | None = None
        self._hand_in_progress = False
        self._fatal: BaseException | None = None
        self._listeners: list[Callable[[McuEvent], None]] = []
        self._events: queue.Queue[McuEvent | None] = queue.Queue()
        self._io_thread: threading.Thread | None = None
        self._dispatch_thread: threading.Thread | None = None
        # who reads the port now (guarded by _role_lock, taken after _lock, never before it;
        # `with` on the bare lock: a Condition's __enter__ is a Python call)
        self._role_lock = threading.Lock()
        self._role = threading.Condition(self._role_lock)
        self._reader: threading.Thread | None = None
        self._role_waiters = 0  # threads in _role.wait()
        self._callers = 0  # callers in _wait()
        self._callers_left = 0.0  # when the last of them returned
        self.counters = collections.Counter[str]()
        if start:
            self.start()

    def _new_link(self) -> LinkEndpoint:
        return LinkEndpoint(
            initiator=True,
            window=self.config.window,
            max_rto=self.config.retransmit_cap,
            ack_delay=_ACK_DELAY,
        )

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background threads (done by the constructor unless ``start=False``)."""
        if self._io_thread is not None:
            return
        self._closed.clear()
        self._io_thread = threading.Thread(target=self._io_loop, name="table-io", daemon=True)
        self._dispatch_thread = threading.Thread(
            target=self._dispatch_loop, name="table-events", daemon=True
        )
        self._dispatch_thread.start()
        self._io_thread.start()

    def close(self) -> None:
        """Stop the threads and close the port; calls still waiting fail with LinkDown."""
        self._closed.set()
        if self._io_thread is not None:
            self._io_thread.join(timeout=5)
        # a caller reading the port stops within one read timeout (it sees _closed): the port
        # must not be closed under its select
        with self._role_lock:
            give_up = time.monotonic() + 5
            while self._reader not in (None, threading.current_thread()):
                if time.monotonic() > give_up:
                    break
                self._role_waiters += 1
                try:
                    self._role.wait(0.05)
                finally:
                    self._role_waiters -= 1
        with self._lock:
            # the last answer acknowledged: kept unacknowledged, the MCU would resend it
            owed = self._link.owed_ack()
            if owed:
                self._write(owed, time.monotonic())
            self._port.close()
            err = LinkDown(f"the connection to {self.port_url} was closed")
            for pc in [*self._pending.values(), *self._held, *self._resend]:
                pc._finish(error=err)
            self._pending.clear()
            self._held.clear()
            self._resend.clear()
            self._ready.clear()
        self._events.put(None)
        # a listener may close the device: its own thread cannot wait for itself
        if self._dispatch_thread not in (None, threading.current_thread()):
            self._dispatch_thread.join(timeout=5)
        self._io_thread = self._dispatch_thread = None

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
        if not self._ready.is_set():
            if self._fatal is not None:
                raise self._fatal
            raise LinkDown(self._why_not_ready(t))
        if self._fatal is not None:
            raise self._fatal
        assert self._identity is not None
        return self._identity

    def _why_not_ready(self, waited: float) -> str:
        """Why the link is not up after ``waited`` seconds, for a message: the port could not
        be opened or was lost (its own reason), or it is open and the MCU has not answered."""
        with self._lock:
            opened = self._port.is_open and not self._port_broken
            phase, heard, last = self._phase, self._last_rx, self._last_error
            since = self._phase_since
        if not opened:
            return f"the table at {self.port_url} is not reachable: {last}"
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
        return self._identity

    @property
    def last_status(self) -> McuStatus | None:
        """The latest status the MCU reported (it reports every 200-500 ms)."""
        return self._status

    @property
    def ready(self) -> bool:
        """True while the link is up and handshaken."""
        return self._ready.is_set()

    @property
    def link_up(self) -> bool:
        return self._link_up

    @property
    def link_stats(self) -> LinkStats:
        """The link layer's counters (:class:`~firmware_bridge.link.LinkStats`)."""
        return self._link.stats

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
        st = self._status
        lid_open = st is not None and st.lid_open
        lid = self._lid_event
        if lid is not None and (st is None or lid[0] > st.events):
            lid_open = lid[1]
        if lid_open and self._link_up:
            raise InterlockError(
                f"{name}: refused because the table's lid is open; close it and try again",
                command=name,
                reason="lid_open",
            )

    def _call(self, cls: type[p.Command], timeout: float, **fields: Any) -> Any:
        return self._submit(cls, timeout, **fields).result()

    def submit(
        self, cls: type[p.Command], timeout: float, *, urgent: bool = False, **fields: Any
    ) -> PendingCommand:
        """Send a command without waiting; :meth:`PendingCommand.result` waits. Interlocks
        are the blocking methods' business: this sends what it is given."""
        return self._submit(cls, timeout, urgent=urgent, **fields)

    def _submit(
        self,
        cls: type[p.Command],
        timeout: float,
        *,
        internal: bool = False,
        urgent: bool = False,
        **fields: Any,
    ) -> PendingCommand:
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
            if self._closed.is_set():
                raise LinkDown(f"the connection to {self.port_url} is closed")
            if self._fatal is not None and not internal:
                raise self._fatal
            cmd = cls(cmd_id=self._alloc_id(), **fields)
            pc = PendingCommand(self, cmd, timeout, internal=internal, urgent=urgent)
            self._pending[pc.cmd_id] = pc
            if internal or (urgent and self._link.established) or self._phase == "ready":
                self._send(pc)
                self._flush(time.monotonic())
            elif urgent:
                self._held.appendleft(pc)
            else:
                self._held.append(pc)
            return pc

    def _alloc_id(self) -> int:
        cid = self._next_id
        self._next_id = self._next_id % 0xFFFFFFFF + 1
        return cid

    def _send(self, pc: PendingCommand) -> None:
        pc.token = self._link.send(pc.command.encode(), urgent=pc.urgent)
        pc.state = "sent"
        pc.sent_epoch = self._link.epoch if self._link.established else -1
        self.counters["commands_sent"] += 1

    def _abandon(self, pc: PendingCommand) -> None:
        """The caller's timeout expired: withdraw the command if it never left, else keep
        listening for a late answer (reported as a ``late_result`` event)."""
        with self._lock:
            if pc.done():
                return
            never_sent = not pc.ever_sent
            if pc.state == "held":
                if pc in self._held:
                    self._held.remove(pc)
                if pc in self._resend:
                    self._resend.remove(pc)
                # not to be sent again; but one sent in an earlier epoch may have reached the
                # MCU, which keeps its answer for this host across epochs: it stays in
                # _pending, abandoned, so that answer comes as a late_result (until the MCU
                # restarts, which forgets it)
            elif pc.state == "sent" and pc.token is not None:
                withdrawn = self._link.cancel(pc.token)
                never_sent = withdrawn
                if withdrawn:
                    pc.token = None
            else:
                never_sent = False
            if never_sent:
                self._pending.pop(pc.cmd_id, None)
            else:
                pc.abandoned = True
            self.counters["timeouts"] += 1
            if never_sent and not self._ready.is_set():
                err: BaseException = LinkDown(
                    f"{pc.name}: nothing was sent: {self._why_not_ready(pc.timeout)}"
                )
            elif never_sent:
                err = CommandTimeout(
                    f"{pc.name}: not sent within {pc.timeout:g} s (the link is congested); "
                    "nothing was sent",
                    command=pc.name,
                    maybe_executed=False,
                )
            elif pc.state == "accepted":
                op = _OP_WORDS.get(pc.name, pc.name)
                err = CommandTimeout(
                    f"{pc.name}: the table started the {op} but did not report its end within "
                    f"{pc.timeout:g} s; check `status` before trying again",
                    command=pc.name,
                    maybe_executed=True,
                )
            else:
                err = CommandTimeout(
                    f"{pc.name}: no answer from the table within {pc.timeout:g} s; it may "
                    "still carry it out; check `status` before trying again",
                    command=pc.name,
                    maybe_executed=True,
                )
            pc._finish(error=err)

    # --- reading the port: the I/O thread, or a waiting caller --------------------------------

    def _wait(self, pc: PendingCommand, deadline: float) -> None:
        """Wait until ``pc`` is done or ``deadline`` passes.

        While the link is up, the waiting thread reads and processes the port itself, as the
        I/O thread would (one thread at a time holds that role): its answer then needs no
        hand-over from another thread, which costs a wake-up and a switch of the interpreter
        lock per command. Anyone else waits until its command is done or the role is free.
        """
        role, lock = self._role, self._role_lock
        me = threading.current_thread()
        lock.acquire()  # held here except while this thread reads or waits
        try:
            self._callers += 1
            while not pc._done:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                if self._reader is None and self._callers_may_read():
                    self._reader = me
                    self.counters["caller_reads"] += 1
                    lock.release()
                    try:
                        while not pc._done and self._callers_may_read():
                            left = deadline - time.monotonic()
                            if left <= 0:
                                break
                            self._pump(min(left, self._port.read_timeout))
                    finally:
                        lock.acquire()
                        self._reader = None
                        if self._role_waiters:
                            role.notify_all()
                else:
                    self._role_waiters += 1
                    try:
                        role.wait(left)
                    finally:
                        self._role_waiters -= 1
        finally:
            self._callers -= 1
            self._callers_left = time.monotonic()
            lock.release()

    def _callers_may_read(self) -> bool:
        # only on an established link: opening, reconnecting and the handshake are the I/O
        # thread's, and nobody reads once the device is closing
        return (
            self._phase == "ready"
            and not self._port_broken
            and self._port.is_open
            and not self._closed.is_set()
        )

    def _release_role(self) -> None:
        with self._role_lock:
            self._reader = None
            if self._role_waiters:
                self._role.notify_all()

    def _wake_waiters(self) -> None:
        """A command finished: wake the callers waiting without the role (one may be its)."""
        # the count is read under the lock: a caller checks its command and counts itself a
        # waiter under it, so read outside, a command finishing between the two would find no
        # waiter and its caller would sleep until its deadline or the role changed hands
        with self._role_lock:
            if self._role_waiters:
                self._role.notify_all()

    def _io_loop(self) -> None:
        me = threading.current_thread()
        while not self._closed.is_set():
            with self._role_lock:
                quiet = time.monotonic() - self._callers_left
                mine = self._reader is None and (
                    not self._callers_may_read() or (self._callers == 0 and quiet >= _LINGER)
                )
                if mine:
                    self._reader = me
            if not mine:
                # callers are reading for themselves; look again shortly (not woken by every
                # answer: that would be the hand-over this avoids)
                self._closed.wait(_LINGER if self._callers else max(0.0005, _LINGER - quiet))
                continue
            try:
                if not self._port.is_open or self._port_broken:
                    self._reopen()
                else:
                    self._pump(self._port.read_timeout)
            except Exception:  # the link must survive anything; log and carry on
                log.exception("unexpected error in the table link thread")
                time.sleep(0.05)
            finally:
                self._release_role()

    def _pump(self, timeout: float) -> None:
        """Read once (waiting up to ``timeout``), process what came, run the timers. Only the
        thread holding the reader role calls this."""
        due = self._link.next_deadline()  # a link timer may fall due sooner
        if due is not None:
            timeout = max(0.0, min(timeout, due - time.monotonic()))
        try:
            data = self._port.read(timeout)
        except LinkDown as exc:
            with self._lock:
                self._port_lost(str(exc))
            return
        try:
            with self._lock:
                now = time.monotonic()
                if data:
                    self._last_byte = now
                    self._receive(data, now)
                elif self._decoder.partial and now - self._last_byte > _STALE_PARTIAL:
                    self._receive(None, now)
                self._service(now)
        except Exception:
            log.exception("unexpected error handling data from the table")

    def _reopen(self) -> None:
        with self._lock:
            if self._port_broken:
                self._port_lost(self._last_error)
        now = time.monotonic()
        if now < self._next_open:
            self._closed.wait(min(0.05, self._next_open - now))
            return
        try:
            self._port.open()
        except LinkDown as exc:
            with self._lock:
                self._last_error = str(exc)
                self._next_open = time.monotonic() + self._backoff.next()
            return
        with self._lock:
            self._port_broken = False
            self._decoder.reset()
            self.counters["opens"] += 1
            self._begin_epoch(time.monotonic())

    def _port_lost(self, why: str) -> None:
        self._port.close()
        self._port_broken = False
        self._last_error = why
        self._next_open = time.monotonic() + self._backoff.next()
        if self._phase != "closed":
            self.counters["port_lost"] += 1
            self._set_phase("closed")
            self._ready.clear()
            if self._link_up:
                self._link_up = False
                self._emit(McuEvent("link_lost", {"reason": why}))

    def _set_phase(self, phase: str) -> None:
        self._phase = phase
        self._phase_since = time.monotonic()

    def _begin_epoch(self, now: float) -> None:
        """Start a new link epoch and handshake. Commands not yet answered are taken back
        from the link; the handshake decides whether they may be sent again."""
        self._ready.clear()
        for token, _payload, ever_sent in self._link.drain():
            pc = next((c for c in self._pending.values() if c.token == token), None)
            if pc is None:
                continue
            pc.token = None
            pc.ever_sent = pc.ever_sent or ever_sent
            if pc.internal:
                self._pending.pop(pc.cmd_id, None)
                continue
            pc.state = "held"
            self._resend.append(pc)
        self._resend.sort(key=lambda c: (not c.urgent, c.cmd_id))
        self._set_phase("resetting")
        self._link.start_reset(self._instance.to_bytes(4, "little"), now)
        self._flush(now)

    def _receive(self, data: bytes | None, now: float) -> None:
        """Handle received bytes (``None``: give up on a frame that stopped half-way)."""
        frames = self._decoder.feed(data) if data is not None else self._decoder.flush_stale()
        for frame in frames:
            self._last_rx = now
            for d in self._link.on_frame(frame, now):
                if d.kind == "data" or d.kind == "datagram":
                    try:
                        msg = p.decode_message(d.payload)
                    except MessageError as exc:
                        self.counters["bad_messages"] += 1
                        log.debug("ignoring a bad message from the table: %s", exc)
                        continue
                    self._on_message(msg, now)
                elif d.kind == "reset_done":
                    self._on_epoch_started(now)
        if self._decoder.take_errors():
            self._link.on_corrupt(now)
        if frames and not self._link_up and self._phase == "ready":
            self._link_up = True
            self._emit(McuEvent("link_restored", {"reason": "statuses resumed"}))

    def _service(self, now: float) -> None:
        if self._phase == "closed":
            return
        if self._link.established and now - self._last_tx >= self.config.status_interval:
            self._write([self._link.datagram(p.Keepalive().encode())], now)
        silent = now - self._last_rx
        if self._phase == "ready":
            if self._link_up and silent > self.config.link_lost_after:
                self._link_up = False
                self.counters["link_lost"] += 1
                self._emit(McuEvent("link_lost", {"reason": f"no status for {silent:.1f} s"}))
            if self._link_up and self._link.consecutive_timeouts >= 8:
                # statuses arrive but nothing is acknowledged: the link state is out of step
                self.counters["desync"] += 1
                self._begin_epoch(now)
        elif now - self._phase_since > max(3.0, 4 * self.config.link_lost_after):
            # the handshake stalled (the MCU restarted during it?): start over
            self.counters["handshake_restarts"] += 1
            self._begin_epoch(now)
        self._flush(now)

    def _flush(self, now: float) -> None:
        frames = self._link.poll(now)
        if frames:
            self._write(frames, now)

    def _write(self, frames: list[bytes], now: float) -> None:
        if not self._port.is_open or self._port_broken:
            return
        try:
            self._port.write(b"".join(frames))
            self._last_tx = now
        except LinkDown as exc:
            # the I/O thread reopens the port; what was written is still in the link
            self._port_broken = True
            self._last_error = str(exc)

    # --- handshake ---------------------------------------------------------------------------

    def _on_epoch_started(self, now: float) -> None:
        self._set_phase("handshake")
        self._backoff.reset()
        # an emergency stop waiting for the line goes as soon as there is one, before the
        # handshake's round trips
        for c in [c for c in (*self._held, *self._resend) if c.urgent and not c.done()]:
            if c.state == "held":
                self._send(c)
            if c in self._held:
                self._held.remove(c)
            if c in self._resend:
                self._resend.remove(c)
        pc = self._submit(p.Identify, 5.0, internal=True)
        pc.on_done = self._on_identified

    def _on_identified(self, pc: PendingCommand) -> None:
        if pc._error is not None or self._phase != "handshake":
            return
        ident: Identity = pc._value
        if ident.protocol != p.PROTOCOL_VERSION:
            self._fatal = LinkDown(
                f"the table's firmware speaks protocol version {ident.protocol}, this host "
                f"speaks {p.PROTOCOL_VERSION}: update the firmware or this software"
            )
            for c in [*self._held, *self._resend]:
                c._finish(error=self._fatal)
            self._held.clear()
            self._resend.clear()
            self._ready.set()
            return
        self._identity = ident
        if self._boot_id is not None and ident.boot_id != self._boot_id:
            self._mcu_restarted(ident.boot_id)
        if self._boot_id != ident.boot_id:
            self._status_uptime = -1
            self._status = None
            self._lid_event = None
        self._boot_id = ident.boot_id
        if self._event_boot != ident.boot_id:
            self._event_boot = ident.boot_id
            self._last_event_no = 0
        cfg = self.config
        nxt = self._submit(
            p.Configure,
            5.0,
            internal=True,
            tiles_per_set=cfg.tiles_per_set,
            status_interval_ms=round(cfg.status_interval * 1000),
            watchdog_ms=round(cfg.watchdog * 1000),
        )
        nxt.on_done = self._on_configured

    def _mcu_restarted(self, new_boot: int) -> None:
        """The MCU restarted: what it was doing is lost. Fail what it may have received; keep
        what never reached it, to send after the handshake."""
        old = self._boot_id
        assert old is not None
        self._old_boots.add(old)
        self._boot_changed_from = old
        self.counters["mcu_resets"] += 1
        keep = []
        for pc in self._resend:
            if pc.done():
                continue
            if pc.ever_sent:
                self._fail_reset(pc)
            else:
                keep.append(pc)
        self._resend = keep
        for pc in list(self._pending.values()):
            if pc.abandoned and pc.state == "held":
                self._pending.pop(pc.cmd_id, None)  # its answer, if any, went with the MCU
                continue
            if pc.internal or pc.done():
                continue
            # started, or acknowledged by the old MCU and never answered (sent in an earlier
            # epoch: what this epoch sent went to the new MCU, an emergency stop say)
            if pc.state == "accepted" or (pc.state == "sent" and pc.sent_epoch != self._link.epoch):
                self._fail_reset(pc)

    def _fail_reset(self, pc: PendingCommand) -> None:
        self._pending.pop(pc.cmd_id, None)
        op = _OP_WORDS.get(pc.name, pc.name)
        pc._finish(
            error=CommandFailed(
                f"{pc.name}: the table's controller restarted during the {op}; it did not "
                "finish (check the table, then try again)",
                command=pc.name,
                reason="mcu_reset",
            )
        )

    def _on_configured(self, pc: PendingCommand) -> None:
        if pc._error is not None or self._phase != "handshake":
            return
        nxt = self._submit(p.GetStatus, 5.0, internal=True)
        nxt.on_done = self._on_synced

    def _on_synced(self, pc: PendingCommand) -> None:
        if pc._error is not None or self._phase != "handshake":
            return
        self._set_phase("ready")
        now = time.monotonic()
        first = not self._ever_ready
        self._ever_ready = True
        was_up = self._link_up
        self._link_up = True
        # commands answered during the handshake (answers queued before a reconnection) or
        # already started by the table are not sent again
        for c in [*self._resend, *self._held]:
            if c.state == "held" and not c.done():
                self._send(c)
        self._resend.clear()
        self._held.clear()
        self._flush(now)
        self._ready.set()
        status = self._status
        data = {
            "port": self.port_url,
            "boot_id": self._boot_id,
            "status": status.__dict__ if status else None,
        }
        if self._boot_changed_from is not None:
            self._emit(McuEvent("reset", {**data, "previous_boot_id": self._boot_changed_from}))
            self._boot_changed_from = None
        elif first:
            self._emit(McuEvent("connected", data))
        elif not was_up:
            self._emit(McuEvent("link_restored", {**data, "reason": "reconnected"}))

    # --- messages from the MCU ---------------------------------------------------------------

    def _on_message(self, msg: p.Message, now: float) -> None:
        if isinstance(msg, p.Reply):  # the usual answer first
            self._on_reply(msg)
            return
        if isinstance(msg, p.StatusReport):
            self._on_status(msg)
            if msg.cmd_id:
                self._answer(msg.cmd_id, McuStatus.from_report(msg))
            return
        if isinstance(msg, p.Identity):
            ident = Identity(
                name=msg.name,
                firmware=f"{msg.fw_major}.{msg.fw_minor}",
                protocol=msg.protocol,
                boot_id=msg.boot_id,
                tile_sets=msg.tile_sets,
                tiles_per_set=msg.tiles_per_set,
            )
            self._answer(msg.cmd_id, ident)
            return
        if isinstance(msg, p.Event):
            self._on_event(msg)
            return
        self.counters["unexpected_messages"] += 1

    def _on_status(self, r: p.StatusReport) -> None:
        if r.boot_id in self._old_boots:
            return  # a late status from before a restart
        if self._boot_id is not None and r.boot_id != self._boot_id:
            if self._phase == "ready":
                log.info("table MCU restarted (boot %08x -> %08x)", self._boot_id, r.boot_id)
                self._begin_epoch(time.monotonic())
            return
        # delayed, older than what we have; compared round the 32-bit counter, which wraps
        # after 49.7 days of uptime
        if (
            self._boot_id is not None
            and self._status_uptime >= 0
            and (r.uptime_ms - self._status_uptime) % 2**32 >= 2**31
        ):
            return
        self._status_uptime = r.uptime_ms
        self._status = McuStatus.from_report(r)

    def _answer(self, cmd_id: int, value: Any) -> None:
        pc = self._pending.get(cmd_id)
        if pc is None or pc.state not in ("sent", "held"):
            return  # a repeat of an answer already handled
        self._pending.pop(cmd_id, None)
        self._complete(pc, value=value)

    def _complete(
        self, pc: PendingCommand, value: Any = None, error: BaseException | None = None
    ) -> None:
        if pc.abandoned:
            pc.state = "failed" if error else "done"
            self._emit(
                McuEvent(
                    "late_result",
                    {
                        "command": pc.name,
                        "ok": error is None,
                        "error": str(error) if error else None,
                        "value": repr(value) if error is None else None,
                    },
                    command_id=pc.cmd_id,
                    boot_id=self._boot_id,
                )
            )
            return
        pc._finish(value, error)

    def _on_reply(self, r: p.Reply) -> None:
        pc = self._pending.get(r.cmd_id)
        if pc is None or pc.state not in ("sent", "held"):
            return
        if r.result == p.Result.STARTED and pc.command.LONG:
            pc.state = "accepted"
            return
        self._pending.pop(r.cmd_id, None)
        if r.result == p.Result.OK:
            self._complete(pc)
        else:
            self._complete(pc, error=self._refusal(pc.name, r))

    def _refusal(self, name: str, r: p.Reply) -> CommandFailed:
        try:
            result = p.Result(r.result)
        except ValueError:
            return CommandFailed(
                f"{name}: the table answered with unknown code {r.result}",
                command=name,
                reason="unknown_reply",
            )
        if result == p.Result.LID_OPEN:
            return InterlockError(
                f"{name}: the table refused because its lid is open; close it and try again",
                command=name,
                reason="lid_open",
                fault="lid_open",
            )
        if result == p.Result.BUSY:
            state = self._status.state if self._status else "busy"
            msg = f"{name}: the table is busy ({state}); wait for it to finish and try again"
            return CommandFailed(msg, command=name, reason="busy")
        if result == p.Result.FAULTED:
            labels = ", ".join(f.label for f in p.Fault if r.detail & f.bit) or "a fault"
            return CommandFailed(
                f"{name}: the table has a fault to clear first: {labels}. Fix the cause, then "
                "clear it (`mahjong-table device clear`)",
                command=name,
                reason="fault",
                fault=(p.fault_names(r.detail) or [None])[0],
            )
        if result == p.Result.NOT_READY:
            why = {
                p.NotReady.NO_SHUFFLED_SET: "no shuffled set is waiting; shuffle first",
                p.NotReady.WALLS_UP: "the walls are already up; lower them first",
                p.NotReady.WALLS_DOWN: "the walls are already down",
                p.NotReady.SET_WAITING: "a shuffled set is already waiting; raise it first",
                p.NotReady.NOTHING_TO_SHUFFLE: "there are no tiles in the table to shuffle; "
                "lower the walls first",
            }.get(r.detail, f"not ready (code {r.detail})")
            return CommandFailed(f"{name}: {why}", command=name, reason="not_ready")
        if result == p.Result.BAD_ARGS:
            return CommandFailed(
                f"{name}: the table refused the command's values", command=name, reason="bad_args"
            )
        if result == p.Result.UNKNOWN:
            return CommandFailed(
                f"{name}: the table's firmware does not know this command; update the firmware",
                command=name,
                reason="unknown_command",
            )
        return CommandFailed(f"{name}: refused ({result.name})", command=name, reason="refused")

    def _on_event(self, ev: p.Event) -> None:
        if isinstance(ev, p.McuReset):
            if ev.boot_id != self._event_boot:
                self._event_boot = ev.boot_id
                self._last_event_no = ev.number
                self._lid_event = None
            return
        if ev.number <= self._last_event_no:
            self.counters["duplicate_events"] += 1
            return
        self._last_event_no = ev.number
        if isinstance(ev, p.LidChanged):
            self._lid_event = (ev.number, bool(ev.open))
        data = _event_data(ev)
        pc = self._pending.get(ev.cmd_id) if ev.cmd_id else None
        if pc is not None and pc.state == "accepted":
            self._pending.pop(ev.cmd_id, None)
            if isinstance(ev, p.FaultRaised):
                self._complete(pc, error=self._fault_error(pc.name, ev))
            elif isinstance(ev, p.ShuffleDone):
                self._complete(pc, ShuffleResult(ev.tile_set, ev.tiles))
            elif isinstance(ev, p.WallsUp | p.WallsDown):
                self._complete(pc, ev.tile_set)
            elif isinstance(ev, p.DiceRolled):
                self._complete(pc, DiceRoll(ev.die1, ev.die2))
            else:
                self._complete(pc)
        self._emit(
            McuEvent(
                ev.KIND,
                data,
                number=ev.number,
                command_id=ev.cmd_id or None,
                boot_id=self._event_boot,
            )
        )

    def _fault_error(self, name: str, ev: p.FaultRaised) -> CommandFailed:
        op = _OP_WORDS.get(name, name)
        try:
            fault = p.Fault(ev.fault)
        except ValueError:
            return CommandFailed(
                f"{name}: the table stopped the {op} with unknown fault {ev.fault}",
                command=name,
                reason="fault",
            )
        advice = {
            p.Fault.JAM: "clear the jam, then clear the fault (`mahjong-table device clear`)",
            p.Fault.TILES_SHORT: f"it counted {ev.detail} of {self.config.tiles_per_set} "
            "tiles; find the missing tiles, then clear the fault",
            p.Fault.LID_OPEN: "close the lid and try again",
            p.Fault.MOTOR_STALL: "check the mechanism for obstructions, then clear the fault",
            p.Fault.WATCHDOG: "the host went silent; check the connection and try again",
            p.Fault.ESTOP: "clear the stop (`mahjong-table device clear`) before moving the "
            "table again",
        }[fault]
        cls = InterlockError if fault == p.Fault.LID_OPEN else CommandFailed
        return cls(
            f"{name}: the table stopped the {op}: {fault.label}; {advice}",
            command=name,
            reason="fault",
            fault=fault.name.lower(),
        )

    # --- listeners ---------------------------------------------------------------------------

    def _emit(self, event: McuEvent) -> None:
        self.counters[f"event_{event.kind}"] += 1
        self._events.put(event)

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
