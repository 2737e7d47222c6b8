"""The detect and train commands, through the real ``mahjong-table`` entry point."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.cli import main
from vision.rendering.faces import procedural_faces
from vision.rendering.render import PlacedTile, render_scene


@pytest.fixture(scope="module")
def photo(tmp_path_factory):
    tiles = [PlacedTile(label, (80 + i * 52, 120), 0, 48) for i, label in enumerate([4, 27, 34])]
    out = render_scene(tiles, procedural_faces(), plane_size=(320, 240),
                       rng=np.random.default_rng(0), table="felt")  # fmt: skip
    path = tmp_path_factory.mktemp("photos") / "row.png"
    cv2.imwrite(str(path), out.image)
    return path


def test_detect_json(photo, capsys):
    assert main(["detect", str(photo), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 1 and records[0]["width"] == 320
    tiles = records[0]["tiles"]
    assert [t["label"] for t in tiles] == ["5m", "E", "1f"]
    for t in tiles:
        assert len(t["box"]) == 4 and len(t["quad"]) == 4 and 0 <= t["confidence"] <= 1


def test_detect_text_and_annotation(photo, tmp_path, capsys):
    assert main(["detect", str(photo), "--annotate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{photo}: 3 tiles")
    assert (tmp_path / "row.png").is_file()


def test_annotations_of_pictures_of_one_name_are_all_kept(photo, tmp_path, capsys):
    other = tmp_path / "elsewhere" / "row.jpg"
    other.parent.mkdir()
    cv2.imwrite(str(other), cv2.imread(str(photo)))
    out = tmp_path / "drawn"
    assert main(["detect", str(photo), str(other), "--annotate", str(out), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["annotated"] for r in records] == [str(out / "row.png"), str(out / "row-2.png")]
    assert all(Path(r["annotated"]).is_file() for r in records)


def test_annotations_that_cannot_be_written_are_failures(photo, tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    assert main(["detect", str(photo), "--annotate", str(a_file)]) == 2
    assert "--annotate" in capsys.readouterr().err
    (tmp_path / "drawn" / "row.png").mkdir(parents=True)  # a folder where the picture goes
    assert main(["detect", str(photo), "--annotate", str(tmp_path / "drawn")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_a_failed_annotation_is_in_the_json_too(photo, tmp_path, capsys):
    (tmp_path / "drawn" / "row.png").mkdir(parents=True)  # a folder where the picture goes
    argv = ["detect", str(photo), "--annotate", str(tmp_path / "drawn"), "--json"]
    assert main(argv) == 2
    (record,) = json.loads(capsys.readouterr().out)
    assert "annotated" not in record and "cannot write" in record["error"]
    assert len(record["tiles"]) == 3  # the reading itself is kept


def test_pictures_whose_names_are_not_utf8_are_read_drawn_and_named(photo, tmp_path, capfd):
    # OpenCV's writer crashed the process on such a name (no message, no JSON), and printing
    # it raised UnicodeEncodeError under a UTF-8 locale
    import os
    import subprocess
    import sys

    odd = os.fsdecode(bytes(tmp_path) + b"/caf\xe9.png")
    Path(odd).write_bytes(photo.read_bytes())
    drawn = tmp_path / "drawn"
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli", "detect", odd, "--annotate", str(drawn), "--json"],
        capture_output=True,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    (record,) = json.loads(run.stdout.decode("utf-8"))
    assert record["image"].endswith("caf\\xe9.png") and len(record["tiles"]) == 3
    assert os.listdir(drawn) == [os.fsdecode(b"caf\xe9.png")]
    text = subprocess.run(
        [sys.executable, "-m", "controller.cli", "detect", odd], capture_output=True, env=env
    )
    assert text.returncode == 0 and b"caf\\xe9.png: 3 tiles" in text.stdout


def test_a_picture_too_small_to_read_is_named(photo, tmp_path, capsys):
    tiny = tmp_path / "tiny.png"
    cv2.imwrite(str(tiny), np.full((10, 10, 3), 90, np.uint8))
    assert main(["detect", str(photo), str(tiny), "--json"]) == 2
    captured = capsys.readouterr()
    assert f"mahjong-table detect: {tiny}: the picture is only 10x10" in captured.err
    records = json.loads(captured.out)
    assert records[1]["error"].startswith(f"{tiny}: ") and len(records[0]["tiles"]) == 3


def test_enrol_into_a_file_is_a_clear_error(photo, tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    assert main(["enrol", str(photo), "--out", str(a_file)]) == 2
    assert "cannot use" in capsys.readouterr().err


def test_enrol_that_fails_on_its_photos_leaves_no_folder(tmp_path, capsys):
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not a picture")
    out = tmp_path / "my-set"
    assert main(["enrol", str(junk), "--out", str(out)]) == 2
    assert "junk.png" in capsys.readouterr().err
    assert not out.exists()


def test_detect_with_unreadable_images(photo, tmp_path, capsys):
    bad = tmp_path / "bad.jpg"
    bad.write_text("no")
    args = [str(bad), str(photo), str(tmp_path / "gone.png"), str(tmp_path)]
    code = main(["detect", *args, "--json"])
    assert code == 2
    captured = capsys.readouterr()
    records = json.loads(captured.out)
    assert [r["image"] for r in records] == args
    assert "not a readable image" in records[0]["error"] and len(records[1]["tiles"]) == 3
    assert "gone.png does not exist" in records[2]["error"]
    assert "is a folder, not an image file" in records[3]["error"]
    assert "bad.jpg is not a readable image" in captured.err


def test_detect_with_a_missing_model(photo, tmp_path, capsys):
    assert main(["detect", str(photo), "--model", str(tmp_path / "none")]) == 3
    assert "no model folder" in capsys.readouterr().err


def test_every_tile_flagged_at_full_confidence(photo, capsys):
    assert main(["detect", str(photo), "--min-confidence", "1", "--json"]) == 0
    tiles = json.loads(capsys.readouterr().out)[0]["tiles"]
    assert tiles and all(t["needs_confirmation"] for t in tiles)


def test_confidence_out_of_range(photo, capsys):
    assert main(["detect", str(photo), "--min-confidence", "1.5"]) == 2
    assert "0 to 1" in capsys.readouterr().err


def test_train_without_data(tmp_path, capsys):
    assert main(["train", "--data", str(tmp_path), "--out", str(tmp_path / "m")]) == 2
    assert "no training data" in capsys.readouterr().err


def test_train_looks_where_the_shared_data_variable_says(tmp_path, capsys, monkeypatch):
    # the README promises $MAHJONG_SHARED_DATA; only the tests read it
    monkeypatch.setenv("MAHJONG_SHARED_DATA", str(tmp_path / "elsewhere"))
    assert main(["train", "--out", str(tmp_path / "m")]) == 2
    assert f"no training data at {tmp_path / 'elsewhere'}" in capsys.readouterr().err


@pytest.mark.long(20)
def test_train_tiny(tmp_path, shared_data, capsys):
    pytest.importorskip("torch", reason="the train extra (PyTorch) is not installed")
    out = tmp_path / "m"
    code = main(
        ["train", "--preset", "tiny", "--data", str(shared_data), "--out", str(out),
         "--classifier-epochs", "2", "--finder-deep-width", "0.5", "--classifier-any-tilt", "0.5",
         "--label-box-lessons", "apart"]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "model written to" in printed and "classifier epoch 2/2" in printed
    config = json.loads((out / "model.json").read_text())["training"]["config"]
    assert config["classifier_epochs"] == 2 and config["finder_deep_width"] == 0.5
    assert config["tune_table_frames"] == 1  # the tiny preset's, --tune-tables not given
    assert config["classifier_any_tilt"] == 0.5 and config["label_box_lessons"] == "apart"
    from vision.recognizer import TileRecognizer

    TileRecognizer(out)  # the narrower finder loads and runs like any other
    assert main(["detect", "--model", str(out), "--json", str(shared_data / "README.md")]) == 2


def test_only_the_training_options_given_override_the_preset():
    import argparse

    from controller.cli import build_parser
    from vision.cli import _preset_overrides

    def overrides(*argv: str) -> dict:
        args = build_parser().parse_args(["train", *argv])
        assert isinstance(args, argparse.Namespace)
        return _preset_overrides(args)

    assert overrides() == {}
    given = overrides(
        "--tune-tables", "3", "--finder-epochs", "2", "--classifier-epochs", "4",
        "--finder-deep-width", "0.5", "--classifier-any-tilt", "0.25",
        "--label-box-lessons", "none", "--no-quantise",
    )  # fmt: skip
    assert given == {
        "tune_table_frames": 3,
        "finder_epochs": 2,
        "classifier_epochs": 4,
        "finder_deep_width": 0.5,
        "classifier_any_tilt": 0.25,
        "label_box_lessons": "none",
        "quantise": False,
    }


def test_label_box_lessons_choices_are_the_trainings():
    pytest.importorskip("torch", reason="the train extra (PyTorch) is not installed")
    from vision.cli import LABEL_BOX_LESSONS
    from vision.training.train import LABEL_BOX_LESSONS as TRAINING_CHOICES

    assert LABEL_BOX_LESSONS == TRAINING_CHOICES


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--finder-deep-width", "0", "--finder-deep-width must be above 0"),
        ("--finder-deep-width", "inf", "--finder-deep-width must be above 0 and at most 8"),
        ("--classifier-any-tilt", "1.5", "--classifier-any-tilt must be a share from 0 to 1"),
        ("--classifier-any-tilt", "nan", "--classifier-any-tilt must be a share from 0 to 1"),
        ("--finder-epochs", "0", "--finder-epochs must be 1 to"),
        ("--classifier-epochs", "-1", "--classifier-epochs must be 1 to"),
        ("--threads", "0", "--threads must be 1 to 256"),
        ("--threads", "100000", "--threads must be 1 to 256"),
        ("--seed", "-1", "--seed must be 0 to 2**63 - 1"),
        ("--seed", "99999999999999999999999", "--seed must be 0 to 2**63 - 1"),
        ("--tune-tables", "0", "--tune-tables must be at least 1"),
    ],
)
def test_train_with_an_option_out_of_range(tmp_path, shared_data, capsys, option, value, said):
    pytest.importorskip("torch", reason="the train extra (PyTorch) is not installed")
    args = ["train", "--preset", "tiny", "--data", str(shared_data), "--out", str(tmp_path)]
    assert main([*args, option, value]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "model.json").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--preset", "tiny"], "--preset tiny trains a trial model: give it an --out folder"),
        (["--retune", "M", "--preset", "tiny"], "--retune trains nothing, so --preset"),
        (["--quantise", "M", "--seed", "3"], "--quantise trains nothing, so --seed"),
        (
            ["--out", "O", "--reuse-finder", "M", "--finder-epochs", "3"],
            "--reuse-finder keeps the finder, so --finder-epochs would do nothing",
        ),
        (
            ["--out", "O", "--reuse-classifier", "M", "--label-box-lessons", "none"],
            "--reuse-classifier keeps the classifier, so --label-box-lessons would do",
        ),
    ],
)
def test_train_options_that_would_be_ignored_or_overwrite_the_shipped_model_are_refused(
    tmp_path, shared_data, capsys, args, said
):
    argv = [a.replace("M", str(tmp_path / "m")).replace("O", str(tmp_path / "o")) for a in args]
    assert main(["train", "--data", str(shared_data), *argv]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.long(22)
def test_retune_chooses_the_settings_again_on_the_validation_photos(tmp_path, shared_data, capsys):
    import shutil

    from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer
    from vision.training.dataset import load_photos
    from vision.training.train import BOX_SCALES, REREADS, RESCALES, THRESHOLDS

    # a few validation photos, in the shared data's layout
    data = _data_folder(
        tmp_path / "data", load_photos(shared_data / "real-photos", ["validation"])[:6]
    )
    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model)
    weights = (model / "finder.onnx").read_bytes()
    assert main(["train", "--data", str(data), "--retune", str(model), "--tune-tables", "2"]) == 0
    printed = capsys.readouterr().out
    assert "finder threshold" in printed and "second look" in printed
    # six photos are too few reads to fit a calibration on: the model's own is kept, and said
    assert "confidence calibration" in printed and "keeps its temperature" in printed
    manifest = json.loads((model / "model.json").read_text())
    assert manifest["confidence_temperature"] == TileRecognizer().temperature
    validation = manifest["training"]["validation"]
    assert len(validation["tile_f1_by_threshold"]) == len(THRESHOLDS)
    assert len(validation["table_meld_accuracy_by_threshold"]) == len(THRESHOLDS)
    assert len(validation["tile_f1_by_rescale"]) == len(RESCALES)
    assert len(validation["tile_f1_by_reread"]) == len(REREADS)
    assert len(validation["table_meld_accuracy_by_reread"]) == len(REREADS)
    assert "scale of the reported boxes" in printed
    if validation["tile_f1_labels_apart_by_box_scale"]:
        assert len(validation["tile_f1_labels_apart_by_box_scale"]) == len(BOX_SCALES)
    if manifest["box_scale"] == TileRecognizer().box_scale:  # the scale the rest was tuned at
        at = str(manifest["reread_below"])
        assert validation["tile_f1"] == validation["tile_f1_by_reread"][at]
    assert (model / "finder.onnx").read_bytes() == weights  # nothing was trained
    rec = TileRecognizer(model)
    assert rec.finder_threshold == manifest["finder_threshold"]
    assert rec.reread_below == manifest["reread_below"]
    assert rec.box_scale == manifest["box_scale"]
    # not a model, and nothing to tune on: clear errors
    assert main(["train", "--data", str(data), "--retune", str(tmp_path / "data")]) == 3
    assert "has no model.json" in capsys.readouterr().err
    empty = tmp_path / "empty"
    (empty / "real-photos" / "images").mkdir(parents=True)
    (empty / "tile-art").mkdir()
    # photo data that cannot be used is bad input (2), not a camera or model fault (3)
    assert main(["train", "--data", str(empty), "--retune", str(model)]) == 2
    assert "no photos" in capsys.readouterr().err
    assert main(["train", "--data", str(data), "--retune", str(model), "--tune-tables", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err
    # options of a training run would do nothing: said, not dropped
    argv = ["train", "--data", str(data), "--retune", str(model), "--classifier-epochs", "40"]
    assert main([*argv, "--out", str(tmp_path / "other")]) == 2
    assert "--retune trains nothing, so --out, --classifier-epochs" in capsys.readouterr().err


def test_calibrate_confidence_fits_the_temperature_alone(
    tmp_path, shared_data, capsys, monkeypatch
):
    import shutil

    from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer
    from vision.training import confidence_fit
    from vision.training.dataset import load_photos

    data = _data_folder(
        tmp_path / "data", load_photos(shared_data / "real-photos", ["validation"])[:6]
    )
    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model)
    before = json.loads((model / "model.json").read_text())
    monkeypatch.setattr(confidence_fit, "MIN_READS", 20)  # six photos' reads: a trial fit
    argv = ["train", "--data", str(data), "--calibrate-confidence", str(model)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    after = json.loads((model / "model.json").read_text())
    temperature = after["confidence_temperature"]
    assert f"confidence_temperature {temperature}" in printed
    assert after["training"]["validation"]["confidence_reads"] >= 20
    assert TileRecognizer(model).temperature == temperature
    # nothing else is chosen again
    for key in ("finder_threshold", "rescale_above", "rescale_to", "reread_below"):
        assert after[key] == before[key]
    # options it would ignore, and two jobs at once, are refused
    assert main([*argv, "--tune-tables", "3"]) == 2
    assert "--calibrate-confidence trains nothing, so --tune-tables" in capsys.readouterr().err
    assert main([*argv, "--retune", str(model)]) == 2
    assert "each take a model: give one of them" in capsys.readouterr().err


def _data_folder(data: Path, photos: list) -> Path:
    """A data folder in the shared data's layout holding these photos alone (linked, not
    copied): the few that `train --retune`, `--quantise` or `--calibrate-confidence` read."""
    for sub in ("images", "labels"):
        (data / "real-photos" / sub).mkdir(parents=True)
    for p in photos:
        label = p.path.parent.parent / "labels" / (p.path.stem + ".txt")
        (data / "real-photos" / "images" / p.path.name).symlink_to(p.path)
        (data / "real-photos" / "labels" / label.name).symlink_to(label)
    return data


def _float_model(out: Path) -> Path:
    from vision.training.train import TrainConfig, train

    train(TrainConfig.preset("tiny", None, out, quantise=False, log=lambda _: None))
    return out


@pytest.mark.long(20)
def test_quantise_makes_a_models_classifier_int8_and_tunes_it_again(tmp_path, shared_data, capsys):
    pytest.importorskip("torch", reason="the train extra (PyTorch, onnx) is not installed")
    from vision.training.dataset import load_photos
    from vision.training.quantise import is_quantised

    photos = load_photos(shared_data / "real-photos", ["validation"])[:3]
    photos += load_photos(shared_data / "real-photos", ["train"])[:3]
    data = _data_folder(tmp_path / "data", photos)
    model = _float_model(tmp_path / "model")
    finder = (model / "finder.onnx").read_bytes()
    argv = ["train", "--data", str(data), "--tune-tables", "1"]
    assert main([*argv, "--quantise", str(model)]) == 0
    printed = capsys.readouterr().out
    assert "check tiles read right" in printed and "finder threshold" in printed
    assert is_quantised(model / "classifier.onnx")
    assert (model / "finder.onnx").read_bytes() == finder
    manifest = json.loads((model / "model.json").read_text())
    assert manifest["training"]["quantised"]["check_tiles"] > 0
    assert "tile_f1_by_reread" in manifest["training"]["validation"]  # tuned again
    # twice is refused; so is a model enrolled on the float classifier
    assert main([*argv, "--quantise", str(model)]) == 3
    assert "quantised already (to choose its settings again, use --retune)" in (
        capsys.readouterr().err
    )
    enrolled = _float_model(tmp_path / "enrolled")
    np.savez(enrolled / "head.npz", weight=np.zeros((192, 43)), bias=np.zeros(43))
    assert main([*argv, "--quantise", str(enrolled)]) == 3
    assert "enrol again" in capsys.readouterr().err
    assert not is_quantised(enrolled / "classifier.onnx")
    # one enrolled on an int8 classifier is quantised already: it said "fitted to the float
    # classifier", and to quantise the model it came from (refused as quantised already)
    np.savez(model / "head.npz", weight=np.zeros((192, 43)), bias=np.zeros(43))
    assert main([*argv, "--quantise", str(model)]) == 3
    said = capsys.readouterr().err
    assert "quantised already" in said and "float" not in said


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--retune", "other"], "--retune, --quantise, --calibrate-confidence and --flower-look"),
        (["--no-quantise"], "--quantise trains nothing, so --no-quantise would do nothing"),
        (["--out", "other"], "--quantise trains nothing, so --out would do nothing"),
    ],
)
def test_quantise_refuses_options_it_would_ignore(tmp_path, shared_data, capsys, extra, said):
    model = tmp_path / "model"
    argv = ["train", "--data", str(shared_data), "--quantise", str(model)]
    extra = [str(tmp_path / a) if a == "other" else a for a in extra]
    assert main([*argv, *extra]) == 2
    assert said in capsys.readouterr().err
    assert not model.exists()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--out", "other"], "--flower-look trains nothing but the flower look, so --out"),
        (["--tune-tables", "3"], "so --tune-tables would do nothing"),
        (["--quantise", "other"], "give one of them"),
    ],
)
def test_the_flower_look_refuses_options_it_would_ignore(tmp_path, capsys, extra, said):
    data = tmp_path / "data"
    (data / "tile-art").mkdir(parents=True)  # refused before any of it is read
    import shutil

    from vision.recognizer import DEFAULT_MODEL_DIR

    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model, ignore=shutil.ignore_patterns("*.md", "*.py"))
    before = (model / "model.json").read_text()
    argv = ["train", "--data", str(data), "--flower-look", str(model)]
    extra = [str(tmp_path / a) if a == "other" else a for a in extra]
    assert main([*argv, *extra]) == 2
    assert said in capsys.readouterr().err
    assert (model / "model.json").read_text() == before


def test_the_flower_look_of_a_folder_that_is_no_model_is_refused(tmp_path, capsys):
    (tmp_path / "tile-art").mkdir()
    argv = ["train", "--data", str(tmp_path), "--flower-look", str(tmp_path / "none")]
    assert main(argv) == 3
    assert "no model folder" in capsys.readouterr().err


def test_detect_does_not_take_the_tables_corner_markers_for_tiles(tmp_path, capsys):
    from hardware_sim.camera import SimCamera
    from vision.calibration import find_markers
    from vision.cli import not_markers
    from vision.detection import TileDetection, box_of_quad

    camera = SimCamera(seed=0)
    frame = camera.read().image
    camera.close()
    path = tmp_path / "empty.png"
    cv2.imwrite(str(path), frame)
    # the finder took two of the four markers for tiles, read unsure (W 0.22, 8s 0.18)
    assert main(["detect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["tiles"] == []
    marker = find_markers(frame)[0]
    unsure = TileDetection(27, 0.22, box_of_quad(marker), marker, needs_confirmation=True)
    sure = TileDetection(27, 0.95, box_of_quad(marker), marker)
    assert not_markers([unsure, sure], frame) == [sure]  # read surely, a tile stays


def test_detect_says_one_line_of_a_picture_cut_short_or_too_large(photo, tmp_path, capfd):
    import struct
    import zlib

    data = photo.read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    huge = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk
    huge += struct.pack(">I", zlib.crc32(chunk)) + b"\0\0\0\0IEND\xaeB`\x82"
    (tmp_path / "huge.png").write_bytes(huge)
    assert main(["detect", str(tmp_path / "cut.png"), str(tmp_path / "huge.png")]) == 2
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 2, err  # libpng's own "libpng error: ..." came first
    assert "cut.png is cut short" in err[0]
    assert "huge.png cannot be decoded: 20000x20000 pixels is too large" in err[1]
