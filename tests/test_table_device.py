"""TableDevice against the simulated MCU, over the real pyserial path on a pty (and TCP).

Only the public API: the protocol logic underneath is tested on its own, without threads or
ports, in ``test_session.py``. No timing assertions: every wait is for a condition, with a
generous deadline, and "did not hang" checks allow many times the call's own timeout.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import threading
import time
from collections.abc import Callable

import pytest

from firmware_bridge import protocol as p
from firmware_bridge.config import SerialConfig
from firmware_bridge.errors import (
    BridgeConfigError,
    CommandFailed,
    CommandTimeout,
    InterlockError,
    LinkDown,
)
from firmware_bridge.table_device import DiceRoll, McuEvent, ShuffleResult, TableDevice

# generous for a loaded 2-core machine; the link itself needs milliseconds
CFG = SerialConfig(command_timeout=10.0, shuffle_timeout=30.0, walls_timeout=30.0)


class Recorder:
    """Collects a device's events and waits for them."""

    def __init__(self, device: TableDevice) -> None:
        self.events: list[McuEvent] = []
        self._cv = threading.Condition()
        device.add_listener(self._add)

    def _add(self, ev: McuEvent) -> None:
        with self._cv:
            self.events.append(ev)
            self._cv.notify_all()

    def kinds(self) -> list[str]:
        with self._cv:
            return [e.kind for e in self.events]

    def wait_for(
        self, kind: str, timeout: float = 20.0, where: Callable[[McuEvent], bool] | None = None
    ) -> McuEvent:
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                for e in self.events:
                    if e.kind == kind and (where is None or where(e)):
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {kind!r} event; got {[e.kind for e in self.events]}")
                self._cv.wait(left)


