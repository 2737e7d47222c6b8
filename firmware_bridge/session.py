"""The host's side of a table session, without I/O: :class:`DeviceSession`.

It is everything :class:`~firmware_bridge.table_device.TableDevice` knows about the MCU and
nothing about threads, ports or clocks: the caller hands it the bytes read from the port and
the time, and writes out the frames :meth:`DeviceSession.poll` returns. It owns the link
epochs and the handshake (identify, check the protocol version, configure, read the status),
command ids and the table of commands in flight with their exactly-once rules, the answers,
refusals and faults that end commands, MCU restart detection, the status the MCU reports and
the events it sends, decoded for listeners. Like :class:`~firmware_bridge.link.LinkEndpoint`
and :class:`~firmware_bridge.debounce.Debouncer`, the same code then runs under the device's
I/O thread and in tests with a fake clock and an in-memory MCU.

A port's life, as the session sees it::

    session.connection_made(now)          # the port opened: a new link epoch, a handshake
    session.receive_data(data, now)       # whatever was read
    port.write(b"".join(session.poll(now)))   # after reading, and by next_deadline() at the latest
    session.connection_lost(why, now)     # read or write failed (unplugged)

Commands: ``rec = SessionCommand(session.new_command(p.Shuffle), timeout)``, then
``session.submit(rec, now)``; ``rec.done()`` once answered (its outcome in ``rec.value`` /
``rec.error``), or :meth:`DeviceSession.abandon` when its caller gives up. Events for listeners
pile up until :meth:`DeviceSession.take_events`.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from firmware_bridge import protocol as p
from firmware_bridge.config import SerialConfig
from firmware_bridge.errors import (
    CommandFailed,
    CommandTimeout,
    InterlockError,
    LinkDown,
    MessageError,
)
from firmware_bridge.framing import FrameDecoder
from firmware_bridge.link import LinkEndpoint, LinkStats

__all__ = [
    "DeviceSession",
    "DiceRoll",
    "Identity",
    "McuEvent",
    "McuStatus",
    "SessionCommand",
    "ShuffleResult",
]

log = logging.getLogger(__name__)

# a frame whose bytes stop arriving for this long is given up (a corrupted length byte
# promised more than was sent); generous for USB adapters that batch bytes for up to 16 ms
STALE_PARTIAL = 0.02

# a bare ACK waits this long for the next command to carry it (far below the MCU's 25 ms
# retransmission timeout); see LinkEndpoint's ack_delay
ACK_DELAY = 0.005

# the handshake's own commands; they are never abandoned (a stalled handshake is started over)
_HANDSHAKE_TIMEOUT = 5.0

# consecutive retransmission timeouts, with statuses still arriving, that mean the two ends'
# link state is out of step
_DESYNC_TIMEOUTS = 8

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


class SessionCommand:
    """A command the session carries: its progress and, once :meth:`done`, its outcome.

    States: ``held`` (waiting for the link), ``sent`` (given to the link), ``accepted`` (the
    table started it; an event will end it), ``done``, ``failed``. A command whose caller gave
    up (``abandoned``) keeps its progress state, so that a late answer is still recognised.
    """

    def __init__(
        self,
        command: p.Command,
        timeout: float,
        *,
        internal: bool = False,
        urgent: bool = False,
    ) -> None:
        self.command = command
        self.name = command.NAME
        self.cmd_id = command.cmd_id
        self.timeout = timeout
        self.internal = internal
        self.urgent = urgent
        self.state = "held"
        self.token: int | None = None
        self.ever_sent = False
        self.sent_epoch = 0  # the link epoch it was last sent in
        self.abandoned = False
        self.on_done: Callable[[SessionCommand], None] | None = None
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._done

    @property
    def value(self) -> Any:
        """The answer, once done without an error."""
        return self._value

    @property
    def error(self) -> BaseException | None:
        """The error that ended it, if any."""
        return self._error

    def _finish(self, value: Any = None, error: BaseException | None = None) -> None:
        if self._done:
            return
        self._value, self._error = value, error
        if not self.abandoned:
            self.state = "failed" if error else "done"
        self._done = True
        self._finished()
        if self.on_done is not None:
            self.on_done(self)

    def _finished(self) -> None:
        """Called once, as the command is done; a subclass wakes its waiters here."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} #{self.cmd_id} {self.state}>"


