"""The simulated MCU as a state machine, driven directly with a fake clock (no I/O)."""

from __future__ import annotations

import pytest

from firmware_bridge import protocol as p
from firmware_bridge.framing import FrameDecoder
from firmware_bridge.link import LinkEndpoint
from hardware_sim.mcu import SimTimings, SimulatedMcu


class Host:
    """A minimal host: the bridge's link layer wired straight to a SimulatedMcu."""

    def __init__(self, mcu: SimulatedMcu, instance: bytes = b"host") -> None:
        self.mcu = mcu
        self.now = 0.0
        self.link = LinkEndpoint(initiator=True, first_epoch=1)
        self.dec_host = FrameDecoder()
        self.dec_mcu = FrameDecoder()
        self.got: list[p.Message] = []
        self.datagrams: list[p.Message] = []
        self.next_id = 1
        self.link.start_reset(instance, self.now)
        self.run(0.5)

    def pump(self) -> None:
        for _ in range(20):
            moved = False
            for raw in self.link.poll(self.now):
                moved = True
                self.mcu.on_frames(self.dec_mcu.feed(raw), 0, self.now)
            for raw in self.mcu.poll(self.now):
                moved = True
                for frame in self.dec_host.feed(raw):
                    for d in self.link.on_frame(frame, self.now):
                        if d.kind == "data":
                            self.got.append(p.decode_message(d.payload))
                        elif d.kind == "datagram":
                            self.datagrams.append(p.decode_message(d.payload))
            if not moved:
                return

    def run(self, seconds: float, step: float = 0.01) -> None:
        end = self.now + seconds
        while self.now < end:
            self.now = min(end, self.now + step)
            self.pump()

    def send(self, cls: type[p.Command], **fields: object) -> int:
        cid = self.next_id
        self.next_id += 1
        self.link.send(cls(cmd_id=cid, **fields).encode())
        self.pump()
        return cid

    def answer(self, cid: int) -> p.Message:
        return next(
            m for m in self.got if getattr(m, "cmd_id", None) == cid and not isinstance(m, p.Event)
        )

    def events(self, kind: type[p.Event] | None = None) -> list[p.Event]:
        return [
            m for m in self.got if isinstance(m, p.Event) and (kind is None or isinstance(m, kind))
        ]

    def keepalive(self, seconds: float) -> None:
        """Run while sending keepalives (a live host feeds the watchdog)."""
        end = self.now + seconds
        while self.now < end:
            self.run(0.2)
            self.mcu.on_frames(
                self.dec_mcu.feed(self.link.datagram(p.Keepalive().encode())), 0, self.now
            )


@pytest.fixture
def host() -> Host:
    return Host(SimulatedMcu(speed=10, seed=1))


def test_boot_event_identity_and_status(host: Host) -> None:
    boots = host.events(p.McuReset)
    assert len(boots) == 1 and boots[0].number == 1 and boots[0].reason == 0
    cid = host.send(p.Identify)
    ident = host.answer(cid)
    assert isinstance(ident, p.Identity)
    assert ident.boot_id == host.mcu.boot_id == boots[0].boot_id
    host.run(1.0)
    periodic = [m for m in host.datagrams if isinstance(m, p.StatusReport)]
    assert 3 <= len(periodic) <= 6  # every 250 ms
    assert all(m.cmd_id == 0 for m in periodic)


def test_timings_scale_with_speed(host: Host) -> None:
    cid = host.send(p.Shuffle)
    assert host.answer(cid) == p.Reply(cid, p.Result.STARTED)
    host.keepalive(2.0)  # 24 s / 10 = 2.4 s
    assert host.events(p.ShuffleDone) == []
    host.keepalive(0.6)
    (done,) = host.events(p.ShuffleDone)
    assert (done.cmd_id, done.tile_set, done.tiles) == (cid, 0, 144)