def wait_until(dev: TableDevice, check: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait, on the device's own wake-ups, until ``check()`` holds."""
    assert dev.wait_for(check, timeout), "condition not met in time"


def wait_for_status(
    port: str, check: Callable[[p.StatusReport], bool], timeout: float = 20.0
) -> p.StatusReport:
    """Read the MCU's periodic statuses off ``port`` without a word to it (a silent host, as
    far as its watchdog can tell) until one passes ``check``; each read waits for bytes."""
    import serial

    from firmware_bridge.framing import FrameDecoder, FrameKind

    decoder = FrameDecoder()
    seen: list[p.StatusReport] = []
    deadline = time.monotonic() + timeout
    with serial.serial_for_url(port, timeout=1.0) as line:
        while time.monotonic() < deadline:
            data = line.read(1)
            data += line.read(line.in_waiting)
            for frame in decoder.feed(data):
                if frame.kind != FrameKind.DATAGRAM:
                    continue
                message = p.decode_message(frame.payload)
                if isinstance(message, p.StatusReport):
                    seen.append(message)
                    if check(message):
                        return message
    raise AssertionError(f"no such status in {timeout} s; saw {seen[-3:]}")


@pytest.fixture
def table(sim_mcu):
    sim = sim_mcu()
    dev = TableDevice(sim.port, config=CFG)
    rec = Recorder(dev)
    dev.wait_ready(20)
    yield sim, dev, rec
    dev.close()


def test_every_command_and_event(table) -> None:
    _sim, dev, rec = table
    ident = dev.identify()
    assert ident.protocol == p.PROTOCOL_VERSION
    assert ident.tile_sets == 2
    assert ident.tiles_per_set == 144
    st = dev.status()
    assert st.state == "idle"
    assert st.faults == ()
    assert st.boot_id == ident.boot_id

    first = dev.shuffle()
    assert first == ShuffleResult(tile_set=0, tiles=144)
    assert dev.lift_walls() == 0
    dice = dev.roll_dice()
    assert isinstance(dice, DiceRoll)
    assert 1 <= dice.die1 <= 6 and 1 <= dice.die2 <= 6
    assert dice.total == dice.die1 + dice.die2
    dev.lights(0b10101, 200)
    assert dev.lower_walls() == 0
    # the two sets alternate: the one that waited longest is shuffled next
    assert dev.shuffle().tile_set == 1
    assert dev.lift_walls() == 1
    dev.emergency_stop()
    dev.clear_faults()

    st = dev.status()
    assert (st.lights_mask, st.lights_level) == (0b10101, 200)
    assert st.last_dice == (dice.die1, dice.die2)
    assert st.table_set == 1
    assert st.ready_set is None
    assert st.duplicates == 0

    rec.wait_for("faults_cleared")
    # (a stall of the machine over a second could add a link_lost/link_restored pair)
    kinds = [k for k in rec.kinds() if k not in ("link_lost", "link_restored")]
    assert kinds == [
        "connected",
        "shuffle_done",
        "walls_up",
        "dice",
        "walls_down",
        "shuffle_done",
        "walls_up",
        "faults_cleared",
    ]
    dice_ev = next(e for e in rec.events if e.kind == "dice")
    assert dice_ev.data == {"dice": [dice.die1, dice.die2]}
    assert dice_ev.command_id is not None
    numbers = [e.number for e in rec.events if e.number is not None]
    assert numbers == sorted(numbers)
    assert dev.last_status is not None


def test_periodic_status_keeps_last_status_fresh(table) -> None:
    sim, dev, rec = table
    first = dev.last_status
    assert first is not None
    wait_until(dev, lambda: dev.last_status is not None and dev.last_status.uptime > first.uptime)
    sim.control("lid open")
    wait_until(dev, lambda: dev.last_status is not None and dev.last_status.lid_open)
    assert rec.wait_for("lid").data == {"open": True}


def test_interlocks_and_emergency_stop_always_goes_through(table) -> None:
    sim, dev, _rec = table
    dev.set_hand_in_progress(True)
    with pytest.raises(InterlockError, match="hand is in progress") as e:
        dev.shuffle()
    assert e.value.reason == "hand_in_progress"
    with pytest.raises(InterlockError):
        dev.lower_walls()
    dev.roll_dice()  # dice are allowed during a hand
    dev.set_hand_in_progress(False)

    sim.control("lid open")
    wait_until(dev, lambda: dev.last_status is not None and dev.last_status.lid_open)
    with pytest.raises(InterlockError, match="lid is open"):
        dev.shuffle()
    # the table enforces it too, for a command that bypasses the host's check
    with pytest.raises(InterlockError, match="lid is open") as e:
        dev.submit(p.Shuffle, 10).result()
    assert e.value.reason == "lid_open"
    dev.set_hand_in_progress(True)
    dev.emergency_stop()  # never refused
    assert "estop" in dev.status().faults
    dev.set_hand_in_progress(False)
    sim.control("lid close")
    wait_until(dev, lambda: dev.last_status is not None and not dev.last_status.lid_open)
    with pytest.raises(CommandFailed, match="emergency stop") as e:
        dev.shuffle()
    assert e.value.reason == "fault"
    dev.clear_faults()
    assert dev.shuffle().tiles == 144


def test_faults_stop_operations_with_clear_messages(table) -> None:
    sim, dev, rec = table
    sim.control("fault jam")
    with pytest.raises(CommandFailed, match="卡牌") as e:
        dev.shuffle()
    assert (e.value.reason, e.value.fault) == ("fault", "jam")
    assert rec.wait_for("fault").data["fault"] == "jam"
    assert dev.status().faults == ("jam",)
    with pytest.raises(CommandFailed, match="clear") as e:
        dev.shuffle()  # latched until cleared
    assert e.value.reason == "fault"
    dev.clear_faults()

    sim.control("fault tiles-short 141")
    with pytest.raises(CommandFailed, match="少牌") as e:
        dev.shuffle()
    assert e.value.fault == "tiles_short"
    assert "141 of 144" in str(e.value)
    dev.clear_faults()
    dev.shuffle()

    sim.control("fault stall")
    with pytest.raises(CommandFailed, match="stall") as e:
        dev.lift_walls()
    assert e.value.fault == "motor_stall"
    dev.clear_faults()
    dev.lift_walls()

    with pytest.raises(CommandFailed, match="already up") as e:
        dev.lift_walls()
    assert e.value.reason == "not_ready"


def test_lid_opened_during_a_shuffle_and_busy(sim_mcu) -> None:
    sim = sim_mcu(speed=5)  # a 4.8 s shuffle
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        pending = dev.submit(p.Shuffle, 30)
        wait_until(dev, lambda: pending.state == "accepted")
        with pytest.raises(CommandFailed, match="busy") as e:
            dev.roll_dice()
        assert e.value.reason == "busy"
        sim.control("lid open")
        with pytest.raises(InterlockError, match=r"lid was opened|lid open") as e2:
            pending.result()
        assert e2.value.fault == "lid_open"


def test_a_shuffle_right_after_the_lid_closes_is_not_refused(sim_mcu) -> None:
    # the interlock read the last periodic status, which lags the lid event by up to its
    # interval: "lid closed -> shuffle" was refused as "lid open" every time
    sim = sim_mcu()
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        outcomes: list[object] = []
        closed = threading.Event()

        def on_event(ev) -> None:
            if ev.kind == "lid" and ev.data["open"] is False:
                try:
                    outcomes.append(dev.shuffle())
                except InterlockError as exc:
                    outcomes.append(exc.reason)
                closed.set()

        dev.add_listener(on_event)
        rec = Recorder(dev)
        sim.control("lid open")
        wait_until(dev, lambda: dev.last_status is not None and dev.last_status.lid_open)
        sim.control("lid close")
        assert closed.wait(20)
        assert isinstance(outcomes[0], ShuffleResult)
        # and a lid opened is refused at once, before any status says so (listeners hear of
        # an event once the device has taken it in)
        first = rec.wait_for("lid", where=lambda e: e.data["open"])
        sim.control("lid open")
        rec.wait_for("lid", where=lambda e: e.data["open"] and e is not first)
        with pytest.raises(InterlockError) as e:
            dev.shuffle()
        assert e.value.reason == "lid_open"


@pytest.mark.parametrize("timeout", [0, -1, math.inf, 1e12, math.nan, "5", True])
def test_a_timeout_that_cannot_be_waited_is_refused_before_sending(sim_mcu, timeout) -> None:
    # 0 silently meant the default (a 60 s wait for a caller with no time left), and inf or
    # 1e12 raised OverflowError from the wait with the command already running
    from firmware_bridge import config, table_device

    # one limit for the device, the config file and the device command's --timeout
    assert table_device.MAX_TIMEOUT is config.MAX_TIMEOUT
    sim = sim_mcu()
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        executed = dev.status().executed
        for call in (dev.shuffle, dev.roll_dice, dev.status):
            with pytest.raises(BridgeConfigError, match="timeout is seconds above 0"):
                call(timeout=timeout)
        assert dev.status().executed == executed + 1  # only this status ran


def test_emergency_stop_during_a_shuffle(sim_mcu) -> None:
    sim = sim_mcu(speed=5)
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        pending = dev.submit(p.Shuffle, 30)
        wait_until(dev, lambda: pending.state == "accepted")
        dev.emergency_stop()
        with pytest.raises(CommandFailed, match="emergency stop") as e:
            pending.result()
        assert e.value.fault == "estop"
        assert dev.status().state == "idle"


def test_ten_thousand_commands_under_corruption_and_loss_each_run_once(sim_mcu) -> None:
    sim = sim_mcu(corrupt=0.01, drop=0.05, speed=1000)
    cfg = SerialConfig(command_timeout=60.0)
    with TableDevice(sim.port, config=cfg) as dev:
        dev.wait_ready(30)
        before = dev.status().executed
        n = 10_000
        rng = random.Random(1)
        values = [(rng.randrange(32), rng.randrange(256)) for _ in range(n)]
        pending = []
        for i, (mask, level) in enumerate(values):
            pending.append(dev.submit(p.Lights, 120.0, mask=mask, level=level))
            if len(pending) - sum(x.done() for x in pending[-64:]) > 48 or i == n - 1:
                pending[-32].result()
        for x in pending:
            assert x.result() is None
        st = dev.status()
        stats = dev.link_stats
    mcu = sim.stats()["mcu"]
    line = sim.stats()["line"]
    # every one of the 10,000 ran exactly once: no id ran twice, none is missing
    assert st.executed - before == n + 1  # the 10,000 and the status that read this
    assert st.duplicates == 0
    assert mcu["max_runs_per_id"] == 1
    assert mcu["total_duplicates"] == 0
    assert (st.lights_mask, st.lights_level) == values[-1]
    # and the faults really happened
    assert line["bytes_corrupted"] > 1000
    assert line["frames_dropped"] > 500
    assert stats.retransmits > 0


def test_back_to_back_calls_each_get_their_own_answer(table) -> None:
    sim, dev, _rec = table
    for i in range(50):
        dev.lights(i % 32, i)
        assert dev.status().lights_level == i  # the status asked after, not an earlier one
    assert sim.stats()["mcu"]["max_runs_per_id"] == 1


def test_every_waiter_on_a_command_is_woken_when_it_ends(table) -> None:
    _sim, dev, _rec = table
    pending = dev.submit(p.RollDice, 30)
    got: list[object] = []

    def wait() -> None:
        got.append(pending.result())

    waiters = [threading.Thread(target=wait) for _ in range(4)]
    for t in waiters:
        t.start()
    roll = pending.result()
    for t in waiters:
        t.join(20)
    assert not any(t.is_alive() for t in waiters)
    assert got == [roll] * 4 and pending.state == "done"
    assert pending.result(timeout=0) == roll  # and it keeps its outcome


def test_callers_on_several_threads_at_once(table) -> None:
    sim, dev, _rec = table
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(100):
                dev.lights(i % 32, k)
                if i % 25 == 0:
                    dev.status()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    mcu = sim.stats()["mcu"]
    assert mcu["per_command"]["lights"] == 400
    assert mcu["max_runs_per_id"] == 1


def test_close_while_a_caller_waits_on_a_long_operation(sim_mcu) -> None:
    sim = sim_mcu(speed=1)  # a 24 s shuffle
    dev = TableDevice(sim.port, config=CFG)
    dev.wait_ready(20)
    outcome: list[BaseException | None] = []

    def shuffle() -> None:
        try:
            dev.shuffle()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=shuffle)
    t.start()
    wait_until(dev, lambda: dev.last_status is not None and dev.last_status.state == "shuffling")
    dev.close()
    t.join(timeout=20)  # it must not wait for the shuffle's 24 s
    assert not t.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], LinkDown)


