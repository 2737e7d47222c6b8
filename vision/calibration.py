"""Table calibration: the homography from camera pixels to a top-down table plane, and the
four seats' zones on that plane.

The table plane is measured in millimetres. ``x`` runs to the right and ``y`` down, as in the
top-down picture :meth:`Calibration.plane_image` makes, with seat 0 sitting at the bottom edge
(``y = side``). Seats are numbered in turn order; seat ``k + 1`` sits at seat ``k``'s right
hand, so going round the picture seat 0 is at the bottom, seat 1 on the right, seat 2 at the
top and seat 3 on the left.

Each seat also has its own coordinates ``(u, v)``: ``u`` along its table edge from its left to
its right, ``v`` the distance from its edge towards the centre. Seen in those coordinates (the
strip :meth:`Calibration.seat_image` cuts out) the seat's tiles read upright, and a claimed
tile lies sideways.

Four ArUco markers (dictionary ``DICT_4X4_50``, ids 0-3) lie at the table's corners: marker
``k`` at the corner between seat ``k`` and seat ``k + 1`` (seat ``k``'s right hand).
:func:`calibrate_from_markers` finds them in a frame; :func:`calibrate_manual` takes the four
table corners clicked by hand instead. :meth:`Calibration.save` writes JSON that
:func:`load_calibration` reads back.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from controller.errors import VisionError
from vision.files import write_text_atomically

SEATS = 4
ARUCO_DICTIONARY = "DICT_4X4_50"
"""The marker family: 4x4 cells, 50 ids (the table uses ids 0-3)."""
MARKER_IDS = (0, 1, 2, 3)
FORMAT = "mahjong-table calibration"
VERSION = 1
MAX_SCALE_ERROR = 0.15
"""How far (as a share) the markers' sides, measured on the plane the markers' centres fix,
may differ from the marker size given before calibration is refused: that far, the table,
marker or inset size is wrong. Less is not refused, because blur and a cheap lens's barrel
distortion shrink the corner markers too (blur alone 2-5 % in a 640x480 frame; a mild barrel
with it, 8 %); :attr:`Calibration.marker_mm_seen` keeps what they measured, and the
calibrate command says when it is more than :data:`SCALE_NOTE` off."""
SCALE_NOTE = 0.05
"""How far off the markers may measure before the calibrate command points it out."""
DUPLICATE_MARKER_RADIUS = 1.0
"""Two sightings of one marker id whose centres lie closer than this many marker sides are
one marker seen twice (the detector can report a marker at two scales); further apart, they
are two things: a spare printed copy, or a pattern in a tile's art read as a marker."""
MAX_SIGHTING_CHOICES = 64
"""At most this many ways of choosing among sightings are fitted (four markers, each seen a
few times, is far fewer)."""
AGREE_MM = 10.0
"""Two fits that both pass, from different sightings, must agree this closely everywhere on
the table for calibration to go on: otherwise which copy is at the corner cannot be told."""


FELT_PX_PER_MM = 0.5
"""Resolution of the picture in which the felt's colour is measured."""


class CalibrationError(VisionError):
    """The table could not be calibrated, or a saved calibration cannot be used."""


@dataclass(frozen=True)
class TableGeometry:
    """The physical layout the calibration assumes, in millimetres.

    ``side_mm`` is the playing surface (a square); ``marker_mm`` the printed side of each
    marker's black square and ``marker_inset_mm`` the distance from both table edges to a
    marker's centre; ``zone_depth_mm`` how far each seat's zone reaches from its edge towards
    the centre (its flowers, melds and laid-open hand lie there; the walls and discards lie
    beyond it).
    """

    side_mm: float = 900.0
    marker_mm: float = 50.0
    marker_inset_mm: float = 40.0
    zone_depth_mm: float = 185.0

    def __post_init__(self) -> None:
        s, m, i, d = self.side_mm, self.marker_mm, self.marker_inset_mm, self.zone_depth_mm
        if not all(math.isfinite(x) and x > 0 for x in (s, m, i, d)):
            raise CalibrationError(f"table sizes must be positive millimetres: {self}")
        if i < m / 2:
            raise CalibrationError(
                f"a marker {m:g} mm wide must sit at least {m / 2:g} mm from the edges "
                f"(inset {i:g} mm)"
            )
        if not 4 * i < s or not 2 * d < s:
            raise CalibrationError(
                f"markers at {i:g} mm and zones {d:g} mm deep do not fit a {s:g} mm table"
            )

    def seat_to_plane(self, seat: int) -> np.ndarray:
        """The 3x3 matrix taking seat ``seat``'s ``(u, v, 1)`` to the plane's ``(x, y, 1)``."""
        s = self.side_mm
        rows: dict[int, list[list[float]]] = {
            0: [[1, 0, 0], [0, -1, s]],
            1: [[0, -1, s], [-1, 0, s]],
            2: [[-1, 0, s], [0, 1, 0]],
            3: [[0, 1, 0], [1, 0, 0]],
        }
        m = rows[_seat(seat)]
        return np.array([*m, [0, 0, 1]], dtype=np.float64)

    def plane_to_seat(self, seat: int) -> np.ndarray:
        """The inverse of :meth:`seat_to_plane`."""
        return np.linalg.inv(self.seat_to_plane(seat))

    def marker_centre(self, marker: int) -> tuple[float, float]:
        """Where marker ``marker``'s centre lies on the plane (seat ``marker``'s right corner)."""
        u = self.side_mm - self.marker_inset_mm
        x, y = apply(self.seat_to_plane(marker), [(u, self.marker_inset_mm)])[0]
        return float(x), float(y)

    def table_corner(self, marker: int) -> tuple[float, float]:
        """The table corner at marker ``marker`` (the manual calibration's reference points)."""
        x, y = apply(self.seat_to_plane(marker), [(self.side_mm, 0.0)])[0]
        return float(x), float(y)

    def default_zone(self, seat: int) -> np.ndarray:
        """Seat ``seat``'s zone: the band ``zone_depth_mm`` deep along its edge, cut at the
        diagonals so neighbouring zones meet without overlapping."""
        s, d = self.side_mm, self.zone_depth_mm
        local = [(0.0, 0.0), (s, 0.0), (s - d, d), (d, d)]
        return apply(self.seat_to_plane(seat), local)

    def keep_outs(self) -> tuple[tuple[float, float, float, float], ...]:
        """The markers' squares with a margin, ``(x0, y0, x1, y1)``: nothing there is a tile."""
        return _keep_outs(self)

    def to_json(self) -> dict[str, float]:
        return {
            "side_mm": self.side_mm,
            "marker_mm": self.marker_mm,
            "marker_inset_mm": self.marker_inset_mm,
            "zone_depth_mm": self.zone_depth_mm,
        }


