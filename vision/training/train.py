"""Training of the two ONNX models: the tile finder and the tile classifier.

This is the only module that imports PyTorch, and only when :func:`train` runs (``pip install
.[train]``). ``mahjong-table train`` calls it.

- The **finder** is a small fully convolutional network in the CenterNet style: from a BGR image
  (any size, multiple of 32) it predicts, at stride 4, a heatmap of tile centres (one class
  "tile", face up or face down) and, at each centre, the sub-cell offset, the log of the box's
  width and height, and the tile's long-axis direction as ``(cos 2θ, sin 2θ)``.
- The **classifier** reads a square crop around each tile (48 pixels, 1.3 x the box's longer
  side) and gives the 43 labels' logits, a 192-number embedding (enrolment refits the last
  layer on it, see :mod:`vision.enrol`) and the tile's box within the crop, which corrects the
  finder's box: the finder sees a tile at stride 4 among its neighbours, the classifier sees
  it at 48 pixels.

Data: the real photos' training split (validation split for picking the best epoch; the
held-out split is never read here) and synthetic scenes from :mod:`vision.training.synth`, drawn
with the procedural faces and the public-domain art.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np

from controller.errors import ModelError
from vision.files import check_folder_takes_files
from vision.flower_look import FLOWER_LOOK_FILE
from vision.labels import BACK, LABEL_NAMES, NUM_LABELS
from vision.model_manifest import MANIFEST_FILE, ModelManifest
from vision.training.flower_look_fit import LookConfig, fit_flower_look

if TYPE_CHECKING:  # the recogniser loads onnxruntime: imported where it runs
    from vision.detection import Box
    from vision.recognizer import TileRecognizer

STRIDE = 4
CROP_SIZE = 48
CROP_MARGIN = 1.3
STORE_SIZE = 64  # crops are kept a little larger than the input, for jitter
EMBEDDING = 192
FINDER_FILE = "finder.onnx"
CLASSIFIER_FILE = "classifier.onnx"


LABEL_BOX_LESSONS = ("all", "apart", "none")
"""The choices of :attr:`TrainConfig.label_box_lessons`."""


@dataclass
class TrainConfig:
    """What one training run does. :meth:`preset` gives the ``full`` run (the committed model)
    and the ``tiny`` one (seconds, for tests)."""

    shared_data: Path | None
    out_dir: Path
    seed: int = 0
    threads: int = 2
    max_photos: int | None = None
    synth_scenes: int = 1800
    finder_size: int = 320
    finder_batch: int = 12
    finder_epochs: int = 30
    finder_steps: int = 130
    finder_lr: float = 3e-3
    classifier_epochs: int = 26
    classifier_batch: int = 128
    classifier_lr: float = 3e-3
    synth_crops_max: int = 20000
    table_frames: int = 150
    real_flower_repeat: int = 4
    """How many times each real flower crop is shown per epoch (flowers are rare there)."""
    mask_unlabelled: bool = True
    """Teach the finder "no tile here" only inside a real photo's labelled area (see
    :func:`vision.training.dataset.labelled_area`): most photos leave the discards and walls
    unlabelled."""
    finder_max_label_overlap: float | None = None
    """Leave out of the finder's training the real photos whose labelled boxes cover their
    neighbours this much or more (:func:`vision.training.dataset.label_overlap`): in many such
    photos every box is shifted or enlarged off its tile, and the finder would be taught tile
    centres where there are none. ``None`` keeps every photo."""
    finder_deep_width: float = 1.0
    """The channel counts of the finder's two deepest stages (1/16 and 1/32 of the picture,
    where a tile's surroundings are seen) relative to the committed design, rounded to
    multiples of 8. Width there adds capacity at little cost per frame; the stages at 1/4 and
    1/8, which cost most, stay as they are."""
    finder_stretch: float = 1.0
    """Stretch each real photo the finder sees by up to this factor one way and shrink it the
    other (log-uniform; 1 leaves its aspect alone): tiles seen obliquely, or in photos
    stretched to a square, are narrower or squatter than the finder would otherwise learn."""
    crops_at_found_boxes: bool = True
    """Cut the classifier's real crops at the finder's box where it finds the tile (as the
    recogniser will), at the labelled box where it does not (:func:`boxes_at_found`)."""
    classifier_any_tilt: float = 0.0
    """The share of the classifier's training crops turned by any angle up to 45 degrees
    instead of a few (tiles tossed askew on the table, close-ups taken at a slant); 0 keeps
    the small turns only, as the committed classifier was trained."""
    label_box_lessons: str = "all"
    """Which real crops cut at a labelled box (where the finder found no tile on it) teach the
    classifier's box output where the tile lies: ``all`` (the committed recipe), ``apart``
    (only in photos whose labelled boxes stay apart, :data:`vision.training.dataset.CROWDED_LABELS`)
    or ``none``. Many labelled boxes are shifted off their tiles, and a blind audit found the
    committed box output moving boxes off tiles the same way in photos that look alike; the
    crops left out still teach the label."""
    flower_look_tables: int = 60
    """Rendered table frames the flower look learns from besides the photos
    (:mod:`vision.training.flower_look_fit`)."""
    flower_look_scenes: int = 300
    """Rendered scenes it learns from."""
    tune_table_frames: int = 20
    """Rendered tables each finder threshold is also run on when it is chosen (see
    :func:`tune`)."""
    quantise: bool = True
    """Quantise the classifier to int8 before the run-time settings are chosen
    (:mod:`vision.training.quantise`). A kept classifier that is quantised already stays so."""
    quantise_photos: int = 200
    """Training photos whose tiles set the int8 classifier's activation ranges."""
    quantise_tables: int = 16
    """Rendered table frames whose tiles set them too."""
    reuse_finder: Path | None = None
    """A model folder whose finder to keep (only the classifier is trained)."""
    reuse_classifier: Path | None = None
    """A model folder whose classifier to keep (only the finder is trained)."""
    log: Callable[[str], None] = field(default=print, repr=False)

    def __post_init__(self) -> None:
        # said before hours of training, not when the finder is built
        at_least_one = (
            "threads",
            "synth_scenes",
            "finder_batch",
            "finder_epochs",
            "finder_steps",
            "classifier_epochs",
            "classifier_batch",
            "real_flower_repeat",
            "tune_table_frames",
        )
        for name in at_least_one:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelError(f"{name} must be a whole number, 1 or more, not {value!r}")
        if not isinstance(self.quantise, bool):
            raise ModelError(f"quantise must be true or false, not {self.quantise!r}")
        if self.quantise and self.quantise_tables == 0:
            # the tables are there with or without photos: the ranges always have crops
            raise ModelError("quantise_tables must be 1 or more when the classifier is quantised")
        for name in (
            "seed",
            "table_frames",
            "flower_look_tables",
            "flower_look_scenes",
            "synth_crops_max",
            "quantise_photos",
            "quantise_tables",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ModelError(f"{name} must be a whole number, 0 or more, not {value!r}")
        if self.max_photos is not None and self.max_photos < 1:
            raise ModelError(
                f"max_photos must be 1 or more (or None for all), not {self.max_photos}"
            )
        if self.finder_size < 64 or self.finder_size % 32:
            # the finder halves the picture five times and adds the halves back up
            raise ModelError(
                f"finder_size must be a multiple of 32, 64 or more, not {self.finder_size}"
            )
        for name in ("finder_lr", "classifier_lr"):
            if not getattr(self, name) > 0:
                raise ModelError(f"{name} must be above 0, not {getattr(self, name)}")
        if not self.finder_stretch >= 1:
            raise ModelError(f"finder_stretch must be 1 (none) or more, not {self.finder_stretch}")
        if not 0 < self.finder_deep_width <= 8:  # inf would fail once the data is ready
            raise ModelError(
                f"the finder's deep width must be above 0 and at most 8, not "
                f"{self.finder_deep_width}"
            )
        if self.seed >= 2**63:  # the generators take a 64-bit seed
            raise ModelError(f"seed must be below 2**63, not {self.seed}")
        if self.threads > 256:  # PyTorch crashes on 100000
            raise ModelError(f"threads must be at most 256, not {self.threads}")
        if not 0 <= self.classifier_any_tilt <= 1:
            raise ModelError(
                f"the share of tilted crops must be from 0 to 1, not {self.classifier_any_tilt}"
            )
        if self.label_box_lessons not in LABEL_BOX_LESSONS:
            raise ModelError(
                f"label_box_lessons must be one of {', '.join(LABEL_BOX_LESSONS)}, "
                f"not {self.label_box_lessons!r}"
            )

    @classmethod
    def preset(cls, name: str, shared_data: Path | None, out_dir: Path, **kw: Any) -> TrainConfig:
        if name == "full":
            cfg = cls(shared_data, out_dir)
        elif name == "tiny":
            cfg = cls(
                shared_data,
                out_dir,
                max_photos=12,
                synth_scenes=16,
                finder_size=128,
                finder_batch=4,
                finder_epochs=1,
                finder_steps=2,
                classifier_epochs=1,
                classifier_batch=32,
                synth_crops_max=200,
                table_frames=1,
                tune_table_frames=1,
                flower_look_tables=1,
                flower_look_scenes=4,
                quantise_photos=12,
                quantise_tables=1,
            )
        else:
            raise ModelError(f"unknown training preset {name!r} (full or tiny)")
        return replace(cfg, **kw)


# --------------------------------------------------------------------------------------------
# Networks


def _torch():
    try:
        import torch
    except ImportError:
        raise ModelError(
            "training needs PyTorch: pip install 'mahjong-table[train]' (CPU wheel)"
        ) from None
    return torch


def _blocks(nn):
    """The two building blocks of both networks: ``cbr`` (convolution, batch norm, ReLU) and
    ``sep`` (a depthwise-separable convolution, each half with batch norm and ReLU)."""

    def cbr(cin: int, cout: int, k: int = 3, s: int = 1):
        return nn.Sequential(
            nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)
        )

    def sep(cin: int, cout: int, s: int = 1):
        return nn.Sequential(
            nn.Conv2d(cin, cin, 3, s, 1, groups=cin, bias=False),
            nn.BatchNorm2d(cin),
            nn.ReLU(True),
            nn.Conv2d(cin, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(True),
        )

    return cbr, sep


def build_finder(deep_width: float = 1.0):
    """The tile finder network (PyTorch module); ``deep_width`` scales the channel counts of
    its two deepest stages (see :attr:`TrainConfig.finder_deep_width`)."""
    torch = _torch()
    nn = torch.nn
    if not deep_width > 0:
        raise ModelError(f"the finder's deep width must be above 0, not {deep_width}")

    cbr, sep = _blocks(nn)

    def ch(n: int) -> int:
        return max(8, round(n * deep_width / 8) * 8)

    c16, c32, c64 = 16, 32, 64
    c96, c128, c160 = ch(96), ch(128), ch(160)

    # torch is imported at run time (it is optional): mypy cannot take a local's class as a base
    class Finder(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.stem = cbr(3, c16, 3, 2)
            self.d4 = nn.Sequential(sep(c16, c32, 2), sep(c32, c32))
            self.d8 = nn.Sequential(sep(c32, c64, 2), sep(c64, c64), sep(c64, c64))
            self.d16 = nn.Sequential(sep(c64, c128, 2), sep(c128, c128), sep(c128, c128))
            self.d32 = nn.Sequential(sep(c128, c160, 2), sep(c160, c160), sep(c160, c160))
            self.l32 = cbr(c160, c128, 1)
            self.u16 = sep(c128, c96)
            self.l16 = cbr(c96, c64, 1)
            self.u8 = sep(c64, c64)
            self.l8 = cbr(c64, c32, 1)
            self.u4 = sep(c32, c32)
            # two heatmaps: face-up tiles and face-down tiles (which need no classifier)
            self.hm = nn.Sequential(sep(c32, c32), nn.Conv2d(c32, 2, 1))
            self.reg = nn.Sequential(sep(c32, c32), nn.Conv2d(c32, 6, 1))
            self.hm[-1].bias.data.fill_(-2.19)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")

        def forward(self, x):
            x = x * (1 / 255.0) - 0.5
            x4 = self.d4(self.stem(x))
            x8 = self.d8(x4)
            x16 = self.d16(x8)
            x32 = self.d32(x16)
            y = self.u16(self.up(self.l32(x32)) + x16)
            y = self.u8(self.up(self.l16(y)) + x8)
            y = self.u4(self.up(self.l8(y)) + x4)
            return self.hm(y), self.reg(y)

    return Finder()


def build_classifier():
    """The crop classifier network (PyTorch module): returns ``(logits, embedding, box)``,
    ``box`` as :func:`box_target` gives it."""
    torch = _torch()
    nn = torch.nn

    cbr, sep = _blocks(nn)

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                cbr(3, 32, 3, 2),  # 24
                sep(32, 64),
                sep(64, 64),
                sep(64, 128, 2),  # 12
                sep(128, 128),
                sep(128, 128),
                sep(128, EMBEDDING, 2),  # 6
                sep(EMBEDDING, EMBEDDING),
            )
            # the crop holds neighbours too: pool with weights centred on the middle tile
            # (a plain average could not tell the tile to read from its neighbours)
            g = torch.arange(CROP_SIZE // 8, dtype=torch.float32) - (CROP_SIZE // 8 - 1) / 2
            w = torch.exp(-(g[:, None] ** 2 + g[None, :] ** 2) / (2 * 1.5**2))
            self.register_buffer("centre", (w / w.sum())[None, None])
            self.drop = nn.Dropout(0.2)
            self.head = nn.Linear(EMBEDDING, NUM_LABELS)
            # where the tile lies in the crop needs the whole 6x6 map, not the centred pool
            cells = (CROP_SIZE // 8) ** 2
            self.box = nn.Sequential(
                nn.Conv2d(EMBEDDING, 32, 1),
                nn.ReLU(True),
                nn.Flatten(),
                nn.Linear(32 * cells, 64),
                nn.ReLU(True),
                nn.Linear(64, 4),
            )

        def forward(self, x):
            f = self.features(x * (1 / 255.0) - 0.5)
            emb = (f * self.centre).sum(dim=(2, 3))
            return self.head(self.drop(emb)), emb, self.box(f)

    return Classifier()


# --------------------------------------------------------------------------------------------
# Data


@dataclass
class _Sample:
    """One finder training image and its tiles: ``boxes`` (N x 4, x y w h), ``angles``
    (N, radians of the long axis; NaN where unknown) and ``labels`` (N; -1 for a face-up tile
    of unknown label). ``known`` (the image's height x width, 1 where the labels are complete)
    marks where "no box" means "no tile"; None: everywhere (synthetic images)."""

    image: np.ndarray
    boxes: np.ndarray
    angles: np.ndarray
    labels: np.ndarray
    known: np.ndarray | None = None

    def with_image(self, image: np.ndarray) -> _Sample:
        return _Sample(image, self.boxes, self.angles, self.labels, self.known)


def face_sets(shared_data: Path | None) -> list[Any]:
    """The tile faces training draws with: the procedural ones, and the public-domain art
    where ``shared_data`` holds it."""
    from vision.rendering.faces import art_faces
    from vision.training.synth import procedural_variants

    sets = procedural_variants()
    if shared_data is not None:
        art = shared_data / "tile-art"
        if (art / "wikimedia-pd").is_dir():
            from vision.training.synth import BACKS, BODIES

            for i, sheet in enumerate(("uni.svg", "unib.svg")):
                for j in range(2):
                    k = 2 * i + j
                    sets.append(art_faces(art, sheet=sheet, body=BODIES[k], back=BACKS[k + 1]))
    return sets


def _synth_pool(cfg: TrainConfig, rng: np.random.Generator) -> list[_Sample]:
    from vision.training.synth import random_scene

    faces = face_sets(cfg.shared_data)
    size = (cfg.finder_size, cfg.finder_size)
    pool = []
    for _ in range(cfg.synth_scenes):
        r = random_scene(rng, faces, size=size, tile_width=(12.0, 0.22 * cfg.finder_size))
        boxes = np.array([t.box for t in r.tiles], np.float32).reshape(-1, 4)
        angles = []
        labels = []
        for t in r.tiles:
            q = t.quad
            d = (q[3] + q[2] - q[0] - q[1]) / 2
            angles.append(math.atan2(float(d[1]), float(d[0])))
            labels.append(t.label)
        pool.append(_Sample(r.image, boxes, np.array(angles, np.float32), np.array(labels)))
    return pool


def _table_pool(cfg: TrainConfig, rng: np.random.Generator) -> tuple[list[_Sample], _Crops]:
    """Whole-table frames as the simulator's camera gives them (1280x960): finder samples cut
    from the frame as the recogniser sees it (scaled to 640 on its longer side), and
    classifier crops from the full-resolution frame, as the recogniser crops them."""
    from vision.training.synth import table_frame

    faces = face_sets(cfg.shared_data)
    samples: list[_Sample] = []
    crops, labels, aspects = [], [], []
    size = cfg.finder_size
    for _ in range(cfg.table_frames):
        frame = table_frame(rng, faces)
        img = frame.image
        h, w = img.shape[:2]
        s = 640 / max(h, w)
        small = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA)
        boxes = np.array([t.box for t in frame.truths], np.float32).reshape(-1, 4) * s
        tile_labels = np.array([t.label for t in frame.truths], np.int64)
        angles = np.array(
            [math.atan2(*(((t.quad[3] + t.quad[2] - t.quad[0] - t.quad[1]) / 2)[::-1]))
             for t in frame.truths],
            np.float32,
        )  # fmt: skip
        for _ in range(2):
            x0 = int(rng.integers(0, max(1, small.shape[1] - size + 1)))
            y0 = int(rng.integers(0, max(1, small.shape[0] - size + 1)))
            crop = small[y0 : y0 + size, x0 : x0 + size]
            if crop.shape[:2] != (size, size):
                continue
            b = boxes.copy()
            b[:, 0] -= x0
            b[:, 1] -= y0
            cx, cy = b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2
            keep = (cx >= 0) & (cx < size) & (cy >= 0) & (cy < size)
            samples.append(
                _Sample(np.ascontiguousarray(crop), b[keep], angles[keep], tile_labels[keep])
            )
        for t in frame.truths:
            crops.append(_crop_from_quadless(img, t.box, None))
            labels.append(t.label)
            aspects.append(_aspect(t.box))
    return samples, _Crops(
        np.array(crops, np.uint8).reshape(-1, STORE_SIZE, STORE_SIZE, 3),
        np.array(labels, np.int64),
        np.array(aspects, np.float32).reshape(-1, 2),
    )


def _real_photos(cfg: TrainConfig, split: str):
    from vision.training.dataset import load_photos

    if cfg.shared_data is None or not (cfg.shared_data / "real-photos").is_dir():
        return []
    photos = load_photos(cfg.shared_data / "real-photos", [split])
    if cfg.max_photos is not None:
        photos = photos[: cfg.max_photos]
    return photos


def _fitting_photos(cfg: TrainConfig, photos):
    """The real photos the finder learns from (see ``TrainConfig.finder_max_label_overlap``)."""
    from vision.training.dataset import label_overlap

    limit = cfg.finder_max_label_overlap
    if limit is None:
        return photos
    kept = [p for p in photos if label_overlap(p.boxes) < limit]
    cfg.log(
        f"finder photos: {len(kept)} of {len(photos)} (left out: labelled boxes covering "
        f"their neighbours {limit} or more)"
    )
    return kept


def _augment_colour(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out: np.ndarray = img.astype(np.float32)
    out = out * rng.uniform(0.7, 1.3) + rng.uniform(-25, 25)
    out *= rng.uniform(0.88, 1.12, 3).astype(np.float32)
    if rng.random() < 0.3:
        gray = out.mean(axis=2, keepdims=True)
        out = out * 0.6 + gray * 0.4
    if rng.random() < 0.25:
        out = cv2.GaussianBlur(out, (0, 0), rng.uniform(0.3, 1.2))
    if rng.random() < 0.3:
        out += rng.normal(0, rng.uniform(2, 8), out.shape).astype(np.float32)
    return np.clip(out, 0, 255).astype(np.uint8)


def _real_finder_sample(
    photo,
    size: int,
    rng: np.random.Generator,
    mask_unlabelled: bool = True,
    stretch: float = 1.0,
) -> _Sample:
    from vision.training.dataset import labelled_area

    img = photo.image()
    h, w = img.shape[:2]
    boxes = photo.boxes.copy()
    known = labelled_area(boxes, w, h) if mask_unlabelled else None
    k = int(rng.integers(4))  # quarter turns, the same for the picture and its mask
    s = float(np.exp(rng.uniform(np.log(0.4), np.log(1.1)))) * size / 320
    if stretch > 1:
        a = float(np.exp(rng.uniform(-np.log(stretch), np.log(stretch))))
        # grown evenly where a side would fall short of the sample, so the stretch stays
        grow = max(1.0, size / (w * s * a), size / (h * s / a))
        nw, nh = max(size, round(w * s * a * grow)), max(size, round(h * s / a * grow))
    else:  # as before the stretch existed, so earlier runs are reproduced byte for byte
        nw, nh = max(size, round(w * s)), max(size, round(h * s))
    sx, sy = nw / w, nh / h
    img = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
    boxes = boxes * np.array([sx, sy, sx, sy], np.float32)
    x0 = int(rng.integers(0, nw - size + 1))
    y0 = int(rng.integers(0, nh - size + 1))
    img = img[y0 : y0 + size, x0 : x0 + size]
    if known is not None:
        known = cv2.resize(known, (nw, nh), interpolation=cv2.INTER_NEAREST)
        known = np.ascontiguousarray(np.rot90(known[y0 : y0 + size, x0 : x0 + size], k))
    boxes[:, 0] -= x0
    boxes[:, 1] -= y0
    # keep tiles whose centre lies inside, their boxes whole (a box may reach past the edge,
    # as the synthetic scenes' do)
    cx = boxes[:, 0] + boxes[:, 2] / 2
    cy = boxes[:, 1] + boxes[:, 3] / 2
    keep = (cx >= 0) & (cx < size) & (cy >= 0) & (cy < size)
    boxes = boxes[keep]
    labels = photo.labels[keep]
    img, boxes = _rot90(img, boxes, k)
    return _Sample(
        np.ascontiguousarray(img), boxes, np.full(len(boxes), np.nan, np.float32), labels, known
    )


def _rot90(img: np.ndarray, boxes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Turn the picture k quarter turns counter-clockwise, with its boxes."""
    for _ in range(k):
        w = img.shape[1]
        img = np.rot90(img)
        x, y, bw, bh = boxes.T.copy()
        boxes = np.stack([y, w - x - bw, bh, bw], axis=1).astype(np.float32)
    return img, boxes


def _finder_targets(sample: _Sample, size: int) -> dict[str, np.ndarray]:
    out = size // STRIDE
    hm = np.zeros((2, out, out), np.float32)
    n = len(sample.boxes)
    ind = np.zeros(n, np.int64)
    reg = np.zeros((n, 6), np.float32)
    mask = np.zeros(n, np.float32)
    amask = np.zeros(n, np.float32)
    if sample.known is None:
        known = np.ones((out, out), np.float32)
    else:  # a cell counts as known when most of it is
        small = cv2.resize(
            sample.known.astype(np.float32), (out, out), interpolation=cv2.INTER_AREA
        )
        known = (small > 0.5).astype(np.float32)
    yy, xx = np.mgrid[0:out, 0:out].astype(np.float32)
    for i, ((x, y, w, h), a, label) in enumerate(
        zip(sample.boxes, sample.angles, sample.labels, strict=True)
    ):
        cx, cy = (x + w / 2) / STRIDE, (y + h / 2) / STRIDE
        ix, iy = int(cx), int(cy)
        if not (0 <= ix < out and 0 <= iy < out) or w < 2 or h < 2:
            continue
        sigma = max(0.5, min(w, h) / STRIDE / 5)
        r = int(3 * sigma) + 1
        ys, xs = slice(max(0, iy - r), iy + r + 1), slice(max(0, ix - r), ix + r + 1)
        g = np.exp(-((xx[ys, xs] - ix) ** 2 + (yy[ys, xs] - iy) ** 2) / (2 * sigma * sigma))
        ch = 1 if label == BACK else 0
        hm[ch, ys, xs] = np.maximum(hm[ch, ys, xs], g)
        ind[i] = iy * out + ix
        reg[i, :4] = (cx - ix, cy - iy, math.log(w / STRIDE), math.log(h / STRIDE))
        mask[i] = 1
        if not math.isnan(float(a)):
            reg[i, 4:] = (math.cos(2 * a), math.sin(2 * a))
            amask[i] = 1
    return {"hm": hm, "ind": ind, "reg": reg, "mask": mask, "amask": amask, "known": known}


def _finder_batch(samples: list[_Sample], size: int):
    torch = _torch()
    imgs = np.stack([s.image for s in samples]).astype(np.float32).transpose(0, 3, 1, 2)
    targets = [_finder_targets(s, size) for s in samples]
    maxn = max(1, max(len(t["ind"]) for t in targets))

    def pad(key: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        arr = np.zeros((len(targets), maxn, *shape), dtype)
        for i, t in enumerate(targets):
            arr[i, : len(t[key])] = t[key]
        return arr

    return (
        torch.from_numpy(imgs),
        torch.from_numpy(np.stack([t["hm"] for t in targets])),
        torch.from_numpy(np.stack([t["known"] for t in targets])),
        torch.from_numpy(pad("ind", (), np.int64)),
        torch.from_numpy(pad("reg", (6,), np.float32)),
        torch.from_numpy(pad("mask", (), np.float32)),
        torch.from_numpy(pad("amask", (), np.float32)),
    )


def _finder_loss(hm_logit, reg, t_hm, known, ind, t_reg, mask, amask):
    """CenterNet's focal loss on the heatmap (its negatives only where ``known``: outside the
    labelled area of a partly labelled photo a tile may lie with no box) plus L1 on the
    offset, log size and doubled angle at each tile's centre."""
    torch = _torch()
    p = torch.sigmoid(hm_logit).clamp(1e-4, 1 - 1e-4)
    pos = t_hm.eq(1).float()
    neg = 1 - pos
    pos_loss = torch.log(p) * (1 - p) ** 2 * pos
    neg_loss = torch.log(1 - p) * p**2 * (1 - t_hm) ** 4 * neg * known.unsqueeze(1)
    npos = pos.sum().clamp(min=1)
    focal = -(pos_loss.sum() + neg_loss.sum()) / npos
    b, c, h, w = reg.shape
    flat = reg.view(b, c, h * w).permute(0, 2, 1)
    got = flat.gather(1, ind.unsqueeze(2).expand(-1, -1, c))
    m = mask.unsqueeze(2)
    nm = mask.sum().clamp(min=1)
    l_off = (torch.abs(got[..., :2] - t_reg[..., :2]) * m).sum() / nm
    l_size = (torch.abs(got[..., 2:4] - t_reg[..., 2:4]) * m).sum() / nm
    am = (amask * mask).unsqueeze(2)
    l_ang = (torch.abs(torch.tanh(got[..., 4:]) - t_reg[..., 4:]) * am).sum() / am.sum().clamp(
        min=1
    )
    return focal + l_off + l_size + 0.5 * l_ang, {
        "focal": focal.item(),
        "off": l_off.item(),
        "size": l_size.item(),
        "angle": l_ang.item(),
    }


# --------------------------------------------------------------------------------------------
# Classifier data


@dataclass
class _Crops:
    """Classifier training crops (N x STORE_SIZE x STORE_SIZE x 3, each tile centred, the
    window :data:`CROP_MARGIN` x STORE_SIZE / CROP_SIZE its longer side), their labels, and
    each tile's box as ``(w, h) / max(w, h)`` (its shape, which places it in the crop)."""

    images: np.ndarray
    labels: np.ndarray
    aspects: np.ndarray
    box_known: np.ndarray | None = None
    """Per crop, whether its box teaches the box output (all of them when ``None``)."""


def _aspect(box) -> tuple[float, float]:
    w, h = float(box[2]), float(box[3])
    m = max(w, h, 1e-6)
    return w / m, h / m


def _crop_from_quadless(img: np.ndarray, box, rng: np.random.Generator | None) -> np.ndarray:
    from vision.recognizer import square_crop

    return square_crop(img, box, STORE_SIZE, CROP_MARGIN * STORE_SIZE / CROP_SIZE)


def box_target(m: np.ndarray, aspect: tuple[float, float]) -> np.ndarray:
    """The classifier's box output (see :func:`vision.recognizer.refine_box`) for a crop made
    by the affine ``m`` (stored crop -> CROP_SIZE crop) from a stored crop of a tile of
    ``aspect`` (see :class:`_Crops`): the box's centre relative to the crop's centre and the
    log of its width and height, all in units of the crop's side. The box is the axis-aligned
    box of the tile's turned box, as the labelled photos' boxes are."""
    c = STORE_SIZE / 2
    half = np.array(aspect, np.float64) * (CROP_SIZE / CROP_MARGIN) / 2
    corners = np.array([[c - half[0], c - half[1]], [c + half[0], c - half[1]],
                        [c + half[0], c + half[1]], [c - half[0], c + half[1]]])  # fmt: skip
    moved = corners @ np.asarray(m, np.float64)[:, :2].T + np.asarray(m, np.float64)[:, 2]
    lo, hi = moved.min(axis=0), moved.max(axis=0)
    centre = (lo + hi) / 2 / CROP_SIZE - 0.5
    size = np.log(np.maximum(hi - lo, 1e-3) / CROP_SIZE)
    return np.concatenate([centre, size]).astype(np.float32)


def _classifier_data(
    cfg: TrainConfig,
    photos,
    pool: list[_Sample],
    rng: np.random.Generator,
    extra: _Crops | None = None,
    found: dict[Path, np.ndarray] | None = None,
) -> _Crops:
    """The classifier's training crops: every real tile (at the box in ``found`` for its
    photo where given, else at its labelled box), synthetic tiles and ``extra``; each crop's
    box teaches the box output unless it is a labelled box that ``cfg.label_box_lessons``
    leaves out."""
    from vision.training.dataset import CROWDED_LABELS, label_overlap

    crops, labels, aspects, known = [], [], [], []
    for photo in photos:
        img = photo.image()
        boxes = found.get(photo.path, photo.boxes) if found is not None else photo.boxes
        distrust = cfg.label_box_lessons == "none" or (
            cfg.label_box_lessons == "apart" and label_overlap(photo.boxes) >= CROWDED_LABELS
        )
        for box, label, own in zip(boxes, photo.labels, photo.boxes, strict=True):
            crop = _crop_from_quadless(img, box, None)
            repeat = cfg.real_flower_repeat if label >= 34 else 1
            crops.extend([crop] * repeat)
            labels.extend([int(label)] * repeat)
            aspects.extend([_aspect(box)] * repeat)
            known.extend([not (distrust and np.array_equal(box, own))] * repeat)
    n_real = len(crops)
    synth = []
    for s in pool:
        for box, label in zip(s.boxes, s.labels, strict=True):
            if box[2] < 8 or box[3] < 8:
                continue
            synth.append((s, box, int(label)))
    order = rng.permutation(len(synth))[: cfg.synth_crops_max]
    for i in order:
        s, box, label = synth[i]
        crops.append(_crop_from_quadless(s.image, box, None))
        labels.append(label)
        aspects.append(_aspect(box))
    if extra is not None and len(extra.images):
        crops.extend(extra.images)
        labels.extend(int(v) for v in extra.labels)
        aspects.extend(tuple(a) for a in extra.aspects)
    known.extend([True] * (len(crops) - len(known)))
    cfg.log(
        f"classifier data: {n_real} real crops, {len(crops) - n_real} synthetic"
        + ("" if all(known) else f"; {known.count(False)} crops teach the label only")
    )
    return _Crops(
        np.stack(crops),
        np.array(labels, np.int64),
        np.array(aspects, np.float32).reshape(-1, 2),
        np.array(known, bool),
    )


def boxes_at_found(labelled: np.ndarray, found: np.ndarray, min_iou: float = 0.4) -> np.ndarray:
    """The labelled boxes (N x 4, x y w h), each replaced by the found box (M x 4) that
    overlaps it most, pairs taken best overlap first, one found box per labelled one, at
    least ``min_iou``; a labelled box with none keeps its own."""
    out = np.array(labelled, np.float32).reshape(-1, 4).copy()
    f = np.asarray(found, np.float32).reshape(-1, 4)
    if len(out) == 0 or len(f) == 0:
        return out
    from vision.detection import box_intersections

    inter = box_intersections(out, f)
    union = out[:, 2, None] * out[:, 3, None] + f[:, 2] * f[:, 3] - inter
    iou = inter / np.maximum(union, 1e-9)
    used_l, used_f = set(), set()
    for k in np.argsort(-iou, axis=None, kind="stable"):
        i, j = divmod(int(k), len(f))
        if iou[i, j] < min_iou:
            break
        if i in used_l or j in used_f:
            continue
        used_l.add(i)
        used_f.add(j)
        out[i] = f[j]
    return out


def _found_boxes(cfg: TrainConfig, photos, finder_file: Path) -> dict[Path, np.ndarray]:
    """Per training photo, its labelled boxes with each tile the finder finds (one pass at
    640 pixels, as the recogniser's first) at the finder's box (:func:`boxes_at_found`): the
    recogniser cuts its crops at the finder's boxes, which are tighter than many labelled
    ones, so the classifier learns on crops like those it will read."""
    import onnxruntime as ort

    from vision.recognizer import decode_finder

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, cfg.threads)
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(finder_file), opts, providers=["CPUExecutionProvider"])
    out, moved = {}, 0
    for photo in photos:
        x, scale = _finder_picture(photo.image())
        hm, reg = session.run(None, {"image": x})
        found = decode_finder(hm[0], reg[0], 0.3, scale, STRIDE)
        boxes = boxes_at_found(photo.boxes, np.array([b for b, *_ in found], np.float32))
        moved += int((boxes != photo.boxes).any(axis=1).sum())
        out[photo.path] = boxes
    total = sum(len(p.boxes) for p in photos)
    cfg.log(f"classifier crops at the finder's boxes: {moved} of {total} real tiles")
    return out


def _augment_crops(
    batch: np.ndarray, aspects: np.ndarray, rng: np.random.Generator, any_tilt: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Random jitter of the crop window (as the finder's boxes wander), quarter turns, small
    rotations and colour changes; STORE_SIZE in, CROP_SIZE out; with each tile's box in its
    crop (:func:`box_target`). A share ``any_tilt`` of the crops is turned by any angle up to
    45 degrees either way instead of a small one.

    The window's scale and shift follow the finder's errors on the validation photos: its
    boxes' sides are 0.66-1.23 of the labelled ones (10th-90th percentile; too small more
    often: the tile then fills more of the crop) and their centres off by up to a tenth of a
    side."""
    out = np.empty((len(batch), CROP_SIZE, CROP_SIZE, 3), np.uint8)
    targets = np.empty((len(batch), 4), np.float32)
    c = STORE_SIZE / 2
    for i, img in enumerate(batch):
        scale = float(np.exp(np.clip(rng.normal(0.05, 0.17), -0.3, 0.45)))
        # with no share asked for, draw and frame as the committed classifier was trained
        tilt = rng.uniform(-45, 45) if any_tilt and rng.random() < any_tilt else rng.normal(0, 6)
        if any_tilt:
            # the recogniser cuts its crop around the box that holds the tilted tile, which
            # is larger than the tile: in that crop the tile looks smaller
            ct, st = abs(math.cos(math.radians(tilt))), abs(math.sin(math.radians(tilt)))
            aw, ah = (float(v) for v in aspects[i])
            scale /= max(aw * ct + ah * st, aw * st + ah * ct)
        angle = float(rng.integers(4) * 90 + tilt)
        m: np.ndarray = cv2.getRotationMatrix2D((c, c), angle, scale)  # 2x3 float64
        m[:, 2] += (CROP_SIZE / 2 - c) + rng.normal(0, 0.07 * CROP_SIZE, 2)
        warped = cv2.warpAffine(img, m, (CROP_SIZE, CROP_SIZE), borderMode=cv2.BORDER_REPLICATE)
        out[i] = _augment_colour(warped, rng)
        targets[i] = box_target(m, aspects[i])
    return out, targets


def _centre_crops(batch: np.ndarray) -> np.ndarray:
    """The middle CROP_SIZE square of stored crops: the window the recogniser crops (the
    stored crops were cut with a margin scaled up by STORE_SIZE / CROP_SIZE)."""
    o = (STORE_SIZE - CROP_SIZE) // 2
    return np.ascontiguousarray(batch[:, o : o + CROP_SIZE, o : o + CROP_SIZE])


# --------------------------------------------------------------------------------------------
# The run


BASE_HEAD_FILE = "base_head.npz"
MODEL_FILES = (FINDER_FILE, CLASSIFIER_FILE, BASE_HEAD_FILE, MANIFEST_FILE)
"""What a training run writes into its model folder (the manifest last); and the flower look
(:data:`~vision.flower_look.FLOWER_LOOK_FILE`) where it fits one."""


def train(cfg: TrainConfig) -> ModelManifest:
    """Train both models, export them to ONNX in ``cfg.out_dir`` with a ``model.json``
    manifest, and return the manifest (which includes the validation figures).

    The run works in a folder of its own beside ``cfg.out_dir`` and moves its files into
    place only once the model is trained and tuned: a run that fails or is stopped leaves
    the folder's model as it was. A folder holding an enrolled head (``head.npz``, fitted to
    another classifier's embeddings) is refused, as are reuse folders that are not models."""
    torch = _torch()  # before the folder is made: no PyTorch must leave no empty folder
    created = _check_folders(cfg)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(1, cfg.threads))
    cv2.setNumThreads(1)
    work: Path | None = None
    done = False
    try:
        work = Path(
            tempfile.mkdtemp(prefix=f".{cfg.out_dir.name}.training-", dir=cfg.out_dir.parent)
        )
        manifest = _train_into(replace(cfg, out_dir=work))
        # the old manifest goes first and the new one comes last: a run stopped while the
        # files move leaves a folder that refuses to load, never one model's finder with
        # another's settings
        (cfg.out_dir / MANIFEST_FILE).unlink(missing_ok=True)
        for name in MODEL_FILES[:-1]:
            os.replace(work / name, cfg.out_dir / name)
        # a look fitted to another classifier's embeddings would misread this one's
        if (work / FLOWER_LOOK_FILE).exists():
            os.replace(work / FLOWER_LOOK_FILE, cfg.out_dir / FLOWER_LOOK_FILE)
        else:
            (cfg.out_dir / FLOWER_LOOK_FILE).unlink(missing_ok=True)
        os.replace(work / MANIFEST_FILE, cfg.out_dir / MANIFEST_FILE)
        done = True
    except OSError as exc:
        raise ModelError(f"cannot write the model to {cfg.out_dir}: {exc}") from None
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
        if created and not done:
            shutil.rmtree(cfg.out_dir, ignore_errors=True)  # made by this run, and empty
    return manifest


def _check_folders(cfg: TrainConfig) -> bool:
    """Everything about the folders that can be checked before an hour of training: the
    model folder can be written (and is a model folder, or new, or empty), and the folders
    parts are kept from are models. Returns whether the model folder was made here."""
    from vision.recognizer import HEAD_FILE, TileRecognizer

    out = cfg.out_dir
    if out.exists() and not out.is_dir():
        raise ModelError(f"{out} is not a folder to write the model into")
    if (out / HEAD_FILE).exists():
        raise ModelError(
            f"{out} holds an enrolled model ({HEAD_FILE}), fitted to its present classifier: "
            "train into another folder, then enrol again with the new model"
        )
    try:
        held = out.is_dir() and any(out.iterdir())
    except OSError as exc:
        raise ModelError(f"cannot look into {out}: {exc.strerror or exc}") from None
    if held and not _model_files_only(out):
        try:
            ModelManifest.read(out)
        except ModelError:
            # a folder of the user's own: its model.json would be overwritten
            raise ModelError(
                f"{out} holds files and is not a model folder: train into a new or empty "
                "folder, or into a model to replace"
            ) from None
    for name in ("reuse_finder", "reuse_classifier"):
        src = getattr(cfg, name)
        if src is None:
            continue
        TileRecognizer(src)  # ModelError now, not after the data is prepared
        if (Path(src) / HEAD_FILE).exists():
            cfg.log(f"note: {src} is enrolled; its {HEAD_FILE} is not carried over")
    if cfg.reuse_classifier is not None and not (cfg.reuse_classifier / BASE_HEAD_FILE).is_file():
        raise ModelError(
            f"{cfg.reuse_classifier} has no {BASE_HEAD_FILE}, the classifier's trained last "
            "layer that enrolment refits: keep the classifier of a model trained here"
        )
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        # the run works beside the folder and moves its files into it: both must take files
        for folder in (out, out.parent):
            check_folder_takes_files(folder)
    except OSError as exc:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise ModelError(
            f"cannot write the model to {out}: {exc.strerror or exc} (at {exc.filename or out})"
        ) from None
    return created


def _model_files_only(folder: Path) -> bool:
    """Whether a folder holds nothing but a model's own files (a run stopped while moving
    them in leaves the model files without their manifest, which must not lock the folder)."""
    allowed = {*MODEL_FILES, FLOWER_LOOK_FILE, "MODEL_CARD.md", "__init__.py", "__pycache__"}
    return all(p.name in allowed or p.name.startswith(".") for p in folder.iterdir())


def _train_into(cfg: TrainConfig) -> ModelManifest:
    # the training record of each part kept from another model, read once
    kept = {
        part: _kept_training(src)
        for part, src in (("finder", cfg.reuse_finder), ("classifier", cfg.reuse_classifier))
        if src is not None
    }
    rng = np.random.default_rng(cfg.seed)
    t0 = time.time()

    train_photos = _real_photos(cfg, "train")
    val_photos = _real_photos(cfg, "validation")
    cfg.log(f"real photos: {len(train_photos)} train, {len(val_photos)} validation")
    pool = _synth_pool(cfg, rng)
    cfg.log(f"synthetic scenes: {len(pool)} in {time.time() - t0:.0f}s")
    table_samples, table_crops = _table_pool(cfg, rng)
    cfg.log(
        f"table frames: {cfg.table_frames} ({len(table_crops.labels)} tiles), "
        f"{time.time() - t0:.0f}s"
    )

    finder, finder_file = _finder_part(cfg, train_photos, val_photos, pool + table_samples, rng)
    classifier, cls_metrics = _classifier_part(
        cfg, kept, train_photos, val_photos, pool, rng, table_crops, finder_file
    )
    if cfg.reuse_finder is None:
        finder_metrics = _validate_finder(finder, val_photos, cfg)
    else:
        finder_metrics = _reuse(
            cfg.reuse_finder,
            cfg.out_dir,
            "finder",
            ((_kept_file(cfg.reuse_finder, "finder", FINDER_FILE), FINDER_FILE),),
            kept["finder"],
        )

    export_onnx(None, classifier, cfg.out_dir)  # the finder went out when it was trained
    validation = {**finder_metrics, **cls_metrics}
    manifest = _trained_manifest(cfg, kept, len(train_photos), len(val_photos), t0, validation)
    if "quantised" in kept.get("classifier", {}):
        # a kept classifier keeps its record of how it was quantised (or why not)
        manifest = manifest.with_training(quantised=kept["classifier"]["quantised"])
    manifest.write(cfg.out_dir)
    if cfg.quantise:
        quantise_model(cfg.out_dir, train_photos, val_photos, cfg)
    # on the classifier as the recogniser runs it (quantised), before the settings that
    # read through it are chosen
    fit_flower_look(
        cfg.out_dir,
        train_photos,
        val_photos,
        cfg.shared_data,
        LookConfig(
            seed=cfg.seed,
            threads=cfg.threads,
            tables=cfg.flower_look_tables,
            scenes=cfg.flower_look_scenes,
        ),
        cfg.log,
    )
    # the run-time settings are chosen on the exported model, run as the recogniser runs it
    manifest = tune(cfg.out_dir, val_photos, cfg.threads, cfg.log, cfg.tune_table_frames)
    manifest = manifest.with_training(seconds=round(time.time() - t0))
    manifest.write(cfg.out_dir)
    cfg.log(f"done in {time.time() - t0:.0f}s: {manifest.training['validation']}")
    return manifest


def _finder_part(cfg: TrainConfig, train_photos, val_photos, scenes, rng) -> tuple[Any, Path]:
    """The finder trained (and exported at once) on ``scenes`` and the photos it fits, or
    None where it is kept from another model; and the finder file in use."""
    if cfg.reuse_finder is not None:
        return None, _kept_file(cfg.reuse_finder, "finder", FINDER_FILE)
    finder_photos = _fitting_photos(cfg, train_photos)
    finder = _train_finder(cfg, finder_photos, val_photos, scenes, rng)
    # exported now: the classifier's real crops are cut where this finder finds the tiles
    export_onnx(finder, None, cfg.out_dir)
    return finder, cfg.out_dir / FINDER_FILE


def _classifier_part(
    cfg: TrainConfig,
    kept: dict[str, dict[str, Any]],
    train_photos,
    val_photos,
    pool,
    rng,
    table_crops,
    finder_file: Path,
) -> tuple[Any, dict[str, Any]]:
    """The classifier trained, with its validation figures; or None and the kept one's
    figures, its files copied in."""
    if cfg.reuse_classifier is None:
        # the validation crops too: the epoch kept is the one that reads such crops best
        found = (
            _found_boxes(cfg, train_photos + val_photos, finder_file)
            if cfg.crops_at_found_boxes
            else None
        )
        return _train_classifier(cfg, train_photos, val_photos, pool, rng, table_crops, found)
    return None, _reuse(
        cfg.reuse_classifier,
        cfg.out_dir,
        "classifier",
        (
            (_kept_file(cfg.reuse_classifier, "classifier", CLASSIFIER_FILE), CLASSIFIER_FILE),
            (cfg.reuse_classifier / BASE_HEAD_FILE, BASE_HEAD_FILE),
        ),
        kept["classifier"],
    )


def _trained_manifest(
    cfg: TrainConfig,
    kept: dict[str, dict[str, Any]],
    train_photos: int,
    val_photos: int,
    t0: float,
    validation: dict[str, Any],
) -> ModelManifest:
    """The manifest of the model as trained, before :func:`tune` chooses its run-time
    settings."""
    return ModelManifest(
        finder=FINDER_FILE,
        classifier=CLASSIFIER_FILE,
        stride=STRIDE,
        crop_size=CROP_SIZE,
        crop_margin=CROP_MARGIN,
        finder_input=640,
        finder_threshold=0.4,
        min_confidence=0.6,
        back_threshold=0.85,
        labels=LABEL_NAMES,
        training={
            "config": _config_record(cfg, kept),
            "real_train_photos": train_photos,
            "real_validation_photos": val_photos,
            "seconds": round(time.time() - t0),
            "validation": validation,
        },
    )


def quantise_model(
    model_dir: Path, train_photos, check_photos, cfg: TrainConfig, *, keep_float: bool = True
) -> dict[str, Any] | None:
    """Quantise ``model_dir``'s classifier (:func:`vision.training.quantise.quantise_classifier`):
    the activation ranges from ``cfg.quantise_photos`` of ``train_photos`` and
    ``cfg.quantise_tables`` rendered tables, the check on the labelled tiles of
    ``check_photos`` (or, with none, of rendered tables of another seed). A classifier
    quantised already is left as it is (None). With ``keep_float`` (a training run: its hours
    are not thrown away for this) a quantisation that fails for any reason or reads worse
    leaves the float classifier, and the manifest's ``training.quantised`` says why; without
    it the error is raised. The record is returned either way."""
    from vision.training import quantise as q

    try:
        if q.is_quantised(q.classifier_path(model_dir)):
            cfg.log("the classifier is quantised already: kept as it is")
            return None
        faces = face_sets(cfg.shared_data)
        calibration = q.labelled_pictures(
            train_photos, cfg.quantise_photos, faces, cfg.quantise_tables, q.CALIBRATION_SEED
        )
        tables = 0 if check_photos else max(2, cfg.quantise_tables)
        check = q.labelled_pictures(
            check_photos, len(check_photos), faces, tables, q.CALIBRATION_SEED + 1
        )
        return q.quantise_classifier(model_dir, calibration, check, log=cfg.log)
    except Exception as exc:  # onnxruntime's own errors and MemoryError too: see keep_float
        if not keep_float:
            raise
        if isinstance(exc, q.QuantisationRefused):
            reason, figures = str(exc), exc.figures
        else:
            reason, figures = f"quantising failed ({exc}): the float classifier is kept", {}
        cfg.log(reason)
        record = {"refused": reason, **figures}
        ModelManifest.read(model_dir).with_training(quantised=record).write(model_dir)
        return record


FINDER_SETTINGS = (
    "finder_size",
    "finder_batch",
    "finder_epochs",
    "finder_steps",
    "finder_lr",
    "mask_unlabelled",
    "finder_max_label_overlap",
    "finder_stretch",
    "finder_deep_width",
)
"""The :class:`TrainConfig` fields that shape only the finder."""

CLASSIFIER_SETTINGS = (
    "classifier_epochs",
    "classifier_batch",
    "classifier_lr",
    "synth_crops_max",
    "real_flower_repeat",
    "crops_at_found_boxes",
    "classifier_any_tilt",
    "label_box_lessons",
)
"""The :class:`TrainConfig` fields that shape only the classifier."""


def _config_record(cfg: TrainConfig, kept: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The training configuration for the manifest. A part kept from another model is
    described by that model's own settings (``kept``: its manifest's training record), not by
    this run's, which did not train it; ``finder_from`` / ``classifier_from`` name the folder
    it came from."""
    out = {
        k: (str(v) if isinstance(v, Path) else v)
        for k, v in asdict(cfg).items()
        if k not in ("log", "shared_data", "out_dir", "reuse_finder", "reuse_classifier")
    }
    for src, part, keys in (
        (cfg.reuse_finder, "finder", FINDER_SETTINGS),
        (cfg.reuse_classifier, "classifier", CLASSIFIER_SETTINGS),
    ):
        if src is None:
            continue
        old_config = kept[part].get("config", {})
        for k in keys:
            out[k] = old_config.get(k)  # None: the kept model's manifest does not say
        out[f"{part}_from"] = str(src)
    return out


def _kept_training(src: Path) -> dict[str, Any]:
    """The training record (``training`` in ``model.json``) of a model a part is kept from."""
    return ModelManifest.read(Path(src)).training


def _kept_file(src: Path, key: str, default: str) -> Path:
    """The file the kept model's manifest names for ``key`` (not a stale file of the default
    name that may lie beside it)."""
    return ModelManifest.read(Path(src)).file(
        Path(src), "finder" if key == "finder" else "classifier"
    )


def _reuse(
    src: Path,
    out_dir: Path,
    part: str,
    files: tuple[tuple[Path, str], ...],
    training: dict[str, Any],
) -> dict[str, Any]:
    """Copy a kept part's ``files`` (each a source path and the name it takes here) into
    ``out_dir`` and return that part's validation figures from its training record (the
    keys starting with ``part``; none where the kept model's manifest has no record)."""
    for path, name in files:
        shutil.copy2(path, out_dir / name)
    figures = training.get("validation")
    if not isinstance(figures, dict):
        return {}
    return {k: v for k, v in figures.items() if k.startswith(part)}