def test_duplicated_and_delayed_frames(sim_mcu) -> None:
    sim = sim_mcu(duplicate=0.05, delay=0.05, delay_ms=40, speed=1000)
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        pending = [dev.submit(p.Lights, 60.0, mask=i % 32, level=i % 256) for i in range(600)]
        for x in pending:
            x.result()
        for _ in range(3):
            dev.roll_dice()
        st = dev.status()
    line = sim.stats()["line"]
    assert line["frames_duplicated"] > 0 and line["frames_delayed"] > 0
    assert st.duplicates == 0
    assert sim.stats()["mcu"]["max_runs_per_id"] == 1


def test_mcu_reset_in_the_middle_of_a_shuffle_is_detected_and_recovered(sim_mcu) -> None:
    sim = sim_mcu(speed=5)
    with TableDevice(sim.port, config=CFG) as dev:
        rec = Recorder(dev)
        old = dev.wait_ready(20).boot_id
        pending = dev.submit(p.Shuffle, 30)
        wait_until(dev, lambda: pending.state == "accepted")
        new_boot = sim.control("reset")["boot_id"]
        with pytest.raises(CommandFailed, match="restarted") as e:
            pending.result()
        assert e.value.reason == "mcu_reset"
        ev = rec.wait_for("reset")
        assert ev.data["previous_boot_id"] == old
        assert ev.data["boot_id"] == new_boot
        dev.wait_ready(20)
        assert dev.identity is not None and dev.identity.boot_id == new_boot
        assert dev.status().boot_id == new_boot
        # the table works again, and the shuffle that was cut short ran once, not twice
        assert dev.lights(1) is None
        mcu = sim.stats()["mcu"]
        assert mcu["per_command"]["shuffle"] == 1
        assert mcu["boots"] == 2


