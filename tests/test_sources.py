"""The producers (controller/table/sources.py) against the simulated hardware: the table MCU on
a pty, the seat panel on gpiozero's mock pins, and the simulated overhead camera read by the
committed model."""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.rules import Meld
from controller.rules.tiles import Tile
from controller.table import events as ev
from controller.table.sources import (
    CameraFeed,
    CameraLoop,
    device_events,
    meld_json,
    panel_events,
)
from firmware_bridge.config import SerialConfig, parse_seat_panel
from firmware_bridge.seat_panel import SeatPanel
from firmware_bridge.table_device import McuEvent, TableDevice
from hardware_sim.camera import SimCamera
from hardware_sim.panel_sim import FakeClock, PanelSim
from tests.conftest import EventSink
from vision.calibration import calibrate_from_markers
from vision.camera import open_camera
from vision.pipeline import TablePipeline

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "table-config.example.toml"
WAIT_S = 20.0  # generous for a loaded machine: every wait ends as soon as its event is seen
# generous for a loaded 2-core machine; the link itself needs milliseconds
CFG = SerialConfig(command_timeout=10.0, shuffle_timeout=30.0, walls_timeout=30.0)


class Bus(EventSink):
    """Stands in for the runtime's ``put``: keeps what the producers put, and waits for it."""

    def __init__(self) -> None:
        super().__init__(WAIT_S)


def stamp() -> float:
    return 1_780_000_000.0


# -- the table's MCU -----------------------------------------------------------------------------


def test_device_events_forwards_the_mcus_events_until_stopped(sim_mcu) -> None:
    sim = sim_mcu()
    device = TableDevice(sim.port, config=CFG, start=False)
    bus = Bus()
    stop = device_events(device, bus, stamp)
    try:
        device.start()
        device.wait_ready(WAIT_S)
        bus.wait_for(lambda e: isinstance(e, ev.DeviceEvent) and e.kind == "connected")
        sim.control("lid open")
        lid = bus.wait_for(lambda e: isinstance(e, ev.DeviceEvent) and e.kind == "lid")
        assert isinstance(lid, ev.DeviceEvent)
        assert lid.data == {"open": True} and lid.time == stamp()
        assert isinstance(lid.number, int) and lid.boot_id == device.status().boot_id

        stop()
        # listeners are called in order on one thread: once a listener added after the
        # stop has the lid closing, the stopped forwarder would have had it already
        later: list[McuEvent] = []
        closed = threading.Event()

        def watch(e: McuEvent) -> None:
            later.append(e)
            if e.kind == "lid" and not e.data.get("open"):
                closed.set()

        device.add_listener(watch)
        sim.control("lid close")
        assert closed.wait(WAIT_S)
        assert [e.data for e in bus.of(ev.DeviceEvent) if e.kind == "lid"] == [{"open": True}]
    finally:
        device.close()


# -- the seat panel ------------------------------------------------------------------------------


def test_panel_events_turns_presses_into_seat_presses(mock_pins) -> None:
    cfg = parse_seat_panel(tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))["seat_panel"])
    clock = FakeClock()
    panel = SeatPanel(cfg, pin_factory=mock_pins, clock=clock, poll_interval=None)
    sim = PanelSim(cfg, mock_pins, clock, on_tick=panel.poll)
    bus = Bus()
    stop = panel_events(panel, bus, stamp)
    try:
        sim.press(2, "win", hold=0.1)
        sim.press(0, "confirm", hold=1.2)
        assert bus.events == [
            ev.SeatPressed(time=stamp(), seat=2, button="win", long=False),
            ev.SeatPressed(time=stamp(), seat=0, button="confirm", long=True),
        ]
        stop()
        sim.press(1, "win", hold=0.1)  # the panel polls on the test's thread: no wait needed
        assert len(bus.events) == 2
    finally:
        panel.close()


# -- the camera ----------------------------------------------------------------------------------


@pytest.fixture
def feed(sim_camera: SimCamera) -> Iterator[tuple[CameraFeed, Bus]]:
    """A feed over the simulated camera, calibrated from its first frame, with the committed
    model."""
    calibration = calibrate_from_markers(sim_camera.read().image)
    bus = Bus()
    yield CameraFeed(TablePipeline(calibration), bus, stamp), bus


def _flowers_at(bus: Bus, seat: int) -> list[ev.CameraChanged]:
    return [e for e in bus.of(ev.CameraChanged) if e.seat == seat and e.kind == "flower"]