THRESHOLDS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
"""The finder thresholds tried on the validation photos; the best tile-level F1 wins."""

RESCALES: tuple[tuple[float, float] | None, ...] = (
    (57.6, 36.0),
    (72.0, 48.0),
    (72.0, 56.0),
    (88.0, 56.0),
    (88.0, 72.0),
    None,
)
"""The close-up second looks tried on the validation photos after the threshold:
``(rescale_above, rescale_to)`` in finder pixels (see :meth:`TileRecognizer.find`), ``None``
for none."""


REREADS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95)
"""The confidences under which a tile is read again in its four quarter turns (see
:attr:`TileRecognizer.reread_below`), tried on the validation photos last; 0 for never."""


BOX_SCALES = (0.88, 0.9, 0.92, 0.94, 0.96, 0.98, 1.0)
"""The factors the reported boxes' sides are scaled by (see
:attr:`TileRecognizer.box_scale`) tried on the validation photos whose labels stay apart,
after the other settings: the model's boxes come out a little larger than the tile (the
crowded photos' labels, which take in the neighbours, teach them too), never smaller."""


def _rescale_name(rescale: tuple[float, float] | None) -> str:
    return "off" if rescale is None else f"{rescale[0]:g}/{rescale[1]:g}"


TUNE_TABLE_SEED = 2
"""The rendered tables :func:`tune` runs on: not the benchmark's (seed 0, and the 30 tables
of seed 1 that ``docs/benchmarks.md`` gives beside them), so those stay unseen."""

