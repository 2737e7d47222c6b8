import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.rules.errors import HandError
from controller.rules.tiles import Suit, Tile, counts_of, format_tiles, parse_tiles, tile_from_code


def test_codes_and_chinese_names():
    assert Tile.M5.code == "5m" and Tile.M5.chinese == "五万"
    assert Tile.P1.code == "1p" and Tile.S9.chinese == "九条"
    assert [t.code for t in (Tile.EAST, Tile.RED, Tile.GREEN, Tile.WHITE)] == ["E", "C", "F", "P"]
    assert Tile.SPRING.code == "1f" and Tile.CHRYSANTHEMUM.chinese == "菊"
    assert Tile.GREEN.suit is Suit.DRAGON and Tile.NORTH.is_wind and Tile.P5.is_number


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "123m 456p 789s",
            [Tile.M1, Tile.M2, Tile.M3, Tile.P4, Tile.P5, Tile.P6, Tile.S7, Tile.S8, Tile.S9],
        ),
        ("E S W N", [Tile.EAST, Tile.SOUTH, Tile.WEST, Tile.NORTH]),
        ("CFP", [Tile.RED, Tile.GREEN, Tile.WHITE]),
        (
            "东南西北中发白",
            [Tile.EAST, Tile.SOUTH, Tile.WEST, Tile.NORTH, Tile.RED, Tile.GREEN, Tile.WHITE],
        ),
        ("春夏秋冬梅兰竹菊", list(Tile)[34:]),
        ("一二三万 5筒 九条", [Tile.M1, Tile.M2, Tile.M3, Tile.P5, Tile.S9]),
        ("1f 8f", [Tile.SPRING, Tile.CHRYSANTHEMUM]),
        (
            "1234567z",
            [Tile.EAST, Tile.SOUTH, Tile.WEST, Tile.NORTH, Tile.WHITE, Tile.GREEN, Tile.RED],
        ),
        ("東發", [Tile.EAST, Tile.GREEN]),
    ],
)
def test_parse(text, expected):
    assert parse_tiles(text) == expected


@pytest.mark.parametrize("bad", ["0m", "x", "123", "9f", "8z", "e", "12q"])
def test_parse_refuses_non_tiles(bad):
    with pytest.raises(HandError):
        parse_tiles(bad)


def test_tile_from_code():
    assert tile_from_code("中") is Tile.RED
    with pytest.raises(HandError):
        tile_from_code("12m")


def test_format_groups_runs():
    assert format_tiles(parse_tiles("1m2m3m E E 5p C")) == "123m EE 5p C"
    assert format_tiles([Tile.M1, Tile.EAST], chinese=True) == "一万 东"


@given(st.lists(st.sampled_from(list(Tile)), max_size=20))
def test_format_parse_round_trip(tiles):
    assert parse_tiles(format_tiles(tiles)) == tiles


def test_counts_skip_flowers():
    c = counts_of([Tile.M1, Tile.M1, Tile.SPRING])
    assert c[0] == 2 and sum(c) == 2 and len(c) == 34


@pytest.mark.parametrize(
    ("text", "said"),
    [("123m12x", "'12' at position 4 of '123m12x' have no suit after them (m, p, s, f, 万"),
     ("12", "have no suit after them (m, p, s, f, 万, 筒, 条 …), but the end"),
     ("1 2m", "but a space")],
)  # fmt: skip
def test_numbers_without_a_suit_say_where_the_suit_should_be(text, said):
    # it said "'1' at position 0 of '12x' is not a tile", pointing at the wrong character
    with pytest.raises(HandError, match=re.escape(said)):
        parse_tiles(text)
