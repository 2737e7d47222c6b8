"""The vision vocabulary: the 42 tile faces and the back of a tile.

Labels 0-41 are the values of :class:`controller.rules.tiles.Tile` (the 34 playing kinds, then
the eight flowers 春夏秋冬梅兰竹菊); label :data:`BACK` (42) is a tile lying face down, as the
outer tiles of a concealed kong do. A model's output index is the label.

>>> label_name(4), label_name(27), label_name(34), label_name(BACK)
('5m', 'E', '1f', 'back')
"""

from __future__ import annotations

import numbers

from controller.errors import ModelError
from controller.rules.tiles import NUM_FACES, Tile

BACK = 42
"""A face-down tile (its back is seen)."""
NUM_LABELS = 43
"""Faces plus the back: the number of classes a tile classifier tells apart."""
FLOWER_LABELS: tuple[int, ...] = tuple(range(34, NUM_FACES))
"""The eight flower labels (春 1f … 菊 8f)."""

assert NUM_FACES == BACK  # the back follows the faces


def label_name(label: int) -> str:
    """The short name of a label: the tile's code (``5m``, ``E``, ``1f``) or ``back``."""
    # any integer (numpy's from an argmax too), never a bool or a float such as 42.0
    if isinstance(label, bool) or not isinstance(label, numbers.Integral):
        raise ModelError(f"{label!r} is not a tile label (0-{NUM_LABELS - 1})")
    if not 0 <= label < NUM_LABELS:
        raise ModelError(f"{label!r} is not a tile label (0-{NUM_LABELS - 1})")
    if label == BACK:
        return "back"
    return Tile(int(label)).code


def label_from_name(name: str) -> int:
    """The label named ``name`` (any tile name :func:`~controller.rules.tiles.tile_from_code`
    reads, or ``back``)."""
    from controller.rules.errors import HandError
    from controller.rules.tiles import tile_from_code

    if name.strip().lower() == "back":
        return BACK
    try:
        return int(tile_from_code(name.strip()))
    except HandError as exc:
        raise ModelError(f"{name!r} is not a tile label: {exc.message}") from None


def is_tile(label: int) -> bool:
    """True for a face (0-41), False for the back."""
    return 0 <= label < BACK


LABEL_NAMES: tuple[str, ...] = tuple(label_name(i) for i in range(NUM_LABELS))
"""``LABEL_NAMES[label]`` is :func:`label_name` of it."""
