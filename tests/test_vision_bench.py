"""The vision benchmark (bench/vision_bench.py): its tallies, and a short run end to end on a
few held-out photos and one table frame."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "vision_bench", Path(__file__).resolve().parent.parent / "bench" / "vision_bench.py"
)
vision_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(vision_bench)


def test_a_tally_counts_finds_false_finds_and_misses():
    tally = vision_bench.Tally("fives", {4})
    preds = [((0, 0, 9, 9), 4, 0.9), ((20, 0, 9, 9), 4, 0.9), ((40, 0, 9, 9), 4, 0.9)]
    # the first matches a labelled five, the second nothing, the third nothing but outside
    # the labelled area (not counted); a second labelled five is missed
    pairs = [(0, 0), (1, None), (2, None)]
    tally.add(preds, np.array([4, 4]), pairs, silent=[False, False, True])
    assert (tally.tp, tally.fp, tally.fn) == (1, 1, 1)
    assert tally.figures() == pytest.approx(
        {"precision": 0.5, "recall": 0.5, "f1": 0.5, "tiles": 2}
    )


def test_a_short_run_prints_and_writes_its_figures(shared_data, tmp_path, capsys):
    out = tmp_path / "figures.json"
    argv = ["--data", str(shared_data), "--limit", "3", "--frames", "1", "--repeat", "1",
            "--rounds", "1", "--table-frames", "1", "--no-peer", "--json", str(out)]  # fmt: skip
    assert vision_bench.main(argv) == 0
    printed = capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert figures["photos"] == 3
    # without a peer run there are no peer figures to mistake for the peer's
    assert not any(name.startswith("peer") for name in figures["accuracy"])
    assert figures["latency_ms"]["frame"] > 0 and figures["memory_mb"]["peak"] > 0
    # the weakest labels are labels the three photos hold or were read as, not labels with
    # no tiles at all (F1 0 by default)
    rec = vision_bench.TileRecognizer(threads=2)
    seen = set()
    for photo in vision_bench.load_photos(shared_data / "real-photos", ["held_out"])[:3]:
        seen |= {vision_bench.label_name(int(k)) for k in photo.labels}
        seen |= {d.name for d in rec.detect(photo.image())}
    weakest = printed.split("weakest labels (labelled area): ")[1].splitlines()[0]
    named = [item.rsplit(" ", 1)[0] for item in weakest.split(", ")]
    assert named and set(named) <= seen


@pytest.mark.parametrize("flag", ["--limit", "--frames", "--rounds", "--repeat"])
def test_counts_below_one_are_refused(flag, capsys):
    with pytest.raises(SystemExit) as stop:
        vision_bench.main([flag, "0"])
    assert stop.value.code == 2 and f"{flag} must be 1 or more" in capsys.readouterr().err


def test_no_data_is_a_clear_failure(tmp_path, capsys):
    assert vision_bench.main(["--data", str(tmp_path), "--no-peer"]) == 2
    assert "no photos in" in capsys.readouterr().err
