"""The simulator's overhead camera (hardware_sim/camera.py) and the sim_camera fixture."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from controller.errors import CameraError
from controller.rules.melds import Meld
from controller.rules.tiles import Tile
from hardware_sim.camera import SimCamera
from vision.calibration import calibrate_from_markers
from vision.camera import CameraLost, CameraSource
from vision.labels import BACK
from vision.table_scene import TableLayout


def test_it_is_a_camera_source(sim_camera: SimCamera) -> None:
    assert isinstance(sim_camera, CameraSource)
    frame = sim_camera.read()
    assert frame.image.shape == (960, 1280, 3) and frame.image.dtype == np.uint8
    assert frame.index == 0 and frame.source == "simulated camera"
    assert sim_camera.last_frame is not None and sim_camera.last_frame.placed == ()


def test_it_shows_what_is_laid_at_run_time(sim_camera: SimCamera) -> None:
    sim_camera.change_seat(2, flowers=(Tile.PLUM, Tile.SPRING))
    sim_camera.change_seat(1, melds=(Meld.of("concealed_kong", "5555p"),))
    sim_camera.read()
    truth = sim_camera.last_frame
    assert truth is not None
    labels = sorted(t.label for t in truth.truths)
    assert labels == sorted([int(Tile.PLUM), int(Tile.SPRING), BACK, BACK, 13, 13])
    sim_camera.clear()
    sim_camera.read()
    assert sim_camera.last_frame is not None and sim_camera.last_frame.truths == ()


def test_layout_changes_from_another_thread_are_atomic(sim_camera: SimCamera) -> None:
    def lay() -> None:
        for i in range(50):
            sim_camera.update(lambda t, i=i: t.with_seat(0, flowers=(Tile(34 + i % 8),)))

    worker = threading.Thread(target=lay)
    worker.start()
    for _ in range(3):
        sim_camera.read()
        assert len(sim_camera.last_frame.truths) in (0, 1)  # type: ignore[union-attr]
    worker.join()
    assert sim_camera.layout.seats[0].flowers == (Tile(34 + 49 % 8),)
    with pytest.raises(CameraError):
        sim_camera.set_layout("EEE")  # type: ignore[arg-type]


def test_frames_are_reproducible_and_carry_fresh_noise() -> None:
    a, b = SimCamera(seed=4), SimCamera(seed=4)
    assert a.live  # a camera, as a USB one is
    first, again = a.read().image, b.read().image
    assert np.array_equal(first, again)
    second = a.read().image
    assert not np.array_equal(first, second)
    assert np.abs(first.astype(int) - second.astype(int)).mean() < 4  # only noise differs


def test_markers_calibrate_it(sim_camera: SimCamera) -> None:
    cal = calibrate_from_markers(sim_camera.read().image)
    truth = sim_camera.true_calibration()
    grid = np.array([(x, y) for x in (0, 450, 900) for y in (0, 450, 900)], float)
    err = np.linalg.norm(cal.to_plane(truth.to_image(grid)) - grid, axis=1)
    assert err.max() < 2.5


def test_a_camera_that_vanishes_is_an_error_and_comes_back(sim_camera: SimCamera) -> None:
    sim_camera.read()
    sim_camera.unplug()
    with pytest.raises(CameraLost):
        sim_camera.read()
    with pytest.raises(CameraError, match="unplugged"):
        sim_camera.read()  # the retry cannot reopen it yet
    sim_camera.replug()
    assert sim_camera.read().index == 1


def test_another_mounting_and_clean_picture() -> None:
    camera = SimCamera(size=(640, 480), turn=90, tilt=0, faults={}, seed=1)
    camera.set_layout(TableLayout().with_seat(0, flowers=(Tile.AUTUMN,)))
    frame = camera.read()
    assert frame.size == (640, 480)
    cal = calibrate_from_markers(frame.image)
    assert cal.image_size == (640, 480) and cal.error_mm < 3


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"size": (0, 0)}, "size is two whole numbers"),
        ({"size": (-5, 10)}, "size is two whole numbers"),
        ({"size": (640, 480, 3)}, r"size is \(width, height\)"),
        ({"size": None}, r"size is \(width, height\)"),
        ({"zoom": 0.0}, "zoom must be a number above 0"),
        ({"zoom": float("inf")}, "zoom must be a number above 0"),
        ({"tilt": float("nan")}, "tilt must be a number from -60 to 60"),
        ({"tilt": float("inf")}, "tilt must be a number from -60 to 60"),
        ({"turn": float("nan")}, "turn must be a number of degrees"),
        ({"faults": {"nosie": 2.0}}, "no fault 'nosie'"),
        ({"faults": {"noise": "lots"}}, "noise is a number 0 or more"),
        ({"faults": {"noise": -5.0}}, "noise is a number 0 or more"),
        ({"faults": {"blur": float("nan")}}, "blur is a number 0 or more"),
        ({"faults": {"jpeg": 500}}, "jpeg is a quality from 1 to 100"),
        ({"faults": {"colour": (1.0, 1.0)}}, "colour is three numbers"),
        ({"layout": "EEE"}, "shows a TableLayout"),
    ],
)
def test_settings_it_cannot_show_are_camera_errors(settings, said) -> None:
    with pytest.raises(CameraError, match=said):
        SimCamera(**settings)
    SimCamera(size=(320, 240), faults={"glare": 0.3, "jpeg": 80})  # every Camera fault is one


def test_a_bad_seed_is_refused_up_front() -> None:
    with pytest.raises(CameraError, match="seed is a whole number"):
        SimCamera(seed=-1)


def test_a_change_that_gives_no_layout_is_refused_and_loses_nothing(sim_camera: SimCamera) -> None:
    before = sim_camera.change_seat(0, flowers=(Tile.PLUM,))
    with pytest.raises(CameraError, match="gives a TableLayout"):
        sim_camera.update(lambda layout: None)  # type: ignore[arg-type,return-value]
    assert sim_camera.layout == before
    sim_camera.read()


@pytest.mark.timeout(20)
def test_a_change_may_read_the_layout_it_changes(sim_camera: SimCamera) -> None:
    # the lock was not reentrant: this blocked for ever, and every read after it
    def add_a_flower(layout: TableLayout) -> TableLayout:
        assert sim_camera.layout is layout
        return layout.with_seat(1, flowers=(Tile.ORCHID,))

    assert sim_camera.update(add_a_flower).seats[1].flowers == (Tile.ORCHID,)


def test_frames_rendered_from_two_threads_never_share_their_noise() -> None:
    camera = SimCamera(size=(64, 48), seed=3)
    taken: list[int] = []

    def note_the_noise(layout, view, rng):  # the frame's number is in the noise's seed
        taken.append(int(rng.bit_generator.seed_seq.entropy[1]))

    camera.scene.render = note_the_noise  # type: ignore[method-assign]

    def render_many() -> None:
        for _ in range(2000):
            camera.render()

    threads = [threading.Thread(target=render_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == list(range(8000))