def test_sets_alternate_and_preconditions(host: Host) -> None:
    t = host.mcu.timings
    lift = host.send(p.LiftWalls)
    assert host.answer(lift) == p.Reply(lift, p.Result.NOT_READY, p.NotReady.NO_SHUFFLED_SET)
    lower = host.send(p.LowerWalls)
    assert host.answer(lower).detail == p.NotReady.WALLS_DOWN
    host.send(p.Shuffle)
    host.keepalive(t.shuffle / 10 + 0.1)
    again = host.send(p.Shuffle)
    assert host.answer(again).detail == p.NotReady.SET_WAITING
    host.send(p.LiftWalls)
    host.keepalive(t.lift / 10 + 0.1)
    assert host.events(p.WallsUp)[0].tile_set == 0
    up = host.send(p.LiftWalls)
    assert host.answer(up).detail == p.NotReady.WALLS_UP
    host.send(p.Shuffle)  # set 1, while set 0 is on the table
    host.keepalive(t.shuffle / 10 + 0.1)
    assert [e.tile_set for e in host.events(p.ShuffleDone)] == [0, 1]
    nothing = host.send(p.Shuffle)
    assert host.answer(nothing).detail == p.NotReady.SET_WAITING


def test_busy_while_running(host: Host) -> None:
    host.send(p.Shuffle)
    dice = host.send(p.RollDice)
    assert host.answer(dice).result == p.Result.BUSY


def test_dice_are_seeded(host: Host) -> None:
    rolls = []
    for _ in range(5):
        cid = host.send(p.RollDice)
        host.keepalive(0.3)
        ev = next(e for e in host.events(p.DiceRolled) if e.cmd_id == cid)
        assert 1 <= ev.die1 <= 6 and 1 <= ev.die2 <= 6
        rolls.append((ev.die1, ev.die2))
    other = Host(SimulatedMcu(speed=10, seed=1))
    again = []
    for _ in range(5):
        cid = other.send(p.RollDice)
        other.keepalive(0.3)
        ev = next(e for e in other.events(p.DiceRolled) if e.cmd_id == cid)
        again.append((ev.die1, ev.die2))
    assert rolls == again


def test_repeated_command_id_is_answered_from_memory_not_rerun(host: Host) -> None:
    cmd = p.Lights(cmd_id=77, mask=3, level=9)
    host.link.send(cmd.encode())
    host.link.send(cmd.encode())  # as if the host resent it after a lost answer
    host.pump()
    answers = [m for m in host.got if getattr(m, "cmd_id", None) == 77]
    assert answers == [p.Reply(77, p.Result.OK)] * 2
    st = host.mcu.status_report(0)
    assert (st.executed, st.replayed, st.duplicates) == (1, 1, 0)
    assert host.mcu.snapshot()["max_runs_per_id"] == 1


def test_a_new_host_instance_starts_a_fresh_memory() -> None:
    mcu = SimulatedMcu(speed=10, seed=2)
    a = Host(mcu, b"aaaa")
    a.send(p.Lights, mask=1)
    b = Host(mcu, b"bbbb")  # same command id 1 from another host process
    b.send(p.Lights, mask=2)
    assert mcu.lights_mask == 2
    assert mcu.snapshot()["total_duplicates"] == 0


def test_injected_faults_stop_and_latch(host: Host) -> None:
    host.mcu.inject("jam")
    cid = host.send(p.Shuffle)
    host.keepalive(2.6)
    (fault,) = host.events(p.FaultRaised)
    assert (fault.cmd_id, fault.fault) == (cid, p.Fault.JAM)
    assert host.mcu.fault_bits() == p.Fault.JAM.bit
    again = host.send(p.Shuffle)
    assert host.answer(again) == p.Reply(again, p.Result.FAULTED, p.Fault.JAM.bit)
    clear = host.send(p.ClearFaults)
    assert host.answer(clear).result == p.Result.OK
    assert host.events(p.FaultsCleared)[0].cleared == p.Fault.JAM.bit
    host.mcu.inject("tiles_short", 140)
    host.send(p.Shuffle)
    host.keepalive(2.6)
    short = host.events(p.FaultRaised)[-1]
    assert (short.fault, short.detail) == (p.Fault.TILES_SHORT, 140)
    host.send(p.ClearFaults)
    host.mcu.inject("stall")
    host.send(p.Shuffle)
    host.keepalive(2.6)
    assert host.events(p.FaultRaised)[-1].fault == p.Fault.MOTOR_STALL
    with pytest.raises(ValueError):
        host.mcu.inject("gremlins")
    with pytest.raises(ValueError):
        host.mcu.inject("tiles_short", 500)


