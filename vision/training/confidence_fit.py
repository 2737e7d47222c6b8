"""Fitting a model's confidence calibration on the validation photos (see
:mod:`vision.confidence`): the last step of ``mahjong-table train`` and of ``--retune``, and
alone ``mahjong-table train --calibrate-confidence MODEL_DIR``.

The calibration is fitted on what the recogniser reports: every tile it finds on a labelled
tile (IoU at least 0.5 with its box, whatever the label), read as the recogniser reads it
(its threshold, second look and rereads), with the probabilities it settles on. Tiles the
finder alone calls face down carry the finder's share, not a classifier probability, and
are left out. The held-out photos are the benchmark's: never fitted on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from vision.confidence import expected_calibration_error, fit_temperature, temper
from vision.model_manifest import ModelManifest
from vision.training.dataset import LabelledPhoto, match_detections

if TYPE_CHECKING:
    from vision.recognizer import TileRecognizer

MIN_READS = 200
"""Fewer reads than this fit no temperature: the model keeps the one it has."""


@dataclass(frozen=True)
class Reads:
    """The classifier's raw probabilities (N x 43) of the tiles found on labelled tiles, and
    those tiles' true labels (N)."""

    probs: np.ndarray
    labels: np.ndarray

    @property
    def right(self) -> np.ndarray:
        return self.probs.argmax(axis=1) == self.labels

    def ece(self, temperature: float) -> float:
        """The expected calibration error of the reads' best labels, tempered by
        ``temperature``."""
        shown = temper(self.probs, temperature).max(axis=1)
        return expected_calibration_error(shown, self.right)


def reads_on_photos(
    rec: TileRecognizer,
    photos: Sequence[LabelledPhoto],
    images: Sequence[np.ndarray] | None = None,
) -> Reads:
    """What ``rec`` reads on the labelled tiles of ``photos`` (``images``: the photos'
    pictures, where the caller holds them already)."""
    probs: list[np.ndarray] = []
    labels: list[int] = []
    for k, photo in enumerate(photos):
        img = images[k] if images is not None else photo.image()
        found = rec.detect_with_probabilities(img)
        # matched by the raw probability, whatever temperature ``rec`` has: the same reads
        # are found on the same tiles whichever calibration is in force
        sure = [d.confidence if p is None else float(p[d.label]) for d, p in found]
        preds = [(d.box, 0, c) for (d, _), c in zip(found, sure, strict=True)]
        anyone = np.zeros(len(photo.labels), np.int64)
        for i, j in match_detections(preds, photo.boxes, anyone):
            p = found[i][1]
            if j is not None and p is not None:
                probs.append(p)
                labels.append(int(photo.labels[j]))
    if not probs:
        return Reads(np.zeros((0, 43), np.float32), np.zeros(0, np.int64))
    return Reads(np.stack(probs).astype(np.float32), np.array(labels, np.int64))


def calibrate(
    rec: TileRecognizer,
    photos: Sequence[LabelledPhoto],
    images: Sequence[np.ndarray] | None = None,
    log: Callable[[str], None] = print,
) -> tuple[float | None, dict[str, float]]:
    """The temperature fitted to what ``rec`` reads on ``photos``, and its record for the
    manifest's ``training.validation``: the reads counted and the expected calibration error
    before and after. With fewer than :data:`MIN_READS` reads, None (and no record): too few
    wrong reads among them to say how often a sure read is wrong."""
    reads = reads_on_photos(rec, photos, images)
    if len(reads.labels) < MIN_READS:
        log(
            f"confidence calibration: {len(reads.labels)} reads on the validation photos, "
            f"fewer than {MIN_READS}: the model keeps its temperature"
        )
        return None, {}
    temperature = round(fit_temperature(reads.probs, reads.labels), 4)
    record = {
        "confidence_reads": len(reads.labels),
        "confidence_accuracy": round(float(reads.right.mean()), 4),
        "confidence_ece_raw": round(reads.ece(1.0), 4),
        "confidence_ece_calibrated": round(reads.ece(temperature), 4),
    }
    log(
        f"confidence calibration on {len(reads.labels)} validation reads: temperature "
        f"{temperature:g}, expected calibration error {record['confidence_ece_raw']} raw, "
        f"{record['confidence_ece_calibrated']} calibrated"
    )
    return temperature, record


def calibrate_model(
    model_dir: Path,
    photos: Sequence[LabelledPhoto],
    threads: int = 2,
    log: Callable[[str], None] = print,
) -> ModelManifest:
    """Fit the confidence calibration of the model in ``model_dir`` on the validation
    ``photos`` and write it into its ``model.json`` (nothing else changes). Returns the
    manifest."""
    from vision.recognizer import TileRecognizer

    rec = TileRecognizer(model_dir, threads=threads)
    temperature, record = calibrate(rec, photos, log=log)
    return write_calibration(rec.manifest, model_dir, temperature, record)


def write_calibration(
    manifest: ModelManifest,
    model_dir: Path,
    temperature: float | None,
    record: dict[str, float],
) -> ModelManifest:
    """``manifest`` with ``temperature`` (None: its own kept) and the fit's ``record`` (into
    ``training.validation``), written into ``model_dir``."""
    if temperature is None:
        return manifest
    validation = {**manifest.training.get("validation", {}), **record}
    out = replace(manifest, confidence_temperature=temperature).with_training(validation=validation)
    out.write(model_dir)
    return out
