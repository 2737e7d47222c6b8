"""The tracker benchmark (``bench.tracker_bench``): its scoring, its noise, and a short run end
to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import tracker_bench
from controller.rules.melds import Meld, MeldKind
from controller.rules.tiles import Tile
from vision.melds import MeldView, SeatView, TileRead
from vision.rendering.table_scene import TableLayout, TableScene

QUAD = np.array([[0.0, 0.0], [30.0, 0.0], [30.0, 40.0], [0.0, 40.0]])
SMALL = TableLayout().with_seat(0, flowers=(Tile(34),), melds=(Meld.of("pung", "EEE", 2),))


def flower(label: int, flagged: bool = False) -> TileRead:
    return TileRead(label, 0.5 if flagged else 0.9, QUAD, flagged)


def pung(text: str, flagged: bool = False, source: int = 2) -> MeldView:
    meld = Meld.of("pung", text, source)
    return MeldView(MeldKind.PUNG, meld.tiles, source, 0.9, flagged, (15.0, 20.0))


def seat0(*, flowers: tuple[TileRead, ...] = (), melds: tuple[MeldView, ...] = ()) -> list:
    return [SeatView(0, flower_reads=flowers, melds=melds), *(SeatView(k) for k in (1, 2, 3))]


def tally(**counts: int) -> dict[str, int]:
    return {k: counts.get(k, 0) for k in tracker_bench.OUTCOMES}


def test_everything_right_and_sure_scores_right_only():
    got = tracker_bench.score(seat0(flowers=(flower(34),), melds=(pung("EEE"),)), SMALL)
    assert got == tally(right=2)


def test_a_wrong_unflagged_thing_is_silent_and_a_right_flagged_one_a_false_flag():
    # the flower read as another, sure; the pung right but flagged
    views = seat0(flowers=(flower(35),), melds=(pung("EEE", flagged=True),))
    got = tracker_bench.score(views, SMALL)
    assert got == tally(right=1, false_flag=1, wrong=1, silent=1, absent=1)


def test_a_wrong_flagged_thing_is_caught_and_a_meld_of_another_source_is_wrong():
    views = seat0(flowers=(flower(35, flagged=True),), melds=(pung("EEE", source=1),))
    got = tracker_bench.score(views, SMALL)
    assert got == tally(wrong=2, caught=1, silent=1, absent=2)


def test_a_meld_read_as_no_meld_is_wrong_and_things_count_at_their_own_seat():
    bad = MeldView(MeldKind.PUNG, (Tile(27), Tile(27), Tile(28)), 2, 0.9, False, (15.0, 20.0))
    # the right flower, but at seat 1: wrong there, and absent at seat 0
    views = [
        SeatView(0, melds=(bad,)),
        SeatView(1, flower_reads=(flower(34),)),
        SeatView(2),
        SeatView(3),
    ]
    got = tracker_bench.score(views, SMALL)
    assert got == tally(wrong=2, silent=2, absent=2)


def test_an_extra_copy_takes_the_blame_when_it_is_the_flagged_one():
    layout = TableLayout().with_seat(0, open_tiles=(Tile(0), Tile(0)))
    reads = (TileRead(0, 0.5, QUAD, True), TileRead(0, 0.9, QUAD), TileRead(0, 0.9, QUAD))
    views = [SeatView(0, open_reads=reads), *(SeatView(k) for k in (1, 2, 3))]
    got = tracker_bench.score(views, layout)
    assert got == tally(right=2, wrong=1, caught=1)


def test_the_layout_fits_the_table_and_every_truth_item_is_counted():
    placed = TableScene(seed=tracker_bench.SCENE_SEED).place(tracker_bench.LAYOUT)
    assert {p.seat for p in placed} == {0, 1, 2, 3}
    assert sum(sum(t.values()) for t in tracker_bench.truth_items(tracker_bench.LAYOUT)) == 25


def kind_group(label: int) -> int:
    """0-2 for the suits, 3 for the honours, 4 for the flowers."""
    return label // 9 if label < 27 else (3 if label < 34 else 4)


@pytest.mark.parametrize("label", range(tracker_bench.BACK))
def test_glare_reads_a_face_as_another_of_its_kind(label):
    other = tracker_bench.neighbour(label)
    assert other != label
    # a playing tile stays one of its suit (or an honour), a flower a flower
    assert kind_group(other) == kind_group(label)


def test_the_feed_makes_the_noise_it_is_asked_for():
    placed = TableScene(seed=tracker_bench.SCENE_SEED).place(tracker_bench.LAYOUT)
    truth = [p.label for p in placed]
    rng = np.random.default_rng(0)
    dips = tracker_bench.Feed(placed, tracker_bench.Scenario("all dip", dip=1.0), rng)
    reads, _ = dips.next()
    assert len(reads) == len(placed)
    assert all(r.needs_confirmation and r.confidence < tracker_bench.MIN_CONFIDENCE for r in reads)
    clean = tracker_bench.Feed(placed, tracker_bench.Scenario("clean"), rng)
    reads, _ = clean.next()
    assert [r.label for r in reads] == truth
    assert not any(r.needs_confirmation for r in reads)
    glare = tracker_bench.Feed(placed, tracker_bench.Scenario("glare", glare=1.0), rng)
    reads, _ = glare.next()
    wrong = [r for r, t in zip(reads, truth, strict=True) if r.label != t]
    assert len(wrong) == 1 and not wrong[0].needs_confirmation  # read sure as another
    missed = tracker_bench.Feed(placed, tracker_bench.Scenario("miss", miss=1.0), rng)
    assert missed.next()[0] == []


def test_a_hand_hides_part_of_a_meld_and_its_place_is_not_bare():
    placed = TableScene(seed=tracker_bench.SCENE_SEED).place(tracker_bench.LAYOUT)
    feed = tracker_bench.Feed(
        placed, tracker_bench.Scenario("hand", hand=1.0), np.random.default_rng(0)
    )
    reads, is_bare = feed.next()
    assert 0 < len(feed.hidden) < 4 and len(reads) == len(placed) - len(feed.hidden)
    assert {placed[i].role for i in feed.hidden} == {"meld"}
    hidden = next(iter(feed.hidden))
    assert not is_bare(placed[hidden].quad())
    # bare felt is bare; a tile's place, seen or not, is not
    assert is_bare(np.array([[440.0, 440.0], [470.0, 440.0], [470.0, 480.0], [440.0, 480.0]]))
    shown = next(i for i in range(len(placed)) if i not in feed.hidden)
    assert not is_bare(placed[shown].quad())


def test_a_clean_run_settles_everything_right_and_flags_nothing():
    got = tracker_bench.run_scenario(tracker_bench.SCENARIOS[0], 40, seed=1)
    assert got["frames_scored"] == 40 - tracker_bench.WARMUP
    assert got["item_frames"] == got["right"] == 25 * got["frames_scored"]
    assert got["false_flag"] == got["silent"] == got["wrong"] == got["absent"] == 0
    assert got["frames_with_false_flag"] == got["frames_with_stray_note"] == 0
    assert got["changes"] == 0 and got["settling_changes"] > 0
    assert got["settling_changes_flagged"] == 0


def test_a_run_repeats_with_its_seed():
    scenario = tracker_bench.Scenario("glare + dip", dip=0.05, glare=0.2)
    a, b = (tracker_bench.run_scenario(scenario, 40, seed=3) for _ in range(2))
    timeless = [k for k in a if not k.startswith("update_ms")]
    assert {k: a[k] for k in timeless} == {k: b[k] for k in timeless}
    assert a["false_flag"] + a["wrong"] > 0  # the noise reached the tracker


def test_main_writes_every_scenario(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert tracker_bench.main(["--frames", "15", "--seed", "2", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["frames"] == 15 and figures["seed"] == 2
    assert list(figures["scenarios"]) == [s.name for s in tracker_bench.SCENARIOS]
    for got in figures["scenarios"].values():
        assert got["frames_scored"] == 5
        assert {"false_flag_pct", "silent_pct", "caught_pct", "update_ms_mean"} <= got.keys()
    printed = capsys.readouterr().out
    assert all(f"| {s.name} |" in printed for s in tracker_bench.SCENARIOS)


def test_too_few_frames_or_an_unwritable_json_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        tracker_bench.main(["--frames", str(tracker_bench.WARMUP)])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "warm-up" in err.splitlines()[-1]
    target = tmp_path / "no" / "such.json"
    with pytest.raises(SystemExit) as exc:
        tracker_bench.main(["--json", str(target)])
    assert exc.value.code == 2  # refused as bad usage, before any scenario ran
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1].endswith(f"cannot write {target}: no such folder")
    assert not target.parent.exists()


def test_the_help_names_every_scenario(capsys):
    with pytest.raises(SystemExit) as exc:
        tracker_bench.main(["--help"])
    assert exc.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())  # help text is wrapped
    assert all(s.name in shown for s in tracker_bench.SCENARIOS)


def test_one_scenario_can_be_run_alone(tmp_path):
    out = tmp_path / "one.json"
    assert tracker_bench.main(["--frames", "12", "--scenario", "dip 1%", "--json", str(out)]) == 0
    assert list(json.loads(out.read_text())["scenarios"]) == ["dip 1%"]
