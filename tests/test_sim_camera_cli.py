"""``mahjong-table sim-camera`` (hardware_sim/camera_cli.py): a simulated hand's frames in a
folder, read back by ``calibrate`` and ``watch`` through the real pipeline."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from controller.cli import main
from controller.rules import meld_from_json

SEED = 3


@pytest.fixture(scope="module")
def hand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "hand"
    assert main(["sim-camera", "--out", str(out), "--seed", str(SEED), "--hold", "5"]) == 0
    return out


def test_writes_the_frames_and_the_truth(hand: Path, capsys) -> None:
    truth = json.loads((hand / "truth.json").read_text())
    frames = sorted(hand.glob("frame-*.jpg"))
    assert len(frames) == truth["frames"] and frames[0].name == "frame-0000.jpg"
    spans = [s["frames"] for s in truth["steps"]]
    assert spans[0][0] == 0 and spans[-1][1] == truth["frames"] - 1
    assert all(a[1] + 1 == b[0] for a, b in pairwise(spans))
    assert truth["steps"][0]["what"] == "the empty table"
    assert "hand laid open" in truth["steps"][-1]["what"]
    assert sum(bool(s["open_tiles"]) for s in truth["seats"]) == 1


def test_watch_reads_the_hand_as_it_was_laid(hand: Path, capsys) -> None:
    """The whole chain on the simulator: frames -> calibrate -> watch -> every seat as the
    truth says. (Seed 3 reads exactly with the committed model; a retrained model that
    misreads it should be looked at, not given another seed.)"""
    calibration = hand.parent / "calibration.json"
    first = str(hand / "frame-0000.jpg")
    assert main(["calibrate", "--image", first, "--out", str(calibration)]) == 0
    capsys.readouterr()
    code = main(["watch", "--camera", str(hand), "--calibration", str(calibration), "--json"])
    assert code == 0
    *updates, end = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    truth = json.loads((hand / "truth.json").read_text())
    assert end["frames"] == truth["frames"] and not end["needs_confirmation"]
    for seen, want in zip(end["views"], truth["seats"], strict=True):
        assert seen["flowers"] == want["flowers"]
        # as laid, the claimed tile where it lies ("213m"): the same meld to the scorer
        keys = ("kind", "tiles", "from")
        read = [meld_from_json({k: m[k] for k in keys if k in m}) for m in seen["melds"]]
        assert read == [meld_from_json(m) for m in want["melds"]]
        assert seen["open_tiles"] == want["open_tiles"]
    # each thing settled once, in the order laid
    laid = [s["what"] for s in truth["steps"] if ": " in s["what"]]
    assert len([c for u in updates for c in u["changes"]]) == len(laid)


def test_a_folder_holding_pictures_is_refused(hand: Path, tmp_path: Path, capsys) -> None:
    before = sorted(p.name for p in hand.iterdir())
    assert main(["sim-camera", "--out", str(hand)]) == 2
    assert "already holds pictures" in capsys.readouterr().err
    assert sorted(p.name for p in hand.iterdir()) == before  # nothing overwritten
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["sim-camera", "--out", str(afile)]) == 2
    assert "is a file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--hold", "0"], "--hold"),
        (["--seed", "-1"], "--seed"),
        (["--size", "9x9"], "--size"),
        (["--size", "5000x4000"], "at most 4096"),
    ],
)
def test_bad_arguments_exit_2(tmp_path: Path, capsys, args: list[str], says: str) -> None:
    assert main(["sim-camera", "--out", str(tmp_path / "x"), *args]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_png_frames_and_other_sizes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "small"
    args = ["--format", "png", "--size", "640x480", "--hold", "1", "--no-arms"]
    assert main(["sim-camera", "--out", str(out), *args]) == 0
    import cv2

    frames = sorted(out.glob("frame-*.png"))
    truth = json.loads((out / "truth.json").read_text())
    assert len(frames) == truth["frames"] and truth["size"] == [640, 480]
    assert cv2.imread(str(frames[0])).shape == (480, 640, 3)
    assert not any("reaches in" in s["what"] for s in truth["steps"])


def test_a_hand_that_cannot_be_written_whole_leaves_nothing_behind(tmp_path: Path) -> None:
    # a disk that fills half way (here a file size limit) left half a hand, which the next
    # run then refused as a folder holding pictures
    import resource
    import signal
    import subprocess
    import sys

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    def sim_camera(out: Path) -> subprocess.CompletedProcess[str]:
        args = ["--out", str(out), "--format", "png", "--hold", "1", "--no-arms"]
        return subprocess.run(
            [sys.executable, "-m", "controller.cli", "sim-camera", *args],
            capture_output=True, text=True, preexec_fn=small_files, timeout=300,
        )  # fmt: skip

    out = tmp_path / "hand"
    run = sim_camera(out)
    assert run.returncode == 3, run.stderr
    assert "File too large" in run.stderr
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    assert sim_camera(kept).returncode == 3
    assert [p.name for p in kept.iterdir()] == ["notes.txt"]  # the folder and its own file stay
