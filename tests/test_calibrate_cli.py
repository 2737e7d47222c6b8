"""``mahjong-table calibrate`` end to end, on frames of the simulated camera."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.cli import main
from hardware_sim.camera import SimCamera
from vision.calibration import MARKER_IDS, find_markers, load_calibration
from vision.rendering.table_scene import ArmOver, TableLayout


def _max_error_mm(path: Path, camera: SimCamera) -> float:
    cal = load_calibration(path)
    truth = camera.true_calibration()
    grid = np.array([(x, y) for x in (0, 300, 600, 900) for y in (0, 300, 600, 900)], float)
    return float(np.linalg.norm(cal.to_plane(truth.to_image(grid)) - grid, axis=1).max())


@pytest.fixture
def frame_png(tmp_path: Path, sim_camera: SimCamera) -> Path:
    path = tmp_path / "frame.png"
    cv2.imwrite(str(path), sim_camera.read().image)
    return path


def test_calibrates_from_a_picture_and_saves(
    tmp_path: Path, frame_png: Path, sim_camera: SimCamera, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cfg" / "calibration.json"
    preview = tmp_path / "preview.png"
    code = main(
        ["calibrate", "--image", str(frame_png), "--out", str(out), "--preview", str(preview)]
    )
    assert code == 0
    assert "calibrated from markers" in capsys.readouterr().out
    assert _max_error_mm(out, sim_camera) < 2.5
    drawn = cv2.imread(str(preview))
    assert drawn.shape == (960, 1280, 3)
    assert np.abs(drawn.astype(int) - cv2.imread(str(frame_png)).astype(int)).sum() > 0


def test_json_output(tmp_path: Path, frame_png: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    assert main(["calibrate", "--image", str(frame_png), "--out", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["saved"] == str(out) and data["method"] == "aruco" and len(data["zones"]) == 4


def test_keeps_trying_frames_until_the_markers_show(tmp_path: Path, sim_camera: SimCamera) -> None:
    frames = tmp_path / "frames"
    frames.mkdir()
    g = sim_camera.scene.geometry
    # a hand over marker 0 in the first frames, then it is lifted
    reach = g.plane_to_seat(0) @ [*g.marker_centre(0), 1.0]
    covered = TableLayout(arms=(ArmOver(0, (reach[0], reach[1] + 40), width_mm=140),))
    for i in range(2):
        cv2.imwrite(str(frames / f"{i}.png"), sim_camera.render(covered).image)
    cv2.imwrite(str(frames / "2.png"), sim_camera.render().image)
    out = tmp_path / "c.json"
    assert main(["calibrate", "--camera", str(frames), "--out", str(out)]) == 0
    assert load_calibration(out).method == "aruco"


def test_markers_out_of_sight_is_a_hardware_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((480, 640, 3), 80, np.uint8))
    code = main(["calibrate", "--image", str(blank), "--out", str(tmp_path / "c.json")])
    assert code == 3
    err = capsys.readouterr().err
    assert "marker 0 (corner of seats 0 and 1)" in err and "Traceback" not in err
    assert not (tmp_path / "c.json").exists()
    saved = tmp_path / "saved.png"
    assert main(["calibrate", "--image", str(blank), "--save-frame", str(saved)]) == 3
    assert cv2.imread(str(saved)).shape == (480, 640, 3)  # to pick the corners in by hand
    assert main(["calibrate", "--image", str(tmp_path / "none.png")]) == 3


def test_by_hand_with_four_corners(tmp_path: Path, frame_png: Path, sim_camera: SimCamera) -> None:
    truth = sim_camera.true_calibration()
    corners = truth.to_image([truth.geometry.table_corner(k) for k in MARKER_IDS])
    text = " ".join(f"{x:.1f},{y:.1f}" for x, y in corners)
    out = tmp_path / "c.json"
    saved = tmp_path / "used.png"
    assert (
        main(
            [
                "calibrate",
                "--image",
                str(frame_png),
                "--corners",
                text,
                "--out",
                str(out),
                "--save-frame",
                str(saved),
            ]
        )
        == 0
    )
    assert load_calibration(out).method == "manual"
    assert load_calibration(out).felt_hsv is not None  # measured in the frame given
    assert _max_error_mm(out, sim_camera) < 1.0
    assert cv2.imread(str(saved)).shape == (960, 1280, 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corners", "1,2 3,4 5,6"], "four corners"),
        (["--corners", "1,2 3,4 5,6 7;8"], "x,y"),
        (["--size", "big"], "WxH"),
        (["--marker-mm", "-5"], "positive"),
        (["--frames", "0"], "--frames"),
        (["--corners", "0,0 100,100 200,200 300,300"], "not in a line"),
        (["--corners", "1,2 3,4 5,6 nan,8"], "must be numbers"),
        (["--corners", "0,0 9000,0 9000,9000 0,9000"], "far outside"),
        (["--corners", "1012,880 262,70 1020,75 250,884"], "fold the table over"),
    ],
)
def test_bad_arguments_exit_2(
    args: list[str],
    message: str,
    frame_png: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "c.json"
    out.write_text("a good calibration")
    assert main(["calibrate", "--image", str(frame_png), "--out", str(out), *args]) == 2
    assert message in capsys.readouterr().err
    assert out.read_text() == "a good calibration"  # nothing lost


def test_check_says_whether_the_camera_moved(
    tmp_path: Path, frame_png: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    assert main(["calibrate", "--image", str(frame_png), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--check", "--image", str(frame_png), "--out", str(out)]) == 0
    assert "still calibrated" in capsys.readouterr().out
    moved = SimCamera(seed=0, turn=2.0)
    moved_png = tmp_path / "moved.png"
    cv2.imwrite(str(moved_png), moved.read().image)
    assert (
        main(["calibrate", "--check", "--image", str(moved_png), "--out", str(out), "--json"]) == 1
    )
    report = json.loads(capsys.readouterr().out)
    assert report["moved"] is True and max(report["drift_mm"].values()) > 5
    code = main(["calibrate", "--check", "--image", str(frame_png), "--out", str(tmp_path / "x")])
    assert code == 3
    assert "run 'mahjong-table calibrate'" in capsys.readouterr().err


def test_check_goes_by_the_frame_that_saw_the_most_markers(
    tmp_path: Path, frame_png: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    assert main(["calibrate", "--image", str(frame_png), "--out", str(out)]) == 0
    frames = tmp_path / "frames"
    frames.mkdir()
    image = cv2.imread(str(frame_png))
    covered = image.copy()
    for k, quad in find_markers(image).items():
        if k != 2:  # a hand over three of the markers
            x0, y0 = quad.min(axis=0).astype(int) - 10
            x1, y1 = quad.max(axis=0).astype(int) + 10
            covered[y0:y1, x0:x1] = 90
    cv2.imwrite(str(frames / "0.png"), covered)
    cv2.imwrite(str(frames / "1.png"), np.full_like(image, 90))  # then the lens covered
    argv = ["--check", "--camera", str(frames), "--frames", "3", "--out", str(out), "--json"]
    capsys.readouterr()
    assert main(["calibrate", *argv]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["drift_mm"]) == ["2"]


def test_check_without_markers_in_view_is_not_moved(
    tmp_path: Path, frame_png: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    assert main(["calibrate", "--image", str(frame_png), "--out", str(out)]) == 0
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((480, 640, 3), 90, np.uint8))
    # 1 would say the camera moved; not seeing the markers is a failure to read them
    assert main(["calibrate", "--check", "--image", str(blank), "--out", str(out)]) == 3
    assert "no markers in view" in capsys.readouterr().err


def test_writes_the_markers_to_print(tmp_path: Path) -> None:
    sheet = tmp_path / "markers.png"
    assert main(["calibrate", "--markers-sheet", str(sheet)]) == 0
    assert sorted(find_markers(cv2.imread(str(sheet)))) == [0, 1, 2, 3]
    # the page says its resolution: printed "at 100 %" without one, a picture comes out at
    # 72 or 96 dpi and every marker three or four times too large
    from vision.files import png_dpi

    assert png_dpi(sheet.read_bytes()) == pytest.approx(300, abs=0.1)
    assert cv2.imread(str(sheet)).shape[:2] == (3508, 2480)  # A4 at 300 dpi


@pytest.mark.parametrize("name", ["markers.jpg", "markers.tif", "markers.bmp"])
def test_the_marker_sheet_is_a_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # only a PNG carries the 300 dpi that makes "print at 100 %" the true size: the others
    # were written with 1 dpi or none, and printed several times too large
    assert main(["calibrate", "--markers-sheet", str(tmp_path / name)]) == 2
    assert "name the sheet .png" in capsys.readouterr().err
    assert not (tmp_path / name).exists()


def test_names_that_are_not_utf8_are_printed_escaped(tmp_path: Path) -> None:
    # the sheet was written, then printing its name raised UnicodeEncodeError (exit 1)
    import os

    odd = os.fsdecode(bytes(tmp_path) + b"/march\xe9.png")
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli", "calibrate", "--markers-sheet", odd],
        capture_output=True,
        env=dict(os.environ, PYTHONIOENCODING="utf-8"),
    )
    assert run.returncode == 0, run.stderr
    assert b"march\\udce9.png" in run.stdout and Path(odd).is_file()


@pytest.mark.parametrize("option", ["--markers-sheet", "--preview", "--save-frame"])
def test_a_picture_name_that_cannot_be_written_is_bad_input(
    tmp_path: Path, frame_png: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    # refused before any work, as bad input (2), not as a camera fault (3) after it
    out = tmp_path / "c.json"
    argv = [option, str(tmp_path / "p.gif"), "--image", str(frame_png), "--out", str(out)]
    assert main(["calibrate", *argv]) == 2
    assert f"{option}: cannot write a picture as 'p.gif'" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "p.gif").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--markers-sheet", "{tmp}/a-file/sheet.png"], "cannot write"),
        (["--markers-sheet", "{tmp}/big.png", "--marker-mm", "120", "--marker-inset-mm", "70"],
         "cannot be printed four to an A4 page"),
        (["--markers-sheet", "{tmp}/tiny.png", "--marker-mm", "0.3"],
         "cannot be printed four to an A4 page"),
        (["--image", "{frame}", "--save-frame", "{tmp}/a-file/f.png", "--out", "{tmp}/c.json"],
         "cannot write"),
    ],
)  # fmt: skip
def test_what_cannot_be_written_or_drawn_is_a_clear_failure(
    tmp_path: Path,
    frame_png: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    (tmp_path / "a-file").write_text("a file where a folder would go")
    argv = [a.format(tmp=tmp_path, frame=frame_png) for a in args]
    assert main(["calibrate", *argv]) == 3
    assert message in capsys.readouterr().err


def test_listed_in_the_help_and_run_by_the_entry_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stderr == ""
    # listed with what it does (the summaries are wrapped)
    assert " calibrate measure the table in the overhead camera's view " in " ".join(
        done.stdout.split()
    )
    # and the name listed is the command that runs: a picture that is not there is a
    # hardware/I-O failure in one line naming it, and no calibration is written
    missing, out = tmp_path / "nope.png", tmp_path / "c.json"
    assert main(["calibrate", "--image", str(missing), "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"mahjong-table calibrate: image {missing} does not exist\n"
    assert not out.exists()


def test_markers_measuring_a_little_off_are_pointed_out(
    tmp_path: Path, frame_png: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c.json"
    assert main(["calibrate", "--image", str(frame_png), "--out", str(out)]) == 0
    assert "note:" not in capsys.readouterr().err
    assert (
        main(["calibrate", "--image", str(frame_png), "--out", str(out), "--table-mm", "1000"]) == 0
    )
    assert "note: the markers measure 56 mm across, not the 50 mm given" in capsys.readouterr().err
