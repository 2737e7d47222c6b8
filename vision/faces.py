"""Pictures of whole tiles seen from straight above: body, border and face.

A :class:`FaceSet` gives, for every :mod:`vision.labels` label, a BGR ``uint8`` image of one
upright tile with width:height = 3:4. Two sources:

- :func:`procedural_faces` draws all 43 faces (42 tile faces and the back) with OpenCV
  primitives, in code only, so the product and the simulator have tile pictures on any machine.
- :func:`art_faces` builds a set from the public-domain art sheet in ``../shared/data/tile-art/``
  (``wikimedia-pd/uni.svg``), read by a small SVG rasteriser of its own (paths, ``use``,
  transforms, nested ``svg`` viewports). It is used for training only; no art is committed.

Both put the face on the same kind of tile body (ivory with a rounded border), whose colours can
be changed to imitate another set.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from controller.errors import ModelError
from vision.labels import BACK, NUM_LABELS, label_name

TILE_WIDTH = 96
"""Width in pixels of the face images a set makes by default (height is 4/3 of it)."""

Colour = tuple[int, int, int]

IVORY: Colour = (214, 234, 242)
"""BGR of a usual tile body."""
BACK_GREEN: Colour = (70, 140, 40)
BACK_BLUE: Colour = (170, 110, 40)
BACK_YELLOW: Colour = (40, 170, 220)

_BLUE: Colour = (120, 40, 20)
_RED: Colour = (30, 30, 170)
_GREEN: Colour = (40, 120, 20)
_BLACK: Colour = (40, 30, 30)


@dataclass
class FaceSet:
    """Pictures of one tile set: ``face(label)`` is the upright tile image for a label.

    ``faces`` maps every label 0-42 to a BGR ``uint8`` image of shape ``(4k, 3k, 3)``.
    """

    name: str
    faces: dict[int, np.ndarray] = field(repr=False)

    def __post_init__(self) -> None:
        missing = [label_name(i) for i in range(NUM_LABELS) if i not in self.faces]
        if missing:
            raise ModelError(f"face set {self.name!r} lacks faces for {', '.join(missing)}")
        for img in self.faces.values():
            img.setflags(write=False)

    def face(self, label: int) -> np.ndarray:
        """The tile image for ``label`` (read-only; copy it to draw on it)."""
        try:
            return self.faces[int(label)]
        except (KeyError, ValueError, TypeError):
            raise ModelError(f"{label!r} is not a tile label (0-{NUM_LABELS - 1})") from None

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the face images."""
        h, w = self.faces[0].shape[:2]
        return w, h


# --------------------------------------------------------------------------------------------
# The tile body shared by both sets