@lru_cache(maxsize=32)
def _keep_outs(geometry: TableGeometry) -> tuple[tuple[float, float, float, float], ...]:
    half = geometry.marker_mm / 2 + 8.0
    out = []
    for k in MARKER_IDS:
        cx, cy = geometry.marker_centre(k)
        out.append((cx - half, cy - half, cx + half, cy + half))
    return tuple(out)


def _seat(seat: int) -> int:
    if isinstance(seat, bool) or not isinstance(seat, int | np.integer) or not 0 <= seat < SEATS:
        raise CalibrationError(f"seats are numbered 0-3, not {seat!r}")
    return int(seat)


def apply(matrix: np.ndarray, points: Any) -> np.ndarray:
    """Points ``(N, 2)`` mapped through a 3x3 projective matrix, as an ``(N, 2)`` array."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    homog = np.hstack([pts, np.ones((len(pts), 1))]) @ np.asarray(matrix, np.float64).T
    return homog[:, :2] / homog[:, 2:3]


@dataclass(frozen=True, eq=False)  # it holds arrays: compared by identity, and hashable
class Calibration:
    """A camera's view of the table.

    ``homography`` maps camera pixels to plane millimetres for frames of ``image_size``
    ``(width, height)``; ``zones`` are the four seats' zones (polygons in plane millimetres);
    ``method`` is ``"aruco"`` or ``"manual"``; ``image_points`` / ``plane_points`` are the
    correspondences it was fitted to and ``error_mm`` their RMS misfit on the plane.
    """

    homography: np.ndarray = field(repr=False)
    image_size: tuple[int, int]
    geometry: TableGeometry = TableGeometry()
    zones: tuple[np.ndarray, ...] = field(default=(), repr=False)
    method: str = "manual"
    image_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)), repr=False)
    plane_points: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)), repr=False)
    error_mm: float = 0.0
    marker_mm_seen: float = 0.0
    """How wide the markers measured on the plane their centres fix (0: not measured, as for
    corners given by hand); against ``geometry.marker_mm`` it shows a wrong size given."""
    felt_hsv: tuple[float, float, float] | None = None
    """The table top's colour in the seat zones of the frame calibrated from (OpenCV HSV:
    hue 0-179, saturation and value 0-255), or ``None`` where none was measured. The table
    pipeline tells by it a frame that cannot show the table (lights off, a covered lens, a
    sleeve across the view) from bare felt (see :meth:`with_felt`)."""

    def __post_init__(self) -> None:
        h = np.asarray(self.homography, dtype=np.float64)
        if h.shape != (3, 3) or not np.all(np.isfinite(h)) or abs(np.linalg.det(h)) < 1e-12:
            raise CalibrationError("the homography must be an invertible 3x3 matrix")
        h = h / h[2, 2] if abs(h[2, 2]) > 1e-12 else h
        object.__setattr__(self, "homography", h)
        w, ht = (int(v) for v in self.image_size)
        if w < 8 or ht < 8:
            raise CalibrationError(f"image size {w}x{ht} is too small")
        object.__setattr__(self, "image_size", (w, ht))
        zones = self.zones or tuple(self.geometry.default_zone(k) for k in range(SEATS))
        if len(zones) != SEATS:
            raise CalibrationError(f"a calibration has 4 seat zones, not {len(zones)}")
        checked = []
        for k, z in enumerate(zones):
            poly = np.asarray(z, dtype=np.float64)
            if poly.ndim != 2 or poly.shape[1] != 2 or len(poly) < 3:
                raise CalibrationError(f"seat {k}'s zone must be a polygon of 3 or more points")
            if not np.all(np.isfinite(poly)):
                raise CalibrationError(f"seat {k}'s zone has non-numeric points")
            checked.append(poly)
        object.__setattr__(self, "zones", tuple(checked))
        for name in ("image_points", "plane_points"):
            object.__setattr__(
                self, name, np.asarray(getattr(self, name), np.float64).reshape(-1, 2)
            )
        if self.felt_hsv is not None:
            try:
                felt = tuple(float(v) for v in self.felt_hsv)
            except (TypeError, ValueError):
                raise CalibrationError(
                    f"the felt's colour is three numbers, not {self.felt_hsv!r}"
                ) from None
            if len(felt) != 3 or not all(
                math.isfinite(v) and 0 <= v <= top
                for v, top in zip(felt, (180, 255, 255), strict=True)
            ):
                raise CalibrationError(
                    f"the felt's colour is hue 0-179, saturation and value 0-255, not {felt}"
                )
            object.__setattr__(self, "felt_hsv", felt)

    # -- mapping -------------------------------------------------------------------------------

    def homography_for(self, image_size: tuple[int, int]) -> np.ndarray:
        """The homography for frames of ``image_size``: a camera that delivers the same view at
        another resolution (same aspect ratio) is scaled; anything else is an error."""
        w, h = _image_size(image_size)
        cw, ch = self.image_size
        if (w, h) == (cw, ch):
            return self.homography
        if abs(w / h - cw / ch) > 0.01 * (cw / ch):
            raise CalibrationError(
                f"the frame is {w}x{h} but the table was calibrated on {cw}x{ch} frames: "
                "set the camera to that size or run 'mahjong-table calibrate' again"
            )
        scale = np.diag([cw / w, ch / h, 1.0])
        return self.homography @ scale

    def to_plane(self, points: Any, image_size: tuple[int, int] | None = None) -> np.ndarray:
        """Image pixels ``(N, 2)`` to plane millimetres."""
        return apply(self.homography_for(image_size or self.image_size), points)

    def to_image(self, points: Any, image_size: tuple[int, int] | None = None) -> np.ndarray:
        """Plane millimetres ``(N, 2)`` to image pixels."""
        h = self.homography_for(image_size or self.image_size)
        return apply(np.linalg.inv(h), points)

    def plane_image(self, image: np.ndarray, px_per_mm: float = 1.0) -> np.ndarray:
        """The top-down picture of the whole table, ``px_per_mm`` pixels per millimetre."""
        import cv2

        px_per_mm = _resolution(px_per_mm, self.geometry.side_mm)
        size = round(self.geometry.side_mm * px_per_mm)
        h = np.diag([px_per_mm, px_per_mm, 1.0]) @ self.homography_for(_size_of(image))
        return cv2.warpPerspective(
            image, h, (size, size), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE
        )

    def seat_strip_to_plane(
        self, seat: int, px_per_mm: float, *, margin_mm: float = 0.0
    ) -> np.ndarray:
        """The 3x3 matrix from a :meth:`seat_image` pixel to plane millimetres."""
        depth = self.seat_depth(seat) + margin_mm
        # strip pixel (sx, sy) is u = sx / ppm, v = depth - sy / ppm
        strip_to_seat = np.array(
            [[1 / px_per_mm, 0, 0], [0, -1 / px_per_mm, depth], [0, 0, 1]], dtype=np.float64
        )
        return self.geometry.seat_to_plane(seat) @ strip_to_seat

    def seat_depth(self, seat: int) -> float:
        """How far seat ``seat``'s zone reaches from its edge, in millimetres."""
        local = apply(self.geometry.plane_to_seat(seat), self.zones[_seat(seat)])
        return float(min(max(local[:, 1].max(), 1.0), self.geometry.side_mm / 2))

    def seat_image(
        self, image: np.ndarray, seat: int, px_per_mm: float = 2.0, *, margin_mm: float = 0.0
    ) -> np.ndarray:
        """The strip of the table in front of ``seat`` as that player sees it: their edge at
        the bottom, the table's centre at the top, their tiles upright.

        It spans the whole edge and the zone's depth (plus ``margin_mm``), so a neighbour's
        corner shows at either end; :meth:`seat_of` says whose a point is."""
        import cv2

        px_per_mm = _resolution(px_per_mm, self.geometry.side_mm)
        width = round(self.geometry.side_mm * px_per_mm)
        height = round((self.seat_depth(seat) + margin_mm) * px_per_mm)
        to_plane = self.seat_strip_to_plane(seat, px_per_mm, margin_mm=margin_mm)
        h = np.linalg.inv(to_plane) @ self.homography_for(_size_of(image))
        return cv2.warpPerspective(
            image, h, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
        )

    def seat_of(self, point_mm: Sequence[float]) -> int | None:
        """The seat whose zone holds a plane point, or ``None`` (centre, markers, off-table)."""
        import cv2

        x, y = float(point_mm[0]), float(point_mm[1])
        for x0, y0, x1, y1 in self.geometry.keep_outs():
            if x0 <= x <= x1 and y0 <= y <= y1:
                return None
        for k, poly in enumerate(self.zones):
            if cv2.pointPolygonTest(poly.astype(np.float32), (x, y), False) >= 0:
                return k
        return None

    # -- checking ------------------------------------------------------------------------------

    def marker_drift_mm(self, image: np.ndarray) -> dict[int, float]:
        """How far (mm on the plane) each marker visible in ``image`` lies from where this
        calibration expects it: a few millimetres is noise, more means the camera moved."""
        size = _size_of(image)
        out = {}
        for k, sightings in find_marker_sightings(image).items():
            if k in MARKER_IDS:
                # of several sightings, the one nearest where the marker should be is it
                centres = self.to_plane([q.mean(axis=0) for q in sightings], size)
                out[k] = float(np.min(np.hypot(*(centres - self.geometry.marker_centre(k)).T)))
        return out

    # -- files ---------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "method": self.method,
            "image_size": list(self.image_size),
            "homography": [[float(v) for v in row] for row in self.homography],
            "table": self.geometry.to_json(),
            "error_mm": round(float(self.error_mm), 3),
            "marker_mm_seen": round(float(self.marker_mm_seen), 2),
            "felt_hsv": None if self.felt_hsv is None else [round(v, 1) for v in self.felt_hsv],
            "points": {
                "image": np.round(self.image_points, 2).tolist(),
                "plane": np.round(self.plane_points, 2).tolist(),
            },
            "zones": [
                {"seat": k, "polygon_mm": np.round(z, 2).tolist()} for k, z in enumerate(self.zones)
            ],
        }

    @classmethod
    def from_json(cls, data: Any, *, where: str = "calibration") -> Calibration:
        """Read :meth:`to_json`'s form back; :class:`CalibrationError` names what is wrong."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise CalibrationError(f"{where} is not a mahjong-table calibration file")
        if data.get("version") != VERSION:
            raise CalibrationError(
                f"{where} is calibration version {data.get('version')!r}; this program reads "
                f"version {VERSION}: run 'mahjong-table calibrate' again"
            )
        try:
            table = data.get("table") or {}
            points = data.get("points") or {}
            if not isinstance(table, dict) or not isinstance(points, dict):
                raise TypeError("'table' and 'points' must be objects")
            geometry = TableGeometry(**{k: float(v) for k, v in table.items()})
            zones = _zones_by_seat(data.get("zones") or [])
            return cls(
                homography=np.asarray(data["homography"], dtype=np.float64),
                image_size=tuple(int(v) for v in data["image_size"]),  # type: ignore[arg-type]
                geometry=geometry,
                zones=zones,
                method=str(data.get("method", "manual")),
                image_points=np.asarray(points.get("image", []), np.float64),
                plane_points=np.asarray(points.get("plane", []), np.float64),
                error_mm=float(data.get("error_mm", 0.0)),
                marker_mm_seen=float(data.get("marker_mm_seen", 0.0)),
                felt_hsv=_felt(data.get("felt_hsv")),
            )
        except CalibrationError as exc:
            raise CalibrationError(f"{where}: {exc.message}") from None
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise CalibrationError(f"{where} is damaged ({type(exc).__name__}: {exc})") from None

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the calibration as JSON (atomically: a crash never leaves half a file)."""
        p = Path(path)
        try:
            write_text_atomically(p, json.dumps(self.to_json(), indent=2) + "\n", make_folder=True)
        except OSError as exc:
            raise CalibrationError(f"cannot write {p}: {exc.strerror or exc}") from None
        return p

    def with_felt(self, image: np.ndarray) -> Calibration:
        """The same view with :attr:`felt_hsv` measured in ``image`` (a frame of this view in
        which the seat zones show mostly bare table): the median colour of the zones."""
        return replace(self, felt_hsv=self.felt_in(image))

    def felt_in(self, image: np.ndarray) -> tuple[float, float, float]:
        """The median HSV colour of the seat zones in ``image``: the table top's colour where
        mostly table shows there."""
        import cv2

        from vision.camera import as_bgr

        # a grey or 16-bit frame calibrates, so its felt is measured too
        plane = self.plane_image(as_bgr(image, "the frame"), FELT_PX_PER_MM)
        hsv = cv2.cvtColor(plane, cv2.COLOR_BGR2HSV)
        h, s, v = (float(c) for c in np.median(hsv[self.zone_mask(FELT_PX_PER_MM)], axis=0))
        return h, s, v

    def zone_mask(self, px_per_mm: float) -> np.ndarray:
        """Where the seat zones lie on :meth:`plane_image`'s picture at ``px_per_mm``."""
        import cv2

        side = round(self.geometry.side_mm * px_per_mm)
        mask = np.zeros((side, side), np.uint8)
        for zone in self.zones:
            cv2.fillPoly(mask, [np.round(zone * px_per_mm).astype(np.int32)], 1)
        return mask.astype(bool)

    def with_zone_depth(self, depth_mm: float) -> Calibration:
        """The same view with the default zones at another depth."""
        geometry = replace(self.geometry, zone_depth_mm=float(depth_mm))
        zones = tuple(geometry.default_zone(k) for k in range(SEATS))
        return replace(self, geometry=geometry, zones=zones)