TABLE_SLACK = 0.005
"""How much rendered-table meld accuracy a finder threshold may give up against the best
threshold's and still be chosen for the photos' sake: none to speak of."""


def tune(
    model_dir: Path,
    val_photos,
    threads: int = 2,
    log: Callable[[str], None] = print,
    table_frames: int = 20,
) -> ModelManifest:
    """Choose a model's run-time settings on the validation photos and write them into its
    ``model.json``: first the finder threshold (of :data:`THRESHOLDS`), then the close-up
    second look (of :data:`RESCALES`), then the confidence under which a tile is read again
    turned (of :data:`REREADS`), each the one of best tile-level F1 (right box and right
    label; detections outside a photo's labelled area not counted, see
    :func:`vision.training.dataset.labelled_area`), the model run as the recogniser runs it;
    then the scale of the reported boxes (of :data:`BOX_SCALES`), by the F1 over the
    photos whose labelled boxes stay apart (:data:`~vision.training.dataset.CROWDED_LABELS`:
    the labels that take in their neighbours are larger than any tile, and would pull the
    boxes off the tiles). The F1
    of each setting tried goes into ``training.validation``. Last, with the settings chosen,
    the confidence calibration is fitted on the same photos
    (:func:`vision.training.confidence_fit.calibrate`). Without validation photos the
    threshold is 0.4 and the second look the recogniser's default. Returns the manifest.

    The threshold must also serve the table itself: each is run on ``table_frames`` rendered
    tables through the table pipeline (:func:`vision.training.table_eval.run`, seed
    :data:`TUNE_TABLE_SEED`: other tables than the benchmark's), and only thresholds whose
    meld accuracy there is within :data:`TABLE_SLACK` of the best are eligible. (Photos alone
    chose 0.5 for the committed model, which read 91 % of the benchmark tables' melds against
    100 % at 0.35.) Table frames never take the close-up second look, so it is chosen on the
    photos alone."""
    from vision.recognizer import TileRecognizer
    from vision.training.confidence_fit import calibrate

    # one recogniser, its settings changed between runs: the models load once; its raw
    # probabilities reported, as the settings compare them (a detection's confidence orders
    # the matching that scores it)
    rec = TileRecognizer(model_dir, threads=threads, temperature=1.0)
    manifest = rec.manifest
    if not val_photos:
        manifest = replace(manifest, finder_threshold=0.4)
        manifest.write(model_dir)
        return manifest
    trials = _TuningTrials(rec, val_photos, table_frames)
    threshold, by_t, table = _tune_threshold(trials, log)
    rescale, by_r = _tune_rescale(trials, threshold, by_t[threshold], log)
    reread, by_u, table_u = _tune_reread(
        trials, threshold, rescale, by_r[_rescale_name(rescale)], table[threshold], log
    )
    box_scale, by_s = _tune_box_scale(trials, threshold, rescale, reread, log)
    # without a second look its numbers are left out of model.json (ModelManifest.to_json)
    manifest = replace(
        manifest,
        finder_threshold=threshold,
        reread_below=reread,
        rescale=rescale is not None,
        box_scale=box_scale,
    )
    if rescale is not None:
        manifest = replace(manifest, rescale_above=rescale[0], rescale_to=rescale[1])
    # fitted last: the probabilities it calibrates are the ones the chosen settings give
    temperature, calibration = calibrate(
        trials.set_up(threshold, rescale, reread, box_scale), val_photos, trials.images, log
    )
    at_scale = (
        by_u[reread]
        if box_scale == trials.start_box_scale
        else trials.scores(threshold, rescale, reread, box_scale)
    )
    if temperature is not None:
        manifest = replace(manifest, confidence_temperature=temperature)
    validation = {
        **manifest.training.get("validation", {}),
        "tile_f1": at_scale[0],
        "tile_f1_every_detection": at_scale[1],
        "tile_f1_by_threshold": {str(k): v[0] for k, v in by_t.items()},
        "table_meld_accuracy_by_threshold": {str(k): v for k, v in table.items()},
        "tile_f1_by_rescale": {k: v[0] for k, v in by_r.items()},
        "tile_f1_by_reread": {str(u): v[0] for u, v in by_u.items()},
        "table_meld_accuracy_by_reread": {str(u): v for u, v in table_u.items()},
        "tile_f1_labels_apart_by_box_scale": {str(k): v for k, v in by_s.items()},
        **calibration,
    }
    manifest = manifest.with_training(validation=validation)
    manifest.write(model_dir)
    return manifest


