"""The hand notation and the checks a hand passes on construction."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules import Hand, HandError, Meld, MeldKind, Tile
from controller.rules.generate import random_win


def test_parse_a_whole_hand():
    h = Hand.parse("123m 456m 789m C [EEE<1] [FFFF] 春夏 +C")
    assert h.concealed == (*(Tile(i) for i in range(9)), Tile.RED)
    assert h.melds == (
        Meld(MeldKind.PUNG, (Tile.EAST,) * 3, 1),
        Meld(MeldKind.CONCEALED_KONG, (Tile.GREEN,) * 4),
    )
    assert h.flowers == (Tile.SPRING, Tile.SUMMER)
    assert h.winning_tile is Tile.RED


@pytest.mark.parametrize(
    ("text", "kind", "source"),
    [
        ("[123m<3]", MeldKind.CHOW, 3),
        ("[EEE<1]", MeldKind.PUNG, 1),
        ("[EEEE<2]", MeldKind.KONG, 2),
        ("[EEEE<?]", MeldKind.KONG, None),
        ("[5555p+<2]", MeldKind.ADDED_KONG, 2),
        ("[FFFF]", MeldKind.CONCEALED_KONG, None),
        ("[中中中<0]", MeldKind.PUNG, 0),
    ],
)
def test_meld_notation(text, kind, source):
    (m,) = Hand.parse(text).melds
    assert m.kind is kind and m.source == source


@pytest.mark.parametrize(
    "bad",
    [
        "11111m",  # a fifth copy
        "1111m [1m1m1m<2]",
        "[124m<3]",  # not a chow
        "[EEE<7]",  # no seat 7
        "[EE<1]",
        "123m +4m +5m",
        "123m +",
        "123m [EEE<1",
        "春春",  # each flower exists once
        "123m x",
    ],
)
def test_bad_hands_are_refused(bad):
    with pytest.raises(HandError):
        Hand.parse(bad)


def test_size_check():
    Hand.parse("123m 456m 789m C [EEE<1]").check_size(complete=False)
    with pytest.raises(HandError, match="this one holds 10"):
        Hand.parse("123m 456m 789m C [EEE<1] [FFFF]").check_size(complete=False)
    with pytest.raises(HandError, match="winning tile"):
        Hand.parse("123m 456m 789m C [EEE<1]").check_size(complete=True)


def test_concealed_means_no_claims():
    assert Hand.parse("123m [FFFF]").is_concealed
    assert not Hand.parse("123m [FFF<1]").is_concealed
    assert not Hand.parse("123m [1111p+<1]").is_concealed


@given(st.integers(0, 2**32))
@settings(max_examples=300)
def test_notation_round_trip(seed):
    hand = random_win(random.Random(seed)).hand
    assert Hand.parse(hand.notation()) == hand


def test_notation_is_readable():
    h = Hand.parse("[EEE<1] 1m 2m 3m 春 C +C")
    assert h.notation() == "123m C [EEE<1] 春 +C"
