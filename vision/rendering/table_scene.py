"""The table seen from the overhead camera, rendered from a description of what lies on it.

A :class:`TableLayout` says, for each seat, its flowers, its melds and (when it has won) the
hand it laid open; it can add discards and walls in the centre and arms reaching over the
table. :class:`TableScene` lays that out the way players do and renders it through
:func:`vision.rendering.render.render_scene` (the same renderer the model is trained on) onto felt
with the four ArUco calibration markers at the corners, seen by a camera.

Physical conventions (see ``docs/camera.md``), in each seat's own coordinates (``u`` along its
edge from its left, ``v`` from its edge towards the centre, millimetres):

* the laid-open hand lies nearest the player, upright, tiles touching;
* melds lie in the next row, left to right, a small gap between melds. A claimed tile lies
  sideways, its place saying whom it came from: the left end from the player before, the
  middle from the one opposite, the right end from the player after. An added kong's fourth
  tile lies sideways beside the sideways tile, towards the centre. A concealed kong shows its
  two outer tiles face down;
* flowers lie in a row beyond the melds.

Everything random (felt, small misplacements, which tile of a chow was claimed, camera
faults) comes from seeds, so a layout renders the same way every time, and adding a meld or a
flower never moves what already lies on the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Unpack

import cv2
import numpy as np

from controller.errors import VisionError
from controller.rules.melds import Meld, MeldKind
from controller.rules.tiles import COPIES, FLOWERS, NUM_KINDS, Tile
from vision.calibration import SEATS, Calibration, TableGeometry, apply
from vision.labels import BACK
from vision.rendering.faces import FaceSet, procedural_faces
from vision.rendering.render import (
    Camera,
    CameraFaults,
    PlacedTile,
    TileTruth,
    felt,
    lay_plane,
    tile_truths,
    view_plane,
)

TILE_MM = 30.0
"""A tile's short side (its width seen upright), millimetres."""
TILE_LONG_MM = 40.0
"""A tile's long side."""
TOUCH_MM = 1.0
"""The gap left between tiles that touch (players push them together, not quite)."""
MELD_GAP_MM = 12.0
"""The gap players leave between one meld and the next."""

OPEN_ROW_V = 12.0
"""Where (distance from the edge) the laid-open hand's row starts."""
MELD_ROW_V = 62.0
"""Where the meld row starts; an added kong's stacked tile reaches 60 mm further."""
FLOWER_ROW_V = 132.0
"""Where the flower row starts."""
MELD_ROW_U = 125.0
FLOWER_ROW_U = 185.0
WALL_V = 200.0

ROLES = ("flower", "meld", "open", "discard", "wall")
"""What a placed tile is: a seat's flower, part of a meld, part of a laid-open hand, a discard
in the centre, or a wall tile (face down)."""


class SceneError(VisionError):
    """A table layout that cannot be laid out (too many tiles, an unknown seat)."""


MAX_MELDS = 4
"""A hand of 14 tiles holds at most four melds."""
DISCARD_PITCH = TILE_LONG_MM + 4
"""The discards' grid: wide enough for a tile turned either way."""