_Rescale = tuple[float, float] | None
"""A close-up second look, ``(rescale_above, rescale_to)``, or None for none."""


class _TuningTrials:
    """One recogniser run on the validation photos and on rendered tables with the settings
    :func:`tune` tries, each figure rounded as it is recorded."""

    def __init__(self, rec: TileRecognizer, val_photos, table_frames: int) -> None:
        self.rec = rec
        self.val_photos = val_photos
        self.table_frames = table_frames
        self.images = [p.image() for p in val_photos]
        # the settings the model came with: kept where nothing beats them
        self.start: _Rescale = (rec.rescale_above, rec.rescale_to) if rec.rescale else None
        self.start_reread = rec.reread_below
        self.start_box_scale = rec.box_scale

    def set_up(
        self,
        threshold: float,
        rescale: _Rescale,
        reread: float | None = None,
        box_scale: float | None = None,
    ) -> TileRecognizer:
        rec = self.rec
        rec.finder_threshold = threshold
        rec.reread_below = self.start_reread if reread is None else reread
        rec.box_scale = self.start_box_scale if box_scale is None else box_scale
        rec.rescale = rescale is not None
        if rescale is not None:
            rec.rescale_above, rec.rescale_to = rescale
        return rec

    def scores(
        self,
        threshold: float,
        rescale: _Rescale,
        reread: float | None = None,
        box_scale: float | None = None,
    ) -> tuple[float, float]:
        """Tile F1 on the photos: in their labelled areas, and of every detection."""
        from vision.training.dataset import tile_f1

        found = self.predictions(threshold, rescale, reread, box_scale)
        pairs = list(zip(found, self.val_photos, strict=True))
        area = tile_f1(pairs, labelled_area_only=True)["f1"]
        return round(area, 4), round(tile_f1(pairs)["f1"], 4)

    def predictions(
        self,
        threshold: float,
        rescale: _Rescale,
        reread: float | None = None,
        box_scale: float | None = None,
    ) -> list[list[tuple[Box, int, float]]]:
        """Every photo's detections as the scoring takes them."""
        found = self.set_up(threshold, rescale, reread, box_scale)
        return [[(d.box, d.label, d.confidence) for d in found.detect(im)] for im in self.images]

    def melds(self, threshold: float, reread: float | None = None) -> float:
        """Meld accuracy on the rendered tables."""
        from vision.training.table_eval import run as table_run

        # table frames never take the close-up second look: the photos' one stands
        found = self.set_up(threshold, self.start, reread)
        return round(
            table_run(found, frames=self.table_frames, seed=TUNE_TABLE_SEED)["meld_accuracy"], 4
        )