def test_commands_waiting_when_the_mcu_restarts_are_not_lost(sim_mcu) -> None:
    sim = sim_mcu(speed=1000)
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        sim.control("reset")
        # issued while the host is (or soon will be) re-handshaking: each either runs once
        # or fails with mcu_reset, none hangs and none runs twice
        outcomes = []
        for i in range(20):
            try:
                dev.lights(i, 10)
                outcomes.append("ok")
            except CommandFailed as exc:
                assert exc.reason == "mcu_reset"
                outcomes.append("failed")
        assert outcomes[-1] == "ok"
        st = dev.status()
    assert st.duplicates == 0
    assert sim.stats()["mcu"]["max_runs_per_id"] == 1


def test_unplug_and_replug_reconnects(sim_mcu) -> None:
    sim = sim_mcu(speed=1000)
    with TableDevice(sim.port, config=CFG) as dev:
        rec = Recorder(dev)
        boot = dev.wait_ready(20).boot_id
        dev.lights(3, 30)
        sim.control("unplug 1.0")
        rec.wait_for("link_lost")
        # a command issued while unplugged waits for the link and then runs once
        dev.lights(7, 70, timeout=30)
        rec.wait_for("link_restored")
        assert dev.identity is not None and dev.identity.boot_id == boot  # same MCU
        st = dev.status()
        assert (st.lights_mask, st.lights_level) == (7, 70)
        assert st.duplicates == 0
        assert dev.counters["opens"] >= 2
    assert sim.stats()["server"]["unplugs"] == 1


