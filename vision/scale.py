"""How large the tiles in a picture are, so that the finder sees them at a size it knows.

The finder learnt tiles about 12-80 pixels wide at its input. Read at the usual 640 pixels, a
close-up whose tiles fill the frame shows them 200-500 pixels wide there, and the finder
takes each tile's pips, strokes or bamboo sticks for tiles of their own. A cheap *coarse*
look (the picture at 128 pixels, about a twenty-fifth of the usual pass's work) sees those
same tiles in its range. The picture is taken for a close-up, and read again shrunk so its
tiles are ``rescale_to`` wide, only where coarse tiles too large for the usual pass hold most
of what the usual pass found, as pieces of themselves (well under their size), and the
classifier reads each of them as one tile. A coarse "tile" is as often a clump of small
tiles, a bare stretch of a rack or nine tiles at once: taking for a close-up every picture
with a coarse tile that scored about as high as what the usual pass found in it and read as a
face shrank 25 of the 207 held-out photos, most of them read well as they were, and their F1
fell from 0.790 to 0.782. A table frame's tiles are 1-4 pixels at the coarse size; what the
coarse look takes for a tile there holds a few of the frame's tiles at most.

Pixel noise is the other way round: finer than any tile, it is smoothed away before the
finder sees it when it is stronger than in any picture it learnt from (a picture of random
noise otherwise reads as 80-570 tiles).

Everything here is plain numpy and OpenCV on the finder's outputs; :class:`vision.recognizer.
TileRecognizer` runs the passes and calls these to decide.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from vision.detection import Box

Find = tuple[Box, float, float, float]
"""One of the finder's tiles: ``(box, score, angle, face_down)`` (see
:func:`vision.recognizer.decode_finder`)."""

COARSE_SHARE = 5
"""The coarse look is the usual finder input over this (128 pixels for 640): a tile filling
a 640x480 frame's height is then about 70 pixels wide, inside the finder's range."""
COARSE_MIN = 64
"""The smallest coarse look (two cells of the finder's 32-pixel padding)."""
CLOSE_UP_ABOVE = 120.0
"""A coarse tile narrower than this at the usual input (its pixels) is left to the usual pass
and its own second look (``rescale_above``), which read such tiles as well on the validation
photos; wider, the usual pass took pips for tiles in rendered close-ups."""
CLOSE_UP_SCORE = 0.4
"""The finder score a coarse tile needs to count at all: rendered close-ups' tiles score
0.49-0.9 at the coarse look, the held-out photos' closest ones 0.4-0.6."""
PIECES = 1.5
"""How many times wider than the usual pass's finds inside it (their median) a coarse tile
must be for those to be its pieces: a close-up's pips are a third of its tiles or less (two
tiles 240 pixels wide: 1.9), while where the usual pass saw the tiles whole the coarse ones
are about as wide (1.0-1.5 on most held-out photos), and its own second look reads them."""
CLOSE_UP_COVER = 0.5
"""The share of the usual pass's finds that a close-up's tiles must hold: a close-up's tiles
fill the frame, so nearly everything it found is their pips (one tile of three missed by the
coarse look still leaves two thirds); in 21 of the 25 held-out photos that coarse tiles
alone would have shrunk, they held under 0.4."""
BACK_LEAD = 0.25
"""How far a face-down coarse tile's score must lead the median of the usual pass's tiles
inside it: a back has no pips, so what the usual pass finds on one is grain it is unsure of
(rendered backs lead by 0.35 or more), while a pale stretch of a real photo the coarse look
took for a back holds real tiles scored as high as it (-0.05 and 0.12)."""
CLOSE_UP_READ = 0.7
"""The classifier's best probability (a face or a back) a coarse tile needs: rendered
close-ups' tiles read 0.86 or more whole, the held-out photos' close-ups 0.89 or more; nine
tiles the coarse look took for one, 0.53."""
SMALLEST_INPUT = 96
"""The finder input a close-up is never shrunk below: one tile filling a 640x480 frame's
height is about 50 pixels wide there."""

NOISE_LIMIT = 12.0
"""Pixel noise (standard deviation, grey levels, see :func:`noise_level`) above which the
finder's input is smoothed: rendered felt, which the finder learnt on, measures up to 12 at
its 640 pixels, the held-out photos 1.3 and simulated table frames 3; the finder began to
read noise as tiles from 12-20 (felt with noise added, grey noise), uniform noise is 50-90."""
NOISE_BLUR = 0.75
"""The smoothing's Gaussian sigma, in pixels, per :data:`NOISE_LIMIT` of noise."""

# Immerkaer's kernel, [1, -2, 1] across and down: the difference of two Laplacians, blind to
# flat areas, ramps and plain edges' first order, so what it answers to is mostly noise; the
# L2 norm of its taps is 6
_MAD_TO_SIGMA = 1.0 / (0.6745 * 6.0)


def coarse_input(input_size: int) -> int:
    """The finder input (longer side, pixels) of the coarse look for a usual ``input_size``: a
    fifth of it, in whole 32s, at least :data:`COARSE_MIN`."""
    return max(COARSE_MIN, input_size // COARSE_SHARE // 32 * 32)


def halved(picture: np.ndarray, size: int) -> np.ndarray:
    """``picture`` halved, averaging each 2x2 block, while its longer side is at least twice
    ``size``: the coarse look's start. OpenCV's area averaging, which the finder's inputs are
    shrunk by, takes 1.3 ms from 1280x960 to 128x96 in one step, but has a fast path for
    exact halves: three of them and a last small step take about 0.7 ms."""
    while max(picture.shape[:2]) >= 2 * size and min(picture.shape[:2]) >= 32:
        h, w = picture.shape[:2]
        # an odd last row or column would take the slow path: it is dropped
        even = picture[: h // 2 * 2, : w // 2 * 2]
        picture = cv2.resize(even, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    return picture


def noise_level(picture: np.ndarray) -> float:
    """The standard deviation of a picture's pixel noise, in grey levels (0-255), robustly: the
    median response to Immerkaer's kernel, which tile outlines and pips barely move, where a
    mean would count them as noise."""
    grey = picture if picture.ndim == 2 else cv2.cvtColor(picture, cv2.COLOR_BGR2GRAY)
    h, w = grey.shape[:2]
    if min(h, w) < 3:
        return 0.0
    g = grey.astype(np.float32)
    # at every fourth row and column only: the median is the costly part (a 640x480 input's
    # 19,000 samples take under 0.1 ms, all its pixels 3 ms) and as many tell the level as well
    down = g[0 : h - 2 : 4] - 2 * g[1 : h - 1 : 4] + g[2:h:4]
    response = down[:, 0 : w - 2 : 4] - 2 * down[:, 1 : w - 1 : 4] + down[:, 2:w:4]
    return float(np.median(np.abs(response))) * _MAD_TO_SIGMA


def smooth_noise(picture: np.ndarray, limit: float = NOISE_LIMIT) -> np.ndarray:
    """``picture`` smoothed in proportion to its noise where that is over ``limit``, else the
    same array."""
    level = noise_level(picture)
    if not level > limit:
        return picture
    return cv2.GaussianBlur(picture, (0, 0), NOISE_BLUR * level / limit)


def _centres_inside(finds: Sequence[Find], box: Box) -> np.ndarray:
    if not finds:
        return np.zeros(0, bool)
    b = np.array([f[0] for f in finds], np.float64)
    cx, cy = b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2
    x, y, w, h = box
    return (cx >= x) & (cx <= x + w) & (cy >= y) & (cy <= y + h)


def close_up_tiles(
    coarse: Sequence[Find],
    found: Sequence[Find],
    *,
    side: int,
    input_size: int,
    above: float = CLOSE_UP_ABOVE,
    min_score: float = CLOSE_UP_SCORE,
    pieces: float = PIECES,
    back_lead: float = BACK_LEAD,
) -> list[Find]:
    """The coarse look's tiles (boxes in a picture whose longer side is ``side``) that may be
    a close-up's: scored at least ``min_score``, wider than ``above`` pixels at the usual
    ``input_size``, at least ``pieces`` times as wide as the usual pass's tiles (``found``)
    centred inside them, and if face down, scoring ``back_lead`` over those tiles' median."""
    out = []
    for f in coarse:
        box, score, _, down = f
        short = min(box[2], box[3])
        if score < min_score or short * input_size / side <= above:
            continue
        inside = [found[int(i)] for i in np.flatnonzero(_centres_inside(found, box))]
        if inside and short < pieces * float(np.median([min(g[0][2], g[0][3]) for g in inside])):
            continue
        if down >= 0.5 and score - float(np.median([g[1] for g in inside] or [0.0])) < back_lead:
            continue
        out.append(f)
    return out


def covers(tiles: Sequence[Find], found: Sequence[Find], share: float = CLOSE_UP_COVER) -> bool:
    """Whether ``tiles`` hold the centres of at least ``share`` of ``found`` (true where
    nothing was found: a close-up of a blank tile shows the usual pass no pips)."""
    if not found:
        return True
    inside = np.zeros(len(found), bool)
    for t in tiles:
        inside |= _centres_inside(found, t[0])
    return float(inside.mean()) >= share


def confirmed(
    tiles: Sequence[Find], probabilities: np.ndarray, *, min_read: float = CLOSE_UP_READ
) -> list[Find]:
    """Of ``tiles``, those the classifier reads as one tile: a best probability (of any label,
    a back's included) of at least ``min_read`` in their row of ``probabilities``."""
    best = np.asarray(probabilities, np.float64).max(axis=-1, initial=0.0)
    return [t for t, p in zip(tiles, best, strict=True) if p >= min_read]


def close_up_input(
    winners: Sequence[Find],
    *,
    side: int,
    input_size: int,
    rescale_to: float,
    smallest: int = SMALLEST_INPUT,
) -> int:
    """The finder input (longer side, a multiple of 32) at which the median of ``winners``
    (boxes in a picture whose longer side is ``side``) is about ``rescale_to`` wide: not
    under ``smallest`` and not over ``input_size``."""
    seen = float(np.median([min(f[0][2], f[0][3]) for f in winners])) * input_size / side
    size = int(input_size * rescale_to / max(seen, 1e-6)) // 32 * 32
    return min(input_size, max(smallest, size))