def _tune_threshold(
    trials: _TuningTrials, log: Callable[[str], None]
) -> tuple[float, dict[float, tuple[float, float]], dict[float, float]]:
    """The finder threshold of best photo F1 of those that read the tables about as well as
    the best, with each threshold's photo scores and table meld accuracy."""
    by_t = {t: trials.scores(t, trials.start) for t in THRESHOLDS}
    table = {t: trials.melds(t) for t in THRESHOLDS}
    eligible = [t for t in THRESHOLDS if table[t] >= max(table.values()) - TABLE_SLACK]
    threshold = max(eligible, key=lambda t: (by_t[t][0], -abs(t - 0.4)))
    log(
        f"tile F1 on the validation photos by finder threshold (labelled area, second look "
        f"{_rescale_name(trials.start)}): { {t: v[0] for t, v in by_t.items()} }; meld "
        f"accuracy on {trials.table_frames} rendered tables: {table}; using {threshold}"
    )
    return threshold, by_t, table


def _tune_rescale(
    trials: _TuningTrials,
    threshold: float,
    at_start: tuple[float, float],
    log: Callable[[str], None],
) -> tuple[_Rescale, dict[str, tuple[float, float]]]:
    """The close-up second look of best photo F1 at ``threshold``, with each one's scores by
    name (``at_start``: the scores of the model's own, measured already)."""
    by_r = {
        _rescale_name(r): at_start if r == trials.start else trials.scores(threshold, r)
        for r in RESCALES
    }
    # a tie keeps the setting the model had (nothing gained), else the earlier one
    rescale = max(RESCALES, key=lambda r: (by_r[_rescale_name(r)][0], r == trials.start))
    name = _rescale_name(rescale)
    log(
        f"tile F1 by the close-up second look (rescale_above/rescale_to): "
        f"{ {k: v[0] for k, v in by_r.items()} }; using {name} "
        f"(every detection counted: {by_r[name][1]})"
    )
    return rescale, by_r


