"""Grouping the tiles found in a seat's zone into its flowers, melds and laid-open tiles.

The recogniser says what each tile is and where it lies; this module says what the tiles mean,
following the table's conventions (``docs/camera.md``): in each seat's own coordinates, tiles
that touch side by side belong together; a claimed tile lies sideways, and where it lies in
its meld says whom it was claimed from (left end: the player before, middle: the one
opposite, right end: the player after); an added kong's fourth tile lies sideways beside the
sideways tile, towards the centre; a concealed kong shows face-down tiles at both ends.
Tiles touching in a row are cut into melds by trying every cut (:func:`group_seat`), so melds
laid without a gap between them are still told apart.

Nothing the reads make doubtful passes silently: every meld and tile read with low
confidence, every meld whose tiles do not make a legal meld (it is still reported, with the
runner-up labels that would make it legal when there are any), a face-down tile where none
should be, is flagged with a note for the players to confirm.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import pairwise, permutations
from typing import Any

import numpy as np

from controller.errors import HandError, VisionError
from controller.rules.melds import Meld, MeldKind
from controller.rules.tiles import COPIES, NUM_KINDS, Tile, format_tiles
from vision.calibration import SEATS, Calibration, TableGeometry, apply
from vision.detection import TileDetection
from vision.detection import reading_order as _rows
from vision.labels import BACK, NUM_LABELS, label_name

TOUCH_FRACTION = 0.5
"""Tiles side by side whose gap is under this fraction of a tile's width are one group."""
REACH = 4.0
"""In tile widths: two tiles whose centres lie further apart than this cannot touch."""
LOOSE_FRACTION = 0.2
"""Inside a group, a gap over this fraction of a tile's width is where one meld may end."""
DEFAULT_TILE_MM = 30.0
"""A tile's width when no tile on the table gives a better measure."""


@dataclass(frozen=True)
class TileRead:
    """A tile found on the table: ``label`` (a :mod:`vision.labels` label), ``confidence``,
    ``quad`` (its outline, 4x2 plane millimetres), ``needs_confirmation`` and the runner-up
    ``alternatives`` as the recogniser gave them. ``note`` says why a tile is flagged
    when it is more than its own read: the table shows more copies of it than a set holds,
    or (in the tracker's settled views) why the frames leave it in doubt."""

    label: int
    confidence: float
    quad: np.ndarray = field(compare=False, repr=False)
    needs_confirmation: bool = False
    alternatives: tuple[tuple[int, float], ...] = ()
    note: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        quad = np.asarray(self.quad, np.float64)
        if quad.size != 8 or not np.isfinite(quad).all():
            raise VisionError(f"a tile's outline is four finite corners, not {quad.tolist()}")
        quad = quad.reshape(4, 2)
        quad.setflags(write=False)
        object.__setattr__(self, "quad", quad)
        if not 0 <= int(self.label) < NUM_LABELS:
            raise HandError(f"{self.label!r} is not a tile label")
        # NaN too: it would pass every threshold test (1e-6: float32 rounding of a sure read)
        if not 0.0 <= self.confidence <= 1.0 + 1e-6:
            raise VisionError(f"a tile's confidence is 0-1, not {self.confidence}")

    @classmethod
    def from_detection(cls, det: TileDetection, to_plane: np.ndarray) -> TileRead:
        """A detection made in some image, mapped to the plane by ``to_plane`` (3x3)."""
        return cls(
            int(det.label),
            float(det.confidence),
            apply(to_plane, det.quad),
            bool(det.needs_confirmation),
            tuple((int(a), float(p)) for a, p in det.alternatives),
        )

    @cached_property
    def centre(self) -> tuple[float, float]:
        c = self.quad.mean(axis=0)
        return float(c[0]), float(c[1])

    @property
    def name(self) -> str:
        return label_name(self.label)

    @property
    def face_down(self) -> bool:
        return self.label == BACK

    @property
    def is_flower(self) -> bool:
        return 34 <= self.label < BACK

    def describe(self) -> str:
        """``5m (0.41, or 6m 0.33)``: the label, how sure, and the runner-up."""
        text = f"{self.name} ({self.confidence:.2f}"
        if self.alternatives:
            alt, p = self.alternatives[0]
            text += f", or {label_name(alt)} {p:.2f}"
        return text + ")"

    def to_json(self) -> dict[str, Any]:
        out = {
            "label": self.name,
            "confidence": round(self.confidence, 4),
            "centre_mm": [round(v, 1) for v in self.centre],
            "needs_confirmation": self.needs_confirmation,
        }
        return out | {"note": self.note} if self.note else out


@dataclass(frozen=True)
class MeldView:
    """A meld as it lies on the table.

    ``kind`` is how it was laid; ``tiles`` the tiles as read, left to right as the seat sees
    them (empty for a concealed kong whose four tiles all lie face down); ``source`` the seat
    it was claimed from when the sideways tile's place shows it (``None`` for a concealed
    kong); ``confidence`` the least sure of its tiles; ``needs_confirmation`` with ``note``
    saying why when anything about it is unsure; ``centre`` (plane millimetres) where it lies.
    """

    kind: MeldKind
    tiles: tuple[Tile, ...]
    source: int | None
    confidence: float
    needs_confirmation: bool
    centre: tuple[float, float]
    reads: tuple[TileRead, ...] = field(default=(), compare=False, repr=False)
    note: str = ""

    @property
    def meld(self) -> Meld | None:
        """The rules' :class:`~controller.rules.melds.Meld`, or ``None`` when the tiles read do
        not make one (then :attr:`needs_confirmation` is set)."""
        try:
            return self.to_meld()
        except HandError:
            return None

    def to_meld(self) -> Meld:
        """The rules' meld; raises :class:`~controller.errors.HandError` when the tiles read
        cannot make it (a concealed kong face down all round, a misread tile)."""
        if not self.tiles:
            raise HandError("a concealed kong lies face down: its tile cannot be seen")
        return Meld(self.kind, self.tiles, self.source)

    @property
    def key(self) -> tuple[str, tuple[int, ...], int | None]:
        """What the meld is, without where it lies: the tracker's notion of "the same"."""
        return (self.kind.value, tuple(sorted(int(t) for t in self.tiles)), self.source)

    def describe(self) -> str:
        meld = self.meld
        if meld is not None:
            return meld.notation()
        shown = " ".join(t.code for t in self.tiles) or "face down"
        return f"[{self.kind.value}? {shown}]"

    def to_json(self) -> dict[str, Any]:
        """The meld in the fields a win's JSON gives a meld (``kind``; ``tiles`` in the
        notation, as laid left to right; ``from`` when a seat is known: they read with
        :func:`controller.rules.meld_from_json` as :meth:`Meld.to_json
        <controller.rules.melds.Meld.to_json>` does), then what the camera adds: how sure,
        whether to confirm and why, and where it lies."""
        out: dict[str, Any] = {"kind": self.kind.value, "tiles": format_tiles(self.tiles)}
        if self.source is not None:
            out["from"] = self.source
        return out | {
            "confidence": round(self.confidence, 4),
            "needs_confirmation": self.needs_confirmation,
            "note": self.note,
            "centre_mm": [round(v, 1) for v in self.centre],
        }


