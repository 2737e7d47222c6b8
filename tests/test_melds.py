from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.rules import (
    HandError,
    MahjongTableError,
    Meld,
    MeldKind,
    Tile,
    WinInputError,
    meld_from_json,
)


def test_meld_shapes():
    assert Meld.of("chow", "312m", 3).tiles == (Tile.M1, Tile.M2, Tile.M3)
    assert Meld.of("pung", "EEE", 1).is_pung_or_kong
    kong = Meld.of("kong", "FFFF", 2)
    assert kong.is_kong and kong.kind.size == 4 and not kong.is_concealed and kong.is_claim
    hidden = Meld.of("concealed_kong", "5555p")
    assert hidden.is_concealed and not hidden.is_claim and hidden.source is None
    assert Meld.of("added_kong", "5555p", 1).notation() == "[5555p+<1]"


@pytest.mark.parametrize(
    ("kind", "tiles", "source"),
    [
        ("chow", "135m", 1),
        ("chow", "89m1p", 1),  # no wrap between suits
        ("chow", "ESW", 1),  # honours never chow
        ("pung", "EES", 1),
        ("pung", "EEEE", 1),  # a kong is not a pung plus one
        ("kong", "EEE", 1),
        ("concealed_kong", "EEEE", 1),  # nobody to claim it from
        ("pung", "EEE", 4),
        ("pung", "春春春", 1),
        ("triple", "EEE", 1),
    ],
)
def test_impossible_melds(kind, tiles, source):
    with pytest.raises(HandError):
        Meld.of(kind, tiles, source)


def test_kinds():
    assert [k.is_kong for k in MeldKind] == [False, False, True, True, True]


@st.composite
def any_meld(draw) -> Meld:
    """Any meld a hand can hold: each kind, of every tile it can be made of, from any seat
    it can have been claimed from."""
    kind = draw(st.sampled_from(list(MeldKind)))
    playing = [t for t in Tile if not t.is_flower]
    if kind is MeldKind.CHOW:
        first = draw(st.sampled_from([t for t in playing if t.is_number and t.number <= 7]))
        tiles = (first, first + 1, first + 2)
    else:
        tiles = (draw(st.sampled_from(playing)),) * kind.size
    source = None if kind is MeldKind.CONCEALED_KONG else draw(st.integers(0, 3))
    return Meld(kind, tiles, source)


@given(any_meld())
def test_a_meld_reads_back_from_its_json(meld):
    data = meld.to_json()
    assert json.loads(json.dumps(data)) == data
    assert meld_from_json(data) == meld
    assert meld_from_json(data).notation() == meld.notation()


def test_a_melds_json_is_what_a_win_gives():
    assert Meld.of("pung", "EEE", 1).to_json() == {"kind": "pung", "tiles": "EEE", "from": 1}
    assert Meld.of("chow", "312m", 3).to_json() == {"kind": "chow", "tiles": "123m", "from": 3}
    assert Meld.of("concealed_kong", "FFFF").to_json() == {
        "kind": "concealed_kong",
        "tiles": "FFFF",
    }
    assert Meld.of("added_kong", "5555p", 2).to_json()["kind"] == "added_kong"


def test_an_exposed_kong_whose_seat_is_unknown_is_refused_when_scored():
    # its JSON says nothing of a seat; scored, that would lose the kong's 花 silently
    data = Meld.of("kong", "FFFF").to_json()
    assert data == {"kind": "kong", "tiles": "FFFF"}
    with pytest.raises(WinInputError, match='needs "from"'):
        meld_from_json(data)
    assert meld_from_json(data, scored=False) == Meld.of("kong", "FFFF")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ("EEE", "meld"),
        ({"kind": "pung", "tiles": "EEE", "from": 1, "seat": 2}, "meld.seat"),
        ({"tiles": "EEE", "from": 1}, "meld.kind"),
        ({"kind": "pung", "from": 1}, "meld.tiles"),
        ({"kind": "pung", "tiles": "EES", "from": 1}, "meld"),
        ({"kind": "pung", "tiles": "EEE", "from": 4}, "meld.from"),
        ({"kind": "triple", "tiles": "EEE", "from": 1}, "meld"),
        ({"kind": "pung", "tiles": "EEE", "from": 1, 7: "x", "seat": 2}, "meld.7"),
    ],
)
def test_a_malformed_meld_names_its_field(data, field):
    with pytest.raises(MahjongTableError) as info:
        meld_from_json(data)
    assert info.value.field == field


def test_only_a_kong_is_concealed_or_added():
    with pytest.raises(WinInputError, match="not 'pung'"):
        meld_from_json({"kind": "pung", "tiles": "EEE", "from": 1, "added": True})
    with pytest.raises(WinInputError, match="not 'added_kong'"):
        meld_from_json({"kind": "added_kong", "tiles": "EEEE", "from": 1, "concealed": True})
