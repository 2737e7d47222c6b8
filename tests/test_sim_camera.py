"""The simulator's overhead camera (hardware_sim/camera.py) and the sim_camera fixture."""

from __future__ import annotations

import threading

import cv2
import numpy as np
import pytest

from controller.errors import CameraError
from controller.rules.melds import Meld
from controller.rules.tiles import Tile
from hardware_sim.camera import LAID_KEPT, SimCamera
from vision.calibration import calibrate_from_markers
from vision.camera import CameraLost, CameraSource
from vision.labels import BACK
from vision.rendering.table_scene import ArmOver, TableLayout


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

    def note_the_noise(layout, laid, view, *, rng, add_noise=None):
        taken.append(int(rng.bit_generator.seed_seq.entropy[1]))  # the frame's number

    camera.scene.view = note_the_noise  # type: ignore[method-assign]

    def render_many() -> None:
        for _ in range(2000):
            camera.render()

    threads = [threading.Thread(target=render_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == list(range(8000))


_LAID = (
    TableLayout()
    .with_seat(0, flowers=(Tile.PLUM, Tile.SPRING))
    .with_seat(1, melds=(Meld.of("concealed_kong", "5555p"),))
)


def _counting_lays(camera: SimCamera) -> list[TableLayout]:
    laid: list[TableLayout] = []
    lay = camera.scene.lay

    def counted(layout, view):
        laid.append(layout)
        return lay(layout, view)

    camera.scene.lay = counted  # type: ignore[method-assign]
    return laid


def _on_the_table(camera: SimCamera, margin: int = 4) -> np.ndarray:
    """The pixels that see the table top, away from its edge (the surround beyond it is a
    fresh shade every frame, as render_scene draws it)."""
    side = camera.scene.geometry.side_mm
    corners = np.array([(0, 0), (side, 0), (side, side), (0, side)], np.float64)
    quad = cv2.perspectiveTransform(corners[None], camera.scene.plane_to_image(camera.view))
    width, height = camera.view.size
    mask = np.zeros((height, width), np.uint8)
    cv2.fillConvexPoly(mask, np.round(quad[0]).astype(np.int32), 1)
    mask = cv2.erode(mask, np.ones((2 * margin + 1, 2 * margin + 1), np.uint8))
    return mask.astype(bool)


def test_a_layout_is_laid_once_and_every_frame_of_it_gets_fresh_noise() -> None:
    camera = SimCamera(size=(320, 240), faults={"noise": 2.0, "blur": 0.5}, seed=5)
    laid = _counting_lays(camera)
    camera.set_layout(_LAID)
    frames = [camera.read().image for _ in range(3)]
    assert len(laid) == 1  # the frames after the first only add their faults
    # the first frame of a layout is the scene's render with the frame's seed, as it was
    first = camera.scene.render(_LAID, camera.view, rng=np.random.default_rng([5, 0]))
    assert np.array_equal(frames[0], first.image)
    table = _on_the_table(camera)
    for a, b in ((0, 1), (1, 2), (0, 2)):
        assert not np.array_equal(frames[a], frames[b])  # fresh noise every frame
        # on the table only the noise differs, as much in the frames after the first
        spread = (frames[a].astype(int) - frames[b].astype(int))[table].std()
        assert 2.4 < spread < 3.4  # two draws of sigma 2 (the difference's is 2.8)
    truth = camera.last_frame
    assert truth is not None and truth.layout == _LAID
    assert [t.label for t in truth.truths] == [t.label for t in first.truths]
    assert all(
        np.array_equal(t.quad, f.quad) for t, f in zip(truth.truths, first.truths, strict=True)
    )


def test_without_noise_the_frames_of_a_layout_are_the_same_picture() -> None:
    camera = SimCamera(size=(320, 240), faults={"noise": 0.0, "blur": 0.5}, seed=2)
    camera.set_layout(_LAID)
    frames = [camera.read().image for _ in range(3)]
    table = _on_the_table(camera)
    assert np.array_equal(frames[0][table], frames[1][table])
    assert np.array_equal(frames[1][table], frames[2][table])
    # kept or laid anew, a frame is the scene's render with its seed
    for number, frame in enumerate(frames):
        rng = np.random.default_rng([2, number])
        assert np.array_equal(frame, camera.scene.render(_LAID, camera.view, rng=rng).image)


def test_a_changed_layout_changes_the_frame() -> None:
    camera = SimCamera(size=(320, 240), faults={}, seed=1)
    laid = _counting_lays(camera)
    table = _on_the_table(camera)
    camera.set_layout(_LAID)
    before = camera.read().image
    camera.change_seat(3, flowers=(Tile.AUTUMN,))
    after = camera.read().image
    assert not np.array_equal(before[table], after[table])
    assert camera.last_frame is not None and camera.last_frame.layout.seats[3].flowers
    camera.set_layout(_LAID)  # back as it was: the same picture
    assert np.array_equal(camera.read().image[table], before[table])
    # an arm over the table is drawn on the laid table, not laid anew
    arm = ArmOver(0, (215.0, 190.0))  # over seat 0's flowers
    camera.update(lambda layout: TableLayout(layout.seats, arms=(arm,)))
    reaching = camera.read()
    assert not np.array_equal(reaching.image[table], before[table])
    assert camera.last_frame is not None and max(camera.last_frame.covered) > 0
    assert len(laid) == 2
    for flower in (35, 36, 37, 39):  # a few tables kept, no more
        camera.change_seat(2, flowers=(Tile(flower),))
        camera.read()
    assert len(camera._laid) == LAID_KEPT


def test_the_same_seed_and_layouts_give_the_same_frames() -> None:
    frames = []
    for _ in range(2):
        camera = SimCamera(size=(320, 240), seed=7)
        seen = []
        for layout in (_LAID, _LAID, TableLayout(), TableLayout(), _LAID):
            camera.set_layout(layout)
            seen.append(camera.read().image)
        frames.append(seen)
    assert all(np.array_equal(a, b) for a, b in zip(*frames, strict=True))


def test_a_frame_cache_gives_the_very_frames_rendered_without_it() -> None:
    from vision.rendering.table_scene import TableScene

    layouts = (_LAID, _LAID, TableLayout(), _LAID, _LAID)
    plain = SimCamera(size=(320, 240), seed=7)
    cache: dict = {}
    scene = TableScene(seed=7)
    runs = []
    for _ in range(2):  # the second run reads every frame from the cache
        camera = SimCamera(scene, size=(320, 240), seed=7, frame_cache=cache)
        seen = []
        for layout in layouts:
            camera.set_layout(layout)
            image = camera.read().image
            assert camera.last_frame is not None
            seen.append((image, camera.last_frame.truths))
        runs.append(seen)
    expected = []
    for layout in layouts:
        plain.set_layout(layout)
        expected.append(plain.read().image)
    assert len(cache) == len(layouts)  # one frame kept per number, layout and repeat
    for first, again, image in zip(*runs, expected, strict=True):
        assert np.array_equal(first[0], image) and np.array_equal(again[0], image)
        assert first[1] == again[1]
    # each frame handed out is the caller's own to draw on; the kept one is not touched
    runs[1][0][0][:] = 0
    camera = SimCamera(scene, size=(320, 240), seed=7, frame_cache=cache)
    camera.set_layout(_LAID)
    assert np.array_equal(camera.read().image, expected[0])
    assert all(not f.image.flags.writeable for f in cache.values())


def test_a_frame_cache_keeps_other_views_and_seeds_apart() -> None:
    from vision.rendering.table_scene import TableScene

    cache: dict = {}
    scene = TableScene(seed=7)
    images = []
    for seed, tilt in ((7, 0.0), (8, 0.0), (7, 6.0)):
        camera = SimCamera(scene, size=(320, 240), seed=seed, tilt=tilt, frame_cache=cache)
        camera.set_layout(_LAID)
        images.append(camera.read().image)
    assert len(cache) == 3
    assert not np.array_equal(images[0], images[1]) and not np.array_equal(images[0], images[2])


def test_a_new_view_is_laid_anew() -> None:
    camera = SimCamera(size=(320, 240), seed=1)
    camera.set_layout(_LAID)
    camera.read()
    camera.view = camera.scene.camera((160, 120), tilt=0.0)
    assert camera.read().image.shape == (120, 160, 3)