def test_unplug_during_traffic_loses_and_repeats_nothing(sim_mcu) -> None:
    sim = sim_mcu(speed=1000)
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        pending = [dev.submit(p.Lights, 60.0, mask=i % 32, level=1) for i in range(300)]
        sim.control("unplug 0.5")
        pending += [dev.submit(p.Lights, 60.0, mask=i % 32, level=2) for i in range(300)]
        for x in pending:
            x.result()
        st = dev.status()
    assert st.duplicates == 0
    mcu = sim.stats()["mcu"]
    assert mcu["max_runs_per_id"] == 1
    assert mcu["per_command"]["lights"] == 600


def test_shuffle_survives_an_unplug_while_it_runs(sim_mcu) -> None:
    sim = sim_mcu(speed=10)  # 2.4 s
    with TableDevice(sim.port, config=CFG) as dev:
        dev.wait_ready(20)
        pending = dev.submit(p.Shuffle, 30)
        wait_until(dev, lambda: pending.state == "accepted")
        sim.control("unplug 0.4")  # shorter than the watchdog: the shuffle goes on
        assert pending.result().tiles == 144
    assert sim.stats()["mcu"]["per_command"]["shuffle"] == 1


def test_watchdog_stops_motors_when_the_host_goes_silent(sim_mcu) -> None:
    sim = sim_mcu(speed=5)
    dev = TableDevice(sim.port, config=CFG)
    dev.wait_ready(20)
    pending = dev.submit(p.Shuffle, 30)
    wait_until(dev, lambda: pending.state == "accepted")
    dev.close()  # the host goes away mid-shuffle
    stopped = wait_for_status(sim.port, lambda st: bool(st.faults & p.Fault.WATCHDOG.bit))
    assert stopped.state == p.State.IDLE
    assert sim.stats()["mcu"]["watchdog_stops"] == 1
    with TableDevice(sim.port, config=CFG) as again:
        again.wait_ready(20)
        st = again.status()
        assert st.state == "idle"
        assert "watchdog" in st.faults
        again.roll_dice()  # not latched: the next operation clears it
        assert "watchdog" not in again.status().faults