def _tiles(values: object, what: str) -> tuple[Tile, ...]:
    """Tiles from a layout's field, or :class:`SceneError` naming it."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise SceneError(f"{what} are a sequence of tiles, not {values!r}")
    try:
        return tuple(Tile(t) for t in values)
    except (ValueError, TypeError) as exc:
        raise SceneError(f"{what}: {exc}") from None


@dataclass(frozen=True)
class SeatLayout:
    """What one seat has laid on the table: ``flowers``, ``melds`` (in the order laid, left to
    right) and ``open_tiles`` (the concealed hand laid open after a win)."""

    flowers: tuple[Tile, ...] = ()
    melds: tuple[Meld, ...] = ()
    open_tiles: tuple[Tile, ...] = ()

    def __post_init__(self) -> None:
        flowers = _tiles(self.flowers, "flowers")
        if any(not t.is_flower for t in flowers):
            raise SceneError(f"not flowers: {[t.code for t in flowers if not t.is_flower]}")
        if len(set(flowers)) != len(flowers):
            raise SceneError(f"a seat has each flower once, not {[t.code for t in flowers]}")
        if isinstance(self.melds, Meld) or not isinstance(self.melds, Sequence):
            raise SceneError("melds are a sequence of controller.rules.melds.Meld values")
        melds = tuple(self.melds)
        if any(not isinstance(m, Meld) for m in melds):
            raise SceneError("melds must be controller.rules.melds.Meld values")
        if len(melds) > MAX_MELDS:
            raise SceneError(f"a seat lays at most {MAX_MELDS} melds, not {len(melds)}")
        for m in melds:
            if m.kind is not MeldKind.CONCEALED_KONG and m.source is None:
                raise SceneError(f"{m} needs the seat it was claimed from to be laid out")
        open_tiles = _tiles(self.open_tiles, "open_tiles")
        if any(t.is_flower for t in open_tiles):
            raise SceneError("flowers are never part of a laid-open hand")
        # a hand is 14 tiles, each meld standing for three of them (a kong's fourth is extra)
        if len(open_tiles) + 3 * len(melds) > 14:
            raise SceneError(
                f"{len(open_tiles)} tiles laid open beside {len(melds)} melds: a hand holds "
                "14 tiles, each meld three of them"
            )
        object.__setattr__(self, "flowers", flowers)
        object.__setattr__(self, "melds", melds)
        object.__setattr__(self, "open_tiles", open_tiles)

    @property
    def is_empty(self) -> bool:
        return not (self.flowers or self.melds or self.open_tiles)


@dataclass(frozen=True)
class ArmOver:
    """An arm reaching over the table from ``seat``'s edge, its fingertips at ``reach`` (that
    seat's ``(u, v)``, millimetres). ``width_mm`` is the hand's width."""

    seat: int
    reach: tuple[float, float]
    width_mm: float = 95.0
    skin: tuple[int, int, int] = (120, 160, 215)
    sleeve: tuple[int, int, int] = (90, 60, 50)

    def __post_init__(self) -> None:
        if isinstance(self.seat, bool) or self.seat not in range(SEATS):
            raise SceneError(f"an arm comes from seat 0-3, not {self.seat!r}")
        try:
            u, v = (float(x) for x in self.reach)
            width = float(self.width_mm)
        except (TypeError, ValueError):
            raise SceneError(f"an arm's reach is (u, v) millimetres, not {self.reach!r}") from None
        if not (math.isfinite(u) and math.isfinite(v) and math.isfinite(width) and width > 0):
            raise SceneError(
                f"an arm's reach and width are numbers (the width above 0), not "
                f"{self.reach!r} and {self.width_mm!r}"
            )


@dataclass(frozen=True)
class TableLayout:
    """Everything on the table: a :class:`SeatLayout` per seat, ``discards`` in the centre,
    ``walls`` (face-down rows in front of each seat's zone) and ``arms`` over the table."""

    seats: tuple[SeatLayout, ...] = (SeatLayout(),) * SEATS
    discards: tuple[Tile, ...] = ()
    walls: bool = False
    arms: tuple[ArmOver, ...] = ()

    def __post_init__(self) -> None:
        seats = tuple(self.seats)
        if len(seats) != SEATS or any(not isinstance(s, SeatLayout) for s in seats):
            raise SceneError("a table layout has four SeatLayouts")
        if not isinstance(self.walls, bool):
            raise SceneError(f"walls is true or false, not {self.walls!r}")
        object.__setattr__(self, "seats", seats)
        discards = _tiles(self.discards, "discards")
        if any(t.is_flower for t in discards):
            raise SceneError("a flower is never discarded: it is laid in its seat's row")
        object.__setattr__(self, "discards", discards)
        object.__setattr__(self, "arms", tuple(self.arms))
        if any(not isinstance(arm, ArmOver) for arm in self.arms):
            raise SceneError("arms are ArmOver values")
        for k, seat in enumerate(seats):
            for m in seat.melds:
                # the claimed tile's place says whom it came from: never the seat itself,
                # and a chow only from the player before
                if m.source == k or (
                    m.kind is MeldKind.CHOW and m.source != (k + SEATS - 1) % SEATS
                ):
                    raise SceneError(
                        f"seat {k} cannot claim {m} from seat {m.source}: a meld is claimed "
                        "from another seat, a chow only from the player before"
                    )
        too_many = [f"{Tile(t).code} x{n}" for t, n in enumerate(self.tile_counts()) if n > COPIES]
        shown = [t for s in seats for t in s.flowers]
        too_many += [
            f"{t.code} x{shown.count(t)}" for t in sorted(set(shown)) if shown.count(t) > 1
        ]
        if too_many:
            raise SceneError(f"more of a tile than a set holds: {', '.join(too_many)}")

    def with_seat(self, seat: int, **changes: object) -> TableLayout:
        """A copy with seat ``seat``'s layout changed (``flowers=…``, ``melds=…``, …)."""
        if isinstance(seat, bool) or not isinstance(seat, int) or seat not in range(SEATS):
            raise SceneError(f"a seat is 0, 1, 2 or 3, not {seat!r}")  # -1 would be seat 3
        seats = list(self.seats)
        try:
            seats[seat] = replace(seats[seat], **changes)  # type: ignore[arg-type]
        except TypeError as exc:  # a keyword a seat does not have: flower= for flowers=
            raise SceneError(f"a seat's layout has flowers, melds and open_tiles: {exc}") from None
        return replace(self, seats=tuple(seats))

    def with_arms(self, *arms: ArmOver) -> TableLayout:
        return replace(self, arms=tuple(arms))

    def tile_counts(self) -> list[int]:
        """How many of each playing kind lie face up or in melds (flowers not counted)."""
        counts = [0] * NUM_KINDS
        for s in self.seats:
            for m in s.melds:
                for t in m.tiles:
                    counts[t] += 1
            for t in s.open_tiles:
                counts[t] += 1
        for t in self.discards:
            if t < NUM_KINDS:
                counts[t] += 1
        return counts


@dataclass(frozen=True)
class PlacedOnTable:
    """A tile as laid on the table: its label, where it lies (plane millimetres), its angle for
    the renderer, and its part in the layout: ``seat`` (``None`` for discards and walls),
    ``role`` (one of :data:`ROLES`), ``group`` (the meld's index for a meld tile, else the
    tile's index in its row) and ``sideways`` (claimed tiles, seen from the seat)."""

    label: int
    centre: tuple[float, float]
    angle: float
    seat: int | None
    role: str
    group: int
    sideways: bool = False

    def quad(self) -> np.ndarray:
        """The tile's outline on the plane (4x2 millimetres), in the tile's own corner order."""
        return PlacedTile(self.label, self.centre, self.angle, TILE_MM).corners()


@dataclass(frozen=True)
class TableFrame:
    """A rendered frame: the BGR ``image``, the ``layout`` it shows, where every tile was laid
    (``placed``), the renderer's truth for the tiles in view (``truths``, whose ``index`` is
    the position in ``placed``), ``plane_to_image`` (3x3, plane millimetres to pixels) and how
    much of each tile the arms over the table hide (``covered``)."""

    image: np.ndarray = field(repr=False)
    layout: TableLayout
    placed: tuple[PlacedOnTable, ...] = field(repr=False)
    truths: tuple[TileTruth, ...] = field(repr=False)
    plane_to_image: np.ndarray = field(repr=False)
    covered: tuple[float, ...] = field(default=(), repr=False)
    """For each of ``truths``, the fraction of it hidden under arms (all 0 without arms)."""

    def visible(self, max_covered: float = 0.3) -> list[TileTruth]:
        """The truths of the tiles not hidden under an arm (at most ``max_covered`` of them
        covered): what a perfect recogniser would find in this frame."""
        return [t for t, c in zip(self.truths, self.covered, strict=True) if c <= max_covered]


class TableScene:
    """The overhead view of one table: its size and markers, its felt, its tile set.

    ``px_per_mm`` is the resolution the table plane is drawn at before the camera sees it
    (finer than the camera's, so the camera does the blurring); ``seed`` fixes the felt's
    texture and every small misplacement of the tiles.
    """

    def __init__(
        self,
        geometry: TableGeometry | None = None,
        *,
        faces: FaceSet | None = None,
        px_per_mm: float = 1.5,
        felt_colour: tuple[int, int, int] = (135, 95, 35),
        seed: int = 0,
        jitter: bool = True,
    ) -> None:
        self.geometry = geometry or TableGeometry()
        if not (
            isinstance(px_per_mm, int | float)
            and math.isfinite(px_per_mm)
            and 0.2 <= px_per_mm <= 8
        ):
            raise SceneError(f"px_per_mm is a number from 0.2 to 8, not {px_per_mm!r}")
        self.px_per_mm = float(px_per_mm)
        self.felt_colour = felt_colour
        self.seed = int(seed)
        self.jitter = jitter
        self._faces = faces

    @cached_property
    def faces(self) -> FaceSet:
        return self._faces or procedural_faces()

    @property
    def plane_size(self) -> tuple[int, int]:
        side = round(self.geometry.side_mm * self.px_per_mm)
        return side, side

    @cached_property
    def background(self) -> np.ndarray:
        """The felt with the four markers laid square to the table's edges."""
        from vision.calibration import MARKER_IDS

        rng = np.random.default_rng([self.seed, 7])
        plane = felt(self.plane_size, rng, self.felt_colour)
        g = self.geometry
        for k in MARKER_IDS:
            twist = float(rng.uniform(-1.0, 1.0)) if self.jitter else 0.0
            _paste_marker(plane, k, g.marker_centre(k), g.marker_mm, 90.0 * k + twist, self)
        plane.setflags(write=False)
        return plane

    def camera(
        self,
        size: tuple[int, int] = (1280, 960),
        *,
        tilt: float = 8.0,
        turn: float = 0.0,
        zoom: float = 0.85,
        shift: tuple[float, float] = (0.0, 0.0),
        **faults: Unpack[CameraFaults],
    ) -> Camera:
        """A camera framing the table (see :meth:`vision.rendering.render.Camera.looking_at`)."""
        return Camera.looking_at(
            self.plane_size, size, tilt=tilt, turn=turn, zoom=zoom, shift=shift, **faults
        )

    def plane_to_image(self, camera: Camera) -> np.ndarray:
        """The 3x3 matrix from plane millimetres to ``camera``'s pixels."""
        w, h = camera.size
        pw, ph = self.plane_size
        hom = camera.homography if camera.homography is not None else np.diag([w / pw, h / ph, 1])
        return np.asarray(hom, np.float64) @ np.diag([self.px_per_mm, self.px_per_mm, 1.0])

    def true_calibration(self, camera: Camera) -> Calibration:
        """The calibration a perfect installer would make for ``camera`` (for checking)."""
        return Calibration(
            homography=np.linalg.inv(self.plane_to_image(camera)),
            image_size=camera.size,
            geometry=self.geometry,
            method="truth",
        )

    # -- laying out ----------------------------------------------------------------------------

    def place(self, layout: TableLayout) -> list[PlacedOnTable]:
        """Where every tile of ``layout`` lies, in drawing order."""
        out: list[PlacedOnTable] = []
        if layout.walls:
            out += self._walls()
        out += self._discards(layout.discards, layout.walls)
        for k, seat in enumerate(layout.seats):
            tiles = self._seat(k, seat)
            zone = self.geometry.default_zone(k).astype(np.float32)
            outside = [t for t in tiles if cv2.pointPolygonTest(zone, t.centre, False) < 0]
            if outside:
                # a row running past the diagonal lies in the neighbour's zone (or off the
                # table): the picture would say something other than the layout
                t = outside[0]
                raise SceneError(
                    f"seat {k}'s {t.role} row does not fit its zone on a "
                    f"{self.geometry.side_mm:g} mm table with {self.geometry.zone_depth_mm:g} mm "
                    f"zones ({len(outside)} tiles outside it)"
                )
            out += tiles
        return out

    def _rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, *key])

    def _to_plane(
        self, seat: int, u: float, v: float, sideways: bool, twist: float
    ) -> tuple[tuple[float, float], float]:
        x, y = apply(self.geometry.seat_to_plane(seat), [(u, v)])[0]
        # the renderer's angle 0 reads upright from the bottom edge (seat 0); each seat further
        # round is a quarter turn the other way
        angle = (-90.0 * seat + (90.0 if sideways else 0.0) + twist) % 360.0
        return (float(x), float(y)), angle

    def _tile(
        self,
        seat: int,
        label: int,
        u: float,
        v: float,
        role: str,
        group: int,
        sideways: bool,
        rng: np.random.Generator,
    ) -> PlacedOnTable:
        # nudged as a hand lays tiles, never so far that touching tiles would overlap
        du, dv = np.clip(rng.normal(0, 0.6, 2), -0.4, 0.4)
        twist = float(np.clip(rng.normal(0, 1.2), -2.5, 2.5))
        if not self.jitter:
            du = dv = twist = 0.0
        centre, angle = self._to_plane(seat, u + du, v + dv, sideways, twist)
        return PlacedOnTable(int(label), centre, angle, seat, role, group, sideways)

    def _seat(self, k: int, seat: SeatLayout) -> list[PlacedOnTable]:
        out = []
        # the laid-open hand, nearest the player, where a full hand would be centred: the
        # tiles already down stay put as more are laid
        u = (self.geometry.side_mm - 14 * (TILE_MM + TOUCH_MM)) / 2 + TILE_MM / 2
        v = OPEN_ROW_V + TILE_LONG_MM / 2
        for i, t in enumerate(seat.open_tiles):
            out.append(self._tile(k, t, u, v, "open", i, False, self._rng(k, 3, i)))
            u += TILE_MM + TOUCH_MM
        # melds, left to right
        u = MELD_ROW_U
        for i, meld in enumerate(seat.melds):
            rng = self._rng(k, 1, i)
            if self.jitter:
                u += float(rng.uniform(-3, 3))
            u = self._meld(out, k, i, meld, u, rng) + MELD_GAP_MM
        # flowers
        u = FLOWER_ROW_U
        for i, t in enumerate(seat.flowers):
            rng = self._rng(k, 2, i)
            v = FLOWER_ROW_V + TILE_LONG_MM / 2
            out.append(self._tile(k, t, u + TILE_MM / 2, v, "flower", i, False, rng))
            u += TILE_MM + TOUCH_MM + (float(rng.uniform(0, 3)) if self.jitter else 0.0)
        return out

    def _meld(
        self,
        out: list[PlacedOnTable],
        seat: int,
        index: int,
        meld: Meld,
        u: float,
        rng: np.random.Generator,
    ) -> float:
        """Lay one meld from ``u`` rightwards; returns where it ends."""
        tiles: list[int] = list(meld.tiles)
        kind = meld.kind
        claimed_at: int | None = None
        if kind is MeldKind.CONCEALED_KONG:
            tiles = [BACK, tiles[1], tiles[2], BACK]
        else:
            rel = (meld.source - seat) % SEATS  # type: ignore[operator]
            count = 3 if kind is MeldKind.ADDED_KONG else len(tiles)
            claimed_at = {3: 0, 2: 1, 1: count - 1}.get(rel, 1)
            if kind is MeldKind.CHOW:
                # which of the three was claimed is not recorded: any one, put at the left end
                pick = int(rng.integers(3))
                tiles = [tiles[pick]] + [t for j, t in enumerate(tiles) if j != pick]
                claimed_at = 0
            elif kind is MeldKind.ADDED_KONG:
                tiles = tiles[:3]
        v0 = MELD_ROW_V
        stack_u = 0.0
        for j, t in enumerate(tiles):
            side = j == claimed_at
            w = TILE_LONG_MM if side else TILE_MM
            depth = TILE_MM if side else TILE_LONG_MM
            if side:
                stack_u = u + w / 2
            out.append(self._tile(seat, t, u + w / 2, v0 + depth / 2, "meld", index, side, rng))
            u += w + TOUCH_MM
        if kind is MeldKind.ADDED_KONG:
            # the added tile beside the claimed one, towards the centre; laid later, with its
            # own nudge, so the pung it joins does not move
            v = v0 + TILE_MM + TOUCH_MM + TILE_MM / 2
            stack_rng = self._rng(seat, 4, index)
            out.append(self._tile(seat, meld.tiles[3], stack_u, v, "meld", index, True, stack_rng))
        return u

    def discard_capacity(self, walls: bool) -> int:
        """How many discards the centre holds: the grid stops short of the walls (or, without
        walls, of the seats' zones)."""
        return len(self._discard_cells(walls))

    def _discard_cells(self, walls: bool) -> list[tuple[float, float]]:
        """Where discard number i lies: a grid wide enough for a tile turned either way,
        filled eight to a row from just above the centre downwards, then, when that is full,
        the rest of the free centre nearest the middle first (so a discard never moves when
        more are laid)."""
        s, pitch = self.geometry.side_mm, DISCARD_PITCH
        inner = WALL_V + TILE_LONG_MM if walls else self.geometry.zone_depth_mm
        lo, hi = inner + pitch / 2, s - inner - pitch / 2

        def x(j: int) -> float:
            return s / 2 + (j - 3.5) * pitch

        def y(r: int) -> float:
            return s / 2 + (r - 2) * pitch

        cols = [j for j in range(-20, 28) if lo <= x(j) <= hi]
        rows = [r for r in range(-20, 28) if lo <= y(r) <= hi]
        core = [(j, r) for r in rows if r >= 0 for j in cols if 0 <= j < 8]
        taken = set(core)
        rest = sorted(
            ((j, r) for r in rows for j in cols if (j, r) not in taken),
            key=lambda c: (math.hypot(x(c[0]) - s / 2, y(c[1]) - s / 2), c[1], c[0]),
        )
        return [(x(j), y(r)) for j, r in core + rest]

    def _discards(self, discards: Sequence[Tile], walls: bool = False) -> list[PlacedOnTable]:
        """Discards in the centre, each turned to face one of the players."""
        cells = self._discard_cells(walls)
        if len(discards) > len(cells):
            raise SceneError(
                f"{len(discards)} discards do not fit the centre of this table "
                f"({len(cells)} do{' inside the walls' if walls else ''})"
            )
        out = []
        for i, (t, (x, y)) in enumerate(zip(discards, cells, strict=False)):
            rng = self._rng(9, i)
            angle = float(rng.normal(0, 3) + 90 * rng.integers(4)) % 360
            out.append(PlacedOnTable(int(t), (x, y), angle, None, "discard", i))
        return out

    def _walls(self) -> list[PlacedOnTable]:
        out = []
        stacks = 13
        for k in range(SEATS):
            rng = self._rng(8, k)
            u = self.geometry.side_mm / 2 - stacks * TILE_MM / 2 + TILE_MM / 2
            for i in range(stacks):
                c, a = self._to_plane(
                    k, u + i * (TILE_MM + TOUCH_MM), WALL_V + TILE_LONG_MM / 2, False, 0.0
                )
                a = (a + float(rng.normal(0, 0.5))) % 360
                out.append(PlacedOnTable(BACK, c, a, None, "wall", i))
        return out

    # -- rendering -----------------------------------------------------------------------------

    def render(
        self,
        layout: TableLayout,
        camera: Camera | None = None,
        *,
        rng: np.random.Generator | None = None,
    ) -> TableFrame:
        """The camera's picture of ``layout`` (by default a clean 1280x960 view).

        ``rng`` drives the camera's faults (noise, glare) and may change every frame; the
        layout itself is laid out from the scene's seed. It is :meth:`lay`, then
        :meth:`view`."""
        camera = camera or self.camera()
        rng = rng if rng is not None else np.random.default_rng(self.seed)
        return self.view(layout, self.lay(layout, camera), camera, rng=rng)

    def lay(self, layout: TableLayout, camera: Camera) -> LaidTable:
        """``layout``'s tiles laid on the felt, before ``camera`` sees them. It draws on
        nothing random but the scene's seed, and ignores the arms (:meth:`view` draws them):
        keep it to show one table in many frames."""
        placed = self.place(layout)
        ppm = self.px_per_mm
        tiles = [
            PlacedTile(p.label, (p.centre[0] * ppm, p.centre[1] * ppm), p.angle, TILE_MM * ppm)
            for p in placed
        ]
        plane = lay_plane(
            tiles,
            self.faces,
            plane_size=self.plane_size,
            rng=np.random.default_rng(self.seed),  # not drawn on: the table is given
            table=self.background,
            view=camera.view,
        )
        plane.setflags(write=False)
        truths = tuple(tile_truths(tiles, self.plane_size, camera))
        return LaidTable(plane, tuple(placed), truths)

    def view(
        self,
        layout: TableLayout,
        laid: LaidTable,
        camera: Camera,
        *,
        rng: np.random.Generator,
        add_noise: Callable[[np.ndarray, float], None] | None = None,
    ) -> TableFrame:
        """``camera``'s picture of ``laid`` (``layout`` laid by :meth:`lay` for this camera),
        its faults and ``layout``'s arms drawn from ``rng``; ``add_noise(image, sigma)`` adds
        the sensor noise to the ``float32`` picture in place (by default drawn by
        ``rng.normal``)."""
        image = view_plane(laid.plane, camera, rng, add_noise=add_noise)
        to_image = self.plane_to_image(camera)
        h, w = image.shape[:2]
        over = np.zeros((h, w), np.float32)
        for arm in layout.arms:
            image, mask = _draw_arm(image, arm, self.geometry, to_image, rng)
            over = np.maximum(over, mask)
        covered = (
            tuple(_coverage(over, t.quad) for t in laid.truths)
            if layout.arms
            else ((0.0,) * len(laid.truths))
        )
        return TableFrame(image, layout, laid.placed, laid.truths, to_image, covered)


