"""Synthetic training scenes: random tile layouts rendered through :mod:`vision.rendering.render`.

Scenes imitate what the recogniser must read: rows of touching tiles (hands laid open, melds
with a sideways claimed tile, concealed kongs with face-down ends), each seat's row around a
table facing its player, grids (an enrolment layout), scattered tiles; seen from above or at an
angle, on felt or wood, with uneven light, glare, blur, noise and JPEG. Flowers and backs are
drawn more often than in play, because the real photos have few.

Every function takes a ``numpy.random.Generator``: the same seed gives the same scene.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vision.labels import BACK, FLOWER_LABELS, NUM_LABELS
from vision.rendering.faces import (
    BACK_BLUE,
    BACK_GREEN,
    BACK_YELLOW,
    IVORY,
    FaceSet,
    procedural_faces,
)
from vision.rendering.render import Camera, PlacedTile, Rendered, render_scene

BODIES = (IVORY, (225, 240, 245), (200, 225, 235), (235, 235, 235), (190, 215, 230))
BACKS = (BACK_GREEN, BACK_BLUE, BACK_YELLOW, (60, 60, 160), (40, 110, 40), (150, 150, 150))


def procedural_variants(width: int = 96) -> list[FaceSet]:
    """The procedural faces on several tile bodies and backs (other sets' colours)."""
    return [
        procedural_faces(width, body=body, back=back, name=f"procedural-{i}")
        for i, (body, back) in enumerate(zip(BODIES, BACKS[: len(BODIES)], strict=True))
    ]


def random_label(rng: np.random.Generator, flower_p: float = 0.2, back_p: float = 0.08) -> int:
    """A label, flowers and backs over-drawn (``flower_p``, ``back_p``) against their share."""
    r = rng.random()
    if r < flower_p:
        return int(rng.choice(FLOWER_LABELS))
    if r < flower_p + back_p:
        return BACK
    return int(rng.integers(34))


def _row(
    rng: np.random.Generator,
    start: tuple[float, float],
    direction: float,
    count: int,
    width: float,
    *,
    meldish: bool,
) -> list[PlacedTile]:
    """A row of touching tiles starting at ``start``, running along ``direction`` (degrees,
    0 = +x), each facing the player on the row's near side. With ``meldish`` some tiles lie
    sideways (claimed tiles) and some groups end in backs (concealed kongs)."""
    a = math.radians(direction)
    ux, uy = math.cos(a), math.sin(a)
    face_angle = direction  # the tile's up points away from its player
    if rng.random() < 0.15:
        face_angle += 180  # some tiles are read upside down (a row seen from the far side)
    gap = width * rng.uniform(0.0, 0.08)
    pos = 0.0
    tiles = []
    group_left = 0
    group_kind = "plain"
    for _ in range(count):
        if meldish and group_left == 0:
            group_left = int(rng.integers(3, 5))
            group_kind = rng.choice(["claimed", "concealed", "plain"], p=[0.45, 0.15, 0.4])
            sideways_at = int(rng.integers(group_left)) if group_kind == "claimed" else -1
            group_i = 0
            pos += width * rng.uniform(0.1, 0.5)
        label = random_label(rng)
        sideways = meldish and group_kind == "claimed" and group_i == sideways_at
        if meldish and group_kind == "concealed" and group_i in (0, 3):
            label = BACK
        length = width * 4 / 3 if sideways else width
        pos += length / 2
        # a sideways tile lies along the row, flush with the row's near edge
        offset = (width * 4 / 3 - width) / 2 if sideways else 0.0
        cx = start[0] + ux * pos - uy * offset
        cy = start[1] + uy * pos + ux * offset
        angle = face_angle + (90.0 if sideways else 0.0) + rng.normal(0, 1.5)
        tiles.append(PlacedTile(label, (cx, cy), angle, width * rng.uniform(0.98, 1.02)))
        pos += length / 2 + gap * rng.random()
        if meldish:
            group_left -= 1
            group_i += 1
    return tiles


def _non_overlapping(tiles: list[PlacedTile], placed: list[PlacedTile]) -> bool:
    for t in tiles:
        for p in placed:
            d = math.hypot(t.centre[0] - p.centre[0], t.centre[1] - p.centre[1])
            if d < (t.width + p.width) * 0.6:
                return False
    return True


def random_layout(
    rng: np.random.Generator, plane_size: tuple[int, int], width: float
) -> list[PlacedTile]:
    """Tiles of about ``width`` plane pixels laid out as a random mix of rows, a grid or loose
    tiles, filling part of a plane of ``plane_size``."""
    pw, ph = plane_size
    kind = rng.choice(["rows", "table", "grid", "loose"], p=[0.45, 0.2, 0.15, 0.2])
    placed: list[PlacedTile] = []
    if kind == "grid":
        cols = int(rng.integers(4, 10))
        rows = int(rng.integers(2, 6))
        gap = width * rng.uniform(0.0, 0.3)
        x0 = rng.uniform(0, max(1.0, pw - cols * (width + gap)))
        y0 = rng.uniform(0, max(1.0, ph - rows * (width * 4 / 3 + gap)))
        for r in range(rows):
            for c in range(cols):
                cx = x0 + c * (width + gap) + width / 2
                cy = y0 + r * (width * 4 / 3 + gap) + width * 2 / 3
                placed.append(PlacedTile(random_label(rng), (cx, cy), rng.normal(0, 2), width))
        return placed
    if kind == "table":
        # each seat's row along its edge of the table, tiles facing that seat
        for seat, direction in enumerate((0.0, 270.0, 180.0, 90.0)):
            if rng.random() < 0.2:
                continue
            n = int(rng.integers(3, 12))
            margin = width * rng.uniform(0.8, 2.5)
            if seat == 0:
                start = (rng.uniform(0.1, 0.4) * pw, ph - margin)
            elif seat == 1:
                start = (pw - margin, ph - rng.uniform(0.1, 0.4) * ph)
            elif seat == 2:
                start = (pw - rng.uniform(0.1, 0.4) * pw, margin)
            else:
                start = (margin, rng.uniform(0.1, 0.4) * ph)
            row = _row(rng, start, direction, n, width, meldish=True)
            # two seats' rows can meet at a corner: a tile drawn over another would leave a
            # label on a tile that cannot be seen
            others = list(placed)
            placed.extend(
                t
                for t in row
                if -width < t.centre[0] < pw + width and _non_overlapping([t], others)
            )
        return placed
    attempts = int(rng.integers(2, 7)) if kind == "rows" else int(rng.integers(6, 30))
    for _ in range(attempts * 3):
        if attempts == 0:
            break
        if kind == "rows":
            n = int(rng.integers(2, 14))
            direction = float(rng.choice([0, 90, 180, 270]) + rng.normal(0, 4))
            if rng.random() < 0.2:
                direction = float(rng.uniform(0, 360))
            start = (rng.uniform(0, pw), rng.uniform(0, ph))
            cand = _row(rng, start, direction, n, width, meldish=rng.random() < 0.6)
        else:
            cand = [
                PlacedTile(
                    random_label(rng),
                    (rng.uniform(0, pw), rng.uniform(0, ph)),
                    float(rng.uniform(0, 360)),
                    width * rng.uniform(0.9, 1.1),
                )
            ]
        if _non_overlapping(cand, placed):
            placed.extend(cand)
            attempts -= 1
    return placed


def _bgr(values: np.ndarray) -> tuple[float, float, float]:
    b, g, r = (float(v) for v in values)
    return b, g, r


def random_camera(
    rng: np.random.Generator, plane_size: tuple[int, int], size: tuple[int, int]
) -> Camera:
    """A camera with a random view (straight down to 40 degrees tilted, any turn) and random
    picture faults."""
    return Camera.looking_at(
        plane_size,
        size,
        tilt=float(rng.choice([0.0, rng.uniform(0, 25), rng.uniform(15, 40)])),
        turn=float(rng.choice([0.0, 90.0, 180.0, 270.0, rng.uniform(0, 360)])),
        zoom=float(rng.uniform(0.95, 1.3)),
        shift=(float(rng.normal(0, 0.05)), float(rng.normal(0, 0.05))),
        brightness=float(rng.uniform(0.6, 1.25)),
        gradient=float(rng.uniform(0, 0.8)),
        glare=float(rng.choice([0.0, rng.uniform(0.05, 0.4)])),
        blur=float(rng.choice([0.0, rng.uniform(0.3, 1.5)])),
        noise=float(rng.uniform(0, 8)),
        colour=_bgr(rng.uniform(0.85, 1.15, 3)),
        jpeg=int(rng.choice([0, int(rng.integers(40, 95))])),
    )


def random_scene(
    rng: np.random.Generator,
    face_sets: Sequence[FaceSet],
    size: tuple[int, int] = (320, 320),
    tile_width: tuple[float, float] = (14.0, 70.0),
) -> Rendered:
    """A random scene of ``size`` pixels whose tiles are about ``tile_width`` pixels wide in
    the picture, drawn with one of ``face_sets``."""
    faces = face_sets[int(rng.integers(len(face_sets)))]
    lo, hi = tile_width
    width_img = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    # the plane is drawn at about twice the picture's resolution, so faces stay sharp
    scale = 1.0 / float(rng.uniform(0.45, 0.75))
    plane_size = (int(size[0] * scale), int(size[1] * scale))
    width = width_img * scale
    tiles = random_layout(rng, plane_size, width)
    camera = random_camera(rng, plane_size, size)
    return render_scene(
        tiles,
        faces,
        plane_size=plane_size,
        rng=rng,
        camera=camera,
        thickness=float(rng.uniform(0.0, 0.35)),
        light=(float(rng.normal(0.2, 0.3)), float(rng.normal(0.4, 0.3))),
    )


def label_counts(scenes: Sequence[Rendered]) -> np.ndarray:
    """How many tiles of each label the scenes hold (for checking the class balance)."""
    counts = np.zeros(NUM_LABELS, np.int64)
    for s in scenes:
        for t in s.tiles:
            counts[t.label] += 1
    return counts


def table_frame(
    rng: np.random.Generator,
    face_sets: Sequence[FaceSet],
    frame_size: tuple[int, int] = (1280, 960),
):
    """A whole table as the overhead camera sees it (seats' melds, flowers, laid-open hands,
    discards, walls; :mod:`vision.rendering.table_scene`), with a random camera and faults. Returns
    the :class:`~vision.rendering.table_scene.TableFrame`."""
    from vision.rendering.table_scene import TableScene
    from vision.rendering.table_scene import random_layout as random_table

    faces = face_sets[int(rng.integers(len(face_sets)))]
    felt_colour = FELT_CHOICES[int(rng.integers(len(FELT_CHOICES)))]
    scene = TableScene(faces=faces, seed=int(rng.integers(1 << 30)), felt_colour=felt_colour)
    layout = random_table(rng, discards=int(rng.integers(0, 24)), walls=bool(rng.random() < 0.5))
    camera = scene.camera(
        frame_size,
        tilt=float(rng.uniform(0, 15)),
        turn=float(rng.choice([0.0, 90.0, 180.0, 270.0]) + rng.normal(0, 3)),
        zoom=float(rng.uniform(0.8, 1.0)),
        brightness=float(rng.uniform(0.7, 1.2)),
        gradient=float(rng.uniform(0, 0.6)),
        glare=float(rng.choice([0.0, rng.uniform(0.05, 0.3)])),
        blur=float(rng.choice([0.0, rng.uniform(0.3, 1.2)])),
        noise=float(rng.uniform(0, 6)),
    )
    return scene.render(layout, camera, rng=rng)


FELT_CHOICES = ((135, 95, 35), (60, 120, 30), (40, 100, 20), (50, 50, 140), (70, 70, 70))
