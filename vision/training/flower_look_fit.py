"""Fitting a model's flower look (:mod:`vision.flower_look`) and choosing when it is taken.

The look learns from the model's own classifier, run as the recogniser runs it: each
training photo's tiles are found, and every labelled flower, and every other tile the
classifier gives some chance of being a flower (the look's "not a flower" lessons; a share of
the rest too), is read at the box it was found at (at its labelled box where it was not
found), in its two views, three times (once as found, twice shifted and scaled a little, as
found boxes wander). Rendered tables and scenes add the procedural and public-domain flowers,
so the simulated table reads its flowers as before. The network is fitted with PyTorch (the
``train`` extra) and saved as plain arrays, which the recogniser runs with numpy.

Then ``flower_look_above`` is chosen on the validation photos: of :data:`LOOK_ABOVE`, the one
of best flower F1 (labelled area, IoU >= 0.5), ties to the larger (fewer tiles looked at);
the figures without the look and at each setting go into ``training.flower_look``. Last the
confidence calibration is fitted again, on the probabilities the look now gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from controller.errors import ModelError
from vision.detection import Box
from vision.flower_look import (
    CLASSES,
    FLOWER_LOOK_FILE,
    VIEWS,
    FlowerLook,
    file_digest,
    flower_chance,
)
from vision.labels import BACK, FLOWER_LABELS
from vision.model_manifest import ModelManifest

LOOK_ABOVE = (0.05, 0.1, 0.2, 0.35, 0.5)
"""The ``flower_look_above`` settings tried."""
HARD = 0.005
"""A tile that is not a flower teaches "not a flower" when the classifier gives it at least
this chance of being one (and at random, :attr:`LookConfig.other_share` of the rest)."""


@dataclass(frozen=True)
class LookConfig:
    """What one fit of the look does."""

    seed: int = 0
    tables: int = 60
    """Rendered table frames whose tiles it learns from."""
    scenes: int = 300
    """Rendered scenes (rows, grids, scattered tiles; the art sets) it learns from."""
    other_share: float = 0.08
    """The share of the other tiles, not already taught, that teach "not a flower"."""
    views_per_tile: int = 3
    hidden: int = 256
    epochs: int = 40
    threads: int = 2
    min_flowers: int = 40
    """Fewer flower tiles to learn from than this fit no look (a tiny training run)."""


@dataclass
class _Lessons:
    boxes: list[Box]
    labels: list[int]  # 0-7 a flower, 8 not one


def _jitter(box: Box, rng: np.random.Generator) -> Box:
    x, y, w, h = box
    s = float(np.exp(rng.normal(0, 0.08)))
    dx, dy = rng.normal(0, 0.05, 2) * (w, h)
    return (x + w / 2 + dx - w * s / 2, y + h / 2 + dy - h * s / 2, w * s, h * s)


def _lessons(
    truths: Sequence[tuple[Box, int, float]], cfg: LookConfig, rng: np.random.Generator
) -> _Lessons:
    """The views to learn from for tiles ``(box, label, classifier's chance of a flower)``."""
    out = _Lessons([], [])
    for box, label, flower_p in truths:
        if label == BACK:
            continue
        if label in FLOWER_LABELS:
            target = label - FLOWER_LABELS[0]
        elif flower_p >= HARD or rng.random() < cfg.other_share:
            target = CLASSES - 1
        else:
            continue
        for k in range(cfg.views_per_tile):
            out.boxes.append(box if k == 0 else _jitter(box, rng))
            out.labels.append(target)
    return out


def _photo_truths(rec, photo) -> list[tuple[Box, int, float]]:
    """Each labelled tile of a photo at the box the recogniser found it at (its labelled box
    where it found none), with the classifier's chance of its being a flower there."""
    from vision.training.train import boxes_at_found

    found = rec.detect_with_probabilities(photo.image(), as_found=True)
    got = np.array([t.box for t, _ in found], np.float32).reshape(-1, 4)
    chance = [0.0 if p is None else float(flower_chance(p)) for _, p in found]
    out: list[tuple[Box, int, float]] = []
    for box, label in zip(boxes_at_found(photo.boxes, got), photo.labels, strict=True):
        same = np.flatnonzero((got == box).all(axis=1))
        x, y, w, h = (float(v) for v in box)
        out.append(((x, y, w, h), int(label), chance[same[0]] if len(same) else 0.0))
    return out


def learning_set(
    rec, photos, shared_data: Path | None, cfg: LookConfig, log: Callable[[str], None] = print
) -> tuple[np.ndarray, np.ndarray]:
    """The look's features (N x 2E) and targets (N; 0-7 the flowers, 8 not a flower) from the
    training ``photos`` and rendered tables and scenes, read by ``rec`` (its look off)."""
    from vision.training.synth import random_scene, table_frame
    from vision.training.train import face_sets

    rng = np.random.default_rng(cfg.seed)
    feats, targets = [], []

    def add(image: np.ndarray, truths) -> None:
        lessons = _lessons(truths, cfg, rng)
        if lessons.boxes:
            feats.append(rec.look_features(image, lessons.boxes))
            targets.extend(lessons.labels)

    for photo in photos:
        add(photo.image(), _photo_truths(rec, photo))
    real = len(targets)
    faces = face_sets(shared_data)
    for _ in range(cfg.tables):
        frame = table_frame(rng, faces)
        add(frame.image, [(t.box, t.label, 0.0) for t in frame.truths])
    for _ in range(cfg.scenes):
        scene = random_scene(rng, faces, size=(320, 320), tile_width=(20.0, 70.0))
        add(scene.image, [(t.box, t.label, 0.0) for t in scene.tiles])
    y = np.array(targets, np.int64)
    log(
        f"flower look: {real} views from {len(photos)} photos, {len(y) - real} rendered; "
        f"{int((y < CLASSES - 1).sum())} of flowers"
    )
    if not feats:
        return np.zeros((0, VIEWS * rec.embedding_size), np.float32), y
    return np.concatenate(feats), y


def fit_network(x: np.ndarray, y: np.ndarray, cfg: LookConfig) -> FlowerLook:
    """The look's network fitted to features ``x`` and targets ``y``."""
    from vision.training.train import _torch

    torch = _torch()
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(1, cfg.threads))
    mean = x.mean(axis=0)
    scale = x.std(axis=0) + 1e-6
    xt = torch.from_numpy((x - mean) / scale)
    yt = torch.from_numpy(y)
    nn = torch.nn
    net = nn.Sequential(
        nn.Linear(x.shape[1], cfg.hidden),
        nn.ReLU(),
        nn.Dropout(0.3),
        nn.Linear(cfg.hidden, CLASSES),
    )
    # "not a flower" outnumbers each flower many times over: weighed down, so the flowers
    # are not learnt as the exception
    weight = torch.ones(CLASSES)
    weight[-1] = 0.3
    opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=1e-2)
    gen = torch.Generator().manual_seed(cfg.seed)
    for _ in range(cfg.epochs):
        order = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), 512):
            b = order[i : i + 512]
            loss = nn.functional.cross_entropy(
                net(xt[b]), yt[b], weight=weight, label_smoothing=0.05
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
    first, last = net[0], net[3]
    return FlowerLook(
        mean=mean.astype(np.float32),
        scale=scale.astype(np.float32),
        w1=first.weight.detach().numpy().T.copy(),
        b1=first.bias.detach().numpy().copy(),
        w2=last.weight.detach().numpy().T.copy(),
        b2=last.bias.detach().numpy().copy(),
    )


def _flower_f1(rec, photos, images) -> float:
    """Flower F1 over the labelled area of ``photos`` read by ``rec``, whose temperature is 1:
    each detection's confidence is the raw probability the matching orders by, as tuning
    scores its settings."""
    from vision.training.dataset import tile_f1

    readings = [
        ([(d.box, d.label, d.confidence) for d in rec.detect(image)], photo)
        for photo, image in zip(photos, images, strict=True)
    ]
    return round(tile_f1(readings, set(FLOWER_LABELS), labelled_area_only=True)["f1"], 4)


def fit_flower_look(
    model_dir: Path,
    train_photos,
    val_photos,
    shared_data: Path | None,
    cfg: LookConfig | None = None,
    log: Callable[[str], None] = print,
) -> ModelManifest:
    """Fit the flower look of the model in ``model_dir`` (written to its
    :data:`~vision.flower_look.FLOWER_LOOK_FILE`), choose its ``flower_look_above`` on
    ``val_photos`` and fit the confidence calibration again; returns the manifest written.
    With too few flowers to learn from, a look already there is removed (an old look would
    read a new classifier's embeddings wrongly) and the manifest says why."""
    from vision.recognizer import HEAD_FILE, TileRecognizer
    from vision.training.confidence_fit import calibrate, write_calibration

    cfg = cfg or LookConfig()
    if (model_dir / HEAD_FILE).exists():
        raise ModelError(
            f"{model_dir} is enrolled: fit the flower look of the model it was enrolled from "
            "(an enrolled head reads its set's flowers itself)"
        )
    path = model_dir / FLOWER_LOOK_FILE
    rec = TileRecognizer(model_dir, threads=cfg.threads, temperature=1.0, flower_look=False)
    x, y = learning_set(rec, train_photos, shared_data, cfg, log)
    flowers = int((y < CLASSES - 1).sum())
    manifest = rec.manifest
    if flowers < cfg.min_flowers:
        path.unlink(missing_ok=True)
        log(f"flower look: {flowers} flower views, fewer than {cfg.min_flowers}: none fitted")
        manifest = manifest.with_training(flower_look={"fitted": False, "flower_views": flowers})
        manifest.write(model_dir)
        return manifest
    # the look reads this classifier's embeddings: it is bound to the file's bytes
    classifier = file_digest(manifest.file(model_dir, "classifier"))
    look = replace(fit_network(x, y, cfg), classifier=classifier)
    look.save(path)
    record: dict[str, Any] = {"fitted": True, "views": len(y), "flower_views": flowers}
    if val_photos:
        images = [p.image() for p in val_photos]
        record["validation_flower_f1_without"] = _flower_f1(rec, val_photos, images)
        rec.flower_look = look
        by: dict[str, float] = {}
        for above in LOOK_ABOVE:
            rec.flower_look_above = above
            by[str(above)] = _flower_f1(rec, val_photos, images)
        best = max(LOOK_ABOVE, key=lambda a: (by[str(a)], a))
        record["validation_flower_f1_by_look_above"] = by
        log(
            f"flower look: validation flower F1 {record['validation_flower_f1_without']} "
            f"without; by flower_look_above {by}: {best}"
        )
        manifest = replace(manifest, flower_look_above=best)
        rec.flower_look_above = best
        temperature, calibration = calibrate(rec, val_photos, images, log)
        manifest = write_calibration(manifest, model_dir, temperature, calibration)
    manifest = manifest.with_training(flower_look=record)
    manifest.write(model_dir)
    return manifest
