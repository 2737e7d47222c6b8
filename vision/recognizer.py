"""The runtime tile recogniser: find every tile in a picture and say which it is.

Two small ONNX models run with onnxruntime (no PyTorch needed):

1. the *finder* looks at the picture scaled so its longer side is 640 pixels and marks the
   centre of every tile (face up or face down) with its box and the direction of its long axis;
2. the *classifier* reads a square crop around each tile, taken from the full-resolution
   picture, and gives the probability of each of the 43 labels.

A tile whose best probability is under ``min_confidence`` is still reported, with
``needs_confirmation`` set and its runner-up labels, for the players to confirm, never
dropped or replaced by a guess. (A tile can still be read wrong and sure: docs/vision.md gives
how often, by ``min_confidence``.) The confidence a tile reports is calibrated (the model's
``confidence_temperature``, :mod:`vision.confidence`): a read at 0.9 is right about nine
times in ten; ``min_confidence`` and ``reread_below`` compare the raw probability.

>>> rec = TileRecognizer()                                  # the committed model
>>> found = rec.detect(cv2.imread("photo.jpg"))              # doctest: +SKIP
>>> [(d.name, round(d.confidence, 2)) for d in found]       # doctest: +SKIP
[('5m', 0.99), ('E', 0.97), ...]

A model is a folder holding ``model.json`` (the manifest), ``finder.onnx`` and
``classifier.onnx``, and after enrolment ``head.npz`` (a classifier last layer refitted to a
user's own tile set, see :mod:`vision.enrol`).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, cast

import cv2
import numpy as np

from controller.errors import ModelError, VisionError
from vision import int8_weights, model_manifest, scale
from vision.camera import as_bgr as _as_bgr
from vision.confidence import TEMPERATURE_RANGE, temper
from vision.detection import (
    Box,
    TileDetection,
    box_intersections,
    box_iou,
    is_box,
    reading_order,
    scale_box,
)
from vision.flower_look import (
    FLOWER_LOOK_FILE,
    VIEWS,
    FlowerLook,
    features,
    file_digest,
    flower_chance,
    merge,
    view_boxes,
)
from vision.labels import BACK, NUM_LABELS
from vision.model_manifest import ModelManifest

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "models"
"""The committed model, inside the package."""
HEAD_FILE = "head.npz"
FINDER_OUTPUTS = ("heatmap", "regression")
"""The finder's outputs, by name (an exporter may list them in either order)."""
MAX_CROP_MARGIN = 4.0
BOX_SCALE_RANGE = (0.5, 1.5)
"""The box scales a model may report its boxes at (see :attr:`TileRecognizer.box_scale`):
beyond them a box would no longer be the tile's."""


def _picture(image: Any) -> np.ndarray:
    # the finder needs a few cells of its stride-4 grid in each direction
    return _as_bgr(image, "the picture", min_side=16)


def decode_finder(
    heatmap: np.ndarray,
    regression: np.ndarray,
    threshold: float,
    scale: tuple[float, float] = (1.0, 1.0),
    stride: int = 4,
    nms_iou: float = 0.55,
) -> list[tuple[Box, float, float, float]]:
    """Turn the finder's outputs into ``(box, score, angle, face_down)`` per tile: the peaks
    of the heatmap (local maxima at least ``threshold``; with two channels, face up and face
    down, of their maximum), their boxes scaled by ``scale`` into the original picture, the
    finder's score, the long axis's direction in radians, and the share of the score that
    says "face down" (0 with a one-channel heatmap)."""
    hm = heatmap.astype(np.float32)
    if hm.ndim == 2:
        hm = hm[None]
    both = hm.max(axis=0)
    peaks = (both >= threshold) & (both >= cv2.dilate(both, np.ones((3, 3), np.uint8)))
    ys, xs = np.nonzero(peaks)
    if len(ys) == 0:
        return []
    scores = both[ys, xs]
    order = np.argsort(-scores, kind="stable")
    ys, xs, scores = ys[order], xs[order], scores[order]
    if len(hm) > 1:
        down = hm[1, ys, xs] / np.maximum(hm[0, ys, xs] + hm[1, ys, xs], 1e-6)
    else:
        down = np.zeros(len(ys), np.float32)
    reg = regression[:, ys, xs]
    cx = (xs + reg[0]) * stride * scale[0]
    cy = (ys + reg[1]) * stride * scale[1]
    w = np.exp(np.clip(reg[2], -3, 7)) * stride * scale[0]
    h = np.exp(np.clip(reg[3], -3, 7)) * stride * scale[1]
    angles = 0.5 * np.arctan2(reg[5], reg[4])
    boxes = np.stack([cx - w / 2, cy - h / 2, w, h], axis=1)
    # a tile's usual size in this picture, from all its peaks (a few peaks say too little)
    tile_area = float(np.median(w * h)) if len(boxes) >= MIN_PEAKS_FOR_SIZE else None
    keep = _nms(boxes, nms_iou, tile_area=tile_area)
    if tile_area is not None:
        boxes = _parted_pairs(boxes, keep, tile_area)
        boxes, keep = join_pieces(boxes, keep, tile_area)
    return [
        (
            (float(boxes[i, 0]), float(boxes[i, 1]), float(boxes[i, 2]), float(boxes[i, 3])),
            float(scores[i]),
            float(angles[i]),
            float(down[i]),
        )
        for i in keep
    ]


MIN_PEAKS_FOR_SIZE = 3
"""Peaks a picture needs before the median of their boxes is taken for a tile's size."""
SPANS_TWO = 1.6
"""A box over this many tiles' area may hold two tiles side by side."""
ONE_TILE = 1.25
"""A box under this many tiles' area holds one tile at most."""
PART_OF_TILE = 0.5
"""The least of a tile's area that the part of a box cut back beside another tile keeps."""


