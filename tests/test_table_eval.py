"""The table-frame figures (vision/training/table_eval.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from controller.errors import VisionError
from controller.rules.melds import Meld
from controller.rules.tiles import Tile
from vision.calibration import Calibration
from vision.detection import TileDetection
from vision.melds import SeatView, TileRead, group_table
from vision.rendering.table_scene import SeatLayout, TableLayout, TableScene, random_layout
from vision.training.table_eval import TableFigures, evaluate, main, run


class FindsNothing:
    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        assert image.ndim == 3
        return []


def test_perfect_readings_score_one() -> None:
    layout = random_layout(np.random.default_rng(8), winner=True, discards=6)
    reads = [TileRead(p.label, 1.0, p.quad()) for p in TableScene().place(layout)]
    views = group_table(reads, Calibration(np.eye(3), (900, 900)))
    tally = TableFigures()
    for k in range(4):
        tally.add_seat(k, layout.seats[k], views[k])
    figures = tally.figures()
    assert figures["meld_accuracy"] == figures["meld_precision"] == 1.0
    assert figures["flower_accuracy"] == figures["open_tile_accuracy"] == 1.0
    assert figures["seat_accuracy"] == 1.0 and figures["melds_flagged"] == 0


def test_mistakes_are_counted() -> None:
    laid = SeatLayout(flowers=(Tile.PLUM, Tile.SPRING), melds=(Meld.of("pung", "EEE", 1),))
    tally = TableFigures()
    tally.add_seat(0, laid, SeatView(0, flowers=(Tile.PLUM, Tile.SUMMER)))
    tally.add_seat(1, SeatLayout(), SeatView(1))
    f = tally.figures()
    assert f["meld_accuracy"] == 0.0 and f["melds_laid"] == 1 and f["meld_precision"] == 1.0
    assert f["flower_accuracy"] == 0.5 and f["flower_precision"] == 0.5
    assert f["flower_accuracy_by_seat"] == [0.5, 1.0, 1.0, 1.0]
    assert f["seat_accuracy"] == 0.5


def test_evaluate_runs_the_real_path() -> None:
    tally = evaluate(FindsNothing(), frames=2, seed=3)
    f = tally.figures()
    assert f["frames"] == 2 and f["calibration_failures"] == 0
    assert f["melds_laid"] > 0 and f["meld_accuracy"] == 0.0 and f["meld_precision"] == 1.0
    assert f["ms_per_frame"] > 0
    assert run(FindsNothing(), frames=1)["frames"] == 1
    with pytest.raises(VisionError):
        evaluate(FindsNothing(), frames=0)


def test_an_empty_table_reads_right_with_nothing_found() -> None:
    tally = TableFigures()
    for k in range(4):
        tally.add_seat(k, TableLayout().seats[k], SeatView(k))
    assert tally.figures()["seat_accuracy"] == 1.0


def test_the_command_prints_figures_or_a_clear_error(tmp_path, capsys):
    assert main(["--frames", "1", "--seed", "3"]) == 0
    assert "meld_accuracy" in json.loads(capsys.readouterr().out)
    assert main(["--frames", "1", "--model", str(tmp_path / "none")]) == 2
    assert "no model folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["--frames", "0"])
    assert stop.value.code == 2 and "--frames must be 1 or more" in capsys.readouterr().err
