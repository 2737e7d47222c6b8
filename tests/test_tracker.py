"""The tracker: changes reported once stable, occlusion never read as removal."""

from __future__ import annotations

import itertools
from dataclasses import replace

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import VisionError
from controller.rules.melds import Meld
from controller.rules.tiles import Tile, parse_tiles
from vision.calibration import Calibration, apply
from vision.labels import BACK
from vision.melds import TileRead, group_table, merge_duplicates
from vision.rendering.table_scene import (
    PlacedOnTable,
    SeatLayout,
    TableLayout,
    TableScene,
    random_layout,
)
from vision.tracker import BareTest, ChangeKind, TableChange, TableTracker

SCENE = TableScene(seed=5)
CAL = Calibration(np.eye(3), (900, 900))
STABLE = 5


def seat_point(seat: int, u: float, v: float) -> tuple[float, float]:
    x, y = apply(CAL.geometry.seat_to_plane(seat), [(u, v)])[0]
    return float(x), float(y)


class Table:
    """Frames of a layout as the recogniser would read them (true tiles), with an optional
    hand over part of the table: tiles under it are not seen, and it is not bare felt."""

    def __init__(self, tracker: TableTracker | None = None) -> None:
        self.tracker = tracker or TableTracker(CAL.geometry, stable_frames=STABLE)
        self.changes: list[TableChange] = []

    def show(
        self,
        layout: TableLayout,
        frames: int = 1,
        *,
        hand: tuple[tuple[float, float], float] | None = None,
        relabel: dict[int, int] | None = None,
        bare_test: bool = True,
    ) -> list[TableChange]:
        placed = SCENE.place(layout)
        reads = [TileRead((relabel or {}).get(p.label, p.label), 0.97, p.quad()) for p in placed]

        def under_hand(point: np.ndarray) -> bool:
            return hand is not None and float(np.hypot(*(point - hand[0]))) < hand[1]

        visible = [r for r in reads if not under_hand(np.array(r.centre))]

        def is_bare(quad: np.ndarray) -> bool:
            c = quad.mean(axis=0)
            if under_hand(c):
                return False
            return all(np.hypot(*(c - r.quad.mean(axis=0))) > 12 for r in reads)

        out = []
        for _ in range(frames):
            views = group_table(visible, CAL)
            out += self.tracker.update(views, is_bare=is_bare if bare_test else None)
        self.changes += out
        return out

    def show_placed(
        self,
        placed: list[PlacedOnTable],
        frames: int = 1,
        *,
        hand: tuple[tuple[float, float], float] | None = None,
        relabel: dict[int, int] | None = None,
        missed: frozenset[int] = frozenset(),
    ) -> list[TableChange]:
        """Frames of tiles wherever they lie (``placed``), the tiles at indices ``missed`` not
        found, ``relabel`` misreading some, and bare felt told as the pipeline tells it: by
        how much of a place shows felt, not by where tiles' centres are."""
        reads = [
            TileRead((relabel or {}).get(i, p.label), 0.97, p.quad()) for i, p in enumerate(placed)
        ]

        def under_hand(point: tuple[float, float]) -> bool:
            return hand is not None and float(np.hypot(*np.subtract(point, hand[0]))) < hand[1]

        visible = [r for i, r in enumerate(reads) if not under_hand(r.centre) and i not in missed]
        is_bare = felt_test([p.quad() for p in placed], hand)
        out = []
        for _ in range(frames):
            out += self.tracker.update(group_table(visible, CAL), is_bare=is_bare)
        self.changes += out
        return out


def felt_test(
    tiles: list[np.ndarray], hand: tuple[tuple[float, float], float] | None = None
) -> BareTest:
    """As the pipeline's: a place is bare when 85 % of it shows felt (1 px per mm)."""
    covered = np.zeros((900, 900), np.uint8)
    for q in tiles:
        cv2.fillConvexPoly(covered, np.round(q).astype(np.int32), 1)
    if hand is not None:
        cv2.circle(covered, (round(hand[0][0]), round(hand[0][1])), round(hand[1]), 1, -1)

    def is_bare(quad: np.ndarray) -> bool:
        inside = np.zeros_like(covered)
        cv2.fillConvexPoly(inside, np.round(quad).astype(np.int32), 1)
        under = covered[inside.astype(bool)]
        return bool(under.size and 1.0 - under.mean() >= 0.85)

    return is_bare


def shifted(
    placed: list[PlacedOnTable], seat: int, du: float, dv: float, **only: object
) -> list[PlacedOnTable]:
    """The tiles with those of ``seat`` (and of the ``role`` / ``group`` given) pushed ``du``
    along its edge and ``dv`` towards the centre."""
    to_plane = CAL.geometry.seat_to_plane(seat)
    d = apply(to_plane, [(du, dv)])[0] - apply(to_plane, [(0.0, 0.0)])[0]
    return [
        replace(p, centre=(p.centre[0] + d[0], p.centre[1] + d[1]))
        if p.seat == seat and all(getattr(p, k) == v for k, v in only.items())
        else p
        for p in placed
    ]


def one_meld(seat: int, text: str, kind: str = "pung", source: int | None = 2) -> TableLayout:
    return TableLayout().with_seat(seat, melds=(Meld.of(kind, text, source),))


def test_a_removal_sooner_than_a_replacement_is_refused() -> None:
    with pytest.raises(VisionError, match="remove_frames \\(2\\) must be at least"):
        TableTracker(CAL.geometry, stable_frames=STABLE, remove_frames=2)
    # at the floor, a pung becoming a kong is still one change
    table = Table(TableTracker(CAL.geometry, stable_frames=STABLE, remove_frames=STABLE))
    table.show(one_meld(1, "EEE", source=3), 10)
    out = table.show(one_meld(1, "EEEE", kind="added_kong", source=3), 12)
    assert [c.kind for c in out] == [ChangeKind.MELD_CHANGED]


def test_changes_carry_the_frame_number_they_are_given() -> None:
    # the camera's count, which skips frames that could not be read
    tracker = TableTracker(CAL.geometry, stable_frames=2)
    views = group_table([TileRead(p.label, 0.97, p.quad()) for p in SCENE.place(
        one_meld(1, "EEE", source=3))], CAL)  # fmt: skip
    assert tracker.update(views, frame=40) == []
    (change,) = tracker.update(views, frame=43)
    assert change.frame == 43 and change.to_json()["frame"] == 43
    tracker.update(views)
    assert tracker.frame == 44


def test_a_new_meld_is_reported_once_it_is_stable() -> None:
    table = Table()
    layout = one_meld(1, "EEE", source=3)
    assert table.show(layout, STABLE - 1) == []
    (change,) = table.show(layout)
    assert change.kind is ChangeKind.MELD and change.seat == 1 and change.frame == STABLE - 1
    assert change.meld is not None and change.meld.meld == Meld.of("pung", "EEE", 3)
    assert table.show(layout, 20) == []
    assert [m.meld for m in table.tracker.view(1).melds] == [Meld.of("pung", "EEE", 3)]
    assert "seat 1: meld [EEE<3]" in change.describe()


