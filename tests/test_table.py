"""Dealer rotation, the 荒番 counter, 开宝 and the dice that break the wall."""

from __future__ import annotations

import pytest

from controller.profiles import load_profile
from controller.rules import (
    HuangfanCounter,
    WinInputError,
    dice_huangfan,
    kaibao,
    next_dealer,
    wall_break,
)
from controller.rules.table import huangfan_after


def test_dealer_rotation():
    assert next_dealer(2, [], None) == 2  # a drawn hand keeps the dealer
    assert next_dealer(2, [1], 3) == 1  # the winner deals next
    assert next_dealer(2, [0, 1], 3) == 0  # nearest the discarder in turn order: 0, then 1
    assert next_dealer(2, [0, 2], 1) == 2
    assert next_dealer(0, [0, 1, 2], 3) == 0
    with pytest.raises(WinInputError):
        next_dealer(0, [1, 2], None)


def test_huangfan_sequence_of_seed_000(shanghai):
    """Hands 1, 2, 3 drawn; hand 4 is 荒番(3) and is won (doubled); hand 5 is 荒番(2)."""
    h = HuangfanCounter()
    for _ in range(3):
        h = h.after_hand(None, 0, shanghai)
    assert h.value == 3
    assert h.start(None, shanghai) > 0  # hand 4 is a 荒番 hand
    h = h.after_hand(None, 1, shanghai)
    assert h.value == 2
    assert h.player_left().value == 0


def test_huangfan_not_below_zero(shanghai):
    assert huangfan_after(0, 1, shanghai) == 0
    assert huangfan_after(1, 3, shanghai) == 0


def test_huangfan_per_winner_and_non_accumulating():
    from controller.rules import Profile

    base = load_profile("shanghai")
    per_winner = Profile.from_mapping({"huangfan": {"decrement": "per_winner"}}, base)
    assert huangfan_after(3, 2, per_winner) == 1
    assert huangfan_after(3, 2, base) == 2
    house = load_profile("house")  # 荒番 does not accumulate
    assert huangfan_after(1, 0, house) == 1
    assert huangfan_after(1, 1, house) == 0
    off = Profile.from_mapping({"huangfan": {"enabled": False}}, base)
    assert huangfan_after(0, 0, off) == 0
    assert HuangfanCounter(4).start(None, off) == 0


@pytest.mark.parametrize(
    ("dice", "added"),
    [
        ((1, 1), 2),
        ((4, 4), 2),
        ((1, 5), 1),
        ((6, 4), 1),
        ((2, 2), 1),
        ((3, 3), 1),
        ((5, 5), 1),
        ((6, 6), 1),
        ((2, 3), 0),
        ((5, 6), 0),
        ((2, 6), 0),
    ],
)
def test_dice_huangfan_of_seed_001(dice, added):
    assert dice_huangfan(dice) == added


def test_dice_huangfan_counter():
    lazi = load_profile("lazi")
    h = HuangfanCounter(0)
    assert h.start((1, 1), lazi) == 2  # the hand is 荒番 at once
    assert h.after_hand((1, 1), 1, lazi).value == 1
    assert h.after_hand((2, 3), 0, lazi).value == 1


def test_kaibao(shanghai):
    assert kaibao((1, 1), shanghai) and kaibao((4, 4), shanghai)
    assert (
        not kaibao((2, 2), shanghai) and not kaibao((1, 4), shanghai) and not kaibao(None, shanghai)
    )


def test_seed_000_dice_example():
    """2 + 5 = 7: the wall of the player opposite the roller, after 7 stacks."""
    b = wall_break(1, (2, 5))
    assert b.wall == 3 and b.stacks == 7 and b.total == 7


@pytest.mark.parametrize(
    ("total", "offset"), [(2, 1), (3, 2), (4, 3), (5, 0), (6, 1), (9, 0), (12, 3)]
)
def test_wall_break_counts_from_the_roller(total, offset):
    dice = (1, total - 1) if total <= 7 else (6, total - 6)
    for roller in range(4):
        assert wall_break(roller, dice).wall == (roller + offset) % 4


@pytest.mark.parametrize(("roller", "dice"), [(4, (1, 1)), (0, (0, 3)), (0, (7, 1)), (-1, (2, 2))])
def test_wall_break_refuses_bad_input(roller, dice):
    with pytest.raises(WinInputError):
        wall_break(roller, dice)