def tile_body(
    width: int = TILE_WIDTH,
    *,
    body: Colour = IVORY,
    border: Colour | None = None,
) -> np.ndarray:
    """An empty upright tile (3:4): rounded body with a faint bevel and border line."""
    h = round(width * 4 / 3)
    img = np.zeros((h, width, 3), np.uint8)
    img[:] = _scale(body, 0.80)
    r = max(2, width // 10)
    _rounded_rect(img, 0, 0, width - 1, h - 1, r, body)
    # a lighter inner face, as the bevel of a real tile catches the light at its edge
    inset = max(2, width // 24)
    lighter = tuple(min(255, int(c * 1.04 + 6)) for c in body)
    _rounded_rect(img, inset, inset, width - 1 - inset, h - 1 - inset, r, lighter)
    edge = border if border is not None else _scale(body, 0.72)
    _rounded_outline(img, 0, 0, width - 1, h - 1, r, edge, max(1, width // 48))
    return img


def _scale(c: Colour, f: float) -> Colour:
    return tuple(int(min(255, max(0, v * f))) for v in c)  # type: ignore[return-value]


def _rounded_rect(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, r: int, c: Colour) -> None:
    cv2.rectangle(img, (x0 + r, y0), (x1 - r, y1), c, -1)
    cv2.rectangle(img, (x0, y0 + r), (x1, y1 - r), c, -1)
    for cx, cy in ((x0 + r, y0 + r), (x1 - r, y0 + r), (x0 + r, y1 - r), (x1 - r, y1 - r)):
        cv2.circle(img, (cx, cy), r, c, -1, cv2.LINE_AA)


def _rounded_outline(
    img: np.ndarray, x0: int, y0: int, x1: int, y1: int, r: int, c: Colour, t: int
) -> None:
    cv2.line(img, (x0 + r, y0), (x1 - r, y0), c, t, cv2.LINE_AA)
    cv2.line(img, (x0 + r, y1), (x1 - r, y1), c, t, cv2.LINE_AA)
    cv2.line(img, (x0, y0 + r), (x0, y1 - r), c, t, cv2.LINE_AA)
    cv2.line(img, (x1, y0 + r), (x1, y1 - r), c, t, cv2.LINE_AA)
    for (cx, cy), a in (
        ((x0 + r, y0 + r), 180),
        ((x1 - r, y0 + r), 270),
        ((x1 - r, y1 - r), 0),
        ((x0 + r, y1 - r), 90),
    ):
        cv2.ellipse(img, (cx, cy), (r, r), a, 0, 90, c, t, cv2.LINE_AA)


def back_face(
    width: int = TILE_WIDTH, *, colour: Colour = BACK_GREEN, body: Colour = IVORY
) -> np.ndarray:
    """A face-down tile seen from above: the coloured back, a thin rim of body at the edge."""
    img = tile_body(width, body=body)
    h = img.shape[0]
    r = max(2, width // 10)
    inset = max(2, width // 20)
    _rounded_rect(img, inset, inset, width - 1 - inset, h - 1 - inset, r, colour)
    hi = tuple(min(255, int(c * 1.12 + 8)) for c in colour)
    _rounded_rect(img, inset * 2, inset * 2, width - 1 - inset * 2, h // 3, r, hi)
    img[:] = cv2.GaussianBlur(img, (0, 0), width / 60)
    return img


# --------------------------------------------------------------------------------------------
# Procedural faces: glyphs drawn as strokes in a unit box

# Each glyph is a list of strokes; a stroke is a list of (x, y) points in [0, 1]^2.
Stroke = list[tuple[float, float]]

_NUMERAL_GLYPHS: dict[int, list[Stroke]] = {
    1: [[(0.08, 0.52), (0.92, 0.48)]],
    2: [[(0.22, 0.3), (0.78, 0.28)], [(0.08, 0.74), (0.92, 0.72)]],
    3: [[(0.2, 0.18), (0.8, 0.16)], [(0.28, 0.5), (0.72, 0.48)], [(0.08, 0.84), (0.92, 0.82)]],
    4: [
        [(0.1, 0.15), (0.1, 0.88)],
        [(0.1, 0.15), (0.9, 0.15), (0.9, 0.88)],
        [(0.1, 0.86), (0.9, 0.86)],
        [(0.4, 0.15), (0.36, 0.55), (0.24, 0.66)],
        [(0.6, 0.15), (0.6, 0.6), (0.76, 0.62)],
    ],
    5: [
        [(0.15, 0.12), (0.85, 0.12)],
        [(0.45, 0.12), (0.35, 0.86)],
        [(0.22, 0.45), (0.75, 0.45), (0.7, 0.86)],
        [(0.06, 0.88), (0.94, 0.88)],
    ],
    6: [
        [(0.45, 0.04), (0.55, 0.16)],
        [(0.08, 0.32), (0.92, 0.32)],
        [(0.38, 0.5), (0.14, 0.88)],
        [(0.62, 0.5), (0.88, 0.88)],
    ],
    7: [[(0.06, 0.5), (0.94, 0.38)], [(0.38, 0.06), (0.38, 0.8), (0.5, 0.9), (0.9, 0.9)]],
    8: [[(0.38, 0.16), (0.3, 0.6), (0.08, 0.88)], [(0.6, 0.14), (0.7, 0.6), (0.94, 0.88)]],
    9: [
        [(0.44, 0.06), (0.4, 0.55), (0.1, 0.9)],
        [(0.12, 0.32), (0.66, 0.32), (0.64, 0.85), (0.92, 0.86), (0.92, 0.72)],
    ],
}
_WAN_GLYPH: list[Stroke] = [
    [(0.06, 0.14), (0.94, 0.14)],
    [(0.4, 0.14), (0.34, 0.56), (0.1, 0.92)],
    [(0.37, 0.44), (0.82, 0.44), (0.8, 0.86), (0.62, 0.9)],
]
_HONOUR_GLYPHS: dict[int, list[Stroke]] = {
    27: [  # 东
        [(0.12, 0.2), (0.88, 0.2)],
        [(0.44, 0.04), (0.22, 0.52), (0.86, 0.52)],
        [(0.56, 0.3), (0.56, 0.94), (0.46, 0.9)],
        [(0.34, 0.68), (0.16, 0.84)],
        [(0.7, 0.68), (0.88, 0.84)],
    ],
    28: [  # 南
        [(0.1, 0.16), (0.9, 0.16)],
        [(0.5, 0.02), (0.5, 0.3)],
        [(0.14, 0.32), (0.14, 0.96)],
        [(0.14, 0.32), (0.86, 0.32), (0.86, 0.96), (0.76, 0.92)],
        [(0.36, 0.42), (0.46, 0.52)],
        [(0.66, 0.42), (0.56, 0.52)],
        [(0.3, 0.58), (0.7, 0.58)],
        [(0.26, 0.74), (0.74, 0.74)],
        [(0.5, 0.58), (0.5, 0.96)],
    ],
    29: [  # 西
        [(0.06, 0.1), (0.94, 0.1)],
        [(0.12, 0.34), (0.12, 0.94)],
        [(0.12, 0.34), (0.88, 0.34), (0.88, 0.94)],
        [(0.12, 0.9), (0.88, 0.9)],
        [(0.4, 0.1), (0.38, 0.56), (0.2, 0.7)],
        [(0.6, 0.1), (0.6, 0.62), (0.8, 0.64)],
    ],
    30: [  # 北
        [(0.36, 0.06), (0.36, 0.94)],
        [(0.08, 0.38), (0.36, 0.38)],
        [(0.06, 0.82), (0.36, 0.66)],
        [(0.64, 0.06), (0.64, 0.86), (0.94, 0.88), (0.94, 0.74)],
        [(0.92, 0.3), (0.64, 0.5)],
    ],
    31: [  # 中
        [(0.14, 0.28), (0.14, 0.7)],
        [(0.14, 0.28), (0.86, 0.28), (0.86, 0.7)],
        [(0.14, 0.68), (0.86, 0.68)],
        [(0.5, 0.02), (0.5, 0.98)],
    ],
    32: [  # 发
        [(0.3, 0.06), (0.2, 0.3)],
        [(0.06, 0.3), (0.94, 0.3)],
        [(0.7, 0.06), (0.82, 0.2)],
        [(0.5, 0.3), (0.42, 0.6), (0.1, 0.96)],
        [(0.36, 0.56), (0.8, 0.56), (0.4, 0.96)],
        [(0.5, 0.72), (0.92, 0.96)],
    ],
}
_FLOWER_NUMERALS = {34: 1, 35: 2, 36: 3, 37: 4, 38: 1, 39: 2, 40: 4, 41: 3}


def _draw_strokes(
    img: np.ndarray,
    strokes: Iterable[Stroke],
    box: tuple[float, float, float, float],
    colour: Colour,
    thickness: float,
) -> None:
    x, y, w, h = box
    t = max(1, round(thickness))
    for stroke in strokes:
        pts = np.array([[x + px * w, y + py * h] for px, py in stroke], np.float64)
        pts = np.round(pts * 16).astype(np.int32)  # 4 fractional bits
        cv2.polylines(img, [pts], False, colour, t, cv2.LINE_AA, shift=4)


def _circle(img: np.ndarray, cx: float, cy: float, r: float, c: Colour, t: int = -1) -> None:
    cv2.circle(img, (round(cx * 16), round(cy * 16)), round(r * 16), c, t, cv2.LINE_AA, shift=4)


def _dot(img: np.ndarray, cx: float, cy: float, r: float, c: Colour) -> None:
    """A 筒 coin: ring, inner disc and a pale centre."""
    _circle(img, cx, cy, r, c)
    _circle(img, cx, cy, r * 0.78, IVORY)
    _circle(img, cx, cy, r * 0.6, c)
    _circle(img, cx, cy, r * 0.22, IVORY)


_DOT_LAYOUTS: dict[int, list[tuple[float, float, int]]] = {
    # (x, y, colour index) in the face box; 0 blue, 1 green, 2 red
    2: [(0.5, 0.27, 1), (0.5, 0.73, 0)],
    3: [(0.22, 0.2, 0), (0.5, 0.5, 2), (0.78, 0.8, 1)],
    4: [(0.28, 0.27, 0), (0.72, 0.27, 1), (0.28, 0.73, 1), (0.72, 0.73, 0)],
    5: [(0.25, 0.2, 0), (0.75, 0.2, 1), (0.5, 0.5, 2), (0.25, 0.8, 1), (0.75, 0.8, 0)],
    6: [
        (0.3, 0.17, 1),
        (0.7, 0.17, 1),
        (0.3, 0.5, 2),
        (0.7, 0.5, 2),
        (0.3, 0.83, 2),
        (0.7, 0.83, 2),
    ],
    7: [
        (0.2, 0.12, 1),
        (0.5, 0.24, 1),
        (0.8, 0.36, 1),
        (0.3, 0.6, 2),
        (0.7, 0.6, 2),
        (0.3, 0.86, 2),
        (0.7, 0.86, 2),
    ],
    8: [(x, y, 0) for y in (0.12, 0.37, 0.63, 0.88) for x in (0.3, 0.7)],
    9: [(x, y, (0, 2, 1)[i]) for i, y in enumerate((0.17, 0.5, 0.83)) for x in (0.2, 0.5, 0.8)],
}
_DOT_COLOURS = (_BLUE, _GREEN, _RED)


def _draw_dots(img: np.ndarray, n: int, box: tuple[float, float, float, float]) -> None:
    x, y, w, h = box
    if n == 1:
        r = w * 0.42
        cx, cy = x + w / 2, y + h / 2
        _circle(img, cx, cy, r, _GREEN)
        _circle(img, cx, cy, r * 0.86, IVORY)
        _circle(img, cx, cy, r * 0.7, _RED)
        _circle(img, cx, cy, r * 0.5, IVORY)
        _circle(img, cx, cy, r * 0.36, _BLUE)
        _circle(img, cx, cy, r * 0.12, IVORY)
        return
    r = {2: 0.2, 3: 0.17, 4: 0.19, 5: 0.17, 6: 0.16, 7: 0.13, 8: 0.15, 9: 0.14}[n] * w
    for px, py, ci in _DOT_LAYOUTS[n]:
        _dot(img, x + px * w, y + py * h, r, _DOT_COLOURS[ci])


def _stick(img: np.ndarray, cx: float, cy: float, w: float, h: float, c: Colour) -> None:
    """A 条 bamboo stick: a rounded bar with a joint in the middle."""
    x0, y0 = round((cx - w / 2) * 16), round((cy - h / 2) * 16)
    x1, y1 = round((cx + w / 2) * 16), round((cy + h / 2) * 16)
    cv2.rectangle(img, (x0, y0), (x1, y1), c, -1, cv2.LINE_AA, shift=4)
    t = max(1, round(w / 5))
    mid = round(cy * 16)
    cv2.line(img, (x0, mid), (x1, mid), IVORY, t, cv2.LINE_AA, shift=4)
    cv2.line(img, (round(cx * 16), y0 + t * 16), (round(cx * 16), y1 - t * 16), IVORY, 1, shift=4)


_STICK_LAYOUTS: dict[int, list[tuple[float, float, int]]] = {
    # (x, y, colour index) of stick centres; 0 green, 1 red, 2 blue
    2: [(0.5, 0.25, 0), (0.5, 0.75, 2)],
    3: [(0.5, 0.25, 0), (0.3, 0.75, 2), (0.7, 0.75, 2)],
    4: [(0.3, 0.25, 0), (0.7, 0.25, 2), (0.3, 0.75, 2), (0.7, 0.75, 0)],
    5: [(0.22, 0.25, 0), (0.78, 0.25, 2), (0.5, 0.5, 1), (0.22, 0.75, 2), (0.78, 0.75, 0)],
    6: [(x, y, 0) for y in (0.25, 0.75) for x in (0.22, 0.5, 0.78)],
    7: [(0.5, 0.17, 1)] + [(x, y, 0) for y in (0.5, 0.83) for x in (0.22, 0.5, 0.78)],
    8: [],
    9: [(x, y, (1 if x == 0.5 else 0)) for y in (0.17, 0.5, 0.83) for x in (0.22, 0.5, 0.78)],
}
_STICK_COLOURS = (_GREEN, _RED, _BLUE)


def _draw_bamboo(img: np.ndarray, n: int, box: tuple[float, float, float, float]) -> None:
    x, y, w, h = box
    if n == 1:  # the sparrow
        cx, cy = x + w / 2, y + h / 2
        cv2.ellipse(
            img, (round(cx), round(cy + h * 0.08)), (round(w * 0.3), round(h * 0.22)),
            -20, 0, 360, _GREEN, -1, cv2.LINE_AA,
        )  # fmt: skip
        _circle(img, cx + w * 0.18, cy - h * 0.2, w * 0.16, _RED)
        _circle(img, cx + w * 0.22, cy - h * 0.22, w * 0.04, IVORY)
        pts = np.array([[cx + w * 0.32, cy - h * 0.2], [cx + w * 0.46, cy - h * 0.16],
                        [cx + w * 0.32, cy - h * 0.12]], np.int32)  # fmt: skip
        cv2.fillPoly(img, [pts], _BLUE, cv2.LINE_AA)
        tail = np.array([[cx - w * 0.2, cy + h * 0.2], [cx - w * 0.46, cy + h * 0.42],
                         [cx - w * 0.12, cy + h * 0.36]], np.int32)  # fmt: skip
        cv2.fillPoly(img, [tail], _RED, cv2.LINE_AA)
        cv2.line(img, (round(cx), round(cy + h * 0.3)), (round(cx), round(cy + h * 0.44)),
                 _BLUE, max(1, round(w / 24)), cv2.LINE_AA)  # fmt: skip
        return
    sw = w * (0.13 if n != 2 else 0.16)
    sh = h * (0.27 if n not in (7, 9) else 0.24)
    if n == 8:  # two rows of four, the middle pairs leaning into an M and a W
        for row, cy in enumerate((0.25, 0.75)):
            for i, cx in enumerate((0.14, 0.38, 0.62, 0.86)):
                lean = (-1 if i in (1, 3) else 1) * (1 if row == 0 else -1) * 0.6
                pts = cv2.boxPoints(((x + cx * w, y + cy * h), (sw, sh * 1.2), lean * 25))
                cv2.fillPoly(img, [np.round(pts).astype(np.int32)], _GREEN, cv2.LINE_AA)
        return
    for px, py, ci in _STICK_LAYOUTS[n]:
        _stick(img, x + px * w, y + py * h, sw, sh, _STICK_COLOURS[ci])


def _draw_flower(img: np.ndarray, label: int, box: tuple[float, float, float, float]) -> None:
    """Flowers and seasons: an emblem, and the set's number in the top corner, as on most
    sets (seasons numbered in red, flowers in blue)."""
    x, y, w, h = box
    cx, cy = x + w * 0.5, y + h * 0.58
    r = w * 0.3
    t = max(1, round(w / 22))
    if label == 34:  # 春 spring: a budding branch
        cv2.line(img, (round(cx - r), round(cy + r)), (round(cx + r), round(cy - r)), _GREEN, t)
        for k in range(3):
            _circle(img, cx - r * 0.5 + k * r * 0.5, cy + r * 0.5 - k * r * 0.5, r * 0.28, _RED)
    elif label == 35:  # 夏 summer: a sun
        _circle(img, cx, cy, r * 0.5, (30, 140, 230))
        for k in range(8):
            a = k * math.pi / 4
            p0 = (round(cx + math.cos(a) * r * 0.7), round(cy + math.sin(a) * r * 0.7))
            p1 = (round(cx + math.cos(a) * r), round(cy + math.sin(a) * r))
            cv2.line(img, p0, p1, _RED, t, cv2.LINE_AA)
    elif label == 36:  # 秋 autumn: a falling leaf
        cv2.ellipse(img, (round(cx), round(cy)), (round(r), round(r * 0.5)), -35, 0, 360,
                    (30, 100, 200), -1, cv2.LINE_AA)  # fmt: skip
        cv2.line(img, (round(cx - r), round(cy + r * 0.6)), (round(cx + r * 0.8),
                 round(cy - r * 0.5)), _RED, t, cv2.LINE_AA)  # fmt: skip
    elif label == 37:  # 冬 winter: a snowflake
        for k in range(3):
            a = k * math.pi / 3
            d = (math.cos(a) * r, math.sin(a) * r)
            cv2.line(img, (round(cx - d[0]), round(cy - d[1])), (round(cx + d[0]),
                     round(cy + d[1])), _BLUE, t + 1, cv2.LINE_AA)  # fmt: skip
        _circle(img, cx, cy, r * 0.2, _RED)
    elif label == 38:  # 梅 plum: five pink petals
        for k in range(5):
            a = k * 2 * math.pi / 5 - math.pi / 2
            _circle(img, cx + math.cos(a) * r * 0.5, cy + math.sin(a) * r * 0.5, r * 0.34,
                    (150, 90, 220))  # fmt: skip
        _circle(img, cx, cy, r * 0.22, (30, 180, 230))
    elif label == 39:  # 兰 orchid: long leaves and a flower
        for k in (-1, 0, 1):
            cv2.ellipse(img, (round(cx + k * r * 0.4), round(cy + r * 0.3)), (round(r * 0.15),
                        round(r * 0.9)), k * 25, 0, 360, _GREEN, -1, cv2.LINE_AA)  # fmt: skip
        _circle(img, cx, cy - r * 0.7, r * 0.25, (160, 60, 140))
    elif label == 40:  # 竹 bamboo: a stalk with leaves
        cv2.rectangle(img, (round(cx - r * 0.12), round(cy - r)), (round(cx + r * 0.12),
                      round(cy + r)), _GREEN, -1)  # fmt: skip
        for k in (-1, 1):
            cv2.ellipse(img, (round(cx + k * r * 0.45), round(cy - r * 0.2 * k)), (round(r * 0.45),
                        round(r * 0.12)), -30 * k, 0, 360, _GREEN, -1, cv2.LINE_AA)  # fmt: skip
    else:  # 菊 chrysanthemum: many yellow petals
        for k in range(12):
            a = k * math.pi / 6
            cv2.ellipse(img, (round(cx + math.cos(a) * r * 0.5), round(cy + math.sin(a) * r * 0.5)),
                        (round(r * 0.42), round(r * 0.12)), math.degrees(a), 0, 360,
                        (20, 170, 230), -1, cv2.LINE_AA)  # fmt: skip
        _circle(img, cx, cy, r * 0.22, _RED)
    numeral = _NUMERAL_GLYPHS[_FLOWER_NUMERALS[label]]
    colour = _RED if label < 38 else _BLUE
    _draw_strokes(img, numeral, (x + w * 0.06, y + h * 0.02, w * 0.32, h * 0.18), colour, w / 18)


def _draw_face(img: np.ndarray, label: int, box: tuple[float, float, float, float]) -> None:
    x, y, w, h = box
    stroke = w / 11
    if label < 9:  # characters: numeral above, 万 below
        _draw_strokes(img, _NUMERAL_GLYPHS[label + 1], (x + w * 0.1, y, w * 0.8, h * 0.42),
                      _BLUE, stroke)  # fmt: skip
        _draw_strokes(img, _WAN_GLYPH, (x + w * 0.1, y + h * 0.5, w * 0.8, h * 0.48), _RED, stroke)
    elif label < 18:
        _draw_dots(img, label - 8, box)
    elif label < 27:
        _draw_bamboo(img, label - 17, box)
    elif label < 31:
        _draw_strokes(img, _HONOUR_GLYPHS[label], (x + w * 0.04, y + h * 0.14, w * 0.92,
                      h * 0.72), _BLACK, stroke * 1.1)  # fmt: skip
    elif label == 31:
        _draw_strokes(img, _HONOUR_GLYPHS[31], (x + w * 0.06, y + h * 0.1, w * 0.88, h * 0.8),
                      _RED, stroke * 1.3)  # fmt: skip
    elif label == 32:
        _draw_strokes(img, _HONOUR_GLYPHS[32], (x + w * 0.04, y + h * 0.1, w * 0.92, h * 0.8),
                      _GREEN, stroke * 1.2)  # fmt: skip
    elif label == 33:  # 白: an empty blue frame, as on most sets
        t = max(1, round(w / 16))
        cv2.rectangle(img, (round(x + w * 0.08), round(y + h * 0.1)),
                      (round(x + w * 0.92), round(y + h * 0.9)), _BLUE, t, cv2.LINE_AA)  # fmt: skip
        cv2.rectangle(img, (round(x + w * 0.2), round(y + h * 0.2)),
                      (round(x + w * 0.8), round(y + h * 0.8)), _BLUE, max(1, t // 2),
                      cv2.LINE_AA)  # fmt: skip
    else:
        _draw_flower(img, label, box)


def procedural_faces(
    width: int = TILE_WIDTH,
    *,
    body: Colour = IVORY,
    back: Colour = BACK_GREEN,
    name: str = "procedural",
) -> FaceSet:
    """The project's own drawing of all 43 faces, at ``width`` pixels wide.

    Always available (no data files). ``body`` and ``back`` are the BGR colours of the tile
    body and of its back, to imitate different sets.
    """
    if width < 24:
        raise ModelError(f"tile faces need at least 24 pixels of width, not {width}")
    faces: dict[int, np.ndarray] = {}
    for label in range(BACK):
        img = tile_body(width, body=body)
        h = img.shape[0]
        # draw at 4x and shrink: smooth strokes at any tile size
        big = cv2.resize(img, (width * 4, h * 4), interpolation=cv2.INTER_NEAREST)
        m = width * 4 * 0.12
        _draw_face(big, label, (m, m * 1.05, width * 4 - 2 * m, h * 4 - 2.1 * m))
        faces[label] = cv2.resize(big, (width, h), interpolation=cv2.INTER_AREA)
    faces[BACK] = back_face(width, colour=back, body=body)
    return FaceSet(name, faces)


# --------------------------------------------------------------------------------------------
# Art faces: a small SVG rasteriser for the public-domain sheet

_ART_IDS: dict[int, str] = {
    **{i: f"t_ch{i + 1}" for i in range(9)},
    **{9 + i: f"t_do{i + 1}" for i in range(9)},
    **{18 + i: f"t_ba{i + 1}" for i in range(9)},
    27: "t_wi_east",
    28: "t_wi_south",
    29: "t_wi_west",
    30: "t_wi_north",
    31: "t_dr_red",
    32: "t_dr_green",
    33: "t_dr_white",
    34: "t_se_spring",
    35: "t_se_summer",
    36: "t_se_fall",
    37: "t_se_winter",
    38: "t_fl_plum",
    39: "t_fl_orchid",
    40: "t_fl_bamboo",
    41: "t_fl_chrysanthemum",
}
_XLINK = "{http://www.w3.org/1999/xlink}href"
_NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_CMD = re.compile(r"[MmLlHhVvCcSsQqTtAaZz]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def art_faces(
    tile_art_dir: str | Path,
    width: int = TILE_WIDTH,
    *,
    sheet: str = "uni.svg",
    body: Colour = IVORY,
    back: Colour = BACK_GREEN,
) -> FaceSet:
    """A face set drawn from the public-domain sheet ``wikimedia-pd/<sheet>`` in
    ``tile_art_dir`` (``uni.svg`` in colour, ``unib.svg`` in black lines).

    Raises :class:`~controller.errors.ModelError` when the sheet is missing or unreadable, or
    a symbol in it cannot be drawn.
    """
    path = Path(tile_art_dir) / "wikimedia-pd" / sheet
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ModelError(f"cannot read the tile art {path}: {exc}") from None
    ids = {el.get("id"): el for el in root.iter() if el.get("id")}
    faces: dict[int, np.ndarray] = {}
    for label, sym in _ART_IDS.items():
        el = ids.get(sym)
        if el is None:
            raise ModelError(f"the tile art {path} has no symbol {sym!r} for {label_name(label)}")
        img = tile_body(width, body=body)
        h = img.shape[0]
        ss = 4  # supersampling
        canvas = cv2.resize(img, (width * ss, h * ss), interpolation=cv2.INTER_NEAREST)
        vb = _viewbox(el) or (0.0, 0.0, 74.7, 95.1)
        # the art's viewBox is the face; fit it inside the tile's border
        m = 0.06
        fw, fh = width * ss * (1 - 2 * m), h * ss * (1 - 2 * m)
        s = min(fw / vb[2], fh / vb[3])
        ox = width * ss * m + (fw - vb[2] * s) / 2 - vb[0] * s
        oy = h * ss * m + (fh - vb[3] * s) / 2 - vb[1] * s
        mat = np.array([[s, 0, ox], [0, s, oy], [0, 0, 1]], np.float64)
        try:
            for child in el:
                _draw_svg(canvas, child, mat, ids, depth=0)
        except (ValueError, IndexError, KeyError, cv2.error) as exc:
            # a hand-edited or truncated sheet: name the symbol rather than crash in the parser
            raise ModelError(
                f"the tile art {path}: symbol {sym!r} ({label_name(label)}) cannot be drawn: "
                f"{exc!r}"
            ) from None
        faces[label] = cv2.resize(canvas, (width, h), interpolation=cv2.INTER_AREA)
    faces[BACK] = back_face(width, colour=back, body=body)
    return FaceSet(f"art:{sheet}", faces)


def _tag(el: ET.Element) -> str:
    return el.tag.rsplit("}", 1)[-1]


def _viewbox(el: ET.Element) -> tuple[float, float, float, float] | None:
    vb = el.get("viewBox")
    if not vb:
        return None
    v = [float(t) for t in _NUM.findall(vb)]
    return (v[0], v[1], v[2], v[3]) if len(v) == 4 else None


def _parse_transform(text: str | None) -> np.ndarray:
    mat = np.eye(3)
    if not text:
        return mat
    for name, args in re.findall(r"(\w+)\s*\(([^)]*)\)", text):
        v = [float(t) for t in _NUM.findall(args)]
        m = np.eye(3)
        if name == "matrix" and len(v) == 6:
            m[:2] = [[v[0], v[2], v[4]], [v[1], v[3], v[5]]]
        elif name == "translate" and v:
            m[0, 2], m[1, 2] = v[0], v[1] if len(v) > 1 else 0.0
        elif name == "scale" and v:
            m[0, 0], m[1, 1] = v[0], v[1] if len(v) > 1 else v[0]
        elif name == "rotate" and v:
            a = math.radians(v[0])
            r = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
            if len(v) == 3:
                t1, t2 = np.eye(3), np.eye(3)
                t1[:2, 2], t2[:2, 2] = (v[1], v[2]), (-v[1], -v[2])
                r = t1 @ r @ t2
            m = r
        mat = mat @ m
    return mat


def _colour(text: str | None) -> Colour | None:
    if not text or text == "none":
        return None
    text = text.strip()
    if text.startswith("#"):
        hx = text[1:]
        if len(hx) == 3:
            hx = "".join(c * 2 for c in hx)
        r, g, b = int(hx[0:2], 16), int(hx[2:4], 16), int(hx[4:6], 16)
        return (b, g, r)
    if text.startswith("rgb(") and text.endswith(")"):
        parts = [p.strip() for p in text[4:-1].split(",")]
        if len(parts) == 3:
            values = [
                round(float(p[:-1]) * 255 / 100) if p.endswith("%") else round(float(p))
                for p in parts
            ]
            r, g, b = (min(255, max(0, v)) for v in values)
            return (b, g, r)
    bgr = _NAMED_COLOURS.get(text.lower())
    if bgr is None:
        # black for what cannot be read would draw a wrong face silently
        raise ValueError(f"a colour this reader does not know: {text!r}")
    return bgr


_NAMED_COLOURS: dict[str, Colour] = {
    # CSS's basic colours, as B, G, R
    "black": (0, 0, 0),
    "silver": (192, 192, 192),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "white": (255, 255, 255),
    "maroon": (0, 0, 128),
    "red": (0, 0, 255),
    "purple": (128, 0, 128),
    "fuchsia": (255, 0, 255),
    "green": (0, 128, 0),
    "lime": (0, 255, 0),
    "olive": (0, 128, 128),
    "yellow": (0, 255, 255),
    "navy": (128, 0, 0),
    "blue": (255, 0, 0),
    "teal": (128, 128, 0),
    "aqua": (255, 255, 0),
}


def _style(el: ET.Element, key: str, default: str | None) -> str | None:
    style = el.get("style") or ""
    for part in style.split(";"):
        if ":" in part:
            k, v = part.split(":", 1)
            if k.strip() == key:
                return v.strip()
    return el.get(key, default)


def _draw_svg(
    canvas: np.ndarray, el: ET.Element, mat: np.ndarray, ids: dict, depth: int, fill: str = "#000"
) -> None:
    if depth > 12:  # a reference loop in a broken file
        return
    tag = _tag(el)
    mat = mat @ _parse_transform(el.get("transform"))
    fill = _style(el, "fill", fill) or fill
    if tag == "path":
        polys = _path_polygons(el.get("d", ""))
        _fill(canvas, polys, mat, _colour(fill))
        stroke = _colour(_style(el, "stroke", None))
        if stroke is not None:
            _stroke(canvas, polys, mat, stroke, float(_style(el, "stroke-width", "1") or 1))
    elif tag == "rect":
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        w, h = float(el.get("width", 0)), float(el.get("height", 0))
        poly = [np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h], [x, y]])]
        _fill(canvas, poly, mat, _colour(fill))
        stroke = _colour(_style(el, "stroke", None))
        if stroke is not None:
            _stroke(canvas, poly, mat, stroke, float(_style(el, "stroke-width", "1") or 1))
    elif tag == "use":
        ref = (el.get(_XLINK) or el.get("href") or "").lstrip("#")
        target = ids.get(ref)
        if target is None:
            return
        t = np.eye(3)
        t[0, 2], t[1, 2] = float(el.get("x", 0)), float(el.get("y", 0))
        _draw_svg(canvas, target, mat @ t, ids, depth + 1, fill)
    elif tag in ("g", "svg"):
        for child in el:
            _draw_svg(canvas, child, mat, ids, depth + 1, fill)


def _fill(canvas: np.ndarray, polys: list[np.ndarray], mat: np.ndarray, c: Colour | None) -> None:
    if c is None or not polys:
        return
    pts = [_apply(mat, p) for p in polys if len(p) >= 3]
    if pts:
        # fillPoly with every sub-path at once gives the even-odd rule: holes stay open
        cv2.fillPoly(canvas, pts, c, cv2.LINE_AA, shift=4)


def _stroke(
    canvas: np.ndarray, polys: list[np.ndarray], mat: np.ndarray, c: Colour, width: float
) -> None:
    t = max(1, round(width * math.sqrt(abs(np.linalg.det(mat[:2, :2])))))
    cv2.polylines(canvas, [_apply(mat, p) for p in polys], False, c, t, cv2.LINE_AA, shift=4)


def _apply(mat: np.ndarray, pts: np.ndarray) -> np.ndarray:
    p = pts @ mat[:2, :2].T + mat[:2, 2]
    return np.round(p * 16).astype(np.int32)


def _path_polygons(d: str) -> list[np.ndarray]:
    """Flatten an SVG path's ``d`` into closed polylines (one per sub-path)."""
    tokens = _CMD.findall(d)
    polys: list[list[tuple[float, float]]] = []
    cur: list[tuple[float, float]] = []
    x = y = sx = sy = 0.0
    last_ctrl: tuple[float, float] | None = None
    last_cmd = ""
    i = 0
    cmd = ""

    def num() -> float:
        nonlocal i
        v = float(tokens[i])
        i += 1
        return v

    def has_num() -> bool:
        return i < len(tokens) and not tokens[i].isalpha()

    def flag() -> bool:
        # an arc's flags are one character each and may run into what follows ("00.5" is
        # the flags 0 and 0 and then .5, not the number 0.5)
        nonlocal i
        tok = tokens[i]
        if tok[0] not in "01":
            raise ValueError(f"an arc flag is 0 or 1, not {tok!r}")
        if len(tok) > 1:
            tokens[i] = tok[1:]
        else:
            i += 1
        return tok[0] == "1"

    while i < len(tokens):
        if tokens[i].isalpha():
            cmd = tokens[i]
            i += 1
        elif not cmd:
            i += 1
            continue
        rel = cmd.islower()
        c = cmd.upper()
        if c == "Z":
            if cur:
                polys.append(cur)
            cur = []
            x, y = sx, sy
            last_ctrl, last_cmd = None, "Z"
            if has_num():  # a closepath takes no numbers: skipping none would loop for ever
                raise ValueError(f"numbers after a closepath: {tokens[i]!r}")
            continue
        if not has_num():
            continue
        if c != "M" and not cur:
            cur = [(x, y)]  # a subpath drawn on after a closepath starts where that one did
        if c == "M":
            nx, ny = num(), num()
            if rel:
                nx, ny = x + nx, y + ny
            if cur:
                polys.append(cur)
            cur = [(nx, ny)]
            x, y, sx, sy = nx, ny, nx, ny
            cmd = "l" if rel else "L"  # further pairs are line-tos
            last_ctrl = None
        elif c in "LHV":
            if c == "L":
                nx, ny = num(), num()
                if rel:
                    nx, ny = x + nx, y + ny
            elif c == "H":
                nx, ny = num() + (x if rel else 0.0), y
            else:
                nx, ny = x, num() + (y if rel else 0.0)
            cur.append((nx, ny))
            x, y = nx, ny
            last_ctrl = None
        elif c in "CS":
            if c == "C":
                x1, y1 = num(), num()
                if rel:
                    x1, y1 = x + x1, y + y1
            else:
                x1, y1 = (2 * x - last_ctrl[0], 2 * y - last_ctrl[1]) if (
                    last_ctrl and last_cmd in "CS") else (x, y)  # fmt: skip
            x2, y2, nx, ny = num(), num(), num(), num()
            if rel:
                x2, y2, nx, ny = x + x2, y + y2, x + nx, y + ny
            cur.extend(_bezier([(x, y), (x1, y1), (x2, y2), (nx, ny)]))
            last_ctrl = (x2, y2)
            x, y = nx, ny
        elif c in "QT":
            if c == "Q":
                x1, y1 = num(), num()
                if rel:
                    x1, y1 = x + x1, y + y1
            else:
                x1, y1 = (2 * x - last_ctrl[0], 2 * y - last_ctrl[1]) if (
                    last_ctrl and last_cmd in "QT") else (x, y)  # fmt: skip
            nx, ny = num(), num()
            if rel:
                nx, ny = x + nx, y + ny
            cur.extend(_bezier([(x, y), (x1, y1), (nx, ny)]))
            last_ctrl = (x1, y1)
            x, y = nx, ny
        elif c == "A":
            rx, ry, rot = num(), num(), num()
            large, sweep = flag(), flag()
            nx, ny = num(), num()
            if rel:
                nx, ny = x + nx, y + ny
            cur.extend(_arc(x, y, rx, ry, rot, large, sweep, nx, ny))
            x, y = nx, ny
            last_ctrl = None
        last_cmd = c
    if cur:
        polys.append(cur)
    return [np.array(p, np.float64) for p in polys if len(p) >= 2]


def _bezier(ctrl: list[tuple[float, float]], steps: int = 10) -> list[tuple[float, float]]:
    p = np.array(ctrl, np.float64)
    t = np.linspace(0, 1, steps + 1)[1:, None]
    if len(p) == 3:
        pts = (1 - t) ** 2 * p[0] + 2 * (1 - t) * t * p[1] + t**2 * p[2]
    else:
        pts = (
            (1 - t) ** 3 * p[0]
            + 3 * (1 - t) ** 2 * t * p[1]
            + 3 * (1 - t) * t**2 * p[2]
            + t**3 * p[3]
        )
    return [(float(a), float(b)) for a, b in pts]


def _arc(
    x1: float, y1: float, rx: float, ry: float, rot: float, large: bool, sweep: bool,
    x2: float, y2: float,
) -> list[tuple[float, float]]:  # fmt: skip
    """Points along an SVG elliptical arc (endpoint parametrisation, SVG spec F.6.5)."""
    if rx == 0 or ry == 0:
        return [(x2, y2)]
    rx, ry = abs(rx), abs(ry)
    phi = math.radians(rot)
    cp, sp = math.cos(phi), math.sin(phi)
    dx, dy = (x1 - x2) / 2, (y1 - y2) / 2
    x1p, y1p = cp * dx + sp * dy, -sp * dx + cp * dy
    lam = x1p**2 / rx**2 + y1p**2 / ry**2
    if lam > 1:
        rx, ry = rx * math.sqrt(lam), ry * math.sqrt(lam)
    num = rx**2 * ry**2 - rx**2 * y1p**2 - ry**2 * x1p**2
    den = rx**2 * y1p**2 + ry**2 * x1p**2
    co = math.sqrt(max(0.0, num / den)) if den else 0.0
    if large == sweep:
        co = -co
    cxp, cyp = co * rx * y1p / ry, -co * ry * x1p / rx
    cx = cp * cxp - sp * cyp + (x1 + x2) / 2
    cy = sp * cxp + cp * cyp + (y1 + y2) / 2

    def ang(ux: float, uy: float, vx: float, vy: float) -> float:
        return math.atan2(ux * vy - uy * vx, ux * vx + uy * vy)

    t1 = ang(1, 0, (x1p - cxp) / rx, (y1p - cyp) / ry)
    dt = ang((x1p - cxp) / rx, (y1p - cyp) / ry, (-x1p - cxp) / rx, (-y1p - cyp) / ry)
    if not sweep and dt > 0:
        dt -= 2 * math.pi
    elif sweep and dt < 0:
        dt += 2 * math.pi
    n = max(2, int(abs(dt) / (math.pi / 12)))
    out = []
    for k in range(1, n + 1):
        t = t1 + dt * k / n
        ex, ey = rx * math.cos(t), ry * math.sin(t)
        out.append((cp * ex - sp * ey + cx, sp * ex + cp * ey + cy))
    return out


FaceSource = Callable[[], FaceSet]