def _tune_reread(
    trials: _TuningTrials,
    threshold: float,
    rescale: _Rescale,
    at_start: tuple[float, float],
    table_at_start: float,
    log: Callable[[str], None],
) -> tuple[float, dict[float, tuple[float, float]], dict[float, float]]:
    """The reread confidence of best photo F1 of those that read the tables about as well as
    the best, with each one's photo scores and table meld accuracy (``at_start`` and
    ``table_at_start``: the model's own, measured already)."""
    start = trials.start_reread
    by_u = {u: at_start if u == start else trials.scores(threshold, rescale, u) for u in REREADS}
    # rereading changes table frames' readings too: held to the threshold's table rule
    table_u = {u: table_at_start if u == start else trials.melds(threshold, u) for u in REREADS}
    fit = [u for u in REREADS if table_u[u] >= max(table_u.values()) - TABLE_SLACK]
    # a tie takes the fewer rereads: the same reading for less time
    reread = max(fit, key=lambda u: (by_u[u][0], -u))
    log(
        f"tile F1 by the confidence under which a tile is read again turned: "
        f"{ {u: v[0] for u, v in by_u.items()} }; meld accuracy on {trials.table_frames} "
        f"rendered tables: {table_u}; using {reread} (every detection counted: "
        f"{by_u[reread][1]})"
    )
    return reread, by_u, table_u