# --- the session ----------------------------------------------------------------------------


class DeviceSession:
    """The host's protocol state for one table, across port openings and MCU restarts.

    :param config: timeouts, window and table settings (the ``[serial]`` table)
    :param port_name: the port, for messages and the events' ``port`` field
    :param instance: this host's instance id (RESET payload); random by default
    :param first_id: the first command id; random by default (ids start anywhere, never 0:
        a previous host's answer still on the line cannot be taken for this one's command of
        the same id)
    :param first_epoch: the first link epoch (1-255); random by default

    Not thread-safe: one thread at a time calls it (the device holds a lock around it).
    """

    def __init__(
        self,
        config: SerialConfig | None = None,
        *,
        port_name: str = "",
        instance: int | None = None,
        first_id: int | None = None,
        first_epoch: int | None = None,
    ) -> None:
        self.config = config or SerialConfig()
        self.port_name = port_name
        self.link = LinkEndpoint(
            initiator=True,
            window=self.config.window,
            max_rto=self.config.retransmit_cap,
            ack_delay=ACK_DELAY,
            first_epoch=first_epoch,
        )
        self.decoder = FrameDecoder()
        self.instance = instance or int.from_bytes(os.urandom(4), "little") or 1
        if first_id is None:
            first_id = int.from_bytes(os.urandom(4), "little") % 0xFFFFFFFF + 1
        if not 0 < first_id <= 0xFFFFFFFF:
            raise ValueError("first_id must be 1 to 2**32 - 1")
        self.next_id = first_id
        self.counters = collections.Counter[str]()
        self._pending: dict[int, SessionCommand] = {}
        self._held: collections.deque[SessionCommand] = collections.deque()
        self._resend: list[SessionCommand] = []
        self.phase = "closed"  #: closed, resetting, handshake, ready
        self.phase_since = 0.0
        self.ready = False  #: handshaken (or refused for good: see ``fatal``)
        self.link_up = False  #: frames arrive from the MCU
        self.last_rx = 0.0  #: when the last valid frame arrived
        self._last_byte = 0.0
        self._last_tx = 0.0
        self._ever_ready = False
        self.identity: Identity | None = None
        self.boot_id: int | None = None
        self._old_boots: set[int] = set()
        self.status: McuStatus | None = None  #: the latest status the MCU reported
        # the last lid event this boot, (its number, open): newer than a status, it is the
        # lid's state (the periodic status lags an event by up to its interval)
        self._lid_event: tuple[int, bool] | None = None
        self._status_uptime = -1
        self._event_boot: int | None = None
        self._last_event_no = 0
        self._boot_changed_from: int | None = None
        #: set when the MCU cannot be used at all (another protocol version); raised to callers
        self.fatal: BaseException | None = None
        self._events: list[McuEvent] = []
        # the time given with the latest call: answers handled deep in a call take it
        self._now = 0.0

    # --- state ---------------------------------------------------------------------------------

    @property
    def link_stats(self) -> LinkStats:
        return self.link.stats

    @property
    def lid_open(self) -> bool:
        """The lid as last heard of: a lid event newer than the last status wins."""
        st = self.status
        lid_open = st is not None and st.lid_open
        lid = self._lid_event
        if lid is not None and (st is None or lid[0] > st.events):
            lid_open = lid[1]
        return lid_open

    def pending(self) -> list[SessionCommand]:
        """The commands not yet done, or given up but still awaiting a late answer."""
        seen = {id(c): c for c in (*self._pending.values(), *self._held, *self._resend)}
        return list(seen.values())

    def take_events(self) -> list[McuEvent]:
        """The events for listeners since the last call, in order."""
        out, self._events = self._events, []
        return out

    # --- the port ------------------------------------------------------------------------------

    def connection_made(self, now: float) -> None:
        """The port opened: start a new link epoch (and, once it is agreed, the handshake)."""
        self._now = now
        self.decoder.reset()
        self._begin_epoch(now)

    def connection_lost(self, why: str, now: float) -> None:
        """The port failed or vanished. What was sent stays in the link: the next epoch
        decides whether it may be sent again."""
        self._now = now
        if self.phase == "closed":
            return
        self.counters["port_lost"] += 1
        self._set_phase("closed", now)
        self.ready = False
        if self.link_up:
            self.link_up = False
            self._emit(McuEvent("link_lost", {"reason": why}))

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes read from the port."""
        self._now = now
        self._last_byte = now
        self._receive(data, now)

    def next_deadline(self) -> float | None:
        """When :meth:`poll` must next be called even if nothing arrives (None: no timer)."""
        if self.phase == "closed":
            return None
        due = self.link.next_deadline()
        times = [] if due is None else [due]
        if self.decoder.partial:
            times.append(self._last_byte + STALE_PARTIAL)
        if self.link.established:
            times.append(self._last_tx + self.config.status_interval)
        if self.phase == "ready":
            if self.link_up:
                times.append(self.last_rx + self.config.link_lost_after)
        else:
            times.append(self.phase_since + self._handshake_limit())
        return min(times) if times else None

    def poll(self, now: float) -> list[bytes]:
        """Run the timers; returns every frame to write now, in order (nothing while the port
        is closed: what is queued waits in the link)."""
        self._now = now
        if self.phase == "closed":
            return []
        if self.decoder.partial and now - self._last_byte > STALE_PARTIAL:
            self._receive(None, now)
        out: list[bytes] = []
        if self.link.established and now - self._last_tx >= self.config.status_interval:
            out.append(self.link.datagram(p.Keepalive().encode()))
        silent = now - self.last_rx
        if self.phase == "ready":
            if self.link_up and silent > self.config.link_lost_after:
                self.link_up = False
                self.counters["link_lost"] += 1
                self._emit(McuEvent("link_lost", {"reason": f"no status for {silent:.1f} s"}))
            if self.link_up and self.link.consecutive_timeouts >= _DESYNC_TIMEOUTS:
                # statuses arrive but nothing is acknowledged: the link state is out of step
                self.counters["desync"] += 1
                self._begin_epoch(now)
        elif self.phase != "closed" and now - self.phase_since > self._handshake_limit():
            # the handshake stalled (the MCU restarted during it?): start over
            self.counters["handshake_restarts"] += 1
            self._begin_epoch(now)
        out += self.link.poll(now)
        if out:
            self._last_tx = now
        return out

    def close(self) -> list[bytes]:
        """End the session: every command still waiting fails with LinkDown. Returns the ACK
        still owed, to write before closing the port (unacknowledged, the MCU would keep its
        last answer for the next host)."""
        owed = self.link.owed_ack()
        err = LinkDown(f"the connection to {self.port_name} was closed")
        for rec in self.pending():
            rec._finish(error=err)
        self._pending.clear()
        self._held.clear()
        self._resend.clear()
        self.ready = False
        return owed

    def _handshake_limit(self) -> float:
        return max(3.0, 4 * self.config.link_lost_after)

    def _set_phase(self, phase: str, now: float) -> None:
        self.phase = phase
        self.phase_since = now

    # --- commands ------------------------------------------------------------------------------

    def new_command(self, cls: type[p.Command], **fields: Any) -> p.Command:
        """A command of ``cls`` with the next command id."""
        cid = self.next_id
        self.next_id = self.next_id % 0xFFFFFFFF + 1
        return cls(cmd_id=cid, **fields)

    def submit(self, rec: SessionCommand, now: float) -> None:
        """Take a command: given to the link at once while the link is ready (an emergency
        stop as soon as an epoch is agreed), else held until the handshake is done. Raises the
        session's fatal error, if any, and takes nothing."""
        if self.fatal is not None and not rec.internal:
            raise self.fatal
        self._now = max(self._now, now)
        self._pending[rec.cmd_id] = rec
        if rec.internal or (rec.urgent and self.link.established) or self.phase == "ready":
            self._send(rec)
        elif rec.urgent:
            self._held.appendleft(rec)
        else:
            self._held.append(rec)

    def _submit_internal(self, cls: type[p.Command], **fields: Any) -> SessionCommand:
        rec = SessionCommand(self.new_command(cls, **fields), _HANDSHAKE_TIMEOUT, internal=True)
        self.submit(rec, self._now)
        return rec

    def _send(self, rec: SessionCommand) -> None:
        rec.token = self.link.send(rec.command.encode(), urgent=rec.urgent)
        rec.state = "sent"
        rec.sent_epoch = self.link.epoch if self.link.established else -1
        self.counters["commands_sent"] += 1

    def abandon(self, rec: SessionCommand, not_ready_why: str = "the link is down") -> None:
        """The caller's timeout expired: withdraw the command if it never left, else keep
        listening for a late answer (reported as a ``late_result`` event). It is finished with
        the error its caller gets: ``LinkDown`` (saying ``not_ready_why``) if it never left
        because the link was not up, else ``CommandTimeout`` with ``maybe_executed`` telling
        whether the table may have it."""
        if rec.done():
            return
        never_sent = not rec.ever_sent
        if rec.state == "held":
            if rec in self._held:
                self._held.remove(rec)
            if rec in self._resend:
                self._resend.remove(rec)
            # not to be sent again; but one sent in an earlier epoch may have reached the MCU,
            # which keeps its answer for this host across epochs: it stays in _pending,
            # abandoned, so that answer comes as a late_result (until the MCU restarts, which
            # forgets it)
        elif rec.state == "sent" and rec.token is not None:
            withdrawn = self.link.cancel(rec.token)
            never_sent = withdrawn
            if withdrawn:
                rec.token = None
        else:
            never_sent = False
        if never_sent:
            self._pending.pop(rec.cmd_id, None)
        else:
            rec.abandoned = True
        self.counters["timeouts"] += 1
        if never_sent and not self.ready:
            err: BaseException = LinkDown(f"{rec.name}: nothing was sent: {not_ready_why}")
        elif never_sent:
            err = CommandTimeout(
                f"{rec.name}: not sent within {rec.timeout:g} s (the link is congested); "
                "nothing was sent",
                command=rec.name,
                maybe_executed=False,
            )
        elif rec.state == "accepted":
            op = _OP_WORDS.get(rec.name, rec.name)
            err = CommandTimeout(
                f"{rec.name}: the table started the {op} but did not report its end within "
                f"{rec.timeout:g} s; check `status` before trying again",
                command=rec.name,
                maybe_executed=True,
            )
        else:
            err = CommandTimeout(
                f"{rec.name}: no answer from the table within {rec.timeout:g} s; it may "
                "still carry it out; check `status` before trying again",
                command=rec.name,
                maybe_executed=True,
            )
        rec._finish(error=err)

    # --- epochs and the handshake --------------------------------------------------------------

    def _begin_epoch(self, now: float) -> None:
        """Start a new link epoch and handshake. Commands not yet answered are taken back
        from the link; the handshake decides whether they may be sent again."""
        self.ready = False
        by_token = {c.token: c for c in self._pending.values() if c.token is not None}
        for token, _payload, ever_sent in self.link.drain():
            rec = by_token.get(token)
            if rec is None:
                continue
            rec.token = None
            rec.ever_sent = rec.ever_sent or ever_sent
            if rec.internal:
                self._pending.pop(rec.cmd_id, None)
                continue
            rec.state = "held"
            self._resend.append(rec)
        self._resend.sort(key=lambda c: (not c.urgent, c.cmd_id))
        self._set_phase("resetting", now)
        self.link.start_reset(self.instance.to_bytes(4, "little"), now)

    def _on_epoch_started(self, now: float) -> None:
        self._set_phase("handshake", now)
        # an emergency stop waiting for the line goes as soon as there is one, before the
        # handshake's round trips
        for c in [c for c in (*self._held, *self._resend) if c.urgent and not c.done()]:
            if c.state == "held":
                self._send(c)
            if c in self._held:
                self._held.remove(c)
            if c in self._resend:
                self._resend.remove(c)
        self._submit_internal(p.Identify).on_done = self._on_identified

    def _on_identified(self, rec: SessionCommand) -> None:
        if rec.error is not None or self.phase != "handshake":
            return
        ident: Identity = rec.value
        if ident.protocol != p.PROTOCOL_VERSION:
            self.fatal = LinkDown(
                f"the table's firmware speaks protocol version {ident.protocol}, this host "
                f"speaks {p.PROTOCOL_VERSION}: update the firmware or this software"
            )
            for c in [*self._held, *self._resend]:
                c._finish(error=self.fatal)
            self._held.clear()
            self._resend.clear()
            self.ready = True  # settled: waiting for readiness gets the fatal error at once
            return
        self.identity = ident
        if self.boot_id is not None and ident.boot_id != self.boot_id:
            self._mcu_restarted(ident.boot_id)
        if self.boot_id != ident.boot_id:
            self._status_uptime = -1
            self.status = None
            self._lid_event = None
        self.boot_id = ident.boot_id
        if self._event_boot != ident.boot_id:
            self._event_boot = ident.boot_id
            self._last_event_no = 0
        cfg = self.config
        self._submit_internal(
            p.Configure,
            tiles_per_set=cfg.tiles_per_set,
            status_interval_ms=round(cfg.status_interval * 1000),
            watchdog_ms=round(cfg.watchdog * 1000),
        ).on_done = self._on_configured

    def _mcu_restarted(self, new_boot: int) -> None:
        """The MCU restarted: what it was doing is lost. Fail what it may have received; keep
        what never reached it, to send after the handshake."""
        old = self.boot_id
        assert old is not None
        self._old_boots.add(old)
        self._boot_changed_from = old
        self.counters["mcu_resets"] += 1
        keep = []
        for rec in self._resend:
            if rec.done():
                continue
            if rec.ever_sent:
                self._fail_reset(rec)
            else:
                keep.append(rec)
        self._resend = keep
        for rec in list(self._pending.values()):
            if rec.abandoned and rec.state == "held":
                self._pending.pop(rec.cmd_id, None)  # its answer, if any, went with the MCU
                continue
            if rec.internal or rec.done():
                continue
            # started, or acknowledged by the old MCU and never answered (sent in an earlier
            # epoch: what this epoch sent went to the new MCU, an emergency stop say)
            if rec.state == "accepted" or (
                rec.state == "sent" and rec.sent_epoch != self.link.epoch
            ):
                self._fail_reset(rec)

    def _fail_reset(self, rec: SessionCommand) -> None:
        self._pending.pop(rec.cmd_id, None)
        op = _OP_WORDS.get(rec.name, rec.name)
        rec._finish(
            error=CommandFailed(
                f"{rec.name}: the table's controller restarted during the {op}; it did not "
                "finish (check the table, then try again)",
                command=rec.name,
                reason="mcu_reset",
            )
        )

    def _on_configured(self, rec: SessionCommand) -> None:
        if rec.error is not None or self.phase != "handshake":
            return
        self._submit_internal(p.GetStatus).on_done = self._on_synced

    def _on_synced(self, rec: SessionCommand) -> None:
        if rec.error is not None or self.phase != "handshake":
            return
        self._set_phase("ready", self._now)
        first = not self._ever_ready
        self._ever_ready = True
        was_up = self.link_up
        self.link_up = True
        # commands answered during the handshake (answers queued before a reconnection) or
        # already started by the table are not sent again
        for c in [*self._resend, *self._held]:
            if c.state == "held" and not c.done():
                self._send(c)
        self._resend.clear()
        self._held.clear()
        self.ready = True
        status = self.status
        data = {
            "port": self.port_name,
            "boot_id": self.boot_id,
            "status": status.__dict__ if status else None,
        }
        if self._boot_changed_from is not None:
            self._emit(McuEvent("reset", {**data, "previous_boot_id": self._boot_changed_from}))
            self._boot_changed_from = None
        elif first:
            self._emit(McuEvent("connected", data))
        elif not was_up:
            self._emit(McuEvent("link_restored", {**data, "reason": "reconnected"}))

    # --- what the MCU sends --------------------------------------------------------------------

    def _receive(self, data: bytes | None, now: float) -> None:
        """Handle received bytes (``None``: give up on a frame that stopped half-way)."""
        frames = self.decoder.feed(data) if data is not None else self.decoder.flush_stale()
        for frame in frames:
            self.last_rx = now
            for d in self.link.on_frame(frame, now):
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
        if self.decoder.take_errors():
            self.link.on_corrupt(now)
        if frames and not self.link_up and self.phase == "ready":
            self.link_up = True
            self._emit(McuEvent("link_restored", {"reason": "statuses resumed"}))

    def _on_message(self, msg: p.Message, now: float) -> None:
        if isinstance(msg, p.Reply):  # the usual answer first
            self._on_reply(msg)
            return
        if isinstance(msg, p.StatusReport):
            self._on_status(msg, now)
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

    def _on_status(self, r: p.StatusReport, now: float) -> None:
        if r.boot_id in self._old_boots:
            return  # a late status from before a restart
        if self.boot_id is not None and r.boot_id != self.boot_id:
            if self.phase == "ready":
                log.info("table MCU restarted (boot %08x -> %08x)", self.boot_id, r.boot_id)
                self._begin_epoch(now)
            return
        # delayed, older than what we have; compared round the 32-bit counter, which wraps
        # after 49.7 days of uptime
        if (
            self.boot_id is not None
            and self._status_uptime >= 0
            and (r.uptime_ms - self._status_uptime) % 2**32 >= 2**31
        ):
            return
        self._status_uptime = r.uptime_ms
        self.status = McuStatus.from_report(r)

    def _answer(self, cmd_id: int, value: Any) -> None:
        rec = self._pending.get(cmd_id)
        if rec is None or rec.state not in ("sent", "held"):
            return  # a repeat of an answer already handled
        self._pending.pop(cmd_id, None)
        self._complete(rec, value=value)

    def _complete(
        self, rec: SessionCommand, value: Any = None, error: BaseException | None = None
    ) -> None:
        if rec.abandoned:
            rec.state = "failed" if error else "done"
            self._emit(
                McuEvent(
                    "late_result",
                    {
                        "command": rec.name,
                        "ok": error is None,
                        "error": str(error) if error else None,
                        "value": repr(value) if error is None else None,
                    },
                    command_id=rec.cmd_id,
                    boot_id=self.boot_id,
                )
            )
            return
        rec._finish(value, error)

    def _on_reply(self, r: p.Reply) -> None:
        rec = self._pending.get(r.cmd_id)
        if rec is None or rec.state not in ("sent", "held"):
            return
        if r.result == p.Result.STARTED and rec.command.LONG:
            rec.state = "accepted"
            return
        self._pending.pop(r.cmd_id, None)
        if r.result == p.Result.OK:
            self._complete(rec)
        else:
            self._complete(rec, error=self._refusal(rec.name, r))

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
            state = self.status.state if self.status else "busy"
            msg = f"{name}: the table is busy ({state}); wait for it to finish and try again"
            return CommandFailed(msg, command=name, reason="busy")
        if result == p.Result.FAULTED:
            labels = ", ".join(f.label for f in p.Fault if r.detail & f.bit) or "a fault"
            return CommandFailed(
                f"{name}: the table has a fault to clear first: {labels}. Fix the cause, then "
                "clear it (`mahjong-table device clear`)",
                command=name,
                reason="fault",
                fault=next(iter(p.fault_names(r.detail)), None),
            )
        if result == p.Result.NOT_READY:
            reasons: dict[p.NotReady | None, str] = {
                p.NotReady.NO_SHUFFLED_SET: "no shuffled set is waiting; shuffle first",
                p.NotReady.WALLS_UP: "the walls are already up; lower them first",
                p.NotReady.WALLS_DOWN: "the walls are already down",
                p.NotReady.SET_WAITING: "a shuffled set is already waiting; raise it first",
                p.NotReady.NOTHING_TO_SHUFFLE: "there are no tiles in the table to shuffle; "
                "lower the walls first",
            }
            why = reasons.get(_not_ready(r.detail), f"not ready (code {r.detail})")
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
        rec = self._pending.get(ev.cmd_id) if ev.cmd_id else None
        if rec is not None and rec.state == "accepted":
            self._pending.pop(ev.cmd_id, None)
            if isinstance(ev, p.FaultRaised):
                self._complete(rec, error=self._fault_error(rec.name, ev))
            elif isinstance(ev, p.ShuffleDone):
                self._complete(rec, ShuffleResult(ev.tile_set, ev.tiles))
            elif isinstance(ev, p.WallsUp | p.WallsDown):
                self._complete(rec, ev.tile_set)
            elif isinstance(ev, p.DiceRolled):
                self._complete(rec, DiceRoll(ev.die1, ev.die2))
            else:
                self._complete(rec)
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

    def _emit(self, event: McuEvent) -> None:
        self.counters[f"event_{event.kind}"] += 1
        self._events.append(event)


def _not_ready(detail: int) -> p.NotReady | None:
    """A NOT_READY reply's detail as the reason it names, or None for a code this host does
    not know (a newer MCU): the message then gives the number."""
    try:
        return p.NotReady(detail)
    except ValueError:
        return None
