"""The table pipeline: camera frame -> table plane -> recogniser -> seat views -> tracker.

:class:`TablePipeline` is what the controller calls. Given a :class:`~vision.calibration.
Calibration` and a recogniser, :meth:`~TablePipeline.read` turns one frame into a
:class:`TableReading` (every tile found, on the table plane, and each seat's
:class:`~vision.melds.SeatView` from that frame alone); :meth:`~TablePipeline.process` also
feeds the :class:`~vision.tracker.TableTracker` and returns a :class:`TableUpdate` with the
settled views and the changes that settled with this frame; :meth:`~TablePipeline.watch`
does that for every frame of a camera, riding out a camera that disappears.

The recogniser reads, by default, the camera frame as it is (``mode="frame"``), as it was
trained to; ``mode="seats"`` gives it instead each seat's strip of the table, cut out of the
frame and turned so that the seat's tiles stand upright (perspective removed, every tile at
one scale), which suits a recogniser trained on such strips. Either way the tiles found are
mapped onto the plane, a tile found twice is counted once, a face-down tile found where the
picture shows bare table (the felt taken for a tile's back) is dropped, each tile's way round
is checked against how deep it reaches across its seat's edge in the picture (a claimed tile
lies sideways; see :func:`vision.melds.settle_orientation`), and the tiles are grouped per
seat.

>>> pipeline = TablePipeline(load_calibration("calibration.json"))   # doctest: +SKIP
>>> for update in pipeline.watch(open_camera("0")):                  # doctest: +SKIP
...     for change in update.changes:
...         print(change.describe())
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import cv2
import numpy as np

from controller.errors import ModelError, VisionError
from vision.calibration import FELT_PX_PER_MM, SEATS, Calibration, apply
from vision.camera import CameraLost, CameraSource, EndOfStream, Frame, as_bgr
from vision.detection import TileDetection
from vision.melds import SeatView, TileRead, group_table, merge_duplicates, settle_orientation
from vision.tracker import TableChange, TableTracker

MODES = ("frame", "seats")
STRIP_MARGIN_MM = 25.0
"""How far beyond its zone a seat's strip reaches, so a tile on the zone's edge is seen whole."""
BARE_PX_PER_MM = FELT_PX_PER_MM
"""Resolution of the picture used to tell bare table from a hand over it: the one the felt
was measured in when calibrating, so the two medians are alike."""
ORIENT_PX_PER_MM = 1.0
"""Resolution of the picture in which tiles' depth across the seat's edge is measured."""
HUE_TOLERANCE = 8
"""How far (OpenCV hue units, 2 degrees each) a pixel's hue may be from the felt's."""
BRIGHTER_BY = 25
"""Levels of brightness (HSV value) above a dark felt's by which a pixel is not felt."""
GREY_SATURATION = 50
"""A felt of less saturation than this (HSV) is grey, black or cream: it has no hue to go by."""
GREY_CHROMA = 15
"""How much more colourful (saturation x value / 255) than a grey, black or cream felt a
pixel of it may be: its weave and the camera's noise, not a coloured sleeve."""
FELT_LIGHT = (0.6, 1.6)
"""How much darker or brighter than the remembered felt a frame's seat zones may be and
still be taken for it: the lights off, a covered lens, a sleeve across the view or a
blown-out picture lie outside; light that changes slowly is followed (:data:`FELT_FOLLOW`),
and a lasting change at once is learnt after :data:`FELT_RELEARN_S`."""
FELT_SATURATION = (0.7, 1.4)
"""The same for the zones' saturation, against a felt with a hue."""
FELT_ODD_GAP_S = 5.0
"""The most that the time between two lit frames of another colour counts towards
:data:`FELT_RELEARN_S`: a camera away for a minute is not a minute of a new felt, while a
loop that stalls now and then (an overloaded Pi) still gets there."""
FELT_FOLLOW = 0.05
"""How much of each usable frame's felt colour the remembered one takes on: it follows the
light as it changes over an evening, not a sleeve that passes."""
FELT_RELEARN_S = 60.0
"""Seconds of lit frames that agree with one another but not with the remembered felt, with
the remembered felt nowhere in the zones (a new cloth, a lamp that changed the light at
once), after which their colour is the felt's. Anything lying over part of the table leaves
the felt showing beside it, and is never learnt."""
FELT_GONE = 0.05
"""The share of the zones' pixels still of the remembered felt under which it is gone."""
ONE_COLOUR = 0.002
"""A frame with less than this share of the table not of its zones' colour shows one colour
only (a blank or glitched frame), not a table."""
LIT_VALUE = 120
LIT_SHARE = 0.002
"""A frame is lit when at least this share of the table is at least this bright (HSV value):
tiles, walls, the markers' paper. A felt is learnt only from a lit frame, never from the
dark noise of a camera with the lights off or still settling its exposure."""