def _felt(value: Any) -> tuple[float, float, float] | None:
    # files written before the felt was measured have none
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError("'felt_hsv' must be a list of three numbers or null")
    return tuple(float(v) for v in value)  # type: ignore[return-value]


def load_calibration(path: str | os.PathLike[str]) -> Calibration:
    """Read a saved calibration; :class:`CalibrationError` says what to do when it cannot."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CalibrationError(
            f"no calibration at {p}: run 'mahjong-table calibrate' with the camera in place"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"cannot read {p}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{p} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except (RecursionError, ValueError) as exc:  # nested past Python's limit; huge numbers
        raise CalibrationError(f"{p} is not a calibration file ({exc})") from None
    return Calibration.from_json(data, where=str(p))


def _size_of(image: np.ndarray) -> tuple[int, int]:
    if not isinstance(image, np.ndarray) or image.ndim < 2 or min(image.shape[:2]) == 0:
        raise CalibrationError("expected an image array, not an empty one")
    return int(image.shape[1]), int(image.shape[0])


def _dictionary() -> Any:
    import cv2

    return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, ARUCO_DICTIONARY))


def find_markers(image: np.ndarray) -> dict[int, np.ndarray]:
    """Every ArUco marker of the table's family in ``image``: id -> its 4x2 corners in pixels
    (the marker's own clockwise order). An id seen in several places is given once, the
    largest sighting; :func:`find_marker_sightings` gives them all."""
    return {k: seen[0] for k, seen in find_marker_sightings(image).items()}


def find_marker_sightings(image: np.ndarray) -> dict[int, list[np.ndarray]]:
    """Every sighting of every ArUco marker of the table's family in ``image``: id -> the
    4x2 corners of each place it is seen, largest first. The detector's two reports of one
    marker in one place are one sighting. An id seen in several places is a spare printed
    copy, or a pattern in a tile's art that reads as a marker: calibration chooses by fit."""
    import cv2

    from vision.camera import as_bgr

    if not isinstance(image, np.ndarray) or image.ndim not in (2, 3) or image.size == 0:
        raise CalibrationError("expected an image to look for markers in")
    try:
        # grey, BGRA and 16-bit pictures are made 8-bit colour; float and odd shapes refused
        grey = cv2.cvtColor(as_bgr(image, "the picture"), cv2.COLOR_BGR2GRAY)
    except VisionError as exc:
        raise CalibrationError(f"cannot look for markers: {exc.message}") from None
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    detector = cv2.aruco.ArucoDetector(_dictionary(), params)
    corners, ids, _rejected = detector.detectMarkers(grey)
    found: dict[int, list[np.ndarray]] = {}
    if ids is None:
        return found
    quads = [np.asarray(q, np.float64).reshape(4, 2) for q in corners]
    order = sorted(range(len(quads)), key=lambda i: -cv2.contourArea(quads[i].astype(np.float32)))
    for i in order:
        q, k = quads[i], int(ids.ravel()[i])
        seen = found.setdefault(k, [])
        near = any(
            np.hypot(*(q.mean(axis=0) - other.mean(axis=0)))
            <= DUPLICATE_MARKER_RADIUS * _side_px(other)
            for other in seen
        )
        if not near:
            seen.append(q)
    return found


def _side_px(quad: np.ndarray) -> float:
    return float(np.mean(np.linalg.norm(np.roll(quad, -1, axis=0) - quad, axis=1)))


def _fit(
    image_points: np.ndarray, plane_points: np.ndarray
) -> tuple[np.ndarray, float]:  # homography image -> plane, rms error (mm)
    import cv2

    h, _ = cv2.findHomography(
        image_points.astype(np.float64), plane_points.astype(np.float64), method=0
    )
    # four points in a line give a finite matrix that maps the table onto a line
    if (
        h is None
        or not np.all(np.isfinite(h))
        or abs(np.linalg.det(h)) < 1e-12 * np.abs(h).max() ** 3
    ):
        raise CalibrationError(
            "the reference points do not describe a view of the table (are they in order, "
            "and not in a line?)"
        )
    err = apply(h, image_points) - plane_points
    return h, float(np.sqrt(np.mean(np.sum(err**2, axis=1))))


def _check_view(h: np.ndarray, geometry: TableGeometry) -> None:
    """Reject a fit that puts part of the table behind the camera or folds it over: what
    corners given out of order, or markers laid at the wrong corners, produce."""
    corners = np.array([geometry.table_corner(k) for k in MARKER_IDS])
    homog = np.hstack([corners, np.ones((4, 1))]) @ np.linalg.inv(h).T
    w = homog[:, 2] * np.sign(homog[0, 2] or 1.0)
    ok = bool(np.all(w > 1e-3 * np.abs(w).max()))
    if ok:
        img = homog[:, :2] / homog[:, 2:3]
        # seen in order, the four corners must all turn the same way (a convex quadrilateral)
        e = np.roll(img, -1, axis=0) - img
        turns = e[:, 0] * np.roll(e, -1, axis=0)[:, 1] - e[:, 1] * np.roll(e, -1, axis=0)[:, 0]
        if np.all(turns > 0):
            raise CalibrationError(
                "the table is seen mirrored: either the camera flips its picture (turn off "
                "its mirror/flip setting) or two markers on opposite corners (0 and 2, or 1 "
                "and 3) are swapped"
            )
        ok = bool(np.all(turns < 0))  # the plane's own corners turn this way (y points down)
    if not ok:
        raise CalibrationError(
            "the reference points fold the table over: the corners must go round in the "
            "markers' order (corner of seats 0/1, 1/2, 2/3, 3/0), and marker k must lie at the "
            "corner between seat k and seat k+1"
        )


def calibrate_from_markers(
    image: np.ndarray, geometry: TableGeometry | None = None, *, max_error_mm: float = 6.0
) -> Calibration:
    """Calibrate from a frame in which the four corner markers are visible.

    The markers' centres fix a first homography (so a marker may lie at any rotation); each
    marker's four corners are then matched to where they must lie and all twenty points are
    fitted together. Raises :class:`CalibrationError` naming missing markers or a poor fit.
    """
    geometry = geometry or TableGeometry()
    size = _size_of(image)
    sightings = find_marker_sightings(image)
    missing = [k for k in MARKER_IDS if k not in sightings]
    if missing:
        where = ", ".join(
            f"marker {k} (corner of seats {k} and {(k + 1) % SEATS})" for k in missing
        )
        seen = sorted(sightings)
        hint = " (a camera that mirrors its picture hides them all)" if not seen else ""
        raise CalibrationError(
            f"cannot see {where}; found {seen or 'no markers'}: check every marker is in view, "
            f"lit, flat and uncovered{hint}"
        )
    choices = list(
        itertools.islice(
            itertools.product(*(sightings[k] for k in MARKER_IDS)), MAX_SIGHTING_CHOICES
        )
    )
    fits: list[Calibration] = []
    first_error: CalibrationError | None = None
    for choice in choices:  # the first is every marker's largest sighting
        try:
            fits.append(
                _fit_markers(
                    dict(zip(MARKER_IDS, choice, strict=True)), geometry, size, max_error_mm
                )
            )
        except CalibrationError as exc:
            first_error = first_error or exc
    if not fits:
        assert first_error is not None
        raise first_error
    best = min(fits, key=lambda c: c.error_mm).with_felt(image)
    grid = np.array(
        [
            (x, y)
            for x in np.linspace(0, geometry.side_mm, 5)
            for y in np.linspace(0, geometry.side_mm, 5)
        ]
    )
    for other in fits:
        # two copies that both fit: the table cannot be told from its image
        apart = np.linalg.norm(other.to_plane(best.to_image(grid)) - grid, axis=1).max()
        if apart > AGREE_MM:
            twice = ", ".join(
                f"marker {k} is seen {len(sightings[k])} times"
                for k in MARKER_IDS
                if len(sightings[k]) > 1
            )
            raise CalibrationError(
                f"{twice}, and more than one place fits: take the spare copies off the table "
                "(only one of each marker, at its corner)"
            )
    return best


def _fit_markers(
    found: dict[int, np.ndarray],
    geometry: TableGeometry,
    size: tuple[int, int],
    max_error_mm: float,
) -> Calibration:
    """The calibration from one sighting of each corner marker, or :class:`CalibrationError`."""
    centres_img = np.array([found[k].mean(axis=0) for k in MARKER_IDS])
    centres_plane = np.array([geometry.marker_centre(k) for k in MARKER_IDS])
    h0, _ = _fit(centres_img, centres_plane)
    _check_view(h0, geometry)
    seen_mm = _check_scale(h0, found, geometry)
    img_pts = [centres_img]
    plane_pts = [centres_plane]
    half = geometry.marker_mm / 2
    offsets = np.array([(-half, -half), (half, -half), (half, half), (-half, half)])
    for i, k in enumerate(MARKER_IDS):
        expected = centres_plane[i] + offsets
        projected = apply(h0, found[k])
        # each seen corner goes to the nearest place a corner should be; rotation-free
        dist = np.linalg.norm(projected[:, None, :] - expected[None, :, :], axis=2)
        order = _best_cyclic_match(dist)
        img_pts.append(found[k])
        plane_pts.append(expected[order])
    image_points = np.vstack(img_pts)
    plane_points = np.vstack(plane_pts)
    h, err = _fit(image_points, plane_points)
    _check_view(h, geometry)
    if err > max_error_mm:
        raise CalibrationError(
            f"the markers do not fit a flat square table (misfit {err:.1f} mm): check the "
            f"table size ({geometry.side_mm:g} mm), marker size ({geometry.marker_mm:g} mm) "
            f"and inset ({geometry.marker_inset_mm:g} mm), and that each marker is flat"
        )
    return Calibration(
        homography=h,
        image_size=size,
        geometry=geometry,
        method="aruco",
        image_points=image_points,
        plane_points=plane_points,
        error_mm=err,
        marker_mm_seen=seen_mm,
    )


def scale_note(calibration: Calibration) -> str | None:
    """What to say when the markers measured more than :data:`SCALE_NOTE` off their size."""
    seen, given = calibration.marker_mm_seen, calibration.geometry.marker_mm
    if not seen or abs(seen / given - 1) <= SCALE_NOTE:
        return None
    implied = calibration.geometry.side_mm * given / seen
    return (
        f"the markers measure {seen:.0f} mm across, not the {given:g} mm given: if the table "
        f"is not {calibration.geometry.side_mm:g} mm (these markers would make it about "
        f"{implied:.0f} mm) or the markers are another size, calibrate again with the real "
        "sizes; a blurred picture or a lens that bends straight lines also makes them look "
        "smaller"
    )


def _check_scale(h0: np.ndarray, found: dict[int, np.ndarray], geometry: TableGeometry) -> float:
    """The markers' width on the plane, refusing sizes that cannot match the table: the four
    centres alone fit any table size exactly, and a wrong size would then fit the marker
    corners within a few millimetres, scaling every tile on the plane. The markers' own sides
    tell the scale."""
    measured = float(np.mean([_side_px(apply(h0, found[k])) for k in MARKER_IDS]))
    if abs(measured / geometry.marker_mm - 1) > MAX_SCALE_ERROR:
        implied = geometry.side_mm * geometry.marker_mm / measured
        raise CalibrationError(
            f"the markers measure {measured:.0f} mm across on a {geometry.side_mm:g} mm table, "
            f"not the {geometry.marker_mm:g} mm given: check the marker size (the black "
            f"square's side), the table size (were the markers {geometry.marker_mm:g} mm, the "
            f"table would be about {implied:.0f} mm) and the inset "
            f"({geometry.marker_inset_mm:g} mm); a badly blurred picture or a lens that bends "
            "straight lines strongly also shrinks them"
        )
    return measured


def _best_cyclic_match(dist: np.ndarray) -> np.ndarray:
    """The index of the expected corner for each seen corner, choosing among the four
    rotations (and their mirror images) the one with the least total distance."""
    best: tuple[float, np.ndarray] | None = None
    for step in (1, -1):
        for start in range(4):
            order = np.array([(start + step * i) % 4 for i in range(4)])
            cost = float(dist[np.arange(4), order].sum())
            if best is None or cost < best[0]:
                best = (cost, order)
    assert best is not None
    return best[1]


def calibrate_manual(
    corners_px: Any,
    image_size: tuple[int, int],
    geometry: TableGeometry | None = None,
) -> Calibration:
    """Calibrate from the four table corners picked by hand in a frame, in marker order: the
    corner between seats 0 and 1, then 1/2, 2/3, 3/0 (each seat's right-hand corner)."""
    geometry = geometry or TableGeometry()
    try:
        pts = np.asarray(corners_px, dtype=np.float64).reshape(4, 2)
    except (TypeError, ValueError):
        raise CalibrationError("give exactly four corners, each as x,y pixels") from None
    if not np.all(np.isfinite(pts)):
        raise CalibrationError("the corners must be numbers")
    w, h = _image_size(image_size)
    if np.any(pts < -0.5 * max(w, h)) or np.any(pts > 1.5 * max(w, h)):
        raise CalibrationError(f"the corners lie far outside the {w}x{h} frame")
    if len({(round(x), round(y)) for x, y in pts}) < 4:
        raise CalibrationError("the four corners must be four different points")
    plane = np.array([geometry.table_corner(k) for k in MARKER_IDS])
    hom, err = _fit(pts, plane)
    _check_view(hom, geometry)
    return Calibration(
        homography=hom,
        image_size=(int(w), int(h)),
        geometry=geometry,
        method="manual",
        image_points=pts,
        plane_points=plane,
        error_mm=err,
    )


def marker_image(marker: int, side_px: int) -> np.ndarray:
    """Marker ``marker`` as a white-bordered BGR image ``side_px`` wide, the black square
    filling 3/4 of it (the white quiet zone around it is what lets a detector find it)."""
    import cv2

    inner = max(12, round(side_px * 0.75))
    inner -= inner % 6  # 6 cells across (4 data + border): whole pixels per cell
    code = cv2.aruco.generateImageMarker(_dictionary(), int(marker), inner, borderBits=1)
    out = np.full((side_px, side_px), 255, np.uint8)
    off = (side_px - inner) // 2
    out[off : off + inner, off : off + inner] = code
    return cv2.cvtColor(out, cv2.COLOR_GRAY2BGR)


SHEET_MAX_MARKER_MM = 80.0
"""The largest marker :func:`marker_sheet` fits four to an A4 page, with its lines of text."""


def marker_sheet(geometry: TableGeometry | None = None, dpi: int = 300) -> np.ndarray:
    """A printable A4 page (portrait, ``dpi`` dots per inch) with the four markers at their
    true size and a line under each saying which corner it goes to."""
    import cv2

    geometry = geometry or TableGeometry()
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 72 <= dpi <= 1200:
        raise CalibrationError(
            f"the marker sheet's dpi is a whole number from 72 to 1200, not {dpi!r}"
        )
    per_mm = dpi / 25.4
    page = np.full((round(297 * per_mm), round(210 * per_mm), 3), 255, np.uint8)
    side = round(geometry.marker_mm * per_mm)
    code_cells = 6
    side -= side % code_cells
    if side < 2 * code_cells or geometry.marker_mm > SHEET_MAX_MARKER_MM:
        raise CalibrationError(
            f"a {geometry.marker_mm:g} mm marker cannot be printed four to an A4 page at "
            f"{dpi} dpi: the sheet takes markers of {2 * code_cells / per_mm:.1f}-"
            f"{SHEET_MAX_MARKER_MM:g} mm (print a larger one on its own)"
        )
    for k in MARKER_IDS:
        col, row = k % 2, k // 2
        cx = round((55 + 100 * col) * per_mm)
        cy = round((70 + 130 * row) * per_mm)
        code = cv2.aruco.generateImageMarker(_dictionary(), k, side, borderBits=1)
        y0, x0 = cy - side // 2, cx - side // 2
        page[y0 : y0 + side, x0 : x0 + side] = code[:, :, None]
        scale = dpi / 300
        lines = (
            f"marker {k}: corner of seat {k} and seat {(k + 1) % SEATS}",
            f"black square {geometry.marker_mm:g} mm; centre {geometry.marker_inset_mm:g} mm "
            "from both edges",
        )
        for i, text in enumerate(lines):
            # under the marker, but never off the page's printable part (10 mm in)
            left = max(x0 - round(25 * per_mm), round(10 * per_mm))
            org = (left, y0 + side + round((10 + 6 * i) * per_mm))
            cv2.putText(page, text, org, cv2.FONT_HERSHEY_SIMPLEX, 0.9 * scale, (0, 0, 0), 2)
    footer = "Print at 100% (no scaling); check the squares measure as stated."
    cv2.putText(
        page,
        footer,
        (round(15 * per_mm), round(285 * per_mm)),
        cv2.FONT_HERSHEY_SIMPLEX,
        1.0 * dpi / 300,
        (0, 0, 0),
        2,
    )
    return page


def _image_size(size: Any) -> tuple[int, int]:
    """A frame size ``(width, height)`` as two whole numbers above 0, or CalibrationError."""
    try:
        w, h = size
        ok = all(
            not isinstance(v, bool) and float(v).is_integer() and 0 < v < 2**16 for v in (w, h)
        )
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise CalibrationError(f"a frame size is (width, height) in whole pixels, not {size!r}")
    return int(w), int(h)


def _resolution(px_per_mm: Any, side_mm: float) -> float:
    """A picture's pixels per millimetre: positive, and not a picture of more than 16k a side
    (OpenCV takes a size of 0 to mean the source's own, which would give a wrong picture)."""
    ok = (
        not isinstance(px_per_mm, bool)
        and isinstance(px_per_mm, int | float)
        and math.isfinite(px_per_mm)
        and 1 <= side_mm * px_per_mm <= 16384
    )
    if not ok:
        raise CalibrationError(
            f"the picture's resolution is a number of pixels per millimetre giving 1 to 16384 "
            f"pixels across the {side_mm:g} mm table, not {px_per_mm!r}"
        )
    return float(px_per_mm)


def _zones_by_seat(zones: Any) -> tuple[np.ndarray, ...]:
    """A saved file's zones, each put at its seat: the seats must be 0-3, each once (a zone
    taken by its place in the list would silently give one seat's tiles to another)."""
    if not isinstance(zones, list):
        raise TypeError("'zones' must be a list")
    if not zones:
        return ()
    by_seat: dict[int, np.ndarray] = {}
    for z in zones:
        seat = z["seat"]
        if isinstance(seat, bool) or not isinstance(seat, int) or seat not in range(SEATS):
            raise CalibrationError(f"a zone's seat is 0, 1, 2 or 3, not {seat!r}")
        if seat in by_seat:
            raise CalibrationError(f"two zones are given for seat {seat}")
        by_seat[seat] = np.asarray(z["polygon_mm"], dtype=np.float64)
    missing = [k for k in range(SEATS) if k not in by_seat]
    if missing:
        raise CalibrationError(f"no zone is given for seat {', '.join(map(str, missing))}")
    return tuple(by_seat[k] for k in range(SEATS))
