from __future__ import annotations

import pytest

from controller.rules import HandError, Meld, MeldKind, Tile


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
