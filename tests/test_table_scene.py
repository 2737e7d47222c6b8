"""The overhead table scene (vision/rendering/table_scene.py): layouts, placement, rendering."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules.melds import Meld
from controller.rules.tiles import COPIES, FLOWERS, Tile, parse_tiles
from vision.calibration import Calibration, apply
from vision.labels import BACK
from vision.rendering.table_scene import (
    ArmOver,
    SceneError,
    SeatLayout,
    TableLayout,
    TableScene,
    random_layout,
)

SCENE = TableScene(seed=2)
CAL = Calibration(np.eye(3), (900, 900))


def _quads_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """More than a sliver in common (touching tiles nudged by a hand may share a little)."""
    import cv2

    area, _ = cv2.intersectConvexConvex(a.astype(np.float32), b.astype(np.float32))
    return area > 30.0


def test_layouts_refuse_what_cannot_lie_on_a_table() -> None:
    with pytest.raises(SceneError, match="not flowers"):
        SeatLayout(flowers=(Tile.EAST,))
    with pytest.raises(SceneError, match="never part"):
        SeatLayout(open_tiles=(Tile.PLUM,))
    with pytest.raises(SceneError, match="claimed from"):
        SeatLayout(melds=(Meld.of("pung", "EEE"),))
    with pytest.raises(SceneError, match="four"):
        TableLayout(seats=(SeatLayout(),))
    with pytest.raises(SceneError, match="seat 0-3"):
        TableLayout(arms=(ArmOver(5, (0, 0)),))


@pytest.mark.timeout(20)
def test_more_discards_than_tiles_left_is_refused_not_a_hang() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(SceneError, match="tiles are left"):
        random_layout(rng, discards=137)
    with pytest.raises(SceneError, match="tiles are left"):
        random_layout(rng, discards=-1)
    # every tile left can be laid: the draw ends
    full = random_layout(np.random.default_rng(0), max_melds=0, winner=False, discards=136)
    assert len(full.discards) == 136 and max(full.tile_counts()) == COPIES


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000))
def test_random_tables_are_drawn_from_one_set(seed: int) -> None:
    layout = random_layout(np.random.default_rng(seed), discards=12)
    assert max(layout.tile_counts()) <= COPIES
    flowers = [f for s in layout.seats for f in s.flowers]
    assert len(flowers) == len(set(flowers))
    for k, seat in enumerate(layout.seats):
        assert len(seat.melds) <= 4
        for m in seat.melds:
            if m.kind.value == "chow":
                assert m.source == (k + 3) % 4
            elif m.source is not None:
                assert m.source != k
        if seat.open_tiles:
            assert len(seat.open_tiles) + 3 * len(seat.melds) == 14


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 100_000), st.integers(0, 1000))
def test_every_tile_lies_apart_and_in_its_seats_zone(layout_seed: int, scene_seed: int) -> None:
    layout = random_layout(np.random.default_rng(layout_seed), discards=12, walls=True)
    placed = TableScene(seed=scene_seed).place(layout)
    quads = [p.quad() for p in placed]
    for i in range(len(placed)):
        for j in range(i + 1, len(placed)):
            assert not _quads_overlap(quads[i], quads[j]), (placed[i], placed[j])
    for p in placed:
        assert CAL.seat_of(p.centre) == p.seat
    count = Counter(p.role for p in placed)
    assert count["wall"] == 52 and count["discard"] == 12
    assert count["meld"] == sum(m.kind.size for s in layout.seats for m in s.melds)


def test_claimed_tiles_lie_sideways_where_their_source_says() -> None:
    melds = (Meld.of("pung", "EEE", 3), Meld.of("pung", "SSS", 2), Meld.of("kong", "WWWW", 1))
    placed = SCENE.place(TableLayout().with_seat(0, melds=melds))
    for i, expected in enumerate((0, 1, 3)):
        tiles = sorted((p for p in placed if p.group == i), key=lambda p: p.centre[0])
        assert [p.sideways for p in tiles].index(True) == expected


def test_added_and_concealed_kongs_are_laid_by_the_conventions() -> None:
    melds = (Meld.of("added_kong", "5555p", 2), Meld.of("concealed_kong", "CCCC"))
    placed = SCENE.place(TableLayout().with_seat(1, melds=melds))
    added = [p for p in placed if p.group == 0]
    sideways = [p for p in added if p.sideways]
    assert len(added) == 4 and len(sideways) == 2
    u = [apply(SCENE.geometry.plane_to_seat(1), [p.centre])[0] for p in sideways]
    assert abs(u[0][0] - u[1][0]) < 3 and abs(u[0][1] - u[1][1]) > 25  # stacked in depth
    concealed = sorted((p for p in placed if p.group == 1), key=lambda p: -p.centre[1])
    assert [p.label for p in concealed] == [BACK, int(Tile.RED), int(Tile.RED), BACK]


def test_adding_to_the_table_moves_nothing_already_there() -> None:
    before = TableLayout().with_seat(
        2,
        melds=(Meld.of("pung", "1p1p1p", 1),),
        flowers=(Tile.PLUM,),
        open_tiles=tuple(parse_tiles("123m")),
    )
    after = before.with_seat(
        2,
        melds=(Meld.of("added_kong", "1111p", 1), Meld.of("chow", "789s", 1)),
        flowers=(Tile.PLUM, Tile.ORCHID),
        open_tiles=tuple(parse_tiles("123m456p")),
    )
    old = [(p.role, p.group, p.label, p.centre) for p in SCENE.place(before)]
    new = [(p.role, p.group, p.label, p.centre) for p in SCENE.place(after)]
    for role, group, label, centre in old:
        same = [c for r, g, lab, c in new if (r, g, lab) == (role, group, label)]
        assert any(np.allclose(c, centre) for c in same), (role, group, label)


def test_rendering_gives_the_truth_of_every_tile() -> None:
    layout = random_layout(np.random.default_rng(1), winner=True, discards=6, walls=True)
    frame = SCENE.render(layout)
    assert frame.image.shape == (960, 1280, 3)
    assert len(frame.truths) == len(frame.placed)
    assert frame.covered == (0.0,) * len(frame.truths)
    for t in frame.truths:
        p = frame.placed[t.index]
        centre = apply(frame.plane_to_image, [p.centre])[0]
        assert np.allclose(t.quad.mean(axis=0), centre, atol=0.5)
        assert t.label == p.label


def test_arms_hide_what_they_cover() -> None:
    layout = TableLayout().with_seat(0, melds=(Meld.of("pung", "EEE", 2),))
    clear = SCENE.render(layout, rng=np.random.default_rng(0))
    arm = ArmOver(0, (200.0, 110.0), width_mm=120)
    hidden = SCENE.render(layout.with_arms(arm), rng=np.random.default_rng(0))
    assert max(hidden.covered) > 0.5 and len(hidden.visible()) < len(clear.visible())
    changed = np.abs(hidden.image.astype(int) - clear.image.astype(int)).sum(axis=2) > 30
    assert 0.005 < changed.mean() < 0.2  # an arm, not the whole picture


@settings(max_examples=60, deadline=None)
@given(
    seat=st.integers(0, 3),
    reach=st.tuples(st.floats(-400, 1300), st.floats(-300, 800)),
    width=st.floats(40, 160),
    size=st.sampled_from([(960, 1280), (957, 1283), (240, 333)]),
)
def test_an_arm_leaves_every_pixel_it_does_not_cover_as_it_was(seat, reach, width, size) -> None:
    from vision.rendering.table_scene import _draw_arm

    # (the arm is drawn in a box around it only: nothing beyond that box may move)
    picture = np.random.default_rng(3).integers(0, 256, (*size, 3), dtype=np.uint8)
    to_image = SCENE.plane_to_image(SCENE.camera())
    arm = ArmOver(seat, reach, width_mm=width)
    drawn, mask = _draw_arm(picture, arm, SCENE.geometry, to_image, np.random.default_rng(5))
    assert drawn.dtype == np.uint8 and drawn.shape == picture.shape and mask.shape == size
    assert mask.min() >= 0.0 and mask.max() <= 1.0 + 1e-6  # (a blur rounds to within a ulp)
    assert np.array_equal(drawn[mask == 0], picture[mask == 0])
    # and the box held the whole blur: the mask fades out, it is not cut off where it ends
    inner = mask[1:-1, 1:-1]
    edge = (inner > 0) & (
        (mask[:-2, 1:-1] == 0)
        | (mask[2:, 1:-1] == 0)
        | (mask[1:-1, :-2] == 0)
        | (mask[1:-1, 2:] == 0)
    )
    assert not edge.any() or inner[edge].max() < 1e-3
    if mask.max() > 0.99:  # where the arm is, it is drawn over what lay there
        assert (drawn[mask > 0.99] != picture[mask > 0.99]).any()
    # a picture of floats is drawn on alike (and the same seed draws the same arm)
    again, mask2 = _draw_arm(
        picture.astype(np.float32), arm, SCENE.geometry, to_image, np.random.default_rng(5)
    )
    assert np.array_equal(again, drawn) and np.array_equal(mask2, mask)


def test_the_same_seed_renders_the_same_frame() -> None:
    layout = random_layout(np.random.default_rng(4))
    a = TableScene(seed=9).render(layout, rng=np.random.default_rng(1)).image
    b = TableScene(seed=9).render(layout, rng=np.random.default_rng(1)).image
    assert np.array_equal(a, b)


_EMPTY3 = (SeatLayout(),) * 3


def _seat0(*melds: Meld) -> TableLayout:
    return TableLayout(seats=(SeatLayout(melds=melds), *_EMPTY3))


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: SeatLayout(melds=tuple(Meld.of("pung", f"{n}{n}{n}m", 1) for n in range(1, 6))),
         "at most 4 melds"),
        (lambda: SeatLayout(melds=(Meld.of("pung", "EEE", 1),),
                            open_tiles=tuple(parse_tiles("123456789m 1234p"))),
         "a hand holds 14 tiles"),
        (lambda: SeatLayout(flowers=(Tile.PLUM, Tile.PLUM)), "each flower once"),
        (lambda: SeatLayout(flowers=(99,)), "flowers:"),
        (lambda: SeatLayout(open_tiles=("5m",)), "open_tiles:"),
        (lambda: SeatLayout(melds=Meld.of("pung", "EEE", 1)), "a sequence of"),
        (lambda: TableLayout(discards=(Tile.EAST,) * 5), "E x5"),
        (lambda: TableLayout(discards=(Tile.PLUM,)), "never discarded"),
        (lambda: TableLayout(seats=(SeatLayout(flowers=(Tile.PLUM,)),) * 4),
         f"{Tile.PLUM.code} x4"),
        (lambda: _seat0(Meld.of("pung", "EEE", 0)), "cannot claim"),
        (lambda: _seat0(Meld.of("chow", "123m", 2)), "a chow only from the player before"),
        (lambda: TableLayout(walls="no"), "walls is true or false"),
        (lambda: TableLayout().with_seat(-1, flowers=(Tile.PLUM,)), "a seat is 0, 1, 2 or 3"),
        (lambda: TableLayout().with_seat(4, flowers=(Tile.PLUM,)), "a seat is 0, 1, 2 or 3"),
        (lambda: TableLayout().with_seat(0, flower=(Tile.PLUM,)), "flowers, melds and open_tiles"),
        (lambda: ArmOver(0, (float("nan"), 100.0)), "reach and width are numbers"),
        (lambda: ArmOver(0, ("far", 100.0)), "reach is"),
        (lambda: ArmOver(0, (100.0, 100.0), width_mm=-5), "the width above 0"),
        (lambda: TableScene(px_per_mm=0), "px_per_mm is a number"),
    ],
)  # fmt: skip
def test_a_layout_the_rules_or_the_table_cannot_hold_is_refused(make, said) -> None:
    # accepted, these drew a picture other than the layout (its truth besides)
    with pytest.raises(SceneError, match=said):
        make()


def test_rows_that_would_leave_their_seats_zone_are_refused() -> None:
    kongs = tuple(Meld.of("kong", f"{n}{n}{n}{n}p", 1) for n in range(1, 5))
    full = SeatLayout(
        flowers=tuple(Tile(t) for t in FLOWERS),
        melds=kongs,
        open_tiles=(Tile.EAST, Tile.EAST),
    )
    SCENE.place(TableLayout(seats=(full,) + (SeatLayout(),) * 3))  # a full seat fits
    from vision.calibration import TableGeometry

    small = TableScene(TableGeometry(side_mm=700.0, marker_inset_mm=30.0, zone_depth_mm=150.0))
    with pytest.raises(SceneError, match=r"seat 0's .* row does not fit its zone on a 700 mm"):
        small.place(TableLayout(seats=(full,) + (SeatLayout(),) * 3))


def test_discards_that_would_reach_the_walls_are_refused() -> None:
    capacity = SCENE.discard_capacity(walls=True)
    assert 0 < capacity < SCENE.discard_capacity(walls=False)
    tiles = tuple(Tile(t % 34) for t in range(capacity + 1))
    SCENE.place(TableLayout(discards=tiles[:capacity], walls=True))
    with pytest.raises(SceneError, match="do not fit the centre"):
        SCENE.place(TableLayout(discards=tiles, walls=True))
    walls = [t for t in SCENE.place(TableLayout(walls=True)) if t.role == "wall"]
    grid = SCENE.place(TableLayout(discards=tiles[:capacity], walls=True))
    for d in (t for t in grid if t.role == "discard"):
        assert all(not _quads_overlap(d.quad(), w.quad()) for w in walls)
    # a drawn hand's discards (136 - 4 x 13 dealt) lie in the centre, in no seat's zone
    drawn = tuple(Tile(t % 34) for t in range(84))
    for d in SCENE.place(TableLayout(discards=drawn)):
        assert CAL.seat_of(d.centre) is None
    # laying more discards moves none already laid
    fewer = SCENE.place(TableLayout(discards=drawn[:40]))
    assert [d.centre for d in fewer] == [
        d.centre for d in SCENE.place(TableLayout(discards=drawn))[:40]
    ]