@dataclass(frozen=True)
class LaidTable:
    """A layout laid on the table (:meth:`TableScene.lay`): the ``plane`` before the camera
    sees it (BGR ``float32``, read-only), where every tile lies (``placed``) and the truths of
    those in the camera's view."""

    plane: np.ndarray = field(repr=False)
    placed: tuple[PlacedOnTable, ...] = field(repr=False)
    truths: tuple[TileTruth, ...] = field(repr=False)


def _coverage(mask: np.ndarray, quad: np.ndarray) -> float:
    """The mean of ``mask`` over a quad (image pixels)."""
    x0, y0 = np.floor(quad.min(axis=0)).astype(int)
    x1, y1 = np.ceil(quad.max(axis=0)).astype(int) + 1
    h, w = mask.shape
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if x0 >= x1 or y0 >= y1:
        return 0.0
    inside = np.zeros((y1 - y0, x1 - x0), np.uint8)
    cv2.fillConvexPoly(inside, np.round(quad - (x0, y0)).astype(np.int32), 1)
    values = mask[y0:y1, x0:x1][inside.astype(bool)]
    return float(values.mean()) if values.size else 0.0


def _paste_marker(
    plane: np.ndarray,
    marker: int,
    centre_mm: tuple[float, float],
    marker_mm: float,
    angle: float,
    scene: TableScene,
) -> None:
    """Lay a printed marker (the code with a white paper border) onto the plane, exactly
    ``marker_mm`` wide at ``centre_mm``, turned ``angle`` degrees."""
    from vision.calibration import _dictionary

    ppm = scene.px_per_mm
    cell = 40
    code = cv2.aruco.generateImageMarker(_dictionary(), marker, 6 * cell, borderBits=1)
    # one cell of white round the code
    paper: np.ndarray = np.full((8 * cell, 8 * cell), 255, np.uint8)
    paper[cell:-cell, cell:-cell] = code
    target = marker_mm * ppm * 8 / 6  # the paper's side in plane pixels
    small = max(8, round(target * 2))  # shrink smoothly first, then place with sub-pixels
    paper = cv2.resize(paper, (small, small), interpolation=cv2.INTER_AREA)
    scale = target / small
    a = math.radians(angle)
    cx, cy = centre_mm[0] * ppm, centre_mm[1] * ppm
    c, s = math.cos(a) * scale, math.sin(a) * scale
    half = small / 2
    m = np.array([[c, -s, cx - c * half + s * half], [s, c, cy - s * half - c * half]])
    h, w = plane.shape[:2]
    warped = cv2.warpAffine(paper, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)
    mask = cv2.warpAffine(
        np.ones_like(paper, np.float32), m, (w, h), flags=cv2.INTER_LINEAR, borderValue=0
    )
    shade = np.array([0.93, 0.95, 0.96], np.float32)  # paper is not pure white under the lamp
    paper_bgr = warped[..., None].astype(np.float32) * shade
    blended = plane * (1 - mask[..., None]) + paper_bgr * mask[..., None]
    plane[:] = np.clip(blended, 0, 255).astype(np.uint8)


