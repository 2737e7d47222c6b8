"""A simulated table MCU: the firmware side of the protocol and the machine it drives.

:class:`SimulatedMcu` speaks the bridge's protocol with the bridge's own framing, link layer
and messages (one wire format, one implementation), and behaves like the table: shuffles,
wall lifts and dice rolls take realistic times divided by ``speed``; two tile sets alternate
(the one that has waited longest in the table is shuffled next); lid and tile-count sensors;
a watchdog that stops the motors when the host is silent for longer than the configured time.

Like the link layer it does no I/O and reads no clock: :mod:`hardware_sim.mcu_server` moves
its bytes over a pty or TCP and calls it with the time. Faults are injected through
:meth:`SimulatedMcu.inject` (jam, tiles short, motor stall on the next operation), the lid
sensor, and :meth:`SimulatedMcu.boot` (an MCU reset).

It counts every command it executes per command id and reports the totals in its status
(``executed``, ``duplicates`` = runs of an id that had already run, ``replayed`` = repeats
answered from memory), so a test can prove that nothing ran twice.
"""

from __future__ import annotations

import collections
import random
from dataclasses import dataclass, field
from typing import Any

from firmware_bridge import protocol as p
from firmware_bridge.errors import MessageError
from firmware_bridge.framing import Frame
from firmware_bridge.link import LinkEndpoint

__all__ = ["FIRMWARE_VERSION", "SimTimings", "SimulatedMcu"]

FIRMWARE_VERSION = (1, 0)
_MEMORY = 64  # command ids remembered, like a small ring buffer in MCU RAM
_LATCHED = p.Fault.JAM.bit | p.Fault.TILES_SHORT.bit | p.Fault.MOTOR_STALL.bit | p.Fault.ESTOP.bit


@dataclass(frozen=True)
class SimTimings:
    """Durations at speed 1, in seconds (a real table's order of magnitude)."""

    shuffle: float = 24.0
    lift: float = 8.0
    lower: float = 5.0
    dice: float = 1.5
    #: how long a reset keeps the MCU deaf and mute (not scaled by speed)
    boot: float = 0.2


@dataclass
class _Operation:
    name: str
    cmd_id: int
    started: float
    ends: float
    #: (time, fault, detail) when an injected fault will stop it
    fault_at: tuple[float, p.Fault, int] | None = None
    tile_set: int = p.NO_SET


@dataclass
class SimCounters:
    """Totals over the simulator's whole life (all boots), for tests and ``stats``."""

    executed: int = 0
    duplicates: int = 0
    replayed: int = 0
    boots: int = 0
    events: int = 0
    bad_messages: int = 0
    dropped_for_new_host: int = 0
    watchdog_stops: int = 0
    per_command: collections.Counter[str] = field(default_factory=collections.Counter)


_ANSWER_TYPES = 0x40
"""Message types from 0x40 up go from the MCU to the host; below it are the host's commands."""


