"""``mahjong-table watch`` (vision/watch_cli.py): rendered frames of the simulator's camera,
written to a folder, read through the real calibration, recogniser, grouping and tracker."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from controller.cli import main
from controller.rules import Meld, Tile
from hardware_sim.camera import SimCamera
from vision.rendering.table_scene import SeatLayout, TableLayout

LAYOUT = TableLayout(
    (
        SeatLayout(flowers=(Tile.SPRING,)),
        SeatLayout(),
        SeatLayout(melds=(Meld.of("pung", "EEE", 1),)),
        SeatLayout(),
    )
)
EMPTY, LAID = 2, 7


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A folder of frames (an empty table, then seat 0's flower and seat 2's pung laid) and
    the calibration made from the first of them by ``mahjong-table calibrate``."""
    root = tmp_path_factory.mktemp("watch")
    frames = root / "frames"
    frames.mkdir()
    camera = SimCamera(seed=3)
    for i in range(EMPTY + LAID):
        if i == EMPTY:
            camera.set_layout(LAYOUT)
        cv2.imwrite(str(frames / f"{i:03d}.png"), camera.read().image)
    camera.close()
    calibration = root / "calibration.json"
    first = str(frames / "000.png")
    assert main(["calibrate", "--image", first, "--out", str(calibration)]) == 0
    return frames, calibration


def watch(table: tuple[Path, Path], *extra: str) -> int:
    frames, calibration = table
    return main(["watch", "--camera", str(frames), "--calibration", str(calibration), *extra])


def test_prints_what_settles_and_then_the_table(table, capsys) -> None:
    assert watch(table) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("watching ")
    changes = [line for line in out if line.startswith("frame ")]
    assert sorted(line.split(": ", 1)[1] for line in changes) == [
        "seat 0: flower 1f",
        "seat 2: meld [EEE<1]",
    ]
    assert out[-5] == f"the table after {EMPTY + LAID} frames (the camera's frames ran out):"
    assert out[-4:] == [
        "  seat 0: flowers 1f",
        "  seat 1: nothing laid",
        "  seat 2: melds [EEE<1]",
        "  seat 3: nothing laid",
    ]


def test_json_lines_carry_each_change_then_the_settled_table(table, capsys) -> None:
    assert watch(table, "--json") == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    *updates, end = records
    kinds = sorted((c["seat"], c["kind"]) for u in updates for c in u["changes"])
    assert kinds == [(0, "flower"), (2, "meld")]
    assert end["end"] == "the camera's frames ran out" and end["frames"] == EMPTY + LAID
    meld = end["views"][2]["melds"][0]
    assert {k: meld[k] for k in ("kind", "tiles", "from")} == Meld.of("pung", "EEE", 1).to_json()
    assert end["needs_confirmation"] is False


def test_every_frame_and_a_limit(table, capsys) -> None:
    assert watch(table, "--json", "--every-frame", "--frames", "4") == 0
    *updates, end = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [u["frame"] for u in updates] == [0, 1, 2, 3]
    # the tiles are seen from the third frame and not yet settled: the frame shows them
    assert updates[2]["reading"]["views"][2]["melds"][0]["tiles"] == "EEE"
    assert updates[2]["views"][2]["melds"] == []
    assert end["end"] == "4 frames read" and end["frames"] == 4


def test_a_bad_frame_is_reported_and_the_rest_are_read(table, tmp_path, capsys) -> None:
    frames, calibration = table
    folder = tmp_path / "frames"
    folder.mkdir()
    for path in sorted(frames.iterdir()):
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "004.png").write_bytes(b"not a picture")
    assert watch((folder, calibration)) == 0
    out, err = capsys.readouterr()
    assert "004.png" in err and err.count("mahjong-table watch:") == 1
    assert "  seat 2: melds [EEE<1]" in out.splitlines()


def test_frames_of_another_size_are_reported_once(table, tmp_path, capsys) -> None:
    frames, calibration = table
    folder = tmp_path / "small"
    folder.mkdir()
    for path in sorted(frames.iterdir()):
        small = cv2.resize(cv2.imread(str(path)), (800, 800))
        cv2.imwrite(str(folder / path.name), small)
    assert watch((folder, calibration)) == 3
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    assert "800x800" in lines[0] and f"(the same, {EMPTY + LAID - 1} more times)" in lines[1]
    assert "no frame of" in lines[2]
    assert watch((folder, calibration), "--json") == 3
    (end,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert end["frames"] == 0 and end["end"] == "the camera's frames ran out"


def test_a_missing_calibration_says_to_calibrate(table, tmp_path, capsys) -> None:
    frames, _ = table
    code = main(["watch", "--camera", str(frames), "--calibration", str(tmp_path / "no.json")])
    assert code == 3
    assert "mahjong-table calibrate" in capsys.readouterr().err


def test_a_missing_camera_or_model_is_a_hardware_failure(table, tmp_path, capsys) -> None:
    assert watch(table, "--camera", str(tmp_path / "nowhere.mp4")) == 3
    assert "nowhere.mp4" in capsys.readouterr().err
    assert watch(table, "--model", str(tmp_path / "no-model")) == 3
    assert "no-model" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--frames", "0"], "--frames"),
        (["--seconds", "-1"], "--seconds"),
        (["--seconds", "nan"], "--seconds"),
        (["--min-confidence", "1.5"], "--min-confidence"),
        (["--every-frame"], "--every-frame goes with --json"),
        (["--size", "big"], "--size"),
    ],
)
def test_bad_arguments_exit_2(table, capsys, args: list[str], says: str) -> None:
    assert watch(table, *args) == 2
    assert says in capsys.readouterr().err


def test_a_camera_that_never_comes_stops_after_its_seconds(table, capsys) -> None:
    # a device not plugged in yet is waited for, as a table waits for its camera
    _, calibration = table
    code = main(
        [
            "watch",
            "--camera",
            "/dev/mahjong-table-test-no-camera",
            "--calibration",
            str(calibration),
            "--seconds",
            "0.3",
        ]
    )
    assert code == 3
    out, err = capsys.readouterr()
    assert "no frame of" in err and "is plugged in" in err
    assert out.splitlines() == ["watching /dev/mahjong-table-test-no-camera (Ctrl-C to stop)"]


def test_ctrl_c_prints_the_table_so_far(table, capsys, monkeypatch) -> None:
    from vision.pipeline import TablePipeline

    process = TablePipeline.process
    calls = []

    def interrupted_after_the_pung_settles(self, frame):
        calls.append(frame)
        if len(calls) > EMPTY + 6:
            raise KeyboardInterrupt
        return process(self, frame)

    monkeypatch.setattr(TablePipeline, "process", interrupted_after_the_pung_settles)
    assert watch(table) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"the table after {EMPTY + 6} frames (stopped):" in out
    assert "  seat 2: melds [EEE<1]" in out


def test_frames_on_disk_that_cannot_be_read_end_at_once(table, tmp_path, capsys) -> None:
    # a folder with no pictures, or a broken video, never will give a frame: it was
    # retried every 2 s for ever, as a camera not yet plugged in is
    _, calibration = table
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = tmp_path / "broken.mp4"
    broken.write_text("not a video")
    for source, says in ((empty, "holds no images"), (broken, "cannot open")):
        code = main(["watch", "--camera", str(source), "--calibration", str(calibration)])
        assert code == 3
        assert says in capsys.readouterr().err
