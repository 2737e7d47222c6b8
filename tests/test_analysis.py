"""Hand division and waits, checked against a brute-force search."""

from __future__ import annotations

import random
from itertools import combinations_with_replacement

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules import completing_tiles, is_standard, readings
from controller.rules.analysis import is_all_pungs
from controller.rules.tiles import Tile, counts_of, parse_tiles


def brute_complete(counts: list[int]) -> bool:
    """Sets and one pair, by trying every pair and then removing sets greedily from the left
    (which is complete for a single pair choice)."""
    for p in range(34):
        if counts[p] < 2:
            continue
        c = list(counts)
        c[p] -= 2
        i = 0
        ok = True
        while i < 34:
            if c[i] == 0:
                i += 1
                continue
            if c[i] >= 3:
                c[i] -= 3
                continue
            if i < 27 and i % 9 <= 6 and c[i + 1] and c[i + 2]:
                c[i] -= 1
                c[i + 1] -= 1
                c[i + 2] -= 1
                continue
            ok = False
            break
        if ok:
            return True
    return False


def test_readings_of_the_issue_example():
    found = {tuple(r.describe()) for r in readings(counts_of(parse_tiles("111222333444p 55p")))}
    assert ("111p", "222p", "333p", "444p", "55p") in found
    assert ("123p", "123p", "123p", "444p", "55p") in found
    assert len(found) == 4


def test_nine_gates_waits_on_every_tile_of_its_suit():
    waits = completing_tiles(counts_of(parse_tiles("1112345678999m")))
    assert waits == [Tile(i) for i in range(9)]


def test_honours_any_shape_waits():
    counts = counts_of(parse_tiles("EESSWWNNCCFFP"))
    assert completing_tiles(counts) == []
    assert Tile.WHITE in completing_tiles(counts, honours_any_shape=True)


def test_all_pungs():
    assert is_all_pungs(counts_of(parse_tiles("111222333444p55p")))
    assert not is_all_pungs(counts_of(parse_tiles("123p222333444p55p")))


@given(st.integers(0, 2**32), st.sampled_from([2, 5, 8, 11, 14]))
@settings(max_examples=1000)
def test_is_standard_agrees_with_brute_force(seed, size):
    rng = random.Random(seed)
    wall = [t for t in range(34) for _ in range(4)]
    # bias towards one suit so that complete hands are common
    if rng.random() < 0.7:
        s = rng.randrange(3)
        wall = [t for t in wall if s * 9 <= t < s * 9 + 9 or t >= 27]
    tiles = rng.sample(wall, size)
    counts = counts_of(Tile(t) for t in tiles)
    assert is_standard(counts) == brute_complete(counts)
    assert bool(readings(counts)) == is_standard(counts)


def test_every_small_suit_hand():
    # all 5-tile hands of one suit: exhaustive agreement with the brute force
    for combo in combinations_with_replacement(range(9), 5):
        counts = [0] * 34
        for t in combo:
            counts[t] += 1
        if max(counts) > 4:
            continue
        assert is_standard(counts) == brute_complete(counts)


@given(st.integers(0, 2**32))
@settings(max_examples=300)
def test_reading_text_is_one_of_the_readings(seed):
    from controller.rules.analysis import reading_text
    from controller.rules.generate import random_win

    counts = random_win(random.Random(seed)).hand.concealed_counts()
    every = {tuple(sorted(r.describe())) for r in readings(counts)}
    shown = reading_text(counts)
    if not every:
        assert shown is None
        return
    assert tuple(sorted(shown)) in every
    pungs = reading_text(counts, all_pungs=True)
    if is_all_pungs(counts):
        assert pungs is not None and all(
            len(set(s)) == 1 or s.endswith(("m", "p", "s")) for s in pungs
        )
    else:
        assert pungs is None
