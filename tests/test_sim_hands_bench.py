"""The simulated-hands benchmark (``bench.sim_hands_bench``): its scoring and a short run."""

from __future__ import annotations

import json

from bench import sim_hands_bench
from controller.rules import Meld, MeldKind, Tile
from vision.melds import MeldView, SeatView
from vision.rendering.table_scene import TableLayout

LAYOUT = TableLayout().with_seat(1, flowers=(Tile(34),), melds=(Meld.of("pung", "EEE", 2),))


def view(flowers=(), melds=(), seat=1) -> SeatView:
    shown = tuple(MeldView(m.kind, m.tiles, m.source, 0.9, False, (0.0, 0.0)) for m in melds)
    return SeatView(seat, flowers=tuple(flowers), melds=shown)


def test_a_seat_is_right_only_when_it_holds_exactly_its_layout():
    pung = Meld.of("pung", "EEE", 2)
    assert sim_hands_bench.seat_right(view((Tile(34),), (pung,)), LAYOUT)
    assert not sim_hands_bench.seat_right(view((Tile(35),), (pung,)), LAYOUT)  # another flower
    assert not sim_hands_bench.seat_right(view((Tile(34),), (Meld.of("pung", "EEE", 3),)), LAYOUT)
    assert not sim_hands_bench.seat_right(view((Tile(34),)), LAYOUT)  # the pung not read
    kong = MeldView(MeldKind.PUNG, (Tile.EAST,) * 2, 2, 0.4, True, (0.0, 0.0))  # no meld
    assert not sim_hands_bench.seat_right(SeatView(1, flowers=(Tile(34),), melds=(kong,)), LAYOUT)
    assert sim_hands_bench.seat_right(view(seat=0), LAYOUT)


def test_the_summary_counts_what_was_caught():
    hands = [
        {"frames": 10, "checkpoints": 4, "exact": 3, "caught": 1, "end_exact": False,
         "end_flagged": True, "changes": 5, "flagged_changes": 1, "ms_per_frame": 20.0},
        {"frames": 10, "checkpoints": 4, "exact": 2, "caught": 1, "end_exact": True,
         "end_flagged": True, "changes": 5, "flagged_changes": 0, "ms_per_frame": 30.0},
    ]  # fmt: skip
    s = sim_hands_bench.summary(hands)
    assert s["checkpoints_exact"] == 5 / 8 and s["checkpoints_wrong_caught"] == 2 / 3
    assert (s["ends_exact"], s["ends_wrong_flagged"], s["ends_wrong_unflagged"]) == (1, 1, 0)
    assert s["ends_right_flagged"] == 1 and s["ms_per_frame"] == 25.0


def test_a_short_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert (
        sim_hands_bench.main(["--hands", "1", "--first", "3", "--hold", "5", "--json", str(out)])
        == 0
    )
    figures = json.loads(out.read_text())
    (hand,) = figures["hands"]
    # seed 3's hand is read exactly at every step with the committed model
    assert hand["exact"] == hand["checkpoints"] > 0 and hand["end_exact"]
    assert hand["frames"] == 5 + 2 * (hand["checkpoints"]) + 5 * hand["checkpoints"] + 5
    assert "hands ending exact 1/1" in capsys.readouterr().out
