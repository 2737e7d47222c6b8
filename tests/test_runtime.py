"""The running table (controller/table/runtime.py): one controller thread, the event log written
before anyone is told, subscribers, and the hardware's commands on a worker thread, against a
stand-in for the table's MCU that records what it is asked."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from controller.errors import StorageError
from controller.table import events as ev
from controller.table.machine import RequestRefused, TableController
from controller.table.runtime import Hardware, TableRuntime, TableStopped, prepare_walls
from controller.table.store import EventLog, EventLogReader
from firmware_bridge.errors import CommandFailed, CommandTimeout, LinkDown
from tests.conftest import EventSink

SEATS = ["Ann", "Bo", "Cy", "Di"]
HAND_PHASES = ("playing", "win_declared", "reading", "confirming")
WAIT_S = 20.0  # generous for a loaded machine: every wait ends as soon as its event is seen


class Clock:
    """The table's clock: one second on at every reading (thread-safe)."""

    def __init__(self) -> None:
        self.t = 1_780_000_000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.t += 1.0
            return self.t


class Seen(EventSink):
    """Collects events (as a subscriber, or as ``on_input``) and waits for one."""

    def __init__(self) -> None:
        super().__init__(WAIT_S)


class FakeHardware:
    """A table MCU stand-in: two tile sets, one up as the walls (``table_set``) and one
    shuffled below (``ready_set``), or neither. ``fail`` lists, per method, errors raised
    before it acts; ``lose_answer`` errors raised after it has acted (the answer was lost).
    ``timeline``, when given, gets ``("flag", in_progress)`` for every hand flag set."""

    def __init__(
        self,
        *,
        table_set: int | None = None,
        ready_set: int | None = None,
        next_set: int = 0,
        dice: tuple[int, int] = (3, 5),
        fail: dict[str, list[Exception]] | None = None,
        lose_answer: dict[str, list[Exception]] | None = None,
        timeline: list[tuple[str, Any]] | None = None,
    ) -> None:
        self.table_set, self.ready_set, self.next_set = table_set, ready_set, next_set
        self.dice = dice
        self.fail = {k: list(v) for k, v in (fail or {}).items()}
        self.lose_answer = {k: list(v) for k, v in (lose_answer or {}).items()}
        self.timeline = timeline
        self.calls: list[str] = []
        self.flags: list[bool] = []
        self._lock = threading.Lock()

    def _enter(self, name: str) -> None:
        with self._lock:
            self.calls.append(name)
            if self.fail.get(name):
                raise self.fail[name].pop(0)

    def _leave(self, name: str) -> None:
        with self._lock:
            if self.lose_answer.get(name):
                raise self.lose_answer[name].pop(0)

    def commands(self) -> list[str]:
        with self._lock:
            return list(self.calls)

    def status(self, timeout: float | None = None) -> Any:
        self._enter("status")
        return SimpleNamespace(table_set=self.table_set, ready_set=self.ready_set)

    def shuffle(self, timeout: float | None = None) -> Any:
        self._enter("shuffle")
        self.ready_set, self.next_set = self.next_set, 1 - self.next_set
        self._leave("shuffle")
        return self.ready_set

    def lift_walls(self, timeout: float | None = None) -> Any:
        self._enter("lift_walls")
        assert self.ready_set is not None and self.table_set is None, "nothing to lift"
        self.table_set, self.ready_set = self.ready_set, None
        self._leave("lift_walls")
        return self.table_set

    def lower_walls(self, timeout: float | None = None) -> Any:
        self._enter("lower_walls")
        lowered, self.table_set = self.table_set, None
        self._leave("lower_walls")
        return lowered

    def roll_dice(self, timeout: float | None = None) -> Any:
        self._enter("roll_dice")
        self._leave("roll_dice")
        return self.dice

    def clear_faults(self, timeout: float | None = None) -> Any:
        self._enter("clear_faults")
        self._leave("clear_faults")

    def set_hand_in_progress(self, in_progress: bool) -> None:
        with self._lock:
            self.flags.append(in_progress)
            if self.timeline is not None:
                self.timeline.append(("flag", in_progress))


