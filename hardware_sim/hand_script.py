"""A hand laid on the simulated table, step by step, as the overhead camera would see it.

:func:`laid_hand` draws the table as a hand ends
(:func:`vision.rendering.table_scene.random_layout`, with a winner) and lays it out from the
empty table the way players do: flowers and melds one at a time, seat after seat in a random
order, an added kong first as the pung it grew from, each laid by an arm reaching in from
its seat, and at the end the winner's hand laid open. Each :class:`Step` is what lies on the
table for some frames. The table controller's simulator will lay hands from real play; this
script is for bringing up a camera and the vision pipeline without one (``mahjong-table
sim-camera``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from controller.rules.melds import SEATS, Meld, MeldKind
from controller.rules.tiles import Tile
from vision.rendering.table_scene import ArmOver, SeatLayout, TableLayout, random_layout

ARM_FRAMES = 2
"""Frames an arm is seen reaching in before what it lays shows."""


@dataclass(frozen=True)
class Step:
    """``layout`` lies on the table (with any arm over it) for ``frames`` frames; ``what``
    says what changed (``"seat 2: meld [EEE<1]"``)."""

    layout: TableLayout
    frames: int
    what: str


def laid_hand(
    rng: np.random.Generator, *, hold: int = 6, arms: bool = True, walls: bool = False
) -> tuple[TableLayout, list[Step]]:
    """The hand's last layout and the steps that lay it, each change held ``hold`` frames
    (the winner's hand laid open, twice as long). ``walls`` leaves the walls standing."""
    if isinstance(hold, bool) or not isinstance(hold, int) or hold < 1:
        raise ValueError(f"each step is held 1 frame or more, not {hold!r}")
    final = random_layout(rng, winner=True, walls=walls)
    # (seat, what, index in its row, the thing): a seat's row is laid left to right
    items: list[tuple[int, str, int, Tile | Meld]] = []
    for k, seat in enumerate(final.seats):
        items += [(k, "flower", i, f) for i, f in enumerate(seat.flowers)]
        items += [(k, "meld", i, m) for i, m in enumerate(seat.melds)]
    order = [items[i] for i in rng.permutation(len(items))]
    for k in range(SEATS):  # each row is laid left to right, the rows in any interleaving
        for row in ("flower", "meld"):
            slots = [j for j, it in enumerate(order) if it[:2] == (k, row)]
            in_row = sorted((order[j] for j in slots), key=lambda it: it[2])
            for j, it in zip(slots, in_row, strict=True):
                order[j] = it
    # an added kong is a pung first, made a kong later in the hand
    upgrades = [it for it in order if it[1] == "meld" and it[3].kind is MeldKind.ADDED_KONG]
    for it in upgrades:
        at = order.index(it) + 1 + int(rng.integers(len(order) - order.index(it)))
        order.insert(at, (it[0], "kong", it[2], it[3]))

    seats = [SeatLayout() for _ in range(SEATS)]
    steps = [Step(TableLayout(walls=walls), hold, "the empty table")]

    def table() -> TableLayout:
        return TableLayout(tuple(seats), walls=walls)

    def lay(k: int, what: str, frames: int) -> None:
        if arms:
            reach = (float(rng.uniform(150.0, 750.0)), float(rng.uniform(40.0, 140.0)))
            reaching = replace(steps[-1].layout, arms=(ArmOver(k, reach),))
            steps.append(Step(reaching, ARM_FRAMES, f"seat {k} reaches in"))
        steps.append(Step(table(), frames, f"seat {k}: {what}"))

    for k, kind, _, thing in order:
        seat = seats[k]
        if kind == "flower":
            assert isinstance(thing, Tile)
            seats[k] = replace(seat, flowers=(*seat.flowers, thing))
            lay(k, f"flower {thing.code}", hold)
        elif kind == "meld":
            assert isinstance(thing, Meld)
            laid = thing
            if thing.kind is MeldKind.ADDED_KONG:
                laid = Meld(MeldKind.PUNG, thing.tiles[:3], thing.source)
            seats[k] = replace(seat, melds=(*seat.melds, laid))
            lay(k, f"meld {laid}", hold)
        else:  # the pung made a kong, where it lies
            assert isinstance(thing, Meld)
            pung = Meld(MeldKind.PUNG, thing.tiles[:3], thing.source)
            seats[k] = replace(seat, melds=tuple(thing if m == pung else m for m in seat.melds))
            lay(k, f"{pung} made {thing}", hold)
    winner = next(k for k, s in enumerate(final.seats) if s.open_tiles)
    seats[winner] = replace(seats[winner], open_tiles=final.seats[winner].open_tiles)
    hand = " ".join(t.code for t in final.seats[winner].open_tiles)
    lay(winner, f"hand laid open: {hand}", 2 * hold)
    assert table() == final
    return final, steps