@dataclass(frozen=True)
class SeatView:
    """What one seat has laid on the table, as read from one frame.

    ``flowers`` and ``melds`` in the order they lie (left to right as the seat sees them);
    ``open_tiles`` every other face-up tile (the hand laid open after a win); ``notes`` one line
    per thing the players should confirm; ``reads`` every tile found in the seat's zone.
    ``stray_notes`` are those of ``notes`` about tiles that no flower, meld or open tile
    holds, or holds as it should (a face-down tile not part of a kong, a sideways tile in no
    meld): the tracker keeps the ones that last. ``stray_reads`` are the tiles they are
    about, one for each, in the same order.
    """

    seat: int
    flowers: tuple[Tile, ...] = ()
    melds: tuple[MeldView, ...] = ()
    open_tiles: tuple[Tile, ...] = ()
    notes: tuple[str, ...] = ()
    reads: tuple[TileRead, ...] = field(default=(), compare=False, repr=False)
    flower_reads: tuple[TileRead, ...] = field(default=(), compare=False, repr=False)
    open_reads: tuple[TileRead, ...] = field(default=(), compare=False, repr=False)
    stray_notes: tuple[str, ...] = field(default=(), compare=False)
    stray_reads: tuple[TileRead, ...] = field(default=(), compare=False, repr=False)

    @property
    def needs_confirmation(self) -> bool:
        return bool(self.notes)

    @property
    def is_empty(self) -> bool:
        return not (self.flowers or self.melds or self.open_tiles)

    def describe(self) -> str:
        """``seat 1: flowers 1f 5f; melds [EEE<0] [123m<0]; laid open: 4p 4p`` (``nothing
        laid`` for an empty seat), each meld flagged for confirmation marked ``?``."""
        shown = [m.describe() + ("?" if m.needs_confirmation else "") for m in self.melds]
        return seat_line(self.seat, self.flowers, shown, self.open_tiles)

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "flowers": [t.code for t in self.flowers],
            "melds": [m.to_json() for m in self.melds],
            "open_tiles": [t.code for t in self.open_tiles],
            "needs_confirmation": self.needs_confirmation,
            "notes": list(self.notes),
        }


def seat_line(
    seat: int, flowers: Iterable[Tile], melds: Iterable[str], open_tiles: Iterable[Tile]
) -> str:
    """A seat's flowers, melds (as written) and laid-open tiles in a line: how
    :meth:`SeatView.describe` and the simulator's truth (``mahjong-table sim-camera``) say
    one, so the two can be set side by side."""
    parts = [
        f"{what}{shown}"
        for what, shown in (
            ("flowers ", " ".join(t.code for t in flowers)),
            ("melds ", " ".join(melds)),
            ("laid open: ", " ".join(t.code for t in open_tiles)),
        )
        if shown
    ]
    return f"seat {seat}: " + ("; ".join(parts) or "nothing laid")


# -- one seat ----------------------------------------------------------------------------------


@dataclass
class _Tile:
    """A read in seat coordinates: centre, half extents along ``u`` and ``v``, sideways."""

    read: TileRead
    u: float
    v: float
    hu: float
    hv: float
    sideways: bool
    short: float

    @property
    def label(self) -> int:
        return self.read.label


def _in_seat(read: TileRead, to_seat: np.ndarray) -> _Tile:
    q = apply(to_seat, read.quad)
    e0 = q[1] - q[0]
    e1 = q[2] - q[1]
    a = (np.linalg.norm(e0) + np.linalg.norm(q[2] - q[3])) / 2
    b = (np.linalg.norm(e1) + np.linalg.norm(q[3] - q[0])) / 2
    long_edge = e0 if a >= b else e1
    short, long_ = float(min(a, b)), float(max(a, b))
    # the long axis along u (the seat's edge) is a tile lying sideways
    sideways = abs(long_edge[0]) > abs(long_edge[1])
    c = q.mean(axis=0)
    hu, hv = (long_ / 2, short / 2) if sideways else (short / 2, long_ / 2)
    return _Tile(read, float(c[0]), float(c[1]), hu, hv, bool(sideways), short)


@dataclass
class _Column:
    tiles: list[_Tile]

    @property
    def u0(self) -> float:
        return min(t.u - t.hu for t in self.tiles)

    @property
    def u1(self) -> float:
        return max(t.u + t.hu for t in self.tiles)

    @property
    def sideways(self) -> bool:
        return self.tiles[0].sideways

    @property
    def stacked(self) -> bool:
        return len(self.tiles) > 1


def _touching(a: _Tile, b: _Tile, unit: float) -> bool:
    """Whether two tiles belong together: side by side in a row, or two sideways tiles
    stacked."""
    gap_u = abs(a.u - b.u) - a.hu - b.hu
    gap_v = abs(a.v - b.v) - a.hv - b.hv
    overlap_v = min(a.v + a.hv, b.v + b.hv) - max(a.v - a.hv, b.v - b.hv)
    overlap_u = min(a.u + a.hu, b.u + b.hu) - max(a.u - a.hu, b.u - b.hu)
    beside = gap_u <= TOUCH_FRACTION * unit and overlap_v >= 0.4 * min(a.hv, b.hv) * 2
    stacked = (
        a.sideways and b.sideways and gap_v <= 0.3 * unit and overlap_u >= 0.5 * min(a.hu, b.hu) * 2
    )
    return beside or stacked