class Recognizer(Protocol):
    """What the pipeline needs of a recogniser (:class:`vision.recognizer.TileRecognizer`).

    The pipeline asks for each tile's outline ``as_found``: at the size the tile was found
    and read at, not at a scale the recogniser reports boxes at
    (:attr:`~vision.recognizer.TileRecognizer.box_scale`), since the measures of a tile's
    lie and of the gaps in a meld that group the tiles were fitted on those outlines."""

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]: ...


@dataclass(frozen=True)
class TableReading:
    """One frame, read: ``views`` (a :class:`SeatView` per seat, from this frame alone),
    ``reads`` (every tile found, on the table plane, in the zones or not: anywhere in the
    frame in ``"frame"`` mode, anywhere in the seat strips in ``"seats"`` mode; but not a
    face-down tile found in a zone where the picture shows bare table), the
    frame's ``index`` and ``timestamp``, and ``seconds`` spent reading it."""

    index: int
    timestamp: float
    views: tuple[SeatView, ...]
    reads: tuple[TileRead, ...] = field(repr=False)
    seconds: float = 0.0

    @property
    def needs_confirmation(self) -> bool:
        return any(v.needs_confirmation for v in self.views)


@dataclass(frozen=True)
class TableUpdate:
    """What one frame changed: the frame's own ``reading``, the ``changes`` that settled with
    it, and every seat's settled ``views`` after it."""

    reading: TableReading
    changes: tuple[TableChange, ...]
    views: tuple[SeatView, ...]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready: the frame number, its settled changes, every seat's settled view, and
        (``reading``) what this frame alone showed, so that a display can show a tile being
        laid, or read unsure, before it settles."""
        r = self.reading
        return {
            "frame": r.index,
            "changes": [c.to_json() for c in self.changes],
            "views": [v.to_json() for v in self.views],
            "needs_confirmation": any(v.needs_confirmation for v in self.views),
            "reading": {
                # a camera of the integrator's own may stamp frames NaN: JSON has no NaN
                "timestamp": r.timestamp if math.isfinite(r.timestamp) else None,
                "seconds": round(r.seconds, 4),
                "views": [v.to_json() for v in r.views],
                "needs_confirmation": r.needs_confirmation,
            },
        }


class TablePipeline:
    """Reads a calibrated table frame by frame.

    ``calibration`` maps the camera to the table; ``recognizer`` finds and classifies tiles
    (default: :class:`~vision.recognizer.TileRecognizer` with the committed model, which
    raises :class:`~controller.errors.ModelError` when the model is missing or corrupt);
    ``tracker`` settles readings over frames (default: a :class:`TableTracker` for the
    calibration's table); ``mode`` is ``"frame"`` or ``"seats"`` (see the module's notes);
    ``px_per_mm`` the resolution of the seat strips.
    """

    def __init__(
        self,
        calibration: Calibration,
        recognizer: Recognizer | None = None,
        *,
        tracker: TableTracker | None = None,
        mode: str = "frame",
        px_per_mm: float = 1.5,
    ) -> None:
        if mode not in MODES:
            raise VisionError(f"the pipeline's mode is 'frame' or 'seats', not {mode!r}")
        if not 0.2 <= px_per_mm <= 8:
            raise VisionError(f"px_per_mm must be between 0.2 and 8, not {px_per_mm}")
        if recognizer is None:
            from vision.recognizer import TileRecognizer

            recognizer = TileRecognizer()
        self.calibration = calibration
        self.recognizer = recognizer
        self.tracker = tracker or TableTracker(calibration.geometry)
        self.mode = mode
        self.px_per_mm = float(px_per_mm)
        self._frames = 0
        self._zone_mask = calibration.zone_mask(BARE_PX_PER_MM)
        felt = calibration.felt_hsv
        self._felt: np.ndarray | None = None if felt is None else np.array(felt, np.float64)
        # lit frames of another colour: how long they have lasted (each gap counted up to
        # FELT_ODD_GAP_S), when the last was, and their colour
        self._odd: tuple[float, float, np.ndarray] | None = None

    # -- one frame -----------------------------------------------------------------------------

    def read(self, frame: Frame | np.ndarray) -> TableReading:
        """Find and group the tiles of one frame (the tracker is not touched)."""
        return self._read(*self._unpack(frame))

    def process(self, frame: Frame | np.ndarray) -> TableUpdate:
        """Read a frame and settle it into the tracker: the changes it confirms and every
        seat's settled view."""
        image, index, stamp = self._unpack(frame)
        reading = self._read(image, index, stamp)
        changes = self.tracker.update(
            reading.views, is_bare=self._bare_test(image, stamp), frame=reading.index
        )
        return TableUpdate(reading, tuple(changes), self.tracker.views)

    def _read(self, image: np.ndarray, index: int, stamp: float) -> TableReading:
        start = time.perf_counter()
        reads = self._settle_orientation(image, merge_duplicates(self._find(image)))
        views = group_table(reads, self.calibration)
        return TableReading(index, stamp, views, tuple(reads), time.perf_counter() - start)

    @property
    def views(self) -> tuple[SeatView, ...]:
        """Every seat's settled view."""
        return self.tracker.views

    def reset(self) -> None:
        """A new hand: the tracker forgets the last one's tiles (and a felt colour learnt
        from frames, rather than measured when calibrating, is learnt again)."""
        self.tracker.reset()
        if self.calibration.felt_hsv is None:
            self._felt = None
        self._odd = None

    def watch(
        self,
        camera: CameraSource,
        *,
        limit: int | None = None,
        retry_s: float = 2.0,
        on_error: Callable[[VisionError], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Iterator[TableUpdate]:
        """Process every frame of ``camera`` (up to ``limit``), yielding each update.

        A camera that disappears (:class:`~vision.camera.CameraLost`) or cannot be reopened,
        and a frame that cannot be used (unreadable, or of another size than the calibration's,
        as from a camera plugged back in at its default resolution), are reported to
        ``on_error`` and the loop goes on: after ``retry_s`` seconds when the camera is lost or
        the frame before also failed, at once after a single bad frame. It goes on for as long
        as ``should_stop`` (checked before every frame) says to; the end of a video or image
        folder ends it. A model that fails (:class:`~controller.errors.ModelError`) ends it
        too: every later frame would fail the same way.
        """
        done = 0
        failed = False
        while limit is None or done < limit:
            if should_stop is not None and should_stop():
                return
            try:
                frame = camera.read()
                update = self.process(frame)
            except EndOfStream:
                return
            except ModelError:
                raise
            except VisionError as exc:
                if on_error is not None:
                    on_error(exc)
                lost = isinstance(exc, CameraLost) or not camera.is_open
                if lost:
                    self._odd = None  # a stretch of odd frames does not span an outage
                if lost or failed:
                    _pause(retry_s, should_stop)
                failed = True
                continue
            failed = False
            yield update
            done += 1

    # -- finding tiles -------------------------------------------------------------------------

    def _unpack(self, frame: Frame | np.ndarray) -> tuple[np.ndarray, int, float]:
        if isinstance(frame, Frame):
            # a camera of the integrator's own may hand over a grey or BGRA picture
            image = as_bgr(frame.image, f"frame {frame.index}")
            # a camera of the integrator's own may number frames with numpy's integers,
            # which the JSON of an update cannot hold
            index, stamp = int(frame.index), float(frame.timestamp)
        else:
            image, index, stamp = as_bgr(frame, "the frame"), self._frames, time.monotonic()
        self._frames = index + 1
        return image, index, stamp

    def _find(self, image: np.ndarray) -> list[TileRead]:
        cal = self.calibration
        size = (int(image.shape[1]), int(image.shape[0]))
        if self.mode == "frame":
            to_plane = cal.homography_for(size)
            found = self.recognizer.detect(image, as_found=True)
            return [TileRead.from_detection(d, to_plane) for d in found]
        reads: list[TileRead] = []
        for seat in range(SEATS):
            strip = cal.seat_image(image, seat, self.px_per_mm, margin_mm=STRIP_MARGIN_MM)
            to_plane = cal.seat_strip_to_plane(seat, self.px_per_mm, margin_mm=STRIP_MARGIN_MM)
            for det in self.recognizer.detect(strip, as_found=True):
                read = TileRead.from_detection(det, to_plane)
                # a neighbour's corner shows at each end of the strip: its own strip reads it.
                # A tile in no zone (the strip's margin) is kept; if two strips both show
                # it, merge_duplicates counts it once
                if cal.seat_of(read.centre) in (seat, None):
                    reads.append(read)
        return reads

    # -- which way tiles lie -------------------------------------------------------------------

    def _settle_orientation(self, image: np.ndarray, reads: list[TileRead]) -> list[TileRead]:
        """Check each tile's way round against the picture: how far it reaches across its
        seat's edge (see :func:`vision.melds.settle_orientation`). A face-down read whose
        centre shows bare table (:func:`_shows_table`) is dropped: the felt at the table's
        edge or in a gap between melds, a plain field of colour, taken for a tile's back."""
        cal = self.calibration
        by_seat: list[list[TileRead]] = [[] for _ in range(SEATS)]
        out: list[TileRead] = []
        for r in reads:
            seat = cal.seat_of(r.centre)
            (out if seat is None else by_seat[seat]).append(r)
        ppm = ORIENT_PX_PER_MM
        for seat, rs in enumerate(by_seat):
            if not rs:
                continue
            strip = cal.seat_image(image, seat, ppm, margin_mm=STRIP_MARGIN_MM)
            hsv = cv2.cvtColor(strip, cv2.COLOR_BGR2HSV)
            solid = ~_table_showing(hsv, _felt_colour(hsv[::4, ::4]))  # mostly table
            solid = _filled(solid)
            to_strip = np.linalg.inv(cal.seat_strip_to_plane(seat, ppm, margin_mm=STRIP_MARGIN_MM))
            centres = apply(to_strip, [r.centre for r in rs])
            # a face-down read where the picture shows bare table is the table top (the felt
            # beside its edge, a gap between melds) taken for a tile's back: nothing lies there
            there = [
                not (r.face_down and _shows_table(solid, x, y, ppm))
                for r, (x, y) in zip(rs, centres, strict=True)
            ]
            rs = [r for r, keep in zip(rs, there, strict=True) if keep]
            centres = centres[np.array(there, bool)]
            far_edge = solid.shape[0] / ppm  # the strip's top row, as distance from the edge
            spans = []
            for x, y in centres:
                rows = _solid_rows(solid, x, y, ppm)
                spans.append(
                    None if rows is None else (far_edge - rows[1] / ppm, far_edge - rows[0] / ppm)
                )
            out += settle_orientation(seat, rs, spans, cal.geometry)
        return out

    # -- bare table ----------------------------------------------------------------------------

    def bare_test(self, image: np.ndarray) -> Callable[[np.ndarray], bool]:
        """For one frame, a test of whether a place on the plane (a convex polygon such as a
        tile's quad or the part of one no tile covers, in millimetres) shows
        bare table: most of its pixels have the felt's colour (the colour most of the seat
        zones show), so a hand, a sleeve or a tile there is not bare.

        Nothing is bare in a frame that cannot show the table: one whose zones are not of
        the felt's colour (the calibration's, following the light since; the lights off, a
        covered lens, a sleeve across most of the view) or that is all one colour. Otherwise
        such a frame would be all "felt", and everything on the table taken as gone."""
        return self._bare_test(image, time.monotonic())

    def _bare_test(self, image: np.ndarray, stamp: float) -> Callable[[np.ndarray], bool]:
        ppm = BARE_PX_PER_MM
        plane = self.calibration.plane_image(image, ppm)
        hsv = cv2.cvtColor(plane, cv2.COLOR_BGR2HSV)
        zones = hsv[self._zone_mask]
        seen = _felt_colour(zones)
        feltish = _table_showing(hsv, seen)
        if not self._shows_table(seen, feltish, hsv, zones, stamp):
            return _never_bare

        def is_bare(quad: np.ndarray) -> bool:
            pts = np.asarray(quad, np.float64) * ppm
            x0, y0 = np.floor(pts.min(axis=0)).astype(int)
            x1, y1 = np.ceil(pts.max(axis=0)).astype(int) + 1
            h, w = feltish.shape
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
            if x0 >= x1 or y0 >= y1:
                return False
            mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
            cv2.fillConvexPoly(mask, np.round(pts - (x0, y0)).astype(np.int32), 1)
            inside = feltish[y0:y1, x0:x1][mask.astype(bool)]
            return bool(inside.size and inside.mean() >= 0.85)

        return is_bare

    def _shows_table(
        self,
        seen: np.ndarray,
        feltish: np.ndarray,
        hsv: np.ndarray,
        zones: np.ndarray,
        stamp: float,
    ) -> bool:
        """Whether a frame whose zones' colour is ``seen`` shows the table, remembering the
        felt's colour as the light changes."""
        if feltish.mean() > 1 - ONE_COLOUR:
            return False
        lit = bool((hsv[..., 2] >= LIT_VALUE).mean() >= LIT_SHARE)
        if self._felt is None:
            # a calibration that measured no felt (made by hand in code, or saved before the
            # felt was measured): the first lit frame teaches it
            if not lit:
                return False
            self._felt = seen.astype(np.float64)
            return True
        if _looks_like(seen, self._felt):
            self._odd = None
            dh = (float(seen[0]) - self._felt[0] + 90) % 180 - 90  # hue goes round
            self._felt[0] = (self._felt[0] + FELT_FOLLOW * dh) % 180
            self._felt[1:] += FELT_FOLLOW * (seen[1:] - self._felt[1:])
            return True
        # lit frames of one other colour for a long while, with the remembered felt nowhere
        # in the zones: the cloth or the light has changed for good
        odd = self._odd
        if lit and odd is not None and _looks_like(seen, odd[2]):
            lasted = odd[0] + min(max(stamp - odd[1], 0.0), FELT_ODD_GAP_S)
            if lasted >= FELT_RELEARN_S and not self._felt_showing(zones):
                self._felt, self._odd = seen.astype(np.float64), None
                return True
            self._odd = (lasted, stamp, odd[2])
        else:
            self._odd = (0.0, stamp, seen.astype(np.float64)) if lit else None
        return False

    def _felt_showing(self, zones: np.ndarray) -> bool:
        """Whether some of the zones' pixels (N x 3 HSV) are still the remembered felt, in
        its own light: beside a cover lying over the rest of the table, say."""
        assert self._felt is not None
        pixels = zones.reshape(-1, 1, 3)
        light = pixels[..., 2].astype(np.float64)
        low, high = FELT_LIGHT
        inlight = (light >= low * self._felt[2]) & (light <= high * self._felt[2])
        share = (_table_showing(pixels, self._felt) & inlight).mean()
        return bool(share >= FELT_GONE)


def _never_bare(quad: np.ndarray) -> bool:
    return False


def _looks_like(seen: np.ndarray, felt: np.ndarray) -> bool:
    """Whether a frame's zones, of median colour ``seen``, can be the felt ``felt``: in about
    its light (:data:`FELT_LIGHT`: not the lights off, a covered lens, a sleeve across the
    view, a blown-out picture), and of its hue and saturation where it has a hue. A sleeve
    of the felt's own colour cannot be told from it this way."""
    h, s, v = (float(x) for x in seen)
    fh, fs, fv = (float(x) for x in felt)
    low, high = FELT_LIGHT
    if not low * fv <= v <= high * fv + 10:
        return False
    if fs < GREY_SATURATION:
        return s <= fs + 25
    dh = abs(h - fh) % 180
    # a pale felt's hue moves more with the camera's white balance
    tolerance = HUE_TOLERANCE * max(1.0, 120.0 / fs)
    least, most = FELT_SATURATION
    return min(dh, 180 - dh) <= tolerance and least * fs <= s <= most * fs


def _pause(seconds: float, should_stop: Callable[[], bool] | None) -> None:
    """Wait ``seconds``, but no longer than it takes ``should_stop`` to say stop: a table
    being shut down must not wait out a camera's retry delay."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if should_stop is not None and should_stop():
            return
        time.sleep(min(left, 0.1))


def _felt_colour(hsv: np.ndarray) -> np.ndarray:
    """The table top's HSV colour: the median of a picture mostly showing it."""
    return np.median(hsv.reshape(-1, 3), axis=0)


def _table_showing(hsv: np.ndarray, felt: np.ndarray) -> np.ndarray:
    """Where an HSV picture (``uint8``) shows the table top of colour ``felt``.

    Hue and saturation say felt whatever the light: a shadow darkens felt without changing
    its hue, so only what is brighter than the felt's light (tiles, glare) or of another hue
    (skin, sleeves, tile backs of another colour) is not felt. "Brighter" is by a quarter
    and by 25 levels at least, so a black top's own weave is not taken for something on it.
    A grey, black or cream top has no hue: there only colourfulness (saturation times
    brightness, which a dark pixel's noise cannot raise as it does saturation) beyond the
    felt's own, and no more than its brightness, count."""
    h, s, v = cv2.split(hsv)
    light = float(felt[2])
    not_brighter = v <= max(1.35 * light, light + BRIGHTER_BY)
    if felt[1] < GREY_SATURATION:
        chroma = s.astype(np.float32) * v.astype(np.float32) / 255
        return (chroma <= float(felt[1]) * light / 255 + GREY_CHROMA) & not_brighter
    # a scalar second operand is OpenCV's own (saturated, rounded as it does): its stubs only
    # know arrays there
    dh = cv2.absdiff(h, float(felt[0]))  # type: ignore[call-overload]
    dh = np.minimum(dh, 180 - dh)  # hue goes round (0-179 in OpenCV)
    return (dh <= HUE_TOLERANCE) & (s >= 0.5 * float(felt[1])) & not_brighter


def _filled(mask: np.ndarray) -> np.ndarray:
    """The mask with every hole inside a solid shape filled: a face's ink may have the felt's
    colour (red dots on red felt), but it lies inside the tile's light border."""
    solid = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    contours, _ = cv2.findContours(solid, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    cv2.drawContours(solid, contours, -1, 1, thickness=cv2.FILLED)
    return solid.astype(bool)


BARE_SHARE = 0.5
"""A face-down read is the table top when less than this share of the square around its
centre (:func:`_shows_table`) is something on the table."""


def _shows_table(solid: np.ndarray, x: float, y: float, ppm: float) -> bool:
    """Whether the square a third of a tile wide around strip pixel (x, y) shows mostly
    bare table (``solid`` is what is not; ``False`` off the strip: cannot say). A tile's
    centre lies half a tile inside its outline, so the square lies on the tile even where
    the read is a third of a tile off, and on a face-down tile the back inside its rim
    counts as solid (:func:`_filled`) whatever its colour."""
    h, w = solid.shape
    cx, cy = round(x), round(y)
    half = max(1, round(5 * ppm))
    if not (0 <= cx < w and 0 <= cy < h):
        return False
    square = solid[max(cy - half, 0) : cy + half + 1, max(cx - half, 0) : cx + half + 1]
    return bool(square.mean() < BARE_SHARE)


def _solid_rows(solid: np.ndarray, x: float, y: float, ppm: float) -> tuple[int, int] | None:
    """The first and last row of the solid thing at strip pixel (x, y), along a band a third
    of a tile wide (rows where most of the band is solid); ``None`` off the strip."""
    h, w = solid.shape
    cx, cy = round(x), round(y)
    half = max(1, round(5 * ppm))
    if not (half <= cx < w - half and 0 <= cy < h):
        return None
    rows = solid[:, cx - half : cx + half + 1].mean(axis=1) > 0.5
    if not rows[cy]:
        return None
    top, bottom = cy, cy
    while top > 0 and rows[top - 1]:
        top -= 1
    while bottom < h - 1 and rows[bottom + 1]:
        bottom += 1
    if top == 0 or bottom == h - 1:
        return None  # runs off the strip: cannot say
    return top, bottom + 1