def _parted_pairs(boxes: np.ndarray, keep: list[int], tile_area: float) -> np.ndarray:
    """``boxes`` with each kept box that spans two tiles (over :data:`SPANS_TWO` tiles' area)
    cut back to the part beside a kept tile-sized box lying mostly inside it.

    Two small tiles side by side (about 13 finder pixels each, a far seat's row) can give
    one box round both at the higher peak and a tile's box at the other: the pair is two
    tiles, and the classifier reads each rightly only from its own crop."""
    area = boxes[:, 2] * boxes[:, 3]
    out = boxes.copy()
    single = [j for j in keep if area[j] < ONE_TILE * tile_area]
    for i in keep:
        if area[i] <= SPANS_TWO * tile_area:
            continue
        x0, y0, w, h = (float(v) for v in boxes[i])
        x1, y1 = x0 + w, y0 + h
        for j in single:  # (never i: a box cannot be both)
            jx0, jy0, jw, jh = (float(v) for v in boxes[j])
            jx1, jy1 = jx0 + jw, jy0 + jh
            shared = max(0.0, min(x1, jx1) - max(x0, jx0)) * max(0.0, min(y1, jy1) - max(y0, jy0))
            if shared < 0.5 * jw * jh:
                continue
            # cut along the axis the two lie side by side on, keeping the far side
            dx, dy = (jx0 + jx1 - x0 - x1) / 2, (jy0 + jy1 - y0 - y1) / 2
            cx0, cy0, cx1, cy1 = x0, y0, x1, y1
            if abs(dx) >= abs(dy):
                cx0, cx1 = (x0, max(x0 + 1, jx0)) if dx > 0 else (min(x1 - 1, jx1), x1)
            else:
                cy0, cy1 = (y0, max(y0 + 1, jy0)) if dy > 0 else (min(y1 - 1, jy1), y1)
            # a part too small to hold a tile says the box was that tile and some slack (a
            # 1 px sliver of it, off the picture's edge, was once read as a tile)
            if (cx1 - cx0) * (cy1 - cy0) >= PART_OF_TILE * tile_area:
                x0, y0, x1, y1 = cx0, cy0, cx1, cy1
        out[i] = (x0, y0, x1 - x0, y1 - y0)
    return out


REREAD_MOVED_IOU = 0.75
"""A tile whose box, as the classifier places it, overlaps the finder's box less than this
(and read under :data:`REREAD_MOVED_BELOW`) is read again at the placed box, and the surer
of the two readings kept: a crop that holds only part of a tile reads another kind, or its
own less surely. Chosen on the validation photos (tile F1, then flowers): of 0.6-0.8 with
the surer reading kept, 0.75 reads them best (0.7236, flowers 0.4842; averaging the two at
0.6, as before, 0.7232 and 0.4789). On a set never seen, whose tiles the finder boxes in
part, the tiles found read right 0.846 -> 0.870, enrolled 0.987 -> 0.996
(``bench.unseen_set_bench``)."""
REREAD_MOVED_BELOW = 0.95
"""A moved tile (:data:`REREAD_MOVED_IOU`) read at this probability or more is not read
again: what it saves is time. The validation and held-out photos, each enrolled too, and
the set never seen read as with every moved tile read again (but for one tile of the set on
one of three seeds' tables, enrolled: 0.990 -> 0.989), and a table frame has about 2 of its
81 tiles read again instead of 6, which kept the frame's time as it was; at 0.9 the set
never seen, enrolled, reads 0.994."""
PIECES_OVERLAP = 0.25
"""Two kept boxes sharing more than this part of the smaller one may be pieces of one tile."""
ONE_TILE_UNION = 1.3
"""... when their union is at most this many tiles' area (two tiles side by side make two)."""


def join_pieces(
    boxes: np.ndarray, keep: list[int], tile_area: float, overlap: float = PIECES_OVERLAP
) -> tuple[np.ndarray, list[int]]:
    """``boxes`` and ``keep`` with the kept boxes that are pieces of one tile joined: two
    that overlap (more than ``overlap`` of the smaller) and whose union is about one tile
    (:data:`ONE_TILE_UNION` of ``tile_area``) become that union, at the better box's place
    in ``keep`` (best first). A box joined is the only one changed.

    Tiles seen from above do not overlap, so one tile's worth of overlapping finds is one
    tile: the finder can take each half of a face that repeats a motif (the dots of a 4 筒
    in a set it never saw) for a tile, and the halves' peaks outscore the tile's own.
    Enrolment joins the finds of a grid photo by the same rule, looser
    (:data:`vision.enrol.GRID_PIECES_OVERLAP`)."""
    if len(keep) < 2:
        return boxes, keep
    kept = np.array(keep)
    sub = boxes[kept].astype(np.float64)
    area = sub[:, 2] * sub[:, 3]
    shared = box_intersections(sub, sub) > overlap * np.minimum(area[:, None], area)
    pairs = np.argwhere(np.triu(shared, 1))  # (better, worse): keep is best first
    if not len(pairs):
        return boxes, keep
    out = boxes.copy()
    gone: set[int] = set()
    for a, b in pairs:
        i, j = int(kept[a]), int(kept[b])
        if i in gone or j in gone:
            continue
        x0, y0 = np.minimum(out[i, :2], out[j, :2])
        x1, y1 = np.maximum(out[i, :2] + out[i, 2:], out[j, :2] + out[j, 2:])
        if (x1 - x0) * (y1 - y0) > ONE_TILE_UNION * tile_area:
            continue
        out[i] = (x0, y0, x1 - x0, y1 - y0)
        gone.add(j)
    return out, [i for i in keep if i not in gone]


