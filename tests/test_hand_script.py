"""A hand laid on the simulated table step by step (hardware_sim/hand_script.py)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules import MeldKind
from hardware_sim.hand_script import ARM_FRAMES, laid_hand
from vision.rendering.table_scene import TableLayout


def _things(layout: TableLayout) -> list[tuple[int, str, int, object]]:
    out = []
    for k, seat in enumerate(layout.seats):
        out += [(k, "flower", i, f) for i, f in enumerate(seat.flowers)]
        out += [(k, "meld", i, m) for i, m in enumerate(seat.melds)]
        out += [(k, "open", i, t) for i, t in enumerate(seat.open_tiles)]
    return out


@given(st.integers(0, 2**32 - 1), st.integers(1, 8), st.booleans(), st.booleans())
@settings(max_examples=60, deadline=None)
def test_a_hand_is_laid_one_thing_at_a_time_and_nothing_moves(seed, hold, arms, walls):
    final, steps = laid_hand(np.random.default_rng(seed), hold=hold, arms=arms, walls=walls)
    assert steps[0].layout == TableLayout(walls=walls) and steps[-1].layout == final
    assert sum(1 for s in final.seats if s.open_tiles) == 1  # one winner, laid open last
    assert steps[-1].frames == 2 * hold and "hand laid open" in steps[-1].what
    laid = [s for s in steps if s.layout.arms == ()]
    at_the_end = _things(final)
    for before, after in pairwise(laid):
        old, new = _things(before.layout), _things(after.layout)
        # one thing more each time, where it will lie at the end; or a pung made a kong
        # in its place, or the winner's whole hand at once
        grown = [t for t in new if t not in old]
        if len(new) == len(old):
            ((k, kind, i, kong),) = grown
            assert kind == "meld" and kong.kind is MeldKind.ADDED_KONG
            assert before.layout.seats[k].melds[i].kind is MeldKind.PUNG
        elif grown[0][1] == "open":
            assert after is laid[-1]
        else:
            assert len(grown) == 1 and set(old) <= set(new)
        for k, kind, i, thing in new:
            if (k, kind, i, thing) not in at_the_end:  # only a pung still to be made a kong
                kong = final.seats[k].melds[i]
                assert kong.kind is MeldKind.ADDED_KONG and thing.tiles == kong.tiles[:3]
        assert after.layout.walls == walls
    reaching = [s for s in steps if s.layout.arms]
    assert len(reaching) == (len(laid) - 1 if arms else 0)
    assert all(s.frames == ARM_FRAMES for s in reaching)
    assert all(s.frames == hold for s in laid[:-1])


def test_a_bad_hold_is_refused():
    for hold in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="held 1 frame or more"):
            laid_hand(np.random.default_rng(0), hold=hold)
