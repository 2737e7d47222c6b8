"""The unseen-set benchmark (``bench.unseen_set_bench``): its tables, its figures, and a short
run end to end on the riichi art, enrolment included."""

import json

import cv2
import numpy as np
import pytest

from bench import unseen_set_bench as bench
from vision.labels import BACK


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("width", list(bench.TILE_WIDTHS))
def test_a_table_lays_four_hands_and_the_middle_apart_inside_the_frame(seed, width):
    labels = [k % 34 for k in range(4 * bench.HAND + bench.MIDDLE[0] * bench.MIDDLE[1])]
    tiles = bench.table_tiles(labels, width, np.random.default_rng(seed))
    assert [t.label for t in tiles] == labels
    corners = np.array([t.corners() for t in tiles])
    assert corners.min() >= 0
    assert (corners[..., 0].max(), corners[..., 1].max()) <= bench.FRAME
    # no two tiles lie on one another, askew rows included
    quads = [t.corners().astype(np.float32) for t in tiles]
    for i in range(len(quads)):
        for j in range(i + 1, len(quads)):
            shared, _ = cv2.intersectConvexConvex(quads[i], quads[j])
            assert shared < 1.0, (i, j)
    # each seat's hand turned to its seat
    angles = [round(t.angle / 90) % 4 for t in tiles[: 4 * bench.HAND : bench.HAND]]
    assert angles == [0, 3, 2, 1]


def test_the_figures_count_finds_reads_and_the_classifier_alone():
    reading = bench.Reading(
        truth=np.array([0, 0, 5, BACK]),
        found=np.array([True, True, False, True]),
        read=np.array([0, 1, -1, BACK]),
        asked=np.array([False, True, False, True]),
        at_box=np.array([0, 0, 5, 0]),
        false_finds=3,
    )
    f = reading.figures()
    assert f["tiles"] == 4 and f["found"] == 0.75 and f["false_finds"] == 3
    assert f["top1_found"] == pytest.approx(2 / 3)  # the 5m not found is not read
    # the one wrong read is asked about; of the two right ones, the back is
    assert f["wrong_asked"] == 1.0 and f["right_asked"] == 0.5
    assert f["top1_at_true_boxes"] == 0.75
    assert f["by_kind"] == {"1m": 0.5, "6m": 0.0, "back": 1.0}


def test_the_tables_lay_every_kind_of_the_set_about_as_often(shared_data):
    pytest.importorskip("resvg_py", reason="the train extra (resvg-py) is not installed")
    faces = bench.riichi_art_faces(shared_data / "tile-art", 48)
    scenes = bench.tables(faces, 2, seed=3)
    laid = np.bincount([t.label for s in scenes for t in s.tiles], minlength=BACK + 1)
    kinds = laid[list(faces.labels)]
    assert kinds.min() >= 2 and kinds.max() - kinds.min() <= 3
    assert laid[34:BACK].sum() == 0  # the set prints no flowers
    again = bench.tables(faces, 2, seed=3)
    assert all(np.array_equal(a.image, b.image) for a, b in zip(scenes, again, strict=True))


def test_a_short_run_reads_the_set_then_enrols_it(shared_data, tmp_path, capsys):
    pytest.importorskip("resvg_py", reason="the train extra (resvg-py) is not installed")
    out = tmp_path / "figures.json"
    assert bench.main(["--data", str(shared_data), "--tables", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert figures["set"] == "art:fluffystuff-cc0" and figures["tables"] == 1
    before, after = figures["before"], figures["after"]
    # enrolment took the two grid photos, and reads the set better than the model before
    assert after is not None and "Each photo left out" in figures["enrol"]
    assert after["top1_found"] > before["top1_found"]
    assert after["top1_at_true_boxes"] >= 0.95
    assert "before enrolment" in printed and "after enrol, 2 photos" in printed
    assert "the table would ask before: about" in printed
    for f in (before, after):
        assert 0 <= f["wrong_asked"] <= 1 and 0 <= f["right_asked"] <= 1


def test_no_art_is_a_clear_failure(tmp_path, capsys):
    pytest.importorskip("resvg_py", reason="the train extra (resvg-py) is not installed")
    assert bench.main(["--data", str(tmp_path), "--tables", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("unseen_set_bench: cannot draw the tile art") and "Front.svg" in err


@pytest.mark.parametrize("flag", ["--tables", "--threads"])
def test_counts_below_one_are_refused(flag, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main([flag, "0"])
    assert stop.value.code == 2 and f"{flag} must be 1 or more" in capsys.readouterr().err