def test_random_bytes_never_crash_or_hang(tmp_path) -> None:
    master, slave = os.openpty()
    import tty

    tty.setraw(slave)
    stop = threading.Event()

    def spew() -> None:
        rng = random.Random(3)
        while not stop.is_set():
            # noise full of sync bytes and plausible headers
            chunk = bytes(rng.choice((0xA5, 0, 1, 2, 4, rng.randrange(256))) for _ in range(256))
            with contextlib.suppress(OSError):
                os.write(master, chunk)
            # paced, not flat out (two cores shared with the device's own threads); the
            # pause is the stop event's, so the spewer ends the moment the test is done
            stop.wait(0.001)

    t = threading.Thread(target=spew, daemon=True)
    t.start()
    try:
        dev = TableDevice(os.ttyname(slave), config=SerialConfig(command_timeout=0.5))
        for _ in range(3):
            start = time.monotonic()
            with pytest.raises((LinkDown, CommandTimeout)):
                dev.identify(timeout=0.5)
            assert time.monotonic() - start < 10  # returned at its timeout, no hang
        # the noise was read and thrown away, and still is: the I/O thread lives
        seen = dev.link_stats.corrupt
        assert seen > 0
        wait_until(dev, lambda: dev.link_stats.corrupt > seen)
        started = time.monotonic()
        dev.close()
        assert time.monotonic() - started < 10
    finally:
        stop.set()
        t.join()
        os.close(master)
        os.close(slave)


def test_random_bytes_mixed_into_real_traffic(table) -> None:
    sim, dev, _rec = table
    for _ in range(5):
        sim.control("garbage 3000")
        assert dev.roll_dice().total >= 2
    assert dev.status().duplicates == 0


def test_socket_url(sim_mcu) -> None:
    sim = sim_mcu(tcp=0)
    assert sim.tcp and sim.tcp.startswith("socket://")
    with TableDevice(sim.tcp, config=CFG) as dev:
        dev.wait_ready(20)
        assert dev.roll_dice().total >= 2
        assert dev.identify().protocol == p.PROTOCOL_VERSION


def test_port_is_opened_exclusively(table) -> None:
    sim, dev, _rec = table
    other = TableDevice(sim.port, config=CFG)
    try:
        with pytest.raises(LinkDown, match="in use"):
            other.wait_ready(3)
    finally:
        other.close()
    assert dev.roll_dice().total >= 2


def test_missing_port_is_explained(tmp_path) -> None:
    with TableDevice(str(tmp_path / "nothing"), config=CFG) as dev:
        with pytest.raises(LinkDown, match="does not exist"):
            dev.wait_ready(1)
        with pytest.raises(LinkDown, match="nothing was sent"):
            dev.roll_dice(timeout=0.3)


