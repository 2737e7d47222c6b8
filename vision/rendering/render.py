"""Render tiles lying on a table into an image, with the truth of where each one is.

One renderer makes both the training images and the simulator's camera frames, so what the
model learns and what the simulator shows cannot drift apart.

Tiles are placed on a *plane* (the table top, in plane pixels, seen from straight above): each
:class:`PlacedTile` has a label, a centre, a rotation and a size. :func:`render_scene` lays
them on a background (felt or wood), with the tiles' thickness and shadows, and then, when a
:class:`Camera` is given, views the plane through the camera's homography with its lighting,
glare, blur and noise. The result is the image and, for every tile, a :class:`TileTruth`: its
label, its outline in image pixels and whether it lies sideways.

Everything random comes from the ``numpy.random.Generator`` passed in, so a scene is the same
picture every time it is rendered with the same seed.

>>> import numpy as np
>>> from vision.rendering.faces import procedural_faces
>>> tiles = [PlacedTile(4, (100, 80), width=40), PlacedTile(27, (150, 80), angle=90, width=40)]
>>> out = render_scene(tiles, procedural_faces(), plane_size=(320, 200),
...                    rng=np.random.default_rng(1))
>>> out.image.shape, [t.sideways for t in out.tiles]
((200, 320, 3), [False, True])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

import cv2
import numpy as np

from controller.errors import ModelError
from vision.detection import Box, box_of_quad
from vision.labels import NUM_LABELS
from vision.rendering.faces import FaceSet

TILE_ASPECT = 4 / 3
"""Height over width of a tile face."""

FELTS: tuple[tuple[int, int, int], ...] = (
    (60, 120, 30),  # green
    (40, 100, 20),
    (120, 90, 20),  # blue
    (140, 110, 40),
    (50, 50, 140),  # red
    (70, 70, 70),  # grey
    (40, 40, 40),
    (130, 140, 40),  # teal
)
"""BGR colours of table felts the random scenes choose from."""
WOODS: tuple[tuple[int, int, int], ...] = ((60, 110, 160), (40, 80, 130), (90, 150, 200))


@dataclass(frozen=True)
class PlacedTile:
    """A tile lying on the table plane.

    ``centre`` is in plane pixels; ``angle`` turns the upright tile clockwise (as seen from
    above, degrees): 0 faces the bottom edge of the plane, 180 the top edge, 90 and 270 lie
    sideways. ``width`` is the short side in plane pixels (the long side is 4/3 of it).
    """

    label: int
    centre: tuple[float, float]
    angle: float = 0.0
    width: float = 30.0

    def __post_init__(self) -> None:
        if not 0 <= int(self.label) < NUM_LABELS:
            raise ModelError(f"{self.label!r} is not a tile label (0-{NUM_LABELS - 1})")
        if not self.width > 0:
            raise ModelError(f"a tile's width must be positive, not {self.width!r}")
        try:
            x, y = (float(v) for v in self.centre)
            ok = math.isfinite(x) and math.isfinite(y) and math.isfinite(float(self.angle))
        except (TypeError, ValueError):
            ok = False
        if not ok:  # a NaN centre was dropped silently; an infinite angle raised in math
            raise ModelError(
                f"a tile's centre is two numbers and its angle a number, not "
                f"{self.centre!r} and {self.angle!r}"
            )

    @property
    def height(self) -> float:
        return self.width * TILE_ASPECT

    @property
    def sideways(self) -> bool:
        """The long axis lies along the plane's x axis."""
        a = self.angle % 180.0
        return 45.0 < a < 135.0

    def corners(self) -> np.ndarray:
        """The 4x2 outline on the plane: the tile's own top-left, top-right, bottom-right,
        bottom-left corners."""
        w, h = self.width / 2, self.height / 2
        local = np.array([[-w, -h], [w, -h], [w, h], [-w, h]], np.float64)
        a = math.radians(self.angle)
        rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        return local @ rot.T + np.asarray(self.centre, np.float64)


@dataclass(frozen=True)
class TileTruth:
    """Where a rendered tile ended up: its label, its outline (4x2, image pixels, corners in
    the tile's own order: top-left, top-right, bottom-right, bottom-left), whether it lies
    sideways in the image, and the index of the :class:`PlacedTile` it came from."""

    label: int
    quad: np.ndarray = field(compare=False, repr=False)
    sideways: bool
    index: int

    @property
    def box(self) -> Box:
        """The axis-aligned box ``(x, y, w, h)`` around the outline."""
        return box_of_quad(self.quad)


