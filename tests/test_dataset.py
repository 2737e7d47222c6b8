"""The real-photo dataset: label parsing, class mapping, the split by source photo."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import DataError
from controller.rules.tiles import Tile
from vision.training.dataset import (
    CROWDED_LABELS,
    MISS_CAUSES,
    ROBOFLOW_CODES,
    ROBOFLOW_TO_LABEL,
    SPLITS,
    LabelledPhoto,
    label_overlap,
    labelled_area,
    load_photos,
    match_detections,
    miss_causes,
    outside_labelled_area,
    parse_label_file,
    source_of,
    split_of,
    tile_f1,
)


def test_class_map_follows_the_readme_table():
    table = dict(zip(ROBOFLOW_CODES, ROBOFLOW_TO_LABEL, strict=True))
    assert len(ROBOFLOW_CODES) == 42 and sorted(ROBOFLOW_TO_LABEL) == list(range(42))
    assert table["bs1"] == Tile.SPRING and table["bs4"] == Tile.WINTER
    assert table["sc1"] == Tile.M1 and table["sd5"] == Tile.P5 and table["sb9"] == Tile.S9
    assert table["hwe"] == Tile.EAST and table["hwn"] == Tile.NORTH
    assert table["hdr"] == Tile.RED and table["hdg"] == Tile.GREEN and table["hdw"] == Tile.WHITE
    # their flower order differs from ours: bf3 is the chrysanthemum, bf4 the bamboo
    assert table["bf1"] == Tile.PLUM and table["bf2"] == Tile.ORCHID
    assert table["bf3"] == Tile.CHRYSANTHEMUM and table["bf4"] == Tile.BAMBOO_FLOWER
    assert ROBOFLOW_TO_LABEL[30] == Tile.CHRYSANTHEMUM


def test_boxes_and_polygons():
    text = "4 0.5 0.5 0.2 0.4\n\n30 0.1 0.1 0.3 0.1 0.3 0.3 0.1 0.3\n"
    boxes, labels = parse_label_file(text, 200, 100)
    assert labels.tolist() == [Tile.EAST, Tile.CHRYSANTHEMUM]
    assert boxes[0] == pytest.approx([80, 30, 40, 40])
    assert boxes[1] == pytest.approx([20, 10, 40, 20])


@pytest.mark.parametrize(
    "line",
    [
        "x 0.5 0.5 0.1 0.1",
        "99 0.5 0.5 0.1 0.1",
        "3 0.5 0.5 0.1",
        "3 0.1 0.1 0.2 0.2 0.3",
        "1 nan nan nan nan",  # would be clipped into a whole-photo box
        "1 0.5 0.5 inf 0.1",
        "4 320 320 40 60",  # pixels, not shares: every box would be dropped
        "4 0.5 0.5 3 3",  # would be clipped into a whole-photo box
        "4 1.5 1.5 0.1 0.1",  # wholly off the photo: would be dropped
        "4 0.5 0.5 -0.1 0.1",
        "4 0.5 0.5 0 0.1",
        "30 0.1 0.1 0.3 0.1 0.3 1.3 0.1 0.3",
    ],
)
def test_bad_label_lines(line):
    with pytest.raises(DataError, match="label line 1"):
        parse_label_file(line, 100, 100)


def _with_exif_orientation(jpeg: bytes, orientation: int) -> bytes:
    """The JPEG with an APP1 EXIF segment holding only an orientation tag."""
    ifd = (1).to_bytes(2, "little") + (0x0112).to_bytes(2, "little") + (3).to_bytes(2, "little")
    ifd += (1).to_bytes(4, "little") + orientation.to_bytes(2, "little") + b"\0\0" + b"\0" * 4
    body = b"Exif\0\0" + b"II*\0" + (8).to_bytes(4, "little") + ifd
    return jpeg[:2] + b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body + jpeg[2:]


def test_a_photo_turned_by_exif_is_read_as_its_labels_see_it(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "labels").mkdir()
    img = np.zeros((30, 40, 3), np.uint8)
    img[:, :20] = 255  # the left half white
    _, jpeg = cv2.imencode(".jpg", img)
    (tmp_path / "images" / "turned.jpg").write_bytes(_with_exif_orientation(jpeg.tobytes(), 6))
    (tmp_path / "labels" / "turned.txt").write_text("4 0.25 0.5 0.5 1.0\n")  # the white half
    (photo,) = load_photos(tmp_path)
    assert cv2.imread(str(photo.path)).shape[:2] == (40, 30)  # a viewer would turn it
    pixels = photo.image()
    assert photo.size == (pixels.shape[1], pixels.shape[0]) == (40, 30)
    x, y, w, h = photo.boxes[0].astype(int)
    assert pixels[y : y + h, x : x + w].mean() > 200


def test_source_and_split():
    name = "IMG_12_jpg.rf.0123abcd.jpg"
    assert source_of(name) == "IMG_12_jpg"
    assert source_of("plain.jpg") == "plain"
    assert split_of("IMG_12_jpg") in SPLITS


@given(st.text(min_size=1, max_size=30))
def test_split_is_a_function_of_the_source(source):
    assert split_of(source) == split_of(source) in SPLITS


def test_split_fractions_are_near_the_plan():
    splits = [split_of(f"photo{i}") for i in range(4000)]
    held = splits.count("held_out") / len(splits)
    val = splits.count("validation") / len(splits)
    assert 0.12 < held < 0.18 and 0.07 < val < 0.13


def test_real_photos_split_by_source(shared_data):
    photos = load_photos(shared_data / "real-photos")
    assert len(photos) == 1290
    by_source: dict[str, set[str]] = {}
    for p in photos:
        by_source.setdefault(p.source, set()).add(p.split)
        assert p.boxes.shape == (len(p.labels), 4)
        assert (p.boxes[:, 2:] > 0).all()
    assert len(by_source) == 430
    assert all(len(s) == 1 for s in by_source.values())  # no source straddles two splits
    held = [p for p in photos if p.split == "held_out"]
    assert 0.1 < len(held) / len(photos) < 0.2
    flowers = sum(int((p.labels >= 34).sum()) for p in held)
    assert flowers > 100  # enough flowers held out to report them apart
    assert {p.split for p in load_photos(shared_data / "real-photos", ["held_out"])} == {"held_out"}


def test_missing_folder(tmp_path):
    with pytest.raises(DataError, match="no photos"):
        load_photos(tmp_path)
    _labelled_folder(tmp_path, ["a.jpg"])
    for p in (tmp_path / "labels").iterdir():
        p.unlink()
    (tmp_path / "labels").rmdir()
    with pytest.raises(DataError, match="not a folder of labelled photos"):
        load_photos(tmp_path)
    with pytest.raises(DataError, match="unknown split"):
        load_photos(tmp_path, ["test"])


def _photo(boxes, labels) -> LabelledPhoto:
    return LabelledPhoto(
        Path("x.jpg"), "x", (100, 100), np.array(boxes, np.float32), np.array(labels)
    )


def test_matching_needs_the_label_and_half_the_box():
    truth = np.array([[10, 10, 20, 20], [40, 10, 20, 20]], np.float32)
    preds = [
        ((41, 11, 20, 20), 3, 0.9),  # on the second tile, right label
        ((10, 10, 20, 20), 5, 0.8),  # on the first tile, wrong label
        ((12, 30, 20, 20), 2, 0.7),  # right label, IoU below 0.5
        ((11, 10, 20, 20), 2, 0.6),  # on the first tile, right label
        ((10, 10, 20, 20), 2, 0.5),  # the same tile again: already taken
    ]
    pairs = dict(match_detections(preds, truth, np.array([2, 3])))
    assert pairs == {0: 1, 1: None, 2: None, 3: 0, 4: None}


def test_a_looser_iou_matches_a_loose_box_and_still_needs_the_label():
    truth = np.array([[0, 0, 20, 20], [40, 0, 20, 20]], np.float32)
    # IoU 0.44 with its tile: a box that disagrees, right label; then the same on the
    # second tile with the wrong label
    preds = [((0, 0, 30, 30), 1, 0.9), ((40, 0, 30, 30), 9, 0.9)]
    assert dict(match_detections(preds, truth, np.array([1, 2]))) == {0: None, 1: None}
    assert dict(match_detections(preds, truth, np.array([1, 2]), iou=0.3)) == {0: 0, 1: None}
    photo = _photo(truth, [1, 2])
    assert tile_f1([(preds, photo)])["recall"] == 0.0
    assert tile_f1([(preds, photo)], iou=0.3)["recall"] == pytest.approx(0.5)


def test_miss_causes_tell_a_box_that_disagrees_from_a_misread_and_a_miss():
    truth = np.array([[0, 0, 20, 20], [40, 0, 20, 20], [80, 0, 20, 20], [120, 0, 20, 20],
                      [160, 0, 20, 20], [200, 0, 20, 20], [202, 0, 20, 20]],
                     np.float32)  # fmt: skip
    labels = np.array([1, 2, 3, 4, 5, 6, 6])
    preds = [
        ((0, 0, 20, 20), 1, 0.9),  # found and read right: matched
        ((40, 0, 30, 30), 2, 0.9),  # right label, IoU 0.44: the boxes disagree
        ((80, 0, 20, 20), 9, 0.9),  # on the tile, wrong label
        ((120, 0, 30, 30), 9, 0.9),  # IoU 0.44 and the wrong label
        ((400, 0, 20, 20), 5, 0.9),  # nowhere near the fifth tile
        # two labelled boxes of 6 on one tile (a label drawn twice): one detection of 6 on
        # both takes one; the other is a box miss, not a misread
        ((201, 0, 20, 20), 6, 0.9),
    ]
    pairs = match_detections(preds, truth, labels)
    causes = miss_causes(preds, truth, labels, pairs)
    assert causes == {"box": 2, "misread": 1, "box and misread": 1, "not found": 1}
    assert list(causes) == list(MISS_CAUSES)


@given(
    st.lists(
        st.tuples(st.integers(0, 100), st.integers(0, 100), st.integers(5, 40), st.integers(0, 3)),
        max_size=8,
    ),
    st.lists(
        st.tuples(st.integers(0, 100), st.integers(0, 100), st.integers(5, 40), st.integers(0, 3)),
        max_size=8,
    ),
)
def test_miss_causes_account_for_every_unmatched_labelled_tile(truth, found):
    boxes = np.array([[x, y, w, w] for x, y, w, _ in truth], np.float32).reshape(-1, 4)
    labels = np.array([label for *_, label in truth], np.int64)
    preds = [((x, y, w, w), label, 1.0 - i / 10) for i, (x, y, w, label) in enumerate(found)]
    pairs = match_detections(preds, boxes, labels)
    matched = sum(j is not None for _, j in pairs)
    assert sum(miss_causes(preds, boxes, labels, pairs).values()) == len(truth) - matched


def test_tile_f1_counts_false_finds_and_misses_per_label_set():
    photo = _photo([[10, 10, 20, 20], [40, 10, 20, 20], [70, 10, 20, 20]], [2, 3, 36])
    preds = [((10, 10, 20, 20), 2, 0.9), ((40, 10, 20, 20), 4, 0.9), ((70, 60, 9, 9), 36, 0.5)]
    f = tile_f1([(preds, photo)])
    assert (f["precision"], f["recall"], f["tiles"]) == pytest.approx((1 / 3, 1 / 3, 3))
    flowers = tile_f1([(preds, photo)], set(range(34, 42)))
    assert (flowers["precision"], flowers["recall"], flowers["f1"]) == (0.0, 0.0, 0.0)
    assert tile_f1([([], photo)])["f1"] == 0.0


def test_labelled_area_covers_the_labelled_row_and_not_the_rest():
    # a row of three tiles along the top; the rest of the picture is not labelled
    boxes = np.array([[10, 10, 20, 30], [30, 10, 20, 30], [50, 10, 20, 30]], np.float32)
    area = labelled_area(boxes, 200, 150)
    assert area.shape == (150, 200) and area.dtype == np.uint8
    for x, y, w, h in boxes.astype(int):
        assert area[y : y + h, x : x + w].all()
    # grown by half the median side (30 px): a tile just past the row's end is inside, one
    # far below it is not
    assert area[25, 80] and not area[25, 120] and not area[120, 40]
    assert labelled_area(np.zeros((0, 4), np.float32), 20, 10).sum() == 0


def test_tile_f1_over_the_labelled_area_ignores_only_far_unmatched_finds():
    photo = _photo([[10, 10, 20, 20], [40, 10, 20, 20]], [2, 3])
    preds = [
        ((10, 10, 20, 20), 2, 0.9),  # right
        ((40, 10, 20, 20), 5, 0.9),  # wrong label inside the row: false
        ((60, 70, 20, 20), 7, 0.8),  # a tile nobody labelled, away from the row: not counted
    ]
    assert outside_labelled_area(preds, photo) == [False, False, True]
    plain = tile_f1([(preds, photo)])
    area = tile_f1([(preds, photo)], labelled_area_only=True)
    assert plain["precision"] == pytest.approx(1 / 3) and area["precision"] == pytest.approx(0.5)
    assert plain["recall"] == area["recall"] == pytest.approx(0.5)


def test_label_overlap_tells_tiles_side_by_side_from_boxes_that_take_in_neighbours():
    row = np.array([[10 + 32 * i, 20, 30, 40] for i in range(6)], np.float32)
    assert label_overlap(row) == 0.0
    assert label_overlap(row[:1]) == 0.0 and label_overlap(np.zeros((0, 4))) == 0.0
    # the same tiles with boxes twice their size about the same centres
    grown = row + np.array([-15, -20, 30, 40], np.float32)
    assert label_overlap(grown) >= CROWDED_LABELS


@given(
    st.lists(
        st.tuples(st.floats(0, 500), st.floats(0, 500), st.floats(1, 80), st.floats(1, 80)),
        max_size=12,
    ),
    st.floats(0.1, 10),
    st.floats(-300, 300),
)
def test_label_overlap_is_a_share_and_ignores_where_and_how_big(boxes, scale, shift):
    b = np.array(boxes, np.float32).reshape(-1, 4)
    v = label_overlap(b)
    assert 0.0 <= v <= 1.0 + 1e-6
    moved = b * scale + np.array([shift, shift, 0, 0], np.float32)
    assert label_overlap(moved) == pytest.approx(v, abs=1e-3)


def _labelled_folder(root, names: list[str], label: str = "4 0.5 0.5 0.2 0.4\n"):
    (root / "images").mkdir()
    (root / "labels").mkdir()
    _, jpeg = cv2.imencode(".jpg", np.zeros((30, 40, 3), np.uint8))
    for name in names:
        (root / "images" / name).write_bytes(jpeg.tobytes())
        (root / "labels" / (Path(name).stem + ".txt")).write_text(label)


def test_a_damaged_data_folder_is_refused_not_read_as_fewer_tiles(tmp_path):
    _labelled_folder(tmp_path, ["a.jpg", "b.JPG", "c.jpeg"])
    assert [p.path.name for p in load_photos(tmp_path)] == ["a.jpg", "b.JPG", "c.jpeg"]
    (tmp_path / "labels" / "b.txt").unlink()  # would have taught that b holds no tiles
    with pytest.raises(DataError, match=r"1 photos without a label file: b\.JPG"):
        load_photos(tmp_path)
    (tmp_path / "labels" / "b.txt").write_text("")  # a photo of no tiles says so: legal
    assert [len(p.labels) for p in load_photos(tmp_path)] == [1, 0, 1]
    (tmp_path / "labels" / "classes.txt").write_text("1m\n2m\n")  # a labelling tool's list
    assert len(load_photos(tmp_path)) == 3
    (tmp_path / "images" / "c.jpeg").unlink()
    with pytest.raises(DataError, match="1 label files without a photo: c"):
        load_photos(tmp_path)


def test_a_bad_label_file_is_named(tmp_path):
    _labelled_folder(tmp_path, ["a.jpg", "b.jpg"])
    (tmp_path / "labels" / "b.txt").write_text("4 0.5 0.5 0.2 0.4\n99 0.5 0.5 0.1 0.1\n")
    with pytest.raises(DataError, match=r"b\.txt: label line 2 has class 99"):
        load_photos(tmp_path)
    (tmp_path / "labels" / "b.txt").write_bytes(b"4 0.5 0.5 0.2 \xff\n")
    with pytest.raises(DataError, match=r"cannot read b\.txt"):
        load_photos(tmp_path)
    # saved by an editor that starts with a byte-order mark
    (tmp_path / "labels" / "b.txt").write_bytes("4 0.5 0.5 0.2 0.4\r\n".encode("utf-8-sig"))
    assert [len(p.labels) for p in load_photos(tmp_path)] == [1, 1]


def test_the_shared_data_is_where_the_variable_says(monkeypatch, tmp_path):
    from vision.training.dataset import shared_data_dir

    monkeypatch.setenv("MAHJONG_SHARED_DATA", str(tmp_path))
    assert shared_data_dir() == tmp_path
    monkeypatch.delenv("MAHJONG_SHARED_DATA")
    assert shared_data_dir() == Path(__file__).resolve().parents[2] / "shared" / "data"