def test_a_port_where_the_mcu_never_answers_says_so() -> None:
    """docs/protocol.md section 3: a command that never left because the link was down all
    along raises LinkDown (nothing was sent), not CommandTimeout; and the port opened, so the
    reason is the MCU's silence, not "not connected yet"."""
    leader, follower = os.openpty()
    try:
        name = os.ttyname(follower)
        with TableDevice(name, config=CFG) as dev:
            with pytest.raises(LinkDown, match=f"the MCU did not answer on {name} within 0.5 s"):
                dev.wait_ready(0.5)
            with pytest.raises(LinkDown) as err:
                dev.roll_dice(timeout=0.3)
            assert not isinstance(err.value, CommandTimeout)
            assert "nothing was sent" in str(err.value) and "did not answer" in str(err.value)
            assert "not connected yet" not in str(err.value)
    finally:
        os.close(leader)
        os.close(follower)


def test_protocol_version_mismatch_is_refused(sim_mcu, monkeypatch) -> None:
    sim = sim_mcu()
    monkeypatch.setattr(p, "PROTOCOL_VERSION", 99)
    with TableDevice(sim.port, config=CFG) as dev:
        with pytest.raises(LinkDown, match=r"protocol version 1.*speaks 99"):
            dev.wait_ready(20)
        with pytest.raises(LinkDown, match="protocol"):
            dev.status()


def test_timed_out_command_reports_its_late_result(sim_mcu) -> None:
    sim = sim_mcu(speed=10)
    with TableDevice(sim.port, config=CFG) as dev:
        rec = Recorder(dev)
        dev.wait_ready(20)
        with pytest.raises(CommandTimeout, match="did not report its end") as e:
            dev.shuffle(timeout=0.3)
        assert e.value.maybe_executed
        late = rec.wait_for("late_result")
        assert late.data["command"] == "shuffle" and late.data["ok"]
        assert dev.status().ready_set == 0


def test_no_port_at_all() -> None:
    with pytest.raises(LinkDown, match="no serial port"):
        TableDevice(None)


def test_a_listener_may_close_the_device(table) -> None:
    sim, dev, _ = table
    closed = threading.Event()
    dispatcher: list[threading.Thread] = []

    def on_event(ev: McuEvent) -> None:
        if ev.kind == "lid":
            dispatcher.append(threading.current_thread())
            dev.close()
            closed.set()

    after: list[str] = []
    dev.add_listener(on_event)
    dev.add_listener(lambda ev: after.append(ev.kind) if closed.is_set() else None)
    sim.control("lid open")
    assert closed.wait(20)
    with pytest.raises(LinkDown, match="closed"):
        dev.status()
    dispatcher[0].join(20)  # the events thread ends: everything it was to deliver, it has
    assert not dispatcher[0].is_alive()
    assert after == []  # nothing is delivered once the device is closed, by anyone


def test_a_listener_that_exits_does_not_stop_the_events(table) -> None:
    sim, dev, rec = table

    def leaves(ev: McuEvent) -> None:
        raise SystemExit  # ends a thread without a word, were it not caught

    dev.add_listener(leaves)
    sim.control("lid open")
    first = rec.wait_for("lid")
    sim.control("lid close")
    after = rec.wait_for("lid", where=lambda e: e is not first)  # the next event still arrives
    assert (first.data, after.data) == ({"open": True}, {"open": False})
    # events go out in order: once a later one is in, a repeat of either lid event would be
    dev.roll_dice()
    rec.wait_for("dice")
    assert rec.kinds().count("lid") == 2  # each delivered once: none lost, none repeated


def test_wait_for_ends_at_its_timeout_and_at_once_on_close(tmp_path) -> None:
    # no port: the link never comes up, so only the timeout or close() can end a wait on it
    dev = TableDevice(str(tmp_path / "no-port"), config=CFG)
    assert dev.wait_for(lambda: True, 0)  # already true: no wait at all
    started = time.monotonic()
    assert not dev.wait_for(lambda: dev.ready, 0.2)
    assert time.monotonic() - started >= 0.2
    answers: list[bool] = []
    t = threading.Thread(target=lambda: answers.append(dev.wait_for(lambda: dev.ready, 60)))
    t.start()
    dev.close()
    t.join(20)
    assert not t.is_alive() and answers == [False]


