"""The flower look: its views, features and merge, its weights file, and the recogniser taking
it exactly where it should."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import ModelError
from vision.flower_look import (
    CLASSES,
    FLOWER_LOOK_FILE,
    MIDDLE,
    VIEWS,
    FlowerLook,
    features,
    file_digest,
    flower_chance,
    merge,
    view_boxes,
)
from vision.labels import FLOWER_LABELS, NUM_LABELS
from vision.recognizer import DEFAULT_MODEL_DIR, HEAD_FILE, TileRecognizer
from vision.rendering.faces import procedural_faces
from vision.rendering.render import PlacedTile, render_scene


def test_the_views_are_the_tile_and_its_middle():
    box = (10.0, 20.0, 40.0, 60.0)
    views = view_boxes(box)
    assert len(views) == VIEWS and views[0] == box
    mx, my, mw, mh = views[1]
    assert (mw, mh) == pytest.approx((40 * MIDDLE, 60 * MIDDLE))
    assert (mx + mw / 2, my + mh / 2) == pytest.approx((30, 50))


def test_the_features_are_the_tiles_embedding_then_its_middles():
    emb = np.random.default_rng(0).normal(size=(3, VIEWS, 8)).astype(np.float32)
    f = features(emb)
    assert f.shape == (3, 16)
    assert np.array_equal(f[:, :8], emb[:, 0]) and np.array_equal(f[:, 8:], emb[:, 1])


def test_the_chance_of_a_flower_is_the_eight_together():
    p = np.zeros((2, NUM_LABELS), np.float32)
    p[0, FLOWER_LABELS[0]], p[0, FLOWER_LABELS[7]], p[0, 0] = 0.1, 0.2, 0.7
    p[1, 5] = 1.0
    assert flower_chance(p) == pytest.approx([0.3, 0.0])
    assert flower_chance(p[0]) == pytest.approx(0.3)  # one tile's probabilities


def test_features_refuse_the_wrong_shape():
    with pytest.raises(ValueError, match="x 2 x E"):
        features(np.zeros((2, 5, 8)))


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000), st.booleans())
def test_merge_gives_the_look_its_flowers_and_shares_the_rest_as_the_classifier(seed, sure):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(NUM_LABELS), size=4).astype(np.float32)
    if sure:  # a classifier that leaves nothing to the other labels
        p[0] = 0.0
        p[0, FLOWER_LABELS[2]] = 1.0
    q = rng.dirichlet(np.ones(CLASSES), size=4).astype(np.float32)
    out = merge(p, q)
    assert out.sum(axis=1) == pytest.approx(np.ones(4), abs=1e-5)
    assert np.array_equal(out[:, list(FLOWER_LABELS)], q[:, :-1])
    others = [k for k in range(NUM_LABELS) if k not in FLOWER_LABELS]
    for i in range(1 if sure else 0, 4):
        share = p[i, others] / p[i, others].sum()
        assert out[i, others] == pytest.approx(q[i, -1] * share, abs=1e-6)
    if sure:  # all of "not a flower" goes to the likeliest other label
        assert out[0, others].max() == pytest.approx(q[0, -1])


def _look(size: int = 192, hidden: int = 4, says: int | None = None) -> FlowerLook:
    """A look whose answer is ``says`` (a class) whatever it sees."""
    b2 = np.zeros(CLASSES, np.float32)
    if says is not None:
        b2[says] = 20.0
    return FlowerLook(
        mean=np.zeros(VIEWS * size, np.float32),
        scale=np.ones(VIEWS * size, np.float32),
        w1=np.zeros((VIEWS * size, hidden), np.float32),
        b1=np.zeros(hidden, np.float32),
        w2=np.zeros((hidden, CLASSES), np.float32),
        b2=b2,
    )


def test_a_look_is_saved_and_loaded(tmp_path):
    look = _look(says=3)
    look.save(tmp_path / FLOWER_LOOK_FILE)
    back = FlowerLook.load(tmp_path / FLOWER_LOOK_FILE, 192)
    assert np.array_equal(back.b2, look.b2) and back.embedding_size == 192
    assert back.probabilities(np.zeros((2, VIEWS * 192))).argmax(axis=1).tolist() == [3, 3]


def test_a_look_keeps_the_classifier_it_was_fitted_on_and_refuses_another(tmp_path):
    path = tmp_path / FLOWER_LOOK_FILE
    fitted_on, other = "a" * 64, "b" * 64
    dataclasses.replace(_look(says=3), classifier=fitted_on).save(path)
    assert FlowerLook.load(path, 192, fitted_on).classifier == fitted_on
    assert FlowerLook.load(path, 192).classifier == fitted_on  # no digest asked: not checked
    with pytest.raises(ModelError, match="fitted on another classifier") as err:
        FlowerLook.load(path, 192, other)
    assert f"mahjong-table train --flower-look {tmp_path}" in str(err.value)
    # a look saved before the digest was recorded is taken on its shape alone
    _look(says=3).save(path)
    assert FlowerLook.load(path, 192, other).classifier == ""


def test_a_models_file_digest_is_its_sha256_and_an_unreadable_file_a_model_error(tmp_path):
    path = tmp_path / "classifier.onnx"
    path.write_bytes(b"weights")
    assert file_digest(path) == hashlib.sha256(b"weights").hexdigest()
    with pytest.raises(ModelError, match="cannot be read"):
        file_digest(tmp_path / "missing.onnx")


def test_a_look_that_cannot_be_written_is_a_model_error_and_leaves_nothing(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / FLOWER_LOOK_FILE).mkdir()  # in the way: the file cannot replace a folder
    with pytest.raises(ModelError, match="cannot write the flower look"):
        _look().save(folder / FLOWER_LOOK_FILE)
    assert [p.name for p in folder.iterdir()] == [FLOWER_LOOK_FILE]


def test_a_bad_look_file_is_a_model_error(tmp_path):
    path = tmp_path / FLOWER_LOOK_FILE
    path.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ModelError, match="unreadable"):
        FlowerLook.load(path, 192)
    _look(size=96).save(path)
    with pytest.raises(ModelError, match="does not fit"):
        FlowerLook.load(path, 192)
    bad = _look()
    bad.scale[0] = 0.0
    bad.save(path)
    with pytest.raises(ModelError, match="not weights"):
        FlowerLook.load(path, 192)
    np.savez(path, mean=np.zeros(768))
    with pytest.raises(ModelError, match="unreadable"):
        FlowerLook.load(path, 192)


# -- in the recogniser ------------------------------------------------------------------------


def _model_with(tmp_path, look: FlowerLook | None, **manifest) -> TileRecognizer:
    dst = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, dst, ignore=shutil.ignore_patterns("*.md", "*.py"))
    (dst / FLOWER_LOOK_FILE).unlink(missing_ok=True)
    if look is not None:
        look.save(dst / FLOWER_LOOK_FILE)
    if manifest:
        data = json.loads((dst / "model.json").read_text())
        data.update(manifest)
        (dst / "model.json").write_text(json.dumps(data))
    return TileRecognizer(dst, threads=2)


def _row(labels):
    tiles = [PlacedTile(lab, (80.0 + 50 * i, 200.0), 0.0, 44.0) for i, lab in enumerate(labels)]
    return render_scene(
        tiles, procedural_faces(), plane_size=(640, 480), rng=np.random.default_rng(0)
    ).image


ROW = [FLOWER_LABELS[0], FLOWER_LABELS[5], 0, 9, 18, 27]
"""1f, 6f, 1m, 1p, 1s, E."""


def test_the_tiles_that_may_be_flowers_take_the_look(tmp_path):
    plain = _model_with(tmp_path, None)
    assert plain.flower_look is None
    before = {d.box: d.label for d in plain.detect(_row(ROW))}
    assert sorted(before.values()) == sorted(ROW)
    # a look that calls every tile it sees 4f: the flowers become 4f, the rest stay
    rec = _model_with(tmp_path / "2", _look(says=3))
    after = rec.detect_with_probabilities(_row(ROW))
    assert sorted(d.label for d, _ in after) == sorted([FLOWER_LABELS[3]] * 2 + ROW[2:])
    for _, p in after:
        assert p is not None and p.sum() == pytest.approx(1.0, abs=1e-5)
    # turned off, or at a setting no tile reaches, it reads as the classifier alone
    off = TileRecognizer(rec.model_dir, threads=2, flower_look=False)
    assert {d.box: d.label for d in off.detect(_row(ROW))} == before
    rec.flower_look_above = 1.0
    assert sorted(d.label for d in rec.detect(_row(ROW))) == sorted(ROW)


def test_a_look_that_says_not_a_flower_leaves_the_likeliest_other_label(tmp_path):
    rec = _model_with(tmp_path, _look(says=CLASSES - 1), flower_look_above=0.0)
    labels = [d.label for d in rec.detect(_row(ROW))]
    assert not set(labels) & set(FLOWER_LABELS) and len(labels) == len(ROW)


def test_an_enrolled_head_reads_its_flowers_without_the_look(tmp_path):
    rec = _model_with(tmp_path, _look(says=3))
    # the head the classifier was trained with, as enrolment writes one
    from vision.enrol import base_head

    w, b = base_head(rec.model_dir)
    np.savez(rec.model_dir / HEAD_FILE, weight=w, bias=b)
    enrolled = TileRecognizer(rec.model_dir, threads=2)
    assert sorted(d.label for d in enrolled.detect(_row(ROW))) == sorted(ROW)


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_a_look_setting_off_its_range_is_refused(tmp_path, value):
    with pytest.raises(ModelError, match="flower_look_above must be 0-1"):
        _model_with(tmp_path, None, flower_look_above=value)


def test_a_look_that_does_not_fit_the_classifier_is_refused(tmp_path):
    with pytest.raises(ModelError, match="does not fit"):
        _model_with(tmp_path, _look(size=64))


def test_a_look_fitted_on_another_classifier_is_refused(tmp_path):
    # the same shape, so only the digest tells: a classifier replaced beside an old look
    stale = dataclasses.replace(_look(says=3), classifier="0" * 64)
    with pytest.raises(ModelError, match="fitted on another classifier"):
        _model_with(tmp_path, stale)
    # without the look the folder reads as its classifier alone
    assert TileRecognizer(tmp_path / "model", flower_look=False).flower_look is None


def test_the_committed_look_is_bound_to_the_committed_classifier():
    look = TileRecognizer(threads=2).flower_look
    assert look is not None
    assert look.classifier == file_digest(DEFAULT_MODEL_DIR / "classifier.onnx")


class _SpoiltEmbeddings:
    """Stands in for the classifier's session: runs the real one, then makes every
    embedding not a number (the logits stay as they were)."""

    def __init__(self, real) -> None:
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def run(self, names, feeds):
        outs = self.real.run(names, feeds)
        pairs = zip(names, outs, strict=True)
        return [np.full_like(o, np.nan) if n == "embedding" else o for n, o in pairs]


def test_a_look_that_reads_no_numbers_is_a_model_error():
    rec = TileRecognizer(threads=2)
    rec._classifier = _SpoiltEmbeddings(rec._classifier)
    with pytest.raises(ModelError, match="flower look gave readings that are not numbers"):
        rec.detect(_row(ROW))


def test_the_committed_model_reads_rendered_flowers_with_its_look():
    rec = TileRecognizer(threads=2)
    assert rec.flower_look is not None
    labels = [*FLOWER_LABELS, 0, 9, 18, 27]
    assert sorted(d.label for d in rec.detect(_row(labels))) == sorted(labels)
