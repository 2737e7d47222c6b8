"""Pictures of whole tiles seen from straight above: body, border and face.

A :class:`FaceSet` gives, for every :mod:`vision.labels` label, a BGR ``uint8`` image of one
upright tile with width:height = 3:4. Two sources:

- :func:`procedural_faces` draws all 43 faces (42 tile faces and the back) with OpenCV
  primitives, in code only, so the product and the simulator have tile pictures on any machine.
- :func:`art_faces` builds a set from the public-domain art sheet in ``../shared/data/tile-art/``
  (``wikimedia-pd/uni.svg``), drawn by resvg (``resvg_py``, in the ``train`` extra, imported
  only when art is drawn). It is used for training only; no art is committed.
- :func:`riichi_art_faces` builds a third set from the public-domain riichi art of
  ``tile-art/fluffystuff-cc0/`` (34 kinds and a back, no flowers), drawn the same way. No
  model is trained on it: it is the set the benchmarks show the recogniser as a set it has
  never seen (``bench/unseen_set_bench.py``).

Both put the face on the same kind of tile body (ivory with a rounded border), whose colours can
be changed to imitate another set.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

    ``faces`` maps every label 0-42 to a BGR ``uint8`` image of shape ``(4k, 3k, 3)``; with
    ``complete=False`` some labels may lack a face (a set printed without flowers), which
    :meth:`face` then refuses, but the back must be there (the renderer draws a tile's depth
    in its colour).
    """

    name: str
    faces: dict[int, np.ndarray] = field(repr=False)
    complete: bool = True

    def __post_init__(self) -> None:
        wanted = range(NUM_LABELS) if self.complete else (BACK,)
        missing = [label_name(i) for i in wanted if i not in self.faces]
        if missing:
            raise ModelError(f"face set {self.name!r} lacks faces for {', '.join(missing)}")
        for img in self.faces.values():
            img.setflags(write=False)

    @property
    def labels(self) -> tuple[int, ...]:
        """The labels this set has a face for, in order."""
        return tuple(sorted(self.faces))

    def face(self, label: int) -> np.ndarray:
        """The tile image for ``label`` (read-only; copy it to draw on it)."""
        try:
            return self.faces[int(label)]
        except (KeyError, ValueError, TypeError):
            if isinstance(label, int | np.integer) and 0 <= label < NUM_LABELS:
                raise ModelError(
                    f"face set {self.name!r} has no face for {label_name(int(label))}"
                ) from None
            raise ModelError(f"{label!r} is not a tile label (0-{NUM_LABELS - 1})") from None

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the face images."""
        h, w = self.faces[BACK].shape[:2]
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
    lighter = _lift(body, 1.04, 6)
    _rounded_rect(img, inset, inset, width - 1 - inset, h - 1 - inset, r, lighter)
    edge = border if border is not None else _scale(body, 0.72)
    _rounded_outline(img, 0, 0, width - 1, h - 1, r, edge, max(1, width // 48))
    return img


def _scale(c: Colour, f: float) -> Colour:
    return tuple(int(min(255, max(0, v * f))) for v in c)  # type: ignore[return-value]


def _lift(c: Colour, factor: float, plus: int) -> Colour:
    """A colour lighter by ``factor`` and ``plus``, kept within 255."""
    return (
        min(255, int(c[0] * factor + plus)),
        min(255, int(c[1] * factor + plus)),
        min(255, int(c[2] * factor + plus)),
    )


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
    hi = _lift(colour, 1.12, 8)
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
                corners = cv2.boxPoints(((x + cx * w, y + cy * h), (sw, sh * 1.2), lean * 25))
                cv2.fillPoly(img, [np.round(corners).astype(np.int32)], _GREEN, cv2.LINE_AA)
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
# Art faces: the public-domain sheet, drawn by resvg (the train extra's resvg-py)

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
_SVG = "{http://www.w3.org/2000/svg}"
_XLINK = "{http://www.w3.org/1999/xlink}href"
_ART_VIEWBOX = (0.0, 0.0, 74.7, 95.1)
"""The face a tile's art fills, where its element gives no viewBox of its own."""
_ART_MARGIN = 0.06
"""Part of the tile's width and height left between the art and each edge (the border)."""


