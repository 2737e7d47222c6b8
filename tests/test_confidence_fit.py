"""Fitting the confidence calibration on photos (vision/training/confidence_fit.py): the reads
it fits on, the fit, and writing it into a model folder. Rendered rows stand in for the
validation photos, so these run without the shared data."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.confidence import TEMPERATURE_RANGE
from vision.labels import BACK
from vision.model_manifest import ModelManifest
from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer
from vision.rendering.faces import procedural_faces
from vision.rendering.render import PlacedTile, render_scene
from vision.training import confidence_fit
from vision.training.dataset import LabelledPhoto


@pytest.fixture(scope="module")
def rec() -> TileRecognizer:
    return TileRecognizer(threads=2)


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> list[LabelledPhoto]:
    """Three rendered rows, faint enough that some tiles are read unsure or wrong, saved as
    photos with their labelled boxes (the last tile of each lies face down)."""
    folder = tmp_path_factory.mktemp("rows")
    out = []
    for seed in range(3):
        labels = [*np.random.default_rng(seed).integers(0, 42, 11).tolist(), BACK]
        tiles = [PlacedTile(int(k), (60 + i * 46, 120), 0, 42) for i, k in enumerate(labels)]
        scene = render_scene(tiles, procedural_faces(), plane_size=(640, 240),
                             rng=np.random.default_rng(seed), table="felt")  # fmt: skip
        img = cv2.addWeighted(scene.image, 0.4, np.full_like(scene.image, 200), 0.6, 0)
        path = folder / f"row{seed}.png"
        cv2.imwrite(str(path), img)
        boxes = np.array([t.box for t in scene.tiles], np.float64)
        truth = np.array([t.label for t in scene.tiles], np.int64)
        out.append(LabelledPhoto(path, f"row{seed}", (640, 240), boxes, truth))
    return out


def test_the_reads_are_the_recognisers_on_labelled_tiles(rec, photos):
    reads = confidence_fit.reads_on_photos(rec, photos)
    found = [rec.detect_with_probabilities(p.image()) for p in photos]
    classified = sum(raw is not None for f in found for _, raw in f)
    # every read is a tile the classifier read, of a labelled tile's label, with the whole
    # distribution the recogniser settled on; none more than were found
    assert 20 <= len(reads.labels) <= classified
    assert reads.probs.shape == (len(reads.labels), 43)
    np.testing.assert_allclose(reads.probs.sum(axis=1), 1.0, atol=1e-5)
    truths = {int(k) for p in photos for k in p.labels}
    assert set(reads.labels.tolist()) <= truths
    # the same reads whatever temperature the recogniser reports with
    soft = TileRecognizer(threads=2, temperature=5.0)
    again = confidence_fit.reads_on_photos(soft, photos, [p.image() for p in photos])
    np.testing.assert_array_equal(again.labels, reads.labels)
    np.testing.assert_allclose(again.probs, reads.probs, atol=1e-6)
    assert 0 < reads.right.mean() <= 1


def test_too_few_reads_keep_the_models_temperature(rec, photos):
    said: list[str] = []
    assert confidence_fit.calibrate(rec, photos, log=said.append) == (None, {})
    assert "fewer than" in said[0] and "keeps its temperature" in said[0]
    manifest = ModelManifest(confidence_temperature=0.8)
    assert confidence_fit.write_calibration(manifest, Path("/nonexistent"), None, {}) is manifest


def test_a_fit_is_written_into_the_model_folder_and_nothing_else_changes(
    photos, tmp_path, monkeypatch
):
    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model, ignore=shutil.ignore_patterns("*.md"))
    before = json.loads((model / "model.json").read_text())
    monkeypatch.setattr(confidence_fit, "MIN_READS", 10)
    said: list[str] = []
    manifest = confidence_fit.calibrate_model(model, photos, threads=2, log=said.append)
    after = json.loads((model / "model.json").read_text())
    t = after["confidence_temperature"]
    assert (
        t == manifest.confidence_temperature and TEMPERATURE_RANGE[0] <= t <= TEMPERATURE_RANGE[1]
    )
    validation = after["training"]["validation"]
    assert validation["confidence_reads"] >= 10
    assert validation["confidence_ece_calibrated"] <= validation["confidence_ece_raw"] + 0.02
    assert f"temperature {t:g}" in said[0]
    # the other settings and records stand as they were
    for key in ("finder_threshold", "reread_below", "min_confidence", "back_threshold"):
        assert after[key] == before[key]
    kept = before["training"]["validation"]
    assert {k: v for k, v in validation.items() if not k.startswith("confidence_")} == {
        k: v for k, v in kept.items() if not k.startswith("confidence_")
    }
    assert TileRecognizer(model).temperature == t