def test_a_reading_seen_for_a_moment_is_never_reported() -> None:
    table = Table()
    table.show(one_meld(0, "5p5p5p"), 2)
    assert table.show(TableLayout(), 10) == []
    assert table.tracker.view(0).is_empty


def test_a_frame_missed_now_and_then_does_not_stop_a_change_settling() -> None:
    table = Table()
    layout = one_meld(2, "CCC", source=1)
    for _ in range(STABLE - 1):
        table.show(layout)
        table.show(TableLayout(), bare_test=False)  # a frame lost to motion blur
    assert [c.kind for c in table.show(layout)] == [ChangeKind.MELD]


def test_a_hand_over_the_table_erases_nothing() -> None:
    table = Table()
    layout = one_meld(0, "777s", source=1).with_seat(0, flowers=(Tile.PLUM,))
    table.show(layout, STABLE)
    before = table.tracker.view(0)
    assert before.melds and before.flowers == (Tile.PLUM,)
    centre = table.tracker.view(0).melds[0].centre
    # a hand resting over the meld and the flower for a long while
    assert table.show(layout, 60, hand=(np.array(centre), 120.0)) == []
    after = table.tracker.view(0)
    assert [m.key for m in after.melds] == [m.key for m in before.melds]
    assert after.flowers == before.flowers


def test_half_a_meld_under_a_hand_is_not_read_as_open_tiles() -> None:
    table = Table()
    layout = one_meld(3, "9m9m9m", source=0)
    table.show(layout, STABLE)
    meld = table.tracker.view(3).melds[0]
    rightmost = max(
        meld.reads, key=lambda r: apply(CAL.geometry.plane_to_seat(3), [r.centre])[0][0]
    )
    # the hand covers one tile: the other two read as loose tiles, frame after frame
    assert table.show(layout, 40, hand=(np.array(rightmost.centre), 18.0)) == []
    view = table.tracker.view(3)
    assert view.open_tiles == () and [m.key for m in view.melds] == [meld.key]


def test_without_a_picture_nothing_is_ever_removed() -> None:
    table = Table()
    table.show(one_meld(1, "FFF", source=2), STABLE)
    assert table.show(TableLayout(), 50, bare_test=False) == []
    assert len(table.tracker.view(1).melds) == 1


def test_a_meld_seen_gone_from_bare_table_is_removed() -> None:
    tracker = TableTracker(CAL.geometry, stable_frames=STABLE, remove_frames=8)
    table = Table(tracker)
    table.show(one_meld(1, "FFF", source=2), STABLE)
    assert table.show(TableLayout(), 7) == []
    (change,) = table.show(TableLayout())
    assert change.kind is ChangeKind.REMOVED and change.meld is not None
    assert tracker.view(1).is_empty


def test_a_pung_becoming_an_added_kong_is_one_change() -> None:
    table = Table()
    pung = one_meld(2, "3p3p3p", source=0)
    kong = TableLayout().with_seat(2, melds=(Meld.of("added_kong", "3333p", 0),))
    table.show(pung, STABLE)
    assert table.show(kong, STABLE - 1) == []
    (change,) = table.show(kong)
    assert change.kind is ChangeKind.MELD_CHANGED
    assert change.meld is not None and change.meld.meld == Meld.of("added_kong", "3333p", 0)
    assert change.previous is not None and change.previous.meld == Meld.of("pung", "333p", 0)
    assert [m.kind.value for m in table.tracker.view(2).melds] == ["added_kong"]
    assert table.show(kong, 10) == []


def test_a_stable_misreading_is_corrected() -> None:
    table = Table()
    layout = one_meld(0, "WWW", source=3)
    table.show(layout, STABLE, relabel={int(Tile.WEST): int(Tile.NORTH)})  # read as NNN
    assert table.tracker.view(0).melds[0].meld == Meld.of("pung", "NNN", 3)
    changes = table.show(layout, STABLE)
    assert [c.kind for c in changes] == [ChangeKind.MELD_CHANGED]
    assert table.tracker.view(0).melds[0].meld == Meld.of("pung", "WWW", 3)


def test_flowers_are_reported_and_corrected() -> None:
    table = Table()
    layout = TableLayout().with_seat(3, flowers=(Tile.SPRING,))
    (added,) = table.show(layout, STABLE, relabel={int(Tile.SPRING): int(Tile.SUMMER)})
    assert added.kind is ChangeKind.FLOWER and added.flower is Tile.SUMMER
    (fixed,) = table.show(layout, STABLE)
    assert fixed.kind is ChangeKind.FLOWER_CHANGED
    assert fixed.flower is Tile.SPRING and fixed.previous is Tile.SUMMER
    assert table.tracker.view(3).flowers == (Tile.SPRING,)


def test_a_hand_laid_open_settles_as_it_is_laid() -> None:
    table = Table()
    melds = (Meld.of("pung", "EEE", 1),)
    hand = parse_tiles("123m 456p 789s 55s")
    seen = []
    for n in (4, 8, 11):
        layout = TableLayout().with_seat(0, melds=melds, open_tiles=tuple(hand[:n]))
        seen += [c for c in table.show(layout, STABLE) if c.kind is ChangeKind.OPEN_TILES]
    assert [len(c.open_tiles) for c in seen] == [4, 8, 11]
    assert seen[-1].open_tiles == tuple(hand)
    view = table.tracker.view(0)
    assert view.open_tiles == tuple(hand) and view.melds[0].meld == melds[0]


def test_tiles_pushed_half_a_tile_along_settle_to_where_they_lie() -> None:
    tracker = TableTracker(CAL.geometry, stable_frames=STABLE, remove_frames=8)

    def frame(names: str, start: float) -> list[TileRead]:
        out = []
        for i, t in enumerate(parse_tiles(names)):
            x = start + i * 30.6
            quad = np.array([[x - 15, 848], [x + 15, 848], [x + 15, 888], [x - 15, 888]])
            out.append(TileRead(int(t), 0.95, quad))
        return out

    def bare(quad: np.ndarray) -> bool:
        return True  # whatever no tile is seen on is bare felt here

    for _ in range(STABLE):
        tracker.update(group_table(frame("1234m", 300), CAL), is_bare=bare)
    assert tracker.view(0).open_tiles == tuple(parse_tiles("1234m"))
    last = []
    for _ in range(8):
        last += tracker.update(group_table(frame("12345m", 285), CAL), is_bare=bare)
    assert tracker.view(0).open_tiles == tuple(parse_tiles("12345m"))
    assert last[-1].kind is ChangeKind.OPEN_TILES
    assert last[-1].open_tiles == tuple(parse_tiles("12345m"))


def test_a_meld_pushed_along_the_table_is_not_a_new_one() -> None:
    table = Table()
    meld = Meld.of("chow", "345m", 3)
    table.show(TableLayout().with_seat(0, melds=(meld,)), STABLE)
    moved = TableLayout().with_seat(0, melds=(Meld.of("pung", "NNN", 1), meld))
    changes = table.show(moved, 3 * STABLE)
    assert [c.kind for c in changes] == [ChangeKind.MELD]  # only the pung is new
    assert [m.meld for m in table.tracker.view(0).melds] == [Meld.of("pung", "NNN", 1), meld]