class SimulatedMcu:
    """The simulated table controller.

    :param speed: divides every mechanical duration (10 = ten times faster than a table)
    :param seed: seeds the dice, boot ids and shuffle order
    :param now: the time of power-on
    """

    def __init__(
        self,
        *,
        speed: float = 1.0,
        seed: int | None = None,
        timings: SimTimings | None = None,
        name: str = "mahjong-table simulated MCU",
        now: float = 0.0,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self.timings = timings or SimTimings()
        self.name = name
        self.rng = random.Random(seed)
        self.counters = SimCounters()
        # the physical table survives resets
        self.lid_open = False
        self.tile_count = {0: 144, 1: 144}
        self.where = {0: "hopper", 1: "hopper"}
        self.hopper_since = {0: now, 1: now}
        self.injected: dict[str, int] = {}
        self.boot_id = 0
        self._now = now
        self.boot(now, reason=0)

    # --- power ---------------------------------------------------------------------------------

    def boot(self, now: float, reason: int = 2) -> None:
        """Restart the MCU: RAM is lost (link state, command memory, running operation,
        latched faults, lights); the tiles stay where they are. ``reason``: 0 power on,
        1 watchdog, 2 software."""
        old = self.boot_id
        while self.boot_id in (0, old):
            self.boot_id = self.rng.getrandbits(32)
        self.counters.boots += 1
        self.booted_at = now
        self.awake_at = now + self.timings.boot
        self.link = LinkEndpoint(initiator=False)
        self.instance: bytes | None = None
        self.memory: collections.OrderedDict[int, bytes] = collections.OrderedDict()
        self.executed: collections.Counter[int] = collections.Counter()
        # sums over `executed`, kept as it changes: a status reports them several times a
        # second, and summing thousands of ids each time shows in the link's latency
        self._runs = 0
        self._repeat_runs = 0
        self.replayed = 0
        self.op: _Operation | None = None
        self.latched = 0
        self.transient = 0
        self.lights_mask = 0
        self.lights_level = 0
        self.dice = (0, 0)
        self.event_no = 0
        self.tiles_per_set = 144
        self.status_interval = 0.25
        self.watchdog = 1.0
        self.last_host_rx = now
        self.next_status = self.awake_at
        self._pending_boot_event: int | None = reason

    @property
    def awake(self) -> bool:
        return self._now >= self.awake_at

    # --- fault injection -----------------------------------------------------------------------

    def inject(self, fault: str, arg: int | None = None) -> None:
        """Arm a fault for the next operation it applies to: ``jam`` (next shuffle),
        ``tiles_short`` (next shuffle counts ``arg`` tiles, default 4 short), ``stall`` (next
        shuffle, lift or lower)."""
        if fault not in ("jam", "tiles_short", "stall"):
            raise ValueError(f"unknown fault {fault!r}: jam, tiles_short, stall")
        if fault == "tiles_short":
            arg = self.tiles_per_set - 4 if arg is None else arg
            if not 0 <= arg < self.tiles_per_set:
                raise ValueError(f"tiles_short needs a count below {self.tiles_per_set}")
        self.injected[fault] = 0 if arg is None else arg

    def set_lid(self, open_: bool, now: float) -> None:
        """Open or close the lid (the sensor). Opening it stops any wall or shuffle motion."""
        self._now = now
        if open_ == self.lid_open:
            return
        self.lid_open = open_
        self._event(p.LidChanged, open=int(open_))
        if open_ and self.op is not None and self.op.name != "dice":
            self._abort(p.Fault.LID_OPEN, 0)

    # --- the wire ------------------------------------------------------------------------------

    def on_frames(self, frames: list[Frame], corrupt: int, now: float) -> None:
        """Frames received from the host (already decoded), and how many arrived corrupt."""
        self._now = now
        if not self.awake:
            return  # still booting: the UART is not listening
        if corrupt:
            self.link.on_corrupt(now)
        for frame in frames:
            self.last_host_rx = now
            for d in self.link.on_frame(frame, now):
                if d.kind == "reset":
                    if d.payload != self.instance:
                        # a new host: forget the ids of the previous one's commands, and the
                        # answers and events still owed to it (taken by the new host, an old
                        # reply would answer its own command of that id, an old event would
                        # read as new); the new host asks for the state it needs. What was
                        # queued before any host came (the boot event) is for the first one.
                        if self.instance is not None:
                            self.counters.dropped_for_new_host += self.link.drop_queued()
                        self.instance = d.payload
                        self.memory.clear()
                        self.executed.clear()
                        self._runs = self._repeat_runs = 0
                elif d.kind == "data":
                    self._on_command_payload(d.payload, now)
                # datagrams from the host (keepalives) only feed the watchdog

    def poll(self, now: float) -> list[bytes]:
        """Advance the machine to ``now``; returns the frames to transmit."""
        self._now = now
        if not self.awake:
            return []
        if self._pending_boot_event is not None:
            self._event(p.McuReset, boot_id=self.boot_id, reason=self._pending_boot_event)
            self._pending_boot_event = None
        self._advance(now)
        out = self.link.poll(now)
        if now >= self.next_status:
            out.append(self.link.datagram(self.status_report(0).encode()))
            self.next_status = max(self.next_status + self.status_interval, now)
        return out

    def next_deadline(self) -> float:
        """When :meth:`poll` must next be called."""
        t = self.next_status if self.awake else min(self.next_status, self.awake_at)
        link = self.link.next_deadline()
        if link is not None and link < t:
            t = link
        op = self.op
        if op is not None:
            t = min(t, op.ends, self.last_host_rx + self.watchdog)
            if op.fault_at:
                t = min(t, op.fault_at[0])
        return t

    # --- commands ------------------------------------------------------------------------------

    def _on_command_payload(self, payload: bytes, now: float) -> None:
        try:
            msg = p.decode_message(payload)
        except MessageError:
            self.counters.bad_messages += 1
            if len(payload) >= 5 and payload[0] < _ANSWER_TYPES and not p.is_known(payload[0]):
                # a command of a newer host, by its type's range: answered UNKNOWN (its id
                # is where every command's is), so the host says to update the firmware
                # instead of waiting out its timeout
                cmd_id = int.from_bytes(payload[1:5], "little")
                if cmd_id:
                    answer = p.Reply(cmd_id, p.Result.UNKNOWN, payload[0]).encode()
                    self.memory[cmd_id] = answer
                    self.link.send(answer)
            return
        if not isinstance(msg, p.Command):
            self.counters.bad_messages += 1
            return
        remembered = self.memory.get(msg.cmd_id)
        if remembered is not None:
            self.replayed += 1
            self.counters.replayed += 1
            self.link.send(remembered)
            return
        runs = self.executed.get(msg.cmd_id, 0) + 1
        self.executed[msg.cmd_id] = runs
        self._runs += 1
        self.counters.executed += 1
        self.counters.per_command[msg.NAME] += 1
        if runs > 1:
            self._repeat_runs += 1
            self.counters.duplicates += 1
        answer = self._execute(msg, now).encode()
        self.memory[msg.cmd_id] = answer
        while len(self.memory) > _MEMORY:
            self.memory.popitem(last=False)
        self.link.send(answer, urgent=isinstance(msg, p.EmergencyStop))

    @property
    def duplicates(self) -> int:
        """Runs of a command id that had already run (since boot or a new host's first RESET)."""
        return self._repeat_runs

    def _execute(self, cmd: p.Command, now: float) -> p.Message:
        cid = cmd.cmd_id
        if isinstance(cmd, p.Identify):
            return p.Identity(
                cid,
                p.PROTOCOL_VERSION,
                FIRMWARE_VERSION[0],
                FIRMWARE_VERSION[1],
                self.boot_id,
                len(self.tile_count),
                self.tiles_per_set,
                self.name,
            )
        if isinstance(cmd, p.GetStatus):
            return self.status_report(cid)
        if isinstance(cmd, p.Configure):
            ok = (
                1 <= cmd.tiles_per_set <= 1000
                and 200 <= cmd.status_interval_ms <= 500
                and 300 <= cmd.watchdog_ms <= 60000
            )
            if not ok:
                return p.Reply(cid, p.Result.BAD_ARGS)
            if cmd.tiles_per_set != self.tiles_per_set:
                self.tiles_per_set = cmd.tiles_per_set
                for s in self.tile_count:
                    self.tile_count[s] = cmd.tiles_per_set
            self.status_interval = cmd.status_interval_ms / 1000
            self.watchdog = cmd.watchdog_ms / 1000
            return p.Reply(cid, p.Result.OK)
        if isinstance(cmd, p.Lights):
            self.lights_mask, self.lights_level = cmd.mask, cmd.level
            return p.Reply(cid, p.Result.OK)
        if isinstance(cmd, p.ClearFaults):
            cleared = self.latched | self.transient
            self.latched = self.transient = 0
            if cleared:
                self._event(p.FaultsCleared, cleared=cleared)
            return p.Reply(cid, p.Result.OK)
        if isinstance(cmd, p.EmergencyStop):
            if self.op is not None:
                self._abort(p.Fault.ESTOP, 0)
            self.latched |= p.Fault.ESTOP.bit
            return p.Reply(cid, p.Result.OK)
        if isinstance(cmd, p.Shuffle | p.LiftWalls | p.LowerWalls | p.RollDice):
            return self._start(cmd, now)
        return p.Reply(cid, p.Result.UNKNOWN, cmd.TYPE)

    def _start(self, cmd: p.Command, now: float) -> p.Reply:
        cid = cmd.cmd_id
        if self.op is not None:
            return p.Reply(cid, p.Result.BUSY, self.op.cmd_id & 0xFFFF)
        if self.latched:
            return p.Reply(cid, p.Result.FAULTED, self.latched)
        motion = not isinstance(cmd, p.RollDice)
        if motion and self.lid_open:
            return p.Reply(cid, p.Result.LID_OPEN)
        t = self.timings
        tile_set = p.NO_SET
        if isinstance(cmd, p.Shuffle):
            if self._position("ready") is not None:
                return p.Reply(cid, p.Result.NOT_READY, p.NotReady.SET_WAITING)
            in_hopper = [s for s, w in self.where.items() if w == "hopper"]
            if not in_hopper:
                return p.Reply(cid, p.Result.NOT_READY, p.NotReady.NOTHING_TO_SHUFFLE)
            tile_set = min(in_hopper, key=lambda s: (self.hopper_since[s], s))
            duration = t.shuffle
        elif isinstance(cmd, p.LiftWalls):
            if self._position("table") is not None:
                return p.Reply(cid, p.Result.NOT_READY, p.NotReady.WALLS_UP)
            ready = self._position("ready")
            if ready is None:
                return p.Reply(cid, p.Result.NOT_READY, p.NotReady.NO_SHUFFLED_SET)
            tile_set = ready
            duration = t.lift
        elif isinstance(cmd, p.LowerWalls):
            on_table = self._position("table")
            if on_table is None:
                return p.Reply(cid, p.Result.NOT_READY, p.NotReady.WALLS_DOWN)
            tile_set = on_table
            duration = t.lower
        else:
            duration = t.dice
        duration /= self.speed
        self.transient = 0
        op = _Operation(cmd.NAME, cid, now, now + duration, tile_set=tile_set)
        if cmd.NAME == "shuffle" and "jam" in self.injected:
            del self.injected["jam"]
            op.fault_at = (now + 0.4 * duration, p.Fault.JAM, 0)
        elif motion and "stall" in self.injected:
            del self.injected["stall"]
            op.fault_at = (now + 0.5 * duration, p.Fault.MOTOR_STALL, 0)
        elif cmd.NAME == "shuffle" and "tiles_short" in self.injected:
            counted = self.injected.pop("tiles_short")
            op.fault_at = (op.ends, p.Fault.TILES_SHORT, counted)
        self.op = op
        return p.Reply(cid, p.Result.STARTED)

    def _position(self, where: str) -> int | None:
        return next((s for s, w in self.where.items() if w == where), None)

    # --- time ----------------------------------------------------------------------------------

    def _advance(self, now: float) -> None:
        op = self.op
        if op is None:
            return
        if now - self.last_host_rx > self.watchdog:
            self.counters.watchdog_stops += 1
            self._abort(p.Fault.WATCHDOG, 0)
            return
        if op.fault_at is not None and now >= op.fault_at[0]:
            _, fault, detail = op.fault_at
            self._abort(fault, detail)
            return
        if now < op.ends:
            return
        self.op = None
        s = op.tile_set
        if op.name == "shuffle":
            self.where[s] = "ready"
            self._event(p.ShuffleDone, cmd_id=op.cmd_id, tile_set=s, tiles=self.tile_count[s])
        elif op.name == "lift":
            self.where[s] = "table"
            self._event(p.WallsUp, cmd_id=op.cmd_id, tile_set=s)
        elif op.name == "lower":
            self.where[s] = "hopper"
            self.hopper_since[s] = now
            self._event(p.WallsDown, cmd_id=op.cmd_id, tile_set=s)
        else:
            self.dice = (self.rng.randint(1, 6), self.rng.randint(1, 6))
            self._event(p.DiceRolled, cmd_id=op.cmd_id, die1=self.dice[0], die2=self.dice[1])

    def _abort(self, fault: p.Fault, detail: int) -> None:
        """Stop the running operation with a fault; the tiles stay where they were."""
        op = self.op
        self.op = None
        if fault.bit & _LATCHED:
            self.latched |= fault.bit
        elif fault == p.Fault.WATCHDOG:
            self.transient |= fault.bit
        self._event(p.FaultRaised, cmd_id=op.cmd_id if op else 0, fault=fault, detail=detail)

    def _event(self, cls: type[p.Event], **fields: Any) -> None:
        self.event_no += 1
        self.counters.events += 1
        self.link.send(cls(number=self.event_no, **fields).encode())

    # --- status --------------------------------------------------------------------------------

    def fault_bits(self) -> int:
        return self.latched | self.transient | (p.Fault.LID_OPEN.bit if self.lid_open else 0)

    def state(self) -> p.State:
        if self.op is None:
            return p.State.IDLE
        return {
            "shuffle": p.State.SHUFFLING,
            "lift": p.State.LIFTING,
            "lower": p.State.LOWERING,
            "dice": p.State.ROLLING,
        }[self.op.name]

    def status_report(self, cmd_id: int) -> p.StatusReport:
        table = self._position("table")
        ready = self._position("ready")
        return p.StatusReport(
            cmd_id=cmd_id,
            boot_id=self.boot_id,
            uptime_ms=min(int((self._now - self.booted_at) * 1000), 0xFFFFFFFF),
            state=self.state(),
            faults=self.fault_bits(),
            events=self.event_no,
            table_set=p.NO_SET if table is None else table,
            ready_set=p.NO_SET if ready is None else ready,
            lights_mask=self.lights_mask,
            lights_level=self.lights_level,
            executed=self._runs & 0xFFFFFFFF,
            duplicates=self.duplicates & 0xFFFFFFFF,
            replayed=self.replayed & 0xFFFFFFFF,
            die1=self.dice[0],
            die2=self.dice[1],
        )

    def snapshot(self) -> dict[str, Any]:
        """Everything a test or an operator may want to know, as plain data."""
        c = self.counters
        return {
            "boot_id": self.boot_id,
            "state": self.state().name.lower(),
            "faults": p.fault_names(self.fault_bits()),
            "lid_open": self.lid_open,
            "sets": dict(self.where),
            "events": self.event_no,
            "executed": self._runs,
            "duplicates": self.duplicates,
            "replayed": self.replayed,
            "max_runs_per_id": max(self.executed.values(), default=0),
            "total_executed": c.executed,
            "total_duplicates": c.duplicates,
            "total_replayed": c.replayed,
            "boots": c.boots,
            "per_command": dict(c.per_command),
            "watchdog_stops": c.watchdog_stops,
            "bad_messages": c.bad_messages,
            "dropped_for_new_host": c.dropped_for_new_host,
            "injected": dict(self.injected),
            "link": {
                "epoch": self.link.epoch,
                "retransmits": self.link.stats.retransmits,
                "naks_sent": self.link.stats.naks_sent,
                "corrupt": self.link.stats.corrupt,
                "duplicates": self.link.stats.duplicates,
            },
        }