class FailingLog:
    """An event log whose appends fail (a full disk) once ``broken`` is set."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.broken = False

    def events(self, after: int = 0) -> Iterator[tuple[int, ev.Event]]:
        return self.log.events(after)

    def append_many(self, events: list[ev.Event]) -> list[int]:
        if self.broken:
            raise StorageError("event log: appending failed (disk full)")
        return self.log.append_many(events)

    def close(self) -> None:
        self.log.close()


Make = Callable[..., tuple[TableRuntime, Seen]]


@pytest.fixture
def make() -> Iterator[Make]:
    """Start runtimes (an in-memory log unless one is given), each with a subscriber
    (:class:`Seen`) added before it starts; all are stopped, and their logs closed, at the
    end."""
    made: list[tuple[TableRuntime, Any]] = []

    def start(log: Any = None, **options: Any) -> tuple[TableRuntime, Seen]:
        log = log if log is not None else EventLog(":memory:")
        options.setdefault("clock", Clock())
        runtime = TableRuntime(log, **options)
        seen = Seen()
        runtime.subscribe(seen)
        runtime.start()
        made.append((runtime, log))
        return runtime, seen

    yield start
    for runtime, log in made:
        runtime.stop()
        log.close()


def press(runtime: TableRuntime, seat: int, button: str = "confirm", long: bool = False) -> None:
    runtime.put(ev.SeatPressed(time=runtime.clock(), seat=seat, button=button, long=long))


def settle(runtime: TableRuntime) -> None:
    """Wait until the controller has taken everything put so far."""
    runtime.call(lambda: None)


def new_session(runtime: TableRuntime, **args: Any) -> list[ev.Event]:
    return runtime.request("new_session", {"seats": SEATS, **args}, by="test")


# -- requests and calls --------------------------------------------------------------------------


def test_a_request_is_answered_with_the_events_it_produced(make: Make) -> None:
    runtime, seen = make()
    out = new_session(runtime, stake=2, dealer=1)
    assert [e.type for e in out] == ["session_started"]
    assert out == [e for _, e in runtime.log.events()]
    snap = runtime.snapshot()
    assert (snap["session"], snap["stake"], snap["dealer"]) == (1, 2, 1)
    assert snap["seat_names"] == SEATS
    out = runtime.request("start_hand")
    assert [e.type for e in out] == ["hand_started", "phase", "command"]
    settle(runtime)
    assert seen.events == [e for _, e in runtime.log.events()]


def test_a_refused_request_raises_and_logs_nothing(make: Make) -> None:
    runtime, seen = make()
    with pytest.raises(RequestRefused, match="no session"):
        runtime.request("start_hand")
    with pytest.raises(RequestRefused, match="unknown action"):
        runtime.request("fly")
    assert runtime.log.last_seq() == 0
    new_session(runtime)
    for args in ({"stake": "0"}, {"seats": ["Ann"]}, {"dealer": 4}):
        with pytest.raises(RequestRefused):
            runtime.request("new_session", args)
    with pytest.raises(RequestRefused, match="nothing to retry"):
        runtime.request("retry")
    assert runtime.log.last_seq() == 1
    settle(runtime)
    assert [e.type for e in seen.events] == ["session_started"]
    assert runtime.snapshot()["session"] == 1


def test_call_runs_on_the_controller_thread_and_passes_exceptions_back(make: Make) -> None:
    runtime, _ = make(run_commands=False)
    assert runtime.call(lambda: threading.current_thread().name) == "table-controller"
    with pytest.raises(ZeroDivisionError):
        runtime.call(lambda: 1 / 0)
    new_session(runtime)
    # calls and inputs are taken in the order they were put
    press(runtime, 0)
    assert runtime.call(lambda: runtime.state.phase) == "shuffling"


# -- subscribers ---------------------------------------------------------------------------------


def test_subscribers_see_every_event_in_order_once_it_is_in_the_log(
    make: Make, tmp_path: Path
) -> None:
    log = EventLog(tmp_path / "table.db")
    reader: EventLogReader = log.reader()  # a connection of its own: it sees only what is on disk
    on_disk: list[bool] = []

    def check(event: ev.Event) -> None:
        on_disk.append(event in [e for _, e in reader.events()])

    runtime, seen = make(log, run_commands=False)
    runtime.subscribe(check)
    late = Seen()
    new_session(runtime)
    unsubscribe = runtime.subscribe(late)
    press(runtime, 0)
    runtime.put(ev.CommandDone(time=runtime.clock(), command="prepare_walls", result={}))
    settle(runtime)
    unsubscribe()
    unsubscribe()  # twice is harmless
    runtime.put(ev.CommandDone(time=runtime.clock(), command="dice", result=[2, 6]))
    runtime.request("declare_drawn")
    settle(runtime)
    reader.close()

    logged = [e for _, e in log.events()]
    assert seen.events == logged  # every output, in order, and no input
    assert not any(type(e) in ev.INPUT_TYPES for e in seen.events)
    assert len(on_disk) == len(logged) and all(on_disk)
    # subscribed after the session started, unsubscribed before the dice
    first = logged.index(late.events[0])
    assert late.events == logged[first : first + len(late.events)]
    assert late.of(ev.SessionStarted) == [] and late.of(ev.Learnt) == []
    assert [e.phase for e in seen.of(ev.PhaseChanged)] == ["shuffling", "dice", "playing", "idle"]


def test_a_subscriber_that_raises_does_not_stop_the_others(
    make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def broken(event: ev.Event) -> None:
        calls.append(event.type)
        raise RuntimeError("a broken dashboard")

    runtime, seen = make(run_commands=False)
    runtime.subscribe(broken)
    after = Seen()
    runtime.subscribe(after)
    with caplog.at_level(logging.ERROR, logger="controller.table.runtime"):
        out = new_session(runtime)
        out += runtime.request("start_hand")
    settle(runtime)
    assert seen.events == out and after.events == out
    assert calls == [e.type for e in out]
    assert "a subscriber failed" in caplog.text
    assert runtime.snapshot()["phase"] == "shuffling"


# -- the hardware --------------------------------------------------------------------------------


def test_the_dealers_confirm_prepares_the_walls_then_rolls_the_dice(make: Make) -> None:
    hw = FakeHardware(dice=(4, 4))
    device: Hardware = hw
    inputs = Seen()
    runtime, seen = make(device=device, on_input=inputs)
    new_session(runtime, dealer=2)
    press(runtime, 2)
    seen.wait_phase("playing")
    assert hw.commands() == ["status", "shuffle", "lift_walls", "status", "roll_dice"]
    assert [c.command for c in seen.of(ev.CommandRequested)] == ["prepare_walls", "dice"]
    done = inputs.of(ev.CommandDone)
    assert [(d.command, d.result) for d in done] == [
        ("prepare_walls", {"tile_set": 0}),
        ("dice", [4, 4]),
    ]
    snap = runtime.snapshot()
    assert (snap["phase"], snap["hand"], snap["dice"], snap["kaibao"]) == (
        "playing",
        1,
        [4, 4],
        True,
    )
    assert snap["wall"] is not None and snap["faults"] == {}
    assert runtime.call(lambda: runtime.state.pending_command) is None


def test_the_hand_flag_follows_the_phase(make: Make) -> None:
    timeline: list[tuple[str, Any]] = []
    hw = FakeHardware(timeline=timeline)

    def phases(event: ev.Event) -> None:
        if isinstance(event, ev.PhaseChanged):
            timeline.append(("phase", event.phase))

    runtime, seen = make(device=hw)
    assert timeline == [("flag", False)]  # set as it starts, before any input
    runtime.subscribe(phases)
    new_session(runtime)
    press(runtime, 0)
    seen.wait_phase("playing")
    runtime.request("declare_drawn")
    settle(runtime)
    assert timeline[-2:] == [("phase", "idle"), ("flag", False)]
    phase = "idle"
    for what, value in timeline:
        if what == "phase":
            phase = value
        else:
            assert value == (phase in HAND_PHASES), timeline
    assert True in hw.flags
    assert ("phase", "playing") in timeline


def test_a_jam_shows_a_fault_and_waits_for_a_confirm(make: Make) -> None:
    jam = CommandFailed("the shuffler jammed", command="shuffle", reason="fault", fault="jam")
    hw = FakeHardware(fail={"shuffle": [jam]})
    runtime, seen = make(device=hw)
    new_session(runtime)
    press(runtime, 0)
    fault = seen.wait_for(lambda e: isinstance(e, ev.FaultChanged) and e.fault == "jam")
    assert fault.active and "jammed" in fault.message
    settle(runtime)
    # nothing more is asked of the table until a player acts
    assert [c.command for c in seen.of(ev.CommandRequested)] == ["prepare_walls"]
    snap = runtime.snapshot()
    assert snap["phase"] == "shuffling" and "press confirm" in snap["phase_reason"]
    assert snap["faults"] == {"jam": "the shuffler jammed"}
    assert hw.commands() == ["status", "shuffle"]

    press(runtime, 3)  # any seat's confirm: the jam is cleared, and the walls prepared again
    seen.wait_phase("playing")
    assert [c.command for c in seen.of(ev.CommandRequested)] == [
        "prepare_walls",
        "clear_faults",
        "prepare_walls",
        "dice",
    ]
    cleared = seen.of(ev.FaultChanged)[-1]
    assert (cleared.fault, cleared.active) == ("jam", False)
    assert hw.commands() == [
        "status",
        "shuffle",
        "clear_faults",
        "status",
        "shuffle",
        "lift_walls",
        "status",
        "roll_dice",
    ]
    assert runtime.snapshot()["faults"] == {}


def test_a_lost_answer_is_asked_again_without_shuffling_twice(make: Make) -> None:
    lost = CommandTimeout("no answer to shuffle", command="shuffle", maybe_executed=True)
    hw = FakeHardware(lose_answer={"shuffle": [lost]})
    inputs = Seen()
    runtime, seen = make(device=hw, on_input=inputs)
    new_session(runtime)
    press(runtime, 0)
    seen.wait_phase("playing")
    [failed] = inputs.of(ev.CommandFailed)
    assert (failed.command, failed.reason) == ("prepare_walls", "timeout")
    requested = [(c.command, c.attempt) for c in seen.of(ev.CommandRequested)]
    assert requested == [("prepare_walls", 1), ("prepare_walls", 2), ("dice", 1)]
    # the second time the table said a set was waiting: it was raised, not shuffled again
    assert hw.commands().count("shuffle") == 1
    assert hw.table_set == 0


def test_a_link_that_stays_down_is_tried_three_times_then_waits(make: Make) -> None:
    hw = FakeHardware(fail={"status": [LinkDown("no answer from the table")] * 3})
    inputs = Seen()
    runtime, seen = make(device=hw, on_input=inputs)
    new_session(runtime)
    press(runtime, 0)
    seen.wait_phase("shuffling", "press confirm")
    settle(runtime)
    assert [f.reason for f in inputs.of(ev.CommandFailed)] == ["link_down"] * 3
    assert [c.attempt for c in seen.of(ev.CommandRequested)] == [1, 2, 3]
    assert hw.commands() == ["status"] * 3
    press(runtime, 1)
    seen.wait_phase("playing")
    assert [c.attempt for c in seen.of(ev.CommandRequested)] == [1, 2, 3, 1, 1]


def test_without_a_device_commands_fail_with_no_device(make: Make) -> None:
    inputs = Seen()
    runtime, _ = make(device=None, on_input=inputs)
    new_session(runtime)
    press(runtime, 0)
    failed = inputs.wait_for(lambda e: isinstance(e, ev.CommandFailed))
    assert (failed.command, failed.reason) == ("prepare_walls", "no_device")
    settle(runtime)
    snap = runtime.snapshot()
    assert snap["phase"] == "shuffling"
    assert "no table hardware is connected" in snap["phase_reason"]
    assert snap["faults"] == {}


def test_without_run_commands_the_commands_are_left_to_the_test(make: Make) -> None:
    hw = FakeHardware()
    runtime, seen = make(device=hw, run_commands=False)
    new_session(runtime)
    press(runtime, 0)
    settle(runtime)
    assert [c.command for c in seen.of(ev.CommandRequested)] == ["prepare_walls"]
    runtime.put(ev.CommandDone(time=runtime.clock(), command="prepare_walls", result={}))
    runtime.put(ev.CommandDone(time=runtime.clock(), command="dice", result=[1, 2]))
    settle(runtime)
    assert runtime.snapshot()["phase"] == "playing"
    runtime.stop()  # the hardware worker finishes whatever it was given before it stops
    assert hw.commands() == []
    assert hw.flags[-1] is True  # the hand flag is still the runtime's to set


def test_a_command_pending_at_a_stop_is_asked_again_on_start(make: Make, tmp_path: Path) -> None:
    path = tmp_path / "table.db"
    first, _ = make(EventLog(path), run_commands=False)
    new_session(first)
    press(first, 0)
    settle(first)
    assert first.call(lambda: first.state.pending_command).command == "prepare_walls"
    first.stop()  # the power went mid-shuffle
    first.log.close()

    hw = FakeHardware()
    second, seen = make(EventLog(path), device=hw)
    seen.wait_phase("playing")
    assert hw.commands() == ["status", "shuffle", "lift_walls", "status", "roll_dice"]
    assert [c.command for c in seen.of(ev.CommandRequested)] == ["dice"]
    assert second.snapshot()["hand"] == 1
    second.stop()
    second.log.close()

    # stopped mid-hand with nothing pending: the MCU is told a hand is on, and asked nothing
    hw = FakeHardware()
    third, _ = make(EventLog(path), device=hw)
    assert hw.flags == [True]
    assert third.snapshot()["phase"] == "playing"
    third.stop()
    assert hw.commands() == []


# -- failures ------------------------------------------------------------------------------------


def test_a_storage_error_stops_the_controller_with_the_state_from_the_log(make: Make) -> None:
    log = FailingLog(EventLog(":memory:"))
    hw = FakeHardware()
    runtime, seen = make(log, device=hw)
    new_session(runtime)
    log.broken = True
    with pytest.raises(StorageError, match="disk full"):
        runtime.request("start_hand")
    runtime.stop()
    assert isinstance(runtime.fatal, StorageError)
    # what was decided and not stored is gone: the state is what the log holds
    assert (runtime.state.phase, runtime.state.hand, runtime.state.session) == ("idle", 0, 1)
    assert runtime.state.pending_command is None
    assert [e.type for e in seen.events] == ["session_started"]  # nobody was told
    assert "shuffle" not in hw.commands()
    inputs = runtime.inputs
    press(runtime, 0)  # a stopped table takes no more inputs
    assert runtime.inputs == inputs


def test_a_stopped_controller_answers_at_once_and_names_the_storage_failure(make: Make) -> None:
    log = FailingLog(EventLog(":memory:"))
    runtime, _ = make(log)
    new_session(runtime)
    log.broken = True
    with pytest.raises(StorageError):
        runtime.request("start_hand")
    started = time.monotonic()
    with pytest.raises(TableStopped, match="disk full") as refused:
        runtime.request("start_hand", timeout=WAIT_S)
    assert isinstance(refused.value.__cause__, StorageError)
    with pytest.raises(TableStopped, match="disk full"):
        runtime.snapshot()
    assert time.monotonic() - started < WAIT_S / 2  # not a timeout waited out


def test_work_queued_behind_the_storage_failure_is_answered_not_left_waiting(
    make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FailingLog(EventLog(":memory:"))
    runtime, _ = make(log)
    new_session(runtime)
    log.broken = True
    # every item put in the controller's inbox is told, so the test waits for the queue
    # to fill instead of polling its size
    queued = threading.Condition()
    put = runtime._inbox.put

    def put_and_tell(item: Any, *args: Any, **kwargs: Any) -> None:
        put(item, *args, **kwargs)
        with queued:
            queued.notify_all()

    monkeypatch.setattr(runtime._inbox, "put", put_and_tell)
    release = threading.Event()
    holding = threading.Event()

    def hold() -> None:
        holding.set()
        release.wait()

    # hold the controller thread so that requests queue up behind the one that will fail
    blocker = threading.Thread(target=lambda: runtime.call(hold), daemon=True)
    blocker.start()
    assert holding.wait(WAIT_S)  # the controller is in it: what comes next waits behind
    results: list[BaseException] = []

    def ask() -> None:
        try:
            runtime.request("start_hand", timeout=WAIT_S)
        except BaseException as exc:  # the test records what each one got
            results.append(exc)

    askers = [threading.Thread(target=ask, daemon=True) for _ in range(3)]
    for t in askers:
        t.start()
    with queued:
        assert queued.wait_for(lambda: runtime._inbox.qsize() >= 3, WAIT_S)
    started = time.monotonic()
    release.set()
    for t in askers:
        t.join(WAIT_S)
    assert time.monotonic() - started < WAIT_S / 2
    assert len(results) == 3
    # the first one taken hit the disk; the others were answered that the table stopped
    assert sorted(type(r).__name__ for r in results) == ["StorageError", *["TableStopped"] * 2]


def test_a_stopped_runtime_refuses_requests_at_once(make: Make) -> None:
    runtime, _ = make()
    new_session(runtime)
    runtime.stop()
    with pytest.raises(TableStopped, match="not running"):
        runtime.request("start_hand", timeout=WAIT_S)
    assert runtime.fatal is None


def test_a_driver_bug_fails_the_step_and_the_worker_goes_on(
    make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    hw = FakeHardware(fail={"roll_dice": [ZeroDivisionError("a bug in the driver")]})
    inputs = Seen()
    runtime, seen = make(device=hw, on_input=inputs)
    new_session(runtime)
    with caplog.at_level(logging.ERROR, logger="controller.table.runtime"):
        press(runtime, 0)
        failed = inputs.wait_for(lambda e: isinstance(e, ev.CommandFailed))
    assert (failed.command, failed.reason) == ("dice", "error")
    assert "ZeroDivisionError: a bug in the driver" in failed.message
    assert "the hardware step dice failed" in caplog.text
    # not a passing condition: the table says so and waits for a player
    seen.wait_phase("dice", "ZeroDivisionError")
    # the worker is still there: asked again, the dice roll and the hand starts
    press(runtime, 0)
    seen.wait_phase("playing")
    assert hw.commands().count("roll_dice") == 2


def test_a_controller_bug_rebuilds_the_state_from_the_log_and_the_table_goes_on(
    make: Make, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, seen = make(run_commands=False)
    new_session(runtime)
    handle = runtime.controller.handle

    def buggy(event: ev.Event) -> list[ev.Event]:
        handle(event)  # the state changes...
        raise RuntimeError("a bug in the controller")  # ...and nothing is logged

    monkeypatch.setattr(runtime.controller, "handle", buggy)
    with caplog.at_level(logging.ERROR, logger="controller.table.runtime"):
        with pytest.raises(RuntimeError, match="a bug"):
            runtime.request("start_hand")
        press(runtime, 0)
        snap = runtime.snapshot()
    assert "the controller failed" in caplog.text
    assert (snap["phase"], snap["hand"]) == ("idle", 0)
    assert runtime.fatal is None

    monkeypatch.undo()
    out = runtime.request("start_hand")
    assert [e.type for e in out] == ["hand_started", "phase", "command"]
    snap = runtime.snapshot()
    assert (snap["phase"], snap["hand"]) == ("shuffling", 1)
    assert seen.events == [e for _, e in runtime.log.events()]
    assert runtime.inputs == 4


def test_on_input_sees_every_input_in_order(make: Make) -> None:
    inputs = Seen()
    runtime, _ = make(run_commands=False, on_input=inputs)
    new_session(runtime)
    t = runtime.clock
    put = [
        ev.CameraStatus(time=t(), live=True),
        ev.SeatPressed(time=t(), seat=0, button="confirm"),
        ev.DeviceEvent(time=t(), kind="lid", data={"open": True}),
        ev.CommandDone(time=t(), command="prepare_walls", result={"tile_set": 1}),
        ev.DeviceEvent(time=t(), kind="lid", data={"open": False}),
        ev.CommandDone(time=t(), command="dice", result=[6, 6]),
        ev.SeatPressed(time=t(), seat=2, button="win"),
        ev.SeatPressed(time=t(), seat=2, button="win", long=True),
    ]
    for e in put[:4]:
        runtime.put(e)
    with pytest.raises(RequestRefused):  # a refused request is an input too
        runtime.request("undo")
    for e in put[4:]:
        runtime.put(e)
    settle(runtime)
    got = inputs.events
    assert [e.type for e in got[:1]] == ["request"] and got[0].action == "new_session"
    assert got[1:5] == put[:4]
    assert isinstance(got[5], ev.Request) and got[5].action == "undo"
    assert got[6:] == put[4:]
    assert runtime.inputs == len(got) == 10
    # the journal of inputs replays the controller exactly
    again = TableController()
    for e in got:
        with contextlib.suppress(RequestRefused):
            again.handle(e)
    assert runtime.call(lambda: runtime.state == again.state)
    assert runtime.snapshot()["phase"] == "playing"  # the withdrawn win left the hand on


# -- prepare_walls --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table_set", "ready_set", "calls", "tile_set"),
    [
        (None, None, ["status", "shuffle", "lift_walls", "status"], 1),
        (None, 0, ["status", "lift_walls", "status"], 0),  # a set waits: no shuffle
        (0, None, ["status", "lower_walls", "status", "shuffle", "lift_walls", "status"], 1),
        (0, 1, ["status", "lower_walls", "status", "lift_walls", "status"], 1),
    ],
)
def test_prepare_walls_does_only_the_steps_still_to_do(
    table_set: int | None, ready_set: int | None, calls: list[str], tile_set: int
) -> None:
    hw = FakeHardware(table_set=table_set, ready_set=ready_set, next_set=1)
    assert prepare_walls(hw) == {"tile_set": tile_set}
    assert hw.commands() == calls
    assert (hw.table_set, hw.ready_set) == (tile_set, None)
    # asked again (a restart after the walls came up): the walls go down, and a set comes up
    hw.calls.clear()
    again = prepare_walls(hw)["tile_set"]
    assert hw.commands()[:2] == ["status", "lower_walls"]
    assert (hw.table_set, hw.ready_set) == (again, None)


def test_prepare_walls_passes_a_failure_on() -> None:
    hw = FakeHardware(fail={"lift_walls": [LinkDown("the link dropped")]})
    with pytest.raises(LinkDown):
        prepare_walls(hw)
    assert hw.commands() == ["status", "shuffle", "lift_walls"]
    assert prepare_walls(hw) == {"tile_set": 0}  # the shuffled set waited: raised, not reshuffled
    assert hw.commands().count("shuffle") == 1
