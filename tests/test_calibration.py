"""Calibration: seat geometry, ArUco and manual calibration, zones, files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import VisionError
from vision.calibration import (
    MARKER_IDS,
    SEATS,
    Calibration,
    CalibrationError,
    TableGeometry,
    apply,
    calibrate_from_markers,
    calibrate_manual,
    find_marker_sightings,
    find_markers,
    load_calibration,
    marker_image,
    marker_sheet,
)
from vision.rendering.table_scene import ArmOver, TableLayout, TableScene

GEOMETRY = TableGeometry()
GRID = np.array([(x, y) for x in np.linspace(0, 900, 7) for y in np.linspace(0, 900, 7)])


@pytest.fixture(scope="module")
def scene() -> TableScene:
    return TableScene(seed=11)


def _max_error_mm(cal: Calibration, truth: Calibration) -> float:
    """The worst disagreement, over a grid covering the table, between two calibrations."""
    pixels = truth.to_image(GRID)
    return float(np.linalg.norm(cal.to_plane(pixels) - GRID, axis=1).max())


def test_calibration_error_is_a_vision_error() -> None:
    assert issubclass(CalibrationError, VisionError)


def test_seats_go_round_in_turn_order() -> None:
    s = GEOMETRY.side_mm
    # seat 0 sits at the bottom edge of the plane, seat 1 on the right, 2 at the top, 3 left
    edges = [(s / 2, s), (s, s / 2), (s / 2, 0), (0, s / 2)]
    for k in range(SEATS):
        mid = apply(GEOMETRY.seat_to_plane(k), [(s / 2, 0)])[0]
        assert np.allclose(mid, edges[k])
        # seat k's right hand (u = side) is where seat k + 1's left hand (u = 0) is
        right = apply(GEOMETRY.seat_to_plane(k), [(s, 0)])[0]
        left_of_next = apply(GEOMETRY.seat_to_plane((k + 1) % SEATS), [(0, 0)])[0]
        assert np.allclose(right, left_of_next)
        # marker k sits at that corner
        assert np.allclose(GEOMETRY.table_corner(k), right)
        assert np.linalg.norm(np.subtract(GEOMETRY.marker_centre(k), right)) < 60


@given(st.integers(0, 3), st.floats(0, 900), st.floats(0, 900))
def test_seat_coordinates_round_trip(seat: int, u: float, v: float) -> None:
    there = apply(GEOMETRY.seat_to_plane(seat), [(u, v)])
    back = apply(GEOMETRY.plane_to_seat(seat), there)[0]
    assert np.allclose(back, (u, v), atol=1e-6)


@given(st.floats(0, 900), st.floats(0, 900))
def test_a_point_belongs_to_at_most_one_seat_zone(x: float, y: float) -> None:
    cal = Calibration(np.eye(3), (900, 900))
    seat = cal.seat_of((x, y))
    if seat is not None:
        u, v = apply(GEOMETRY.plane_to_seat(seat), [(x, y)])[0]
        assert -1e-6 <= v <= GEOMETRY.zone_depth_mm + 1e-6
        assert v <= u + 1e-6 and v <= GEOMETRY.side_mm - u + 1e-6  # inside the diagonals


def test_zones_exclude_the_centre_and_the_markers() -> None:
    cal = Calibration(np.eye(3), (900, 900))
    assert cal.seat_of((450, 850)) == 0
    assert cal.seat_of((850, 450)) == 1
    assert cal.seat_of((450, 50)) == 2
    assert cal.seat_of((50, 450)) == 3
    assert cal.seat_of((450, 450)) is None  # discards and walls
    for k in MARKER_IDS:
        assert cal.seat_of(GEOMETRY.marker_centre(k)) is None
    assert cal.seat_of((-10, 450)) is None


def test_geometry_rejects_what_cannot_be_a_table() -> None:
    with pytest.raises(CalibrationError, match="positive"):
        TableGeometry(side_mm=-1)
    with pytest.raises(CalibrationError, match="at least 25"):
        TableGeometry(marker_mm=50, marker_inset_mm=10)
    with pytest.raises(CalibrationError, match="do not fit"):
        TableGeometry(side_mm=300, zone_depth_mm=185)
    with pytest.raises(CalibrationError, match="seats are numbered"):
        GEOMETRY.seat_to_plane(4)


@pytest.mark.parametrize(
    ("tilt", "turn", "faults"),
    [
        (0.0, 0.0, {}),
        (8.0, 0.0, {"noise": 3.0, "blur": 0.8}),
        (12.0, 90.0, {"gradient": 0.3, "noise": 2.0}),
        (6.0, 180.0, {"glare": 0.25, "jpeg": 75}),
        (10.0, 273.0, {"brightness": 0.7, "noise": 2.0}),
    ],
)
def test_markers_calibrate_any_camera_pose(
    scene: TableScene, tilt: float, turn: float, faults: dict[str, float]
) -> None:
    camera = scene.camera(tilt=tilt, turn=turn, zoom=0.8, **faults)
    frame = scene.render(TableLayout(walls=True), camera, rng=np.random.default_rng(1))
    cal = calibrate_from_markers(frame.image)
    assert cal.method == "aruco" and cal.image_size == (1280, 960)
    assert cal.error_mm < 1.5
    assert _max_error_mm(cal, scene.true_calibration(camera)) < 2.5
    assert len(cal.image_points) == 20  # four centres and sixteen corners


def test_a_covered_marker_is_named(scene: TableScene) -> None:
    camera = scene.camera()
    g = scene.geometry
    # an arm from seat 0 lying over the corner of seats 0 and 1 (marker 0)
    reach = apply(g.plane_to_seat(0), [g.marker_centre(0)])[0] + (0, 40)
    frame = scene.render(TableLayout(arms=(ArmOver(0, tuple(reach), width_mm=140),)), camera)
    with pytest.raises(CalibrationError, match=r"marker 0 \(corner of seats 0 and 1\)"):
        calibrate_from_markers(frame.image)
    with pytest.raises(CalibrationError, match="no markers"):
        calibrate_from_markers(np.full((480, 640, 3), 90, np.uint8))


def test_a_mirrored_view_is_refused(scene: TableScene) -> None:
    import cv2

    frame = scene.render(TableLayout(), scene.camera())
    with pytest.raises(CalibrationError, match="mirror"):  # codes cannot be read mirrored
        calibrate_from_markers(cv2.flip(frame.image, 1))
    truth = scene.true_calibration(scene.camera())
    corners = truth.to_image([GEOMETRY.table_corner(k) for k in MARKER_IDS])
    with pytest.raises(CalibrationError, match="seen mirrored"):
        calibrate_manual(corners[[0, 3, 2, 1]], (1280, 960))


def test_wrong_marker_size_is_refused(scene: TableScene) -> None:
    frame = scene.render(TableLayout(), scene.camera())
    with pytest.raises(CalibrationError, match=r"measure 50 mm across .* not the 35 mm given"):
        calibrate_from_markers(frame.image, TableGeometry(marker_mm=35.0))


@pytest.mark.parametrize("side_mm", [720.0, 1100.0])
def test_a_table_size_far_off_is_refused(scene: TableScene, side_mm: float) -> None:
    # the markers' centres fit any table size exactly, and the corners within 4 mm: only the
    # markers' own size shows the whole plane would be scaled, every tile with it
    frame = scene.render(TableLayout(), scene.camera(tilt=8))
    with pytest.raises(CalibrationError, match=r"table would be about (8[5-9]|9[0-4])\d mm"):
        calibrate_from_markers(frame.image, TableGeometry(side_mm=side_mm))


def test_a_table_size_a_little_off_is_taken_and_pointed_out(scene: TableScene) -> None:
    # blur and lens distortion shrink markers too, so 11 % is not refused, but it is said
    from vision.calibration import scale_note

    frame = scene.render(TableLayout(), scene.camera(tilt=8))
    right = calibrate_from_markers(frame.image)
    assert right.marker_mm_seen == pytest.approx(50.0, abs=2.0) and scale_note(right) is None
    off = calibrate_from_markers(frame.image, TableGeometry(side_mm=1000.0))
    assert off.marker_mm_seen == pytest.approx(55.5, abs=2.0)
    assert re.search(r"would make it about (8[89]|9[01])\d mm", scale_note(off) or "")
    assert Calibration.from_json(off.to_json()).marker_mm_seen == pytest.approx(
        off.marker_mm_seen, abs=0.01
    )


def _with_a_second_marker(marker: int, centre_mm: tuple[float, float], side_mm: float):
    """A table scene with another copy of ``marker`` printed on the table at ``centre_mm``."""
    from vision.rendering.table_scene import _paste_marker

    scene = TableScene(seed=11)
    table = scene.background.copy()
    _paste_marker(table, marker, centre_mm, side_mm, 3.0, scene)
    table.setflags(write=False)
    scene.__dict__["background"] = table  # the cached property, replaced
    return scene


def test_a_spare_copy_of_a_corner_marker_is_refused() -> None:
    # both copies fit a table: taking the larger gave seats wrong by up to 15 cm
    scene = _with_a_second_marker(0, (795.0, 860.0), 50.0)
    frame = scene.render(TableLayout(), scene.camera())
    assert len(find_marker_sightings(frame.image)[0]) == 2
    with pytest.raises(CalibrationError, match=r"marker 0 is seen 2 times.*spare cop"):
        calibrate_from_markers(frame.image)


def test_a_pattern_read_as_a_marker_elsewhere_is_passed_over() -> None:
    # tile art can read as a marker; only the real corner marker fits the table
    scene = _with_a_second_marker(3, (450.0, 450.0), 30.0)
    camera = scene.camera()
    frame = scene.render(TableLayout(), camera)
    assert len(find_marker_sightings(frame.image)[3]) == 2
    cal = calibrate_from_markers(frame.image)
    assert _max_error_mm(cal, scene.true_calibration(camera)) < 3.0
    assert max(cal.marker_drift_mm(frame.image).values()) < 1.5


def test_markers_swapped_across_the_table_are_named(scene: TableScene) -> None:
    truth = scene.true_calibration(scene.camera())
    corners = truth.to_image([GEOMETRY.table_corner(k) for k in MARKER_IDS])
    with pytest.raises(CalibrationError, match=r"0 and 2, or 1\s+and 3"):
        calibrate_manual(corners[[2, 1, 0, 3]], (1280, 960))


def test_manual_corners_calibrate(scene: TableScene) -> None:
    camera = scene.camera(tilt=9, turn=90)
    truth = scene.true_calibration(camera)
    corners = truth.to_image([GEOMETRY.table_corner(k) for k in MARKER_IDS])
    rng = np.random.default_rng(3)
    clicked = corners + rng.normal(0, 0.7, corners.shape)  # a careful click is within a pixel
    cal = calibrate_manual(clicked, camera.size)
    assert cal.method == "manual"
    assert _max_error_mm(cal, truth) < 4.0


def test_manual_corners_must_be_four_in_order(scene: TableScene) -> None:
    truth = scene.true_calibration(scene.camera())
    corners = truth.to_image([GEOMETRY.table_corner(k) for k in MARKER_IDS])
    with pytest.raises(CalibrationError, match="fold the table"):
        calibrate_manual(corners[[0, 2, 1, 3]], (1280, 960))
    with pytest.raises(CalibrationError, match="exactly four"):
        calibrate_manual(corners[:3], (1280, 960))
    with pytest.raises(CalibrationError, match="four different"):
        calibrate_manual([corners[0]] * 4, (1280, 960))
    with pytest.raises(CalibrationError, match="far outside"):
        calibrate_manual(corners + 5000, (1280, 960))


def test_saved_calibration_reads_back(scene: TableScene, tmp_path: Path) -> None:
    camera = scene.camera(tilt=7)
    cal = calibrate_from_markers(scene.render(TableLayout(), camera).image)
    path = cal.save(tmp_path / "cfg" / "calibration.json")
    back = load_calibration(path)
    assert np.allclose(back.homography, cal.homography)
    assert back.image_size == cal.image_size and back.geometry == cal.geometry
    assert back.method == "aruco" and abs(back.error_mm - cal.error_mm) < 1e-3
    for a, b in zip(back.zones, cal.zones, strict=True):
        assert np.allclose(a, b, atol=0.01)
    data = json.loads(path.read_text())
    assert data["table"]["side_mm"] == 900.0 and len(data["zones"]) == 4


def test_the_felt_is_measured_and_kept(scene: TableScene, tmp_path: Path) -> None:
    # the table pipeline tells a frame that cannot show the table by the felt's colour
    image = scene.render(TableLayout(), scene.camera(tilt=7)).image
    cal = calibrate_from_markers(image)
    assert cal.felt_hsv is not None
    # the scene's felt, BGR (135, 95, 35): a blue of hue about 102
    assert abs(cal.felt_hsv[0] - 102) < 4 and cal.felt_hsv[1] > 150
    back = load_calibration(cal.save(tmp_path / "c.json"))
    assert back.felt_hsv == pytest.approx(cal.felt_hsv, abs=0.06)
    # a file saved before the felt was measured has none, and still loads
    data = cal.to_json()
    del data["felt_hsv"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert load_calibration(tmp_path / "old.json").felt_hsv is None
    # corners given by hand measure it in the frame they were picked in
    corners = cal.to_image([cal.geometry.table_corner(k) for k in range(4)])
    manual = calibrate_manual(corners, cal.image_size).with_felt(image)
    assert manual.felt_hsv == pytest.approx(cal.felt_hsv, abs=3)


def test_grey_and_16_bit_frames_calibrate_with_their_felt(scene: TableScene) -> None:
    # they calibrated before the felt was measured; measuring it raised a raw cv2.error
    image = scene.render(TableLayout(), scene.camera(tilt=7)).image
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    for frame in (grey, grey.astype(np.uint16) * 257):
        cal = calibrate_from_markers(frame)
        assert cal.felt_hsv is not None and cal.felt_hsv[1] < 20  # grey: no saturation


@pytest.mark.parametrize(
    ("felt", "message"),
    [
        ([1, 2], "damaged|felt"),
        ([200, 0, 0], "hue 0-179"),
        ([0, "x", 0], "damaged"),
        ([0, -1, 0], "hue 0-179"),
        ({"h": 1}, "felt_hsv"),
    ],
)
def test_a_bad_felt_in_a_file_is_refused(tmp_path: Path, felt: object, message: str) -> None:
    data = Calibration(np.eye(3), (900, 900)).to_json()
    data["felt_hsv"] = felt
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=message):
        load_calibration(path)


def test_edited_zones_are_honoured(tmp_path: Path) -> None:
    cal = Calibration(np.eye(3), (900, 900))
    data = cal.to_json()
    data["zones"][0]["polygon_mm"] = [[300, 900], [600, 900], [600, 800], [300, 800]]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    back = load_calibration(path)
    assert back.seat_of((450, 850)) == 0
    assert back.seat_of((200, 850)) is None
    assert back.seat_depth(0) == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"format": "something else"}', "not a mahjong-table calibration"),
        ('{"format": "mahjong-table calibration", "version": 99}', "version 99"),
        ('{"format": "mahjong-table calibration", "version": 1}', "damaged"),
        (
            '{"format": "mahjong-table calibration", "version": 1, "image_size": [640, 480],'
            ' "homography": [[1, 0, 0], [0, 1, 0], [0, 0, 0]]}',
            "invertible",
        ),
        (
            '{"format": "mahjong-table calibration", "version": 1, "image_size": [640, 480],'
            ' "homography": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "zones": [{"seat": 0}]}',
            "damaged",
        ),
        (
            '{"format": "mahjong-table calibration", "version": 1, "image_size": [640, 480],'
            ' "homography": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "table": [1000]}',
            "damaged",
        ),
        (
            '{"format": "mahjong-table calibration", "version": 1, "image_size": [640, 480],'
            ' "homography": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "points": [[0, 0]]}',
            "damaged",
        ),
        (
            '{"format": "mahjong-table calibration", "version": 1, "image_size": [1e400, 480],'
            ' "homography": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}',
            "damaged",
        ),
        ("[" * 100_000 + "]" * 100_000, "not a calibration file"),
        ('{"n": ' + "9" * 5000 + "}", "not a calibration file"),
    ],
)
def test_bad_calibration_files_say_what_is_wrong(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(content)
    with pytest.raises(CalibrationError, match=message):
        load_calibration(path)


@pytest.mark.parametrize(
    ("seats", "message"),
    [
        ([1, 2, 3, 4], "seat is 0, 1, 2 or 3, not 4"),
        ([0, 1, 1, 3], "two zones are given for seat 1"),
        ([0, 1, 2], "no zone is given for seat 3"),
        ([0, 1, 2, "3"], "seat is 0, 1, 2 or 3, not '3'"),
        ([0, 1, 2, 1e400], "not inf"),
    ],
)
def test_zones_are_put_at_the_seats_they_name(
    tmp_path: Path, seats: list[object], message: str
) -> None:
    data = Calibration(np.eye(3), (900, 900)).to_json()
    zones = data["zones"]
    data["zones"] = [dict(zones[k % 4], seat=seat) for k, seat in enumerate(seats)]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data).replace("Infinity", "1e400"))
    with pytest.raises(CalibrationError, match=message):
        load_calibration(path)
    # listed in another order, each zone still belongs to the seat it names
    data["zones"] = list(reversed(zones))
    path.write_text(json.dumps(data))
    back = load_calibration(path)
    assert back.seat_of((450, 850)) == 0 and back.seat_of((50, 450)) == 3


def test_a_failed_save_leaves_nothing_behind(tmp_path: Path) -> None:
    cal = Calibration(np.eye(3), (900, 900))
    (tmp_path / "calib").mkdir()
    with pytest.raises(CalibrationError, match="cannot write"):
        cal.save(tmp_path / "calib")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calib"]
    saved = cal.save(tmp_path / "ok.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calib", "ok.json"]
    assert saved.stat().st_mode & 0o644 == 0o644  # a table service's other user can read it


@pytest.mark.parametrize(
    "call",
    [
        lambda cal: cal.homography_for((640, 0)),
        lambda cal: cal.to_plane([[1.0, 2.0]], (640.5, 480)),
        lambda cal: cal.plane_image(np.zeros((480, 640, 3), np.uint8), px_per_mm=0),
        lambda cal: cal.plane_image(np.zeros((480, 640, 3), np.uint8), px_per_mm=1e-4),
        lambda cal: cal.seat_image(np.zeros((480, 640, 3), np.uint8), 0, px_per_mm=0),
        lambda cal: calibrate_manual([(0, 0), (9, 0), (9, 9), (0, 9)], None),
        lambda cal: calibrate_manual([(0, 0), (9, 0), (9, 9), (0, 9)], (1280,)),
        lambda cal: calibrate_manual([(0, 0), (9, 0), (9, 9), (0, 9)], (np.nan, np.nan)),
        lambda cal: marker_sheet(dpi=0),
    ],
)
def test_settings_that_make_no_picture_are_calibration_errors(call) -> None:
    with pytest.raises(CalibrationError):
        call(Calibration(np.eye(3), (640, 480)))


def test_calibrations_compare_by_identity() -> None:
    a, b = Calibration(np.eye(3), (640, 480)), Calibration(np.eye(3), (640, 480))
    assert a == a and a != b and len({a, b}) == 2


def test_missing_calibration_says_to_calibrate(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="run 'mahjong-table calibrate'"):
        load_calibration(tmp_path / "none.json")


def test_other_resolutions_of_the_same_view_are_scaled(scene: TableScene) -> None:
    import cv2

    camera = scene.camera()
    frame = scene.render(TableLayout(), camera)
    cal = calibrate_from_markers(frame.image)
    half = cv2.resize(frame.image, (640, 480), interpolation=cv2.INTER_AREA)
    h_half = cal.homography_for((640, 480))
    pts = np.array([[100.0, 200.0], [900.0, 700.0]])
    assert np.allclose(apply(h_half, pts / 2), apply(cal.homography, pts), atol=1e-6)
    assert cal.plane_image(half, 0.5).shape == (450, 450, 3)
    with pytest.raises(CalibrationError, match="calibrated on 1280x960"):
        cal.homography_for((1280, 720))


def test_seat_strips_show_each_seat_its_own_tiles_upright(scene: TableScene) -> None:
    from controller.rules.tiles import Tile
    from vision.rendering.table_scene import SeatLayout

    layout = TableLayout(tuple(SeatLayout(flowers=(Tile(34 + k),)) for k in range(SEATS)))
    camera = scene.camera(tilt=8, turn=90)
    frame = scene.render(layout, camera)
    cal = scene.true_calibration(camera)
    ppm = 2.0
    for k in range(SEATS):
        strip = cal.seat_image(frame.image, k, ppm)
        depth = cal.seat_depth(k)
        assert strip.shape == (round(depth * ppm), round(900 * ppm), 3)
        flower = next(p for p in frame.placed if p.seat == k and p.role == "flower")
        u, v = apply(GEOMETRY.plane_to_seat(k), [flower.centre])[0]
        # the flower is where its seat coordinates say, read the right way up: a tile is
        # taller than wide in the strip, and bright (its face) at the centre
        sx, sy = u * ppm, (depth - v) * ppm
        to_plane = cal.seat_strip_to_plane(k, ppm)
        assert np.allclose(apply(to_plane, [(sx, sy)])[0], flower.centre, atol=1e-6)
        patch = strip[round(sy) - 30 : round(sy) + 30, round(sx) - 22 : round(sx) + 22]
        assert patch.mean() > 150
        cols = strip[round(sy), round(sx) - 45 : round(sx) + 45].mean(axis=1)
        rows = strip[round(sy) - 45 : round(sy) + 45, round(sx)].mean(axis=1)
        assert (cols > 150).sum() < (rows > 150).sum()  # upright: 30 mm wide, 40 mm tall


def test_marker_drift_shows_a_moved_camera(scene: TableScene) -> None:
    camera = scene.camera()
    cal = calibrate_from_markers(scene.render(TableLayout(), camera).image)
    same = cal.marker_drift_mm(scene.render(TableLayout(), camera).image)
    assert sorted(same) == [0, 1, 2, 3] and max(same.values()) < 1.5
    moved = scene.camera(shift=(0.02, 0.0))
    drift = cal.marker_drift_mm(scene.render(TableLayout(), moved).image)
    assert min(drift.values()) > 10


def test_marker_sheet_prints_the_four_markers_at_size() -> None:
    page = marker_sheet(dpi=200)
    assert page.shape == (round(297 * 200 / 25.4), round(210 * 200 / 25.4), 3)
    found = find_markers(page)
    assert sorted(found) == [0, 1, 2, 3]
    side_px = np.linalg.norm(found[2][0] - found[2][1])
    assert abs(side_px - 50 * 200 / 25.4) < 6  # 50 mm at 200 dpi, to a cell's rounding


def test_the_marker_sheet_keeps_its_text_on_the_page() -> None:
    dpi = 100
    page = marker_sheet(TableGeometry(marker_mm=80.0, marker_inset_mm=60.0), dpi=dpi)
    margin = round(9 * dpi / 25.4)  # printers leave the outer few millimetres blank
    assert page[:, :margin].min() == 255 and page[:, -margin:].min() == 255


def test_marker_image_is_found() -> None:
    img = np.full((300, 300, 3), 120, np.uint8)
    img[50:250, 50:250] = marker_image(3, 200)
    assert list(find_markers(img)) == [3]
    # grey (also HxWx1), BGRA and 16-bit pictures are looked at too
    grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    assert list(find_markers(grey)) == list(find_markers(grey[:, :, None])) == [3]
    assert list(find_markers(cv2.cvtColor(img, cv2.COLOR_BGR2BGRA))) == [3]
    assert list(find_markers(img.astype(np.uint16) * 257)) == [3]


@pytest.mark.parametrize(
    "image", [np.zeros((30, 30, 3), np.float64), np.zeros((30, 30, 2), np.uint8)]
)
def test_looking_for_markers_in_what_is_no_picture_is_a_calibration_error(image) -> None:
    with pytest.raises(CalibrationError, match="cannot look for markers"):
        find_markers(image)


def test_an_empty_frame_is_a_calibration_error(scene: TableScene) -> None:
    cal = calibrate_from_markers(scene.render(TableLayout(), scene.camera()).image)
    with pytest.raises(CalibrationError, match="empty"):
        cal.plane_image(np.zeros((0, 640, 3), np.uint8))
