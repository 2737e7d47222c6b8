"""The vision benchmark (``bench.vision_bench``): its tallies, and a short run end to end on a
few held-out photos and one table frame."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from bench import vision_bench
from vision.training.dataset import LabelledPhoto


def _photo(name: str, boxes, labels) -> LabelledPhoto:
    return LabelledPhoto(
        Path(name), name, (200, 100), np.array(boxes, np.float32), np.array(labels, np.int64)
    )


def test_the_measure_is_taken_over_the_fitting_photos_at_both_ious():
    # a fitting photo read right, with a flower whose box is loose (IoU 0.44); a photo whose
    # labels do not fit, read wrong
    fits = _photo("fits.jpg", [[10, 10, 20, 20], [40, 10, 20, 20]], [3, 36])
    off = _photo("off.jpg", [[10, 10, 20, 20]], [5])
    readings = [
        ([((10, 10, 20, 20), 3, 0.9), ((40, 10, 30, 30), 36, 0.9)], fits),
        ([((10, 10, 20, 20), 6, 0.9)], off),
    ]
    got = vision_bench.measure(readings, frozenset({"fits.jpg"}))
    assert got["fitting_photos"] == 1
    fitting, everything = got["fitting"], got["all"]
    assert fitting["0.5"]["tiles"]["recall"] == 0.5 and fitting["0.3"]["tiles"]["f1"] == 1.0
    assert fitting["0.5"]["flowers"]["f1"] == 0.0 and fitting["0.3"]["flowers"]["f1"] == 1.0
    assert everything["0.3"]["tiles"]["tiles"] == 3
    assert everything["0.3"]["tiles"]["recall"] == pytest.approx(2 / 3)


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


def test_the_flag_sweep_counts_a_flower_read_as_another_as_changing_no_score():
    sweep = vision_bench.FlagSweep()
    one_flower, another_flower = vision_bench.FLOWER_LABELS[:2]
    sweep.add(0.9, 1, 1)  # right, sure
    sweep.add(0.95, one_flower, another_flower)  # wrong, sure, but one 花 either way
    sweep.add(0.7, 2, 3)  # wrong, fairly sure: changes a score
    sweep.add(0.5, 4, 4)  # right, unsure
    assert sweep.at(0.6) == pytest.approx(
        {"flagged": 0.25, "right_but_flagged": 0.25, "silent": 0.5, "silent_changing_score": 0.25}
    )
    assert sweep.at(0.8) == pytest.approx(
        {"flagged": 0.5, "right_but_flagged": 0.25, "silent": 0.25, "silent_changing_score": 0.0}
    )
    # the tiles found as read at one setting: right, wrong and flagged, wrong unflagged
    assert sweep.reading(0.6) == pytest.approx({"right": 0.5, "flagged": 0.0, "silent": 0.5})
    assert sweep.reading(0.8) == pytest.approx({"right": 0.5, "flagged": 0.25, "silent": 0.25})
    lines = sweep.lines([0.8], current=0.6)
    assert len(lines) == 3 and lines[1].split()[0] == "0.60" and "the model's" in lines[1]


def test_the_confidence_table_sets_the_raw_beside_the_calibrated():
    table = vision_bench.ConfidenceTable()
    # (raw, reported, label, truth): under-confident raw reads, sharpened by the calibration;
    # the last, a tile the finder alone called face down, has the finder's share as both
    for raw, shown, label, truth in [
        (0.55, 0.75, 1, 1),
        (0.58, 0.78, 2, 2),
        (0.65, 0.85, 3, 3),
        (0.62, 0.81, 4, 5),
        (0.9, 0.9, vision_bench.BACK, 6),
    ]:
        table.add(raw, shown, label, truth)
    figures = table.figures()
    assert figures["reads"] == 5 and figures["finder_backs"] == 1
    raw_bins = figures["raw"]["bins"]
    assert [(b["low"], b["reads"]) for b in raw_bins] == [(0.5, 2), (0.6, 2), (0.9, 1)]
    assert raw_bins[0]["accuracy"] == 1.0 and raw_bins[1]["accuracy"] == 0.5
    # the reads' gaps, bin by bin, weighted by their share
    assert figures["raw"]["ece"] == pytest.approx((2 * 0.435 + 2 * 0.135 + 0.9) / 5)
    assert figures["calibrated"]["ece"] < figures["raw"]["ece"]
    lines = table.lines()
    assert "raw: reads" in lines[0] and "calibrated: reads" in lines[0]
    assert [line.split()[0] for line in lines[1:-1]] == ["0.50-0.60", "0.60-0.70", "0.70-0.80",
                                                         "0.80-0.90", "0.90-0.95"]  # fmt: skip
    assert lines[-1].endswith(f"raw {figures['raw']['ece']:.4f}, calibrated "
                              f"{figures['calibrated']['ece']:.4f}")  # fmt: skip


def test_each_flower_is_counted_plainly_and_as_any_flower():
    one, two, three = vision_bench.FLOWER_LABELS[:3]
    flowers = vision_bench.FlowerCounts()
    boxes = np.array([[0, 0, 30, 40], [40, 0, 30, 40], [80, 0, 30, 40]], np.float32)
    truth = np.array([one, two, 4])
    # the first flower read right, the second read as the first, the 5m read as the third,
    # and the third read again outside the labelled area (not counted)
    preds = [
        ((0, 0, 30, 40), one, 0.9),
        ((40, 0, 30, 40), one, 0.8),
        ((80, 0, 30, 40), three, 0.7),
        ((200, 0, 30, 40), three, 0.6),
    ]
    any_flower = [(b, vision_bench.as_any_flower(k), c) for b, k, c in preds]
    pairs = vision_bench.match(
        any_flower, boxes, np.array([vision_bench.as_any_flower(int(k)) for k in truth])
    )
    flowers.add(preds, truth, pairs, silent=[False, False, False, True])
    assert flowers.figures(one) == pytest.approx(
        {"precision": 1.0, "recall": 1.0, "f1": 1.0, "read_as_another_flower": 0}
    )
    # the second flower was found, read as another flower: right as the score counts it
    assert flowers.figures(two)["recall"] == 1.0
    assert flowers.figures(two)["read_as_another_flower"] == 1
    assert flowers.figures(three) == pytest.approx(
        {"precision": 0.0, "recall": 0.0, "f1": 0.0, "read_as_another_flower": 0}
    )


def test_a_short_run_prints_and_writes_its_figures(shared_data, tmp_path, capsys):
    out = tmp_path / "figures.json"
    argv = ["--data", str(shared_data), "--limit", "3", "--frames", "1", "--repeat", "1",
            "--rounds", "1", "--table-frames", "1", "--no-peer", "--json", str(out),
            "--unseen-tables", "1", "--enrol-sources", "1",
            "--classifier-weights", "stored"]  # fmt: skip
    assert vision_bench.main(argv) == 0
    printed = capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert figures["photos"] == 3
    # the measure first, over the photos both audits call fitting, against its targets
    assert figures["measure"]["targets"] == {"tiles": 0.95, "flowers": 0.90}
    assert set(figures["measure"]["all"]) == {"0.5", "0.3"}
    assert printed.index("the measure:") < printed.index("accuracy on held-out")
    # sets never seen, before and after enrolment, in the same run
    unseen = figures["unseen_set"]
    if importlib.util.find_spec("resvg_py") is not None:  # the train extra draws the art
        assert unseen["tables"] == 1 and unseen["after"] is not None
    else:  # without it, said, and the rest of the run stands
        assert "resvg-py" in unseen["not_read"]
    assert set(figures["enrolment"]) == {"trained head", "enrolled head"}
    # the weights as asked, said beside the latency they explain
    assert figures["classifier_weights"] == "as stored"
    assert "classifier weights as stored" in printed
    # without a peer run there are no peer figures to mistake for the peer's
    assert not any(name.startswith("peer") for name in figures["accuracy"])
    assert figures["latency_ms"]["frame"] > 0 and figures["memory_mb"]["peak"] > 0
    # the flag sweep includes the model's own setting, where it agrees with the plain count
    at_model = figures["flagging_by_min_confidence"]["0.6"]
    assert at_model["silent"] == pytest.approx(figures["reading_found"]["silent"])
    assert "the same tiles flagged at other settings" in printed
    # how far the confidence can be trusted, raw and as reported, on the same reads as the
    # flag sweep; and each flower
    trust = figures["confidence_calibration"]
    assert trust["temperature"] == vision_bench.TileRecognizer().temperature
    assert trust["reads"] == sum(b["reads"] for b in trust["calibrated"]["bins"])
    assert 0 <= trust["calibrated"]["ece"] <= 1 and "expected calibration error" in printed
    assert list(figures["flowers_by_kind"]) == ["1f", "2f", "3f", "4f", "5f", "6f", "7f", "8f"]
    assert all("any_flower" in f for f in figures["flowers_by_kind"].values())
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


def test_the_comparison_with_the_peer_holds_both_sides_to_one_rule():
    # a 5m and a flower tile; both find both, we read the flower right, the peer (which has
    # no flowers) calls it 白: on the flower tile neither side is counted
    boxes = np.array([[0, 0, 30, 40], [40, 0, 30, 40]], np.float32)
    labels = np.array([4, 34])
    ours = [((0, 0, 30, 40), 4, 0.9), ((40, 0, 30, 40), 34, 0.9), ((80, 0, 30, 40), 42, 0.9)]
    peer = [((0, 0, 30, 40), 4, 0.9), ((41, 0, 30, 40), 31, 0.9)]
    results = []
    for preds in (ours, peer):
        kept, tb, tl = vision_bench.for_the_peer(preds, boxes, labels)
        tally = vision_bench.Tally("x", set(range(42)))
        tally.add(kept, tl, vision_bench.match(kept, tb, tl))
        results.append(tally.figures())
    assert (
        results[0]
        == results[1]
        == pytest.approx({"precision": 1.0, "recall": 1.0, "f1": 1.0, "tiles": 1})
    )
    # ours misreading a playing tile as a flower is a false find, as the peer's misreads are
    kept, tb, tl = vision_bench.for_the_peer([((0, 0, 30, 40), 35, 0.9)], boxes, labels)
    tally = vision_bench.Tally("x", set(range(42)))
    tally.add(kept, tl, vision_bench.match(kept, tb, tl))
    assert (tally.tp, tally.fp, tally.fn) == (0, 1, 1)


def test_the_peer_runs_as_ours_does(monkeypatch):
    # the peer's module stands in here (the bench extra is not part of the test install):
    # what matters is the session configure_peer gives it
    import sys
    import threading
    import types

    from vision.recognizer import DEFAULT_MODEL_DIR

    stand_in = types.ModuleType("mahjong_detector.predict")
    stand_in.threadlocal = threading.local()  # type: ignore[attr-defined]
    stand_in.model_path = DEFAULT_MODEL_DIR / "finder.onnx"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mahjong_detector", types.ModuleType("mahjong_detector"))
    monkeypatch.setitem(sys.modules, "mahjong_detector.predict", stand_in)
    vision_bench.configure_peer(threads=2)
    options = stand_in.threadlocal.session.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--table-frames", "-1"], "--table-frames must be 0"),
        (["--unseen-tables", "-1"], "--unseen-tables must be 0"),
        (["--enrol-sources", "-1"], "--enrol-sources must be 0"),
        (["--json", "/no/such/folder/v.json"], "cannot write /no/such/folder/v.json"),
    ],
)
def test_settings_that_would_fail_at_the_end_are_refused_at_the_start(argv, said, capsys):
    with pytest.raises(SystemExit) as stop:
        vision_bench.main(argv)
    assert stop.value.code == 2 and said in capsys.readouterr().err


def test_a_folder_without_held_out_photos_is_a_clear_failure(tmp_path, capsys):
    from vision.training.dataset import split_of

    source = next(f"src{k}" for k in range(1000) if split_of(f"src{k}") == "train")
    (tmp_path / "real-photos" / "images").mkdir(parents=True)
    (tmp_path / "real-photos" / "labels").mkdir()
    import cv2

    cv2.imwrite(str(tmp_path / "real-photos" / "images" / f"{source}.jpg"), np.zeros((64, 64, 3)))
    (tmp_path / "real-photos" / "labels" / f"{source}.txt").write_text("")
    out = tmp_path / "v.json"
    assert vision_bench.main(["--data", str(tmp_path), "--no-peer", "--json", str(out)]) == 2
    assert "no held-out photos" in capsys.readouterr().err
    assert not out.exists()  # a run that fails leaves no empty file