def test_two_threads_closing_at_once_close_each_descriptor_once(tmp_path, monkeypatch) -> None:
    # a descriptor closed twice closes whatever file took its number in between (a test
    # server's waitress pipe was lost so): slow closes give the second closer every chance
    import firmware_bridge.table_device as module

    closed: list[int] = []
    real_close = os.close

    def slow_close(fd: int) -> None:
        closed.append(fd)
        time.sleep(0.05)
        real_close(fd)

    dev = TableDevice(str(tmp_path / "no-port"), config=CFG)
    ends = (dev._wake_r, dev._wake_w)
    monkeypatch.setattr(module.os, "close", slow_close)
    closers = [threading.Thread(target=dev.close) for _ in range(2)]
    for t in closers:
        t.start()
    for t in closers:
        t.join(20)
    assert sorted(closed) == sorted(ends)
    # and nothing is written to a wake-up pipe that is closed
    writes: list[int] = []
    monkeypatch.setattr(module.os, "write", lambda fd, data: writes.append(fd) or len(data))
    dev._wake_sent = False
    dev._wake()
    assert writes == []


def test_close_wakes_a_caller_that_waits_for_the_link(tmp_path) -> None:
    # no port: the command is held, and its caller waits; close() ends the wait at once
    dev = TableDevice(str(tmp_path / "no-port"), config=CFG)
    pending = dev.submit(p.Lights, 60, mask=1, level=1)
    assert pending.state == "held"
    outcome: list[BaseException] = []
    waiting = threading.Event()

    def wait() -> None:
        waiting.set()
        try:
            pending.result()
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=wait)
    t.start()
    assert waiting.wait(20)
    dev.close()
    t.join(20)
    assert not t.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], LinkDown)
    assert "closed" in str(outcome[0])


def test_a_new_host_gets_nothing_owed_to_the_one_before(sim_mcu) -> None:
    # the one before closed with its last answer owed an ACK (or unacknowledged): the MCU kept
    # it, and the next host took an old shuffle_done for a new one, and an old reply for its
    # own command of the same id
    sim = sim_mcu()
    with TableDevice(sim.port, config=CFG) as first:
        first.wait_ready(20)
        first.shuffle()
    with TableDevice(sim.port, config=CFG) as second:
        rec = Recorder(second)
        second.wait_ready(20)
        roll = second.roll_dice()
        assert isinstance(roll, DiceRoll)
        # the MCU sends in order: anything owed to the first host would have come before
        rec.wait_for("dice")
        assert "shuffle_done" not in rec.kinds()
    mcu = sim.stats()["mcu"]
    assert mcu["dropped_for_new_host"] == 0  # the first host acknowledged its last answer
    assert mcu["per_command"].get("dice") == 1


def test_command_ids_start_anywhere(sim_mcu) -> None:
    sim = sim_mcu()
    with (
        TableDevice(sim.port, config=CFG, start=False) as a,
        TableDevice(sim.port, config=CFG, start=False) as b,
    ):
        ida = a.submit(p.GetStatus, 1).cmd_id
        idb = b.submit(p.GetStatus, 1).cmd_id
        assert ida != idb and 0 < ida <= 0xFFFFFFFF and 0 < idb <= 0xFFFFFFFF


def test_close_ends_a_wait_ready_on_another_thread(tmp_path) -> None:
    dev = TableDevice(str(tmp_path / "absent-port"), config=CFG)
    raised: list[BaseException] = []
    waiting = threading.Event()

    def wait() -> None:
        waiting.set()
        try:
            dev.wait_ready(10)
        except LinkDown as exc:
            raised.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert waiting.wait(20)
    started = time.monotonic()
    dev.close()
    waiter.join(5)
    assert not waiter.is_alive() and time.monotonic() - started < 2
    assert raised and "closed" in str(raised[0])