def test_a_flower_laid_at_a_seat_becomes_a_camera_change(
    sim_camera: SimCamera, feed: tuple[CameraFeed, Bus]
) -> None:
    camera_feed, bus = feed
    sim_camera.change_seat(2, flowers=(Tile.PLUM,))
    for _ in range(10):
        camera_feed.process(sim_camera.read())
    [change] = bus.of(ev.CameraChanged)
    assert (change.seat, change.kind, change.flower) == (2, "flower", Tile.PLUM.code)
    assert Tile.PLUM.code in change.view_flowers.split()
    assert (change.view_melds, change.view_open, change.time) == ([], "", stamp())
    # the camera came once, and is not reported again for every frame
    assert bus.of(ev.CameraStatus) == [ev.CameraStatus(time=stamp(), live=True)]

    # a reset (a new hand) is carried out on the frame thread, before its next frame: the
    # flower still lying there is settled, and reported, afresh
    camera_feed.reset()
    assert camera_feed.pipeline.views[2].flowers == (Tile.PLUM,)  # not yet
    update = camera_feed.process(sim_camera.read())
    assert update.views[2].flowers == ()
    for _ in range(9):
        camera_feed.process(sim_camera.read())
    assert len(_flowers_at(bus, 2)) == 2


def test_live_reports_only_changes(feed: tuple[CameraFeed, Bus]) -> None:
    camera_feed, bus = feed
    camera_feed.live(False, "the camera is gone")
    camera_feed.live(False, "still gone")
    camera_feed.live(True)
    camera_feed.live(True)
    camera_feed.live(False, "gone again")
    assert [(e.live, e.message) for e in bus.of(ev.CameraStatus)] == [
        (False, "the camera is gone"),
        (True, ""),
        (False, "gone again"),
    ]


def test_view_jpeg_draws_the_last_frame(
    sim_camera: SimCamera, feed: tuple[CameraFeed, Bus]
) -> None:
    camera_feed, _ = feed
    assert camera_feed.view_jpeg() is None
    sim_camera.change_seat(0, melds=(Meld.of("pung", "EEE", 1),))
    camera_feed.process(sim_camera.read())
    jpeg = camera_feed.view_jpeg(max_side=640)
    assert jpeg is not None and jpeg.startswith(b"\xff\xd8")
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image.shape == (480, 640, 3)  # 1280x960, reduced to the longest side asked


def test_the_camera_loop_reads_a_folder_to_its_end(tmp_path: Path, sim_camera: SimCamera) -> None:
    folder = tmp_path / "frames"
    folder.mkdir()
    sim_camera.change_seat(1, flowers=(Tile.SPRING,))
    for i in range(3):
        assert cv2.imwrite(str(folder / f"frame{i}.png"), sim_camera.read().image)
    calibration = calibrate_from_markers(cv2.imread(str(folder / "frame0.png")))
    bus = Bus()
    camera_feed = CameraFeed(TablePipeline(calibration), bus, stamp)
    camera = open_camera(str(folder))
    loop = CameraLoop(camera_feed, camera, retry_s=0.05)
    loop.start()
    assert loop._thread is not None
    loop._thread.join(WAIT_S)  # it ends by itself at the folder's end
    assert not loop._thread.is_alive()
    assert loop.error is None
    assert bus.of(ev.CameraStatus) == [ev.CameraStatus(time=stamp(), live=True)]
    assert camera.frames_read == 3
    jpeg = camera_feed.view_jpeg()
    assert jpeg is not None and jpeg.startswith(b"\xff\xd8")
    loop.stop()


def test_the_camera_loop_reports_a_camera_that_fails(sim_camera: SimCamera) -> None:
    calibration = calibrate_from_markers(sim_camera.read().image)
    bus = Bus()
    camera_feed = CameraFeed(TablePipeline(calibration), bus, stamp)
    sim_camera.unplug()
    loop = CameraLoop(camera_feed, sim_camera, retry_s=0.05)
    loop.start()
    try:
        lost = bus.wait_for(lambda e: isinstance(e, ev.CameraStatus))
        assert not lost.live and "unplugged" in lost.message
        sim_camera.replug()  # waited for, and taken back when it returns
        bus.wait_for(lambda e: isinstance(e, ev.CameraStatus) and e.live)
    finally:
        loop.stop()
    assert loop._thread is not None and not loop._thread.is_alive()
    assert [e.live for e in bus.of(ev.CameraStatus)] == [False, True]


# -- melds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meld", "written"),
    [
        (Meld.of("pung", "EEE", 1), ev.MeldJson("pung", "EEE", 1)),
        (Meld.of("chow", "345p", 3), ev.MeldJson("chow", "345p", 3)),
        (Meld.of("concealed_kong", "9999s"), ev.MeldJson("concealed_kong", "9999s", None)),
        (Meld.of("added_kong", "1111m", 2), ev.MeldJson("added_kong", "1111m", 2)),
    ],
)
def test_meld_json_writes_a_rules_meld_as_the_events_do(meld: Meld, written: ev.MeldJson) -> None:
    assert meld_json(meld) == written
    assert Meld.of(written.kind, written.tiles, written.source) == meld  # and reads back
