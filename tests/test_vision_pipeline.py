"""The table pipeline (vision/pipeline.py): simulator frames through calibration, the
recogniser, grouping and the tracker."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.errors import CameraError, ModelError, VisionError
from controller.rules.melds import Meld
from controller.rules.tiles import Tile, parse_tiles
from hardware_sim.camera import SimCamera
from vision.calibration import CalibrationError, apply, calibrate_from_markers
from vision.camera import CameraLost, EndOfStream, Frame, ImageFolderCamera
from vision.detection import TileDetection, box_of_quad, scale_box
from vision.labels import BACK
from vision.pipeline import STRIP_MARGIN_MM, TablePipeline
from vision.recognizer import TileRecognizer
from vision.rendering.table_scene import ArmOver, SeatLayout, TableLayout
from vision.tracker import ChangeKind, TableTracker

STABLE = 3

LAYOUT = TableLayout(
    (
        SeatLayout(
            flowers=(Tile.SPRING, Tile.ORCHID),
            melds=(Meld.of("pung", "EEE", 2), Meld.of("chow", "345p", 3)),
        ),
        SeatLayout(melds=(Meld.of("concealed_kong", "9999s"), Meld.of("kong", "CCCC", 0))),
        SeatLayout(melds=(Meld.of("added_kong", "1111m", 1),), flowers=(Tile.WINTER,)),
        SeatLayout(
            open_tiles=tuple(parse_tiles("22m 456m 789p 444s")),
            melds=(Meld.of("pung", "FFF", 1),),
        ),
    ),
    discards=tuple(parse_tiles("28m 28p 28s ESWN")),
    walls=True,
)


class RendererTruth:
    """The renderer's truth for the simulated camera's last frame, as detections: what a
    perfect recogniser would report (tiles hidden under an arm are not seen). It answers only
    for the very frame the camera rendered last."""

    def __init__(self, camera: SimCamera) -> None:
        self.camera = camera

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        frame = self.camera.last_frame
        assert frame is not None and np.array_equal(image, frame.image), "not the last frame"
        return [TileDetection(t.label, 0.98, t.box, t.quad, t.sideways) for t in frame.visible()]


class ScaledTruth(RendererTruth):
    """The truth as a recogniser that reports its boxes at ``box_scale`` reports it, unless
    asked for them as found."""

    box_scale = 0.88

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        if as_found:
            return super().detect(image)
        out = []
        for d in super().detect(image):
            c = d.quad.mean(axis=0)
            quad = c + (d.quad - c) * self.box_scale
            out.append(replace(d, box=scale_box(d.box, self.box_scale), quad=quad))
        return out


class NoTiles:
    """A recogniser that finds nothing: for tests of the frame loop alone."""

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        return []


class RendererTruthInStrips(RendererTruth):
    """The same truth for the seat strips the pipeline cuts out (mode "seats"): it works out
    which seat's strip it is given and maps the tiles' true outlines into it."""

    def __init__(self, camera: SimCamera, pipeline: TablePipeline) -> None:
        super().__init__(camera)
        self.pipeline = pipeline

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        frame = self.camera.last_frame
        assert frame is not None
        cal, ppm = self.pipeline.calibration, self.pipeline.px_per_mm
        for seat in range(4):
            strip = cal.seat_image(frame.image, seat, ppm, margin_mm=STRIP_MARGIN_MM)
            if strip.shape == image.shape and np.array_equal(strip, image):
                break
        else:
            raise AssertionError("not a strip of the last frame")
        to_strip = np.linalg.inv(cal.seat_strip_to_plane(seat, ppm, margin_mm=STRIP_MARGIN_MM))
        h, w = image.shape[:2]
        out = []
        for t in frame.visible():
            quad = apply(to_strip, cal.to_plane(t.quad)).astype(np.float32)
            if 0 <= quad[:, 0].mean() < w and 0 <= quad[:, 1].mean() < h:
                out.append(TileDetection(t.label, 0.98, box_of_quad(quad), quad))
        return out


class TruthTakenUpright(RendererTruth):
    """The truth, as a recogniser that cannot tell which way tiles lie would give it: every
    claimed (sideways) tile reported upright, and an added kong's two sideways tiles found as
    one tile."""

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        frame = self.camera.last_frame
        assert frame is not None and np.array_equal(image, frame.image)
        out, stacks = [], {}
        for t in frame.visible():
            placed = frame.placed[t.index]
            quad = t.quad
            if placed.sideways:
                key = (placed.seat, placed.group)
                if key in stacks:  # the second of a stacked pair: one box round both
                    first = out.pop(stacks.pop(key))
                    box = cv2.minAreaRect(np.vstack([first.quad, quad]).astype(np.float32))
                    quad = cv2.boxPoints(box)
                else:
                    c = quad.mean(axis=0)
                    quad = (quad - c) @ np.array([[0.0, 1.0], [-1.0, 0.0]]) + c
                    stacks[key] = len(out)
            out.append(TileDetection(t.label, 0.98, box_of_quad(quad), quad))
        return out


@pytest.fixture
def pipeline(sim_camera: SimCamera) -> TablePipeline:
    calibration = calibrate_from_markers(sim_camera.read().image)
    tracker = TableTracker(calibration.geometry, stable_frames=STABLE, remove_frames=4)
    return TablePipeline(calibration, RendererTruth(sim_camera), tracker=tracker, mode="frame")


def _melds(view) -> list[Meld | None]:
    return [m.meld for m in view.melds]


@pytest.mark.parametrize("mode", ["frame", "seats"])
def test_one_frame_reads_every_seat(
    sim_camera: SimCamera, pipeline: TablePipeline, mode: str
) -> None:
    if mode == "seats":
        pipeline = TablePipeline(pipeline.calibration, RendererTruth(sim_camera), mode="seats")
        pipeline.recognizer = RendererTruthInStrips(sim_camera, pipeline)
    sim_camera.set_layout(LAYOUT)
    reading = pipeline.read(sim_camera.read())
    assert reading.index == 1 and reading.seconds > 0
    for seat, view in zip(LAYOUT.seats, reading.views, strict=True):
        assert _melds(view) == list(seat.melds)
        assert view.flowers == seat.flowers
        assert view.open_tiles == seat.open_tiles
    assert not reading.needs_confirmation
    if mode == "frame":  # the walls and discards were found too, but belong to no seat
        assert len(reading.reads) == len(sim_camera.last_frame.truths)  # type: ignore[union-attr]
    else:  # each seat's tiles once, though neighbours' corners show in every strip
        assert len(reading.reads) == sum(
            1
            for p in sim_camera.last_frame.placed
            if p.seat is not None  # type: ignore[union-attr]
        )


def test_the_picture_says_which_way_tiles_lie(sim_camera: SimCamera) -> None:
    calibration = calibrate_from_markers(sim_camera.read().image)
    pipeline = TablePipeline(calibration, TruthTakenUpright(sim_camera))
    sim_camera.set_layout(LAYOUT)
    reading = pipeline.read(sim_camera.read())
    for seat, view in zip(LAYOUT.seats, reading.views, strict=True):
        assert _melds(view) == list(seat.melds)


def test_changes_settle_over_frames(sim_camera: SimCamera, pipeline: TablePipeline) -> None:
    sim_camera.change_seat(2, melds=(Meld.of("pung", "1m1m1m", 1),))
    updates = [pipeline.process(sim_camera.read()) for _ in range(STABLE)]
    assert [len(u.changes) for u in updates] == [0] * (STABLE - 1) + [1]
    (change,) = updates[-1].changes
    assert change.kind is ChangeKind.MELD and change.seat == 2
    sim_camera.change_seat(2, melds=(Meld.of("added_kong", "1111m", 1),), flowers=(Tile.PLUM,))
    changes = [c for _ in range(STABLE) for c in pipeline.process(sim_camera.read()).changes]
    assert sorted(c.kind.value for c in changes) == ["flower", "meld_changed"]
    assert _melds(pipeline.views[2]) == [Meld.of("added_kong", "1111m", 1)]
    assert pipeline.views[2].flowers == (Tile.PLUM,)
    data = json.loads(json.dumps(updates[-1].to_json()))
    assert data["changes"][0]["kind"] == "meld" and data["changes"][0]["seat"] == 2
    assert data["views"][2]["melds"][0]["tiles"] == "111m"


def test_an_updates_json_shows_the_frame_before_it_settles(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    sim_camera.change_seat(2, melds=(Meld.of("pung", "1m1m1m", 1),))
    frame = sim_camera.read()
    first = json.loads(json.dumps(pipeline.process(frame).to_json()))
    # a display can show the pung being laid, though nothing has settled yet
    assert first["changes"] == [] and first["views"][2]["melds"] == []
    (seen,) = first["reading"]["views"][2]["melds"]
    assert {k: seen[k] for k in ("kind", "tiles", "from")} == Meld.of("pung", "111m", 1).to_json()
    assert first["reading"]["needs_confirmation"] is False and first["reading"]["seconds"] > 0
    assert first["frame"] == frame.index
    # a camera of an integrator's own may stamp its frames NaN: the JSON stays JSON
    odd = Frame(sim_camera.read().image, 7, float("nan"), "their camera")
    data = pipeline.process(odd).to_json()
    assert json.loads(json.dumps(data, allow_nan=False))["reading"]["timestamp"] is None


def test_an_arm_over_the_table_erases_nothing(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    sim_camera.set_layout(LAYOUT)
    for _ in range(STABLE):
        pipeline.process(sim_camera.read())
    settled = [v.to_json() for v in pipeline.views]
    # arms reach over seat 0's melds and seat 3's laid-open hand, frame after frame
    arms = (ArmOver(0, (200.0, 90.0), width_mm=110), ArmOver(3, (400.0, 40.0), width_mm=120))
    sim_camera.set_layout(LAYOUT.with_arms(*arms))
    changes = []
    for _ in range(4 * STABLE):
        update = pipeline.process(sim_camera.read())
        changes += update.changes
    frame = sim_camera.last_frame
    assert frame is not None and sum(c > 0.3 for c in frame.covered) >= 4  # tiles were hidden
    assert changes == []
    assert [v.to_json() for v in pipeline.views] == settled


def test_a_meld_taken_away_is_removed_once_seen_gone(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    sim_camera.change_seat(1, melds=(Meld.of("pung", "NNN", 3),))
    for _ in range(STABLE):
        pipeline.process(sim_camera.read())
    sim_camera.clear()
    changes = [c for _ in range(8) for c in pipeline.process(sim_camera.read()).changes]
    assert [c.kind for c in changes] == [ChangeKind.REMOVED]
    assert pipeline.views[1].is_empty
    pipeline.reset()
    assert all(v.is_empty for v in pipeline.views)


def test_bare_table_is_told_from_tiles_and_hands(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    layout = TableLayout().with_seat(0, melds=(Meld.of("pung", "EEE", 2),))
    layout = layout.with_arms(ArmOver(2, (450.0, 100.0), width_mm=120))
    sim_camera.set_layout(layout)
    image = sim_camera.read().image
    is_bare = pipeline.bare_test(image)
    frame = sim_camera.last_frame
    assert frame is not None
    tile = next(p for p in frame.placed if p.seat == 0)
    assert not is_bare(tile.quad())
    g = pipeline.calibration.geometry

    def square(seat: int, u: float, v: float) -> np.ndarray:
        from vision.calibration import apply

        pts = [(u - 15, v - 20), (u + 15, v - 20), (u + 15, v + 20), (u - 15, v + 20)]
        return apply(g.seat_to_plane(seat), pts)

    assert is_bare(square(0, 600.0, 100.0))  # felt beside the meld
    assert is_bare(square(1, 450.0, 100.0))
    assert not is_bare(square(2, 450.0, 60.0))  # under the hand
    assert not is_bare(square(0, -100.0, 50.0))  # off the table


def _settled(sim_camera: SimCamera, pipeline: TablePipeline) -> None:
    sim_camera.change_seat(0, flowers=(Tile.SPRING,), melds=(Meld.of("pung", "EEE", 2),))
    sim_camera.change_seat(1, melds=(Meld.of("chow", "345p", 0),))
    for _ in range(STABLE + 1):
        pipeline.process(sim_camera.read())
    assert len(pipeline.views[0].melds) == 1 and len(pipeline.views[1].melds) == 1


@pytest.mark.parametrize(
    "spoil",
    [
        lambda im: np.zeros_like(im),  # the lights off
        lambda im: np.full_like(im, 255),  # overexposed
        lambda im: np.full_like(im, (120, 160, 215)),  # a hand over the lens
        lambda im: np.full_like(im, (0, 135, 0)),  # a driver's glitch
        lambda im: np.clip(np.random.default_rng(0).normal(8, 4, im.shape), 0, 255).astype(
            np.uint8
        ),  # the lights off, with the sensor's noise
        lambda im: (im * 0.05).astype(np.uint8),  # all but dark
    ],
)
def test_a_frame_that_cannot_show_the_table_erases_nothing(
    sim_camera: SimCamera, pipeline: TablePipeline, spoil
) -> None:
    # a frame of one colour was all "felt": every meld and flower was reported gone, and
    # again as new when the picture came back
    _settled(sim_camera, pipeline)
    truth = pipeline.recognizer
    pipeline.recognizer = NoTiles()
    image = sim_camera.read().image
    changes = [
        c
        for i in range(12)
        for c in pipeline.process(Frame(spoil(image), 100 + i, 0.0, "x")).changes
    ]
    assert changes == []
    pipeline.recognizer = truth
    assert [c for _ in range(6) for c in pipeline.process(sim_camera.read()).changes] == []


@pytest.mark.parametrize("side", ["top", "bottom", "left", "right"])
def test_a_sleeve_across_most_of_the_view_erases_nothing(
    sim_camera: SimCamera, pipeline: TablePipeline, side: str
) -> None:
    # with a dark sleeve over 70 % of the picture, its colour was taken for the felt's, and
    # every meld under it was reported gone
    for seat in range(4):
        sim_camera.change_seat(seat, melds=(Meld.of("pung", "ESWN"[seat] * 3, (seat + 1) % 4),))
    for _ in range(STABLE + 1):
        pipeline.process(sim_camera.read())
    assert all(len(v.melds) == 1 for v in pipeline.views)
    pipeline.recognizer = NoTiles()  # nothing shows under the sleeve
    image = sim_camera.read().image
    h, w = image.shape[:2]
    cover = {
        "top": np.s_[: int(h * 0.7)],
        "bottom": np.s_[int(h * 0.3) :],
        "left": np.s_[:, : int(w * 0.7)],
        "right": np.s_[:, int(w * 0.3) :],
    }[side]
    image[cover] = (40, 30, 25)
    for i in range(12):
        assert pipeline.process(Frame(image, 100 + i, float(i), "x")).changes == ()
    # nor is it learnt as the felt when it stays: the felt shows beside it
    for i in range(12, 100, 4):
        assert pipeline.process(Frame(image, 100 + i, float(i), "x")).changes == ()


def test_the_felt_follows_the_light(sim_camera: SimCamera, pipeline: TablePipeline) -> None:
    # the evening darkens slowly: a meld taken away is still seen gone
    _settled(sim_camera, pipeline)
    sim_camera.clear()
    pipeline.recognizer = NoTiles()
    changes = []
    for i in range(40):
        dim = (sim_camera.read().image * (1 - 0.015 * i)).astype(np.uint8)
        changes += pipeline.process(Frame(dim, 100 + i, 0.0, "x")).changes
    assert {c.kind for c in changes} == {ChangeKind.REMOVED} and len(changes) == 3
    assert all(v.is_empty for v in pipeline.views)
    felt = pipeline.calibration.felt_hsv
    assert felt is not None and pipeline._felt is not None and pipeline._felt[2] < 0.8 * felt[2]


def test_without_a_measured_felt_the_first_lit_frame_teaches_it(sim_camera: SimCamera) -> None:
    cal = calibrate_from_markers(sim_camera.read().image)
    bare = replace(cal, felt_hsv=None)
    pipeline = TablePipeline(bare, NoTiles())
    image = sim_camera.read().image
    # one colour, the dark noise of the lights off, a camera still settling its exposure:
    # none teaches the felt (the dark frame did, and then every lit frame was refused, so
    # nothing taken away was ever seen gone)
    noise = np.random.default_rng(0).normal(8, 4, image.shape)
    for dark in (np.zeros_like(image), np.clip(noise, 0, 255).astype(np.uint8), image // 4):
        assert not pipeline.bare_test(dark)(bare.zones[0])
        assert pipeline._felt is None
    is_bare = pipeline.bare_test(image)
    assert pipeline._felt is not None
    np.testing.assert_allclose(pipeline._felt, cal.felt_hsv, atol=3)
    g = cal.geometry
    square = apply(g.seat_to_plane(0), [(585, 80), (615, 80), (615, 120), (585, 120)])
    assert is_bare(square)
    # a felt learnt from frames is learnt again for the next hand; a measured one is kept
    pipeline.reset()
    assert pipeline._felt is None
    measured = TablePipeline(cal, NoTiles())
    measured.bare_test(image)
    measured.reset()
    assert measured._felt is not None


def _taken_away_under(sim_camera: SimCamera, pipeline: TablePipeline, light, frames=40):
    """Settle a pung and a flower, take them away, and read ``frames`` frames through
    ``light``: the changes reported."""
    _settled(sim_camera, pipeline)
    sim_camera.clear()
    pipeline.recognizer = NoTiles()
    return [
        c.kind
        for i in range(frames)
        for c in pipeline.process(Frame(light(sim_camera.read().image, i), 100 + i, i, "x")).changes
    ]


def test_a_lamp_switched_on_still_sees_melds_taken_away(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    # 1.45 times brighter at once: every frame was refused as "not the felt", for good
    def lamp(im, i):
        return np.clip(im.astype(np.float32) * 1.45, 0, 255).astype(np.uint8)

    assert _taken_away_under(sim_camera, pipeline, lamp) == [ChangeKind.REMOVED] * 3


def test_a_lasting_change_of_cloth_is_learnt(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    # the felt turned green at once, and stays so: frames are refused for a minute of frame
    # time, then their colour is the felt's
    def green(im, i):
        out = im.copy()
        out[..., [0, 1]] = out[..., [1, 0]]  # blue felt becomes green
        return out

    assert _taken_away_under(sim_camera, pipeline, green, frames=50) == []
    later = [
        c.kind
        for i in range(50, 70)
        for c in pipeline.process(Frame(green(sim_camera.read().image, i), 200 + i, i, "x")).changes
    ]
    assert later == [ChangeKind.REMOVED] * 3


def test_a_camera_away_for_a_minute_is_not_a_minute_of_a_new_felt(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    # two dim frames, the camera gone for 61 s, two dim frames again: the gap counted as a
    # minute of dim frames, the dim colour was learnt as the felt, and nothing taken off the
    # table once the lights were back was seen gone
    _settled(sim_camera, pipeline)
    pipeline.recognizer = NoTiles()  # the dim frames are not the renderer's own

    def dim(t: float) -> Frame:
        return Frame((sim_camera.read().image // 2).astype(np.uint8), int(t), t, "x")

    for t in (10.0, 11.0, 72.0, 73.0):
        assert pipeline.process(dim(t)).changes == ()
    felt = pipeline.calibration.felt_hsv
    assert felt is not None and pipeline._felt is not None and pipeline._felt[2] > 0.8 * felt[2]
    sim_camera.clear()
    changes = [
        c.kind
        for t in range(74, 94)
        for c in pipeline.process(Frame(sim_camera.read().image, t, float(t), "x")).changes
    ]
    assert changes == [ChangeKind.REMOVED] * 3


def test_a_loop_that_stalls_now_and_then_still_learns_a_new_cloth(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    # frames 3 s apart, one in eight 6 s: restarting the minute at every gap over 5 s meant
    # it was never learnt, and nothing taken away was ever seen gone
    _settled(sim_camera, pipeline)
    sim_camera.clear()
    pipeline.recognizer = NoTiles()
    t, changes = 0.0, []
    for i in range(40):
        t += 6.0 if i % 8 == 7 else 3.0
        image = sim_camera.read().image.copy()
        image[..., [0, 1]] = image[..., [1, 0]]  # the blue cloth swapped for a green one
        changes += [c.kind for c in pipeline.process(Frame(image, 100 + i, t, "x")).changes]
    assert changes == [ChangeKind.REMOVED] * 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_melds_taken_off_a_black_felt_are_seen_gone(seed: int, sim_cameras) -> None:
    # a black top's weave passed for "something on the felt" in a sixth of its pixels, so a
    # place was seldom bare 8 frames running: nothing taken away was reported
    camera = sim_cameras(seed, scene_options={"felt_colour": (40, 40, 40)}, tilt=8.0)
    cal = calibrate_from_markers(camera.read().image)
    pipeline = TablePipeline(cal, RendererTruth(camera))  # the table's own tracker settings
    camera.change_seat(1, melds=(Meld.of("pung", "NNN", 3),))
    settled = [c for _ in range(8) for c in pipeline.process(camera.read()).changes]
    assert [c.kind for c in settled] == [ChangeKind.MELD]
    camera.clear()
    changes = [c for _ in range(20) for c in pipeline.process(camera.read()).changes]
    assert [c.kind for c in changes] == [ChangeKind.REMOVED]


def test_a_frame_numbered_by_numpy_gives_json(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    frame = sim_camera.read()
    update = pipeline.process(Frame(frame.image, np.int64(7), np.float32(1.5), "mine"))
    assert json.loads(json.dumps(update.to_json()))["frame"] == 7
    assert type(update.reading.timestamp) is float


def test_watch_rides_out_a_camera_that_vanishes(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    sim_camera.change_seat(3, flowers=(Tile.SUMMER,))
    errors: list[CameraError] = []

    def on_error(exc: CameraError) -> None:
        errors.append(exc)
        if len(errors) == 3:
            sim_camera.replug()  # somebody plugs it back in

    updates = []
    for n, update in enumerate(pipeline.watch(sim_camera, limit=6, retry_s=0, on_error=on_error)):
        updates.append(update)
        if n == 1:
            sim_camera.unplug()
    assert len(updates) == 6
    assert isinstance(errors[0], CameraLost)
    assert all("unplugged" in str(e) for e in errors[1:])
    assert pipeline.views[3].flowers == (Tile.SUMMER,)


def test_watch_ends_with_a_folder_of_frames(tmp_path: Path, sim_camera: SimCamera) -> None:
    for i in range(3):
        cv2.imwrite(str(tmp_path / f"{i}.png"), sim_camera.read().image)
    (tmp_path / "3.png").write_bytes(b"broken")
    calibration = calibrate_from_markers(sim_camera.read().image)

    pipeline = TablePipeline(calibration, NoTiles())
    errors: list[VisionError] = []
    updates = list(pipeline.watch(ImageFolderCamera(tmp_path), retry_s=0, on_error=errors.append))
    assert len(updates) == 3 and len(errors) == 1 and "3.png" in str(errors[0])


class ScriptedCamera:
    """A camera that delivers the given pictures (or raises the given errors) in turn."""

    is_open = True

    def __init__(self, items: list[np.ndarray | Exception]) -> None:
        self.items = list(items)
        self.index = 0

    def read(self) -> Frame:
        if not self.items:
            raise EndOfStream("no more pictures")
        item = self.items.pop(0)
        if isinstance(item, Exception):
            raise item
        self.index += 1
        return Frame(item, self.index - 1, float(self.index), "scripted")


def test_watch_reports_frames_it_cannot_use_and_goes_on(
    sim_camera: SimCamera, pipeline: TablePipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A camera plugged back in at another resolution, or a grey frame: not the end of the
    table. A run of bad frames is paced at ``retry_s``; one bad frame among good ones is not."""
    naps: list[float] = []
    monkeypatch.setattr("vision.pipeline._pause", lambda seconds, stop: naps.append(seconds))
    good = sim_camera.read().image
    square = np.ascontiguousarray(good[:, : good.shape[0]])  # another shape than calibrated
    errors: list[VisionError] = []
    camera = ScriptedCamera([square, square, good, square, good])
    no_tiles = TablePipeline(pipeline.calibration, NoTiles())
    indices = [u.reading.index for u in no_tiles.watch(camera, retry_s=7, on_error=errors.append)]
    assert indices == [2, 4]  # the good frames after the bad ones are read
    assert len(errors) == 3 and all(isinstance(e, CalibrationError) for e in errors)
    assert naps == [7]  # only the second of two bad frames in a row waits


