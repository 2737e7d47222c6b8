"""The whole table, simulated: four bots play real hands against the real table controller.

Everything the controller meets is the product's own code path:

- the table's MCU is the simulated MCU in its own process behind a real pty
  (:class:`~hardware_sim.mcu_process.SimMcuProcess`), driven by
  :class:`~firmware_bridge.table_device.TableDevice`: it shuffles, raises the walls and rolls
  the dice the bots play with;
- the seat panel is :class:`~firmware_bridge.seat_panel.SeatPanel` on gpiozero's mock pins,
  pressed by the bots through :class:`~hardware_sim.panel_sim.PanelSim`, with contact bounce;
- the overhead camera is :class:`~hardware_sim.camera.SimCamera`, which renders every moment
  of the hand (flowers and melds as they are laid, the claimed tile turned, an arm reaching in,
  the pond, the winner's hand laid open), read by the real
  :class:`~vision.pipeline.TablePipeline` with the committed tile model.

The bots' game (:func:`hardware_sim.game.play_hand`) is played with the dice the MCU rolled,
from the dealer and 荒番 counter the simulator tracks itself from the true outcomes, so each
hand's true settlement is known here and never shown to the controller. The controller's
settlement is compared with it hand by hand (:class:`HandReport`): a difference is a
mismatch, listed with what differed.

The bots act as careful players: they press 胡 and confirm, lay their hands open, answer the
questions the table asks truthfully, and check the settlement shown before confirming it. One
that is wrong is corrected where a player could (the way a hand was won), and otherwise
confirmed as shown and reported: the simulator is the controller's test, so it never hides
what the controller got wrong.

Time: the controller, the seat panel and the camera run on one simulated clock
(:class:`~hardware_sim.panel_sim.FakeClock`) that the simulator moves on as the hand is
played (seconds per turn, a frame every :attr:`TableSim.frame_dt`); only the MCU's motors run
in real time, sped up.
"""

from __future__ import annotations

import math
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.errors import MahjongTableError
from controller.profiles import load_profile
from controller.rules import Meld, MeldKind, Tile, WinType
from controller.rules.report import settlement_to_dict
from controller.rules.tiles import format_tiles, parse_tiles
from controller.table import events as ev
from controller.table.ledger import amount_json, parse_amount
from controller.table.runtime import TableRuntime
from controller.table.sources import CameraFeed, device_events, panel_events
from controller.table.store import EventLog
from firmware_bridge.config import SeatPanelConfig, parse_seat_panel
from hardware_sim.game import PlayedHand, play_hand
from hardware_sim.panel_sim import FakeClock, PanelSim

__all__ = ["SIM_PANEL", "HandReport", "SimError", "TableSim"]

SIM_PANEL: dict[str, Any] = {
    "debounce": 0.02,
    "long_press": 0.8,
    "pull_up": True,
    "buzzer": 26,
    "seat": [
        {"win": 5, "confirm": 6, "led": 12},
        {"win": 13, "confirm": 16, "led": 17},
        {"win": 19, "confirm": 20, "led": 21},
        {"win": 22, "confirm": 23, "led": 24},
    ],
}
"""The simulated table's seat panel: the example config's pins."""

ARM_FRAMES = 2
"""Frames an arm is seen reaching in before what it lays shows."""

POND_SHOWN = 72
"""The most discards the scene lays inside the walls; past it the oldest are out of sight
(swept into a heap at the wall's foot on a real table)."""


FAULTS = ("jam", "lid", "reset", "unplug", "camera", "misread")
"""The faults the simulator can inject into a hand: the shuffler jams (卡牌), the lid is
opened mid-shuffle, the MCU resets mid-shuffle, the serial cable is pulled for a moment
mid-shuffle, the camera is gone for :data:`CAMERA_GONE_S` mid-hand, a tile of the winning
hand is misread (a wrong tile is what the camera sees)."""

CAMERA_GONE_S = 10.0

READ_PATIENCE_S = 10.0
"""Real seconds the players wait for the table to read a hand laid open before they look at
what it shows and correct it."""

READ_GIVE_UP_S = 120.0
"""How long the simulated players wait for a table that shows nothing misread to read the
hand before they give up (the simulator then stops with an error): a loaded machine reads
slowly, and that is not the controller's fault."""


class SimError(MahjongTableError):
    """The simulated table could not go on (a part did not start, the controller stopped
    answering)."""


@dataclass
class HandReport:
    """One simulated hand: what the bots truly played, and what the controller made of it."""

    hand: int
    dealer: int
    dice: tuple[int, int]
    outcome: str
    """``settled``, ``drawn``, or ``stopped`` (the simulation ended mid-hand)."""
    truth: dict[str, int | str] = field(default_factory=dict)
    """Each seat's true payment (seat as text)."""
    settled: dict[str, int | str] = field(default_factory=dict)
    """Each seat's payment as the controller settled it."""
    how: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    """The questions the table asked, in words."""
    corrections: list[str] = field(default_factory=list)
    """What the players had to correct before the settlement was right."""
    mismatches: list[str] = field(default_factory=list)
    """What the controller got wrong that nobody corrected: a hand settled wrong."""
    fault: str | None = None
    """The fault injected into the hand, if any."""
    faults: list[str] = field(default_factory=list)
    """The faults the table showed during the hand, as they came and went."""
    resumed: bool = False
    """The table restarted during this hand, and it was finished after the restart."""
    latency_s: float | None = None
    """Real seconds from the stimulus that completed what the controller needed (the frame
    that showed the hand laid open, read through the vision pipeline, or the press) to its
    proposed settlement."""
    sim_seconds: float = 0.0
    frames: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_json(self) -> dict[str, Any]:
        return {
            "hand": self.hand,
            "dealer": self.dealer,
            "dice": list(self.dice),
            "outcome": self.outcome,
            "resumed": self.resumed,
            "fault": self.fault,
            "faults": self.faults,
            "how": self.how,
            "truth": self.truth,
            "settled": self.settled,
            "questions": self.questions,
            "corrections": self.corrections,
            "mismatches": self.mismatches,
            "latency_s": self.latency_s,
            "frames": self.frames,
        }