def test_unsure_readings_are_reported_for_confirmation() -> None:
    table = Table()
    placed = SCENE.place(one_meld(1, "2s2s2s", source=3))
    reads = [TileRead(p.label, 0.4, p.quad(), needs_confirmation=True) for p in placed]
    changes = []
    for _ in range(STABLE):
        changes += table.tracker.update(group_table(reads, CAL))
    (change,) = changes
    assert change.needs_confirmation and "please confirm" in change.describe()
    assert table.tracker.view(1).needs_confirmation
    assert change.to_json()["meld"]["needs_confirmation"] is True


def test_reset_starts_a_new_hand() -> None:
    table = Table()
    table.show(one_meld(0, "EEE", source=1), STABLE)
    table.tracker.reset()
    assert all(v.is_empty for v in table.tracker.views)
    assert [c.kind for c in table.show(one_meld(0, "EEE", source=1), STABLE)] == [ChangeKind.MELD]


def test_bad_settings_and_input_are_refused() -> None:
    with pytest.raises(VisionError):
        TableTracker(stable_frames=0)
    with pytest.raises(VisionError, match="four seat views"):
        TableTracker().update([])


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_hands_passing_never_remove_anything(layout_seed: int, motion_seed: int) -> None:
    """Any table, hands wandering over it frame after frame: the tracker reports only the
    table's true contents, never a removal, and ends with every seat exactly as laid out."""
    layout = random_layout(np.random.default_rng(layout_seed), walls=True, discards=8)
    rng = np.random.default_rng(motion_seed)
    table = Table()
    table.show(layout, STABLE)
    for _ in range(12):
        seat = int(rng.integers(4))
        where = np.array(seat_point(seat, rng.uniform(100, 800), rng.uniform(20, 180)))
        table.show(layout, int(rng.integers(1, 8)), hand=(where, float(rng.uniform(40, 140))))
    table.show(layout, STABLE)
    assert not [c for c in table.changes if c.kind is ChangeKind.REMOVED]
    assert not [c for c in table.changes if c.kind is ChangeKind.MELD_CHANGED]
    for seat, view in zip(layout.seats, table.tracker.views, strict=True):
        assert [m.meld for m in view.melds] == list(seat.melds)
        assert view.flowers == seat.flowers
        assert view.open_tiles == seat.open_tiles


def test_every_seat_layout_settles_to_itself() -> None:
    layout = TableLayout(
        (
            SeatLayout(flowers=(Tile.SPRING, Tile.PLUM), melds=(Meld.of("kong", "1111p", 2),)),
            SeatLayout(melds=(Meld.of("concealed_kong", "CCCC"), Meld.of("chow", "789s", 0))),
            SeatLayout(open_tiles=tuple(parse_tiles("11122233344455m"))),
            SeatLayout(flowers=(Tile.CHRYSANTHEMUM,)),
        )
    )
    table = Table()
    changes = table.show(layout, STABLE)
    kinds = sorted(c.kind.value for c in changes)
    assert kinds == ["flower", "flower", "flower", "meld", "meld", "meld", "open_tiles"]
    assert all(c.frame == STABLE - 1 for c in changes)
    assert table.tracker.view(2).open_tiles == tuple(parse_tiles("11122233344455m"))


@pytest.mark.parametrize(("du", "dv"), [(25, 0), (-24, 0), (0, 25), (33, 0)])
def test_a_meld_pushed_less_than_a_tile_along_settles_where_it_lies(du: float, dv: float) -> None:
    # its old place stays partly under its own tiles: the rest, bare felt, says it left
    table = Table()
    pung = one_meld(0, "3p3p3p", source=2)
    kong = TableLayout().with_seat(0, melds=(Meld.of("added_kong", "3333p", 2),))
    table.show_placed(SCENE.place(pung), STABLE)
    before = np.array(table.tracker.view(0).melds[0].centre)
    assert table.show_placed(shifted(SCENE.place(pung), 0, du, dv), 3 * STABLE) == []
    (meld,) = table.tracker.view(0).melds
    d = (
        apply(CAL.geometry.seat_to_plane(0), [(du, dv)])[0]
        - apply(CAL.geometry.seat_to_plane(0), [(0.0, 0.0)])[0]
    )
    assert np.allclose(np.array(meld.centre) - before, d, atol=1.0)
    # and it becomes an added kong where it now lies: one change, one meld
    changes = table.show_placed(shifted(SCENE.place(kong), 0, du, dv), 3 * STABLE)
    assert [c.kind for c in changes] == [ChangeKind.MELD_CHANGED]
    assert [m.meld for m in table.tracker.view(0).melds] == [Meld.of("added_kong", "3333p", 2)]


def test_flowers_and_an_open_hand_pushed_along_are_not_doubled() -> None:
    table = Table()
    flowers = TableLayout().with_seat(2, flowers=(Tile.SPRING, Tile.PLUM))
    table.show_placed(SCENE.place(flowers), STABLE)
    moved = shifted(SCENE.place(flowers), 2, 22, 0, role="flower", group=1)
    assert table.show_placed(moved, 3 * STABLE) == []
    assert table.tracker.view(2).flowers == (Tile.SPRING, Tile.PLUM)

    table = Table()
    hand = tuple(parse_tiles("123m 456p 789s 55s EEE"))
    laid = TableLayout().with_seat(3, open_tiles=hand)
    table.show_placed(SCENE.place(laid), STABLE)
    assert table.show_placed(shifted(SCENE.place(laid), 3, 0, 25), 3 * STABLE) == []
    assert table.tracker.view(3).open_tiles == hand


@pytest.mark.parametrize(("du", "dv"), [(18, 0), (30, 0), (0, 17), (0, 26)])
def test_a_pung_bumped_as_it_becomes_a_kong_is_one_change(du: float, dv: float) -> None:
    table = Table()
    table.show_placed(SCENE.place(one_meld(0, "3p3p3p", source=2)), STABLE)
    kong = TableLayout().with_seat(0, melds=(Meld.of("added_kong", "3333p", 2),))
    changes = table.show_placed(shifted(SCENE.place(kong), 0, du, dv), 4 * STABLE)
    assert [c.kind for c in changes] == [ChangeKind.MELD_CHANGED]
    assert [m.meld for m in table.tracker.view(0).melds] == [Meld.of("added_kong", "3333p", 2)]


def test_a_meld_laid_tile_by_tile_is_only_a_meld() -> None:
    # the two tiles from the hand lie alone a while before the claimed one joins them
    table = Table()
    placed = SCENE.place(one_meld(1, "7s7s7s", source=3))
    upright = [p for p in placed if not p.sideways]
    assert table.show_placed(upright, 3 * STABLE) == []
    (change,) = table.show_placed(placed, 3 * STABLE)
    assert change.kind is ChangeKind.MELD
    # a meld just laid, the claiming hand still over its sideways tile
    table = Table()
    placed = SCENE.place(one_meld(3, "9p9p9p", source=1))
    claimed = next(p for p in placed if p.sideways)
    assert table.show_placed(placed, 3 * STABLE, hand=(claimed.centre, 16.0)) == []
    (change,) = table.show_placed(placed, 3 * STABLE)
    assert change.kind is ChangeKind.MELD
    assert table.tracker.view(3).open_tiles == ()


