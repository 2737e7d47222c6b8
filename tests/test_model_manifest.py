"""The model folder's manifest (vision/model_manifest.py): one typed description of model.json."""

from __future__ import annotations

import json
import shutil

import pytest

from controller.errors import ModelError
from vision.flower_look import FLOWER_LOOK_FILE
from vision.labels import LABEL_NAMES
from vision.model_manifest import ModelManifest
from vision.recognizer import DEFAULT_MODEL_DIR


def test_the_committed_manifest_round_trips_byte_for_byte(tmp_path):
    text = (DEFAULT_MODEL_DIR / "model.json").read_text()
    manifest = ModelManifest.read(DEFAULT_MODEL_DIR)
    assert manifest.to_json() == json.loads(text)
    manifest.write(tmp_path)
    assert (tmp_path / "model.json").read_text() == text
    assert manifest.labels == LABEL_NAMES and manifest.extra == {}
    assert manifest.training["validation"]["tile_f1"] > 0


def test_left_out_keys_take_the_defaults_and_unknown_keys_are_kept(tmp_path):
    (tmp_path / "model.json").write_text(json.dumps({"format": 1, "mine": [1, 2]}))
    manifest = ModelManifest.read(tmp_path)
    assert manifest == ModelManifest(extra={"mine": [1, 2]})
    layout = manifest.to_json()
    assert list(layout)[-1] == "mine" and "refine" not in layout


def test_without_a_second_look_its_sizes_are_left_out():
    layout = ModelManifest(rescale=False, refine=False).to_json()
    assert "rescale_above" not in layout and "rescale_to" not in layout
    assert layout["refine"] is False


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("stride", 4.5, "stride must be a whole number"),
        ("crop_size", -48, "crop_size must be above 0"),
        ("finder_input", "640", "finder_input must be a number"),
        ("min_confidence", None, "min_confidence must be a number"),
        ("rescale", "yes", "rescale must be true or false"),
        ("finder", "../finder.onnx", "finder must name a file in the model folder"),
        ("training", [], "training must be an object"),
        ("labels", ["1m"], "labels must be the 43 labels"),
        ("box_scale", "tight", "box_scale must be a number"),
        ("flower_look_above", "often", "flower_look_above must be a number"),
        ("format", 2, "not a tile model manifest of format 1"),
    ],
)
def test_a_wrong_key_is_a_model_error_naming_the_file_and_key(tmp_path, key, value, message):
    model = tmp_path / "m"
    shutil.copytree(DEFAULT_MODEL_DIR, model, ignore=shutil.ignore_patterns("*.onnx", "*.npz"))
    data = json.loads((model / "model.json").read_text())
    (model / "model.json").write_text(json.dumps({**data, key: value}))
    with pytest.raises(ModelError, match=message) as caught:
        ModelManifest.read(model)
    assert str(model / "model.json") in str(caught.value)


def test_a_missing_or_unreadable_manifest_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="no model folder"):
        ModelManifest.read(tmp_path / "none")
    with pytest.raises(ModelError, match=r"has no model\.json"):
        ModelManifest.read(tmp_path)
    (tmp_path / "model.json").write_text("{not json")
    with pytest.raises(ModelError, match="is unreadable"):
        ModelManifest.read(tmp_path)


@pytest.mark.parametrize(
    ("key", "value"), [("confidence_temperature", 0.6709), ("box_scale", 0.94)]
)
def test_a_later_setting_defaults_to_one_and_round_trips(tmp_path, key, value):
    # a folder written before the setting reports the raw probabilities, the boxes as found
    (tmp_path / "model.json").write_text(json.dumps({"format": 1}))
    assert getattr(ModelManifest.read(tmp_path), key) == 1.0
    ModelManifest(**{key: value}).write(tmp_path)
    assert json.loads((tmp_path / "model.json").read_text())[key] == value
    assert getattr(ModelManifest.read(tmp_path), key) == value


def test_the_committed_model_carries_its_fitted_temperature_and_box_scale():
    committed = ModelManifest.read(DEFAULT_MODEL_DIR)
    validation = committed.training["validation"]
    # the temperature fitted on the validation photos' reads
    assert committed.confidence_temperature != 1.0
    assert validation["confidence_ece_calibrated"] < validation["confidence_ece_raw"]
    # the box scale chosen on the validation photos whose labels stay apart
    by_scale = validation["tile_f1_labels_apart_by_box_scale"]
    assert by_scale[str(committed.box_scale)] == max(by_scale.values()) > by_scale["1.0"]


def test_the_committed_model_takes_its_flower_look_where_the_validation_photos_chose():
    committed = ModelManifest.read(DEFAULT_MODEL_DIR)
    look = committed.training["flower_look"]
    assert look["fitted"] and (DEFAULT_MODEL_DIR / FLOWER_LOOK_FILE).is_file()
    by_above = look["validation_flower_f1_by_look_above"]
    best = by_above[str(committed.flower_look_above)]
    assert best == max(by_above.values()) > look["validation_flower_f1_without"]


def test_a_confidence_temperature_that_is_no_number_is_named(tmp_path):
    (tmp_path / "model.json").write_text(
        json.dumps({"format": 1, "confidence_temperature": "warm"})
    )
    with pytest.raises(ModelError, match="confidence_temperature must be a number"):
        ModelManifest.read(tmp_path)
