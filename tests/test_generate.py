from __future__ import annotations

import random

from controller.rules import Tile, settle
from controller.rules.generate import permute_suits, random_sets, random_win


def test_random_sets_respect_the_shape():
    rng = random.Random(3)
    for _ in range(200):
        drawn = random_sets(rng, "qingyise")
        if drawn is None:
            continue
        sets, pair = drawn
        suits = {t // 9 for _, t in sets} | {pair // 9}
        assert len(suits) == 1 and pair < 27


def test_random_wins_are_valid_and_reproducible(shanghai):
    a = [random_win(random.Random(5)) for _ in range(3)]
    assert a[0] == a[1] == a[2]
    rng = random.Random(11)
    assert all(settle([random_win(rng)], shanghai).valid for _ in range(500))


def test_permute_suits_moves_only_number_tiles(make_win):
    win = make_win("[111m<1] 222p 333s EEE 5p +5p")
    moved = permute_suits(win, [2, 0, 1])
    assert moved.hand.winning_tile is Tile.M5
    assert Tile.EAST in moved.hand.concealed
