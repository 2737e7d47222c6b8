"""Enrolment: a photographed grid of one's own set, labelled by the layout, refits the head."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.cli import main
from controller.errors import ModelError
from vision import enrol
from vision.detection import TileDetection, box_iou, scale_box
from vision.labels import BACK, NUM_LABELS
from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer
from vision.rendering.faces import procedural_faces
from vision.rendering.render import Camera, PlacedTile, render_scene

# a set unlike the training colours: grey-blue body, red back
OWN_SET = procedural_faces(body=(205, 215, 200), back=(40, 40, 150), name="own")


def _grid_photo(path, layout, seed, faces=OWN_SET):
    tiles = []
    for r, row in enumerate(layout):
        for c, label in enumerate(row):
            tiles.append(PlacedTile(label, (70 + c * 66, 70 + r * 100), 0.0, 58))
    cam = Camera.looking_at((700, 560), (1000, 800), tilt=5, noise=3, blur=0.5)
    out = render_scene(tiles, faces, plane_size=(700, 560), rng=np.random.default_rng(seed),
                       table="felt", camera=cam)  # fmt: skip
    cv2.imwrite(str(path), out.image)
    return out


@pytest.fixture(scope="module")
def rec():
    return TileRecognizer(threads=2)


def test_parse_layout():
    rows = enrol.parse_layout(enrol.DEFAULT_LAYOUT)
    assert [len(r) for r in rows] == [9, 9, 9, 7, 8]
    assert sorted(x for r in rows for x in r) == list(range(42))
    assert enrol.parse_layout("12m # 3m\nEE") == [[0, 1, BACK, 2], [27, 27]]
    with pytest.raises(enrol.EnrolError, match="row 2"):
        enrol.parse_layout("123m / 12x")
    with pytest.raises(enrol.EnrolError, match="no tiles"):
        enrol.parse_layout(" / ")


def _det(x, y):
    quad = np.array([[x, y], [x + 30, y], [x + 30, y + 40], [x, y + 40]], np.float32)
    return TileDetection(0, 0.9, (x, y, 30, 40), quad)


def test_group_rows_reads_rows_left_to_right():
    dets = [_det(100, 210), _det(10, 205), _det(50, 10), _det(10, 12), _det(55, 200)]
    rows = enrol.group_rows(dets)
    assert [[d.box[0] for d in r] for r in rows] == [[10, 50], [10, 55, 100]]
    assert enrol.group_rows([]) == []


def test_fit_head_learns_separable_embeddings():
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 1, (NUM_LABELS, 16))
    labels = np.repeat(np.arange(NUM_LABELS), 5)
    emb = centres[labels] + rng.normal(0, 0.1, (len(labels), 16))
    w0, b0 = np.zeros((16, NUM_LABELS)), np.zeros(NUM_LABELS)
    assert enrol.accuracy(emb, labels, w0, b0) < 0.1
    w, b = enrol.fit_head(emb, labels, w0, b0)
    assert enrol.accuracy(emb, labels, w, b) == 1.0
    with pytest.raises(enrol.EnrolError):
        enrol.fit_head(emb[:0], labels[:0], w0, b0)


def _photo(name, centres, labels, shown, rng, views=3):
    """Synthetic enrolment embeddings: the tiles ``labels`` (embedded near their label's
    centre) in ``views`` views, labelled ``shown`` (what the user's labels say)."""
    x = np.concatenate([centres[labels] + rng.normal(0, 0.1, centres[labels].shape)
                        for _ in range(views)])  # fmt: skip
    return enrol.PhotoEmbeddings(Path(name), x, np.tile(shown, views), len(labels))


def test_cross_photo_check_reads_each_photo_with_the_others_fit():
    rng = np.random.default_rng(1)
    centres = rng.normal(0, 1, (NUM_LABELS, 16))
    every = np.arange(NUM_LABELS)
    # a trained head that reads the first half of the labels, and mixes up the rest
    seen = np.repeat(every[:20], 4)
    w0, b0 = enrol.fit_head(centres[seen] + rng.normal(0, 0.1, (len(seen), 16)), seen,
                            np.zeros((16, NUM_LABELS)), np.zeros(NUM_LABELS))  # fmt: skip
    a = _photo("a.png", centres, every, every, rng)
    b = _photo("b.png", centres, every, every, rng)
    before, after = enrol.cross_photo_accuracy([a, b], w0, b0)
    assert before < 0.7 and after == 1.0
    assert enrol.cross_photo_accuracy([a], w0, b0) is None
    # a second photo labelled wrongly (every label one off): each photo's reading by the
    # other's fit is now worse than the trained head's, and the check shows it
    wrong = _photo("w.png", centres, every, (every + 1) % 42, rng)
    before, after = enrol.cross_photo_accuracy([a, wrong], w0, b0)
    assert after < before


def test_enrol_own_set_end_to_end(tmp_path, rec):
    layout = enrol.parse_layout(enrol.DEFAULT_LAYOUT)
    photo = tmp_path / "grid.png"
    _grid_photo(photo, layout, seed=1)
    samples = enrol.samples_from_grid(rec, photo, layout)
    assert [s.label for s in samples] == [x for r in layout for x in r]

    labels_file = tmp_path / "labels.json"
    enrol.write_labels(labels_file, samples)
    again = enrol.read_labels(labels_file)
    assert [(s.label, s.box) for s in again] == [(s.label, pytest.approx(s.box, abs=0.1))
                                                 for s in samples]  # fmt: skip
    sheet = enrol.contact_sheet(samples)
    assert sheet.shape[1] == 9 * 72 and sheet.shape[0] >= 5 * 72

    w0, b0 = enrol.base_head(DEFAULT_MODEL_DIR)
    emb, labels = enrol.embeddings_of(rec, samples)
    assert len(emb) == 12 * len(samples)
    w, b = enrol.fit_head(emb, labels, w0, b0)
    assert enrol.accuracy(emb, labels, w, b) >= enrol.accuracy(emb, labels, w0, b0)
    out = enrol.save_enrolled(DEFAULT_MODEL_DIR, tmp_path / "own", w, b, {"tiles": len(samples)})

    # a new photo of the same set, laid out differently, read by the enrolled model
    second = tmp_path / "second.png"
    shuffled = [list(reversed(r)) for r in reversed(layout)]
    _grid_photo(second, shuffled, seed=2)
    enrolled = TileRecognizer(out)
    assert enrolled.head is not None
    got = enrol.samples_from_grid(enrolled, second, shuffled)
    right = sum(s.read_as == s.label for s in got) / len(got)
    base = enrol.samples_from_grid(rec, second, shuffled)
    right_before = sum(s.read_as == s.label for s in base) / len(base)
    assert right >= 0.95 and right >= right_before


def _halves(d: TileDetection, rec: TileRecognizer) -> list[TileDetection]:
    """A tile found as its two halves, each a little over half of it (as a finder that
    takes each half of a 4 筒 for a tile finds it), reported as the recogniser reports a
    box: found at the tile's read box, reported at its box scale."""
    x, y, w, h = rec.read_box(d.box)
    found = [(x, y, w, h * 0.55), (x + 1, y + h * 0.45, w - 1, h * 0.55)]
    out = []
    for b in (scale_box(f, rec.box_scale) for f in found):
        quad = np.array([[b[0], b[1]], [b[0] + b[2], b[1]],
                         [b[0] + b[2], b[1] + b[3]], [b[0], b[1] + b[3]]], np.float32)  # fmt: skip
        out.append(TileDetection(10, 0.8, b, quad))
    return out


def test_a_tile_found_in_pieces_is_one_tile_of_the_grid(tmp_path, rec, monkeypatch):
    layout = [[0, 1, 12], [27, 31]]
    photo = tmp_path / "grid.png"
    truth = _grid_photo(photo, layout, seed=4)
    img = cv2.imread(str(photo))
    found = rec.detect(img)
    assert len(found) == 5
    # the 4p (third of the first row) found as two halves
    four = min(found, key=lambda d: abs(d.box[0] - truth.tiles[2].box[0]))
    split = [d for d in found if d is not four] + _halves(four, rec)
    merged = enrol.merge_pieces(rec, img, split)
    assert len(merged) == 5 and all(d in merged for d in found if d is not four)
    (whole,) = [d for d in merged if d not in found]
    assert whole.box == pytest.approx(four.box, abs=1.5) and whole.label == 12
    assert whole.needs_confirmation
    # tiles side by side, apart or just touching, are never merged
    assert enrol.merge_pieces(rec, img, found) == found
    # nor two tiles whose boxes, drawn wide, overlap: their union is two tiles
    first, second = sorted(found, key=lambda d: d.box[1] * 10 + d.box[0])[:2]
    gap = second.box[0] - (first.box[0] + first.box[2])
    wide = [
        TileDetection(d.label, d.confidence, (x - gap, y, w + 2 * gap + 12, h), d.quad)
        for d, (x, y, w, h) in ((d, d.box) for d in (first, second))
    ]
    assert box_iou(wide[0].box, wide[1].box) > 0.05
    assert enrol.merge_pieces(rec, img, wide) == wide
    # and the grid reads as laid out, where the pieces would have made the row too long
    monkeypatch.setattr(rec, "detect", lambda image: split)
    samples = enrol.samples_from_grid(rec, photo, layout)
    assert [s.label for s in samples] == [0, 1, 12, 27, 31]
    assert samples[2].box == pytest.approx(four.box, abs=1.5)


def test_a_photo_that_does_not_match_the_layout(tmp_path, rec):
    photo = tmp_path / "grid.png"
    _grid_photo(photo, [[0, 1, 2], [3, 4]], seed=3)
    with pytest.raises(enrol.EnrolError, match="row 2 has 2 tiles found, the layout says 3"):
        enrol.samples_from_grid(rec, photo, [[0, 1, 2], [3, 4, 5]])
    with pytest.raises(enrol.EnrolError, match="found 2 rows"):
        enrol.samples_from_grid(rec, photo, [[0, 1, 2]])


def test_bad_labels_files(tmp_path):
    bad = tmp_path / "labels.json"
    bad.write_text("[1, 2")
    with pytest.raises(enrol.EnrolError, match="cannot read"):
        enrol.read_labels(bad)
    bad.write_text(json.dumps({"tiles": [{"image": "a.png", "box": [0, 0, 5, 5], "label": "Q"}]}))
    with pytest.raises(enrol.EnrolError, match="tile 1"):
        enrol.read_labels(bad)
    bad.write_text(json.dumps({"tiles": []}))
    with pytest.raises(enrol.EnrolError, match="no tiles"):
        enrol.read_labels(bad)
    bad.write_text(json.dumps({"rows": []}))
    with pytest.raises(enrol.EnrolError, match="not an enrolment labels file"):
        enrol.read_labels(bad)
    # a hand-edited box: NaN (which Python's JSON reader takes) would crash the cropping
    for box in ("[NaN, 10, 20, 20]", '"1234"', "[1, 2, 3]", "[0, 0, 0, 9]", "[0, 0, 9, Infinity]"):
        bad.write_text('{"tiles": [{"image": "a.png", "label": "5m", "box": ' + box + "}]}")
        with pytest.raises(enrol.EnrolError, match="tile 1 has a bad box"):
            enrol.read_labels(bad)


def test_a_box_off_the_photo_is_refused(tmp_path, rec):
    photo = tmp_path / "grid.png"
    _grid_photo(photo, [[0, 1, 2]], seed=5)
    samples = enrol.samples_from_grid(rec, photo, [[0, 1, 2]])
    width = cv2.imread(str(photo)).shape[1]
    off = enrol.EnrolSample(photo, (width - 5.0, 10.0, 40.0, 50.0), 0)
    with pytest.raises(enrol.EnrolError, match="lies mostly outside"):
        enrol.embeddings_by_photo(rec, [*samples, off])


def test_a_corrupt_base_head_is_a_model_error(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    data = (DEFAULT_MODEL_DIR / "base_head.npz").read_bytes()
    (model / "base_head.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match=r"no usable base_head\.npz"):
        enrol.base_head(model)


def test_enrolled_model_never_overwrites_its_base(tmp_path):
    w0, b0 = enrol.base_head(DEFAULT_MODEL_DIR)
    with pytest.raises(enrol.EnrolError, match="new folder"):
        enrol.save_enrolled(DEFAULT_MODEL_DIR, DEFAULT_MODEL_DIR, w0, b0, {})


def test_enrol_command(tmp_path, capsys):
    layout = "123456789p / ESWNCFP"
    rows = enrol.parse_layout(layout)
    photo = tmp_path / "grid.png"
    _grid_photo(photo, rows, seed=4)
    out = tmp_path / "own"
    assert main(["enrol", str(photo), "--layout", layout, "--out", str(out), "--check-only"]) == 0
    assert (out / "labels.json").is_file() and (out / "check.png").is_file()
    assert not (out / "head.npz").exists()
    # the user corrects the labels file, then refits from it
    data = json.loads((out / "labels.json").read_text())
    assert [r["label"] for r in data["tiles"]][:3] == ["1p", "2p", "3p"]
    assert main(["enrol", "--labels", str(out / "labels.json"), "--out", str(out)]) == 0
    assert (out / "head.npz").is_file() and (out / "finder.onnx").is_file()
    info = json.loads((out / "enrolment.json").read_text())
    assert info["tiles"] == 16
    printed = capsys.readouterr().out
    assert "enrolled model written" in printed and "no photo to check it on" in printed
    assert main(["detect", str(photo), "--model", str(out), "--json"]) == 0


def test_enrol_command_checks_each_photo_with_the_others_fit(tmp_path, capsys):
    layout = "123456789s / ESWNCFP"
    rows = enrol.parse_layout(layout)
    photos = [tmp_path / "one.png", tmp_path / "two.png"]
    for seed, photo in enumerate(photos, start=6):
        _grid_photo(photo, rows, seed=seed)
    out = tmp_path / "own"
    assert main(["enrol", *map(str, photos), "--layout", layout, "--out", str(out)]) == 0
    info = json.loads((out / "enrolment.json").read_text())
    assert len(info["photos"]) == 2
    assert 0.0 <= info["photo_left_out_before"] <= 1.0
    assert info["photo_left_out_after"] >= 0.9  # same set, same light: it reads the other one
    printed = capsys.readouterr()
    assert "left out of the fit" in printed.out and "warning" not in printed.err


def test_enrol_command_errors(tmp_path, capsys):
    photo = tmp_path / "grid.png"
    _grid_photo(photo, [[0, 1, 2]], seed=5)
    assert main(["enrol", str(photo), "--layout", "1234m", "--out", str(tmp_path / "o")]) == 2
    assert "row 1 has 3 tiles found" in capsys.readouterr().err
    assert main(["enrol", "--out", str(tmp_path / "o")]) == 2
    assert "give photos" in capsys.readouterr().err


def test_embed_views_embeds_every_tile_in_every_view(rec, tmp_path):
    _grid_photo(tmp_path / "g.png", [[0, 9, 18]], seed=3)
    img = cv2.imread(str(tmp_path / "g.png"))
    boxes = [d.box for d in rec.detect(img)]
    assert len(boxes) == 3
    emb = enrol.embed_views(rec, img, boxes)
    views = len(emb) // len(boxes)
    assert len(emb) == views * len(boxes) and views > 1
    # the first view is the photo as taken, each tile cut where the recogniser read it
    read_at = [rec.read_box(b) for b in boxes]
    np.testing.assert_allclose(emb[: len(boxes)], rec.embed(img, read_at), rtol=1e-5, atol=1e-5)
    # a view's turned copy of a tile embeds close to the tile as taken, not to its neighbour
    turned = emb[3 * len(boxes) : 4 * len(boxes)]
    d = np.linalg.norm(turned[:, None] - emb[None, : len(boxes)], axis=2)
    assert (d.argmin(axis=1) == np.arange(len(boxes))).all()


def _enrolled(tmp_path: Path, name: str, seed: int) -> tuple[Path, Path]:
    """A model folder enrolled on one rendered grid photo, and the photo."""
    photo = tmp_path / f"{name}.png"
    _grid_photo(photo, enrol.parse_layout("123456789p"), seed=seed)
    out = tmp_path / name
    assert main(["enrol", str(photo), "--layout", "123456789p", "--out", str(out)]) == 0
    return out, photo


def test_enrolling_from_an_enrolled_model_keeps_this_enrolments_labels(tmp_path, capsys):
    # the base folder holds its own labels.json (the user's corrections of that enrolment)
    base, _ = _enrolled(tmp_path, "first", seed=11)
    photo = tmp_path / "second.png"
    _grid_photo(photo, enrol.parse_layout("ESWNCFP"), seed=12)
    out = tmp_path / "second"
    argv = ["enrol", str(photo), "--layout", "ESWNCFP", "--model", str(base), "--out", str(out)]
    assert main(argv) == 0
    labels = json.loads((out / "labels.json").read_text())["tiles"]
    assert [r["label"] for r in labels] == ["E", "S", "W", "N", "C", "F", "P"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "labels.json",
            "check.png",
            "model.json",
            "finder.onnx",
            "classifier.onnx",
            "base_head.npz",
            "head.npz",
            "enrolment.json",
        ]
    )


def test_a_refit_finds_the_photos_from_any_folder(tmp_path, monkeypatch, capsys):
    out, photo = _enrolled(tmp_path, "own", seed=13)
    labels = json.loads((out / "labels.json").read_text())["tiles"]
    assert labels[0]["image"] == "../own.png"  # beside the labels file, not the shell's folder
    # a picture of the same name where the refit is started must not be taken instead
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _grid_photo(elsewhere / "own.png", enrol.parse_layout("987654321p"), seed=14)
    monkeypatch.chdir(elsewhere)
    assert main(["enrol", "--labels", str(out / "labels.json"), "--out", str(out)]) == 0
    info = json.loads((out / "enrolment.json").read_text())
    assert info["photos"] == [str(photo.resolve())]


def test_a_failed_write_leaves_the_enrolled_folder_as_it_was(tmp_path, monkeypatch):
    out, _ = _enrolled(tmp_path, "own", seed=15)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    w, b = enrol.base_head(out)
    real_copy = enrol.shutil.copy2

    def disk_full(src: object, dst: object) -> object:
        if Path(str(dst)).name == "classifier.onnx":
            raise OSError(28, "No space left on device")
        return real_copy(src, dst)

    monkeypatch.setattr(enrol.shutil, "copy2", disk_full)
    with pytest.raises(enrol.EnrolError, match="No space left on device"):
        enrol.save_enrolled(DEFAULT_MODEL_DIR, out, w * 2, b, {"tiles": 1})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("check_only", [False, True])
def test_enrolling_into_the_model_itself_writes_nothing_there(tmp_path, capsys, check_only):
    model = tmp_path / "model"
    import shutil

    shutil.copytree(DEFAULT_MODEL_DIR, model)
    before = sorted(p.name for p in model.iterdir())
    photo = tmp_path / "grid.png"
    _grid_photo(photo, [[0, 1, 2]], seed=5)
    argv = ["enrol", str(photo), "--layout", "123m", "--model", str(model), "--out", str(model)]
    assert main(argv + (["--check-only"] if check_only else [])) == 2
    assert "new folder" in capsys.readouterr().err
    assert sorted(p.name for p in model.iterdir()) == before


def test_enrol_input_the_user_can_mend_exits_2(tmp_path, capsys):
    out, photo = _enrolled(tmp_path, "own", seed=16)
    capsys.readouterr()
    # a photo that is not there, or not a picture: the user's to mend, not a camera failure
    (tmp_path / "empty.png").write_bytes(b"")
    for bad in ("missing.png", "empty.png"):
        argv = ["enrol", str(tmp_path / bad), "--out", str(tmp_path / "o")]
        assert main(argv) == 2
        assert f"enrolment photo: {tmp_path / bad}" in capsys.readouterr().err.replace("image ", "")
    # photos or a layout beside an existing labels file would be ignored: refused
    labels = str(out / "labels.json")
    assert main(["enrol", str(photo), "--labels", labels, "--out", str(out)]) == 2
    assert "would be ignored" in capsys.readouterr().err
    assert main(["enrol", "--layout", "1m", "--labels", labels, "--out", str(out)]) == 2
    # a labels file in a folder still to make is made
    fresh = tmp_path / "new" / "folder" / "labels.json"
    argv = ["enrol", str(photo), "--layout", "123456789p", "--labels", str(fresh)]
    assert main([*argv, "--out", str(tmp_path / "o2"), "--check-only"]) == 0
    assert fresh.is_file()


def test_hand_edited_labels_name_the_tile_that_is_wrong(tmp_path):
    bad = tmp_path / "labels.json"
    good = {"image": "a.png", "box": [0, 0, 5, 5], "label": "5m"}
    for record, said in (
        ({"image": "a.png", "box": [0, 0, 5, 5]}, "tile 2 has no label"),
        ({"image": "a.png", "label": "5m"}, "tile 2 has no box"),
        ({"image": None, "box": [0, 0, 5, 5], "label": "5m"}, "tile 2 has no image file"),
        ({"image": "a.png", "box": [0, "x", 5, 5], "label": "5m"}, "tile 2 has a bad box"),
        ("5m", "tile 2 is not a record"),
        ({"image": "a.png", "box": [0, 0, 5, 5], "label": "9p"}, "tiles 1 and 2 are the same"),
    ):
        bad.write_text(json.dumps({"tiles": [good, record]}))
        with pytest.raises(enrol.EnrolError, match=said):
            enrol.read_labels(bad)
    bad.write_text(json.dumps({"tiles": [good, good]}))  # the same twice, alike: harmless
    assert len(enrol.read_labels(bad)) == 2


@pytest.mark.parametrize(
    ("weight", "bias", "said"),
    [
        (np.zeros((100, NUM_LABELS)), np.zeros(NUM_LABELS), "not 192x43"),
        (np.zeros((192, 40)), np.zeros(NUM_LABELS), "not 192x43"),
        (np.zeros((192, NUM_LABELS)), np.zeros(3), "and 43"),
        (np.full((192, NUM_LABELS), np.nan), np.zeros(NUM_LABELS), "not numbers"),
    ],
)
def test_a_base_head_that_does_not_fit_the_classifier_is_a_model_error(
    tmp_path, rec, weight, bias, said
):
    model = tmp_path / "model"
    model.mkdir()
    np.savez(model / "base_head.npz", weight=weight, bias=bias)
    assert rec.embedding_size == 192
    with pytest.raises(ModelError, match=said):
        enrol.base_head(model, rec.embedding_size)


def test_a_labels_file_of_the_earlier_form_still_finds_its_photos(tmp_path, monkeypatch):
    # earlier labels files named photos relative to the folder enrol ran in
    (tmp_path / "photos").mkdir()
    _grid_photo(tmp_path / "photos" / "grid.png", [[0, 1, 2]], seed=5)
    (tmp_path / "my-tiles").mkdir()
    labels = tmp_path / "my-tiles" / "labels.json"
    record = {"image": "photos/grid.png", "box": [0, 0, 5, 5], "label": "1m"}
    labels.write_text(json.dumps({"tiles": [record]}))
    monkeypatch.chdir(tmp_path)
    (sample,) = enrol.read_labels(labels)
    assert sample.image == (tmp_path / "photos" / "grid.png").resolve()