def test_loose_tiles_lying_long_unchanged_are_said_not_lost() -> None:
    # a pung laid with no tile turned cannot be told from a meld still being laid; once it
    # has lain laying_frames unchanged it is reported as laid open, for the players to see
    table = Table()
    placed = SCENE.place(one_meld(1, "7s7s7s", source=3))
    upright = [p for p in placed if not p.sideways]
    changes = table.show_placed(upright, table.tracker.laying_frames + STABLE)
    assert [c.kind for c in changes] == [ChangeKind.OPEN_TILES]
    assert changes[0].open_tiles == tuple(parse_tiles("77s"))


def test_a_pair_laid_open_beside_four_melds_is_a_hand() -> None:
    # with four melds down no meld can be forming: two loose tiles are the hand laid open
    melds = tuple(Meld.of("pung", t, 1) for t in ("EEE", "SSS", "WWW", "NNN"))
    table = Table()
    table.show_placed(SCENE.place(TableLayout().with_seat(0, melds=melds)), STABLE)
    pair = TableLayout().with_seat(0, melds=melds, open_tiles=tuple(parse_tiles("55s")))
    (change,) = table.show_placed(SCENE.place(pair), STABLE)
    assert change.kind is ChangeKind.OPEN_TILES and change.open_tiles == tuple(parse_tiles("55s"))


def test_a_flower_pushed_along_by_a_new_one_is_not_taken_for_it() -> None:
    # 2f is laid where 5f lay, pushing 5f one tile along; 5f is missed in the first frame
    table = Table()
    table.show_placed(SCENE.place(TableLayout().with_seat(3, flowers=(Tile.PLUM,))), STABLE)
    placed = SCENE.place(TableLayout().with_seat(3, flowers=(Tile.SUMMER, Tile.PLUM)))
    pushed = frozenset(i for i, p in enumerate(placed) if p.label == Tile.PLUM)
    table.show_placed(placed, 1, missed=pushed)
    changes = table.show_placed(placed, 3 * STABLE)
    assert [(c.kind, c.flower) for c in changes] == [(ChangeKind.FLOWER, Tile.SUMMER)]
    assert table.tracker.view(3).flowers == (Tile.SUMMER, Tile.PLUM)


def test_of_two_alike_melds_the_one_pushed_is_the_one_that_moved() -> None:
    chow = Meld.of("chow", "345m", 3)
    placed = SCENE.place(TableLayout().with_seat(0, melds=(chow, chow)))
    table = Table()
    table.show_placed(placed, STABLE)
    moved = shifted(placed, 0, 40, 0, role="meld", group=1)
    left = next(i for i, p in enumerate(moved) if p.group == 0 and not p.sideways)
    # the left one misread for a frame just as the right one's new place settles
    table.show_placed(moved, STABLE - 1)
    table.show_placed(moved, 1, relabel={left: int(Tile.M9)})
    assert table.show_placed(moved, 4 * STABLE) == []
    assert [m.meld for m in table.tracker.view(0).melds] == [chow, chow]


def test_an_added_kong_read_unsteadily_is_still_one_change() -> None:
    # glare on the added tile: every other frame it reads as some other tile
    table = Table()
    table.show_placed(
        SCENE.place(TableLayout().with_seat(2, melds=(Meld.of("pung", "333p", 0),))), STABLE
    )
    placed = SCENE.place(TableLayout().with_seat(2, melds=(Meld.of("added_kong", "3333p", 0),)))
    added = len(placed) - 1
    changes = []
    for wrong in parse_tiles("1m E 9s C 7p N 5m 2s"):
        changes += table.show_placed(placed, 1)
        changes += table.show_placed(placed, 1, relabel={added: int(wrong)})
    changes += table.show_placed(placed, STABLE)
    assert [c.kind for c in changes] == [ChangeKind.MELD_CHANGED]


def test_a_stray_tiles_note_is_kept_once_it_lasts() -> None:
    # a hand laid open with its 白 read face down settled as eleven tiles and nothing to
    # confirm: the frame's "face-down tile that is not part of a kong" never reached the
    # settled view
    from vision.melds import SeatView

    note = "seat 1: a face-down tile that is not part of a kong"
    tracker = TableTracker(stable_frames=3, remove_frames=4)
    plain = tuple(SeatView(seat=k) for k in range(4))
    stray = (plain[0], SeatView(seat=1, notes=(note,), stray_notes=(note,)), *plain[2:])

    def settled() -> tuple[str, ...]:
        return tracker.views[1].notes

    for _ in range(2):
        tracker.update(stray)
        assert settled() == ()  # one frame's stray read is no reason to ask
    tracker.update(plain)  # and a miss before it settles starts it again
    for _ in range(3):
        tracker.update(stray)
    assert settled() == (note,) and tracker.views[1].needs_confirmation
    for _ in range(3):  # hidden under a hand for a while: kept
        tracker.update(plain)
    assert settled() == (note,)
    tracker.update(plain)
    assert settled() == ()
    for _ in range(3):
        tracker.update(stray)
    tracker.reset()
    assert settled() == ()


# -- doubt over frames: what settles wrong is never settled silently --------------------------


class Reads:
    """Frames of a layout with each tile's read chosen per frame, through the real grouping
    (the pipeline's ``merge_duplicates`` and ``group_table``), into a tracker; a read under
    0.6 is flagged, as the recogniser flags it. Tiles at the indices in ``hidden`` lie under
    a hand: not seen, and their places not bare."""

    def __init__(self, layout: TableLayout, **tracker: int) -> None:
        self.placed = SCENE.place(layout)
        self.tracker = TableTracker(CAL.geometry, **tracker)
        self.felt = felt_test([p.quad() for p in self.placed])
        self.hidden: set[int] = set()
        self.changes: list[TableChange] = []

    def index(self, label: int, nth: int = 0) -> int:
        return [i for i, p in enumerate(self.placed) if p.label == label][nth]

    def is_bare(self, quad: np.ndarray) -> bool:
        centre = quad.mean(axis=0)
        under_hand = any(
            np.hypot(*(centre - self.placed[i].quad().mean(axis=0))) < 20 for i in self.hidden
        )
        return not under_hand and self.felt(quad)

    def frame(
        self, reads: dict[int, tuple[int, float]] | None = None, extra: tuple[TileRead, ...] = ()
    ) -> list[TableChange]:
        out = list(extra)
        for i, p in enumerate(self.placed):
            if i in self.hidden:
                continue
            label, conf = (reads or {}).get(i, (p.label, 0.97))
            runner_up = ((label + 1) % 34, round((1 - conf) / 2, 3))
            out.append(TileRead(label, conf, p.quad(), not conf >= 0.6, (runner_up,)))
        views = group_table(merge_duplicates(out), CAL)
        changes = self.tracker.update(views, is_bare=self.is_bare)
        self.changes += changes
        return changes


