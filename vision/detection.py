"""One tile found in an image: where it lies, what it is, and how sure the recogniser is."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vision.labels import BACK, label_name

Box = tuple[float, float, float, float]
"""``(x, y, w, h)``: the axis-aligned box in image pixels, ``(x, y)`` its top-left corner."""


@dataclass(frozen=True)
class TileDetection:
    """A tile the recogniser found.

    ``label`` is a :mod:`vision.labels` label (a :class:`~controller.rules.tiles.Tile` value
    or :data:`~vision.labels.BACK`); ``confidence`` the classifier's probability of it (0-1);
    ``box`` the axis-aligned box ``(x, y, w, h)`` and ``quad`` the tile's outline (4x2 float
    array, corners in turn from the tile's own top-left where the source knows which way up
    the tile lies, as the renderer does; the recogniser cannot tell a tile's top from its
    bottom, so its outlines run clockwise from the corner nearest the picture's top-left),
    both in image pixels; ``sideways``
    says the tile's long axis lies horizontal in the image (a claimed tile in a meld).
    ``needs_confirmation`` is set when the confidence is under the recogniser's threshold: the
    label is then only a best guess for the players to confirm. ``alternatives`` are the
    runner-up labels with their probabilities, best first. ``finder_score`` is how sure the
    tile finder was that a tile is there at all.
    """

    label: int
    confidence: float
    box: Box
    quad: np.ndarray = field(compare=False, repr=False)
    sideways: bool = False
    needs_confirmation: bool = False
    alternatives: tuple[tuple[int, float], ...] = ()
    finder_score: float = 1.0

    def __post_init__(self) -> None:
        quad = np.asarray(self.quad, dtype=np.float32).reshape(4, 2)
        quad.setflags(write=False)
        object.__setattr__(self, "quad", quad)
        object.__setattr__(self, "box", tuple(float(v) for v in self.box))

    @property
    def name(self) -> str:
        """The label's short name (``5m``, ``E``, ``1f``, ``back``)."""
        return label_name(self.label)

    @property
    def face_down(self) -> bool:
        return self.label == BACK

    @property
    def centre(self) -> tuple[float, float]:
        """The centre of the outline, in image pixels."""
        # four corners summed by hand: numpy's mean costs more than the sum for four points,
        # and the recogniser asks for every tile's centre to sort a frame's tiles
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = self.quad.tolist()
        return (x0 + x1 + x2 + x3) / 4.0, (y0 + y1 + y2 + y3) / 4.0

    @property
    def angle(self) -> float:
        """Direction of the tile's long axis, degrees in [0, 180) (90 = upright in the image):
        along the outline's longer pair of sides, whichever corner the outline starts at."""
        q = self.quad
        across = (q[1] - q[0] + q[2] - q[3]) / 2.0  # the first side and the one facing it
        down = (q[3] - q[0] + q[2] - q[1]) / 2.0  # the other two
        dx, dy = down if math.hypot(*down) >= math.hypot(*across) else across
        return math.degrees(math.atan2(float(dy), float(dx))) % 180.0

    def iou(self, box: Box) -> float:
        """Intersection over union of this detection's box with another ``(x, y, w, h)``."""
        return box_iou(self.box, box)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the ``detect --json`` record of one tile)."""
        return {
            "label": self.name,
            "index": int(self.label),
            "confidence": round(float(self.confidence), 4),
            "box": [round(v, 1) for v in self.box],
            "quad": [[round(float(x), 1), round(float(y), 1)] for x, y in self.quad],
            "sideways": bool(self.sideways),
            "needs_confirmation": bool(self.needs_confirmation),
            "alternatives": [
                {"label": label_name(lab), "confidence": round(float(p), 4)}
                for lab, p in self.alternatives
            ],
            "finder_score": round(float(self.finder_score), 4),
        }


def reading_order(
    items: list[Any], v: Callable[[Any], float], u: Callable[[Any], float], gap: float
) -> list[Any]:
    """Row by row along ``v``, each row in order of ``u``: a row is the items whose ``v`` lies
    within ``gap`` of its first one's, so a row is never split by where it falls on a fixed
    grid."""
    rows: list[list[Any]] = []
    for item in sorted(items, key=v):
        if rows and v(item) - v(rows[-1][0]) <= gap:
            rows[-1].append(item)
        else:
            rows.append([item])
    return [item for row in rows for item in sorted(row, key=u)]


def is_box(box: Any) -> bool:
    """Whether ``box`` is a usable ``(x, y, w, h)``: four finite numbers, of some size."""
    return len(box) == 4 and all(math.isfinite(v) for v in box) and box[2] > 0 and box[3] > 0


def scale_box(box: Box, factor: float) -> Box:
    """``box`` with its sides scaled by ``factor`` about its centre."""
    if factor == 1.0:
        return box
    x, y, w, h = box
    return (x + w * (1 - factor) / 2, y + h * (1 - factor) / 2, w * factor, h * factor)


def box_iou(a: Box, b: Box) -> float:
    """Intersection over union of two ``(x, y, w, h)`` boxes (0 when either is empty)."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    iw = min(ax + aw, bx + bw) - max(ax, bx)
    ih = min(ay + ah, by + bh) - max(ay, by)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = aw * ah + bw * bh - inter
    return float(inter / union) if union > 0 else 0.0


def box_intersections(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection areas of every box of ``a`` (N x 4, x y w h) with every box of ``b``
    (M x 4), as an N x M array: the all-pairs form of :func:`box_iou`'s overlap."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    iw = np.minimum(a[:, 0, None] + a[:, 2, None], b[:, 0] + b[:, 2]) - np.maximum(
        a[:, 0, None], b[:, 0]
    )
    ih = np.minimum(a[:, 1, None] + a[:, 3, None], b[:, 1] + b[:, 3]) - np.maximum(
        a[:, 1, None], b[:, 1]
    )
    return np.clip(iw, 0, None) * np.clip(ih, 0, None)


def box_of_quad(quad: np.ndarray) -> Box:
    """The axis-aligned box ``(x, y, w, h)`` enclosing an outline."""
    q = np.asarray(quad, dtype=np.float64).reshape(-1, 2)
    x0, y0 = q.min(axis=0)
    x1, y1 = q.max(axis=0)
    return float(x0), float(y0), float(x1 - x0), float(y1 - y0)
