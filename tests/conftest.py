"""Shared fixtures. The simulator fixtures (``sim_mcu``, ``mock_pins``, ``sim_camera``) live
here and are reused by every test module that needs simulated hardware."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _find_shared_data() -> Path | None:
    """The shared training data (tile art, real photos), which is never committed.

    Looked for in ``$MAHJONG_SHARED_DATA``, beside this checkout (``../shared/data``), and beside
    the checkout this one was cloned from (a fresh CI clone's ``origin``).
    """
    candidates = []
    if os.environ.get("MAHJONG_SHARED_DATA"):
        candidates.append(Path(os.environ["MAHJONG_SHARED_DATA"]))
    candidates.append(REPO.parent / "shared" / "data")
    try:
        origin = subprocess.run(
            ["git", "-C", str(REPO), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    if origin and Path(origin).is_dir():
        candidates.append(Path(origin).resolve().parent / "shared" / "data")
    return next((c for c in candidates if (c / "README.md").is_file()), None)


SHARED_DATA = _find_shared_data()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI (``MAHJONG_CI=1``) a skipped test fails the run: everything it needs (the
    train extra, the shared data) is installed there, so a skip would hide a missing step."""
    if os.environ.get("MAHJONG_CI") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped and session.exitstatus == 0:
        if reporter is not None:
            reporter.write_line(f"MAHJONG_CI: {len(skipped)} test(s) skipped; CI allows none")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``long(seconds)`` run first, longest first, each followed by one
    other test.

    Under ``-n`` (pytest-xdist, ``--maxschedchunk 1`` as the README's command gives it) each
    worker starts on the first two tests it is sent and is then sent the next test whenever
    it finishes one: the long tests are begun at once, on different workers, and the short
    ones fill in around them. Left in file order, three long tests could queue on one worker
    and end the run minutes after the rest. Run serially, the order changes nothing else: no
    test depends on another's."""
    long = sorted(
        (i for i in items if i.get_closest_marker("long") is not None),
        key=lambda i: -float(i.get_closest_marker("long").args[0]),  # type: ignore[union-attr]
    )
    if not long:
        return
    chosen = set(map(id, long))
    rest = [i for i in items if id(i) not in chosen]
    ordered: list[pytest.Item] = []
    for test in long:
        ordered.append(test)
        if rest:
            ordered.append(rest.pop(0))
    items[:] = ordered + rest


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder. Where it is absent the test is skipped with the reason, unless
    ``MAHJONG_CI=1`` (set by ``.ci/run``), which turns that into a failure."""
    if SHARED_DATA is None:
        msg = "shared data (../shared/data) not found; set MAHJONG_SHARED_DATA"
        if os.environ.get("MAHJONG_CI") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return SHARED_DATA


# -- rules ---------------------------------------------------------------------------------


@pytest.fixture
def make_win():
    """Build a Win from the hand notation: ``make_win("111p 222p 333p 444p 5p +5p")`` is a
    self-draw by seat 0; keyword arguments set any other field (``how="discard",
    discarder=2``)."""
    from controller.rules import Hand, Win, WinType

    def build(text: str, how: str = "self_draw", winner: int = 0, **fields):
        hand = Hand.parse(text)
        fields.setdefault("flowers", len(hand.flowers))
        return Win(winner=winner, hand=hand, how=WinType(how), **fields)

    return build


@pytest.fixture(scope="session")
def shanghai():
    from controller.profiles import load_profile

    return load_profile("shanghai")


# -- vision table (engineer T): the simulated overhead camera ---------------------------------


class FrameStore:
    """The simulated cameras' rendered frames, kept for the session (a ``SimCamera``'s
    ``frame_cache``): many tests read the same frames (the same seed, the same layouts in
    the same order: the empty table they calibrate on, a setup they share), and a 1280x960
    frame costs a tenth of a second or more to render. Bounded, the latest used kept: a
    frame is some 3.7 MB. Thread-safe, as a camera may be read from two threads."""

    def __init__(self, size: int) -> None:
        import threading
        from collections import OrderedDict

        self.size = size
        self.hits = self.misses = 0
        self._frames: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, default=None):
        with self._lock:
            frame = self._frames.get(key)
            if frame is None:
                self.misses += 1
                return default
            self.hits += 1
            self._frames.move_to_end(key)
            return frame

    def __setitem__(self, key, frame) -> None:
        with self._lock:
            self._frames[key] = frame
            self._frames.move_to_end(key)
            while len(self._frames) > self.size:
                self._frames.popitem(last=False)


FRAMES = FrameStore(size=int(os.environ.get("MAHJONG_TEST_FRAMES", "96")))


@functools.cache
def table_scene(seed: int = 0, **options):
    """The simulated table of ``TableScene(seed=seed, **options)``, one for the session: its
    felt and markers (seconds to draw) are drawn once, and the frame cache knows a scene by
    the object, so cameras share frames only over one scene object."""
    from vision.rendering.table_scene import TableScene

    return TableScene(seed=seed, **options)


def cached_camera(seed: int = 0, *, scene_options: dict | None = None, **options):
    """``SimCamera(seed=seed, **options)`` over :func:`table_scene` (the scene it would make
    itself), with the session's :data:`FRAMES`: the same frames, each rendered once."""
    from hardware_sim.camera import SimCamera

    scene = table_scene(seed, **(scene_options or {}))
    return SimCamera(scene, seed=seed, frame_cache=FRAMES, **options)


@pytest.fixture(scope="session")
def sim_cameras():
    """Make simulated cameras that share the session's scenes and rendered frames
    (:func:`cached_camera`): ``sim_cameras(1)`` is ``SimCamera(seed=1)``'s frames."""
    return cached_camera


@pytest.fixture
def sim_camera():
    """The simulator's overhead camera (``hardware_sim.camera.SimCamera``) over an empty 900 mm
    table, 1280x960, reproducible frames. Lay tiles with ``sim_camera.change_seat(…)`` or
    ``sim_camera.set_layout(…)``; ``sim_camera.unplug()`` makes it vanish. Its frames are
    ``SimCamera(seed=0)``'s, rendered once a session (:func:`cached_camera`)."""
    camera = cached_camera(0)
    yield camera
    camera.close()


# -- firmware bridge and simulated hardware (MCU, seat panel) ------------------------------


@pytest.fixture
def sim_mcu(tmp_path):
    """Start simulated table MCUs, each in its own process behind a real pty.

    Call it with ``sim-mcu`` options: ``sim = sim_mcu(speed=50, drop=0.05)``; the result is a
    :class:`hardware_sim.mcu_process.SimMcuProcess` (``sim.port`` to open, a stable link that
    survives unplug/replug; ``sim.control("fault jam")``; ``sim.stats()``). Defaults: speed
    100, seed 7. Every simulator started is stopped at the end of the test.
    """
    from hardware_sim.mcu_process import SimMcuProcess

    started: list[SimMcuProcess] = []

    def start(**options):
        options.setdefault("speed", 100)
        options.setdefault("seed", 7)
        options.setdefault("link", str(tmp_path / f"mcu{len(started)}"))
        sim = SimMcuProcess(**options)
        started.append(sim)
        return sim

    yield start
    for sim in started:
        sim.close()


@pytest.fixture
def mock_pins():
    """A fresh gpiozero :class:`~gpiozero.pins.mock.MockFactory`, also installed as gpiozero's
    default pin factory for the test (restored afterwards). Drive it with
    :class:`hardware_sim.panel_sim.PanelSim`."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    previous = Device.pin_factory
    factory = MockFactory()
    Device.pin_factory = factory
    yield factory
    factory.reset()
    Device.pin_factory = previous


# -- the table controller, running, fed by hand -------------------------------------------------


class LiveTable:
    """A running :class:`~controller.table.runtime.TableRuntime` (in-memory log, no MCU) that a
    test plays by putting the inputs the hardware would: presses, the MCU's answers, camera
    changes. Every helper waits until the controller has taken what it put."""

    def __init__(self) -> None:
        from controller.table.runtime import TableRuntime
        from controller.table.store import EventLog

        self.t = 1_780_000_000.0
        self.log = EventLog(":memory:")
        self.runtime = TableRuntime(self.log, clock=self.clock, run_commands=False)
        self.runtime.start()
        self.runtime.request("new_session", {"seats": ["Ann", "Bo", "Cy", "Di"]}, by="test")

    def clock(self) -> float:
        return self.t

    def put(self, event_type, dt: float = 1.0, **fields) -> None:
        self.t += dt
        self.runtime.put(event_type(time=self.t, **fields))
        self.runtime.call(lambda: None)

    def press(self, seat: int, button: str, long: bool = False) -> None:
        from controller.table import events as ev

        self.put(ev.SeatPressed, seat=seat, button=button, long=long)

    def seat(self, seat: int, *, flowers="", melds=(), open_tiles="", notes=(), kind="meld"):
        """The camera settles what lies open at ``seat``: melds as (kind, tiles, from)."""
        from controller.table import events as ev

        self.put(
            ev.CameraChanged,
            seat=seat,
            kind=kind,
            view_flowers=flowers,
            view_melds=[ev.MeldJson(*m) for m in melds],
            view_open=open_tiles,
            view_notes=list(notes),
        )

    def start_hand(self, dice=(3, 5)) -> None:
        """The dealer presses confirm; the walls come up and the dice roll."""
        from controller.table import events as ev

        self.press(self.runtime.snapshot()["dealer"], "confirm")
        # the MCU's answers, as it would give them
        self.put(ev.CommandDone, command="prepare_walls", result={"tile_set": 0})
        self.put(ev.CommandDone, command="dice", result=list(dice))

    def self_draw_win(self, seat: int = 1) -> None:
        """``seat`` wins by self-draw with 混一色 (EEE 123m 456m 789m SS, one flower): a
        proposal waits to be confirmed."""
        self.seat(seat, flowers="1f", melds=[("pung", "EEE", (seat + 1) % 4)], kind="meld")
        self.press(seat, "win")
        self.press(seat, "confirm")
        self.seat(
            seat,
            flowers="1f",
            melds=[("pung", "EEE", (seat + 1) % 4)],
            open_tiles="1m 2m 3m 4m 5m 6m 7m 8m 9m S S",
            kind="open_tiles",
        )

    def close(self) -> None:
        self.runtime.stop()
        self.log.close()


@pytest.fixture
def live_table():
    """A running table controller (:class:`LiveTable`): session 1 started, seats Ann, Bo, Cy
    and Di, no hand yet. ``live_table.start_hand()``, ``live_table.self_draw_win()`` and the
    input helpers play it; ``live_table.runtime`` is what the dashboard is given."""
    table = LiveTable()
    yield table
    table.close()


# -- the whole simulated table, as its own process ----------------------------------------------


class SimProcess:
    """``mahjong-table sim`` running as a process, with its dashboard on a free port and its
    event log in a file (so a restart resumes the hand). ``start()`` waits until the
    dashboard answers; ``stop()`` ends it as Ctrl-C would."""

    def __init__(self, db: Path, *args: str) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.db = db
        self.args = args
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = db.with_suffix(".stderr")

    def start(self, timeout: float = 60.0) -> SimProcess:
        import sys
        import time
        import urllib.request

        cmd = [sys.executable, "-m", "controller.cli", "sim", "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--db", str(self.db), *self.args]
        with open(self.stderr, "ab") as err:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the sim exited {self.proc.returncode}: {self.errors()}")
            try:
                with urllib.request.urlopen(self.url + "/api/state", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"the sim's dashboard did not answer: {self.errors()}")

    def errors(self) -> str:
        return self.stderr.read_text(errors="replace")[-2000:] if self.stderr.exists() else ""

    def stop(self, timeout: float = 20.0) -> int | None:
        import signal

        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the sim did not stop on Ctrl-C: {self.errors()}") from None


@pytest.fixture(scope="module")
def sim_process(tmp_path_factory):
    """Start ``mahjong-table sim`` processes (``sim_process(*args)``: a :class:`SimProcess`,
    started); all are stopped at the end of the module."""
    started: list[SimProcess] = []

    def start(*args: str) -> SimProcess:
        sim = SimProcess(tmp_path_factory.mktemp("sim") / "table.db", *args)
        started.append(sim)
        return sim.start()

    yield start
    for sim in started:
        sim.stop()


# -- events collected from the controller or a producer ------------------------------------------


class EventSink:
    """A callable that keeps every event it is given (a runtime subscriber, ``on_input``, or
    a producer's ``put``) and waits for one (thread-safe)."""

    def __init__(self, timeout: float = 20.0) -> None:
        import threading

        self.events: list = []
        self.timeout = timeout  # generous for a loaded machine: a wait ends when it is seen
        self._cv = threading.Condition()

    def __call__(self, event) -> None:
        with self._cv:
            self.events.append(event)
            self._cv.notify_all()

    def of(self, kind: type) -> list:
        with self._cv:
            return [e for e in self.events if isinstance(e, kind)]

    def wait_for(self, match, timeout: float | None = None):
        found: list = []

        def look() -> bool:
            found[:] = [e for e in self.events if match(e)]
            return bool(found)

        with self._cv:
            if not self._cv.wait_for(look, self.timeout if timeout is None else timeout):
                raise AssertionError(f"not seen; got {[e.type for e in self.events]}")
        return found[0]

    def wait_phase(self, phase: str, reason: str = ""):
        from controller.table import events as ev

        return self.wait_for(
            lambda e: isinstance(e, ev.PhaseChanged) and e.phase == phase and reason in e.reason
        )