def test_a_pung_read_as_its_kong_now_and_then_is_flagged_until_the_kong_settles():
    # a pung of 白 made an added kong: the added tile, a blank lying sideways against the
    # sideways blank, is found in one frame of three, so the pung is seen in the others
    # and the kong cannot settle. The settled pung stood unflagged for as long
    kong = Meld.of("added_kong", "PPPP", 0)
    table = Reads(TableLayout().with_seat(1, melds=(kong,)), stable_frames=STABLE)
    whites = [i for i, p in enumerate(table.placed) if p.label == int(Tile.WHITE)]
    pung = Meld.of("pung", "PPP", 0)

    def seen_as_pung_without(i: int) -> bool:
        probe = Reads(TableLayout().with_seat(1, melds=(kong,)), stable_frames=STABLE)
        probe.hidden = {i}
        for _ in range(STABLE):
            probe.frame()
        return [m.meld for m in probe.tracker.view(1).melds] == [pung]

    (added,) = [i for i in whites if seen_as_pung_without(i)]
    table.hidden = {added}
    for _ in range(STABLE + 1):
        table.frame()
    assert [m.meld for m in table.tracker.view(1).melds] == [pung]
    assert not table.tracker.view(1).needs_confirmation
    flagged = []
    for f in range(24):
        table.hidden = set() if f % 3 == 0 else {added}
        table.frame()
        view = table.tracker.view(1)
        flagged.append(view.needs_confirmation)
        if [m.meld for m in view.melds] == [pung] and f >= 4:
            assert view.needs_confirmation
            assert "may have become [PPPP+<0]" in " ".join(view.notes)
    assert sum(flagged) >= 18


def test_a_pung_made_a_kong_in_plain_view_settles_with_no_flag():
    kong = Meld.of("added_kong", "PPPP", 0)
    table = Table()
    table.show(TableLayout().with_seat(1, melds=(Meld.of("pung", "PPP", 0),)), STABLE + 1)
    for _ in range(STABLE + 1):
        table.show(TableLayout().with_seat(1, melds=(kong,)))
        assert not table.tracker.view(1).needs_confirmation
    assert [m.meld for m in table.tracker.view(1).melds] == [kong]
    (change,) = table.changes[1:]
    assert change.kind == ChangeKind.MELD_CHANGED and not change.needs_confirmation


def test_a_thing_read_unsure_in_most_frames_settles_flagged_though_the_last_read_sure():
    # 5f read as 6f, and a pung's tile as its own face, unsure in four frames and sure (0.65)
    # in the fifth, when they settle: the flag came from that one frame alone
    layout = TableLayout().with_seat(1, flowers=(Tile(38),), melds=(Meld.of("pung", "222s", 0),))
    table = Reads(layout, stable_frames=STABLE)
    two = int(parse_tiles("2s")[0])
    flower = table.index(38)
    # every tile of the pung: one unsure among sure ones leaves the pung sure as a whole
    tiles = [i for i, p in enumerate(table.placed) if p.label == two]

    def reads(conf: float) -> dict[int, tuple[int, float]]:
        return {flower: (39, conf), **{i: (two, conf) for i in tiles}}

    for conf in (0.55, 0.55, 0.55, 0.55, 0.65):
        changes = table.frame(reads(conf))
    by_kind = {c.kind: c for c in changes}
    assert set(by_kind) == {ChangeKind.FLOWER, ChangeKind.MELD}
    for change in by_kind.values():
        assert change.needs_confirmation and "read unsure in 4 of its last 5 frames" in change.note
        assert change.to_json()["note"] == change.note
    meld = by_kind[ChangeKind.MELD].meld
    assert meld.needs_confirmation and meld.to_json()["note"] == by_kind[ChangeKind.MELD].note
    view = table.tracker.view(1)
    assert view.flowers == (Tile(39),) and view.needs_confirmation
    assert view.flower_reads[0].needs_confirmation and view.melds[0].needs_confirmation
    # reads taking turns around the threshold keep the doubt, in every frame; it holds while
    # more than one of the last remove_frames frames was unsure, and then it is gone
    for conf in (0.65, 0.55, 0.65, 0.55, 0.65, 0.55):
        table.frame(reads(conf))
        assert table.tracker.view(1).needs_confirmation
    flagged = []
    for _ in range(table.tracker.remove_frames):
        table.frame({flower: (39, 0.9)})
        flagged.append(table.tracker.view(1).needs_confirmation)
    assert all(flagged[:5]) and not flagged[-1]


def test_one_unsure_frame_among_sure_ones_flags_nothing_once_past():
    # a hand's edge over a pung as it is laid: its first frames unsure, the rest sure; and a
    # frame of glare long after: asking the players then would be crying wolf
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "EEE", 2),)))
    east = [i for i, p in enumerate(table.placed) if p.label == int(Tile.EAST)]
    changes = []
    for conf in (0.45, 0.45, 0.45, 0.9, 0.9):
        changes += table.frame({i: (int(Tile.EAST), conf) for i in east})
    (change,) = changes
    assert change.kind == ChangeKind.MELD and not change.needs_confirmation
    for _ in range(20):
        table.frame()
    # nor in its own frame: a flag that comes and goes with one frame tells the players
    # nothing, and the pung is shown as it was last read sure
    glare = {i: (int(Tile.EAST), 0.45) for i in east}  # the whole pung unsure
    table.frame(glare)
    view = table.tracker.view(0)
    assert not view.needs_confirmation and view.notes == ()
    assert not view.melds[0].needs_confirmation and min(r.confidence for r in view.reads) > 0.6
    table.frame()
    assert not table.tracker.view(0).needs_confirmation
    # a second unsure frame soon after is doubt, flagged at once and shown as read
    table.frame(glare)
    view = table.tracker.view(0)
    assert view.needs_confirmation and view.melds[0].needs_confirmation
    assert min(r.confidence for r in view.reads) == pytest.approx(0.45)


def test_a_meld_pushed_along_does_not_put_its_neighbour_in_doubt():
    layout = TableLayout().with_seat(
        0, melds=(Meld.of("pung", "EEE", 2), Meld.of("chow", "345p", 3), Meld.of("pung", "WWW", 1))
    )
    table = Reads(layout)
    for _ in range(6):
        table.frame()
    # the three touching melds pushed 35 mm along: each new place lies on its neighbour's
    table.placed = shifted(table.placed, 0, 35.0, 0.0)
    table.felt = felt_test([p.quad() for p in table.placed])
    flagged = []
    for _ in range(30):
        assert table.frame() == []
        flagged.append(table.tracker.view(0).needs_confirmation)
    assert not any(flagged)


@pytest.mark.parametrize("truth_first", [True, False])
def test_two_sure_readings_taking_turns_leave_the_settled_one_flagged(truth_first):
    table = Reads(TableLayout().with_seat(3, flowers=(Tile(34),)), stable_frames=STABLE)
    i = table.index(34)
    settled = []
    for f in range(40):
        wrong = (f % 2 == 0) != truth_first
        settled += table.frame({i: (35 if wrong else 34, 0.9)})
    (change,) = settled  # whichever reached five first settled, once
    assert change.kind == ChangeKind.FLOWER and change.needs_confirmation
    other = "1f" if change.flower == Tile(35) else "2f"
    assert f"also read as {other} in 4 frames" in change.note
    view = table.tracker.view(3)
    assert view.needs_confirmation and f"also read as {other} in 20 frames" in view.notes[0]
    # read one way for as long as it takes to remove a thing, the doubt is settled
    for _ in range(table.tracker.remove_frames):
        table.frame({i: (int(change.flower), 0.9)})
    assert not table.tracker.view(3).needs_confirmation