def _amounts(payments: dict[str, Any]) -> dict[str, Fraction]:
    return {str(k): parse_amount(v) for k, v in payments.items()}


def _meld_json(m: Meld) -> dict[str, Any]:
    return {"kind": m.kind.value, "tiles": format_tiles(m.tiles), "from": m.source}


class TableSim:
    """A whole simulated table around a real :class:`~controller.table.runtime.TableRuntime`.

    :param seed: seeds the bots' walls and choices, the MCU's dice and the camera's noise
    :param db: the event log's path (default: one in memory)
    :param profile: the rules profile of the session; ``stake`` its stake; ``seats`` the
        players' names
    :param mcu_speed: how much faster than real time the simulated MCU's motors run
    :param turn_s: the simulated seconds a turn takes (drawn uniformly in the range)
    :param hold: frames each thing laid is seen for before the next (the camera settles a
        change in about five)
    :param pace: simulated seconds per real second (10: a hand of some seven simulated
        minutes in about forty seconds); 0 runs flat out
    :param faults: faults (:data:`FAULTS`) to inject, one into each of ``fault_rate`` of
        the hands, chosen at random
    :param on_event: called with every event the controller emits (its thread)
    :param on_input: called with every input the controller takes, in order (its thread)
    :param recognizer: the vision pipeline's tile recogniser (default: the committed model)
    :param confirm: ``"players"``: the bots check each proposal and confirm it;
        ``"dashboard"``: they lay their hands, answer the table's questions and put right
        what the camera misread, then wait for someone at the dashboard to confirm (or
        correct) it; a settlement confirmed there that differs from the truth is reported
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        db: str | Path = ":memory:",
        profile: str = "shanghai",
        stake: int | Fraction = 1,
        seats: tuple[str, ...] | None = None,
        mcu_speed: float = 100.0,
        turn_s: tuple[float, float] = (4.0, 9.0),
        frame_dt: float = 0.1,
        hold: int = 8,
        pond: bool = True,
        on_event: Callable[[ev.Event], None] | None = None,
        on_input: Callable[[ev.Event], None] | None = None,
        recognizer: Any = None,
        mcu_options: dict[str, Any] | None = None,
        pace: float = 0.0,
        faults: tuple[str, ...] = (),
        fault_rate: float = 0.25,
        confirm: str = "players",
    ) -> None:
        self.seed = seed
        self.db = db
        self.profile_name = profile
        self.profile = load_profile(profile)
        self.stake = stake
        self.seats = seats
        self.mcu_speed = mcu_speed
        self.turn_s = turn_s
        self.frame_dt = frame_dt
        self.hold = hold
        self.pond = pond
        self.on_event = on_event
        self.on_input = on_input
        self.recognizer = recognizer
        self.mcu_options = dict(mcu_options or {})
        _check_options(pace, faults, fault_rate, confirm)
        self.pace = pace
        self.faults = tuple(faults)
        self.fault_rate = fault_rate
        self.confirm = confirm
        self._fault: str | None = None
        self._camera_back: float | None = None
        self._misread: dict[int, tuple[Tile, ...]] = {}
        self._paced_from: tuple[float, float] | None = None
        self.rng = random.Random(seed)
        # the simulated clock starts at the real time, so the log reads like a real evening
        self.clock = FakeClock(time.time())
        self.reports: list[HandReport] = []
        self._stack = ExitStack()
        self._cond = threading.Condition()
        self._events: list[ev.Event] = []
        self._frame_index = 0
        # real times of the last frame read and press made, and of each proposal, for latency
        self._stimulus = 0.0
        self._proposed_at: dict[int, float] = {}
        self._stopping = threading.Event()
        self.runtime: TableRuntime | None = None
        # the truth the simulator tracks itself, from the true outcomes
        self.dealer = 0
        self.huangfan = 0

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> TableSim:
        """Start the simulated MCU, the panel, the camera and the controller; begin a
        session unless the log holds one (then the table resumes where it was)."""
        try:
            tmp = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="table-sim-")))
            self._start_mcu(tmp)
            self._start_panel()
            self._start_camera()
            runtime = self._start_controller()
        except BaseException:
            self._stack.close()
            raise
        self._begin_session(runtime)
        return self

    def _start_mcu(self, tmp: Path) -> None:
        """The simulated MCU in its own process, its link in ``tmp``, and the device on it."""
        from firmware_bridge.table_device import TableDevice
        from hardware_sim.mcu_process import SimMcuProcess

        options: dict[str, Any] = {
            "speed": self.mcu_speed,
            "seed": self.seed,
            "link": str(tmp / "mcu"),
        }
        options.update(self.mcu_options)
        self.mcu = SimMcuProcess(**options)
        self._stack.callback(self.mcu.close)
        self.device = TableDevice(self.mcu.port)
        self._stack.callback(self.device.close)
        self.device.wait_ready(timeout=20.0)

    def _start_panel(self) -> None:
        """The seat panel on mock pins, and the bots' hands on its buttons."""
        from gpiozero.pins.mock import MockFactory

        from firmware_bridge.seat_panel import SeatPanel

        self.factory = MockFactory()
        self._stack.callback(self.factory.reset)
        self.panel_config: SeatPanelConfig = parse_seat_panel(SIM_PANEL)
        self.panel = SeatPanel(
            self.panel_config, pin_factory=self.factory, clock=self.clock, poll_interval=None
        )
        self._stack.callback(self.panel.close)
        self.presser = PanelSim(
            self.panel_config, self.factory, self.clock, on_tick=self.panel.poll
        )

    def _start_camera(self) -> None:
        """The rendered camera, and the vision pipeline calibrated on its first frame."""
        from hardware_sim.camera import SimCamera
        from vision.calibration import calibrate_from_markers
        from vision.pipeline import TablePipeline

        self.camera = SimCamera(seed=self.seed)
        self._stack.callback(self.camera.close)
        calibration = calibrate_from_markers(self.camera.read().image)
        self.pipeline = TablePipeline(calibration, self.recognizer)

    def _start_controller(self) -> TableRuntime:
        """The event log and the controller on it, fed by the device, the panel and the
        camera."""
        self.log = EventLog(self.db)
        self._stack.callback(self.log.close)
        self._catch_up_with_log()
        self.feed = CameraFeed(self.pipeline, self._put, self.clock)
        runtime = TableRuntime(
            self.log,
            device=self.device,
            clock=self.clock,
            on_hand_start=self.feed.reset,
            on_input=self.on_input,
        )
        self.runtime = runtime
        runtime.subscribe(self._seen)
        if self.on_event is not None:
            runtime.subscribe(self.on_event)
        self._stack.callback(device_events(self.device, runtime.put, self.clock))
        self._stack.callback(panel_events(self.panel, runtime.put, self.clock))
        runtime.start()
        self._stack.callback(runtime.stop)
        return runtime

    def _catch_up_with_log(self) -> None:
        """Move the simulated clock past the log's last moment."""
        # the simulated clock runs ahead of the real one: a table restarted on its log
        # goes on from the log's last moment, never back in time
        last = self.log.last_seq()
        for _, e in self.log.events(after=max(0, last - 1)):
            if e.time >= self.clock():
                self.clock.advance(e.time - self.clock() + 1.0)

    def _begin_session(self, runtime: TableRuntime) -> None:
        """Begin a session unless the log holds one; take the dealer and 荒番 the table
        starts from."""
        state = runtime.call(lambda: runtime.state)
        if not state.session:
            session: dict[str, Any] = {
                "profile": self.profile_name,
                "stake": amount_json(self.stake),
                "dealer": 0,
            }
            if self.seats is not None:
                session["seats"] = list(self.seats)
            runtime.request("new_session", session, by="sim")
        snap = runtime.snapshot()
        self.dealer = int(snap["dealer"])
        self.huangfan = int(snap["huangfan"])

    def close(self) -> None:
        self._stopping.set()
        self._stack.close()

    def stop(self) -> None:
        """Ask a running :meth:`play` to end after the step it is in (any thread, or a
        signal handler)."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` (or :meth:`close`) was asked for."""
        return self._stopping.is_set()

    def __enter__(self) -> TableSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the controller's side -------------------------------------------------------------------

    @property
    def _rt(self) -> TableRuntime:
        if self.runtime is None:
            raise SimError("the simulated table is not started")
        return self.runtime

    def _put(self, event: ev.Event) -> None:
        self._rt.put(event)

    def _seen(self, event: ev.Event) -> None:
        if isinstance(event, ev.SettlementProposed):
            self._proposed_at[id(event)] = time.perf_counter() - self._stimulus
        with self._cond:
            self._events.append(event)
            self._cond.notify_all()

    def _drain(self) -> None:
        """Wait until the controller has taken everything put on its bus so far."""
        self._rt.call(lambda: None, timeout=30.0)
        if self._rt.fatal is not None:
            raise SimError(f"the controller stopped: {self._rt.fatal}")

    def _mark(self) -> int:
        with self._cond:
            return len(self._events)

    def _since(self, mark: int) -> list[ev.Event]:
        with self._cond:
            return list(self._events[mark:])

    def _wait_after(
        self, mark: int, done: Callable[[ev.Event], bool], what: str, timeout: float = 30.0
    ) -> ev.Event:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self._events[mark:]:
                    if done(e):
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SimError(f"the table did not {what} within {timeout} s")
                if self._stopping.is_set():
                    raise _Stopped
                self._cond.wait(min(left, 0.2))

    def snapshot(self) -> dict[str, Any]:
        return self._rt.snapshot()

    # -- the players' hands and eyes -------------------------------------------------------------

    def _press(self, seat: int, button: str, long: bool = False) -> None:
        hold = self.panel_config.long_press + 0.2 if long else 0.1
        self.presser.hold(seat, button)
        self.presser.wait(hold)
        self._stimulus = time.perf_counter()
        self.presser.release(seat, button)
        self.presser.wait(self.panel_config.debounce * 2 + self.presser.tick)
        self._drain()

    def _pass(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self._keep_pace()

    def _keep_pace(self) -> None:
        """Sleep until real time catches up with the simulated clock, at :attr:`pace`."""
        if not self.pace:
            return
        now = time.monotonic()
        if self._paced_from is None:
            self._paced_from = (now, self.clock())
        real0, sim0 = self._paced_from
        ahead = (self.clock() - sim0) / self.pace - (now - real0)
        if ahead > 0:
            self._stopping.wait(ahead)
        elif ahead < -1.0:  # fell behind (a slow frame): do not rush to catch up
            self._paced_from = (now, self.clock())

    def _film(self, layout: Any, frames: int) -> None:
        """Show ``layout`` to the camera for ``frames`` frames, through the pipeline."""
        from vision.camera import CameraLost, Frame

        self.camera.set_layout(layout)
        for _ in range(frames):
            self.clock.advance(self.frame_dt)
            if self._camera_back is not None and self.clock() >= self._camera_back:
                self._camera_returns()
            try:
                raw = self.camera.read()
            except CameraLost as exc:
                self.feed.live(False, str(exc))
                continue
            frame = Frame(raw.image, self._frame_index, self.clock(), "sim")
            self._frame_index += 1
            self._hand_frames += 1
            self._stimulus = time.perf_counter()
            self.feed.process(frame)
            self._keep_pace()
        self._drain()

    # -- playing -----------------------------------------------------------------------------------

    def play(self, hands: int) -> Iterator[HandReport]:
        """Play ``hands`` hands (0: until :meth:`stop`), yielding each one's report."""
        n = 0
        while (hands == 0 or n < hands) and not self._stopping.is_set():
            fault = None
            if self.faults and self.rng.random() < self.fault_rate:
                fault = self.rng.choice(self.faults)
            try:
                report = self.play_hand(fault)
            except _Stopped:
                return
            n += 1
            yield report

    def play_hand(self, fault: str | None = None) -> HandReport:
        """Play one hand from the dealer's press to the settled (or drawn) score, with
        ``fault`` (one of :data:`FAULTS`) injected into it.

        A table that restarted mid-hand (its log says a hand is under way) has that hand
        finished instead: each hand's game follows from the seed and the hand's number, so
        the bots play it again as it was, the camera sees it laid again from the empty
        table, and the players do what was still to do."""
        rt = self._rt
        self._hand_frames = 0
        started_at = self.clock()
        snap = rt.snapshot()
        phase = snap["phase"]
        resumed = phase != "idle"
        mark = self._mark() if not resumed else 0
        if fault is not None and fault not in FAULTS:
            raise SimError(f"unknown fault {fault!r}: the simulator injects {FAULTS}")
        self._fault = fault
        self._misread = {}
        if not resumed:
            self._start_hand(fault, mark)
        if phase in ("idle", "shuffling", "dice"):
            dice = self._wait_dice(mark)
        else:
            dice = (int(snap["dice"][0]), int(snap["dice"][1]))
        snap = rt.snapshot()
        report = self._new_report(snap, dice, resumed, fault)
        played = play_hand(
            random.Random(f"{self.seed}/{snap['session']}/{snap['hand']}"),
            profile=self.profile,
            dealer=self.dealer,
            dice=dice,
            huangfan=self.huangfan,
            stake=self.stake,
        )
        self._lay_plays(played)
        if self._camera_back is not None:
            self._camera_returns()
            self._film(self._layout, self.hold)
        if played.drawn:
            self._end_drawn(played, report)
        else:
            self._end_won(played, report)
        report.sim_seconds = self.clock() - started_at
        report.frames = self._hand_frames
        report.faults = [
            f"{e.fault} {'on' if e.active else 'off'}"
            for e in self._since(mark)
            if isinstance(e, ev.FaultChanged)
        ]
        self.reports.append(report)
        return report

    def _start_hand(self, fault: str | None, mark: int) -> None:
        """The dealer presses confirm to start the hand, and ``fault`` comes (a jam is set
        before the press, the others once the hand has started)."""
        if fault == "jam":
            self.mcu.control("fault jam")
        self._press(self.dealer, "confirm")
        self._wait_after(
            mark, lambda e: isinstance(e, ev.HandStarted), "start a hand", timeout=10.0
        )
        if fault == "lid":
            self.mcu.control("lid open")
        elif fault == "reset":
            self.mcu.control("reset")
        elif fault == "unplug":
            self.mcu.control("unplug 1.5")

    def _new_report(
        self, snap: dict[str, Any], dice: tuple[int, int], resumed: bool, fault: str | None
    ) -> HandReport:
        """The report of the hand the table has started (``snap``), with the dealer and 荒番
        it started from checked against the truth."""
        report = HandReport(
            hand=snap["hand"],
            dealer=self.dealer,
            dice=dice,
            outcome="stopped",
            resumed=resumed,
            fault=fault,
        )
        if (snap["dealer"], snap["huangfan"]) != (self.dealer, self.huangfan):
            report.mismatches.append(
                f"the hand started with dealer {snap['dealer']} and 荒番 {snap['huangfan']}; "
                f"truly dealer {self.dealer} and 荒番 {self.huangfan}"
            )
        return report

    def _wait_dice(self, mark: int) -> tuple[int, int]:
        """Wait for the walls and the dice, doing what the players do when the table says
        it cannot go on: clear a jam and press confirm, close the lid they opened."""
        seen = mark
        deadline = time.monotonic() + 120.0
        while time.monotonic() < deadline:
            with self._cond:
                new = self._events[seen:]
                seen = len(self._events)
                if not new:
                    self._cond.wait(0.2)
            for e in new:
                if isinstance(e, ev.Learnt) and e.fact == "dice":
                    return int(e.value["dice"][0]), int(e.value["dice"][1])
                if isinstance(e, ev.FaultChanged) and e.active and e.fault == "lid_open":
                    time.sleep(0.2)
                    self.mcu.control("lid close")
                elif (
                    isinstance(e, ev.PhaseChanged)
                    and e.phase in ("shuffling", "dice")
                    and e.reason.endswith("press confirm")
                ):
                    self._pass(self.rng.uniform(10.0, 30.0))  # the jam is cleared by hand
                    self._press(self.dealer, "confirm")
            if self._stopping.is_set():
                raise _Stopped
        raise SimError("the table did not shuffle, raise the walls and roll the dice in 120 s")

    # -- the hand, as the camera sees it ---------------------------------------------------------

    def _lay_plays(self, played: PlayedHand) -> None:
        from vision.rendering.table_scene import SeatLayout, TableLayout

        self._seats = [SeatLayout() for _ in range(4)]
        self._ponds: list[list[Tile]] = [[] for _ in range(4)]
        self._layout = TableLayout(walls=True)
        self._film(self._layout, self.hold)
        dirty: int | None = None
        plays = played.plays
        last_discard: tuple[int, Tile] | None = None
        discards = [k for k, p in enumerate(plays) if p.kind == "discard"]
        camera_goes = discards[len(discards) // 2] if self._fault == "camera" and discards else -1
        for k, play in enumerate(plays):
            if k == camera_goes:
                self._camera_gone()
            if self._stopping.is_set():
                raise _Stopped
            kind, seat = play.kind, play.seat
            if kind in ("win", "exhausted"):
                break
            if dirty is not None and (kind == "discard" or seat != dirty):
                self._show_change(dirty)
                dirty = None
            if kind == "flower":
                s = self._seats[seat]
                assert play.tile is not None
                self._seats[seat] = replace(s, flowers=(*s.flowers, play.tile))
                dirty = seat
            elif kind == "claim":
                assert play.meld is not None and last_discard is not None
                src, tile = last_discard
                if self._ponds[src] and self._ponds[src][-1] == tile:
                    self._ponds[src].pop()
                s = self._seats[seat]
                self._seats[seat] = replace(s, melds=(*s.melds, play.meld))
                dirty = seat
            elif kind == "concealed_kong":
                assert play.meld is not None
                s = self._seats[seat]
                self._seats[seat] = replace(s, melds=(*s.melds, play.meld))
                dirty = seat
            elif kind == "added_kong":
                assert play.meld is not None
                s = self._seats[seat]
                pung = play.meld.tiles[:3]
                melds = list(s.melds)
                at = next(
                    k for k, m in enumerate(melds) if m.kind is MeldKind.PUNG and m.tiles == pung
                )
                melds[at] = play.meld
                self._seats[seat] = replace(s, melds=tuple(melds))
                dirty = seat
            elif kind == "discard":
                assert play.tile is not None
                self._ponds[seat].append(play.tile)
                last_discard = (seat, play.tile)
                self._pass(self.rng.uniform(*self.turn_s))
        if dirty is not None:
            self._show_change(dirty)

    def _table(self, arms: tuple[Any, ...] = ()) -> Any:
        """The table as the camera sees it: as it lies, but for a misread tile."""
        from vision.rendering.table_scene import TableLayout

        pond: tuple[Tile, ...] = ()
        if self.pond:
            pond = tuple(t for p in self._ponds for t in p)[-POND_SHOWN:]
        seats = list(self._seats)
        for seat, tiles in self._misread.items():
            seats[seat] = replace(seats[seat], open_tiles=tiles)
        return TableLayout(tuple(seats), discards=pond, walls=True, arms=arms)

    def _camera_gone(self) -> None:
        """The camera is unplugged: the table notices at its next frame."""
        from vision.camera import CameraLost

        self.camera.unplug()
        self._camera_back = self.clock() + CAMERA_GONE_S
        try:
            self.camera.read()
        except CameraLost as exc:
            self.feed.live(False, str(exc))
        self._drain()

    def _camera_returns(self) -> None:
        """The camera is back (if it was gone), at its time."""
        if self._camera_back is None:
            return
        if self.clock() < self._camera_back:
            self._pass(self._camera_back - self.clock())
        self.camera.replug()
        self._camera_back = None

    def _show_change(self, seat: int, frames: int | None = None) -> None:
        from vision.rendering.table_scene import ArmOver

        reach = (self.rng.uniform(150.0, 750.0), self.rng.uniform(40.0, 140.0))
        self._film(replace(self._layout, arms=(ArmOver(seat, reach),)), ARM_FRAMES)
        self._layout = self._table()
        self._film(self._layout, frames or self.hold)

    # -- the hand's end --------------------------------------------------------------------------

    def _end_drawn(self, played: PlayedHand, report: HandReport) -> None:
        from controller.rules import HuangfanCounter

        self._pass(self.rng.uniform(1.0, 3.0))
        mark = self._mark()
        self._press(self.dealer, "confirm", long=True)
        drawn = self._wait_after(mark, lambda e: isinstance(e, ev.HandDrawn), "draw the hand")
        assert isinstance(drawn, ev.HandDrawn)
        report.outcome = "drawn"
        report.truth = {str(k): 0 for k in range(4)}
        report.settled = dict(report.truth)
        after = HuangfanCounter(self.huangfan).after_hand(played.dice, 0, self.profile).value
        if (drawn.next_dealer, drawn.huangfan_next) != (self.dealer, after):
            report.mismatches.append(
                f"drawn hand: next dealer {drawn.next_dealer}, 荒番 {drawn.huangfan_next}; "
                f"truly {self.dealer}, {after}"
            )
        self.huangfan = after

    def _end_won(self, played: PlayedHand, report: HandReport) -> None:
        assert played.settlement is not None
        wins = played.wins
        report.how = [w.how.value for w in wins]
        truth = settlement_to_dict(played.settlement)
        report.truth = {k: v for k, v in truth["payments"].items()}
        first = wins[0]
        self._pass(self.rng.uniform(0.3, 1.5))
        mark = self._mark()
        snap = self.snapshot()
        phase, declared = snap["phase"], {int(k) for k in snap["winners"]}
        if phase in ("reading", "confirming"):
            pass  # declared, and how, before a restart: only the hands are still to lay
        elif first.how is WinType.EIGHT_FLOWERS or len(set(played.flowers[first.winner])) == 8:
            # the eighth flower itself declares the win, as the camera saw it laid
            how = first.how.value
            if first.winner not in declared:
                report.corrections.append("八花齐 not seen: declared on the panel")
                self._press(first.winner, "win")
                self._press(first.winner, "confirm")
                if first.how is WinType.EIGHT_FLOWERS:
                    self._rt.request(
                        "correct", {"field": "how", "value": how}, by=f"seat {first.winner}"
                    )
            elif first.how is not WinType.EIGHT_FLOWERS:
                # the replacement completed a better hand: the winner says so
                self._rt.request(
                    "correct", {"field": "how", "value": how}, by=f"seat {first.winner}"
                )
                report.corrections.append(f"how: {how} (the better hand, not 八花齐)")
        else:
            for w in wins:
                if w.winner not in declared:
                    self._press(w.winner, "win")
            if first.how is WinType.SELF_DRAW:
                self._press(first.winner, "confirm")
            elif first.how is WinType.DISCARD:
                assert first.discarder is not None
                self._press(first.discarder, "confirm")
            elif first.how is WinType.ROBBING_KONG:
                assert first.discarder is not None
                self._press(first.discarder, "confirm", long=True)
        self._lay_open(played)
        self._settle(played, report, mark)

    def _lay_open(self, played: PlayedHand) -> None:
        """The winners lay their hands open (and a discarder whose readiness 承包 turns on,
        theirs); a robbed kong goes back to the pung it was."""
        winners = {w.winner: w for w in played.wins}
        for seat in range(4):
            s = self._seats[seat]
            if tuple(s.melds) != played.melds[seat]:
                self._seats[seat] = replace(s, melds=played.melds[seat])
        for w in played.wins:
            if w.how is WinType.DISCARD and w.discarder is not None:
                pond = self._ponds[w.discarder]
                if pond and pond[-1] == played.winning_tile:
                    pond.pop()
        # 承包 turns on whether the discarder was ready: they show their hand first
        for w in played.wins:
            d = w.discarder
            pairs = w.bound_pairs
            partners = {b for a, b in pairs if a == w.winner} | {
                a for a, b in pairs if b == w.winner
            }
            needed = w.how is WinType.DISCARD and partners and d not in partners
            if needed and d is not None and d not in winners and not self._seats[d].open_tiles:
                self._seats[d] = replace(self._seats[d], open_tiles=played.concealed[d])
                self._show_change(d, 2 * self.hold)
        for seat, w in sorted(winners.items()):
            if w.how is WinType.EIGHT_FLOWERS:
                continue
            winning = w.hand.winning_tile
            assert winning is not None  # a Win checks it: only 八花齐 has none
            tiles = tuple(sorted((*w.hand.concealed, winning)))
            self._seats[seat] = replace(self._seats[seat], open_tiles=tiles)
            if self._fault == "misread" and not self._misread:
                from vision.rendering.table_scene import SceneError

                for wrong in _misreads(tiles, self.rng):
                    self._misread[seat] = wrong
                    try:
                        self._table()  # a misread that leaves five of a tile cannot be shown
                        break
                    except SceneError:
                        del self._misread[seat]
            self._show_change(seat, 2 * self.hold)

    def _truth_seat(self, seat: int) -> dict[str, Any]:
        """What truly lies open at ``seat``, as a correction writes it."""
        s = self._seats[seat]
        return {
            "flowers": format_tiles(s.flowers) if s.flowers else "",
            "melds": [_meld_json(m) for m in s.melds],
            "open_tiles": format_tiles(s.open_tiles) if s.open_tiles else "",
        }

    def _misread_seats(self) -> list[int]:
        """The seats whose open tiles the table shows other than they truly lie."""
        seen = self.snapshot()["seats"]
        return [k for k in range(4) if not _same_view(seen[k], self._truth_seat(k))]

    def _answer(self, q: ev.QuestionAsked, played: PlayedHand, report: HandReport) -> None:
        report.questions.append(f"{q.kind}: {q.text}")
        win = next((w for w in played.wins if w.winner == q.seat), played.wins[0])
        value: Any
        if q.kind == "seat" and q.seat is not None:
            truth = self._truth_seat(q.seat)
            seen = self.snapshot()["seats"][q.seat]
            value = "ok" if _same_view(seen, truth) else truth
        elif q.kind == "ready":
            won = next((w for w in played.wins if w.discarder == q.seat), win)
            value = bool(won.discarder_ready)
        elif q.kind == "gangkai":
            value = bool(win.after_kong or win.after_flower)
        elif q.kind == "winning_tile":
            tile = win.hand.winning_tile
            value = tile.code if tile is not None else None
        else:
            raise SimError(f"the table asked what the players cannot answer: {q.kind}: {q.text}")
        self._rt.request("answer", {"question": q.id, "value": value}, by=f"seat {q.seat}")

    def _settle(self, played: PlayedHand, report: HandReport, mark: int) -> None:
        """Answer the table's questions and check its proposal until it stands, confirm it,
        and go on to the next hand from the truth (or, where the table got it wrong, from
        where the table is)."""
        truth = _amounts(report.truth)
        assert played.settlement is not None
        self._await_proposal(played, report, mark, truth)
        settled = self._confirmed(played)
        report.outcome = "settled"
        report.settled = {k: amount_json(v) for k, v in _amounts(settled.payments).items()}
        if self.confirm == "dashboard":
            confirmed = _amounts(settled.payments)
            if confirmed != truth:
                pay = _payments_differ(confirmed, truth)
                report.mismatches.append(f"confirmed at the dashboard: {pay}")
            self._check_dealer(settled.next_dealer, settled.huangfan_next, played, report)
        truth_dealer = played.settlement.next_dealer
        self.dealer = self.dealer if truth_dealer is None else truth_dealer
        self.huangfan = played.settlement.huangfan_next
        if report.mismatches:  # go on from where the table is
            self.dealer, self.huangfan = settled.next_dealer, settled.huangfan_next

    def _await_proposal(
        self, played: PlayedHand, report: HandReport, mark: int, truth: dict[str, Fraction]
    ) -> None:
        """Wait (from event ``mark``) for a proposal the players can confirm, answering the
        table's questions and putting right what it misread on the way."""
        answered: set[int] = set()
        stuck = 0
        while True:
            try:
                e = self._wait_after(
                    mark,
                    lambda e: (
                        (isinstance(e, ev.QuestionAsked) and e.id not in answered)
                        or isinstance(e, ev.SettlementProposed)
                    ),
                    "read the hand",
                    timeout=READ_PATIENCE_S,
                )
            except SimError:
                stuck += 1
                if not self._unstick(stuck, report):
                    raise
                continue
            if isinstance(e, ev.QuestionAsked):
                answered.add(e.id)
                if len(answered) > 12:
                    raise SimError(f"the table keeps asking: {report.questions[-3:]}")
                self._answer(e, played, report)
                continue
            assert isinstance(e, ev.SettlementProposed)
            again = self._check_proposal(e, played, report, mark, truth)
            if again is None:
                return
            mark = again

    def _unstick(self, stuck: int, report: HandReport) -> bool:
        """The table still waits for the hand, for the ``stuck``-th time: whether the players
        go on waiting (having put right what it misread, if anything)."""
        # the players look at what it shows (a tile it cannot see, one too many) and put it
        # right from the dashboard
        wrong = self._misread_seats() if self.snapshot()["phase"] == "reading" else []
        if not wrong and stuck * READ_PATIENCE_S < READ_GIVE_UP_S:
            return True  # nothing misread: a slow machine, and the players wait
        if not wrong or stuck > 3:
            return False
        for seat in wrong:
            self._correct_seat(seat, report)
        return True

    def _check_proposal(
        self,
        e: ev.SettlementProposed,
        played: PlayedHand,
        report: HandReport,
        mark: int,
        truth: dict[str, Fraction],
    ) -> int | None:
        """Check proposal ``e``, seen after event ``mark``, as the players do: ``None`` where
        it stands (a wrong one the players could not put right is reported), else the event
        to wait from for the next."""
        if report.latency_s is None:
            report.latency_s = self._proposed_at.get(id(e))
        # a proposal superseded by a later one is skipped
        later = [x for x in self._since(mark) if isinstance(x, ev.SettlementProposed)]
        if later and later[-1] is not e:
            return self._index_of(later[-1])
        snap = self._rt.snapshot()
        if snap["phase"] != "confirming" or snap["questions"]:
            return self._index_of(e) + 1
        proposed = _amounts(e.settlement["payments"])
        if proposed != truth and len(report.corrections) < 8:
            # the players check what the table shows against what lies on it, and
            # put right what the camera misread; the table then proposes again
            wrong = self._misread_seats()
            for seat in wrong:
                self._correct_seat(seat, report)
            if wrong:
                return self._index_of(e) + 1
        if self.confirm == "players":
            if proposed != truth:
                report.mismatches.append(_why(e, played, proposed, truth))
            self._check_dealer(
                e.settlement["next_dealer"], e.settlement["huangfan_next"], played, report
            )
        return None

    def _confirmed(self, played: PlayedHand) -> ev.HandSettled:
        """The settlement, once confirmed: by the winner's press, or at the dashboard."""
        mark = self._mark()
        if self.confirm == "players":
            self._press(played.wins[0].winner, "confirm")
            settled = self._wait_after(mark, lambda e: isinstance(e, ev.HandSettled), "settle")
        else:  # as long as it takes the people at the dashboard
            settled = self._wait_after(
                mark, lambda e: isinstance(e, ev.HandSettled), "settle", timeout=math.inf
            )
        assert isinstance(settled, ev.HandSettled)
        return settled

    def _check_dealer(
        self, next_dealer: int | None, huangfan: int, played: PlayedHand, report: HandReport
    ) -> None:
        """The next dealer and 荒番 the table settles on, against the truth."""
        assert played.settlement is not None
        if next_dealer is None:
            next_dealer = self.dealer
        true_next = played.settlement.next_dealer
        if (next_dealer, huangfan) != (
            self.dealer if true_next is None else true_next,
            played.settlement.huangfan_next,
        ):
            report.mismatches.append(
                f"next dealer {next_dealer} / 荒番 {huangfan}, truly "
                f"{true_next} / {played.settlement.huangfan_next}"
            )

    def _correct_seat(self, seat: int, report: HandReport) -> None:
        """A player puts right, from the dashboard, what the table shows at ``seat``."""
        seen = self.snapshot()["seats"][seat]
        report.corrections.append(
            f"seat {seat}: read {_view_text(seen)}, truly {_view_text(self._truth_seat(seat))}"
        )
        self._rt.request(
            "correct",
            {"field": "seat", "seat": seat, "value": self._truth_seat(seat)},
            by=f"seat {seat}",
        )

    def _index_of(self, event: ev.Event) -> int:
        with self._cond:
            for k in range(len(self._events) - 1, -1, -1):
                if self._events[k] is event:
                    return k
        return 0


def _misreads(tiles: tuple[Tile, ...], rng: random.Random) -> Iterator[tuple[Tile, ...]]:
    """``tiles`` with one of them seen as another, most likely first: a number tile as a
    neighbour in its suit, an honour as another honour."""
    order = list(range(len(tiles)))
    rng.shuffle(order)
    for k in order:
        t = tiles[k]
        if t.is_number and t.number is not None:
            base = int(t) - t.number + 1
            others = [Tile(base + (t.number - 1 + d) % 9) for d in (1, -1, 2, -2)]
        else:
            others = [Tile(27 + (int(t) - 27 + d) % 7) for d in (1, 2, 3)]
        for other in others:
            yield (*tiles[:k], other, *tiles[k + 1 :])


def _tiles_key(text: str) -> list[str]:
    """Tiles written either way (``"123m"``, ``"1m 2m 3m"``), in one order."""
    return sorted(t.code for t in parse_tiles(text))


def _same_view(seen: dict[str, Any], truth: dict[str, Any]) -> bool:
    """Whether a seat as the table shows it is the seat as it lies (order aside: the camera
    lists flowers and melds by where they lie, the game by when they were laid)."""

    def melds(view: dict[str, Any]) -> list[tuple[str, list[str], Any]]:
        return sorted(
            ((m["kind"], _tiles_key(m["tiles"]), m.get("from")) for m in view["melds"]),
            key=repr,
        )

    return (
        _tiles_key(seen["flowers"]) == _tiles_key(truth["flowers"])
        and _tiles_key(seen["open_tiles"]) == _tiles_key(truth["open_tiles"])
        and melds(seen) == melds(truth)
    )


def _view_text(view: dict[str, Any]) -> str:
    melds = " ".join(
        f"[{m['tiles']}<{m['from']}]" if m.get("from") is not None else f"[{m['tiles']}]"
        for m in view["melds"]
    )
    return " ".join(x for x in (view["flowers"], melds, view["open_tiles"]) if x) or "nothing"


def _check_options(pace: float, faults: tuple[str, ...], fault_rate: float, confirm: str) -> None:
    """Refuse :class:`TableSim` options it cannot run with."""
    if pace < 0:
        raise SimError(f"the pace is 0 (flat out) or simulated seconds per second, not {pace}")
    unknown = set(faults) - set(FAULTS)
    if unknown:
        raise SimError(f"unknown faults {sorted(unknown)}: the simulator injects {FAULTS}")
    if not 0.0 <= fault_rate <= 1.0:
        raise SimError(f"the fault rate is a probability, not {fault_rate}")
    if confirm not in ("players", "dashboard"):
        raise SimError(f'settlements are confirmed by "players" or "dashboard", not {confirm!r}')


def _payments_differ(paid: dict[str, Fraction], truth: dict[str, Fraction]) -> str:
    """Each seat whose payment in ``paid`` is not its true one, with both."""
    return ", ".join(
        f"seat {k} {amount_json(paid.get(k, Fraction(0)))} (truly {amount_json(truth[k])})"
        for k in sorted(truth)
        if paid.get(k) != truth[k]
    )


class _Stopped(Exception):
    """The simulation was asked to stop."""


def _why(
    proposal: ev.SettlementProposed,
    played: PlayedHand,
    proposed: dict[str, Fraction],
    truth: dict[str, Fraction],
) -> str:
    """What differed between the controller's settlement and the truth, field by field."""
    pay = _payments_differ(proposed, truth)
    diffs: list[str] = []
    for w, p in zip(played.wins, proposal.wins, strict=False):
        t = w.to_json()
        for key in sorted(set(t) | set(p)):
            if t.get(key) != p.get(key) and key not in ("missed_tiles", "first_turn"):
                diffs.append(f"{key}: {p.get(key)!r}, truly {t.get(key)!r}")
        for key in ("missed_tiles", "first_turn"):
            if t.get(key) and t.get(key) != p.get(key):
                diffs.append(f"{key} (the camera cannot see it): truly {t.get(key)!r}")
    if len(played.wins) != len(proposal.wins):
        diffs.append(f"{len(proposal.wins)} wins, truly {len(played.wins)}")
    return f"settled {pay}: " + ("; ".join(diffs) or "the wins agree, the settlement does not")
