"""Quantising the classifier to int8 (vision.training.quantise): on a tiny float model trained
here."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from controller.errors import ModelError

pytest.importorskip("torch", reason="the train extra (PyTorch, onnx) is not installed")

from vision.flower_look import FLOWER_LOOK_FILE
from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer
from vision.training import quantise as q
from vision.training.train import TrainConfig, face_sets, train


@pytest.fixture(scope="module")
def float_model(tmp_path_factory) -> Path:
    """A tiny model (procedural faces only) whose classifier is left in floating point."""
    out = tmp_path_factory.mktemp("float") / "model"
    train(TrainConfig.preset("tiny", None, out, quantise=False, log=lambda _: None))
    return out


@pytest.fixture
def model(float_model, tmp_path) -> Path:
    out = tmp_path / "model"
    shutil.copytree(float_model, out)
    return out


def _tables(n: int, seed: int):
    return q.labelled_pictures([], 0, face_sets(None), n, seed)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_the_float_model_trained_here_is_not_quantised(float_model):
    assert not q.is_quantised(float_model / "classifier.onnx")
    assert "quantised" not in json.loads((float_model / "model.json").read_text())["training"]


def test_quantising_writes_an_int8_classifier_and_says_how_it_reads(model):
    (model / FLOWER_LOOK_FILE).write_bytes(b"a look fitted to the float classifier")
    before = (model / "classifier.onnx").stat().st_size
    logs: list[str] = []
    record = q.quantise_classifier(model, _tables(2, 5), _tables(2, 6), log=logs.append)
    assert q.is_quantised(model / "classifier.onnx")
    assert (model / "classifier.onnx").stat().st_size < before / 2
    manifest = json.loads((model / "model.json").read_text())
    assert manifest["training"]["quantised"] == record
    assert manifest["training"]["validation"]["classifier_int8_accuracy"] == record["int8_accuracy"]
    assert record["calibration_crops"] > 0 and record["check_tiles"] > 0
    assert record["int8_accuracy"] >= record["float_accuracy"] - q.MAX_LOSS
    assert 0 <= record["agreement"] <= 1
    assert any("checked on" in line for line in logs)
    # nothing left beside the model (the look fitted to the float classifier removed, and
    # the manifest says so), and the recogniser runs the result
    assert sorted(p.name for p in model.iterdir()) == sorted(
        ["finder.onnx", "classifier.onnx", "model.json", "base_head.npz"]
    )
    assert manifest["training"]["flower_look"] == {"fitted": False, "removed": q.STALE_LOOK}
    rec = TileRecognizer(model)
    frame, boxes, _labels = next(iter(_tables(1, 9)))
    probs = rec.classify(frame, [tuple(map(float, b)) for b in boxes[:5]])
    assert probs.shape == (min(5, len(boxes)), 43)
    assert np.allclose(probs.sum(axis=1), 1, atol=1e-4)


def test_the_int8_classifier_reads_as_the_float_one_did(float_model, model):
    """Checked on the tiles the ranges were not set on: the labels mostly agree."""
    q.quantise_classifier(model, _tables(2, 5), _tables(1, 6), log=lambda _: None)
    frame, boxes, _labels = next(iter(_tables(1, 7)))
    boxes = [tuple(map(float, b)) for b in boxes]
    # the classifiers alone (the float model's look, fitted to it, was removed from the other)
    before = TileRecognizer(float_model, flower_look=False).classify(frame, boxes).argmax(axis=1)
    after = TileRecognizer(model).classify(frame, boxes).argmax(axis=1)
    assert np.mean(before == after) >= 0.9


def test_a_quantised_classifier_is_not_quantised_again(model):
    q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    before = _files(model)
    with pytest.raises(ModelError, match="quantised already"):
        q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    assert _files(model) == before


def test_a_quantisation_that_reads_worse_is_refused_and_leaves_the_model(model, monkeypatch):
    before = _files(model)
    monkeypatch.setattr(q, "MAX_LOSS", -1.0)  # nothing can be good enough
    with pytest.raises(q.QuantisationRefused, match="the float classifier is kept") as caught:
        q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    assert set(caught.value.figures) >= {"float_accuracy", "int8_accuracy", "agreement"}
    assert _files(model) == before  # no int8 file, no temporary one, the manifest as it was
    assert isinstance(caught.value, ModelError)  # the CLI's one root of model errors


def test_pictures_without_tiles_are_refused(model):
    blank = np.full((240, 320, 3), 90, np.uint8)
    nothing = [(blank, np.zeros((0, 4)), np.zeros(0, np.int64))]
    before = _files(model)
    with pytest.raises(ModelError, match="pictures with tiles"):
        q.quantise_classifier(model, iter(nothing), _tables(1, 6), log=lambda _: None)
    with pytest.raises(ModelError, match="pictures with tiles"):
        q.quantise_classifier(model, _tables(1, 5), iter(nothing), log=lambda _: None)
    assert _files(model) == before


def test_a_file_that_is_not_onnx_is_a_model_error(tmp_path):
    bad = tmp_path / "classifier.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="corrupt or not ONNX"):
        q.is_quantised(bad)


def test_quantising_without_the_onnx_package_says_what_to_install(model, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ModelError, match=r"pip install -e '\.\[train\]'"):
        q.is_quantised(model / "classifier.onnx")


class _Photo:
    def __init__(self, k: int) -> None:
        self.k = k
        self.boxes = np.array([[k, k, 10.0, 14.0]])
        self.labels = np.array([k % 43])

    def image(self) -> np.ndarray:
        return np.full((32, 32, 3), self.k, np.uint8)


def test_labelled_pictures_draw_photos_evenly_then_tables():
    photos = [_Photo(k) for k in range(10)]
    got = list(q.labelled_pictures(photos, 3, face_sets(None), 2, 5))
    assert [int(img[0, 0, 0]) for img, _, _ in got[:3]] == [0, 3, 6]
    assert len(got) == 5
    for img, boxes, labels in got[3:]:
        assert img.shape == (960, 1280, 3)
        assert boxes.shape == (len(labels), 4) and len(labels) > 10
    # more asked than there are: each photo once
    assert len(list(q.labelled_pictures(photos, 50, [], 0, 5))) == 10
    assert list(q.labelled_pictures(photos, 0, [], 0, 5)) == []


def test_the_committed_classifier_is_int8_and_says_so():
    manifest = json.loads((DEFAULT_MODEL_DIR / "model.json").read_text())
    assert q.is_quantised(DEFAULT_MODEL_DIR / "classifier.onnx")
    record = manifest["training"]["quantised"]
    assert record["int8_accuracy"] >= record["float_accuracy"] - q.MAX_LOSS


def _int8_weights(path: Path) -> list[str]:
    """The int8 weight tensors the model at ``path`` dequantises (the kind an AVX2 CPU without
    VNNI multiplies with a 16-bit sum that clips)."""
    import onnx

    model = onnx.load(str(path))
    int8 = {t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8}
    return [
        n.input[0]
        for n in model.graph.node
        if n.op_type == "DequantizeLinear" and n.input[0] in int8
    ]


def _logits(path: Path, crops: np.ndarray, *, optimised: bool) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    # unoptimised, every quantised operator is dequantised and computed in floating point:
    # the reference the fused integer kernels must match
    opts.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if optimised
        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return session.run(["logits"], {"crops": crops})[0]


def test_unsigning_keeps_every_weight_exactly(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = rng.integers(-128, 128, size=(4, 6), dtype=np.int8)
    scales = rng.uniform(0.01, 0.1, size=4).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["out"], axis=0)],
        "weights",
        [],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 6])],
        [
            numpy_helper.from_array(weights, "w"),
            numpy_helper.from_array(scales, "s"),
            numpy_helper.from_array(np.zeros(4, np.int8), "z"),
        ],
    )
    src, dst = tmp_path / "signed.onnx", tmp_path / "unsigned.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), src)
    assert q.unsign_weights(src, dst) == 1
    assert _int8_weights(src) == ["w"] and _int8_weights(dst) == []
    import onnxruntime as ort

    before, after = (
        ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, {})[0]
        for p in (src, dst)
    )
    assert np.array_equal(before, after)
    assert np.array_equal(before, weights.astype(np.float32) * scales[:, None])
    assert q.unsign_weights(dst, tmp_path / "again.onnx") == 0  # nothing left to move


def test_a_quantised_classifier_keeps_no_int8_weights(model):
    q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    assert _int8_weights(model / "classifier.onnx") == []
    record = json.loads((model / "model.json").read_text())["training"]["quantised"]
    assert record["weights"] == q.WEIGHTS


def test_the_committed_classifier_reads_alike_on_every_cpu():
    """The fused integer kernels this CPU picks read crops of the simulated table as the
    floating-point reference does. With int8 weights an AVX2 CPU without VNNI clipped sums
    and moved logits by up to 5.4 (a label in sixteen changed); that cannot show on a CPU
    with VNNI, hence also the check of the weights' type that rules it out."""
    path = DEFAULT_MODEL_DIR / "classifier.onnx"
    assert _int8_weights(path) == []
    crops = q.as_input(q.calibration_crops(TileRecognizer(threads=1), _tables(3, 7)))
    assert len(crops) > 100
    fused, reference = (_logits(path, crops, optimised=o) for o in (True, False))
    # requantising between layers rounds a little differently from floating point: well
    # under the 5.4 of clipped sums
    assert np.abs(fused - reference).max() < 0.5
    assert np.mean(fused.argmax(1) == reference.argmax(1)) > 0.99