def test_a_meld_misread_in_turns_is_flagged_but_a_pung_growing_into_a_kong_is_not():
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("chow", "345m", 3),)))
    five = table.index(int(parse_tiles("5m")[0]))
    for f in range(20):
        table.frame({five: (int(parse_tiles("2m")[0]), 0.9)} if f % 2 else None)
    view = table.tracker.view(0)
    assert view.needs_confirmation and "also read as" in view.melds[0].note
    pung = Reads(TableLayout().with_seat(2, melds=(Meld.of("pung", "333p", 0),)))
    for _ in range(6):
        pung.frame()
    kong = Reads(TableLayout().with_seat(2, melds=(Meld.of("added_kong", "3333p", 0),)))
    kong.tracker = pung.tracker
    changes = []
    for _ in range(12):
        changes += kong.frame()
    (change,) = changes
    assert change.kind == ChangeKind.MELD_CHANGED and not change.needs_confirmation
    assert not kong.tracker.view(2).needs_confirmation


def test_a_sure_reading_replaced_by_another_sure_reading_is_flagged():
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "WWW", 3),)))
    for _ in range(6):
        table.frame()
    west = [i for i, p in enumerate(table.placed) if p.label == int(Tile.WEST)]
    changes = []
    for _ in range(6):  # glare: read sure as NNN, fewer frames than it takes to remove a thing
        changes += table.frame({i: (int(Tile.NORTH), 0.9) for i in west})
    (change,) = changes
    assert change.kind == ChangeKind.MELD_CHANGED and change.needs_confirmation
    assert "read as [WWW<3] before" in change.note
    assert table.tracker.view(0).needs_confirmation


def test_a_stray_note_seen_in_alternate_frames_settles():
    from vision.labels import BACK

    hand = parse_tiles("123m 456p 789s P P")
    layout = TableLayout().with_seat(0, melds=(Meld.of("pung", "EEE", 1),), open_tiles=tuple(hand))
    table = Reads(layout, stable_frames=STABLE)
    white = table.index(int(Tile.WHITE))
    for f in range(40):
        table.frame({white: (BACK, 0.95)} if f % 2 == 0 else None)
    view = table.tracker.view(0)
    assert view.stray_notes and view.needs_confirmation


def test_the_settled_table_is_checked_for_more_copies_than_the_set_holds():
    # seat 0's 1f lies under a hand while seat 1's 2f is read as 1f, surely: each seat alone
    # looks right, and the table shows one flower twice
    layout = TableLayout().with_seat(0, flowers=(Tile(34),)).with_seat(1, flowers=(Tile(35),))
    table = Reads(layout, stable_frames=STABLE)
    for _ in range(6):
        table.frame()
    table.hidden = {table.index(34)}
    changes = []
    for _ in range(STABLE + 1):
        changes += table.frame({table.index(35): (34, 0.9)})
    (change,) = [c for c in changes if c.kind == ChangeKind.FLOWER_CHANGED]
    assert change.needs_confirmation and "1f is seen 2 times on the table" in change.note
    views = table.tracker.views
    assert [v.flowers for v in views[:2]] == [(Tile(34),), (Tile(34),)]
    assert all(v.needs_confirmation for v in views[:2])
    assert "the set has 1" in " ".join(views[0].notes)


def test_a_flower_read_sure_is_not_called_unsure_for_the_copies_the_table_shows():
    # seat 1's 2f is read, surely, as 1f: seat 0's 1f, read at 0.97, is flagged for the two
    # copies, and was noted "read unsure" as well, which it was not
    layout = TableLayout().with_seat(0, flowers=(Tile(34),)).with_seat(1, flowers=(Tile(35),))
    table = Reads(layout, stable_frames=STABLE)
    for _ in range(6):
        table.frame()
    changes = [c for _ in range(12) for c in table.frame({table.index(35): (34, 0.9)})]
    (change,) = changes
    assert change.seat == 1 and "1f is seen 2 times on the table" in change.note
    assert "read unsure" not in change.note  # read at 0.9: sure
    seat0, seat1 = table.tracker.views[:2]
    assert seat0.needs_confirmation and seat1.needs_confirmation
    assert not any("read unsure" in n for n in seat0.notes + seat1.notes)
    assert any("is seen 2 times" in n for n in seat0.notes)
    (flower,) = seat0.flower_reads
    assert flower.needs_confirmation and "is seen 2 times" in flower.note
    assert flower.to_json()["note"] == flower.note


def test_a_flower_read_as_its_neighbour_now_and_then_is_flagged_for_the_copies():
    # seat 0's 1f read as 2f every other frame: the frame then shows 2f twice, and which
    # 2f is misread cannot be told. The seat is flagged, saying so, not "read unsure"
    table = Reads(TableLayout().with_seat(0, flowers=(Tile(34), Tile(35))), stable_frames=STABLE)
    for _ in range(6):
        table.frame()
    flagged = 0
    for f in range(40):
        assert table.frame({table.index(34): (35, 0.9)} if f % 2 else None) == []
        view = table.tracker.views[0]
        assert view.flowers == (Tile(34), Tile(35))
        flagged += view.needs_confirmation
        assert not any("read unsure" in n for n in view.notes)
        assert all("2f is seen 2 times" in n for n in view.notes)
    assert flagged >= 30


def test_a_meld_read_sure_is_not_called_unsure_for_the_copies_the_table_shows():
    # seat 0's laid-open 6s read surely as 5s for a while: the frames show 5s five times,
    # and seat 2's pung of 5s, every tile of it read at 0.97, was noted "read unsure"
    hand = tuple(parse_tiles("123456789m 123p 66s"))
    layout = (
        TableLayout()
        .with_seat(0, open_tiles=hand)
        .with_seat(2, melds=(Meld.of("pung", "555s", 1),), open_tiles=(Tile.S5,))
    )
    table = Reads(layout, stable_frames=STABLE)
    for _ in range(25):
        table.frame()
    six = table.index(int(Tile.S6))
    for _ in range(12):
        table.frame({six: (int(Tile.S5), 0.9)})
    for _ in range(6):
        table.frame()
    notes = table.tracker.view(2).notes
    assert any(n.startswith("seat 2: [555s<1]: flagged in") for n in notes), notes
    assert not any("read unsure" in n for n in notes)
    assert all("5s is seen 5 times" in n for n in notes)


def test_a_misread_open_tile_is_flagged_while_the_other_copies_are_still_settling():
    # seat 0's 6s read, surely, as 5s while seat 2's four loose 5s wait to settle (a kong
    # may be being laid): only the frames show five 5s, and seat 0's hand must not settle
    # unflagged meanwhile (a review of a first version, which took such reads as sure)
    hand = tuple(parse_tiles("123456789m 123p 66s"))
    layout = TableLayout().with_seat(0, open_tiles=hand).with_seat(2, open_tiles=(Tile.S5,) * 4)
    table = Reads(layout, stable_frames=STABLE)
    six = table.index(int(Tile.S6))
    changes = []
    for _ in range(30):
        changes += table.frame({six: (int(Tile.S5), 0.9)})
        seat0 = table.tracker.views[0]
        if seat0.open_tiles:
            assert seat0.needs_confirmation
            assert any("5s is seen 5 times" in n for n in seat0.notes)
    (laid,) = [c for c in changes if c.seat == 0]
    assert (
        laid.needs_confirmation
        and laid.note == "5s: 5s is seen 5 times on the table, and the set has 4"
    )
    (other,) = [c for c in changes if c.seat == 2]
    assert other.note.count("5s is seen 5 times") == 1  # four tiles flagged alike: said once