def test_lid_stops_motion_but_not_dice(host: Host) -> None:
    cid = host.send(p.Shuffle)
    host.mcu.set_lid(True, host.now)
    host.pump()
    assert host.events(p.LidChanged)[0].open == 1
    stop = host.events(p.FaultRaised)[0]
    assert (stop.cmd_id, stop.fault) == (cid, p.Fault.LID_OPEN)
    refused = host.send(p.Shuffle)
    assert host.answer(refused).result == p.Result.LID_OPEN
    dice = host.send(p.RollDice)
    assert host.answer(dice).result == p.Result.STARTED
    host.mcu.set_lid(False, host.now)
    assert host.mcu.fault_bits() == 0  # the lid is a sensor, not a latched fault


def test_watchdog_stops_motors_when_the_host_is_silent(host: Host) -> None:
    cid = host.send(p.Shuffle)
    host.run(1.5)  # no keepalives: silent
    (stop,) = host.events(p.FaultRaised)
    assert (stop.cmd_id, stop.fault) == (cid, p.Fault.WATCHDOG)
    assert host.mcu.state() == p.State.IDLE
    dice = host.send(p.RollDice)
    assert host.answer(dice).result == p.Result.STARTED  # not latched
    assert host.mcu.fault_bits() == 0


def test_emergency_stop_latches(host: Host) -> None:
    cid = host.send(p.Shuffle)
    stop = host.send(p.EmergencyStop)
    assert host.answer(stop).result == p.Result.OK
    assert host.events(p.FaultRaised)[0].cmd_id == cid
    assert host.mcu.fault_bits() & p.Fault.ESTOP.bit
    refused = host.send(p.RollDice)
    assert host.answer(refused).result == p.Result.FAULTED


def test_reset_loses_ram_keeps_tiles() -> None:
    mcu = SimulatedMcu(speed=100, seed=3)
    host = Host(mcu)
    host.send(p.Shuffle)
    host.keepalive(0.4)
    host.send(p.Lights, mask=5)
    old = mcu.boot_id
    mcu.boot(host.now)
    assert mcu.boot_id != old
    assert mcu.where == {0: "ready", 1: "hopper"}
    assert mcu.lights_mask == 0 and mcu.link.epoch == 0
    assert not mcu.awake
    assert mcu.poll(host.now) == []  # deaf and mute while booting
    host.now += SimTimings().boot
    frames = mcu.poll(host.now)
    assert mcu.awake
    assert frames  # its status; the boot event waits for a link epoch
    assert mcu.snapshot()["boots"] == 2


def test_bad_configuration_is_refused(host: Host) -> None:
    cid = host.send(p.Configure, tiles_per_set=144, status_interval_ms=50, watchdog_ms=1000)
    assert host.answer(cid).result == p.Result.BAD_ARGS
    ok = host.send(p.Configure, tiles_per_set=136, status_interval_ms=400, watchdog_ms=2000)
    assert host.answer(ok).result == p.Result.OK
    assert (host.mcu.tiles_per_set, host.mcu.status_interval, host.mcu.watchdog) == (136, 0.4, 2.0)


def test_garbage_payloads_are_counted_not_fatal(host: Host) -> None:
    host.link.send(b"\xee\x01")
    host.link.send(p.Reply(1).encode())  # a message the host should never send
    host.pump()
    assert host.mcu.counters.bad_messages == 2
    cid = host.send(p.Identify)
    assert isinstance(host.answer(cid), p.Identity)


def test_speed_must_be_positive() -> None:
    with pytest.raises(ValueError, match="speed must be positive"):
        SimulatedMcu(speed=0)


def test_a_command_of_a_newer_host_is_answered_unknown(host: Host) -> None:
    # answered, the host can say "update the firmware" instead of timing out
    cid = host.next_id
    host.next_id += 1
    host.link.send(bytes([0x16]) + cid.to_bytes(4, "little") + b"\x01")
    host.pump()
    host.run(0.1)
    assert host.answer(cid) == p.Reply(cid, p.Result.UNKNOWN, 0x16)
    assert host.mcu.counters.bad_messages == 1