def test_the_classifier_the_manifest_names_is_the_one_quantised(model):
    (model / "classifier.onnx").rename(model / "tiles.onnx")
    manifest = json.loads((model / "model.json").read_text())
    (model / "model.json").write_text(json.dumps({**manifest, "classifier": "tiles.onnx"}))
    assert q.classifier_path(model) == model / "tiles.onnx"
    q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    assert q.is_quantised(model / "tiles.onnx") and not (model / "classifier.onnx").exists()
    TileRecognizer(model)


def test_the_quantised_file_keeps_the_float_files_permissions(model):
    (model / "classifier.onnx").chmod(0o644)
    q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    assert (model / "classifier.onnx").stat().st_mode & 0o777 == 0o644


def test_a_folder_that_cannot_be_written_is_a_model_error(model, monkeypatch):
    import tempfile

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    before = _files(model)
    monkeypatch.setattr(tempfile, "mkstemp", full)
    with pytest.raises(ModelError, match=r"cannot write the quantised classifier.*No space"):
        q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    assert _files(model) == before


def test_onnxruntimes_own_failures_are_model_errors(model, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL")

    before = _files(model)
    monkeypatch.setattr(q, "_quantise_file", broken)
    with pytest.raises(ModelError, match="onnxruntime could not quantise"):
        q.quantise_classifier(model, _tables(1, 5), _tables(1, 6), log=lambda _: None)
    assert _files(model) == before