def test_a_settled_flower_read_as_a_playing_tile_for_a_while_is_not_taken_away():
    # 4f read as 5s (unsure) for five frames was reported gone, then laid open, then new
    table = Reads(TableLayout().with_seat(1, flowers=(Tile(37),)), stable_frames=STABLE)
    for _ in range(6):
        table.frame()
    i = table.index(37)
    changes = [c for _ in range(8) for c in table.frame({i: (int(parse_tiles("5s")[0]), 0.45)})]
    assert changes == []
    assert table.tracker.view(1).flowers == (Tile(37),)
    assert table.tracker.view(1).open_tiles == ()


def test_fingers_read_as_a_tile_beside_a_meld_being_laid_do_not_open_the_hand():
    # an arm laying a pung hides one of its tiles, and the fingers read as 白 at 0.4: the two
    # tiles and the phantom could not be one meld, so they settled as a hand laid open
    table = Reads(TableLayout().with_seat(1, melds=(Meld.of("pung", "555s", 2),)))
    under = table.index(int(parse_tiles("5s")[0]), 1)
    quad = table.placed[under].quad()
    towards_centre = (np.array([450.0, 450.0]) - quad.mean(axis=0)) * 0.12
    phantom = TileRead(int(Tile.WHITE), 0.4, quad + towards_centre, True)
    table.hidden = {under}
    changes = [c for _ in range(8) for c in table.frame(extra=(phantom,))]
    assert changes == []
    table.hidden = set()
    changes = [c for _ in range(8) for c in table.frame()]
    assert [c.kind for c in changes] == [ChangeKind.MELD]
    assert table.tracker.view(1).open_tiles == ()


def _hand_laid_open() -> tuple[Reads, int]:
    """A hand laid open and settled at seat 0, and the index of its 3p."""
    table = Reads(TableLayout().with_seat(0, open_tiles=tuple(parse_tiles("123456789m 123p 55s"))))
    for _ in range(6):
        table.frame()
    return table, table.index(int(parse_tiles("3p")[0]))


def test_a_loose_tile_read_as_a_flower_for_a_while_is_flagged_and_comes_back():
    # a laid-open 3p read as 3f for five frames became a flower for good, unflagged
    table, three = _hand_laid_open()
    changes = [c for _ in range(6) for c in table.frame({three: (36, 0.9)})]
    (flower,) = [c for c in changes if c.kind == ChangeKind.FLOWER]
    assert flower.needs_confirmation and "read as 3p before" in flower.note
    for _ in range(10):
        table.frame()
    view = table.tracker.view(0)
    assert view.flowers == () and len(view.open_tiles) == 14


def test_a_loose_tile_on_a_flower_keeps_it_in_doubt_and_a_misread_meld_stays():
    # a tile lying where a flower lay is not that flower pushed along, even a tile the hand
    # shows already: the flower stays, flagged
    hand = parse_tiles("123456789m 123p 5s")
    layout = TableLayout().with_seat(0, flowers=(Tile(34),), open_tiles=tuple(hand))
    table = Reads(layout)
    for _ in range(6):
        table.frame()
    changes = [c for _ in range(20) for c in table.frame({table.index(34): (22, 0.97)})]
    assert changes == []
    view = table.tracker.view(0)
    assert view.flowers == (Tile(34),) and view.needs_confirmation
    assert "also read as 5s" in view.notes[0]
    # a pung whose claimed tile is read upright reads as loose tiles: it stays, not gone
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "555m", 1),)))
    for _ in range(6):
        table.frame()
    sideways = next(i for i, p in enumerate(table.placed) if p.sideways)
    upright = replace(table.placed[sideways], sideways=False)
    upright = replace(upright, angle=upright.angle - 90.0)
    table.placed[sideways] = upright
    assert [c for _ in range(30) for c in table.frame()] == []
    assert len(table.tracker.view(0).melds) == 1


def test_a_settled_flag_does_not_flicker_with_every_other_frame():
    table = Reads(TableLayout().with_seat(0, flowers=(Tile(34),)))
    for _ in range(6):
        table.frame()
    rng = np.random.default_rng(0)
    flagged = []
    for _ in range(100):
        conf = 0.45 if rng.random() < 0.4 else 0.97
        table.frame({table.index(34): (34, conf)})
        flagged.append(table.tracker.view(0).needs_confirmation)
    flips = sum(a != b for a, b in itertools.pairwise(flagged))
    # (the code before flipped about 36 times in 100 frames)
    assert sum(flagged) >= 75 and flips <= 15


def test_a_tile_read_as_a_flower_and_back_in_turns_settles_once_each_way():
    # 3p read as 3f and as 3p in bursts of six frames flipped flower and tile ten times
    table, three = _hand_laid_open()
    changes = []
    for cycle in range(6):
        for _ in range(6):
            changes += table.frame({three: (36, 0.9)} if cycle % 2 == 0 else None)
    kinds = [c.kind for c in changes]
    assert kinds.count(ChangeKind.FLOWER) == 1 and kinds.count(ChangeKind.REMOVED) == 1
    assert all(c.needs_confirmation for c in changes)
    view = table.tracker.view(0)
    assert view.flowers == () and len(view.open_tiles) == 14 and view.needs_confirmation


def test_a_meld_taken_away_under_other_loose_tiles_is_gone():
    # loose tiles that cannot be the meld's own (the hand laid open over its place) kept it
    # for good, and never settled themselves
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "555m", 1),)))
    for _ in range(6):
        table.frame()
    upright = [
        replace(p, sideways=False, angle=p.angle - 90.0) if p.sideways else p for p in table.placed
    ]
    quads = [p.quad() for p in upright]
    table.placed, table.hidden = [], set()
    table.felt = felt_test(quads)
    others = tuple(
        TileRead(int(t), 0.97, q) for t, q in zip(parse_tiles("7s7sS"), quads, strict=True)
    )
    changes = [c for _ in range(30) for c in table.frame(extra=others)]
    assert ChangeKind.REMOVED in [c.kind for c in changes]
    view = table.tracker.view(0)
    assert view.melds == () and sorted(t.code for t in view.open_tiles) == ["7s", "7s", "S"]


def test_a_held_doubt_clears_when_unsure_frames_grow_rare():
    table = Reads(TableLayout().with_seat(0, flowers=(Tile(34),)))
    for _ in range(6):
        table.frame()
    i = table.index(34)
    for _ in range(3):
        table.frame({i: (34, 0.45)})
    assert table.tracker.view(0).needs_confirmation
    flagged = []
    for f in range(80):  # one unsure frame in eight: that is a tile read well
        table.frame({i: (34, 0.45 if f % 8 == 7 else 0.97)})
        flagged.append(table.tracker.view(0).needs_confirmation)
    assert not any(flagged[-40:][k] for k in range(40) if k % 8 != 7)