def _nms(
    boxes: np.ndarray, iou: float, inside: float = 0.7, tile_area: float | None = None
) -> list[int]:
    """Greedy suppression of boxes (x, y, w, h) sorted best first: a box goes when its IoU
    with a better one passes ``iou``, or when a better one covers more than ``inside`` of it
    (a second peak on part of a large tile). Returns the kept indices.

    Given a tile's usual area in the picture, a tile-sized box (under :data:`ONE_TILE`) inside
    a better one that spans two (over :data:`SPANS_TWO`) goes only by ``iou``: it is more
    likely the second of two tiles than a part of one (see :func:`_parted_pairs`)."""
    area = boxes[:, 2] * boxes[:, 3]
    # all pairs at once (a frame has about a hundred peaks): row i says which boxes box i
    # suppresses; the greedy pass below then only walks the rows
    inter = box_intersections(boxes, boxes)
    by_iou = inter / np.maximum(area[:, None] + area - inter, 1e-9) > iou
    by_inside = inter / np.maximum(area, 1e-9) > inside
    if tile_area is not None:
        by_inside &= ~((area[:, None] > SPANS_TWO * tile_area) & (area < ONE_TILE * tile_area))
    over = np.triu(by_iou | by_inside, 1)
    alive = np.ones(len(boxes), bool)
    keep = []
    for i in range(len(boxes)):
        if not alive[i]:
            continue
        keep.append(i)
        alive &= ~over[i]
    return keep


def quad_of(box: Box, angle: float) -> tuple[np.ndarray, bool]:
    """The tile's outline inside ``box`` given its long axis's direction (radians), and
    whether it lies sideways (long axis horizontal)."""
    x, y, w, h = box
    c, s = abs(math.cos(angle)), abs(math.sin(angle))
    det = c * c - s * s
    if abs(det) > 0.35:
        long_ = (c * w - s * h) / det
        short = (c * h - s * w) / det
    else:  # near 45 degrees the box cannot tell the sides apart: assume a 3:4 tile
        long_ = (w + h) / 2 / (c + 0.75 * s)
        short = 0.75 * long_
    long_ = max(long_, 1.0)
    short = min(max(short, 0.55 * long_), 0.95 * long_)
    # a clearly oblong box says which way the tile lies better than the angle head does
    aspect = w / max(h, 1e-6)
    if aspect > 1.15:
        sideways = True
    elif aspect < 1 / 1.15:
        sideways = False
    else:
        sideways = c > s
    if sideways != (c > s):  # the box and the angle disagree: trust the box, keep the size
        angle = 0.0 if sideways else math.pi / 2
        long_, short = (w, h) if sideways else (h, w)
    # the outline never pokes out of its box
    ca, sa = math.cos(angle), math.sin(angle)
    c, s = abs(ca), abs(sa)
    fit = min(1.0, w / max(long_ * c + short * s, 1e-6), h / max(long_ * s + short * c, 1e-6))
    ux, uy = ca * long_ * fit / 2, sa * long_ * fit / 2  # half the long axis
    vx, vy = -sa * short * fit / 2, ca * short * fit / 2  # half the short axis
    cx, cy = x + w / 2, y + h / 2
    corners = [
        (cx - ux - vx, cy - uy - vy),
        (cx - ux + vx, cy - uy + vy),
        (cx + ux + vx, cy + uy + vy),
        (cx + ux - vx, cy + uy - vy),
    ]
    # clockwise in the picture (y down), starting from the top-left corner
    corners.sort(key=lambda p: math.atan2(p[1] - cy, p[0] - cx))
    start = min(range(4), key=lambda i: corners[i][0] + corners[i][1])
    return np.array(corners[start:] + corners[:start], np.float32), sideways