def _components(tiles: list[_Tile], unit: float) -> list[list[_Tile]]:
    """Groups of tiles that touch (:func:`_touching`)."""
    n = len(tiles)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if _touching(tiles[i], tiles[j], unit):
                parent[find(i)] = find(j)
    groups: dict[int, list[_Tile]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(tiles[i])
    return list(groups.values())


def reading_order(
    items: list[Any], v: Callable[[Any], float], u: Callable[[Any], float], unit: float
) -> list[Any]:
    """Row by row from the seat's edge outwards, left to right in each row: a new row starts
    where the distance from the edge jumps by more than half a tile's width."""
    return _rows(items, v, u, 0.5 * unit)


def _columns(group: list[_Tile]) -> list[_Column]:
    cols: list[_Column] = []
    for t in sorted(group, key=lambda t: t.u):
        last = cols[-1] if cols else None
        if last is not None and last.sideways and t.sideways:
            overlap = min(last.u1, t.u + t.hu) - max(last.u0, t.u - t.hu)
            if overlap >= 0.5 * 2 * t.hu:
                last.tiles.append(t)
                continue
        cols.append(_Column([t]))
    for c in cols:
        c.tiles.sort(key=lambda t: t.v)  # the claimed tile first, an added one beyond it
    return cols


@dataclass
class _Candidate:
    view: MeldView
    score: float


def _relative_source(seat: int, index: int, count: int) -> int:
    """The seat a claimed tile came from, by where it lies among ``count`` columns."""
    if index == 0:
        return (seat + 3) % SEATS  # the left end: the player before
    if index == count - 1:
        return (seat + 1) % SEATS  # the right end: the player after
    return (seat + 2) % SEATS  # the middle: the player opposite


def _valid(kind: MeldKind, labels: Sequence[int], source: int | None) -> bool:
    if any(not 0 <= lab < 34 for lab in labels):
        return False
    try:
        Meld(kind, tuple(Tile(lab) for lab in labels), source)
    except HandError:
        return False
    return True


def _repair(
    kind: MeldKind, tiles: Sequence[_Tile], source: int | None
) -> tuple[list[int], str, float] | None:
    """The most likely labels that make a legal meld, changing one tile to a runner-up, with
    how likely the change is beside the reading it replaces (0-1)."""
    labels = [t.label for t in tiles]
    best: tuple[float, list[int], str] | None = None
    for i, t in enumerate(tiles):
        for alt, p in t.read.alternatives:
            if t.read.is_flower and not _plausible(t.read, p):
                continue  # a flower is taken for a meld's tile only on a likely runner-up
            if kind in (MeldKind.KONG, MeldKind.ADDED_KONG) and p < PLAUSIBLE_RUNNER_UP:
                # a kong of four may take in a tile laid against a pung: only on a runner-up
                # that is no long shot (every read lists three, however sure it is)
                continue
            trial = [*labels[:i], alt, *labels[i + 1 :]]
            if _valid(kind, trial, source):
                gain = p / max(t.read.confidence, 1e-6)
                if best is None or gain > best[0]:
                    note = f"{t.read.describe()} may be {label_name(alt)} ({p:.2f})"
                    best = (gain, trial, note)
    return (best[1], best[2], min(best[0], 1.0)) if best else None


def _segment(seat: int, cols: Sequence[_Column], unit: float) -> _Candidate | None:
    """How ``cols`` would read as one meld, or ``None`` if they cannot be one."""
    n = len(cols)
    if n not in (3, 4):
        return None
    sideways = [i for i, c in enumerate(cols) if c.sideways]
    tiles = [t for c in cols for t in c.tiles]
    stacked = [i for i, c in enumerate(cols) if c.stacked]
    if any(len(c.tiles) > 2 for c in cols) or len(stacked) > 1:
        return None
    # tiles of one meld touch; a wide gap inside it makes the reading less likely
    inner_gaps = sum(1 for a, b in pairwise(cols) if b.u0 - a.u1 > LOOSE_FRACTION * unit)
    if any(t.read.is_flower for t in tiles) and not _may_be_played(tiles):
        return None
    if not sideways:
        # a flower read among a concealed kong's faces is one of them on a likely runner-up
        # (checked above); read at an end, where the backs lie, it is no kong's
        if n != 4 or stacked or any(t.read.is_flower for t in (tiles[0], tiles[3])):
            return None
        ends = [_face_down_end(t) for t in (tiles[0], tiles[3])]
        if None in ends:
            return None
        return _concealed_kong(tiles, inner_gaps, [e for e in ends if e])
    if len(sideways) != 1:
        return None
    claimed_at = sideways[0]
    if stacked and (n != 3 or stacked[0] != claimed_at):
        return None
    source = _relative_source(seat, claimed_at, n)
    options: list[tuple[MeldKind, int, list[str]]]
    if stacked:
        options = [(MeldKind.ADDED_KONG, source, [])]
    elif n == 4:
        options = [(MeldKind.KONG, source, [])]
    else:
        chow_notes = []
        if claimed_at != 0:
            chow_notes.append(
                "a chow is claimed from the player before: its sideways tile belongs at the "
                "left end"
            )
        # two alike and one not: a pung with a misread tile is likelier than a chow
        pung_first = len({t.label for t in tiles}) < 3
        options = [(MeldKind.PUNG, source, []), (MeldKind.CHOW, (seat + 3) % SEATS, chow_notes)]
        if not pung_first:
            options.reverse()
    best: _Candidate | None = None
    for kind, src, extra in options:
        cand = _claimed(kind, src, tiles, list(extra), inner_gaps)
        if cand is not None and (best is None or cand.score > best.score):
            best = cand
    return best


KONG_END_GAIN = 1 / 3
"""How likely, beside what it was read as, the pung's tile must be among a loose tile's
runner-ups for the tile laid tight against the pung to be taken for the kong's fourth."""
PLAUSIBLE_RUNNER_UP = 0.1
"""How likely a runner-up must be for it to stand in for an unsure read that would otherwise
leave a flower a flower or a face-up tile face up (see :func:`_plausible`)."""


def _plausible(read: TileRead, p: float) -> bool:
    """Whether a runner-up of probability ``p`` may stand in for ``read`` where that changes
    what the tile is taken for (a flower into a meld's tile, a face-up tile into a kong's
    back): only for a read unsure enough to be flagged, and a runner-up that is no long shot.
    The recogniser always lists three runner-ups, so a sure 白 has "back" among them at
    0.001, and a sure flower some playing tile."""
    return read.needs_confirmation and p >= PLAUSIBLE_RUNNER_UP


def _may_be_played(tiles: Sequence[_Tile]) -> bool:
    """Whether the one flower read among ``tiles`` has a plausible playing tile as a
    runner-up (a meld's tile misread as a flower); two flower reads are never one meld's."""
    flowers = [t for t in tiles if t.read.is_flower]
    return len(flowers) == 1 and any(
        0 <= alt < 34 and _plausible(flowers[0].read, p) for alt, p in flowers[0].read.alternatives
    )


def _has_played(group: Sequence[_Tile]) -> bool:
    """Whether a group of touching tiles holds any tile not read as a flower (a row of
    flowers alone is no meld, whatever their runner-ups)."""
    return any(not t.read.is_flower for t in group)


def _face_down_end(t: _Tile) -> str | None:
    """Whether a concealed kong's end tile lies face down: ``""`` if read so, a note if read
    face up with face down its runner-up (a plain back is easily taken for 白 or a dragon),
    ``None`` if not."""
    if t.label == BACK:
        return ""
    for alt, p in t.read.alternatives:
        if alt == BACK and _plausible(t.read, p):
            return f"{t.read.describe()} may be face down (back {p:.2f})"
    return None


def _claimed(
    kind: MeldKind, source: int, tiles: list[_Tile], notes: list[str], inner_gaps: int
) -> _Candidate | None:
    labels = [t.label for t in tiles]
    per_tile = 10.0
    likelihood = 0.0
    if not _valid(kind, labels, source):
        # a tile read face down or as a flower may have a runner-up that makes the meld
        fixed = _repair(kind, tiles, source)
        if fixed is not None:
            labels, note, likelihood = fixed
            notes.append(note)
            per_tile = 6.0
        elif any(t.read.is_flower for t in tiles):
            return None  # a flower that no runner-up makes a meld's tile stays a flower
        elif BACK in labels:
            notes.append("a claimed meld shows a face-down tile")
            per_tile = 2.0
        else:
            shown = " ".join(label_name(lab) for lab in labels)
            notes.append(f"{shown} is not a {kind.value}: check the tiles")
            per_tile = 2.0
    if notes and per_tile == 10.0:
        per_tile = 8.0  # legal, but laid against the conventions
    # of two repairs (a pung or a chow), the likelier runner-up wins: at most 1, less than
    # any step between the kinds of reading
    return _candidate(kind, source, labels, tiles, notes, per_tile, inner_gaps, likelihood)


def _concealed_kong(tiles: list[_Tile], inner_gaps: int, end_notes: list[str]) -> _Candidate | None:
    notes: list[str] = list(end_notes)
    faces = {id(t): t.label for t in tiles[1:3]}
    flowers = [t for t in tiles[1:3] if t.read.is_flower]
    if flowers:
        # the other face says which playing tile the flower read is likeliest to be
        flower = flowers[0]
        other = next(t.label for t in tiles[1:3] if t is not flower)
        options = [
            (alt == other, p, alt)
            for alt, p in flower.read.alternatives
            if 0 <= alt < 34 and _plausible(flower.read, p)
        ]
        if not options:
            return None
        _, p, alt = max(options)
        faces[id(flower)] = alt
        notes.append(f"{flower.read.describe()} may be {label_name(alt)} ({p:.2f})")
    middle = [faces[id(t)] for t in tiles[1:3] if faces[id(t)] != BACK]
    if end_notes and not (len(middle) == 2 and middle[0] == middle[1] and 0 <= middle[0] < 34):
        # an end read face up is taken for a back only between two faces that agree: four
        # tiles of an open hand must not turn into a kong on two runner-ups
        return None
    labels: list[int] = []
    per_tile = 6.0 if end_notes or flowers else 10.0
    if not middle:
        notes.append("a concealed kong lies face down: say which tile it is")
    elif not 0 <= middle[0] < 34:
        notes.append(f"a concealed kong cannot be of {label_name(middle[0])}")
        per_tile = 2.0
    else:
        # two faces that differ: the surer one names the kong
        shown = [t for t in tiles[1:3] if faces[id(t)] != BACK]
        labels = [faces[id(max(shown, key=lambda t: t.read.confidence))]] * 4
        if len(set(middle)) > 1:
            notes.append(
                "the concealed kong's face-up tiles differ: "
                + " and ".join(t.read.describe() for t in tiles[1:3])
            )
            per_tile = 6.0
    return _candidate(MeldKind.CONCEALED_KONG, None, labels, tiles, notes, per_tile, inner_gaps)


MELD_SURE = 0.95
"""How likely, of every meld its tiles could be, the meld read must be for its tiles read
unsure one by one not to put it in doubt (:func:`meld_posterior`)."""
READ_AGREEMENT = 0.5
"""How alike the reads of one meld's tiles err, 0 (independently) to 1 (all as one): they
share the light, the blur and the set's print, so when one is misread its neighbours tend to
be misread alike. :func:`meld_posterior` counts ``n`` reads as ``1 + (n - 1) *
READ_AGREEMENT`` independent ones, so three unsure reads that agree do not make a meld look
as sure as three independent witnesses would."""


def _probability(read: TileRead, label: int) -> float:
    """How likely ``read`` says its tile is ``label``: its confidence or a runner-up's, and
    for a label it did not list, an even share of what its listed labels leave over."""
    if label == read.label:
        return read.confidence
    listed = dict(read.alternatives)
    if label in listed:
        return listed[label]
    rest = 1.0 - read.confidence - sum(listed.values())
    return max(rest, 0.0) / max(1, NUM_LABELS - 1 - len(listed)) + 1e-9


def _meld_options(kind: MeldKind, n: int) -> list[tuple[int, ...]]:
    """The tile labels (sorted) a meld of ``n`` face-up tiles laid as ``kind`` could hold:
    a claimed meld of three may be a pung or a chow whichever way it was taken, so both are
    weighed."""
    same = [(x,) * n for x in range(NUM_KINDS)]  # flowers make no meld
    if n != 3 or kind.is_kong:
        return same
    runs = [
        (9 * suit + a, 9 * suit + a + 1, 9 * suit + a + 2) for suit in range(3) for a in range(7)
    ]
    return same + runs


def meld_posterior(kind: MeldKind, labels: Sequence[int], reads: Sequence[TileRead]) -> float:
    """How likely the meld read (``labels``; for a concealed kong, four of its tile) is,
    beside every other meld its face-up ``reads`` could make, from what each read says
    (counted as :data:`READ_AGREEMENT` makes them; backs say nothing). Four tiles read 3s at
    0.55, each with another runner-up, make a kong of 3s nearly certain; three reads of 3s
    at 0.7 beside 2s at 0.2 leave a pung of 2s in play."""
    faces = [r for r in reads if r.label != BACK]
    if kind is MeldKind.CONCEALED_KONG:
        read = tuple(labels[:1]) * len(faces)
    else:
        read = tuple(sorted(labels))
    if not faces or len(read) != len(faces) or any(not 0 <= x < NUM_KINDS for x in read):
        return 0.0

    def weight(option: tuple[int, ...]) -> float:
        # the tiles may lie in any order along the meld: each order alike likely
        orders = set(permutations(option))
        total = 0.0
        for order in orders:
            w = 1.0
            for label, r in zip(order, faces, strict=True):
                w *= _probability(r, label)
            total += w
        return (total / len(orders)) ** exponent

    exponent = (1 + (len(faces) - 1) * READ_AGREEMENT) / len(faces)
    weights = {o: weight(o) for o in {*_meld_options(kind, len(faces)), read}}
    total = sum(weights.values())
    return weights[read] / total if total > 0 else 0.0


def _candidate(
    kind: MeldKind,
    source: int | None,
    labels: list[int],
    tiles: list[_Tile],
    notes: list[str],
    per_tile: float,
    inner_gaps: int,
    bonus: float = 0.0,
) -> _Candidate:
    unsure = [t.read for t in tiles if t.read.needs_confirmation]
    # tiles unsure one by one may still make a sure meld: of the melds they could be, the
    # one read is the only likely one (see meld_posterior); a meld already in doubt for
    # what it shows says which tiles were unsure too
    if unsure and (notes or meld_posterior(kind, labels, [t.read for t in tiles]) < MELD_SURE):
        notes.append("unsure of " + ", ".join(r.describe() for r in unsure))
    reads = tuple(t.read for t in tiles)
    centre = np.mean([r.centre for r in reads], axis=0)
    view = MeldView(
        kind=kind,
        tiles=tuple(Tile(lab) for lab in labels if lab != BACK),
        source=source,
        confidence=min(r.confidence for r in reads),
        needs_confirmation=bool(notes),
        centre=(float(centre[0]), float(centre[1])),
        reads=reads,
        note="; ".join(notes),
    )
    return _Candidate(view, per_tile * len(tiles) - 4.0 * inner_gaps + bonus)


def _parse_row(seat: int, cols: list[_Column], unit: float) -> tuple[list[MeldView], list[int]]:
    """Cut touching columns into melds, trying every cut: the best total score wins.
    Returns the melds and the indices of the columns left over."""
    n = len(cols)
    best: list[float] = [0.0] + [-math.inf] * n
    back: list[tuple[int, _Candidate | None]] = [(0, None)] * (n + 1)
    for i in range(1, n + 1):
        # a column left out of every meld scores nothing
        best[i], back[i] = best[i - 1], (i - 1, None)
        for size in (3, 4):
            j = i - size
            if j < 0:
                continue
            cand = _segment(seat, cols[j:i], unit)
            if cand is None:
                continue
            score = best[j] + cand.score
            # a cut at a gap is a natural place for one meld to end
            if j > 0 and cols[j].u0 - cols[j - 1].u1 > LOOSE_FRACTION * unit:
                score += 1.0
            if score > best[i]:
                best[i], back[i] = score, (j, cand)
    chosen: list[tuple[int, int, _Candidate]] = []
    loose: list[int] = []
    i = n
    while i > 0:
        j, cand = back[i]
        if cand is None:
            loose.append(i - 1)
        else:
            chosen.append((j, i, cand))
        i = j
    chosen.reverse()
    loose.reverse()
    chosen, loose = _kongs_with_a_misread_end(seat, cols, unit, chosen, loose)
    return [c.view for _, _, c in chosen], loose


def _kongs_with_a_misread_end(
    seat: int,
    cols: list[_Column],
    unit: float,
    chosen: list[tuple[int, int, _Candidate]],
    loose: list[int],
) -> tuple[list[tuple[int, int, _Candidate]], list[int]]:
    """A claimed kong whose end tile is misread reads as a sure pung beside a loose tile
    (three sure tiles outscore four with one repaired), losing the kong's 花 silently. A
    loose tile laid tight against a pung's end that the pung's tiles make a legal kong with,
    on its likely runner-up, is taken in: a kong, flagged with the change."""
    gap = LOOSE_FRACTION * unit
    out = list(chosen)
    free = set(loose)
    for n, (j, i, cand) in enumerate(out):
        if cand.view.kind is not MeldKind.PUNG or not cand.view.tiles:
            continue
        label = int(cand.view.tiles[0])
        options = []
        for lo, hi, end in ((j, i + 1, i), (j - 1, i, j - 1)):
            if end not in free or lo < 0 or hi > len(cols) or len(cols[end].tiles) != 1:
                continue
            ends = (cols[i].u0 - cols[i - 1].u1) if end == i else (cols[j].u0 - cols[j - 1].u1)
            if ends > gap:
                continue  # a meld's gap apart: a tile of its own
            read = cols[end].tiles[0].read
            # the pung's tile must be a likely reading of it, not the long shot every read
            # lists: at least a third as likely as what it was read as
            p = max((q for alt, q in read.alternatives if alt == label), default=0.0)
            gain = p / max(read.confidence, 1e-6)
            if gain < KONG_END_GAIN:
                continue
            kong = _segment(seat, cols[lo:hi], unit)
            if kong is None or kong.view.meld is None or kong.view.kind is not MeldKind.KONG:
                continue
            options.append((gain, lo, hi, end, kong))
        if not options:
            continue
        # of both ends, the likelier change (as a repair keeps the likeliest runner-up)
        _, lo, hi, end, kong = max(options, key=lambda o: o[0])
        if kong.view.source != cand.view.source:
            note = f"{kong.view.note}; claimed from seat {kong.view.source}, not seat " + (
                f"{cand.view.source} as the pung alone reads"
            )
            kong = _Candidate(replace(kong.view, note=note), kong.score)
        out[n] = (lo, hi, kong)
        free.discard(end)
    return out, sorted(free)


def group_seat(
    seat: int,
    reads: Iterable[TileRead],
    geometry: TableGeometry | None = None,
    *,
    tile_mm: float | None = None,
) -> SeatView:
    """Read one seat's zone: ``reads`` are the tiles found in it (plane millimetres).

    ``tile_mm`` is a tile's width; by default the median short side of the tiles given."""
    geometry = geometry or TableGeometry()
    reads = list(reads)
    to_seat = geometry.plane_to_seat(seat)
    tiles = [_in_seat(r, to_seat) for r in reads]
    unit = tile_mm or (float(np.median([t.short for t in tiles])) if tiles else DEFAULT_TILE_MM)
    notes: list[str] = []
    stray: list[str] = []
    stray_reads: list[TileRead] = []
    # a flower read with a playing tile as runner-up may be a meld's tile misread (a claimed
    # 5p read as 1f): it goes into the rows with the rest, and back to the flowers unless a
    # meld takes it
    flowers: list[_Tile] = []
    maybe: list[_Tile] = []
    rest: list[_Tile] = []
    for t in tiles:
        (rest if not t.read.is_flower else maybe if _may_be_played([t]) else flowers).append(t)
    melds: list[MeldView] = []
    open_tiles: list[_Tile] = []
    groups = _components(rest + maybe, unit)
    groups = reading_order(
        groups, lambda g: min(t.v for t in g), lambda g: min(t.u for t in g), unit
    )
    for group in groups:
        cols = _columns(group)
        if _has_played(group):
            found, loose = _parse_row(seat, cols, unit)
        else:
            found, loose = [], list(range(len(cols)))
        melds += found
        for i in loose:
            for t in cols[i].tiles:
                if t.read.is_flower:
                    flowers.append(t)
                elif t.label == BACK:
                    stray.append(f"seat {seat}: a face-down tile that is not part of a kong")
                    stray_reads.append(t.read)
                    notes.append(stray[-1])
                elif t.sideways:
                    # named without its confidence, which moves from frame to frame: the
                    # tracker keeps the note only once it has lasted
                    stray.append(
                        f"seat {seat}: {label_name(t.label)} lies sideways but is not part of "
                        "a meld"
                    )
                    stray_reads.append(t.read)
                    notes.append(stray[-1])
                    open_tiles.append(t)
                else:
                    open_tiles.append(t)
    flowers = reading_order(flowers, lambda t: t.v, lambda t: t.u, unit)
    notes[:0] = [
        f"seat {seat}: is this flower {f.read.describe()}?"
        for f in flowers
        if f.read.needs_confirmation
    ]
    for m in melds:
        if m.needs_confirmation:
            notes.append(f"seat {seat}: {m.describe()}: {m.note}")
    open_tiles = reading_order(open_tiles, lambda t: t.v, lambda t: t.u, unit)
    for t in open_tiles:
        if t.read.needs_confirmation:
            notes.append(f"seat {seat}: unsure of an open tile, {t.read.describe()}")
    return SeatView(
        seat=seat,
        flowers=tuple(Tile(f.label) for f in flowers),
        melds=tuple(melds),
        open_tiles=tuple(Tile(t.label) for t in open_tiles),
        notes=tuple(notes),
        stray_notes=tuple(stray),
        stray_reads=tuple(stray_reads),
        reads=tuple(reads),
        flower_reads=tuple(f.read for f in flowers),
        open_reads=tuple(t.read for t in open_tiles),
    )


def settle_orientation(
    seat: int,
    reads: Sequence[TileRead],
    spans: Sequence[tuple[float, float] | None],
    geometry: TableGeometry | None = None,
) -> list[TileRead]:
    """Turn the tiles whose measured depth says they lie the other way.

    ``spans[i]`` is ``(near, far)``: how far from the seat's edge tile ``i`` begins and ends,
    measured in the picture (``None`` where it could not be). A claimed tile lying sideways
    reaches a quarter less deep than an upright one; a sideways tile with an added one stacked
    beyond it (an added kong) twice as deep as a single sideways tile. The reference is the
    depth the upright tiles show (most of a seat's tiles lie upright), so the tiles' height
    showing in an oblique view (parallax) cancels out. Two stacked tiles found as one are
    split in two; face-down tiles keep their outline.
    """
    if len(spans) != len(reads):
        raise VisionError(f"{len(reads)} tiles but {len(spans)} measured spans")
    geometry = geometry or TableGeometry()
    to_seat = geometry.plane_to_seat(seat)
    tiles = [_in_seat(r, to_seat) for r in reads]
    depths = [span[1] - span[0] if span else None for span in spans]
    measured = [d for t, d in zip(tiles, depths, strict=True) if d and not t.read.face_down]
    up = _upright_depth(measured)
    if up is None:
        return list(reads)
    unit = 0.75 * up  # a tile's width, measured the same way
    out: list[TileRead] = []
    for i, (t, d) in enumerate(zip(tiles, depths, strict=True)):
        sideways: bool | None = None  # no opinion: keep the recogniser's outline
        shape = None if d is None or t.read.face_down else _depth_class(d / up)
        if shape == "sideways":
            sideways = True
        elif shape == "upright":
            sideways = False
        elif shape == "stack":  # two tiles deep: a claimed tile and an added one beyond it
            if any(
                j != i and abs(o.u - t.u) < 0.5 * unit and 0.5 * unit < abs(o.v - t.v) < 1.5 * unit
                for j, o in enumerate(tiles)
            ):
                sideways = True
            elif 2 * t.hu >= 1.15 * unit:  # found as one tile, as wide as a sideways one
                out += _split_stack(t, spans[i], geometry.seat_to_plane(seat))  # type: ignore[arg-type]
                continue
        # anything else (a hand touching it, a shadow) gives no opinion
        if sideways is None or sideways == t.sideways:
            out.append(t.read)
        else:
            c = t.read.quad.mean(axis=0)
            turned = (t.read.quad - c) @ np.array([[0.0, 1.0], [-1.0, 0.0]]) + c
            r = t.read
            out.append(
                TileRead(r.label, r.confidence, turned, r.needs_confirmation, r.alternatives)
            )
    return out


# the depths of a sideways tile, an upright one and a stack of two sideways ones, in upright
# tiles' depths (a tile is 3:4)
_DEPTHS = {"sideways": 0.75, "upright": 1.0, "stack": 1.5}


def _depth_class(ratio: float, tolerance: float = 0.12) -> str | None:
    """Which way a tile lies, by its depth over an upright tile's; ``None`` if none fits."""
    name, centre = min(_DEPTHS.items(), key=lambda kv: abs(ratio - kv[1]))
    return name if abs(ratio - centre) <= tolerance * centre else None


def _upright_depth(depths: Sequence[float]) -> float | None:
    """The depth an upright tile shows, from a seat's measured depths: the value that explains
    most of them as upright, sideways or stacked tiles, the closer the better, with at least
    as many upright tiles as the others (all but one tile of every meld, and every flower and
    open tile, lie upright). ``None`` when no value does."""
    best: tuple[float, float] | None = None
    for d in depths:
        for c in _DEPTHS.values():
            up = d / c
            score, upright, other = 0.0, 0, 0
            for x in depths:
                shape = _depth_class(x / up, 0.1)
                if shape == "upright":
                    upright += 1
                    score += 1.0 - abs(x / up - 1.0)
                elif shape is not None:
                    other += 1
                    score += 0.6 - abs(x / up - _DEPTHS[shape])
            if upright >= max(1, other) and (best is None or score > best[0]):
                best = (score, up)
    return best[1] if best else None


def _split_stack(t: _Tile, span: tuple[float, float], to_plane: np.ndarray) -> list[TileRead]:
    """Two sideways tiles, one beyond the other, filling ``span``: what was found as one."""
    near, far = span
    short = (far - near) / 2
    half_long = short * 2 / 3
    r = t.read
    out = []
    for v0 in (near, near + short):
        local = [
            (t.u - half_long, v0),
            (t.u + half_long, v0),
            (t.u + half_long, v0 + short),
            (t.u - half_long, v0 + short),
        ]
        quad = apply(to_plane, local)
        out.append(TileRead(r.label, r.confidence, quad, r.needs_confirmation, r.alternatives))
    return out


def merge_duplicates(reads: Sequence[TileRead], tile_mm: float | None = None) -> list[TileRead]:
    """One read per tile: tiles never lie on one another, so two reads whose centres are
    closer than half a tile's width are the same tile found twice; the surer one is kept,
    flagged for confirmation with the other's label among its alternatives where the other
    is sure too and disagrees (a tile at the edge of two seat strips is read twice,
    independently); an unsure second read, a ghost of the first, is dropped."""
    if not reads:
        return []
    unit = tile_mm or float(np.median([_in_seat(r, np.eye(3)).short for r in reads]))
    # outlines with no width (a degenerate read) must not make every tile distinct
    unit = unit if unit > 0 else DEFAULT_TILE_MM
    order = sorted(reads, key=lambda r: -r.confidence)
    centres = np.array([r.centre for r in order])
    kept = np.zeros(len(order), bool)
    out: dict[int, TileRead] = {}
    for i in range(len(order)):
        near = np.flatnonzero(kept & (np.hypot(*(centres - centres[i]).T) < 0.5 * unit))
        if not len(near):
            kept[i] = True
            out[i] = order[i]
            continue
        # the same tile read as another: the surer read stands, but not silently
        j, other = int(near[0]), order[i]
        first = out[j]
        if other.label != first.label and not other.needs_confirmation:
            alts = first.alternatives
            if all(a != other.label for a, _ in alts):
                alts = ((other.label, other.confidence), *alts)
            out[j] = replace(first, needs_confirmation=True, alternatives=alts)
    return [out[i] for i in sorted(out)]


def group_table(
    reads: Iterable[TileRead], calibration: Calibration, *, tile_mm: float | None = None
) -> tuple[SeatView, ...]:
    """Every seat's view from the tiles found anywhere on the table: each tile goes to the
    seat whose zone holds its centre, except that a few tiles past the diagonal continuing a
    neighbour's row go with that row (:func:`_across_diagonals`); tiles outside every zone
    (walls, discards) are left out. A tile found twice counts once (:func:`merge_duplicates`).
    A tile seen more often than the set holds it is flagged wherever it is seen
    (:func:`flag_extra_copies`).
    """
    per_seat: list[list[TileRead]] = [[] for _ in range(SEATS)]
    for r in merge_duplicates(list(reads), tile_mm):
        k = calibration.seat_of(r.centre)
        if k is not None:
            per_seat[k].append(r)
    all_reads = [r for rs in per_seat for r in rs]
    if tile_mm is None and all_reads:
        tile_mm = float(np.median([_in_seat(r, np.eye(3)).short for r in all_reads]))
    unit = tile_mm or DEFAULT_TILE_MM
    per_seat = _across_diagonals(per_seat, calibration.geometry, unit)
    views = tuple(
        group_seat(k, per_seat[k], calibration.geometry, tile_mm=tile_mm) for k in range(SEATS)
    )
    return flag_extra_copies(views)


def _in_row_band(mine: Sequence[_Tile], theirs: Sequence[_Tile], unit: float) -> bool:
    """Whether every tile of ``mine`` lies in the band of ``theirs``'s row: as far from the
    seat's edge as its tiles' centres, within half a tile (both in that seat's frame)."""
    low = min(t.v for t in theirs) - 0.5 * unit
    high = max(t.v for t in theirs) + 0.5 * unit
    return all(low <= t.v <= high for t in mine)


def _lies_along(reads: Sequence[TileRead], to_seat: np.ndarray) -> bool:
    """Whether tiles' centres spread further along a seat's edge than away from it."""
    at = apply(to_seat, [r.centre for r in reads])
    return bool(np.ptp(at[:, 0]) > np.ptp(at[:, 1]))


def _across_diagonals(
    per_seat: list[list[TileRead]], geometry: TableGeometry, unit: float
) -> list[list[TileRead]]:
    """Seats' tiles with those past a diagonal given back to the row they continue.

    A meld at the end of a seat's row may reach past the diagonal, and each tile by its own
    centre would cut it in two. So the tiles are grouped first, by touching in their own
    seat's eyes, and a group goes to a neighbour when, seen from the neighbour, it touches the
    neighbour's groups and joins them whole, the neighbour's part being the larger (for a row
    of flowers, or as large, in its band and along its edge, not its own), it makes
    no meld on its own side, and it completes one on the neighbour's (or is flowers, which are
    in whichever row they lie). A meld near the corner never moves, nor does a tile or two
    of a meld being laid there: melds of two seats meeting at a corner stay apart.
    """
    frames = [geometry.plane_to_seat(k) for k in range(SEATS)]
    groups = [
        _components([_in_seat(r, frames[k]) for r in per_seat[k]], unit) for k in range(SEATS)
    ]
    # every seat's tile centres, and which of its groups each is in
    centres = [np.array([t.read.centre for g in gs for t in g]).reshape(-1, 2) for gs in groups]
    owner = [np.array([i for i, g in enumerate(gs) for _ in g], int) for gs in groups]
    reach = REACH * unit
    moves: list[tuple[int, int, list[TileRead]]] = []
    for j in range(SEATS):
        for group in groups[j]:
            reads = [t.read for t in group]
            mine_at = np.array([r.centre for r in reads])
            best: tuple[int, int, list[TileRead]] | None = None  # (how many joined, whose, which)
            for k in _neighbours(j):
                if not len(centres[k]):
                    continue
                apart = np.hypot(*(centres[k][:, None, :] - mine_at[None, :, :]).T)
                close = sorted(set(owner[k][apart.min(axis=0) < reach].tolist()))
                if not close:
                    continue
                mine = [_in_seat(r, frames[k]) for r in reads]
                near = [
                    groups[k][i]
                    for i in close
                    if any(_touching(a, b, unit) for a in mine for b in groups[k][i])
                ]
                theirs = [t for g in near for t in g]
                larger = len(theirs) > max(len(mine), best[0] if best else 0)
                both = [*reads, *(t.read for t in theirs)]
                if (
                    not larger
                    and len(theirs) == len(mine)
                    and best is None
                    and all(r.is_flower for r in both)
                ):
                    # a row of flowers split evenly: it is the seat's along whose edge the
                    # flowers lie (seen from the other seat they would be a column, not a
                    # row), when they lie in that row's band: two rows meeting at a corner
                    # at right angles stay apart
                    larger = (
                        _in_row_band(mine, theirs, unit)
                        and _lies_along(both, frames[k])
                        and not _lies_along(both, frames[j])
                    )
                if larger and len(_components(mine + theirs, unit)) == 1:
                    best = (len(theirs), k, [t.read for t in theirs])
            if best is None or group_seat(j, reads, geometry, tile_mm=unit).melds:
                continue
            _, k, theirs_reads = best
            # what goes over must complete a meld there (or be flowers, which are whoever's
            # row they lie in): a tile or two of a meld being laid at a corner stay put
            before = group_seat(k, theirs_reads, geometry, tile_mm=unit).melds
            after = group_seat(k, theirs_reads + reads, geometry, tile_mm=unit).melds
            if len(after) > len(before) or all(r.is_flower for r in reads):
                moves.append((j, k, reads))
    out = [list(rs) for rs in per_seat]
    for j, k, reads in moves:
        ids = {id(r) for r in reads}
        out[j] = [r for r in out[j] if id(r) not in ids]
        out[k] += reads
    return _rows_continued(out, geometry, unit)


def _legal_melds(view: SeatView) -> int:
    return sum(m.meld is not None for m in view.melds)


def _rows_continued(
    per_seat: list[list[TileRead]], geometry: TableGeometry, unit: float
) -> list[list[TileRead]]:
    """Seats' tiles with a row's far end given back to it: a meld two tiles past the
    diagonal is, seen from the neighbour, a column of single tiles, none of which completes
    the meld alone. The neighbour's tiles in the row's band (as far from the row's edge,
    within half a tile) that join it are taken together, and go over when they complete a
    legal meld there, take no meld from their own seat, and lie along the row's edge rather
    than their own."""
    frames = [geometry.plane_to_seat(k) for k in range(SEATS)]
    out = [list(rs) for rs in per_seat]
    reach = 2 * REACH * unit  # a row's tail is at most a meld's length
    for k in range(SEATS):
        if not out[k]:
            continue
        mine_at = np.array([r.centre for r in out[k]])
        # only the neighbours' tiles within reach of this seat's can join a row of it: the
        # rest are not seen from this seat at all (grouping runs on every frame)
        near_by = {}
        for j in _neighbours(k):
            theirs_at = np.array([r.centre for r in out[j]]).reshape(-1, 2)
            apart = np.hypot(*(theirs_at[:, None, :] - mine_at[None, :, :]).transpose(2, 0, 1))
            closest = apart.min(axis=1, initial=np.inf)
            near_by[j] = [r for r, d in zip(out[j], closest, strict=True) if d < reach]
        if not any(near_by.values()):
            continue
        for row in _components([_in_seat(r, frames[k]) for r in out[k]], unit):
            row_at = np.array([t.read.centre for t in row])
            for j in _neighbours(k):
                near = [r for r in near_by[j] if np.hypot(*(row_at - r.centre).T).min() < reach]
                seen = (_in_seat(r, frames[k]) for r in near)
                band = [t for t in seen if _in_row_band([t], row, unit)]
                taken: list[_Tile] = []
                grown = True
                while grown:  # the band's tiles joined to the row, one touching the next
                    grown = False
                    for t in band:
                        if all(t is not x for x in taken) and any(
                            _touching(t, b, unit) for b in [*row, *taken]
                        ):
                            taken.append(t)
                            grown = True
                if not taken:
                    continue
                reads = [t.read for t in taken]
                rows = [t.read for t in row]
                ids = {id(r) for r in reads}
                rest = [r for r in out[j] if id(r) not in ids]
                if not _lies_along([*rows, *reads], frames[k]) or _lies_along(
                    [*rows, *reads], frames[j]
                ):
                    continue
                if len(group_seat(j, rest, geometry, tile_mm=unit).melds) < len(
                    group_seat(j, out[j], geometry, tile_mm=unit).melds
                ):
                    continue  # it would take a meld from its own seat, legal or not
                before = _legal_melds(group_seat(k, rows, geometry, tile_mm=unit))
                after = _legal_melds(group_seat(k, [*rows, *reads], geometry, tile_mm=unit))
                # (flowers never: a seat's own flower laid at the corner looks the same as a
                # row's tail, and _across_diagonals already gives back a row's tail)
                if after > before:
                    out[j] = rest
                    out[k] += reads
                    near_by[j] = [r for r in near_by[j] if id(r) not in ids]
    return out


def _neighbours(seat: int) -> tuple[int, int]:
    """The seats either side of ``seat``: after it, then before it."""
    return (seat + 1) % SEATS, (seat + 3) % SEATS


def _shown(view: SeatView) -> list[int]:
    return [
        int(t) for t in (*(t for m in view.melds for t in m.tiles), *view.flowers, *view.open_tiles)
    ]


def extra_copies(views: Sequence[SeatView]) -> dict[int, str]:
    """Every tile the views show more often than the set holds it (four of each playing tile,
    one of each flower), with a line saying so."""
    seen = Counter(t for v in views for t in _shown(v))
    out = {}
    for lab, n in seen.items():
        held = COPIES if lab < NUM_KINDS else 1
        if n > held:
            out[lab] = f"{Tile(lab).code} is seen {n} times on the table, and the set has {held}"
    return out


def flag_extra_copies(views: tuple[SeatView, ...]) -> tuple[SeatView, ...]:
    """The views with every tile seen more often than the set holds it (four of each playing
    tile, one of each flower) flagged where it is seen: some read of it is wrong, and which
    one cannot be told, so the players are asked."""
    extra = extra_copies(views)
    if not extra:
        return views
    shown = [_shown(v) for v in views]

    def flag(r: TileRead) -> TileRead:
        if r.label not in extra or r.needs_confirmation:
            return r
        return replace(r, needs_confirmation=True, note=extra[r.label])

    out = []
    for v, tiles in zip(views, shown, strict=True):
        here = sorted(set(tiles) & extra.keys())
        if not here:
            out.append(v)
            continue
        melds = []
        for m in v.melds:
            mine = sorted({int(t) for t in m.tiles} & extra.keys())
            if mine:
                said = [extra[lab] for lab in mine if extra[lab] not in m.note]
                note = "; ".join([*filter(None, [m.note]), *said])
                m = replace(m, needs_confirmation=True, note=note)
            melds.append(m)
        out.append(
            replace(
                v,
                melds=tuple(melds),
                notes=(*v.notes, *(f"seat {v.seat}: {extra[k]}: check the tiles" for k in here)),
                flower_reads=tuple(flag(r) for r in v.flower_reads),
                open_reads=tuple(flag(r) for r in v.open_reads),
            )
        )
    return tuple(out)