class CameraFaults(TypedDict, total=False):
    """A picture's faults as keywords (the fields of :class:`Camera` of those names)."""

    brightness: float
    gradient: float
    glare: float
    blur: float
    noise: float
    colour: tuple[float, float, float]
    jpeg: int


@dataclass(frozen=True)
class Rendered:
    """A rendered image (BGR ``uint8``) and the truth of every tile at least half inside it."""

    image: np.ndarray
    tiles: list[TileTruth]


@dataclass(frozen=True)
class Camera:
    """How the plane is seen: a homography from plane to image pixels, the output size, and
    the picture's faults (all zero by default: a clean straight-down view).

    ``brightness`` scales the light; ``gradient`` is the strength of light falling off across
    the picture; ``glare`` the strength of a specular spot; ``blur`` a Gaussian sigma in
    pixels; ``noise`` the standard deviation of sensor noise (0-255 scale); ``colour`` a BGR
    white-balance multiplier; ``jpeg`` a JPEG quality to round-trip through (0 = none).
    ``view`` is the direction, on the plane, from which the camera looks (unit-ish vector): tile
    sides show on the side facing it.
    """

    size: tuple[int, int]
    homography: np.ndarray | None = None
    brightness: float = 1.0
    gradient: float = 0.0
    glare: float = 0.0
    blur: float = 0.0
    noise: float = 0.0
    colour: tuple[float, float, float] = (1.0, 1.0, 1.0)
    jpeg: int = 0
    view: tuple[float, float] = (0.0, 0.0)

    @staticmethod
    def looking_at(
        plane_size: tuple[int, int],
        size: tuple[int, int],
        *,
        tilt: float = 0.0,
        turn: float = 0.0,
        zoom: float = 1.0,
        shift: tuple[float, float] = (0.0, 0.0),
        **faults: Unpack[CameraFaults],
    ) -> Camera:
        """A camera whose picture frames the plane: ``tilt`` (degrees) leans the view so the
        far edge shrinks (perspective), ``turn`` rotates it, ``zoom`` > 1 crops in, ``shift``
        moves the view by fractions of the plane. Other keywords are the picture's faults."""
        pw, ph = plane_size
        w, h = size
        cx, cy = pw / 2 + shift[0] * pw, ph / 2 + shift[1] * ph
        # plane -> centred, rotated, scaled into the output
        s = min(w / pw, h / ph) * zoom
        a = math.radians(turn)
        t1 = np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1]], np.float64)
        rot = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
        sc = np.diag([s, s, 1.0])
        # perspective: the top of the picture is further away
        k = math.tan(math.radians(tilt)) / max(h, 1)
        persp = np.array([[1, 0, 0], [0, 1, 0], [0, -k, 1]], np.float64)
        t2 = np.array([[1, 0, w / 2], [0, 1, h / 2], [0, 0, 1]], np.float64)
        hom = t2 @ persp @ sc @ rot @ t1
        # keep the centre where it was after the perspective divide
        # the camera stands on the side the tilt leans away from: a negative tilt, the other
        lean = math.copysign(min(1.0, abs(tilt) / 30), tilt) if tilt else 0.0
        view = (math.sin(a) * lean, math.cos(a) * lean)
        return Camera(size=size, homography=hom, view=view, **faults)