def _tune_box_scale(
    trials: _TuningTrials,
    threshold: float,
    rescale: _Rescale,
    reread: float,
    log: Callable[[str], None],
) -> tuple[float, dict[float, float]]:
    """The scale of the reported boxes of best F1 over the labelled areas of the validation
    photos whose labels stay apart, with each scale's F1 there. The boxes are scaled after
    reading, so the photos are read once; the rendered tables are not run, as the table
    pipeline asks for each outline as found (:class:`vision.pipeline.Recognizer`) and reads
    them alike at every scale."""
    from vision.detection import scale_box
    from vision.training.dataset import CROWDED_LABELS, label_overlap, tile_f1

    start = trials.start_box_scale
    preds = trials.predictions(threshold, rescale, reread, 1.0)
    apart = [
        (found, photo)
        for found, photo in zip(preds, trials.val_photos, strict=True)
        if label_overlap(photo.boxes) < CROWDED_LABELS
    ]
    if not apart:
        log(
            "no validation photo has labels that stay apart to fit the scale of the reported "
            f"boxes on: the model keeps its {start}"
        )
        return start, {}
    by_s = {
        s: round(
            tile_f1(
                [([(scale_box(b, s), k, c) for b, k, c in found], photo) for found, photo in apart],
                labelled_area_only=True,
            )["f1"],
            4,
        )
        for s in BOX_SCALES
    }
    # a tie keeps the model's scale (nothing gained), else takes the nearer the boxes as found
    box_scale = max(BOX_SCALES, key=lambda s: (by_s[s], s == start, s))
    log(
        f"tile F1 on the {len(apart)} validation photos whose labels stay apart, by the scale "
        f"of the reported boxes: {by_s}; using {box_scale}"
    )
    return box_scale, by_s


def _train_finder(cfg: TrainConfig, photos, val_photos, pool, rng):
    torch = _torch()
    model = build_finder(cfg.finder_deep_width)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.finder_lr, weight_decay=1e-4)
    total = cfg.finder_epochs * cfg.finder_steps
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.finder_lr, total_steps=max(1, total))
    size = cfg.finder_size
    step = 0
    for epoch in range(cfg.finder_epochs):
        model.train()
        t = time.time()
        losses = []
        for _ in range(cfg.finder_steps):
            samples = []
            for _ in range(cfg.finder_batch):
                if photos and rng.random() < 0.55:
                    photo = photos[int(rng.integers(len(photos)))]
                    s = _real_finder_sample(
                        photo, size, rng, cfg.mask_unlabelled, cfg.finder_stretch
                    )
                else:
                    s = pool[int(rng.integers(len(pool)))]
                    k = int(rng.integers(4))
                    img, boxes = _rot90(s.image, s.boxes, k)
                    angles = s.angles + k * (-math.pi / 2)  # counter-clockwise quarter turns
                    s = _Sample(np.ascontiguousarray(img), boxes, angles, s.labels)
                s = s.with_image(_augment_colour(s.image, rng))
                samples.append(s)
            imgs, t_hm, known, ind, t_reg, mask, amask = _finder_batch(samples, size)
            hm, reg = model(imgs)
            loss, parts = _finder_loss(hm, reg, t_hm, known, ind, t_reg, mask, amask)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            sched.step()
            step += 1
            losses.append(parts)
        mean = {k: round(float(np.mean([p[k] for p in losses])), 3) for k in losses[0]}
        cfg.log(f"finder epoch {epoch + 1}/{cfg.finder_epochs} {time.time() - t:.0f}s {mean}")
    model.eval()
    return model