def _draw_arm(
    image: np.ndarray,
    arm: ArmOver,
    geometry: TableGeometry,
    to_image: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """An arm from beyond the seat's edge to its fingertips, drawn over the picture (it is
    above the table, so it hides tiles and casts no crisp edge). Returns the picture and the
    arm's mask (0-1)."""
    u, v = arm.reach
    w = arm.width_mm
    start = np.array([u + (450 - u) * 0.15, -300.0])
    tip = np.array([u, v])
    d = tip - start
    length = float(np.hypot(*d)) or 1.0
    along, across = d / length, np.array([-d[1], d[0]]) / length
    palm_c = tip - along * w * 0.75
    wrist = tip - along * w * 1.5
    arm_poly = [
        start + across * w * 0.55,
        wrist + across * w * 0.4,
        wrist - across * w * 0.4,
        start - across * w * 0.55,
    ]
    palm = [
        palm_c + along * w * 0.55 * math.cos(t) * 1.0 + across * w * 0.5 * math.sin(t)
        for t in np.linspace(0, 2 * math.pi, 24, endpoint=False)
    ]
    fingers = []
    for f in (-0.33, -0.11, 0.11, 0.33):
        base = palm_c + along * w * 0.35 + across * w * f
        end = base + along * w * (0.55 - abs(f) * 0.5)
        fingers.append((base, end))
    to_plane = geometry.seat_to_plane(arm.seat)

    def px(points: Sequence[np.ndarray]) -> np.ndarray:
        return apply(to_image, apply(to_plane, np.asarray(points))).astype(np.float32)

    sleeve_px, palm_px = px(arm_poly), px(palm)
    scale = float(np.linalg.norm(px([tip])[0] - px([tip - along * 10])[0])) / 10  # px per mm
    thick = max(2, round(w * 0.17 * scale))
    lines = [
        tuple(tuple(np.round(p).astype(int)) for p in px([base, end])) for base, end in fingers
    ]
    soft = max(1.0, 2.5 * scale)
    # The arm is drawn and blurred only in a box around it, 4-6x faster than over the whole
    # frame and to the same bit: the box reaches past the blur (OpenCV's float kernel spans 4
    # sigma), outside it the masks are 0 and the picture is left as it was, and its columns
    # start and end on multiples of 16 so that every value falls in the same SIMD lane (or
    # the same scalar tail) as it would in the whole frame.
    h, wid = image.shape[:2]
    drawn = np.concatenate([sleeve_px, palm_px, np.array(lines, np.float32).reshape(-1, 2)])
    margin = thick + 4 * math.ceil(soft) + 4
    x0, y0 = (np.floor(drawn.min(axis=0)).astype(int) - margin).clip(0, (wid, h))
    x1, y1 = (np.ceil(drawn.max(axis=0)).astype(int) + margin + 1).clip(0, (wid, h))
    x0, x1 = x0 - x0 % 16, min(wid, x1 + -x1 % 16)
    box = (slice(y0, y1), slice(x0, x1))
    shift = np.array([x0, y0], np.float32)
    skin = np.zeros((y1 - y0, x1 - x0), np.float32)
    sleeve = np.zeros_like(skin)
    if skin.size:  # (an arm wholly out of the picture is drawn on nothing)
        for poly, mask in ((sleeve_px, sleeve), (palm_px, skin)):
            cv2.fillPoly(
                mask, [np.round((poly - shift) * 16).astype(np.int32)], 1.0, cv2.LINE_AA, 4
            )
        for a, b in lines:
            cv2.line(skin, (a[0] - x0, a[1] - y0), (b[0] - x0, b[1] - y0), 1.0, thick, cv2.LINE_AA)
        skin = cv2.GaussianBlur(skin, (0, 0), soft)
        sleeve = cv2.GaussianBlur(sleeve, (0, 0), soft) * (1 - skin)
    out = image[box].astype(np.float32)
    for mask, colour in ((sleeve, arm.sleeve), (skin, arm.skin)):
        tone = np.array(colour, np.float32) * float(rng.uniform(0.9, 1.1))
        # drawn for the whole frame, as it always was: the same seed gives the same picture
        grain = rng.normal(0, 3, (h, wid, 1)).astype(np.float32)[box]
        layer = np.empty((*mask.shape, 3), np.float32)
        layer[:] = tone
        layer += grain
        out = out * (1 - mask[..., None]) + layer * mask[..., None]
    # outside the box a picture of bytes is kept as it is (clipping and rounding would give
    # the same bytes back); any other is clipped and rounded, as inside
    picture = image.copy() if image.dtype == np.uint8 else np.clip(image, 0, 255).astype(np.uint8)
    picture[box] = np.clip(out, 0, 255).astype(np.uint8)
    covered = np.zeros((h, wid), np.float32)
    covered[box] = np.maximum(skin, sleeve)
    return picture, covered


def random_layout(
    rng: np.random.Generator,
    *,
    max_melds: int = 4,
    winner: bool | None = None,
    discards: int = 0,
    walls: bool = False,
) -> TableLayout:
    """A plausible table mid-hand or at its end, drawn from one set of 144 tiles.

    Each seat gets 0-``max_melds`` melds of every kind (claimed from plausible seats) and some
    of the eight flowers; with ``winner`` (by default one time in three) one seat has laid its
    hand open. ``discards`` face-up tiles lie in the centre."""
    counts = [COPIES] * NUM_KINDS

    def take(tiles: Sequence[int]) -> bool:
        need: dict[int, int] = {}
        for t in tiles:
            need[t] = need.get(t, 0) + 1
        if any(counts[t] < n for t, n in need.items()):
            return False
        for t, n in need.items():
            counts[t] -= n
        return True

    seats: list[SeatLayout] = []
    flowers = list(FLOWERS)
    rng.shuffle(flowers)
    flower_counts = rng.multinomial(int(rng.integers(0, 9)), [0.25] * 4)
    if winner is None:
        winner = bool(rng.random() < 1 / 3)
    winning_seat = int(rng.integers(SEATS)) if winner else -1
    for k in range(SEATS):
        melds: list[Meld] = []
        for _ in range(int(rng.integers(0, max_melds + 1))):
            for _attempt in range(20):
                meld = _random_meld(rng, k)
                if take(meld.tiles):
                    melds.append(meld)
                    break
        open_tiles: list[Tile] = []
        if k == winning_seat:
            want = 14 - 3 * len(melds)
            while len(open_tiles) < want:
                t = int(rng.integers(NUM_KINDS))
                if take([t]):
                    open_tiles.append(Tile(t))
            open_tiles.sort()
        mine = [flowers.pop() for _ in range(int(flower_counts[k]))]
        seats.append(SeatLayout(tuple(sorted(mine)), tuple(melds), tuple(open_tiles)))
    left = sum(counts)
    if not 0 <= discards <= left:
        # drawing on would never end
        raise SceneError(f"{discards} discards asked for, but {left} tiles are left to lay")
    centre: list[Tile] = []
    while len(centre) < discards:
        t = int(rng.integers(NUM_KINDS))
        if take([t]):
            centre.append(Tile(t))
    return TableLayout(tuple(seats), tuple(centre), walls)


def _random_meld(rng: np.random.Generator, seat: int) -> Meld:
    kinds = list(MeldKind)
    kind = kinds[int(rng.choice(len(kinds), p=[0.3, 0.35, 0.1, 0.1, 0.15]))]
    others = [(seat + d) % SEATS for d in (1, 2, 3)]
    if kind is MeldKind.CHOW:
        suit, start = int(rng.integers(3)), int(rng.integers(7))
        tiles = tuple(Tile(suit * 9 + start + i) for i in range(3))
        return Meld(kind, tiles, (seat + 3) % SEATS)
    tile = Tile(int(rng.integers(NUM_KINDS)))
    source = None if kind is MeldKind.CONCEALED_KONG else others[int(rng.integers(3))]
    return Meld(kind, (tile,) * kind.size, source)
