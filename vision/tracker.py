"""The tracker: what lies on the table, as settled over frames, and the changes to it.

Single frames lie: a hand passing over the table hides tiles, glare turns a tile into another
for a frame, a meld half covered reads as loose tiles. :class:`TableTracker` keeps every
seat's flowers, melds and laid-open tiles as *tracks* and reports a :class:`TableChange` only
once a change has been seen for ``stable_frames`` frames:

* something new (a flower, a meld, a tile of a hand being laid open) is confirmed once it has
  been seen ``stable_frames`` times (a frame or two missed in between is forgiven);
* something already confirmed that is not seen is kept for as long as any part of where it
  lay is *hidden*: the part of its place that no tile seen now covers is not bare table.
  Places are judged by area, not by tiles' centres, so a meld pushed less than a tile along,
  still covering most of where it lay, leaves its old place in plain view. Occlusion is
  never read as removal;
* something seen elsewhere that is the same as a confirmed thing whose place has been in
  plain view without it for ``stable_frames`` frames was *pushed* there (the nearest of two
  alike): no change, it lies where it is now. Until that has settled, whatever now lies on
  the old place does not replace it, and a thing seen anew does not settle as new while one
  like it has only just left its place;
* a confirmed thing is *replaced* (a pung becoming an added kong, a misread corrected) when a
  new reading covering the same place has been stable for ``stable_frames`` frames while the
  old one has been out of sight with nothing of its place hidden for as long;
* it is *removed* once its whole place has been in plain view without it (seen as bare table,
  or under other tiles that are seen there) for ``remove_frames`` frames, and no new reading
  of its kind, not yet stable, lies there (an added kong read unsteadily replaces its pung).

Laid-open tiles mean a hand laid open after a win, so loose tiles settle as laid open only
when they cannot be a meld being laid, or one whose claimed tile a hand still covers (tiles
read unsure, such as the fingers of the hand laying it read as 白, do not count): not while
the seat's loose tiles could all be one meld (up to four of a tile, up to three of a
run) and the seat has fewer than four melds, for up to ``laying_frames`` frames; lying
unchanged longer, they are reported as laid open whatever they are (a pung laid with no tile
turned, say: said, never lost). Loose tiles lying where a confirmed meld or flower lies are
that thing seen in part, or misread, and do not count: they neither replace it nor let it be
taken as gone (a flower stays, in doubt while they are seen; a meld whose claimed tile is
read upright stays). Loose tiles hold a meld only when they could be all of it: one tile
of it left behind, or a hand laid open where it lay, does not. Whatever is removed while in
doubt about what it was (a contradiction, a dispute) is reported gone with the flag; a
removal read unsure as it goes (an arm sweeping the table clear) is not. A stray tile's note
(sideways in no meld, face down in no kong) is kept once it has lasted ``stable_frames``,
unless the tile is one of a confirmed meld's own, lying where it lay while the rest of the
meld is out of sight under something: that is the meld seen in part.

What settles is flagged for the players (``needs_confirmation``, with a note saying why,
in the change that reports it and in the settled views) whenever the frames leave it in
doubt, not only when the last frame does:

* its recent frames read it unsure: each frame weighs half as much as the one after it,
  and the unsure ones weigh :data:`DOUBT_WEIGHT` or more of the whole (four unsure frames
  and one sure one leave it in doubt; one unsure frame among sure ones, or a meld's first
  frames read unsure under the hand laying it, do not, and in that frame the thing is shown
  as last read sure; gone from sight after it, that read stands, flagged); once settled in
  doubt this way, with two unsure frames or more among its last ``stable_frames``, it stays
  flagged until no more than one of its last ``remove_frames`` frames was unsure, so the
  flag does not come and go every other frame;
* another reading of its place (another flower, a playing tile where a flower lies, another
  meld; not the same meld seen in part, nor a pung growing into a kong, nor a thing settled
  at the seat pushed along onto it) was seen in two frames or more since it was last seen
  ``remove_frames`` frames running without one: two sure readings taking turns leave
  whichever settled first in doubt, not standing unflagged;
* it replaced a sure reading of its place that it does not grow on (WWW read as NNN for a
  few frames of glare; a flower where a loose tile lay, or the other way round): one of the
  two is a misread. A flower that replaced a loose tile this way is replaced back by it when
  the tile is read again, once: the tile then stays, and flower readings only dispute it;
* a reading it would grow into (a pung made a kong) keeps coming in its place but not
  steadily, two frames or more with frames between that show it only in part (a kong of
  白 whose two sideways blanks read as one tile): it stays flagged "may have become …"
  until that reading settles or stops (a kong read frame after frame settles unflagged);
* the table would then show a tile more often than the set holds it, which no one seat's
  readings can tell. Frames that show a tile more often than that flag every copy they
  show (which one is misread cannot be told); a tile read sure and flagged only so is
  noted "flagged" with the copies, not "read unsure".

Whether a place is bare table needs the picture: the pipeline passes ``is_bare`` (a convex
polygon on the plane -> bool). Without it a place counts as hidden unless tiles seen cover it,
so nothing is removed that is not replaced.

:meth:`TableTracker.reset` starts a new hand (the table clears its tiles between hands).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np

from controller.errors import VisionError
from controller.rules.tiles import Tile
from vision.calibration import SEATS, TableGeometry, apply
from vision.labels import label_name
from vision.melds import (
    DEFAULT_TILE_MM,
    MeldView,
    SeatView,
    TileRead,
    extra_copies,
    flag_extra_copies,
    reading_order,
)

BareTest = Callable[[np.ndarray], bool]
"""Whether a convex polygon on the plane (Nx2 millimetres: a tile's quad, or the part of one
that no tile seen covers) is seen as bare table in the current frame."""


class ChangeKind(StrEnum):
    """What a :class:`TableChange` reports."""

    FLOWER = "flower"  # a new flower
    MELD = "meld"  # a new meld
    MELD_CHANGED = "meld_changed"  # a meld became another (pung -> kong, a misread corrected)
    FLOWER_CHANGED = "flower_changed"  # a flower read again as another
    OPEN_TILES = "open_tiles"  # the tiles laid open changed (the whole set is given)
    REMOVED = "removed"  # something is gone: its place was seen without it


@dataclass(frozen=True)
class TableChange:
    """One settled change at ``seat``, confirmed at frame number ``frame``.

    ``flower`` / ``meld`` is what appeared (or, for ``REMOVED``, what went); ``previous`` is
    what a changed flower or meld was before; ``open_tiles`` is, for ``OPEN_TILES``, every
    tile now laid open. ``needs_confirmation`` is set when what is reported was read unsure, in
    this frame or in enough of the frames it settled over, when another reading of its place
    keeps being seen, when it contradicts a sure earlier reading, or when the table would then
    show a tile more often than the set holds it; ``note`` says which.
    """

    seat: int
    kind: ChangeKind
    frame: int
    flower: Tile | None = None
    meld: MeldView | None = None
    previous: MeldView | Tile | None = None
    open_tiles: tuple[Tile, ...] = ()
    needs_confirmation: bool = False
    note: str = ""

    def describe(self) -> str:
        what = {
            ChangeKind.FLOWER: lambda: f"flower {self.flower}",
            ChangeKind.MELD: lambda: f"meld {self.meld.describe() if self.meld else ''}",
            ChangeKind.MELD_CHANGED: lambda: (
                f"{_text(self.previous)} became {self.meld.describe() if self.meld else ''}"
            ),
            ChangeKind.FLOWER_CHANGED: lambda: f"flower {_text(self.previous)} is {self.flower}",
            ChangeKind.OPEN_TILES: lambda: (
                "laid open: " + " ".join(t.code for t in self.open_tiles)
                if self.open_tiles
                else "the tiles laid open are gone"
            ),
            ChangeKind.REMOVED: lambda: f"{_text(self.meld or self.flower)} is gone",
        }[self.kind]()
        flag = " (please confirm)" if self.needs_confirmation else ""
        why = f": {self.note}" if self.note else ""
        return f"seat {self.seat}: {what}{flag}{why}"

    def to_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "kind": self.kind.value,
            "frame": self.frame,
            "flower": self.flower.code if self.flower is not None else None,
            "meld": self.meld.to_json() if self.meld is not None else None,
            "previous": (
                self.previous.to_json()
                if isinstance(self.previous, MeldView)
                else (self.previous.code if self.previous is not None else None)
            ),
            "open_tiles": [t.code for t in self.open_tiles],
            "needs_confirmation": self.needs_confirmation,
            "note": self.note,
            "text": self.describe(),
        }


def _text(x: MeldView | Tile | None) -> str:
    if isinstance(x, MeldView):
        return x.describe()
    return x.code if x is not None else "?"


_FLOWER, _MELD, _OPEN = "flower", "meld", "open"
_RIVAL_KINDS = {_FLOWER: (_FLOWER, _OPEN), _MELD: (_MELD,), _OPEN: (_OPEN, _FLOWER)}
"""Which other readings of a thing's place dispute it: a flower read in some frames as a
playing tile (a loose one) is in doubt, a meld partly hidden and read as loose tiles is not."""


@dataclass(eq=False)  # tracks are told apart by identity
class _Track:
    kind: str
    key: Any
    value: MeldView | TileRead
    seen: int = 1  # frames it was observed in (while a candidate)
    missed: int = 0  # consecutive frames it was not observed
    gaps: int = 0  # frames it was not observed while a candidate, in all
    clear: int = 0  # consecutive frames unobserved with none of its place hidden
    confirmed: bool = False
    footprint: list[np.ndarray] = field(default_factory=list)
    unsure: float = 0.0  # the weight of its recent frames read unsure (see DOUBT_WEIGHT)
    recent: list[bool] = field(default_factory=list)  # its last frames: read unsure or not
    sure_run: int = 0  # consecutive frames it was observed read sure
    sure: MeldView | TileRead | None = None  # its last reading not flagged
    latched: bool = False  # settled and in doubt from its reads (see observe)
    flagged: MeldView | TileRead | None = None  # its last reading flagged
    contradicts: str = ""  # what sure reading it replaced, not grown on
    # the kinds of reading of its place it settled over, its own and its forerunners' there
    displaced: frozenset[str] = frozenset()
    # other readings of its place seen since it settled (what -> frames), until it has been
    # seen without one for as long as it takes to remove a thing
    disputes: dict[str, int] = field(default_factory=dict)
    undisputed: int = 0

    @property
    def centre(self) -> np.ndarray:
        return np.mean([q.mean(axis=0) for q in self.footprint], axis=0)

    def observe(self, value: MeldView | TileRead, clear_after: int, window: int) -> None:
        """One frame's reading of it. How doubtful its recent frames were is kept (each
        frame weighing half the next), so one sure frame does not wipe out four unsure ones;
        what it replaced is kept until it has been read sure ``clear_after`` frames running."""
        self.value = value
        unsure = bool(value.needs_confirmation)
        if not unsure:
            self.sure = value
        self.unsure = 0.5 * self.unsure + 0.5 * unsure
        self.recent = [*self.recent, unsure][-max(window, clear_after) :]
        if unsure:
            self.sure_run = 0
            self.flagged = value
        else:
            self.sure_run += 1
            if self.sure_run >= clear_after:
                self.contradicts = ""
        # once settled, doubt from more than one unsure frame holds until no more than one
        # of its last clear_after frames was unsure: a flag that came and went with every
        # other frame would tell the players nothing
        if self.confirmed and self.unsure >= DOUBT_WEIGHT and sum(self.recent[-window:]) >= 2:
            self.latched = True
        elif sum(self.recent[-clear_after:]) <= 1:
            self.latched = False

    def replaced(self, old: _Track) -> None:
        """It settled in place of a reading that it contradicts: one of the two is a misread,
        as doubtful as a reading flagged now."""
        self.sure_run = 0
        self.contradicts = f"read as {_what(old.value)} before"


def _read_doubtful(t: _Track) -> bool:
    """Whether its reads leave a track in doubt: a candidate by how its recent frames weigh
    (:data:`DOUBT_WEIGHT`), a settled thing while that doubt holds."""
    return t.latched if t.confirmed else t.unsure >= DOUBT_WEIGHT


def _disputes(r: _Track, t: _Track, settled: set[tuple[str, Any]]) -> bool:
    """Whether reading ``r`` is another reading of ``t``'s place: of a kind that can be
    mistaken for it, not the same thing, not it seen in part or grown (a pung becoming a
    kong, a kong half hidden), not a thing of its kind settled at the seat (``settled``:
    kinds and keys) pushed along onto it, and lying where it lies."""
    return (
        r is not t
        and r.kind in _RIVAL_KINDS[t.kind]
        and not (r.kind == t.kind and (r.kind, r.key) in settled)
        and (r.kind, r.key) != (t.kind, t.key)
        and not _grows_into(r.value, t.value)
        and not _grows_into(t.value, r.value)
        and not _meld_in_part(r.value, t.value)
        and _overlaps(r.footprint, t.footprint)
    )


def _meld_in_part(part: MeldView | TileRead, whole: MeldView | TileRead) -> bool:
    """Whether ``part`` is ``whole`` with some of its tiles unseen (an arm over one of a
    pung's tiles, a tile the finder missed): the same kind of meld, fewer tiles, each of
    them one of the whole's. It says nothing against the whole, so it is no dispute: a
    pung settled as [333p] and read as "[pung? 3p 3p]" in a few frames was put to the
    players for nothing."""
    if not (isinstance(part, MeldView) and isinstance(whole, MeldView)):
        return False
    if part.kind != whole.kind or not 0 < len(part.tiles) < len(whole.tiles):
        return False
    return _tiles_within(part, whole)


def _grows_into(old: MeldView | TileRead, new: MeldView | TileRead) -> bool:
    """Whether ``new`` is ``old`` grown as play grows it: a pung made a kong, a concealed
    kong's faces coming into view; anything else in its place contradicts it."""
    if not (isinstance(old, MeldView) and isinstance(new, MeldView)) or not new.kind.is_kong:
        return False
    return _tiles_within(old, new)


def _tiles_within(part: MeldView, whole: MeldView) -> bool:
    """Whether every tile of ``part`` is one of ``whole``'s, each copy counted."""
    return not Counter(part.tiles) - Counter(whole.tiles)


def _reason(value: MeldView | TileRead) -> str:
    """Why this frame's reading of a thing is flagged."""
    return value.note or "read unsure"


def _read_unsure(value: MeldView | TileRead) -> bool:
    """Whether a flagged reading was flagged for how surely its tiles were read, not only for
    what the table or the meld's shape says (copies of a tile, an illegal meld)."""
    if isinstance(value, MeldView):
        return any(r.needs_confirmation for r in value.reads)
    return not value.note


def _read_as(value: MeldView | TileRead) -> str:
    """How a thing was read, for a note: a meld's own note, or the tile, how sure, the
    runner-up, and why a tile read sure was flagged."""
    if isinstance(value, MeldView):
        return value.note or value.describe()
    return f"{value.describe()}: {value.note}" if value.note else value.describe()


def _what(value: MeldView | TileRead) -> str:
    return value.describe() if isinstance(value, MeldView) else label_name(value.label)


def _seen_in_part(meld: _Track, read: TileRead) -> bool:
    """Whether a tile read apart from any meld is one of settled ``meld``'s own tiles (a
    back only where it shows one), lying where that tile lay."""
    assert isinstance(meld.value, MeldView)
    return any(
        own.label == read.label and _overlaps([read.quad], [own.quad]) for own in meld.value.reads
    )


def _footprint(value: MeldView | TileRead) -> list[np.ndarray]:
    if isinstance(value, MeldView):
        return [r.quad for r in value.reads]
    return [value.quad]


DOUBT_WEIGHT = 0.3
"""A settled thing is in doubt while its frames read unsure weigh this much of its recent
frames, each frame weighing half the next: four unsure frames then a sure one weigh 0.47,
unsure and sure frames taking turns 0.33 after a sure one; one unsure frame among sure ones
weighs 0.25 a frame later, and a meld whose first three frames were read unsure under the
hand laying it 0.22 when it settles."""
EDGE_MM = 3.0
"""How far beyond a seen tile's outline its edge may still show (the outline found is a few
millimetres off, and the tile's side shows around its face): what it covers, it covers that
much further."""
PIECE_FRACTION = 0.15
"""A part of a place left uncovered by seen tiles smaller than this share of it is not judged:
too thin a strip to tell felt from a tile's edge."""
OVERLAP_FRACTION = 0.2
"""Two footprints share ground when they overlap by more than this share of a tile: neighbours
laid touching overlap only by what their outlines are off."""


def _ccw(poly: np.ndarray) -> np.ndarray:
    """A convex polygon's corners counter-clockwise (the plane's y runs down: any fixed
    winding will do, as long as every polygon has the same)."""
    poly = np.asarray(poly, np.float64)
    return poly if _signed_area(poly) >= 0 else poly[::-1]


def _signed_area(poly: np.ndarray) -> float:
    x, y = poly[:, 0], poly[:, 1]
    wrap = x[-1] * y[0] - y[-1] * x[0]
    return 0.5 * float(np.dot(x[:-1], y[1:]) - np.dot(y[:-1], x[1:]) + wrap)


def _clip(poly: np.ndarray, a: np.ndarray, b: np.ndarray, keep_left: bool) -> np.ndarray:
    """The part of a convex polygon on one side of the line through ``a`` and ``b``."""
    if len(poly) == 0:
        return poly
    d = b - a
    side = d[0] * (poly[:, 1] - a[1]) - d[1] * (poly[:, 0] - a[0])
    if not keep_left:
        side = -side
    out = []
    for i in range(len(poly)):
        j = (i + 1) % len(poly)
        if side[i] >= 0:
            out.append(poly[i])
        if (side[i] >= 0) != (side[j] >= 0):
            t = side[i] / (side[i] - side[j])
            out.append(poly[i] + t * (poly[j] - poly[i]))
    return np.array(out).reshape(-1, 2)


def _edges(poly: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(poly[i], poly[(i + 1) % len(poly)]) for i in range(len(poly))]


def _intersection(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The common part of two counter-clockwise convex polygons."""
    for a, b in _edges(q):
        p = _clip(p, a, b, keep_left=True)
    return p


def _minus(p: np.ndarray, q: np.ndarray) -> list[np.ndarray]:
    """The parts of a convex polygon ``p`` outside a convex ``q`` (both counter-clockwise),
    as convex pieces: beyond each of ``q``'s edges in turn, of what is left inside the others."""
    pieces = []
    for a, b in _edges(q):
        outside = _clip(p, a, b, keep_left=False)
        if len(outside) >= 3 and abs(_signed_area(outside)) > 1e-6:
            pieces.append(outside)
        p = _clip(p, a, b, keep_left=True)
        if len(p) < 3:
            break
    return pieces


def _grow(poly: np.ndarray, mm: float) -> np.ndarray:
    """A counter-clockwise convex polygon with every edge moved ``mm`` outwards."""
    d = np.roll(poly, -1, axis=0) - poly
    lengths = np.hypot(d[:, 0], d[:, 1])
    lengths[lengths == 0] = 1.0
    normal = np.stack([d[:, 1], -d[:, 0]], axis=1) / lengths[:, None]  # outward of each edge
    before = np.roll(normal, 1, axis=0)  # the edge ending at each corner
    bisector = (before + normal) / np.maximum(1.0 + np.sum(before * normal, axis=1), 0.1)[:, None]
    return poly + mm * bisector


def _uncovered(place: np.ndarray, seen: np.ndarray) -> list[np.ndarray]:
    """The parts of a place (a convex polygon) that no seen tile (``seen``: Nx4x2) covers, as
    convex pieces, leaving out slivers too small to judge."""
    place = _ccw(place)
    whole = abs(_signed_area(place))
    pieces = [place]
    lo, hi = place.min(axis=0) - EDGE_MM, place.max(axis=0) + EDGE_MM
    near = (seen.min(axis=1) < hi).all(axis=1) & (seen.max(axis=1) > lo).all(axis=1)
    for tile in seen[near]:
        grown = _grow(_ccw(tile), EDGE_MM)
        pieces = [part for piece in pieces for part in _minus(piece, grown)]
        if not pieces:
            break
    return [p for p in pieces if abs(_signed_area(p)) >= PIECE_FRACTION * whole]


def _apart(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two sets of points have bounding boxes that do not meet."""
    return bool((a.min(axis=0) >= b.max(axis=0)).any() or (b.min(axis=0) >= a.max(axis=0)).any())


def _overlaps(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    """Two footprints share ground: their tiles overlap by more than a small share of one."""
    if _apart(np.concatenate(a), np.concatenate(b)):
        return False
    shared = 0.0
    for qa in a:
        for qb in b:
            if not _apart(qa, qb):
                common = _intersection(_ccw(qa), _ccw(qb))
                if len(common) >= 3:
                    shared += abs(_signed_area(common))
    if not shared:
        return False
    tile = min(abs(_signed_area(q)) for q in a + b)
    return shared > OVERLAP_FRACTION * tile


class TableTracker:
    """Settles per-frame :class:`~vision.melds.SeatView` readings into a stable table.

    ``stable_frames`` is how many frames a change must be seen before it is reported;
    ``remove_frames`` how long a place must be in plain view without what lay there before it is
    removed (at least ``stable_frames``, so that a thing replaced is not reported removed);
    ``forget_frames`` how many frames in a row a not-yet-confirmed reading may be missed before
    it is forgotten; ``match_mm`` how far a thing may shift between frames and stay the same;
    ``laying_frames`` how long loose tiles that could still be one meld being laid wait before
    they count as laid open all the same.
    """

    def __init__(
        self,
        geometry: TableGeometry | None = None,
        *,
        stable_frames: int = 5,
        remove_frames: int = 8,
        forget_frames: int = 3,
        match_mm: float = 20.0,
        laying_frames: int = 20,
    ) -> None:
        if stable_frames < 1 or remove_frames < 1 or forget_frames < 1 or laying_frames < 1:
            raise VisionError("the tracker's frame counts must be 1 or more")
        if remove_frames < stable_frames:
            # a replacement needs stable_frames of the new reading; removing the old one
            # sooner would report a pung becoming a kong as one gone and another new
            raise VisionError(
                f"remove_frames ({remove_frames}) must be at least stable_frames ({stable_frames})"
            )
        self.geometry = geometry or TableGeometry()
        self.stable_frames = stable_frames
        self.remove_frames = remove_frames
        self.laying_frames = laying_frames
        self.forget_frames = forget_frames
        self.match_mm = float(match_mm)
        self.frame = -1
        self._tracks: list[list[_Track]] = [[] for _ in range(SEATS)]
        # each seat's notes about stray tiles: {note: [frames seen, frames missed since]}
        self._stray: list[dict[str, list[int]]] = [{} for _ in range(SEATS)]

    def reset(self) -> None:
        """Forget everything: a new hand starts on a cleared table."""
        self._tracks = [[] for _ in range(SEATS)]
        self._stray = [{} for _ in range(SEATS)]

    # -- the stable table ----------------------------------------------------------------------

    @property
    def views(self) -> tuple[SeatView, ...]:
        """Every seat's settled view, with any tile the table then shows more often than the
        set holds it flagged wherever it lies (one seat's view cannot tell)."""
        return flag_extra_copies(tuple(self.view(k) for k in range(SEATS)))

    def view(self, seat: int) -> SeatView:
        """Seat ``seat``'s settled view: its confirmed flowers, melds and open tiles in the
        order they lie, with notes for whatever was read unsure."""
        to_seat = self.geometry.plane_to_seat(seat)
        tracks = [t for t in self._tracks[seat] if t.confirmed]

        def ordered(kind: str) -> list[_Track]:
            chosen = [t for t in tracks if t.kind == kind]
            where = {id(t): apply(to_seat, [t.centre])[0] for t in chosen}
            return reading_order(
                chosen, lambda t: where[id(t)][1], lambda t: where[id(t)][0], DEFAULT_TILE_MM
            )

        flowers = ordered(_FLOWER)
        melds = ordered(_MELD)
        opens = ordered(_OPEN)
        notes: list[str] = []
        everything = self._tracks[seat]
        reads: list[TileRead] = []

        def settled(chosen: list[_Track], say: Callable[[Any, str], str]) -> list[Any]:
            # each thing as settled, flagged with the reason as its note when in doubt
            out = []
            for t in chosen:
                value, why = t.value, self._doubt(t, everything)
                if not why and value.needs_confirmation:
                    if t.missed:  # gone from sight after it (a hand picking it up): it stands
                        why = _reason(value)
                    else:  # a flag for one frame would tell the players nothing
                        value = t.sure or value
                reads.extend(value.reads if isinstance(value, MeldView) else [value])
                if why:
                    notes.append(say(value, why))
                    value = replace(value, needs_confirmation=True, note=why)
                out.append(value)
            return out

        flower_reads = settled(
            flowers, lambda r, why: f"seat {seat}: is this flower {r.describe()}? {why}"
        )
        meld_views = settled(melds, lambda m, why: f"seat {seat}: {m.describe()}: {why}")
        open_reads = settled(
            opens, lambda r, why: f"seat {seat}: unsure of an open tile, {r.describe()}: {why}"
        )
        stray = [n for n, (seen, _) in self._stray[seat].items() if seen >= self.stable_frames]
        notes += stray
        return SeatView(
            seat=seat,
            flowers=tuple(Tile(r.label) for r in flower_reads),
            melds=tuple(meld_views),
            open_tiles=tuple(Tile(r.label) for r in open_reads),
            notes=tuple(notes),
            reads=tuple(reads),
            flower_reads=tuple(flower_reads),
            open_reads=tuple(open_reads),
            stray_notes=tuple(stray),
        )

    def _doubt(
        self,
        t: _Track,
        tracks: Sequence[_Track],
        *,
        reads: bool = True,
        but_for: str | None = None,
    ) -> str:
        """Why the players should confirm what a track holds, or "" when nothing puts it in
        doubt: its reading now is unsure (not when it was read sure before and this is the
        only recent frame read unsure: :meth:`view` then shows it as last read sure, unless
        it has since gone out of sight); or its recent frames weigh unsure
        (:data:`DOUBT_WEIGHT`); or it replaced a sure reading it does not grow on, and has
        not been read sure ``remove_frames`` times running since; or another reading of its
        place, not settled, keeps being seen (two sure readings taking turns: whichever
        settled first would otherwise stand, unflagged). ``reads=False`` leaves out how it
        was read (only what it was is in doubt); ``but_for`` leaves out the readings of its
        place as that."""
        why: list[str] = []
        # one unsure frame among sure ones is no doubt: the thing is shown as last read sure
        if reads and t.value.needs_confirmation and (t.sure is None or _read_doubtful(t)):
            why.append(_reason(t.value))
        elif reads and _read_doubtful(t):
            k, n = sum(t.recent), len(t.recent)
            when = f"in {k} of its last {n} frames" if k >= 2 else "lately"
            assert t.flagged is not None  # in doubt from its reads: some were flagged
            # read unsure, or (read sure) flagged for what the table shows, such as copies
            how = "read unsure" if _read_unsure(t.flagged) else "flagged"
            why.append(f"{how} {when} ({_read_as(t.flagged)})")
        if t.contradicts:
            why.append(t.contradicts)
        if t.confirmed:
            why += self._unsteady_growth(t, tracks)
        # a candidate: the other readings of its place still going
        disputes = t.disputes if t.confirmed else self._live_disputes(t, tracks)
        for what, n in disputes.items():
            if n >= 2 and what != but_for:  # once is a glimpse (a hand's shadow, a tile laid)
                why.append(f"also read as {what} in {n} frames")
        return "; ".join(why)

    def _unsteady_growth(self, t: _Track, tracks: Sequence[_Track]) -> list[str]:
        """What settled ``t`` may have grown into (a pung made a kong) by readings of its
        place that keep coming but not steadily enough to settle: between them it is seen
        only in part (a kong of 白 whose two sideways blanks read as one tile). A growth read
        frame after frame settles within ``stable_frames`` and is no doubt meanwhile."""
        return [
            f"may have become {_what(r.value)}: read so in {r.seen} frames, not steadily"
            for r in tracks
            if not r.confirmed
            and r.missed < self.forget_frames
            and r.seen >= 2
            and r.gaps >= 1
            and _grows_into(t.value, r.value)
            and _overlaps(r.footprint, t.footprint)
        ]

    def _live_disputes(self, t: _Track, tracks: Sequence[_Track]) -> dict[str, int]:
        """The readings of ``t``'s place not settled and still going, and the frames each
        has been seen in (not a reading of a thing of its kind settled at the seat: that is
        the thing, pushed along)."""
        settled = {(c.kind, c.key) for c in tracks if c.confirmed}
        return {
            _what(r.value): r.seen
            for r in tracks
            if not r.confirmed and r.missed < self.forget_frames and _disputes(r, t, settled)
        }

    # -- one frame -----------------------------------------------------------------------------

    def update(
        self,
        views: Sequence[SeatView],
        *,
        is_bare: BareTest | None = None,
        frame: int | None = None,
    ) -> list[TableChange]:
        """Take one frame's readings (a :class:`SeatView` per seat) and return the changes
        that became settled with it. ``frame`` is the frame's number, which the changes
        carry (the camera's count, as the pipeline gives it); by default one more than the
        last update's."""
        if len(views) != SEATS:
            raise VisionError(f"the tracker takes four seat views, not {len(views)}")
        self.frame = self.frame + 1 if frame is None else int(frame)
        # a tile across a zone's edge still covers what it lies on
        seen = np.array([r.quad for view in views for r in view.reads]).reshape(-1, 4, 2)
        changes: list[TableChange] = []
        for view in views:
            changes += self._update_seat(view, seen, is_bare)
            self._update_stray(view)
        return self._with_extra_copies_flagged(changes) if changes else changes

    def _with_extra_copies_flagged(self, changes: list[TableChange]) -> list[TableChange]:
        """The changes, with any that shows a tile the settled table now holds more often than
        the set does flagged: each seat's readings may be sure, and the table still wrong."""
        extra = extra_copies([self.view(k) for k in range(SEATS)])
        if not extra:
            return changes
        out = []
        for c in changes:
            if c.kind == ChangeKind.REMOVED:
                out.append(c)
                continue
            tiles = [*(c.meld.tiles if c.meld else ()), *c.open_tiles]
            tiles += [c.flower] if c.flower is not None else []
            over = sorted({int(t) for t in tiles} & extra.keys())
            if not over:
                out.append(c)
                continue
            said = [extra[lab] for lab in over if extra[lab] not in c.note]
            why = "; ".join([*filter(None, [c.note]), *said])
            meld = replace(c.meld, needs_confirmation=True, note=why) if c.meld else None
            out.append(replace(c, meld=meld, needs_confirmation=True, note=why))
        return out

    def _observations(self, view: SeatView) -> list[tuple[str, Any, MeldView | TileRead]]:
        obs: list[tuple[str, Any, MeldView | TileRead]] = []
        obs += [(_FLOWER, r.label, r) for r in view.flower_reads]
        obs += [(_MELD, m.key, m) for m in view.melds]
        obs += [(_OPEN, r.label, r) for r in view.open_reads]
        return obs

    def _update_seat(
        self, view: SeatView, seen: np.ndarray, is_bare: BareTest | None
    ) -> list[TableChange]:
        seat = view.seat
        tracks = self._tracks[seat]
        observed: set[int] = set()
        fresh: list[_Track] = []
        # match each observation to the nearest track of the same kind and identity
        for kind, key, value in self._observations(view):
            foot = _footprint(value)
            centre = np.mean([q.mean(axis=0) for q in foot], axis=0)
            best, best_d = None, self.match_mm
            for i, t in enumerate(tracks):
                if i in observed or t.kind != kind or t.key != key:
                    continue
                d = float(np.hypot(*(t.centre - centre)))
                if d <= best_d:
                    best, best_d = i, d
            if best is None:
                track = _Track(kind, key, value, footprint=foot)
                track.observe(value, self.remove_frames, self.stable_frames)
                fresh.append(track)
                continue
            t = tracks[best]
            observed.add(best)
            t.observe(value, self.remove_frames, self.stable_frames)
            t.footprint = foot
            t.seen += 1
            t.missed = t.clear = 0
        self._dispute(
            [t for i, t in enumerate(tracks) if t.confirmed and i in observed],
            [t for i, t in enumerate(tracks) if t.confirmed],
            [t for i, t in enumerate(tracks) if not t.confirmed and i in observed] + fresh,
        )
        # what was not seen: hidden, replaced by what is seen there, or gone
        for i, t in enumerate(tracks):
            if i in observed:
                continue
            t.missed += 1
            if not t.confirmed:
                t.gaps += 1
                continue
            hidden = any(self._hidden(q, seen, is_bare) for q in t.footprint)
            t.clear = 0 if hidden else t.clear + 1
        tracks += fresh
        changes = self._settle(seat, tracks)
        # forget readings that never settled
        self._tracks[seat] = [t for t in tracks if t.confirmed or t.missed < self.forget_frames]
        return changes

    def _dispute(self, seen: list[_Track], settled: list[_Track], unsettled: list[_Track]) -> None:
        """Count against each settled thing the other readings of its place seen this frame,
        and clear its disputes once it has been seen without any for ``remove_frames``
        frames: two sure readings taking turns leave the settled one in doubt, not whichever
        happened to settle first standing unflagged."""
        disputed: set[int] = set()
        known = {(t.kind, t.key) for t in settled}
        for r in unsettled:
            for t in settled:
                if not _disputes(r, t, known):
                    continue
                what = _what(r.value)
                t.disputes[what] = t.disputes.get(what, 0) + 1
                t.undisputed = 0
                disputed.add(id(t))
        for t in seen:
            if id(t) not in disputed:
                t.undisputed += 1
                if t.undisputed >= self.remove_frames:
                    t.disputes.clear()

    def _update_stray(self, view: SeatView) -> None:
        # a stray tile's note (a face-down tile in no kong, a sideways one in no meld) is
        # kept like a tile: once seen for stable_frames, until missed for remove_frames, so
        # a hand laid open with 白 read face down is not settled as if nothing were amiss
        stray = self._stray[view.seat]
        notes = view.stray_notes
        # a settled meld out of sight, part of its place hidden (a hand over it)
        melds = [
            t
            for t in self._tracks[view.seat]
            if t.confirmed and t.kind == _MELD and t.missed and not t.clear
        ]
        if melds and len(view.stray_reads) == len(notes):
            # a tile of its own lying where it lies is that meld seen in part: its claimed
            # tile alone is sideways in no meld, a concealed kong's end alone face down in no
            # kong, and nothing is amiss; another tile there is still asked about
            notes = tuple(
                n
                for n, r in zip(notes, view.stray_reads, strict=True)
                if not any(_seen_in_part(t, r) for t in melds)
            )
        for note in set(notes):
            counts = stray.setdefault(note, [0, 0])
            counts[0] += 1
            counts[1] = 0
        for note in [n for n in stray if n not in notes]:
            stray[note][1] += 1
            # as a reading not yet settled is forgiven a frame or two missed, so is a note
            settled = stray[note][0] >= self.stable_frames
            if stray[note][1] >= (self.remove_frames if settled else self.forget_frames):
                del stray[note]

    def _hidden(self, quad: np.ndarray, seen: np.ndarray, is_bare: BareTest | None) -> bool:
        """Whether a place cannot be seen: some part of it that no seen tile covers is not
        bare table. By area, not by tiles' centres: a meld pushed less than a tile along still
        covers most of where it lay, and the rest of its old place must count as seen."""
        pieces = _uncovered(quad, seen)
        if not pieces:
            return False
        return is_bare is None or not all(is_bare(p) for p in pieces)

    def _settle(self, seat: int, tracks: list[_Track]) -> list[TableChange]:
        changes: list[TableChange] = []
        open_changed = False
        open_notes: list[str] = []  # loose tiles that became flowers, or the reverse
        ready = [
            t for t in tracks if not t.confirmed and not t.missed and t.seen >= self.stable_frames
        ]
        # things pushed along the table first, so that whatever now lies where they were is
        # not taken for their replacement
        self._settle_moves(ready, tracks)
        hand_open = any(t.kind == _OPEN for t in ready) and self._hand_open(tracks)
        for cand in ready:
            rivals = self._rivals_if_settling(cand, tracks, hand_open)
            if rivals is None:
                continue
            changes += self._confirm(seat, cand, rivals, tracks, open_notes)
            open_changed |= cand.kind == _OPEN or any(t.kind == _OPEN for t in rivals)
        open_changed |= self._drop_gone(seat, tracks, changes)
        if open_changed:
            changes.append(self._open_tiles_change(seat, tracks, open_notes))
        return changes

    def _settle_moves(self, ready: list[_Track], tracks: list[_Track]) -> None:
        """Fold each steady new reading that is a settled thing pushed along into that thing."""
        for cand in ready:
            old = self._moved_from(cand, tracks)
            if old is not None:
                old.value, old.footprint = cand.value, cand.footprint
                old.missed = old.clear = 0
                tracks.remove(cand)

    def _rivals_if_settling(
        self, cand: _Track, tracks: list[_Track], hand_open: bool
    ) -> list[_Track] | None:
        """The settled readings a steady new one replaces, or None while it must wait."""
        if cand not in tracks:
            return None
        if cand.kind == _OPEN and not hand_open:
            return None  # loose tiles that may be a meld still being laid: not a hand yet
        if self._leaving(cand, tracks):
            return None  # the same thing just left its place: it may have been pushed here
        rivals = [
            t
            for t in tracks
            if t.confirmed and t is not cand and _overlaps(t.footprint, cand.footprint)
        ]
        if any(t.missed == 0 or t.clear < self.stable_frames for t in rivals):
            return None  # the old reading is still there, or its place is hidden: wait
        if cand.kind == _OPEN and any(self._holds_against(t, cand, tracks) for t in rivals):
            return None  # a loose tile where a meld or flower lies is it misread, in part
        if cand.kind == _FLOWER and any(t.kind == _OPEN and _FLOWER in t.displaced for t in rivals):
            # a loose tile that came back from being read as a flower: a flower reading now
            # puts it in doubt (a dispute), it does not flip it over again
            return None
        if any(self._arriving(t, tracks) for t in rivals):
            return None  # what lay here is seen elsewhere, not yet settled: it may have moved
        return rivals

    def _confirm(
        self,
        seat: int,
        cand: _Track,
        rivals: list[_Track],
        tracks: list[_Track],
        open_notes: list[str],
    ) -> list[TableChange]:
        """Settle ``cand`` in place of ``rivals``; the changes to report (a note for each loose
        tile contradicted goes into ``open_notes``)."""
        cand.disputes.update(self._live_disputes(cand, tracks))
        cand.confirmed = True
        cand.latched = cand.unsure >= DOUBT_WEIGHT
        for t in rivals:
            tracks.remove(t)
        changed = [t for t in rivals if (t.kind, t.key) != (cand.kind, cand.key)]
        for t in changed:
            # what lay here before, and what that had displaced (a tile that came back
            # from a flower and was then read as another tile still came back)
            cand.displaced |= t.displaced | {t.kind}
            # a sure reading contradicted, not grown on: one of the two is a misread; a
            # flower where a loose tile lay, or the reverse, whatever the doubt before
            if {t.kind, cand.kind} == {_FLOWER, _OPEN} or (
                t.kind == cand.kind
                and not _grows_into(t.value, cand.value)
                and not self._doubt(t, tracks, but_for=_what(cand.value))
            ):
                cand.replaced(t)
                if _OPEN in (t.kind, cand.kind):
                    open_notes.append(f"{_what(t.value)} read as {_what(cand.value)}")
        if len(changed) == len(rivals):
            return self._report(seat, cand, changed, tracks)
        # the same thing, only nudged: just what else it displaced is gone
        return [self._removed(seat, t) for t in changed if t.kind != _OPEN]

    def _drop_gone(self, seat: int, tracks: list[_Track], changes: list[TableChange]) -> bool:
        """Drop the settled things whose place has been seen clear long enough, adding their
        removals to ``changes``; whether a loose tile went."""
        open_changed = False
        for t in [t for t in tracks if t.confirmed and t.clear >= self.remove_frames]:
            if any(
                not c.confirmed
                and (
                    c.kind in (t.kind, *_RIVAL_KINDS[t.kind])
                    or (c.kind == _OPEN and self._holds_against(t, c, tracks))
                )
                and c.missed < self.forget_frames
                and _overlaps(c.footprint, t.footprint)
                for c in tracks
            ):
                # a new reading of its place, not yet steady, will replace it; or it is read
                # as a loose tile there (a flower as a playing tile), and is still there
                continue
            tracks.remove(t)
            open_changed |= t.kind == _OPEN
            if t.kind != _OPEN:
                changes.append(self._removed(seat, t))
        return open_changed

    def _open_tiles_change(
        self, seat: int, tracks: list[_Track], open_notes: list[str]
    ) -> TableChange:
        """The seat's loose tiles as they now stand, flagged with every doubt about them."""
        opens = [t for t in tracks if t.confirmed and t.kind == _OPEN]
        doubts = [*open_notes]
        doubts += [f"{_what(t.value)}: {why}" for t in opens if (why := self._doubt(t, tracks))]
        doubts = [*dict.fromkeys(doubts)]  # four 5s flagged alike: said once
        return TableChange(
            seat,
            ChangeKind.OPEN_TILES,
            self.frame,
            open_tiles=self.view(seat).open_tiles,
            needs_confirmation=bool(doubts),
            note="; ".join(doubts),
        )

    def _holds_against(self, t: _Track, loose: _Track, tracks: Sequence[_Track]) -> bool:
        """Whether settled ``t`` stands against a loose tile read on its place: a flower
        (misread as a playing tile), unless it had itself displaced a loose tile; a meld,
        when the loose tiles on its place could be all of it (its claimed tile read upright,
        say), not one tile of it left behind."""
        if t.kind == _FLOWER:
            return _OPEN not in t.displaced
        if t.kind != _MELD or loose.kind != _OPEN:
            return False
        assert isinstance(t.value, MeldView)
        own = [int(x) for x in t.value.tiles]
        here = [
            int(c.value.label)  # type: ignore[union-attr]
            for c in tracks
            if c.kind == _OPEN
            and not c.confirmed
            and c.missed < self.forget_frames
            and _overlaps(c.footprint, t.footprint)
        ]
        return bool(own) and len(here) >= len(own) and set(here) <= set(own)

    def _moved_from(self, cand: _Track, tracks: list[_Track]) -> _Track | None:
        """The nearest confirmed track of the same thing, out of sight with its place in plain
        view for as long as the new reading has been steady: the thing was pushed along."""
        gone = [
            t
            for t in tracks
            if t.confirmed
            and (t.kind, t.key) == (cand.kind, cand.key)
            and t.clear >= self.stable_frames
        ]
        return min(gone, key=lambda t: float(np.hypot(*(t.centre - cand.centre))), default=None)

    def _leaving(self, cand: _Track, tracks: list[_Track]) -> bool:
        """Whether a confirmed track of the same thing has lately begun to be out of sight
        with its place in plain view: until that has lasted, it may be what moved here."""
        return any(
            t.confirmed
            and (t.kind, t.key) == (cand.kind, cand.key)
            and 0 < t.clear < self.stable_frames
            for t in tracks
        )

    def _arriving(self, old: _Track, tracks: list[_Track]) -> bool:
        """Whether a reading of the same thing as ``old`` is seen elsewhere, not yet steady:
        ``old`` may have been pushed there, which is not known until that reading settles."""
        return any(
            not t.confirmed
            and (t.kind, t.key) == (old.kind, old.key)
            and t.missed < self.forget_frames
            for t in tracks
        )

    def _hand_open(self, tracks: list[_Track]) -> bool:
        """Whether a seat's loose tiles are a hand laid open rather than a meld being laid
        (or one whose sideways tile a hand still covers): they are, unless they could all be
        one meld (up to four of a tile, or up to three of a run) and the seat has room for it."""
        if sum(t.confirmed and t.kind == _MELD for t in tracks) >= 4:
            return True  # no fifth meld: loose tiles can only be the hand
        # only what is steady, and not where a meld or flower lies (that is it, seen in part
        # past a hand): a tile misread for a frame must not make two of a tile a hand
        others = [t for t in tracks if t.confirmed and t.kind != _OPEN]
        steady = [
            t
            for t in tracks
            if t.kind == _OPEN
            and (t.confirmed or (not t.missed and t.seen >= self.stable_frames))
            and not any(_overlaps(t.footprint, o.footprint) for o in others)
        ]
        if not steady:
            return False  # every loose tile lies on a meld or flower: that thing, in part
        if min(t.seen for t in steady) >= self.laying_frames:
            # lying that long unchanged, they are not a meld being laid: whatever they are
            # (a pung laid with no tile turned, say), they are said, not lost
            return True
        # an unsure read does not count against "one meld": the fingers of a hand laying a
        # meld read as 白 at 0.4 must not turn the meld into a hand laid open
        loose = sorted(
            int(t.value.label)  # type: ignore[union-attr]
            for t in steady
            if not t.value.needs_confirmation
        )
        if not loose:
            return False
        same = len(loose) <= 4 and len(set(loose)) == 1
        run = (
            len(loose) <= 3
            and len(set(loose)) == len(loose)
            and loose[-1] < 27
            and loose[0] // 9 == loose[-1] // 9
            and loose[-1] - loose[0] <= 2
        )
        return not (same or run)

    def _report(
        self, seat: int, cand: _Track, rivals: list[_Track], tracks: list[_Track]
    ) -> list[TableChange]:
        out: list[TableChange] = []
        note = self._doubt(cand, tracks)
        old_melds = [t for t in rivals if t.kind == _MELD]
        old_flowers = [t for t in rivals if t.kind == _FLOWER]
        if cand.kind == _MELD:
            meld = cand.value
            assert isinstance(meld, MeldView)
            if note:
                meld = replace(meld, needs_confirmation=True, note=note)
            prev = old_melds.pop(0).value if old_melds else None
            assert prev is None or isinstance(prev, MeldView)  # a meld's track holds its view
            kind = ChangeKind.MELD if prev is None else ChangeKind.MELD_CHANGED
            out.append(
                TableChange(
                    seat,
                    kind,
                    self.frame,
                    meld=meld,
                    previous=prev,
                    needs_confirmation=bool(note),
                    note=note,
                )
            )
        elif cand.kind == _FLOWER:
            prev_tile = None
            if old_flowers:
                old = old_flowers.pop(0).value
                assert isinstance(old, TileRead)  # a flower's rivals are single tiles
                prev_tile = Tile(old.label)
            assert isinstance(cand.value, TileRead)
            kind = ChangeKind.FLOWER if prev_tile is None else ChangeKind.FLOWER_CHANGED
            out.append(
                TableChange(
                    seat,
                    kind,
                    self.frame,
                    flower=Tile(cand.value.label),
                    previous=prev_tile,
                    needs_confirmation=bool(note),
                    note=note,
                )
            )
        # whatever else the new reading displaced is gone
        out += [self._removed(seat, t) for t in old_melds + old_flowers]
        return out

    def _removed(self, seat: int, t: _Track) -> TableChange:
        # what goes while in doubt about what it was may not have been what lay there: say
        # so (not for reads unsure as it goes: an arm sweeping the table clear)
        why = self._doubt(t, (), reads=False)
        meld = t.value if t.kind == _MELD else None
        return TableChange(
            seat,
            ChangeKind.REMOVED,
            self.frame,
            meld=meld,  # type: ignore[arg-type]
            flower=None if meld is not None else Tile(t.value.label),  # type: ignore[union-attr]
            needs_confirmation=bool(why),
            note=why,
        )
