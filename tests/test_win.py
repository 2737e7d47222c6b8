"""The JSON form of a win: what it accepts, and clear errors naming the field."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from controller.profiles import load_profile
from controller.rules import (
    MahjongTableError,
    MeldKind,
    Tile,
    WinType,
    is_ready,
    settle,
    win_from_json,
    wins_from_json,
)

# the example the README and docs/scoring.md show
GOOD = json.loads((Path(__file__).parent.parent / "examples" / "win.json").read_text("utf-8"))


def with_(**changes):
    d = copy.deepcopy(GOOD)
    for k, v in changes.items():
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return d


def test_reads_every_field():
    w = win_from_json(GOOD)
    assert w.winner == 0 and w.how is WinType.DISCARD and w.discarder == 3
    assert w.hand.winning_tile is Tile.RED and w.flowers == 2
    assert [m.kind for m in w.hand.melds] == [MeldKind.PUNG, MeldKind.CONCEALED_KONG]
    assert w.dice == (4, 4) and w.bound_pairs == ((0, 2),) and w.discarder_ready is False


def test_flowers_by_name():
    w = win_from_json(with_(flowers=["春", "梅", "8f"]))
    assert w.flowers == 3 and w.hand.flowers == (Tile.SPRING, Tile.PLUM, Tile.CHRYSANTHEMUM)
    assert win_from_json(with_(flowers="春夏")).flowers == 2


def test_added_kong_forms():
    a = win_from_json(
        with_(
            melds=[{"kind": "kong", "tiles": "EEEE", "from": 1, "added": True}],
            concealed="123m 456m 789m C",
        )
    )
    b = win_from_json(
        with_(
            melds=[{"kind": "added_kong", "tiles": "EEEE", "from": 1}], concealed="123m 456m 789m C"
        )
    )
    assert a.hand == b.hand and a.hand.melds[0].kind is MeldKind.ADDED_KONG


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"winner": None}, "winner"),
        ({"winner": 4}, "winner"),
        ({"winner": True}, "winner"),
        ({"win": None}, "win"),
        ({"win": {"type": "tsumo"}}, "win.type"),
        ({"win": {"type": "discard"}}, "win.from"),
        ({"win": {"type": "discard", "from": 0}}, "win.from"),
        ({"win": {"type": "self_draw", "from": 1}}, "win.from"),
        ({"win": {"type": "discard", "from": 3, "by": 1}}, "win.by"),
        ({"concealed": "123m 456m X"}, "concealed"),
        ({"concealed": "123m 456m 7m C"}, "concealed"),  # wrong tile count
        ({"concealed": "123m 456m C", "winning_tile": "CC"}, "winning_tile"),
        ({"winning_tile": None}, "winning_tile"),
        ({"winning_tile": "春"}, "winning_tile"),
        ({"concealed": "EE 456m C"}, "concealed"),  # a fifth E
        ({"melds": [{"kind": "pung", "tiles": "EES", "from": 1}, GOOD["melds"][1]]}, "melds[0]"),
        (
            {"melds": [{"kind": "chow", "tiles": "123p", "from": 1}, GOOD["melds"][1]]},
            "melds[0].from",
        ),
        (
            {"melds": [{"kind": "pung", "tiles": "EEE", "from": 0}, GOOD["melds"][1]]},
            "melds[0].from",
        ),
        (
            {"melds": [{"kind": "pung", "tiles": "EEE", "from": 9}, GOOD["melds"][1]]},
            "melds[0].from",
        ),
        ({"melds": [{"tiles": "EEE", "from": 1}, GOOD["melds"][1]]}, "melds[0].kind"),
        ({"melds": [{"kind": "pung", "tiles": "EEE", "concealed": True}]}, "melds[0]"),
        # neither claimed from a seat nor concealed: it was scored as an exposed kong, so a
        # 暗杠 written without "concealed" silently lost its 花 and 门清
        ({"melds": [{"kind": "kong", "tiles": "EEEE"}, GOOD["melds"][1]]}, "melds[0]"),
        ({"melds": "EEE"}, "melds"),
        ({"flowers": 9}, "flowers"),
        ({"flowers": ["春", "春"]}, "flowers"),
        ({"flowers": ["E"]}, "flowers"),
        ({"dice": [0, 3]}, "dice"),
        ({"dice": [3]}, "dice"),
        ({"huangfan": -1}, "huangfan"),
        ({"bound_pairs": [[0, 0]]}, "bound_pairs"),
        ({"bound_pairs": [0, 2]}, "bound_pairs"),
        ({"stake": 0}, "stake"),
        ({"stake": "lots"}, "stake"),
        ({"after_kong": "yes"}, "after_kong"),
        ({"discarder_ready": "no"}, "discarder_ready"),
        ({"colour": "red"}, "colour"),
        (
            {
                "discarder_ready": None,  # left out: the hand says instead
                "discarder_hand": {"concealed": "123m 456m 789m EE S", "meld": []},
            },
            "discarder_hand.meld",
        ),
        (
            {
                "after_kong": True,
                "win": {"type": "self_draw"},
                "melds": [{"kind": "pung", "tiles": "EEE", "from": 1}],
                "concealed": "123m 456m 789m C",
            },
            "after_kong",
        ),
    ],
)
def test_malformed_input_names_the_field(changes, field):
    with pytest.raises(MahjongTableError) as err:
        win_from_json(with_(**changes))
    assert err.value.field == field, str(err.value)


def test_a_win_built_in_code_is_checked_like_one_read_from_json():
    from controller.rules import Hand, HandError, Meld, Win, WinInputError

    hand = Hand.parse("123m 456m 789m EEE 5p +5p")
    # the kind given as text is the kind itself, not a kind the scorer cannot tell
    assert Win(winner=0, hand=hand, how="self_draw").how is WinType.SELF_DRAW
    bad = [
        ({"how": "stolen"}, "win.type"),
        ({"how": "self_draw", "flowers": "2"}, "flowers"),
        ({"how": "self_draw", "dice": 5}, "dice"),
        ({"how": "self_draw", "bound_pairs": (5,)}, "bound_pairs"),
        ({"how": "self_draw", "stake": "x"}, "stake"),
        ({"how": "self_draw", "first_turn": True}, "dealer"),  # 天胡 or 地胡 needs the dealer
    ]
    for fields, field in bad:
        with pytest.raises(WinInputError) as err:
            Win(winner=0, hand=hand, **fields)
        assert err.value.field == field
    with pytest.raises(HandError, match="not a tile"):
        Hand(concealed=(99,))
    with pytest.raises(HandError, match="not a meld"):
        Meld("foo", (1, 1, 1), None)


def test_eight_flowers_needs_no_hand():
    w = win_from_json({"winner": 2, "flowers": 8, "win": {"type": "eight_flowers"}})
    assert w.how is WinType.EIGHT_FLOWERS and w.hand.concealed == ()


def test_a_kong_in_the_discarders_hand_needs_no_source():
    # only whether the discarder was ready is read from it: a kong's kind does not matter
    shanghai = load_profile("shanghai")
    hand = {"concealed": "EEE SSS 11m 2p 3s", "melds": [{"kind": "kong", "tiles": "NNNN"}]}
    data = with_(discarder_ready=None, discarder_hand=hand)
    win = win_from_json(data, ready_check=lambda h: is_ready(h, shanghai))
    assert win.discarder_ready is False


def test_discarder_hand_decides_readiness():
    shanghai = load_profile("shanghai")
    ready = with_(discarder_ready=None, discarder_hand={"concealed": "EEE SSS 111m 222p 3s"})
    unready = with_(discarder_ready=None, discarder_hand={"concealed": "123m 456p 789s EEE N"})
    check = lambda h: is_ready(h, shanghai)  # noqa: E731
    assert win_from_json(ready, ready_check=check).discarder_ready is True
    assert win_from_json(unready, ready_check=check).discarder_ready is False
    with pytest.raises(MahjongTableError) as err:
        win_from_json(with_(discarder_hand={"concealed": "EEE"}), ready_check=check)
    assert err.value.field == "discarder_hand"
    with pytest.raises(MahjongTableError) as err:
        win_from_json(
            with_(discarder_ready=None, discarder_hand={"concealed": "EEE"}), ready_check=check
        )
    assert err.value.field == "discarder_hand.concealed"


def test_a_discarder_hand_that_cannot_be_judged_is_refused():
    hand = {"concealed": "EEE SSS 111m 222p 3s"}
    with pytest.raises(MahjongTableError, match="an object like") as err:
        win_from_json(with_(discarder_ready=None, discarder_hand="EEE SSS"))
    assert err.value.field == "discarder_hand"
    # without the profile's readiness rule there is nothing to judge the hand by
    with pytest.raises(MahjongTableError, match="cannot judge readiness") as err:
        win_from_json(with_(discarder_ready=None, discarder_hand=hand))
    assert err.value.field == "discarder_hand"


def test_several_wins():
    second = with_(winner=1, melds=[{"kind": "pung", "tiles": "EEE", "from": 0}, GOOD["melds"][1]])
    assert len(wins_from_json([GOOD, second])) == 2
    assert len(wins_from_json({"wins": [GOOD, second]})) == 2
    with pytest.raises(MahjongTableError) as err:
        wins_from_json([GOOD, with_(winner=7)])
    assert err.value.field == "wins[1].winner"
    with pytest.raises(MahjongTableError):
        wins_from_json([])


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 10)
    | st.text(max_size=8)
    | st.sampled_from(["123m", "EEE", "5p", "春", "discard", "self_draw", "kong", "pung"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from([*sorted(GOOD), "type", "from", "kind", "tiles", "concealed", "x"]),
            children,
            max_size=6,
        )
    ),
    max_leaves=20,
)


# the fields that together make the hand: one of them wrong may be reported at another
HAND_FIELDS = {"concealed", "melds", "winning_tile", "flowers"}


def read_and_settle(data: Any) -> MahjongTableError | None:
    """Read ``data`` as wins and settle them under the Shanghai rules: None when that works
    (and the settlement is four totals that add up to nothing), else the project's error,
    which names the field at fault in one printable line. The input is left as it was."""
    shanghai = load_profile("shanghai")
    before = copy.deepcopy(data)
    try:
        wins = wins_from_json(data, ready_check=lambda h: is_ready(h, shanghai))
        settlement = settle(wins, shanghai)
    except MahjongTableError as exc:
        assert data == before  # nothing read was changed on the way to refusing it
        said = str(exc)
        assert exc.field and said.startswith(f"{exc.field}: "), said
        assert said.isprintable() and len(said) > len(exc.field) + 2, said
        return exc
    assert data == before
    assert len(settlement.totals) == 4 and sum(settlement.totals) == 0, settlement.totals
    return None


@given(st.dictionaries(st.sampled_from(sorted(GOOD)), JSONISH, max_size=12))
@settings(max_examples=500, deadline=None)
def test_random_bad_input_only_raises_the_projects_errors(data):
    read_and_settle(data)


# a winner moved to the seat a meld was claimed from, or the discard came from, is refused
# at that field: the seat the two share is wrong in one of them, and the input cannot say which
WINNER_SEAT_FIELDS = {"melds", "win"}


@given(st.sampled_from(sorted(GOOD)), JSONISH)
@example("winner", 1)  # the seat the pung of E was claimed from
@example("winner", 3)  # the seat that discarded the winning tile
@settings(max_examples=500, deadline=None)
def test_one_bad_field_only_raises_the_projects_errors(key, value):
    refused = read_and_settle(with_(**{key: value}) if value is not None else GOOD)
    if refused is not None:
        # the field blamed is the one changed (or, for the hand, one of its parts; for the
        # winner, the field that names the same seat)
        assert refused.field is not None
        blamed = re.split(r"[.\[]", refused.field)[0]
        assert (
            blamed == key
            or {blamed, key} <= HAND_FIELDS
            or (key == "winner" and blamed in WINNER_SEAT_FIELDS)
        ), (key, str(refused))


@given(st.integers(0, 2**32), st.sampled_from([1, 2, Fraction(1, 2)]))
@settings(max_examples=300, deadline=None)
def test_to_json_reads_back_to_the_same_win(seed, stake):
    """A stored win (the table's event log keeps each as JSON) is the win that was scored."""
    import random

    from controller.rules.generate import random_win

    win = random_win(random.Random(seed))
    win = dataclasses.replace(win, stake=stake)
    data = win.to_json()
    assert win_from_json(json.loads(json.dumps(data))) == win


def test_to_json_leaves_defaults_out_and_keeps_seat_zero():
    win = win_from_json(
        {"winner": 1, "flowers": "春夏秋冬梅兰竹菊", "win": {"type": "eight_flowers"}, "dealer": 0}
    )
    assert win.to_json() == {
        "winner": 1,
        "concealed": "",
        "win": {"type": "eight_flowers"},
        "flowers": ["1f", "2f", "3f", "4f", "5f", "6f", "7f", "8f"],
        "dealer": 0,
    }


# -- bad input that used to be taken, or hang, or escape as a traceback ------------------------


@pytest.mark.parametrize(
    "stake",
    ["1_000", "١", "١٢", "1e3", "1e7", "1e4400", "1e100000000", 1e-4400, "1e-4400", 10_001,
     "0.00001", 10**4299, " 1", "+1", "1/3", True, [1]],
    ids=lambda v: ascii(v)[:24],
)  # fmt: skip
def test_a_stake_is_a_plain_positive_decimal_like_the_configs(stake):
    """The table config's rule (controller.rules.stake): "1_000" is not 1000, Arabic-Indic
    digits are not digits, 1e-4400 is not a stake of -0.0, and no text makes a huge Fraction
    (``"1e100000000"`` took forever)."""
    with pytest.raises(MahjongTableError) as err:
        win_from_json(with_(stake=stake))
    assert err.value.field == "stake"
    assert "at most 4 decimal places" in str(err.value)


@pytest.mark.parametrize(
    ("stake", "exact"),
    [(1, 1), ("2", 2), (0.5, Fraction(1, 2)), ("0.5", Fraction(1, 2)), ("1/2", Fraction(1, 2))],
)
def test_the_stakes_a_win_takes(stake, exact):
    assert win_from_json(with_(stake=stake)).stake == exact


def test_a_win_built_in_code_has_a_stake_in_range():
    from controller.rules import Hand, Win, WinInputError

    hand = Hand.parse("123m 456m 789m EEE 5p +5p")
    for stake in (10_001, 10**5000, -(10**5000), Fraction(-1, 2)):
        with pytest.raises(WinInputError) as err:
            Win(winner=0, hand=hand, how="self_draw", stake=stake)
        assert err.value.field == "stake" and len(str(err.value)) < 200


@pytest.mark.parametrize(
    "missed",
    [["C"] * 6, ["5p"] * 5, "CCC", ["E"] * 2],  # C: two held; E: three in the pung
)
def test_no_more_copies_of_a_tile_are_passed_on_than_exist(missed):
    with pytest.raises(MahjongTableError) as err:
        win_from_json(with_(missed_tiles=missed))
    assert err.value.field == "missed_tiles"
    assert "four of each tile" in str(err.value)


def test_tiles_passed_on_up_to_the_four_that_exist_are_taken():
    assert win_from_json(with_(missed_tiles=["5p"] * 4)).missed_tiles == (Tile.P5,) * 4
    assert win_from_json(with_(missed_tiles="CC")).missed_tiles == (Tile.RED, Tile.RED)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"a\nb": 1}, "'a\\nb'"),
        ({"\x1b[31mred": 1}, "'\\x1b[31mred'"),
        ({"win": {"type": "discard", "from": 3, "\x1b]0;x\x07": 1}}, "win.'\\x1b]0;x\\x07'"),
        (
            {"melds": [{"kind": "pung", "tiles": "EEE", "from": 1, "x\ny": 1}]},
            "melds[0].'x\\ny'",
        ),
        ({"discarder_ready": None, "discarder_hand": {"\r": 1}}, "discarder_hand.'\\r'"),
    ],
)
def test_a_field_name_is_echoed_quoted(changes, field):
    """A key holding a line break or an escape sequence cannot split the error in two or
    recolour the terminal."""
    with pytest.raises(MahjongTableError) as err:
        win_from_json(with_(**changes))
    assert err.value.field == field
    assert str(err.value).isprintable()


def test_a_value_is_echoed_quoted_and_short():
    with pytest.raises(MahjongTableError) as err:
        win_from_json(with_(after_kong="\x1b[2J" + "x" * 10_000))
    text = str(err.value)
    assert text.isprintable() and "\\x1b[2J" in text and len(text) < 200
    with pytest.raises(MahjongTableError) as err:
        win_from_json(with_(winner=10**4000))
    assert "an integer of" in str(err.value)