class TileRecognizer:
    """Finds and classifies every tile in a picture (a photo or a table frame).

    ``model_path`` is a model folder (default: the committed model in ``vision/models``);
    ``min_confidence`` is the probability under which a tile is flagged for confirmation
    (default: the model's own, from its manifest); ``finder_threshold`` the finder score a
    tile needs to be reported at all; ``input_size`` the longer side, in pixels, the finder
    sees the picture at; ``threads`` the CPU threads onnxruntime may use; ``refine`` whether
    the classifier's boxes replace the finder's (default: the manifest's ``refine``, true;
    always false for a model without that output); ``temperature`` the one the reported
    probabilities are tempered by (default: the manifest's ``confidence_temperature``, see
    :mod:`vision.confidence`); ``box_scale`` the factor each reported box's sides are scaled
    by about its centre (default: the manifest's, fitted on the validation photos; tiles are
    read from the boxes as found whatever it is); ``signed_weights`` whether a quantised
    classifier's weights are loaded signed, the fast form, which only a CPU with VNNI sums
    exactly (default: on such a CPU; see :mod:`vision.int8_weights`; the reads are the same
    either way); ``flower_look`` whether the tiles that may be flowers are read again by the
    model's flower look where it has one (:mod:`vision.flower_look`; false reads them as the
    classifier alone does).
    ``classifier_weights`` says which form was loaded: ``"signed"`` or ``"as stored"``.

    Raises :class:`~controller.errors.ModelError` when the model is missing, corrupt or of
    the wrong shape.
    """

    refine: bool  # set by _check_shapes (from the model's outputs), then by ``refine``

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        min_confidence: float | None = None,
        finder_threshold: float | None = None,
        input_size: int | None = None,
        threads: int | None = None,
        refine: bool | None = None,
        temperature: float | None = None,
        box_scale: float | None = None,
        signed_weights: bool | None = None,
        flower_look: bool = True,
    ) -> None:
        # a folder written in code as "~/my-tiles" is the user's, as it is in the shell
        self.model_dir = (
            Path(model_path).expanduser() if model_path is not None else DEFAULT_MODEL_DIR
        )
        manifest = ModelManifest.read(self.model_dir)
        self.manifest = manifest
        self.stride = manifest.stride
        self.crop_size = manifest.crop_size
        self.crop_margin = manifest.crop_margin
        self.input_size = int(input_size or manifest.finder_input)
        self.finder_threshold = (
            float(finder_threshold) if finder_threshold is not None else manifest.finder_threshold
        )
        self.min_confidence = (
            float(min_confidence) if min_confidence is not None else manifest.min_confidence
        )
        self.back_threshold = manifest.back_threshold
        self.rescale = manifest.rescale
        self.rescale_above = manifest.rescale_above
        self.rescale_to = manifest.rescale_to
        # 0 (the default for models before the setting) reads every tile once
        self.reread_below = manifest.reread_below
        self.temperature = (
            float(temperature) if temperature is not None else manifest.confidence_temperature
        )
        self.box_scale = float(box_scale) if box_scale is not None else manifest.box_scale
        self.flower_look_above = manifest.flower_look_above
        self._check_settings()
        threads = threads or max(1, min(4, os.cpu_count() or 1))
        self._finder = self._session(manifest.finder, threads)
        if signed_weights is None:
            signed_weights = int8_weights.cpu_sums_int8_exactly()
        signed = self._signed_model(manifest.classifier) if signed_weights else None
        self.classifier_weights = "as stored" if signed is None else "signed"
        self._classifier = self._session(manifest.classifier, threads, model=signed)
        self._check_shapes()
        self.head = self._load_head()
        self.flower_look = self._load_flower_look() if flower_look else None
        if refine is not None:
            self.refine = self.refine and refine

    def _check_settings(self) -> None:
        """Refuse settings (the manifest's or the caller's) that would read nothing, or
        read wrongly without saying so."""
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ModelError(f"min_confidence must be 0-1, not {self.min_confidence}")
        # a NaN threshold would find no tile and say nothing
        if not 0.0 < self.finder_threshold <= 1.0:
            raise ModelError(
                f"finder_threshold must be above 0 and at most 1, not {self.finder_threshold}"
            )
        # the share of a peak that says "face down": under a half, a tile likelier face up
        # would be called a back (at 0, every tile)
        if not 0.5 <= self.back_threshold <= 1.0:
            raise ModelError(f"back_threshold must be 0.5-1, not {self.back_threshold}")
        # a crop is the tile and a margin of its neighbours, never less than the tile itself
        if not 1.0 <= self.crop_margin <= MAX_CROP_MARGIN:
            raise ModelError(
                f"{self.model_dir / 'model.json'}: crop_margin must be 1-{MAX_CROP_MARGIN:g}, "
                f"not {self.crop_margin}"
            )
        if not 8 <= self.crop_size <= 512:
            raise ModelError(
                f"{self.model_dir / 'model.json'}: crop_size must be 8-512, not {self.crop_size}"
            )
        if not 0.0 <= self.reread_below <= 1.0:
            raise ModelError(
                f"{self.model_dir / 'model.json'}: reread_below must be 0-1, "
                f"not {self.reread_below}"
            )
        low, high = TEMPERATURE_RANGE
        if not low <= self.temperature <= high:
            raise ModelError(
                f"confidence_temperature must be {low:g}-{high:g}, not {self.temperature}"
            )
        low, high = BOX_SCALE_RANGE
        if not low <= self.box_scale <= high:
            raise ModelError(f"box_scale must be {low:g}-{high:g}, not {self.box_scale}")
        if not 0.0 <= self.flower_look_above <= 1.0:
            raise ModelError(
                f"{self.model_dir / 'model.json'}: flower_look_above must be 0-1, "
                f"not {self.flower_look_above}"
            )
        if not 8.0 <= self.rescale_to <= self.rescale_above:
            raise ModelError(
                f"rescale_to ({self.rescale_to}) must be at least 8 and at most rescale_above "
                f"({self.rescale_above})"
            )
        if not 64 <= self.input_size <= 4096 or self.input_size % 32:
            raise ModelError(
                f"input_size must be a multiple of 32 from 64 to 4096, not {self.input_size}"
            )
        if self.stride not in (1, 2, 4, 8, 16, 32):
            raise ModelError(
                f"{self.model_dir / 'model.json'}: stride must be a power of 2 up to 32, "
                f"not {self.stride}"
            )

    @property
    def embedding_size(self) -> int:
        """The length of the classifier's embedding, which :meth:`embed` gives per tile."""
        return int(self._embedding_size)

    # -- loading ------------------------------------------------------------------------------

    def _signed_model(self, name: str) -> bytes | None:
        """The model file ``name`` with its int8 weights signed (:mod:`vision.int8_weights`),
        or None where it has none to sign, or is missing or not a protobuf (which
        :meth:`_session` then says, as for any model file)."""
        path = self.model_dir / name
        if not path.is_file():
            return None
        try:
            return int8_weights.signed_weights(path.read_bytes())
        except OSError as exc:
            raise ModelError(f"the model file {path} cannot be read: {exc}") from None
        except ValueError:
            return None

    def _session(self, name: str, threads: int, *, model: bytes | None = None):
        """An onnxruntime session of the model file ``name``, or of ``model``, the bytes it
        was read into and changed to."""
        import onnxruntime as ort

        path = self.model_dir / name
        if not path.is_file():
            raise ModelError(f"the model file {path} is missing")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # no busy-waiting between runs: the finder's and the classifier's thread pools run
        # one after the other, and a pool left spinning takes the cores the other needs (on 2
        # cores bench/vision_bench.py read a frame in 56-72 ms with spinning, 29-36 without);
        # on the table's computer the camera, the controller and the dashboard need them too
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            return ort.InferenceSession(
                str(path) if model is None else model, opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors for bad files
            raise ModelError(f"the model file {path} is corrupt or not ONNX: {exc}") from None

    def _check_shapes(self) -> None:
        f_in = self._finder.get_inputs()
        c_in = self._classifier.get_inputs()
        c_out = {o.name: o.shape for o in self._classifier.get_outputs()}
        if len(f_in) != 1 or len(f_in[0].shape) != 4 or f_in[0].shape[1] != 3:
            raise ModelError(f"the finder model takes {[i.shape for i in f_in]}, not one 1x3xHxW")
        if len(c_in) != 1 or list(c_in[0].shape[1:]) != [3, self.crop_size, self.crop_size]:
            raise ModelError(
                f"the classifier model takes {[i.shape for i in c_in]}, "
                f"not Nx3x{self.crop_size}x{self.crop_size}"
            )
        if "logits" not in c_out or c_out["logits"][-1] != NUM_LABELS:
            raise ModelError(f"the classifier model does not give {NUM_LABELS} logits")
        if "embedding" not in c_out or not isinstance(c_out["embedding"][-1], int):
            raise ModelError("the classifier model does not give an embedding output")
        self._embedding_size = c_out["embedding"][-1]
        self._check_finder()
        # older models have no box output: their finder's boxes stand as found
        self.refine = self.manifest.refine and ("box" in c_out and c_out["box"][-1] == 4)

    def _check_finder(self) -> None:
        """Run the finder once on a small blank picture: its outputs must be a heatmap of 1
        or 2 channels and 6 channels of regression, on the grid the manifest's stride says
        (a finder of another stride would put every box in the wrong place, silently)."""
        names = [o.name for o in self._finder.get_outputs()]
        if not set(FINDER_OUTPUTS) <= set(names):
            raise ModelError(
                f"the finder model gives {names}, not the outputs {list(FINDER_OUTPUTS)}"
            )
        side = 64
        x = np.zeros((1, 3, side, side), np.float32)
        try:
            hm, reg = self._finder.run(FINDER_OUTPUTS, {self._finder.get_inputs()[0].name: x})
        except Exception as exc:
            raise ModelError(f"the finder model fails on a {side}x{side} picture: {exc}") from None
        grid = side // self.stride
        if hm.ndim != 4 or hm.shape[1] not in (1, 2) or hm.shape[2:] != (grid, grid):
            raise ModelError(
                f"the finder's heatmap is {list(hm.shape)} for a {side}x{side} picture, not "
                f"1 or 2 channels on the {grid}x{grid} grid of stride {self.stride}"
            )
        if reg.ndim != 4 or reg.shape[1] != 6 or reg.shape[2:] != (grid, grid):
            raise ModelError(
                f"the finder's regression is {list(reg.shape)} for a {side}x{side} picture, "
                f"not 6 channels on the {grid}x{grid} grid of stride {self.stride}"
            )

    def _load_head(self) -> tuple[np.ndarray, np.ndarray] | None:
        path = self.model_dir / HEAD_FILE
        if not path.exists():
            return None
        try:
            with np.load(path) as data:
                w, b = data["weight"].astype(np.float32), data["bias"].astype(np.float32)
        except Exception as exc:  # a truncated or foreign .npz
            raise ModelError(f"the enrolled head {path} is unreadable: {exc}") from None
        if w.shape != (self._embedding_size, NUM_LABELS) or b.shape != (NUM_LABELS,):
            raise ModelError(f"the enrolled head {path} does not fit this classifier")
        return w, b

    def _load_flower_look(self) -> FlowerLook | None:
        path = self.model_dir / FLOWER_LOOK_FILE
        if not path.exists():
            return None
        classifier = file_digest(self.manifest.file(self.model_dir, "classifier"))
        return FlowerLook.load(path, self._embedding_size, classifier)

    # -- running ------------------------------------------------------------------------------

    def find(self, image: np.ndarray) -> list[tuple[Box, float, float, float]]:
        """The finder's tiles in a picture: ``(box, score, angle, face_down)`` each (see
        :func:`decode_finder`), boxes in picture pixels.

        The finder knows tiles of about 12-80 pixels. A close-up's tiles are larger, and it
        takes their pips for tiles: a coarse look at the picture (a fifth of the usual size)
        finds them whole, and where tiles it finds too large for the usual look hold most of
        what the usual look found, as their pieces, and read as tiles, the picture is read
        again shrunk so that they are about ``rescale_to`` wide (see :mod:`vision.scale`).
        Otherwise, when the tiles found at the usual size are wider than ``rescale_above``
        finder pixels, it looks again at the picture shrunk so that they are about
        ``rescale_to``. Either way it keeps the second reading."""
        img = _picture(image)
        size = self.input_size
        found = self._find_at(img, size)
        if self.rescale:
            closer = self._close_up(img, found)
            if closer is not None:
                return closer
        if self.rescale and found:
            short = float(np.median([min(b[2], b[3]) for b, *_ in found]))
            seen = short * size / max(img.shape[:2])
            if seen > self.rescale_above:
                smaller = max(256, int(size * self.rescale_to / seen) // 32 * 32)
                if smaller < size:  # a small ``input_size`` leaves no smaller look to take
                    found = self._find_at(img, smaller)
        return found

    def _close_up(
        self, img: np.ndarray, found: list[tuple[Box, float, float, float]]
    ) -> list[tuple[Box, float, float, float]] | None:
        """The reading of a close-up at the size its tiles call for, or None where the coarse
        look finds no close-up's tiles (or the shrunk look finds no tile at all)."""
        size = self.input_size
        coarse_size = scale.coarse_input(size)
        if coarse_size >= size:
            return None
        side = max(img.shape[:2])
        coarse = self._run_finder(img, scale.halved(img, coarse_size), coarse_size)
        tiles = scale.close_up_tiles(coarse, found, side=side, input_size=size)
        # a table frame's coarse tiles hold a few of its tiles at most: read none of them
        if not tiles or not scale.covers(tiles, found):
            return None
        winners = scale.confirmed(tiles, self.classify(img, [t[0] for t in tiles]))
        if not winners or not scale.covers(winners, found):
            return None
        smaller = scale.close_up_input(
            winners, side=side, input_size=size, rescale_to=self.rescale_to
        )
        if smaller >= size:
            return None
        return self._find_at(img, smaller) or None

    RESCALE_ABOVE = model_manifest.RESCALE_ABOVE
    """Default ``rescale_above``: the median tile width (finder pixels) above which a picture
    is read again shrunk."""
    RESCALE_TO = model_manifest.RESCALE_TO
    """Default ``rescale_to``: the tile width (finder pixels) such a close-up is shrunk to."""

    def _find_at(self, img: np.ndarray, size: int) -> list[tuple[Box, float, float, float]]:
        return self._run_finder(img, img, size)

    def _run_finder(
        self, img: np.ndarray, start: np.ndarray, size: int
    ) -> list[tuple[Box, float, float, float]]:
        """The finder's tiles in ``img`` (boxes in its pixels), read from ``start`` (``img``
        itself, or already shrunk by the coarse look) scaled so its longer side is ``size``."""
        h, w = img.shape[:2]
        sh, sw = start.shape[:2]
        s = size / max(sh, sw)
        nw, nh = max(1, round(sw * s)), max(1, round(sh * s))
        pw, ph = -(-nw // 32) * 32, -(-nh // 32) * 32
        # pixel noise far stronger than the finder learnt reads as tiles everywhere: it is
        # smoothed where it is finest, after shrinking or before enlarging (interpolated, it
        # is hidden from the noise measure but not from the finder)
        if s >= 1:
            start = scale.smooth_noise(start)
        small = cv2.resize(
            start, (nw, nh), interpolation=cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR
        )
        if s < 1:
            small = scale.smooth_noise(small)
        if (pw, ph) != (nw, nh):
            small = cv2.copyMakeBorder(small, 0, ph - nh, 0, pw - nw, cv2.BORDER_REPLICATE)
        # onnxruntime copies a strided array slowly: hand it a contiguous one
        x = np.ascontiguousarray(small.transpose(2, 0, 1)[None], dtype=np.float32)
        try:
            hm, reg = self._finder.run(FINDER_OUTPUTS, {self._finder.get_inputs()[0].name: x})
        except Exception as exc:
            raise ModelError(f"the finder model failed on a {w}x{h} picture: {exc}") from None
        found = decode_finder(hm[0], reg[0], self.finder_threshold, (w / nw, h / nh), self.stride)
        if not all(is_box(f[0]) for f in found):
            raise ModelError(
                f"the finder model gave boxes that are not numbers on a {w}x{h} picture"
            )
        # boxes of tiles in the padding, or centred off the picture's other edges, are not
        # tiles in the picture (nor can a crop be cut round them)
        return [
            f for f in found if 0 <= f[0][0] + f[0][2] / 2 < w and 0 <= f[0][1] + f[0][3] / 2 < h
        ]

    def classify(self, image: np.ndarray, boxes: list[Box]) -> np.ndarray:
        """Label probabilities (N x 43) for tiles at ``boxes`` in a picture: the raw ones,
        before the confidence calibration (:func:`vision.confidence.temper` makes them the
        reported ones)."""
        return self._read(_picture(image), _box_list(boxes), place=False)[0]

    def _read(
        self, img: np.ndarray, boxes: list[Box], place: bool = True
    ) -> tuple[np.ndarray, list[Box]]:
        """Label probabilities for tiles at ``boxes`` (the flower look's where it applies, see
        :meth:`_look_at_flowers`), and each tile's box as the classifier places it in its
        crop (the given box where the model has no box output, refining is off, or ``place``
        is false)."""
        boxes = _box_list(boxes)
        if not boxes:
            return np.zeros((0, NUM_LABELS), np.float32), []
        crops = self.crops(img, boxes)
        names = ["logits", "embedding", "box"] if self.refine and place else ["logits", "embedding"]
        probs, placed, tile_emb = self._run_classifier(crops, names)
        unsure = np.flatnonzero(probs.max(axis=1) < self.reread_below)
        if len(unsure):
            # the classifier learnt every quarter turn of a tile: an unsure tile is read in
            # all four and the readings averaged (on the validation photos this corrects
            # about a sixth of the misreads); sure tiles, most of a table's, cost nothing more
            turned = np.concatenate([np.rot90(crops[unsure], k, axes=(1, 2)) for k in (1, 2, 3)])
            more, _, _ = self._run_classifier(turned, ["logits", "embedding"])
            probs[unsure] = (probs[unsure] + more.reshape(3, len(unsure), -1).sum(axis=0)) / 4
        self._look_at_flowers(img, boxes, probs, tile_emb)
        if placed is not None:
            refined = [
                refine_box(b, o, self.crop_margin) for b, o in zip(boxes, placed, strict=True)
            ]
            # a box output that is not a number (or no box) leaves the tile where it was found
            refined = [r if is_box(r) else b for r, b in zip(refined, boxes, strict=True)]
            # a tile the classifier places well away from the finder's box was read from a
            # crop that may hold part of it: read it again where it lies, and keep the surer
            # reading (better than their average on the validation photos: see
            # REREAD_MOVED_IOU)
            moved = [
                k
                for k, (r, b) in enumerate(zip(refined, boxes, strict=True))
                if box_iou(r, b) < REREAD_MOVED_IOU and probs[k].max() < REREAD_MOVED_BELOW
            ]
            if moved:
                again, _ = self._read(img, [refined[k] for k in moved], place=False)
                surer = again.max(axis=1) > probs[moved].max(axis=1)
                probs[moved] = np.where(surer[:, None], again, probs[moved])
        else:
            refined = list(boxes)
        return probs, refined

    def _look_at_flowers(
        self, img: np.ndarray, boxes: list[Box], probs: np.ndarray, tile_emb: np.ndarray
    ) -> None:
        """Read again with the flower look (:mod:`vision.flower_look`) the tiles whose
        probability of "a flower" is :attr:`flower_look_above` or more, in place in
        ``probs`` (``tile_emb``: each tile's embedding, as the classifier just read it). Not
        with an enrolled head: it has learnt the set's own flowers (and the look was trained
        on the trained head's mistakes)."""
        if self.flower_look is None or self.head is not None or not len(probs):
            return
        which = np.flatnonzero(flower_chance(probs) >= self.flower_look_above)
        if not len(which):
            return
        feats = self.look_features(img, [boxes[k] for k in which], tile_emb[which])
        look = self.flower_look.probabilities(feats)
        if not np.isfinite(look).all():
            raise ModelError("the flower look gave readings that are not numbers")
        probs[which] = merge(probs[which], look)

    def look_features(
        self, image: np.ndarray, boxes: list[Box], tile_emb: np.ndarray | None = None
    ) -> np.ndarray:
        """The flower look's input (N x 2E, :func:`vision.flower_look.features`) for tiles at
        ``boxes``: the classifier's embeddings of each tile's views. ``tile_emb``: the tiles'
        own embeddings where the classifier has just read them (the first view is that very
        crop), so that only the middles are read."""
        img = _picture(image)
        boxes = _box_list(boxes)
        if not boxes:
            return np.zeros((0, VIEWS * self._embedding_size), np.float32)
        first = 0 if tile_emb is None else 1
        views = [self._crop(img, v) for b in boxes for v in view_boxes(b)[first:]]
        emb = self._embeddings(np.stack(views)).reshape(len(boxes), VIEWS - first, -1)
        if tile_emb is not None:
            emb = np.concatenate([np.asarray(tile_emb, np.float32)[:, None], emb], axis=1)
        return features(emb)

    def _run_classifier(
        self, crops: np.ndarray, names: list[str]
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Label probabilities for N x S x S x 3 crops, the box output when asked, and the
        embeddings."""
        logits, emb, *placed = self._classifier_outputs(crops, names)
        if self.head is not None:
            logits = emb @ self.head[0] + self.head[1]
        probs = _softmax(logits)
        if not np.isfinite(probs).all():
            # a reading that is not a number cannot be flagged by its confidence either
            raise ModelError("the classifier model gave readings that are not numbers")
        return probs, (placed[0] if placed else None), emb

    def read_box(self, box: Box) -> Box:
        """The box a tile reported at ``box`` was read from: :attr:`box_scale` undone. To read
        a reported tile again (or learn it, as enrolment does) as the recogniser first read
        it, cut it at this box."""
        return scale_box(box, 1.0 / self.box_scale)

    def embed(self, image: np.ndarray, boxes: list[Box]) -> np.ndarray:
        """The classifier's embeddings (N x E) of tiles at ``boxes`` (for enrolment)."""
        img = _picture(image)
        boxes = _box_list(boxes)
        if not boxes:
            return np.zeros((0, self._embedding_size), np.float32)
        return self._embeddings(self.crops(img, boxes))

    def _embeddings(self, crops: np.ndarray) -> np.ndarray:
        """The classifier's embeddings (N x E) of N x S x S x 3 crops."""
        (emb,) = self._classifier_outputs(crops, ["embedding"])
        return emb

    def _classifier_outputs(self, crops: np.ndarray, names: list[str]) -> list[np.ndarray]:
        """The classifier network's outputs ``names`` for N x S x S x 3 crops (the one place
        it is run); :class:`~controller.errors.ModelError` when it fails."""
        x = np.ascontiguousarray(crops.transpose(0, 3, 1, 2), dtype=np.float32)
        try:
            return list(self._classifier.run(names, {"crops": x}))
        except Exception as exc:
            raise ModelError(f"the classifier model failed: {exc}") from None

    def crops(self, img: np.ndarray, boxes: list[Box]) -> np.ndarray:
        """The classifier's crops (N x S x S x 3 ``uint8``) of the tiles at ``boxes`` in a BGR
        picture, cut as every reading cuts them; :class:`~controller.errors.VisionError` for
        a box that is not one."""
        boxes = _box_list(boxes)
        h, w = img.shape[:2]
        for box in boxes:
            x, y, bw, bh = box
            # a box wholly off the picture would be read from its replicated edge (and one
            # past float32's range crashed OpenCV's warp outright)
            if x >= w or y >= h or x + bw <= 0 or y + bh <= 0:
                raise VisionError(f"a tile's box {box} lies outside the {w}x{h} picture")
        return np.stack([self._crop(img, b) for b in boxes])

    def _crop(self, img: np.ndarray, box: Box) -> np.ndarray:
        return square_crop(img, box, self.crop_size, self.crop_margin)

    def detect(self, image: np.ndarray, *, as_found: bool = False) -> list[TileDetection]:
        """Every tile found in a BGR picture, classified, in reading order (top to bottom,
        left to right). :class:`~controller.errors.CameraError` for a picture that is not
        one (None, empty, wrong type or shape).

        A read tile's ``confidence`` and ``alternatives`` are calibrated (tempered by
        :attr:`temperature`); whether it ``needs_confirmation`` is decided on the raw
        probability, as ``min_confidence`` was chosen. Each box and outline is reported at
        :attr:`box_scale`, or with ``as_found`` at the size the tile was found and read at
        (what the table pipeline's measures of a tile were fitted on)."""
        return [tile for tile, _ in self.detect_with_probabilities(image, as_found=as_found)]

    def detect_with_probabilities(
        self, image: np.ndarray, *, as_found: bool = False
    ) -> list[tuple[TileDetection, np.ndarray | None]]:
        """:meth:`detect`'s tiles, each with the classifier's raw probabilities of the 43
        labels (before calibration: what the thresholds compare and a calibration is fitted
        on), or None for a tile the finder alone called face down."""
        img = _picture(image)
        found = self.find(img)
        # a tile the finder is sure lies face down needs no reading (walls, concealed kongs)
        to_read = [i for i, f in enumerate(found) if f[3] < self.back_threshold]
        probs, placed = self._read(img, [found[i][0] for i in to_read])
        # tempering keeps each tile's order of labels: ranked once, on the raw probabilities
        shown = temper(probs, self.temperature)
        # each read tile's four likeliest labels, all tiles at once
        ranked = np.argsort(-probs, axis=1)[:, :4] if len(probs) else np.zeros((0, 4), int)
        read = {i: (probs[k], shown[k], ranked[k].tolist()) for k, i in enumerate(to_read)}
        boxes = [f[0] for f in found]
        for i, box in zip(to_read, placed, strict=True):
            boxes[i] = box
        if self.refine and len(found) > 1:
            # two peaks on one tile give two boxes that the classifier moves onto that tile:
            # keep the finder's surer one (``found`` is sorted by score)
            keep = set(_nms(np.array(boxes, np.float64), 0.55))
        else:
            keep = set(range(len(found)))
        out = []
        raw: dict[int, np.ndarray | None] = {}
        for i, (_, score, angle, down) in enumerate(found):
            if i not in keep:
                continue
            box = boxes[i] if as_found else scale_box(boxes[i], self.box_scale)
            quad, sideways = quad_of(box, angle)
            r = read.get(i)
            alternatives: tuple[tuple[int, float], ...]
            p: np.ndarray | None = None
            if r is None:
                best, confidence, alternatives = BACK, down, ()
                sure = down
            else:
                p, q, order = r
                best, confidence = order[0], float(q[order[0]])
                alternatives = tuple((k, float(q[k])) for k in order[1:])
                # the threshold was chosen on raw probabilities: compared with one, no flag
                # moves when the calibration does
                sure = float(p[order[0]])
            tile = TileDetection(
                label=best,
                confidence=confidence,
                box=box,
                quad=quad,
                sideways=sideways,
                needs_confirmation=not sure >= self.min_confidence,
                alternatives=alternatives,
                finder_score=score,
            )
            out.append(tile)
            raw[id(tile)] = p
        return [(tile, raw[id(tile)]) for tile in _reading_order(out)]


def square_crop(img: np.ndarray, box: Box, size: int, margin: float) -> np.ndarray:
    """The square around a box's centre, ``margin`` x its longer side, resized to ``size``
    pixels; outside the picture is filled by replicating its border. Every reading and every
    training crop is cut by this one function, so the two always agree."""
    x, y, w, h = (float(v) for v in box)
    side = max(w, h) * margin
    cx, cy = x + w / 2, y + h / 2
    s = size / side
    m: np.ndarray = np.array([[s, 0, size / 2 - cx * s], [0, s, size / 2 - cy * s]], np.float64)
    with np.errstate(over="ignore"):
        m32 = m.astype(np.float32)
    # float32, as the committed model's training crops were cut (its rounding moves a few
    # int8 readings); float64 where a huge box overflows it, which crashed OpenCV's warp
    if np.isfinite(m32).all():
        m = m32
    # bilinear (OpenCV's warps have no area averaging: asked for it, they sample bilinearly)
    return cv2.warpAffine(
        img, m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE
    )


def _box_list(boxes: Any) -> list[Box]:
    """``boxes`` (a sequence of ``(x, y, w, h)``, or an N x 4 array) as a list of float boxes;
    :class:`~controller.errors.VisionError` for anything else."""
    if isinstance(boxes, np.ndarray):
        if boxes.ndim != 2 or boxes.shape[1] != 4 or boxes.dtype.kind not in "iuf":
            raise VisionError(f"tiles' boxes are N x 4 numbers, not an array of {boxes.shape}")
        boxes = boxes.tolist()
    try:
        out = [tuple(float(v) for v in box) for box in boxes]
    except (TypeError, ValueError):
        raise VisionError(
            "tiles' boxes are a list of (x, y, width, height), each four numbers"
        ) from None
    for box in out:
        if not is_box(box):
            raise VisionError(
                f"a tile's box is x, y, width, height, finite and of some size, not {box}"
            )
    return cast(list[Box], out)  # each of four numbers: is_box says so


def _reading_order(tiles: list[TileDetection]) -> list[TileDetection]:
    """Rows top to bottom, each left to right. A row is the tiles whose centres lie within
    0.6 of a tile's height below its topmost one, so a row is never split by where it falls
    on a fixed grid."""
    if not tiles:
        return []
    band = max(8.0, 0.6 * float(np.median([d.box[3] for d in tiles])))
    return reading_order(tiles, lambda d: d.centre[1], lambda d: d.centre[0], band)


def refine_box(box: Box, out: np.ndarray, margin: float) -> Box:
    """The box the classifier's box output ``out`` says for a tile whose crop was cut around
    ``box`` with ``margin``: ``out`` is the box's centre relative to the crop's centre, then
    the log of its width and height, all in units of the crop's side (``margin`` x the box's
    longer side)."""
    x, y, w, h = box
    side = max(w, h) * margin
    cx = x + w / 2 + float(out[0]) * side
    cy = y + h / 2 + float(out[1]) * side
    # a box far larger than its crop would be a misreading, not a correction
    nw = math.exp(min(float(out[2]), 0.5)) * side
    nh = math.exp(min(float(out[3]), 0.5)) * side
    return (cx - nw / 2, cy - nh / 2, nw, nh)


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
