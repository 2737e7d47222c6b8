"""DeviceSession on its own: bytes and a fake clock in, frames and events out.

The MCU at the other end is the simulator's firmware model (:class:`SimulatedMcu`, itself
sans-IO), joined to the session by an in-memory line whose filters drop, duplicate or alter
frames in either direction. Nothing here sleeps, opens a port or starts a thread.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_bridge import protocol as p
from firmware_bridge.config import SerialConfig
from firmware_bridge.errors import CommandFailed, CommandTimeout, InterlockError, LinkDown
from firmware_bridge.framing import Frame, FrameDecoder, FrameKind, encode_frame
from firmware_bridge.session import (
    DeviceSession,
    DiceRoll,
    Identity,
    McuEvent,
    McuStatus,
    SessionCommand,
    ShuffleResult,
)
from hardware_sim.mcu import SimulatedMcu

CFG = SerialConfig()
TICK = 0.0005  # the line's latency, and the clock's step while frames are moving

Filter = Callable[[Frame], list[Frame]]


def passing(frame: Frame) -> list[Frame]:
    return [frame]


def decode(data: bytes) -> Frame:
    (frame,) = FrameDecoder().feed(data)
    return frame


def message(frame: Frame) -> p.Message | None:
    if frame.kind in (FrameKind.DATA, FrameKind.DATAGRAM):
        return p.decode_message(frame.payload)
    return None


class Rec(SessionCommand):
    """A command that counts how often it is finished."""

    def __init__(self, command: p.Command, timeout: float = 30.0, *, urgent: bool = False):
        super().__init__(command, timeout, urgent=urgent)
        self.finished = 0

    def _finished(self) -> None:
        self.finished += 1


class Line:
    """A session and a simulated MCU on an in-memory line, on a fake clock.

    ``to_host`` and ``to_mcu`` see every frame on its way and return what arrives (nothing:
    lost; two: duplicated; another frame: altered).
    """

    def __init__(
        self,
        *,
        speed: float = 1000.0,
        seed: int = 7,
        first_id: int = 1000,
        to_host: Filter = passing,
        to_mcu: Filter = passing,
    ) -> None:
        self.t = 0.0
        self.mcu = SimulatedMcu(speed=speed, seed=seed, now=0.0)
        self.s = DeviceSession(CFG, port_name="line", first_id=first_id, first_epoch=10)
        self.to_host = to_host
        self.to_mcu = to_mcu
        self.plugged = False
        self.events: list[McuEvent] = []
        #: every command the host put on the line, in order (resends included)
        self.wire_commands: list[str] = []
        self.wire_ids: list[int] = []

    # --- driving -------------------------------------------------------------------------------

    def plug(self) -> None:
        self.plugged = True
        self.s.connection_made(self.t)

    def unplug(self) -> None:
        self.plugged = False
        self.s.connection_lost("unplugged", self.t)

    def step(self) -> None:
        now = self.t
        moved = False
        if self.plugged:
            for data in self.s.poll(now):
                for frame in self.to_mcu(decode(data)):
                    moved = True
                    msg = message(frame)
                    if frame.kind == FrameKind.DATA and isinstance(msg, p.Command):
                        self.wire_commands.append(msg.NAME)
                        self.wire_ids.append(msg.cmd_id)
                    self.mcu.on_frames([frame], 0, now)
        out = self.mcu.poll(now)
        if self.plugged:
            for data in out:
                for frame in self.to_host(decode(data)):
                    moved = True
                    self.s.receive_data(frame.encode(), now)
        self.events += self.s.take_events()
        due = [d for d in (self.s.next_deadline(), self.mcu.next_deadline()) if d is not None]
        # while frames move, step by the line's latency; else jump to the next timer
        self.t = now + TICK if moved or not due else max(now + TICK, min(due))

    def run_until(self, done: Callable[[], bool], limit: float = 30.0) -> None:
        end = self.t + limit
        while not done():
            if self.t > end:
                raise AssertionError(f"not done within {limit} s of line time")
            self.step()

    def run_for(self, seconds: float) -> None:
        end = self.t + seconds
        while self.t < end:
            self.step()

    def ready(self) -> Line:
        self.plug()
        self.run_until(lambda: self.s.phase == "ready")
        return self

    def cmd(self, cls: type[p.Command], *, urgent: bool = False, **fields: int) -> Rec:
        rec = Rec(self.s.new_command(cls, **fields), urgent=urgent)
        self.s.submit(rec, self.t)
        return rec

    def call(self, cls: type[p.Command], **fields: int) -> Rec:
        rec = self.cmd(cls, **fields)
        self.run_until(rec.done)
        return rec

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


def drop_while(flag: list[bool], pred: Callable[[Frame], bool] = lambda f: True) -> Filter:
    """A filter losing the frames ``pred`` picks while ``flag[0]`` is set."""

    def f(frame: Frame) -> list[Frame]:
        return [] if flag[0] and pred(frame) else [frame]

    return f


def carries(cls: type[p.Message]) -> Callable[[Frame], bool]:
    return lambda f: f.kind == FrameKind.DATA and isinstance(message(f), cls)


# --- the handshake ------------------------------------------------------------------------------


def test_the_handshake_identifies_configures_and_syncs_before_anything_else() -> None:
    line = Line()
    early = line.cmd(p.Lights, mask=3, level=9)  # before the port is even open: held
    assert early.state == "held" and line.s.poll(line.t) == []
    line.plug()
    first = decode(line.s.poll(line.t)[0])
    assert first.kind == FrameKind.RESET and first.epoch == 10
    line.run_until(early.done)
    assert line.wire_commands[:4] == ["identify", "configure", "status", "lights"]
    assert line.s.ready and line.s.phase == "ready" and line.s.link_up
    ident = line.s.identity
    assert isinstance(ident, Identity) and ident.protocol == p.PROTOCOL_VERSION
    assert ident.boot_id == line.mcu.boot_id and line.s.boot_id == line.mcu.boot_id
    assert isinstance(line.s.status, McuStatus) and line.s.status.boot_id == ident.boot_id
    assert line.mcu.status_interval == CFG.status_interval
    assert line.kinds() == ["connected"]
    assert line.events[0].data["port"] == "line"
    assert line.events[0].data["boot_id"] == ident.boot_id
    assert early.error is None and early.finished == 1


def test_the_session_keeps_the_link_alive_and_its_timers_in_next_deadline() -> None:
    line = Line().ready()
    line.run_for(3.0)  # three times the MCU's watchdog: keepalives must have fed it
    assert line.s.link_up and line.kinds() == ["connected"]
    due = line.s.next_deadline()
    assert due is not None and line.t <= due + TICK <= line.t + CFG.status_interval + TICK
    line.unplug()
    assert line.s.next_deadline() is None and line.s.poll(line.t) == []


def test_command_ids_start_anywhere_and_wrap_past_zero() -> None:
    a, b = DeviceSession(CFG), DeviceSession(CFG)
    ida, idb = a.new_command(p.GetStatus).cmd_id, b.new_command(p.GetStatus).cmd_id
    assert ida != idb and 0 < ida <= 0xFFFFFFFF and 0 < idb <= 0xFFFFFFFF
    last = DeviceSession(CFG, first_id=0xFFFFFFFF)
    assert [last.new_command(p.GetStatus).cmd_id for _ in range(2)] == [0xFFFFFFFF, 1]
    with pytest.raises(ValueError):
        DeviceSession(CFG, first_id=0)


# --- answers ------------------------------------------------------------------------------------


def test_replies_answers_and_operations_end_their_commands() -> None:
    line = Line().ready()
    assert line.call(p.Lights, mask=5, level=7).value is None
    st_ = line.call(p.GetStatus).value
    assert isinstance(st_, McuStatus) and (st_.lights_mask, st_.lights_level) == (5, 7)
    assert line.call(p.Identify).value == line.s.identity

    shuffle = line.cmd(p.Shuffle)
    line.run_until(lambda: shuffle.state == "accepted")
    assert not shuffle.done()
    line.run_until(shuffle.done)
    assert shuffle.value == ShuffleResult(tile_set=0, tiles=144)
    assert line.call(p.LiftWalls).value == 0
    dice = line.call(p.RollDice)
    assert isinstance(dice.value, DiceRoll) and 2 <= dice.value.total <= 12
    ev = next(e for e in line.events if e.kind == "dice")
    assert ev.data == {"dice": list(dice.value)} and ev.command_id == dice.cmd_id
    assert ev.boot_id == line.mcu.boot_id
    assert line.kinds() == ["connected", "shuffle_done", "walls_up", "dice"]
    numbers = [e.number for e in line.events if e.number is not None]
    assert numbers == sorted(numbers)


def test_refusals_become_errors_a_person_can_act_on() -> None:
    line = Line().ready()
    walls = line.call(p.LowerWalls)
    assert isinstance(walls.error, CommandFailed) and walls.error.reason == "not_ready"
    assert "already down" in str(walls.error)
    line.mcu.set_lid(True, line.t)
    line.run_until(lambda: line.s.lid_open)  # the lid event, before any status says so
    shuffle = line.call(p.Shuffle)
    assert isinstance(shuffle.error, InterlockError) and shuffle.error.reason == "lid_open"
    line.mcu.set_lid(False, line.t)
    line.run_until(lambda: not line.s.lid_open)
    assert line.call(p.EmergencyStop).error is None
    faulted = line.call(p.Shuffle)
    assert isinstance(faulted.error, CommandFailed) and faulted.error.reason == "fault"
    assert faulted.error.fault == "estop" and "clear" in str(faulted.error)
    assert line.call(p.ClearFaults).error is None
    assert "faults_cleared" in line.kinds()


def test_a_fault_ends_the_operation_it_stops_and_is_an_event() -> None:
    line = Line().ready()
    line.mcu.inject("jam")
    shuffle = line.call(p.Shuffle)
    err = shuffle.error
    assert isinstance(err, CommandFailed) and (err.reason, err.fault) == ("fault", "jam")
    fault = next(e for e in line.events if e.kind == "fault")
    assert fault.data["fault"] == "jam" and fault.command_id == shuffle.cmd_id
    line.call(p.ClearFaults)
    line.mcu.inject("tiles_short", 141)
    short = line.call(p.Shuffle).error
    assert isinstance(short, CommandFailed) and short.fault == "tiles_short"
    assert "141 of 144" in str(short)


# --- loss, repeats and epochs -------------------------------------------------------------------


def test_a_lost_command_is_retransmitted_and_runs_once() -> None:
    lose = [True]
    line = Line(to_mcu=drop_while(lose, carries(p.Lights)))
    line.ready()
    rec = line.cmd(p.Lights, mask=1, level=1)
    line.run_for(0.04)  # past the 25 ms retransmission timeout, the resend lost too
    assert not rec.done() and line.wire_commands.count("lights") == 0
    lose[0] = False
    line.run_until(rec.done)
    assert rec.error is None and rec.finished == 1
    assert line.s.link_stats.retransmits >= 1 and line.s.link_stats.timeouts >= 1
    assert line.mcu.counters.per_command["lights"] == 1


def test_a_lost_answer_is_asked_for_again_and_answered_from_memory() -> None:
    lose = [False]
    line = Line(to_host=drop_while(lose, carries(p.Reply)))
    line.ready()
    lose[0] = True
    rec = line.cmd(p.Lights, mask=2, level=2)
    line.run_for(0.2)  # the host resends; the MCU answers the repeat from memory
    assert not rec.done() and line.wire_commands.count("lights") >= 2
    lose[0] = False
    line.run_until(rec.done)
    assert rec.error is None and rec.finished == 1
    assert line.mcu.counters.per_command["lights"] == 1
    assert line.mcu.counters.duplicates == 0


def test_every_frame_from_the_mcu_twice_still_ends_each_command_once() -> None:
    line = Line(to_host=lambda f: [f, f])
    line.ready()
    recs = [line.cmd(p.Lights, mask=i, level=i) for i in range(20)]
    recs.append(line.cmd(p.RollDice))
    line.run_until(lambda: all(r.done() for r in recs))
    assert all(r.error is None and r.finished == 1 for r in recs)
    assert line.kinds().count("dice") == 1 and line.kinds().count("connected") == 1


def test_an_event_repeated_in_a_new_epoch_is_reported_once() -> None:
    # the host had the event but its acknowledgement was lost; the new epoch brings the MCU's
    # resend of it, numbered anew by the link: the event number shows it is old
    deaf = [False]
    line = Line(to_mcu=drop_while(deaf, lambda f: f.kind != FrameKind.RESET))
    line.ready()
    shuffle = line.cmd(p.Shuffle)
    line.run_until(lambda: shuffle.state == "accepted")
    deaf[0] = True
    line.run_until(shuffle.done)
    line.unplug()
    deaf[0] = False
    line.plug()
    line.run_until(lambda: line.s.phase == "ready")
    line.run_for(0.5)
    assert line.kinds().count("shuffle_done") == 1
    assert line.s.counters["duplicate_events"] >= 1
    assert line.mcu.counters.per_command["shuffle"] == 1


def test_an_unplug_starts_a_new_epoch_and_loses_or_repeats_nothing() -> None:
    line = Line().ready()
    epoch = line.s.link.epoch
    recs = [line.cmd(p.Lights, mask=i % 32, level=1) for i in range(30)]
    line.step()
    line.step()
    line.unplug()
    line.step()
    assert "link_lost" in line.kinds() and not line.s.ready
    recs += [line.cmd(p.Lights, mask=i % 32, level=2) for i in range(30)]
    assert all(r.state == "held" for r in recs[30:])
    line.run_for(0.1)
    line.plug()
    line.run_until(lambda: all(r.done() for r in recs))
    assert line.s.link.epoch == epoch + 1
    assert all(r.error is None and r.finished == 1 for r in recs)
    assert line.mcu.counters.per_command["lights"] == 60
    assert line.mcu.counters.duplicates == 0
    restored = line.events[-1]
    assert restored.kind == "link_restored" and restored.data["reason"] == "reconnected"


def test_silence_is_a_lost_link_and_frames_again_restore_it() -> None:
    mute = [False]
    line = Line(to_host=drop_while(mute))
    line.ready()
    mute[0] = True
    line.run_until(lambda: not line.s.link_up, limit=CFG.link_lost_after + 1)
    lost = line.events[-1]
    assert lost.kind == "link_lost" and "no status" in lost.data["reason"]
    mute[0] = False
    line.run_until(lambda: line.s.link_up)
    assert line.events[-1].kind == "link_restored"
    assert line.events[-1].data["reason"] == "statuses resumed"


def test_a_stalled_handshake_starts_over() -> None:
    mute = [True]
    line = Line(to_host=drop_while(mute, lambda f: f.kind != FrameKind.RESET_ACK))
    line.plug()
    line.run_until(lambda: line.s.counters["handshake_restarts"] >= 1, limit=10)
    assert line.s.phase in ("resetting", "handshake") and not line.s.ready
    mute[0] = False
    line.run_until(lambda: line.s.ready)
    assert line.kinds() == ["connected"]


# --- MCU restarts ---------------------------------------------------------------------------------


def test_an_mcu_reset_mid_operation_fails_it_and_the_session_recovers() -> None:
    line = Line(speed=10).ready()  # a 2.4 s shuffle
    old = line.mcu.boot_id
    shuffle = line.cmd(p.Shuffle)
    line.run_until(lambda: shuffle.state == "accepted")
    line.mcu.boot(line.t)
    line.run_until(shuffle.done)
    err = shuffle.error
    assert isinstance(err, CommandFailed) and err.reason == "mcu_reset"
    assert "restarted during the shuffle" in str(err)
    line.run_until(lambda: line.s.ready)
    reset = next(e for e in line.events if e.kind == "reset")
    assert reset.data["previous_boot_id"] == old and reset.data["boot_id"] == line.mcu.boot_id
    assert line.s.identity is not None and line.s.identity.boot_id == line.mcu.boot_id
    assert line.call(p.Lights, mask=1, level=1).error is None
    assert line.mcu.counters.per_command["shuffle"] == 1
    assert line.s.counters["mcu_resets"] == 1


def test_a_restart_fails_what_the_old_mcu_may_have_and_keeps_what_it_never_had() -> None:
    # a sent command whose answer was lost may have run on the old MCU: failed, not resent;
    # one that never left the host goes to the new MCU once it is handshaken
    lose = [False]
    line = Line(to_host=drop_while(lose, carries(p.Reply)))
    line.ready()
    lose[0] = True
    sent = line.cmd(p.Lights, mask=1, level=1)
    line.run_until(lambda: line.mcu.counters.per_command["lights"] == 1)
    line.mcu.boot(line.t)
    line.unplug()  # and what waits for the line meanwhile never reached the old MCU
    held = line.cmd(p.Lights, mask=2, level=2)
    lose[0] = False
    line.plug()
    line.run_until(lambda: sent.done() and held.done())
    assert isinstance(sent.error, CommandFailed) and sent.error.reason == "mcu_reset"
    assert held.error is None
    # the new MCU ran `held` and never saw `sent`
    assert line.mcu.executed[held.cmd_id] == 1 and sent.cmd_id not in line.mcu.executed


def test_a_restart_fails_what_the_old_mcu_acknowledged_but_never_answered() -> None:
    # the line kept the acknowledgement and lost the answer (a DATA frame turned into a bare
    # ACK); what the new epoch's emergency stop sends goes to the new MCU and is answered
    strip = [False]

    def ack_only(frame: Frame) -> list[Frame]:
        if strip[0] and frame.kind == FrameKind.DATA and isinstance(message(frame), p.Reply):
            return [Frame(FrameKind.ACK, frame.epoch, 0, frame.ack)]
        return [frame]

    line = Line(to_host=ack_only)
    line.ready()
    strip[0] = True
    old = line.cmd(p.Lights, mask=1, level=1)
    line.run_until(lambda: line.mcu.counters.per_command["lights"] == 1)
    line.run_for(0.05)
    assert old.state == "sent" and line.s.link.pending() == 0  # acknowledged, unanswered
    strip[0] = False
    line.mcu.boot(line.t)
    line.run_until(lambda: line.s.phase == "handshake")
    stop = line.cmd(p.EmergencyStop, urgent=True)
    assert stop.state == "sent"
    line.run_until(lambda: old.done() and stop.done() and line.s.ready)
    assert isinstance(old.error, CommandFailed) and old.error.reason == "mcu_reset"
    assert stop.error is None
    assert line.mcu.counters.per_command["stop"] == 1


def test_an_emergency_stop_waiting_for_the_line_goes_before_the_handshake() -> None:
    line = Line()
    lights = line.cmd(p.Lights, mask=1, level=2)
    stop = line.cmd(p.EmergencyStop, urgent=True)
    assert stop.state == lights.state == "held"
    line.plug()
    line.run_until(lambda: stop.done() and lights.done())
    order = line.wire_commands
    assert order.index("stop") < order.index("identify") < order.index("lights")
    assert order.index("status") < order.index("lights")


def test_a_command_given_up_while_held_for_resending_still_reports_a_late_answer() -> None:
    # sent in an earlier epoch, held for the next, and timed out before it: not sent again,
    # but the MCU keeps this host's answers across epochs, so its answer still comes
    lose = [False]
    line = Line(to_host=drop_while(lose, carries(p.StatusReport)))
    line.ready()
    lose[0] = True
    rec = line.cmd(p.GetStatus)
    line.run_until(lambda: line.mcu.counters.per_command["status"] == 2)  # the handshake's too
    sends = line.wire_ids.count(rec.cmd_id)
    line.unplug()
    line.plug()
    assert rec.state == "held"
    line.s.abandon(rec, "unused: it was sent")
    assert isinstance(rec.error, CommandTimeout) and rec.error.maybe_executed
    assert "may still carry it out" in str(rec.error)
    lose[0] = False
    line.run_until(lambda: "late_result" in line.kinds())
    late = next(e for e in line.events if e.kind == "late_result")
    assert late.command_id == rec.cmd_id and late.data["command"] == "status"
    assert late.data["ok"] and rec.finished == 1
    line.run_until(lambda: line.s.ready)
    assert line.wire_ids.count(rec.cmd_id) == sends  # not sent again
    assert line.mcu.executed[rec.cmd_id] == 1
    assert rec not in line.s.pending()


def test_an_mcu_restart_forgets_what_a_given_up_command_was_owed() -> None:
    lose = [False]
    line = Line(to_host=drop_while(lose, carries(p.Reply)))
    line.ready()
    lose[0] = True
    rec = line.cmd(p.Lights, mask=4, level=4)
    line.run_until(lambda: line.mcu.counters.per_command["lights"] == 1)
    line.unplug()
    line.plug()
    line.s.abandon(rec)
    assert rec in line.s.pending()  # still listening for a late answer
    line.mcu.boot(line.t)
    lose[0] = False
    line.run_until(lambda: "reset" in line.kinds())
    assert rec not in line.s.pending() and "late_result" not in line.kinds()


def test_giving_up_says_whether_the_table_may_have_run_it() -> None:
    quiet = [False]
    line = Line(to_host=drop_while(quiet, carries(p.Reply)))
    never = line.cmd(p.Lights, mask=1, level=1)
    line.s.abandon(never, "the port is missing")  # the link was never up
    assert isinstance(never.error, LinkDown) and not isinstance(never.error, CommandTimeout)
    assert str(never.error) == "lights: nothing was sent: the port is missing"
    line.ready()
    quiet[0] = True  # the answers are lost for now
    # more than the window: the last wait in the link, unsent, and can be withdrawn
    recs = [line.cmd(p.Lights, mask=i, level=i) for i in range(CFG.window + 1)]
    line.step()
    line.s.abandon(recs[-1])
    err = recs[-1].error
    assert isinstance(err, CommandTimeout) and not err.maybe_executed
    line.s.abandon(recs[0])  # on the line
    assert isinstance(recs[0].error, CommandTimeout) and recs[0].error.maybe_executed
    quiet[0] = False
    line.run_until(lambda: all(r.done() for r in recs) and "late_result" in line.kinds())
    assert line.mcu.counters.per_command["lights"] == CFG.window
    shuffle = line.cmd(p.Shuffle)
    line.run_until(lambda: shuffle.state == "accepted")
    line.s.abandon(shuffle)
    assert isinstance(shuffle.error, CommandTimeout) and shuffle.error.maybe_executed
    assert "did not report its end" in str(shuffle.error)


def test_close_fails_what_waits_and_returns_the_ack_owed() -> None:
    line = Line().ready()
    line.cmd(p.Lights, mask=1, level=1)
    line.run_until(lambda: line.mcu.counters.per_command["lights"] == 1)
    waiting = line.cmd(p.Shuffle)
    # the STARTED reply has just come: its ACK waits to ride on the next command
    line.run_until(lambda: waiting.state == "accepted")
    owed = line.s.close()
    assert [decode(f).kind for f in owed] == [FrameKind.ACK]
    assert isinstance(waiting.error, LinkDown) and "closed" in str(waiting.error)
    assert line.s.pending() == [] and not line.s.ready


def test_status_keeps_up_when_the_uptime_counter_wraps() -> None:
    # the 32-bit millisecond counter wraps after 49.7 days: every status after it was taken
    # for a delayed old one, and the status froze (lid interlock included)
    line = Line().ready()
    boot, epoch = line.mcu.boot_id, line.s.link.epoch

    def status(uptime_ms: int) -> None:
        report = p.StatusReport(boot_id=boot, uptime_ms=uptime_ms)
        line.s.receive_data(encode_frame(FrameKind.DATAGRAM, epoch, 0, 0, report.encode()), line.t)

    status(2**31)  # half way round from the handshake's
    status(2**32 - 1000)
    assert line.s.status is not None and line.s.status.uptime == (2**32 - 1000) / 1000
    status(500)
    assert line.s.status.uptime == 0.5
    status(2**32 - 500)  # delayed, from before the wrap
    assert line.s.status.uptime == 0.5


def test_a_late_status_from_before_a_restart_is_ignored() -> None:
    line = Line().ready()
    old_boot = line.mcu.boot_id
    line.mcu.boot(line.t)
    line.run_until(lambda: "reset" in line.kinds())
    line.run_until(lambda: line.s.status is not None)
    before = line.s.status
    report = p.StatusReport(boot_id=old_boot, uptime_ms=10**9, faults=p.Fault.JAM.bit)
    frame = encode_frame(FrameKind.DATAGRAM, line.s.link.epoch, 0, 0, report.encode())
    line.s.receive_data(frame, line.t)
    assert line.s.status is before and line.s.phase == "ready"


# --- the property -----------------------------------------------------------------------------

FATES = st.lists(st.sampled_from(["pass", "pass", "pass", "drop", "twice"]), max_size=80)


def fated(fates: list[str]) -> Filter:
    it = iter(fates)

    def f(frame: Frame) -> list[Frame]:
        fate = next(it, "pass")
        return [] if fate == "drop" else [frame, frame] if fate == "twice" else [frame]

    return f


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    to_host=FATES,
    to_mcu=FATES,
    n=st.integers(1, 12),
    unplug_after=st.one_of(st.none(), st.integers(0, 40)),
)
def test_any_loss_and_repetition_still_ends_each_command_exactly_once(
    to_host: list[str], to_mcu: list[str], n: int, unplug_after: int | None
) -> None:
    line = Line(to_host=fated(to_host), to_mcu=fated(to_mcu))
    line.ready()
    recs = [line.cmd(p.Lights, mask=i % 32, level=i) for i in range(n)]
    recs.append(line.cmd(p.RollDice))
    if unplug_after is not None:
        for _ in range(unplug_after):
            line.step()
        line.unplug()
        line.run_for(0.05)
        line.plug()
    line.run_until(lambda: all(r.done() for r in recs), limit=60)
    assert all(r.finished == 1 and r.error is None for r in recs)
    counters = line.mcu.counters
    assert counters.per_command["lights"] == n and counters.per_command["dice"] == 1
    assert counters.duplicates == 0
    assert line.kinds().count("dice") == 1
    dice = next(e for e in line.events if e.kind == "dice")
    assert recs[-1].value == DiceRoll(*dice.data["dice"])