def felt(size: tuple[int, int], rng: np.random.Generator, colour=None) -> np.ndarray:
    """A felt table top: a colour with fine fibre noise and a little uneven dye."""
    w, h = size
    c = np.array(colour if colour is not None else FELTS[rng.integers(len(FELTS))], np.float32)
    c = np.clip(c * rng.uniform(0.75, 1.25), 0, 255)
    img = np.empty((h, w, 3), np.float32)
    img[:] = c
    fine = rng.normal(0, rng.uniform(4, 12), (h, w, 1)).astype(np.float32)
    coarse = cv2.resize(rng.normal(0, 1, (max(2, h // 64), max(2, w // 64))).astype(np.float32),
                        (w, h), interpolation=cv2.INTER_CUBIC)[..., None]  # fmt: skip
    img += fine + coarse * rng.uniform(2, 10)
    return np.clip(img, 0, 255).astype(np.uint8)


def wood(size: tuple[int, int], rng: np.random.Generator, colour=None) -> np.ndarray:
    """A wooden table top: grain running along one axis."""
    w, h = size
    c = np.array(colour if colour is not None else WOODS[rng.integers(len(WOODS))], np.float32)
    c = np.clip(c * rng.uniform(0.7, 1.3), 0, 255)
    along_x = rng.random() < 0.5
    n = h if along_x else w
    freq = rng.uniform(0.02, 0.12)
    t = np.arange(n, dtype=np.float32)
    wobble = cv2.resize(rng.normal(0, 1, (1, max(2, n // 20))).astype(np.float32), (n, 1))[0]
    grain = 0.5 + 0.5 * np.sin(t * freq + wobble * 3)
    grain = grain[:, None] if along_x else grain[None, :]
    img = np.empty((h, w, 3), np.float32)
    img[:] = c
    img *= (0.8 + 0.25 * grain)[..., None]
    img += rng.normal(0, 4, (h, w, 1)).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def background(size: tuple[int, int], rng: np.random.Generator, kind: str = "any") -> np.ndarray:
    """A table top of ``kind`` ``"felt"``, ``"wood"`` or ``"any"`` (felt three times in four)."""
    if kind == "any":
        kind = "wood" if rng.random() < 0.25 else "felt"
    if kind == "felt":
        return felt(size, rng)
    if kind == "wood":
        return wood(size, rng)
    raise ModelError(f"unknown background {kind!r} (felt, wood or any)")


def render_scene(
    tiles: Sequence[PlacedTile],
    faces: FaceSet,
    *,
    plane_size: tuple[int, int],
    rng: np.random.Generator,
    table: str | np.ndarray = "any",
    camera: Camera | None = None,
    thickness: float = 0.25,
    shadows: bool = True,
    light: tuple[float, float] = (0.3, 0.5),
) -> Rendered:
    """Render ``tiles`` on a table plane of ``plane_size`` (width, height) and view it.

    ``faces`` draws the tiles; ``table`` is ``"felt"``, ``"wood"``, ``"any"`` or a BGR image of
    the plane's size; ``thickness`` is the tile's depth as a fraction of its width (its side
    shows towards the camera's ``view``); ``light`` is the direction shadows fall. Without a
    camera the image is the plane itself. Tiles are drawn in the order given (later ones on
    top). Returns the image and the truth of every tile whose outline is at least half inside
    the picture.

    It is :func:`lay_plane`, then :func:`view_plane`, then :func:`tile_truths`: a caller that
    shows one plane in many frames (the simulated camera) lays it once.
    """
    plane = lay_plane(
        tiles,
        faces,
        plane_size=plane_size,
        rng=rng,
        table=table,
        view=camera.view if camera is not None else (0.0, 0.0),
        thickness=thickness,
        shadows=shadows,
        light=light,
    )
    image = view_plane(plane, camera, rng)
    return Rendered(image, tile_truths(tiles, plane_size, camera))


def lay_plane(
    tiles: Sequence[PlacedTile],
    faces: FaceSet,
    *,
    plane_size: tuple[int, int],
    rng: np.random.Generator,
    table: str | np.ndarray = "any",
    view: tuple[float, float] = (0.0, 0.0),
    thickness: float = 0.25,
    shadows: bool = True,
    light: tuple[float, float] = (0.3, 0.5),
) -> np.ndarray:
    """The table plane with ``tiles`` laid on it, before any camera sees it (BGR ``float32``,
    ``plane_size``). ``rng`` is drawn on only for a ``table`` given by name; ``view`` is the
    camera's :attr:`Camera.view`. See :func:`render_scene` for the rest."""
    pw, ph = int(plane_size[0]), int(plane_size[1])
    if pw < 8 or ph < 8:
        raise ModelError(f"the plane must be at least 8x8 pixels, not {pw}x{ph}")
    if isinstance(table, np.ndarray):
        if table.shape[:2] != (ph, pw):
            raise ModelError(f"the table image is {table.shape[1]}x{table.shape[0]}, not {pw}x{ph}")
        plane = table.astype(np.float32)
    else:
        plane = background((pw, ph), rng, table).astype(np.float32)

    side = np.array(view, np.float64)
    light_v = np.array(light, np.float64)
    if shadows:
        shade: np.ndarray = np.ones((ph, pw), np.float32)
        for t in tiles:
            off = light_v * t.width * 0.25
            quad = t.corners() + off
            _fill_quad(shade, quad, 0.0)
        blur = max(1.0, float(np.mean([t.width for t in tiles])) * 0.12) if tiles else 1.0
        shade = cv2.GaussianBlur(shade, (0, 0), blur)
        plane *= (0.55 + 0.45 * shade)[..., None]

    for t in tiles:
        _draw_tile(plane, t, faces, side * thickness)
    return plane


def _homography(plane_size: tuple[int, int], camera: Camera | None) -> np.ndarray:
    if camera is None:
        return np.eye(3)
    pw, ph = int(plane_size[0]), int(plane_size[1])
    out_w, out_h = camera.size
    if camera.homography is not None:
        return camera.homography
    return np.diag([out_w / pw, out_h / ph, 1.0])


def view_plane(
    plane: np.ndarray,
    camera: Camera | None,
    rng: np.random.Generator,
    *,
    add_noise: Callable[[np.ndarray, float], None] | None = None,
) -> np.ndarray:
    """The camera's picture (BGR ``uint8``) of a plane from :func:`lay_plane`, with its faults
    drawn from ``rng``; without a camera, the plane itself. ``plane`` is only read.

    ``add_noise(image, sigma)`` adds the sensor noise to the ``float32`` picture in place; by
    default it is drawn by ``rng.normal``."""
    if camera is None:
        return np.clip(plane, 0, 255).astype(np.uint8)
    out_w, out_h = camera.size
    ph, pw = plane.shape[:2]
    surround = float(rng.uniform(10, 60))
    warped = cv2.warpPerspective(
        plane, _homography((pw, ph), camera), (out_w, out_h), flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT, borderValue=(surround,) * 3,
    )  # fmt: skip
    return _camera_faults(warped, camera, rng, add_noise)


def tile_truths(
    tiles: Sequence[PlacedTile], plane_size: tuple[int, int], camera: Camera | None
) -> list[TileTruth]:
    """The truth of every tile whose outline is at least half inside ``camera``'s picture
    (without a camera, the plane)."""
    hom = _homography(plane_size, camera)
    out_w, out_h = camera.size if camera is not None else (int(plane_size[0]), int(plane_size[1]))
    truths = []
    for i, t in enumerate(tiles):
        quad = cv2.perspectiveTransform(t.corners()[None].astype(np.float64), hom)[0]
        if _fraction_inside(quad, out_w, out_h) < 0.5:
            continue
        d = (quad[3] + quad[2] - quad[0] - quad[1]) / 2  # the tile's long axis in the image
        truths.append(
            TileTruth(int(t.label), quad.astype(np.float32), bool(abs(d[0]) > abs(d[1])), i)
        )
    return truths


def _fill_quad(img: np.ndarray, quad: np.ndarray, value: float) -> None:
    pts = np.round(quad * 16).astype(np.int32)
    cv2.fillConvexPoly(img, pts, value, cv2.LINE_AA, shift=4)


def _draw_tile(plane: np.ndarray, t: PlacedTile, faces: FaceSet, side: np.ndarray) -> None:
    face = faces.face(t.label)
    fh, fw = face.shape[:2]
    corners = t.corners()
    # the tile's side: the outline pushed towards the camera, in the back's colour below
    # and the body's above, so an oblique view shows the tile's depth
    if np.any(side):
        depth = side * t.width
        back_c = np.array(faces.face(42)[fh // 2, fw // 2], np.float32) * 0.7
        body_c = np.array(face[fh // 2, 2], np.float32) * 0.75
        for k, colour in ((1.0, back_c), (0.5, back_c), (0.35, body_c)):
            q = corners + depth * k
            hull = cv2.convexHull(np.vstack([q, corners]).astype(np.float32))[:, 0]
            _fill_quad_colour(plane, hull, colour)
    src = np.array([[0, 0], [fw, 0], [fw, fh], [0, fh]], np.float32)
    x0, y0 = np.floor(corners.min(axis=0)).astype(int) - 1
    x1, y1 = np.ceil(corners.max(axis=0)).astype(int) + 1
    ph, pw = plane.shape[:2]
    cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x1, pw), min(y1, ph)
    if cx0 >= cx1 or cy0 >= cy1:
        return
    dst = (corners - [cx0, cy0]).astype(np.float32)
    m = cv2.getAffineTransform(src[:3], dst[:3])
    size = (cx1 - cx0, cy1 - cy0)
    # shrinking a face a lot aliases its strokes; pre-blur in proportion
    scale = t.width / fw
    src_img = face if scale > 0.5 else cv2.GaussianBlur(face, (0, 0), 0.4 / scale)
    patch = cv2.warpAffine(src_img, m, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    mask = np.zeros((size[1], size[0]), np.float32)
    _fill_quad(mask, dst.astype(np.float64), 1.0)
    roi = plane[cy0:cy1, cx0:cx1]
    roi[:] = roi * (1 - mask[..., None]) + patch.astype(np.float32) * mask[..., None]


def _fill_quad_colour(plane: np.ndarray, poly: np.ndarray, colour: np.ndarray) -> None:
    x0, y0 = np.floor(poly.min(axis=0)).astype(int)
    x1, y1 = np.ceil(poly.max(axis=0)).astype(int) + 1
    ph, pw = plane.shape[:2]
    cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x1, pw), min(y1, ph)
    if cx0 >= cx1 or cy0 >= cy1:
        return
    mask = np.zeros((cy1 - cy0, cx1 - cx0), np.float32)
    pts = np.round((poly - [cx0, cy0]) * 16).astype(np.int32)
    cv2.fillPoly(mask, [pts], 1.0, cv2.LINE_AA, shift=4)
    roi = plane[cy0:cy1, cx0:cx1]
    roi[:] = roi * (1 - mask[..., None]) + colour * mask[..., None]


def _camera_faults(
    img: np.ndarray,
    cam: Camera,
    rng: np.random.Generator,
    add_noise: Callable[[np.ndarray, float], None] | None = None,
) -> np.ndarray:
    """``cam``'s faults on a picture (``float32``, which it may overwrite). ``add_noise(image,
    sigma)`` adds the sensor noise in place (by default drawn by ``rng.normal``).

    Large temporaries are few (each costs the memory's first touch): the steps work in place
    where that gives the same values."""
    h, w = img.shape[:2]
    out = img
    if tuple(float(c) for c in cam.colour) != (1.0, 1.0, 1.0) or cam.brightness != 1.0:
        out *= np.array(cam.colour, np.float32)  # (multiplying by ones changes no value)
        out *= cam.brightness
    # a row and a column of coordinates broadcast to the same values np.mgrid gives
    xx = np.arange(w, dtype=np.float32)[None, :]
    yy = np.arange(h, dtype=np.float32)[:, None]
    if cam.gradient:
        a = rng.uniform(0, 2 * math.pi)
        ramp = (xx - w / 2) * math.cos(a) + (yy - h / 2) * math.sin(a)
        ramp /= max(w, h)
        ramp *= cam.gradient
        ramp += 1.0
        out *= ramp[..., None]
    if cam.glare:
        gx, gy = rng.uniform(0, w), rng.uniform(0, h)
        r = rng.uniform(0.05, 0.25) * max(w, h)
        spot = (xx - gx) ** 2 + (yy - gy) ** 2
        np.negative(spot, out=spot)
        spot /= 2 * r * r
        np.exp(spot, out=spot)
        spot *= cam.glare * 255
        out += spot[..., None]
    if cam.blur > 0:
        out = cv2.GaussianBlur(out, (0, 0), cam.blur, dst=out)
    if cam.noise > 0:
        if add_noise is None:
            out += rng.normal(0, cam.noise, out.shape).astype(np.float32)
        else:
            add_noise(out, cam.noise)
    out8: np.ndarray = np.clip(out, 0, 255, out=out).astype(np.uint8)
    if cam.jpeg:
        ok, buf = cv2.imencode(".jpg", out8, [cv2.IMWRITE_JPEG_QUALITY, int(cam.jpeg)])
        decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR) if ok else None
        if decoded is not None:
            out8 = decoded
    return out8


def _fraction_inside(quad: np.ndarray, w: int, h: int) -> float:
    area = abs(cv2.contourArea(quad.astype(np.float32)))
    if area <= 0:
        return 0.0
    clip = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    inter, _ = cv2.intersectConvexConvex(_ccw(quad), clip)
    return float(inter / area)


def _ccw(quad: np.ndarray) -> np.ndarray:
    q = quad.astype(np.float32)
    hull = cv2.convexHull(q)
    return hull.reshape(-1, 2)