def test_a_stop_is_heard_during_a_retry_wait(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    sim_camera.unplug()
    asked = time.monotonic() + 0.2
    started = time.monotonic()
    updates = list(
        pipeline.watch(sim_camera, retry_s=30, should_stop=lambda: time.monotonic() > asked)
    )
    assert updates == [] and time.monotonic() - started < 5


def test_watch_ends_when_the_model_fails(sim_camera: SimCamera, pipeline: TablePipeline) -> None:
    class Broken:
        def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
            raise ModelError("the classifier model failed")

    broken = TablePipeline(pipeline.calibration, Broken())
    with pytest.raises(ModelError):
        next(broken.watch(ScriptedCamera([sim_camera.read().image]), on_error=print))


def test_a_grey_frame_is_read_as_colour(sim_camera: SimCamera, pipeline: TablePipeline) -> None:
    frame = sim_camera.read()
    grey = Frame(cv2.cvtColor(frame.image, cv2.COLOR_BGR2GRAY), 5, 1.0, "grey camera")
    assert TablePipeline(pipeline.calibration, NoTiles()).process(grey).reading.index == 5


def test_seats_mode_keeps_a_tile_in_a_strip_but_in_no_zone(pipeline: TablePipeline) -> None:
    cal = pipeline.calibration
    g = cal.geometry
    # on seat 0's side, just beyond its zone, inside its strip's margin
    u, v = g.side_mm / 2, cal.seat_depth(0) + STRIP_MARGIN_MM / 2
    corners = [(u - 15, v - 10), (u + 15, v - 10), (u + 15, v + 10), (u - 15, v + 10)]
    quad_mm = apply(g.seat_to_plane(0), corners)
    assert cal.seat_of(quad_mm.mean(axis=0)) is None
    ppm = 1.5
    strip_quad = apply(
        np.linalg.inv(cal.seat_strip_to_plane(0, ppm, margin_mm=STRIP_MARGIN_MM)), quad_mm
    )

    class InSeatZeroStrip:
        strips = 0

        def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
            self.strips += 1
            if self.strips > 1:
                return []
            return [TileDetection(4, 0.95, box_of_quad(strip_quad), strip_quad)]

    image = np.full((*cal.image_size[::-1], 3), 90, np.uint8)
    seats = TablePipeline(cal, InSeatZeroStrip(), mode="seats", px_per_mm=ppm)
    (read,) = seats.read(image).reads
    assert read.label == 4 and np.allclose(read.centre, quad_mm.mean(axis=0), atol=1.0)


class TruthAndMore(RendererTruth):
    """The truth, and more tiles as a recogniser might find them besides: ``extra`` gives
    each as (label, outline in plane millimetres)."""

    def __init__(self, camera: SimCamera, extra: list[tuple[int, np.ndarray]]) -> None:
        super().__init__(camera)
        self.extra = extra

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        frame = self.camera.last_frame
        out = super().detect(image)
        for label, quad_mm in self.extra:
            quad = apply(frame.plane_to_image, quad_mm).astype(np.float32)
            out.append(TileDetection(label, 0.8, box_of_quad(quad), quad))
        return out


def _felt_and_tile_at_seat_1(camera: SimCamera, geometry) -> tuple[list[np.ndarray], np.ndarray]:
    """Lay seat 1's pung, concealed kong and open tiles (:data:`SEAT_1`), and give outlines
    (plane millimetres) of upright tiles where the picture shows bare felt: at the table's
    edge before the open row's first tile, and in the gap between the two melds; and one
    over the open row's second tile."""
    camera.change_seat(1, melds=SEAT_1.melds, open_tiles=SEAT_1.open_tiles)
    to_seat, to_plane = geometry.plane_to_seat(1), geometry.seat_to_plane(1)
    tiles = []  # (role, group, u, v, half its width along the edge)
    for p in camera.render().placed:
        if p.seat == 1:
            (u, v), half = apply(to_seat, [p.centre])[0], 20.0 if p.sideways else 15.0
            tiles.append((p.role, p.group, float(u), float(v), half))
    row = sorted((u, v) for role, _, u, v, _ in tiles if role == "open")
    pung_ends = max(u + h for role, g, u, _, h in tiles if (role, g) == ("meld", 0))
    kong_starts = min(u - h for role, g, u, _, h in tiles if (role, g) == ("meld", 1))
    kong_v = max(v for role, g, _, v, _ in tiles if (role, g) == ("meld", 1))

    def outline(u: float, v: float) -> np.ndarray:
        return apply(
            to_plane, [(u - 15, v - 20), (u + 15, v - 20), (u + 15, v + 20), (u - 15, v + 20)]
        )

    (u0, v0), (u1, v1) = row[:2]
    felt = [outline(u0 - 40, v0 - 4), outline((pung_ends + kong_starts) / 2, kong_v)]
    return felt, outline(u1, v1)


SEAT_1 = SeatLayout(
    melds=(Meld.of("pung", "EEE", 2), Meld.of("concealed_kong", "9999s")),
    open_tiles=tuple(parse_tiles("123m 456p")),
)


def test_a_face_down_read_on_bare_table_is_no_tile(sim_camera: SimCamera) -> None:
    """A face-down tile found where the picture shows bare table (the felt at the table's
    edge before a row, a gap between two melds) is the table top taken for a tile's back:
    it is dropped, and the seat reads as laid, asking nothing; the concealed kong's own
    face-down ends stay."""
    calibration = calibrate_from_markers(sim_camera.read().image)
    felt, _ = _felt_and_tile_at_seat_1(sim_camera, calibration.geometry)
    recognizer = TruthAndMore(sim_camera, [(BACK, q) for q in felt])
    reading = TablePipeline(calibration, recognizer).read(sim_camera.read())
    assert sum(r.face_down for r in reading.reads) == 2  # the kong's ends
    view = reading.views[1]
    assert _melds(view) == list(SEAT_1.melds) and view.open_tiles == SEAT_1.open_tiles
    assert view.notes == ()


def test_only_a_face_down_read_on_bare_table_is_dropped(sim_camera: SimCamera) -> None:
    """A face-down read over a tile that is there, and a face-up read on bare felt, are the
    recogniser's word to weigh, not the table top's: they stay, and are asked about."""
    calibration = calibrate_from_markers(sim_camera.read().image)
    felt, on_a_tile = _felt_and_tile_at_seat_1(sim_camera, calibration.geometry)
    # the open row's second tile found twice, once face down: a doubt to put to the table
    recognizer = TruthAndMore(sim_camera, [(BACK, on_a_tile), (int(Tile.WHITE), felt[0])])
    reading = TablePipeline(calibration, recognizer).read(sim_camera.read())
    labels = sorted(r.label for r in reading.reads if calibration.seat_of(r.centre) == 1)
    assert int(Tile.WHITE) in labels
    assert reading.views[1].needs_confirmation


def test_watch_stops_when_told(sim_camera: SimCamera, pipeline: TablePipeline) -> None:
    assert list(pipeline.watch(sim_camera, should_stop=lambda: True)) == []
    assert len(list(pipeline.watch(sim_camera, limit=2))) == 2


def test_bad_frames_and_settings_are_clear_errors(
    sim_camera: SimCamera, pipeline: TablePipeline
) -> None:
    with pytest.raises(CameraError):
        pipeline.process(None)  # type: ignore[arg-type]
    with pytest.raises(CalibrationError, match="calibrated on 1280x960"):
        pipeline.read(np.zeros((720, 1280, 3), np.uint8))
    with pytest.raises(VisionError, match="mode"):
        TablePipeline(pipeline.calibration, RendererTruth(sim_camera), mode="fast")
    with pytest.raises(VisionError, match="px_per_mm"):
        TablePipeline(pipeline.calibration, RendererTruth(sim_camera), px_per_mm=50)


def test_a_missing_model_is_a_clear_error(tmp_path: Path, sim_camera: SimCamera) -> None:
    with pytest.raises(ModelError, match="no model folder"):
        TablePipeline(sim_camera.true_calibration(), TileRecognizer(tmp_path / "nothing"))


# -- with the committed model ------------------------------------------------------------------


@pytest.fixture(scope="module")
def recognizer() -> TileRecognizer:
    return TileRecognizer()


def test_the_committed_model_reads_the_simulated_table(
    recognizer: TileRecognizer, sim_cameras
) -> None:
    """The real path end to end: rendered frames, markers, the ONNX recogniser, the depth
    check, grouping, the tracker; every seat settles exactly as laid out, and stays so."""
    camera = sim_cameras(1)
    calibration = calibrate_from_markers(camera.read().image)
    tracker = TableTracker(calibration.geometry, stable_frames=STABLE)
    pipeline = TablePipeline(calibration, recognizer, tracker=tracker)
    camera.set_layout(LAYOUT)
    changes = [c for _ in range(STABLE + 2) for c in pipeline.process(camera.read()).changes]
    assert sorted(c.kind.value for c in changes) == ["flower"] * 3 + ["meld"] * 6 + ["open_tiles"]
    for seat, view in zip(LAYOUT.seats, pipeline.views, strict=True):
        assert _melds(view) == list(seat.melds)
        assert view.flowers == seat.flowers
        assert view.open_tiles == seat.open_tiles
    # an arm resting over seat 0's melds and flowers changes nothing settled
    camera.set_layout(LAYOUT.with_arms(ArmOver(0, (230.0, 110.0), width_mm=120)))
    later = [c for _ in range(2 * STABLE) for c in pipeline.process(camera.read()).changes]
    assert later == []
    assert _melds(pipeline.views[0]) == list(LAYOUT.seats[0].melds)


def test_outlines_reported_at_a_box_scale_are_read_at_the_size_they_were_found(
    sim_camera: SimCamera,
) -> None:
    """The pipeline's measures of a tile's lie and of the gaps in a meld were fitted on the
    boxes as found: a recogniser reporting them scaled (``box_scale``) reads the table the
    same, the pipeline asking for every outline as found."""
    sim_camera.set_layout(LAYOUT)
    frame = sim_camera.read()
    calibration = calibrate_from_markers(frame.image)
    truth = TablePipeline(calibration, RendererTruth(sim_camera)).read(frame)
    scaled = TablePipeline(calibration, ScaledTruth(sim_camera)).read(frame)

    def seen(views):
        return [
            (
                v.flowers,
                [(m.kind, m.tiles, m.source, m.note) for m in v.melds],
                v.open_tiles,
                v.notes,
            )
            for v in views
        ]

    assert seen(scaled.views) == seen(truth.views)
    for a, b in zip(scaled.views, truth.views, strict=True):
        assert [m.centre for m in a.melds] == [pytest.approx(m.centre) for m in b.melds]
    assert len(scaled.reads) == len(truth.reads) > 20
    for a, b in zip(scaled.reads, truth.reads, strict=True):
        assert a.label == b.label
        np.testing.assert_allclose(a.quad, b.quad, atol=1e-3)


@pytest.mark.parametrize("box_scale", [None, 0.88])
def test_the_committed_model_sees_a_pung_become_a_kong(
    recognizer: TileRecognizer, sim_cameras, monkeypatch, box_scale
) -> None:
    # at any box scale: the kong's two stacked sideways tiles, found as one, are cut in two
    # by the width they were found at
    if box_scale is not None:
        monkeypatch.setattr(recognizer, "box_scale", box_scale)
    camera = sim_cameras(1)
    calibration = calibrate_from_markers(camera.read().image)
    tracker = TableTracker(calibration.geometry, stable_frames=STABLE)
    pipeline = TablePipeline(calibration, recognizer, tracker=tracker)
    camera.change_seat(3, melds=(Meld.of("pung", "7p7p7p", 2),), flowers=(Tile.PLUM,))
    first = [c for _ in range(STABLE) for c in pipeline.process(camera.read()).changes]
    assert sorted(c.kind.value for c in first) == ["flower", "meld"]
    camera.change_seat(3, melds=(Meld.of("added_kong", "7777p", 2),))
    second = [c for _ in range(STABLE + 1) for c in pipeline.process(camera.read()).changes]
    assert [c.kind for c in second] == [ChangeKind.MELD_CHANGED]
    assert second[0].meld is not None and second[0].meld.meld == Meld.of("added_kong", "7777p", 2)


def test_no_face_down_tile_is_seen_on_bare_felt_beside_a_laid_open_hand(
    recognizer: TileRecognizer, sim_cameras
) -> None:
    """Seat 3's hand laid open beside a kong and three flowers (the simulated table's seed 1):
    the felt between the table's edge and the open row's first tile was found as a tile and
    read face down, and the seat asked about "a face-down tile that is not part of a kong",
    on a table on which every tile lies face up."""
    camera = sim_cameras(1)
    calibration = calibrate_from_markers(camera.read().image)
    tracker = TableTracker(calibration.geometry, stable_frames=STABLE)
    pipeline = TablePipeline(calibration, recognizer, tracker=tracker)
    laid = SeatLayout(
        flowers=tuple(parse_tiles("5f 1f 6f")),
        melds=(Meld.of("kong", "WWWW", 1),),
        open_tiles=tuple(parse_tiles("123m 456p 789s 22s")),
    )
    camera.change_seat(3, **{f: getattr(laid, f) for f in ("flowers", "melds", "open_tiles")})
    for _ in range(STABLE + 2):
        update = pipeline.process(camera.read())
        assert update.reading.views[3].notes == ()
    view = pipeline.views[3]
    assert (view.flowers, _melds(view), view.open_tiles) == (
        laid.flowers,
        list(laid.melds),
        laid.open_tiles,
    )
    assert not view.needs_confirmation
