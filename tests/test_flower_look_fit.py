"""Fitting the flower look: what it learns from, the network, and a whole fit written into a
model folder (rendered tables and scenes only, so it runs without the shared data)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from controller.errors import ModelError
from vision.flower_look import CLASSES, FLOWER_LOOK_FILE, VIEWS, FlowerLook, file_digest
from vision.labels import BACK, FLOWER_LABELS
from vision.model_manifest import ModelManifest
from vision.recognizer import DEFAULT_MODEL_DIR, HEAD_FILE, TileRecognizer
from vision.training.flower_look_fit import (
    HARD,
    LookConfig,
    _lessons,
    fit_flower_look,
    fit_network,
)

pytest.importorskip("torch", reason="fitting needs the train extra")


def test_the_lessons_are_the_flowers_and_the_tiles_that_may_be_taken_for_one():
    cfg = LookConfig(other_share=0.0, views_per_tile=3)
    box = (10.0, 10.0, 30.0, 40.0)
    truths = [
        (box, FLOWER_LABELS[4], 0.0),  # a flower, whatever the classifier said
        (box, 5, HARD),  # a tile the classifier gave a chance of a flower
        (box, 6, HARD / 2),  # one it did not: not taught (no share of the rest asked)
        (box, BACK, 0.9),  # a back is never read by the look
    ]
    lessons = _lessons(truths, cfg, np.random.default_rng(0))
    assert lessons.labels == [4, 4, 4, CLASSES - 1, CLASSES - 1, CLASSES - 1]
    assert lessons.boxes[0] == box and lessons.boxes[3] == box
    for x, y, w, h in lessons.boxes[1:3]:  # shifted and scaled a little, as found boxes are
        assert abs(x + w / 2 - 25) < 8 and abs(y + h / 2 - 30) < 8 and 20 < w < 45


def test_the_network_learns_what_tells_the_classes_apart():
    rng = np.random.default_rng(1)
    y = rng.integers(0, CLASSES, 4000)
    x = rng.normal(size=(4000, VIEWS * 8)).astype(np.float32)
    x[np.arange(4000), y] += 5.0  # each class lifts one feature
    look = fit_network(x, y, LookConfig(hidden=16, epochs=40))
    assert isinstance(look, FlowerLook) and look.embedding_size == 8
    right = (look.probabilities(x).argmax(axis=1) == y).mean()
    assert right > 0.9


@pytest.fixture
def model(tmp_path):
    dst = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, dst, ignore=shutil.ignore_patterns("*.md", "*.py"))
    return dst


def test_a_fit_writes_a_look_the_recogniser_takes(model):
    # replacing one that no longer fits (fitted to another classifier, or spoilt)
    (model / FLOWER_LOOK_FILE).write_bytes(b"an old look")
    cfg = LookConfig(tables=2, scenes=6, epochs=3, min_flowers=10)
    manifest = fit_flower_look(model, [], [], None, cfg, log=lambda _: None)
    assert (model / FLOWER_LOOK_FILE).is_file()
    record = manifest.training["flower_look"]
    assert record["fitted"] and record["flower_views"] >= 10
    assert ModelManifest.read(model).training["flower_look"] == record
    # bound to the classifier it was fitted on
    look = TileRecognizer(model).flower_look
    assert look is not None and look.classifier == file_digest(model / "classifier.onnx")


def test_too_few_flowers_fit_no_look_and_remove_an_old_one(model):
    (model / FLOWER_LOOK_FILE).write_bytes(b"an old look")
    manifest = fit_flower_look(model, [], [], None, LookConfig(tables=0, scenes=0))
    assert not (model / FLOWER_LOOK_FILE).exists()
    assert manifest.training["flower_look"] == {"fitted": False, "flower_views": 0}
    assert TileRecognizer(model).flower_look is None


def test_an_enrolled_model_is_refused(model):
    (model / HEAD_FILE).write_bytes(b"")
    with pytest.raises(ModelError, match="enrolled"):
        fit_flower_look(model, [], [], None, LookConfig(tables=0, scenes=0))