def _validate_finder(model, photos, cfg: TrainConfig) -> dict[str, float]:
    """Tile-finding precision/recall/F1 (IoU >= 0.5, any label) on validation photos."""
    if not photos:
        return {}
    torch = _torch()
    from vision.detection import box_iou
    from vision.recognizer import decode_finder

    model.eval()
    tp = fp = fn = 0
    with torch.no_grad():
        for photo in photos:
            x, scale = _finder_picture(photo.image())
            hm, reg = model(torch.from_numpy(x))
            found = decode_finder(torch.sigmoid(hm).numpy()[0], reg.numpy()[0], 0.3, scale)
            matched = set()
            for box, *_ in found:
                best, bj = 0.0, -1
                for j, gt in enumerate(photo.boxes):
                    if j in matched:
                        continue
                    iou = box_iou(box, tuple(gt))
                    if iou > best:
                        best, bj = iou, j
                if best >= 0.5:
                    matched.add(bj)
                    tp += 1
                else:
                    fp += 1
            fn += len(photo.boxes) - len(matched)
    p = tp / max(1, tp + fp)
    r = tp / max(1, tp + fn)
    f1 = 2 * p * r / max(1e-9, p + r)
    cfg.log(f"finder validation: precision {p:.3f} recall {r:.3f} F1 {f1:.3f}")
    return {
        "finder_precision": round(p, 4),
        "finder_recall": round(r, 4),
        "finder_f1": round(f1, 4),
    }


def _mult32(v: float) -> int:
    return max(32, round(v / 32) * 32)


def _finder_picture(img: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """A photo as the finder's input (1x3xHxW float32, 640 on its longer side, both sides
    multiples of 32) and the scale back to the photo's pixels, as the recogniser's first
    look takes it."""
    h, w = img.shape[:2]
    s = 640 / max(h, w)
    nw, nh = _mult32(w * s), _mult32(h * s)
    small = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
    x = np.ascontiguousarray(small.transpose(2, 0, 1)[None], dtype=np.float32)
    return x, (w / nw, h / nh)


def _train_classifier(cfg: TrainConfig, photos, val_photos, pool, rng, extra=None, found=None):
    torch = _torch()
    data = _classifier_data(cfg, photos, pool, rng, extra, found)
    x_all, y_all = data.images, data.labels
    if val_photos:
        val = _classifier_data(
            replace(cfg, synth_crops_max=0, real_flower_repeat=1), val_photos, [], rng, None, found
        )
        vx, vy = _centre_crops(val.images), val.labels
        # the box output is judged on windows as the finder's boxes give them: jittered
        # (the same jitter every epoch)
        bx, bt = _augment_crops(val.images, val.aspects, np.random.default_rng(1))
    else:
        vx, vy = np.zeros((0, CROP_SIZE, CROP_SIZE, 3), np.uint8), np.zeros(0, np.int64)
        bx, bt = vx, np.zeros((0, 4), np.float32)
    model = build_classifier()
    # flowers and backs are rare in the photos: weight the classes towards balance
    counts = np.bincount(y_all, minlength=NUM_LABELS).astype(np.float64)
    weights = torch.tensor(
        np.clip((counts.mean() / np.maximum(counts, 1)) ** 0.5, 0.5, 3.0), dtype=torch.float32
    )
    loss_fn = torch.nn.CrossEntropyLoss(weight=weights, label_smoothing=0.05)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.classifier_lr, weight_decay=5e-4)
    steps = max(1, math.ceil(len(x_all) / cfg.classifier_batch))
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, cfg.classifier_lr, total_steps=cfg.classifier_epochs * steps
    )
    best_acc, best_state = -1.0, None
    metrics: dict[str, float] = {}
    for epoch in range(cfg.classifier_epochs):
        model.train()
        t = time.time()
        order = rng.permutation(len(x_all))
        losses = []
        for b in range(steps):
            idx = order[b * cfg.classifier_batch : (b + 1) * cfg.classifier_batch]
            xb, tb = _augment_crops(x_all[idx], data.aspects[idx], rng, cfg.classifier_any_tilt)
            logits, _, box = model(torch.from_numpy(xb.astype(np.float32).transpose(0, 3, 1, 2)))
            # (_classifier_data marks every crop; no mask would mean every box teaches)
            known = None if data.box_known is None else data.box_known[idx]
            loss = loss_fn(logits, torch.from_numpy(y_all[idx])) + BOX_WEIGHT * _box_loss(
                torch, box, tb, known
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
        acc, flower_acc = _classifier_accuracy(model, vx, vy)
        box_iou = _box_iou(model, bx, bt)
        cfg.log(
            f"classifier epoch {epoch + 1}/{cfg.classifier_epochs} {time.time() - t:.0f}s "
            f"loss {np.mean(losses):.3f} val acc {acc:.4f} flowers {flower_acc:.4f} "
            f"box IoU {box_iou:.3f}"
        )
        if acc >= best_acc:
            best_acc = acc
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
            metrics = {
                "classifier_accuracy": round(acc, 4),
                "classifier_flower_accuracy": round(flower_acc, 4),
                "classifier_box_iou": round(box_iou, 4),
                "classifier_epoch": epoch + 1,
            }
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return model, metrics


BOX_WEIGHT = 4.0
"""The box output's share of the classifier's loss (its smooth L1 beside cross entropy)."""


def _box_loss(torch, box, targets: np.ndarray, known: np.ndarray | None):
    """Smooth L1 of the box output against ``targets``, over the crops whose box is
    ``known`` (all when ``None``); zero when none is."""
    per = torch.nn.functional.smooth_l1_loss(
        box, torch.from_numpy(targets), beta=0.05, reduction="none"
    ).mean(dim=1)
    if known is None:
        return per.mean()
    mask = torch.from_numpy(known.astype(np.float32))
    return (per * mask).sum() / mask.sum().clamp(min=1.0)


def _box_iou(model, bx: np.ndarray, bt: np.ndarray) -> float:
    """Mean IoU of the classifier's boxes with the true ones on jittered validation crops."""
    if len(bx) == 0:
        return 0.0
    torch = _torch()
    model.eval()
    with torch.no_grad():
        out = np.concatenate([
            model(torch.from_numpy(bx[b : b + 256].astype(np.float32).transpose(0, 3, 1, 2)))[2]
            .numpy()
            for b in range(0, len(bx), 256)
        ])  # fmt: skip

    from vision.detection import box_iou

    def xywh(t: np.ndarray) -> tuple[float, float, float, float]:
        w, h = np.exp(t[2:])
        return (float(t[0] - w / 2), float(t[1] - h / 2), float(w), float(h))

    return float(np.mean([box_iou(xywh(a), xywh(b)) for a, b in zip(out, bt, strict=True)]))


def _classifier_accuracy(model, vx: np.ndarray, vy: np.ndarray) -> tuple[float, float]:
    if len(vx) == 0:
        return 0.0, 0.0
    torch = _torch()
    model.eval()
    preds = []
    with torch.no_grad():
        for b in range(0, len(vx), 256):
            xb = vx[b : b + 256].astype(np.float32).transpose(0, 3, 1, 2)
            preds.append(model(torch.from_numpy(xb))[0].argmax(1).numpy())
    pred = np.concatenate(preds)
    flowers = vy >= 34
    acc = float((pred == vy).mean())
    facc = float((pred[flowers] == vy[flowers]).mean()) if flowers.any() else 0.0
    return acc, facc


# --------------------------------------------------------------------------------------------
# Export


def export_onnx(finder, classifier, out_dir: Path) -> None:
    """Write ``finder.onnx`` (input ``image`` 1x3xHxW BGR 0-255; outputs ``heatmap`` after the
    sigmoid and ``regression``) and ``classifier.onnx`` (input ``crops`` Nx3x48x48; outputs
    ``logits``, ``embedding`` and ``box``, see :func:`box_target`)."""
    torch = _torch()
    out_dir.mkdir(parents=True, exist_ok=True)

    # torch is imported at run time (it is optional): mypy cannot take a local's class as a base
    class FinderOut(torch.nn.Module):  # type: ignore[name-defined]
        def __init__(self, m) -> None:
            super().__init__()
            self.m = m

        def forward(self, x):
            hm, reg = self.m(x)
            return torch.sigmoid(hm), torch.cat([reg[:, :4], torch.tanh(reg[:, 4:])], 1)

    # the TorchScript exporter is chosen on purpose: the dynamo one needs onnxscript, and these
    # plain convolutional networks export the same either way. It puts the exported module
    # back in the training mode it found it in, submodules included: the wrapper is made in
    # eval mode so the finder inside is not handed back in training mode (BatchNorm would then
    # use each picture's own statistics in any later torch-side use, as the validation does).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if finder is not None:
            finder.eval()
            torch.onnx.export(
                FinderOut(finder).eval(),
                (torch.zeros(1, 3, 320, 320),),
                str(out_dir / FINDER_FILE),
                input_names=["image"],
                output_names=["heatmap", "regression"],
                dynamic_axes={"image": {2: "height", 3: "width"}},
                opset_version=17,
                dynamo=False,
            )
        if classifier is not None:
            classifier.eval()
            torch.onnx.export(
                classifier,
                (torch.zeros(2, 3, CROP_SIZE, CROP_SIZE),),
                str(out_dir / CLASSIFIER_FILE),
                input_names=["crops"],
                output_names=["logits", "embedding", "box"],
                dynamic_axes={
                    "crops": {0: "n"},
                    "logits": {0: "n"},
                    "embedding": {0: "n"},
                    "box": {0: "n"},
                },
                opset_version=17,
                dynamo=False,
            )
    if classifier is not None:
        # the trained last layer, which enrolment refits without PyTorch
        np.savez(
            out_dir / "base_head.npz",
            weight=classifier.head.weight.detach().numpy().T.astype(np.float32),
            bias=classifier.head.bias.detach().numpy().astype(np.float32),
        )


def default_threads() -> int:
    """Two threads, or fewer on a smaller machine."""
    return max(1, min(2, os.cpu_count() or 1))