def test_a_table_swept_clear_reports_things_gone_without_asking():
    # the last frames before the tiles vanish read unsure (an arm sweeping them): every
    # REMOVED was flagged, asking the players about a table they had just cleared
    layout = TableLayout().with_seat(0, flowers=(Tile(34),), melds=(Meld.of("pung", "555m", 1),))
    table = Reads(layout)
    for _ in range(6):
        table.frame()
    for _ in range(3):
        table.frame({i: (p.label, 0.5) for i, p in enumerate(table.placed)})
    table.placed = []
    table.felt = felt_test([])
    changes = [c for _ in range(12) for c in table.frame()]
    removed = [c for c in changes if c.kind == ChangeKind.REMOVED]
    assert len(removed) == 2 and not any(c.needs_confirmation for c in removed)


def test_a_hand_laid_open_and_taken_away_says_so():
    hand = tuple(parse_tiles("123m 456p 789s EE"))
    table = Reads(TableLayout().with_seat(2, open_tiles=hand))
    for _ in range(6):
        table.frame()
    table.placed = []
    table.felt = felt_test([])
    changes = [c for _ in range(12) for c in table.frame()]
    (gone,) = [c for c in changes if c.kind == ChangeKind.OPEN_TILES]
    assert gone.open_tiles == () and gone.describe() == "seat 2: the tiles laid open are gone"


def test_one_tile_of_a_meld_left_behind_does_not_hold_it():
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "555m", 1),)))
    for _ in range(6):
        table.frame()
    left = next(p for p in table.placed if not p.sideways)
    table.placed = []
    table.felt = felt_test([left.quad()])
    tile = TileRead(left.label, 0.97, left.quad())
    changes = [c for _ in range(30) for c in table.frame(extra=(tile,))]
    assert ChangeKind.REMOVED in [c.kind for c in changes]
    view = table.tracker.view(0)
    assert view.melds == () and [t.code for t in view.open_tiles] == ["5m"]


def test_a_tile_back_from_a_flower_and_read_as_another_tile_still_flips_once():
    table, three = _hand_laid_open()
    four = int(parse_tiles("4p")[0])
    changes = []
    for cycle in range(8):
        read = [{three: (36, 0.9)}, None, {three: (four, 0.9)}, None][cycle % 4]
        for _ in range(6):
            changes += table.frame(read)
    assert [c.kind for c in changes].count(ChangeKind.FLOWER) == 1
    assert table.tracker.view(0).flowers == ()


def test_a_hand_over_part_of_a_meld_leaves_no_note_about_the_rest():
    # a hand over a pung's two upright tiles left its claimed tile "sideways in no meld", a
    # note the seat's view kept, asking the players, until eight frames after it had gone
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "EEE", 2),)))
    for _ in range(6):
        table.frame()
    table.hidden = {i for i, p in enumerate(table.placed) if not p.sideways}
    for _ in range(2 * STABLE):
        assert table.frame() == []
        view = table.tracker.view(0)
        assert view.notes == () and not view.needs_confirmation and len(view.melds) == 1
    table.hidden = set()
    for _ in range(10):
        table.frame()
        assert table.tracker.view(0).notes == ()
    # a tile lying sideways apart from any meld is still asked about
    (claimed,) = [p for p in table.placed if p.sideways]
    table.placed += shifted([claimed], 0, 150.0, 0.0)
    for _ in range(STABLE):
        table.frame()
    note = "seat 0: E lies sideways but is not part of a meld"
    assert table.tracker.view(0).stray_notes == (note,)


@pytest.mark.parametrize(
    ("label", "note"),
    [
        (int(parse_tiles("5p")[0]), "seat 0: 5p lies sideways but is not part of a meld"),
        (BACK, "seat 0: a face-down tile that is not part of a kong"),
    ],
)
def test_another_tile_laid_where_a_meld_lay_is_still_asked_about(label: int, note: str):
    # a pung taken back, an arm resting where its upright tiles lay, and another tile laid
    # where its claimed tile lay: that tile is not the pung seen in part
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "EEE", 2),)))
    for _ in range(6):
        table.frame()
    (claimed,) = [p for p in table.placed if p.sideways]
    upright = [p for p in table.placed if not p.sideways]
    table.placed = [*upright, replace(claimed, label=label)]
    table.felt = felt_test([table.placed[-1].quad()])
    table.hidden = {0, 1}
    for _ in range(2 * STABLE):
        table.frame()
    view = table.tracker.view(0)
    assert view.stray_notes == (note,) and view.needs_confirmation


def test_a_meld_last_read_unsure_and_then_out_of_sight_stays_flagged():
    # fingers picking a pung up make it unsure in the last frame it is seen; then a
    # hand lies over its place. It is kept (hidden is never gone), and that read stands
    table = Reads(TableLayout().with_seat(0, melds=(Meld.of("pung", "EEE", 2),)))
    for _ in range(10):
        table.frame()
    # the whole pung: one tile unsure beside two sure ones leaves it sure as a whole
    table.frame({i: (int(Tile.EAST), 0.45) for i in (0, 1, 2)})
    table.hidden = {0, 1, 2}
    for _ in range(30):
        assert table.frame() == []
        view = table.tracker.view(0)
        assert len(view.melds) == 1 and view.melds[0].needs_confirmation


@pytest.mark.parametrize("frames", [2, 3, 4])  # five would settle it: a change, flagged
def test_a_meld_seen_in_part_for_a_few_frames_is_not_put_in_doubt(frames):
    # the simulated table's hand 28 (seed 1): one tile of a settled [333p] read face down in
    # two frames left "[pung? 3p 3p]", and the winner was asked about a meld read right
    from vision.labels import BACK

    pung = Meld.of("pung", "333p", 3)
    table = Reads(TableLayout().with_seat(2, melds=(pung,)))
    for _ in range(6):
        table.frame()
    threes = [i for i, p in enumerate(table.placed) if p.label == int(parse_tiles("3p")[0])]
    for _ in range(frames):
        assert table.frame({threes[1]: (BACK, 0.9)}) == []
    view = table.tracker.view(2)
    assert not view.needs_confirmation and view.notes == ()
    for _ in range(3):
        assert table.frame() == []
    view = table.tracker.view(2)
    assert not view.needs_confirmation and [m.meld for m in view.melds] == [pung]


def test_a_part_that_is_not_the_melds_tiles_still_disputes_it():
    # one tile read face down and another as 4p: not the pung seen in part
    from vision.labels import BACK

    table = Reads(TableLayout().with_seat(2, melds=(Meld.of("pung", "333p", 3),)))
    for _ in range(6):
        table.frame()
    threes = [i for i, p in enumerate(table.placed) if p.label == int(parse_tiles("3p")[0])]
    four = int(parse_tiles("4p")[0])
    for _ in range(3):
        table.frame({threes[0]: (four, 0.9), threes[1]: (BACK, 0.9)})
    view = table.tracker.view(2)
    assert view.needs_confirmation and "also read as [chow? 4p 3p]" in view.melds[0].note