def _resvg() -> Any:
    """The ``resvg_py`` module (the train extra's), imported only when art is drawn;
    :class:`~controller.errors.ModelError` saying how to install it where it is missing."""
    try:
        import resvg_py
    except ImportError:
        raise ModelError("drawing the tile art needs resvg-py: pip install -e '.[train]'") from None
    return resvg_py


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

    Each tile's element of the sheet is drawn by resvg (``resvg_py``, of the train extra) into
    the face inside the tile's border, and laid on :func:`tile_body`.

    Raises :class:`~controller.errors.ModelError` when ``resvg_py`` is not installed, the sheet
    is missing or unreadable, or a tile's element in it is missing or draws nothing.
    """
    resvg_py = _resvg()
    path = Path(tile_art_dir) / "wikimedia-pd" / sheet
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ModelError(f"cannot read the tile art {path}: {exc}") from None
    ids = {el.get("id"): el for el in root.iter() if el.get("id")}
    # one document per tile: the whole sheet as definitions (nothing of its own layout drawn)
    # and a <use> of the tile's element, fitted into the face inside the tile's border
    defs = ET.Element(f"{_SVG}defs")
    defs.extend(list(root))
    h = round(width * 4 / 3)
    m = _ART_MARGIN
    faces: dict[int, np.ndarray] = {}
    for label, sym in _ART_IDS.items():
        el = ids.get(sym)
        if el is None:
            raise ModelError(f"the tile art {path} has no symbol {sym!r} for {label_name(label)}")
        vb = _viewbox(el)
        doc = ET.Element(
            f"{_SVG}svg", {"width": str(width), "height": str(h), "viewBox": f"0 0 {width} {h}"}
        )
        doc.append(defs)
        # the art's viewBox met and centred in the face (preserveAspectRatio's default)
        face = ET.SubElement(
            doc,
            f"{_SVG}svg",
            {
                "x": repr(width * m),
                "y": repr(h * m),
                "width": repr(width * (1 - 2 * m)),
                "height": repr(h * (1 - 2 * m)),
                "viewBox": " ".join(map(repr, vb or _ART_VIEWBOX)),
            },
        )
        use = {_XLINK: f"#{sym}"}
        if vb:  # an <svg> or <symbol>: its viewport is the whole face
            use.update(x=repr(vb[0]), y=repr(vb[1]), width=repr(vb[2]), height=repr(vb[3]))
        ET.SubElement(face, f"{_SVG}use", use)
        try:
            png = resvg_py.svg_to_bytes(
                svg_string=ET.tostring(doc, encoding="unicode"), skip_system_fonts=True
            )
        except ValueError as exc:
            raise ModelError(
                f"the tile art {path}: symbol {sym!r} ({label_name(label)}) cannot be drawn: {exc}"
            ) from None
        rgba = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_UNCHANGED)
        if rgba is None or rgba.shape != (h, width, 4) or not rgba[..., 3].any():
            # a reference to nothing, or art outside its viewBox: no face rather than a blank one
            raise ModelError(
                f"the tile art {path}: symbol {sym!r} ({label_name(label)}) draws nothing"
            )
        alpha = rgba[..., 3:].astype(np.float32) / 255  # resvg's PNG: BGRA once decoded, straight
        tile = tile_body(width, body=body).astype(np.float32)
        faces[label] = np.round(rgba[..., :3] * alpha + tile * (1 - alpha)).astype(np.uint8)
    faces[BACK] = back_face(width, colour=back, body=body)
    return FaceSet(f"art:{sheet}", faces)


RIICHI_ART = "fluffystuff-cc0"
"""The folder of ``tile-art`` holding the riichi set, one SVG a face."""
_RIICHI_FILES: dict[int, str] = {
    **{i: f"Man{i + 1}" for i in range(9)},
    **{9 + i: f"Pin{i + 1}" for i in range(9)},
    **{18 + i: f"Sou{i + 1}" for i in range(9)},
    27: "Ton",
    28: "Nan",
    29: "Shaa",
    30: "Pei",
    31: "Chun",
    32: "Hatsu",
    33: "Haku",  # the white dragon: a blank face in this set, drawn over the front alone
    BACK: "Back",
}


def riichi_art_faces(tile_art_dir: str | Path, width: int = TILE_WIDTH) -> FaceSet:
    """A face set of the 34 playing kinds and the back from the public-domain riichi art in
    ``tile_art_dir/fluffystuff-cc0`` (``Man1.svg`` … ``Back.svg``), each face drawn by resvg
    over the set's own empty ``Front.svg``. The set prints no flowers, so it is not
    :attr:`~FaceSet.complete`. Its red fives (``*-Dora.svg``) are not used.

    Raises :class:`~controller.errors.ModelError` when ``resvg_py`` is not installed or a
    file is missing, unreadable or draws nothing."""
    resvg_py = _resvg()
    h = round(width * 4 / 3)
    folder = Path(tile_art_dir) / RIICHI_ART

    def draw(name: str, blank: bool = False) -> np.ndarray:
        """The art of ``name``; ModelError where it draws nothing, unless ``blank``."""
        path = folder / f"{name}.svg"
        try:
            svg = path.read_text(encoding="utf-8")
            png = resvg_py.svg_to_bytes(
                svg_string=svg, width=width, height=h, skip_system_fonts=True
            )
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ModelError(f"cannot draw the tile art {path}: {exc}") from None
        rgba = cv2.imdecode(np.frombuffer(bytes(png), np.uint8), cv2.IMREAD_UNCHANGED)
        if rgba is None or rgba.ndim != 3 or rgba.shape[2] != 4:
            raise ModelError(f"the tile art {path} draws no picture")
        if rgba.shape[:2] != (h, width):  # art of another shape than 3:4, fitted to the tile
            rgba = cv2.resize(rgba, (width, h), interpolation=cv2.INTER_AREA)
        if not blank and not rgba[..., 3].any():
            raise ModelError(f"the tile art {path} draws nothing")
        return rgba

    def over(top: np.ndarray, under: np.ndarray) -> np.ndarray:
        alpha = top[..., 3:].astype(np.float32) / 255  # straight alpha, as resvg writes it
        return top[..., :3] * alpha + under.astype(np.float32) * (1 - alpha)

    front = over(draw("Front"), tile_body(width))
    faces: dict[int, np.ndarray] = {}
    for label, name in _RIICHI_FILES.items():
        art = draw(name, blank=name == "Haku")
        under = tile_body(width) if label == BACK else front
        faces[label] = np.round(over(art, under)).astype(np.uint8)
    return FaceSet(f"art:{RIICHI_ART}", faces, complete=False)


def _viewbox(el: ET.Element) -> tuple[float, float, float, float] | None:
    try:
        v = [float(t) for t in (el.get("viewBox") or "").replace(",", " ").split()]
    except ValueError:
        return None
    return (v[0], v[1], v[2], v[3]) if len(v) == 4 and v[2] > 0 and v[3] > 0 else None


FaceSource = Callable[[], FaceSet]
