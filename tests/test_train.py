"""The training pipeline, run in its tiny configuration: data, both networks, ONNX export and
the manifest, read back by the runtime recogniser."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from controller.errors import ModelError
from vision.labels import BACK

torch = pytest.importorskip("torch", reason="the train extra (PyTorch) is not installed")

from vision.detection import box_iou, scale_box  # noqa: E402
from vision.flower_look import FLOWER_LOOK_FILE  # noqa: E402
from vision.recognizer import TileRecognizer, refine_box  # noqa: E402
from vision.training.dataset import LabelledPhoto  # noqa: E402
from vision.training.train import (  # noqa: E402
    BOX_SCALES,
    CROP_MARGIN,
    CROP_SIZE,
    EMBEDDING,
    REREADS,
    RESCALES,
    STORE_SIZE,
    TABLE_SLACK,
    THRESHOLDS,
    TrainConfig,
    _augment_crops,
    _box_loss,
    _classifier_data,
    _crop_from_quadless,
    _finder_loss,
    _finder_targets,
    _fitting_photos,
    _real_finder_sample,
    _rot90,
    _Sample,
    _tune_box_scale,
    box_target,
    boxes_at_found,
    build_classifier,
    build_finder,
    export_onnx,
    train,
)


def test_networks_shapes():
    finder = build_finder().eval()
    hm, reg = finder(torch.zeros(1, 3, 128, 96))
    assert hm.shape == (1, 2, 32, 24) and reg.shape == (1, 6, 32, 24)
    cls = build_classifier().eval()
    logits, emb, box = cls(torch.zeros(5, 3, CROP_SIZE, CROP_SIZE))
    assert logits.shape == (5, 43) and emb.shape == (5, EMBEDDING) and box.shape == (5, 4)


@pytest.mark.parametrize("width", [0.5, 1.5])
def test_finder_deep_width_scales_the_deep_stages_and_keeps_the_outputs(width):
    plain = build_finder()
    finder = build_finder(width).eval()
    size = sum(p.numel() for p in finder.parameters())
    assert (size > sum(p.numel() for p in plain.parameters())) == (width > 1)
    # the costly stages at 1/4 and 1/8 of the picture stay as they were
    for part in ("stem", "d4", "d8", "u8", "l8", "u4", "hm", "reg"):
        shapes = [p.shape for p in getattr(finder, part).parameters()]
        assert shapes == [p.shape for p in getattr(plain, part).parameters()], part
    assert finder.d32[-1][-3].out_channels == round(160 * width / 8) * 8
    hm, reg = finder(torch.zeros(1, 3, 64, 96))
    assert hm.shape == (1, 2, 16, 24) and reg.shape == (1, 6, 16, 24)


@pytest.mark.parametrize("width", [0, -1.0])
def test_finder_deep_width_must_be_positive(width, tmp_path):
    with pytest.raises(ModelError, match="width"):
        build_finder(width)
    with pytest.raises(ModelError, match="width"):  # before any training starts
        TrainConfig.preset("tiny", None, tmp_path, finder_deep_width=width)


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan")])
def test_share_of_tilted_crops_must_be_a_share(share, tmp_path):
    with pytest.raises(ModelError, match="tilted crops"):  # before any training starts
        TrainConfig.preset("tiny", None, tmp_path, classifier_any_tilt=share)


def _with_running_statistics(model):
    """The model in eval mode with BatchNorm statistics unlike any one picture's (as after
    training), so that a module handed back in training mode answers differently."""
    gen = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) - 0.5)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
    return model.eval()


def test_exporting_leaves_the_trained_networks_as_they_were(tmp_path):
    # the training run exports the finder early and then validates it in torch: the export
    # must not hand it back in training mode
    finder = _with_running_statistics(build_finder())
    cls = _with_running_statistics(build_classifier())
    x = torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(2)) * 255
    crops = torch.rand(3, 3, CROP_SIZE, CROP_SIZE, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        hm, reg = finder(x)
        logits = cls(crops * 255)[0]
    export_onnx(finder, cls, tmp_path)
    assert not any(m.training for m in finder.modules())
    assert not any(m.training for m in cls.modules())
    with torch.no_grad():
        hm2, reg2 = finder(x)
        logits2 = cls(crops * 255)[0]
    assert torch.equal(hm, hm2) and torch.equal(reg, reg2) and torch.equal(logits, logits2)


def test_finder_targets_mark_centres():
    sample = _Sample(
        np.zeros((64, 64, 3), np.uint8),
        np.array([[10, 10, 12, 16], [40, 30, 16, 12]], np.float32),
        np.array([np.pi / 2, np.nan], np.float32),
        np.array([5, BACK]),
    )
    t = _finder_targets(sample, 64)
    assert t["hm"].shape == (2, 16, 16)
    # a face-up tile peaks in the first heatmap, a face-down one in the second
    assert t["hm"][0, 4, 4] == 1.0 and t["hm"][1, 9, 12] == 1.0
    assert t["hm"][1, 4, 4] == 0.0 and t["hm"][0, 9, 12] == 0.0
    assert t["ind"].tolist() == [4 * 16 + 4, 9 * 16 + 12]
    assert t["reg"][0, :2] == pytest.approx([0.0, 0.5])
    assert t["reg"][0, 2:4] == pytest.approx(np.log([3.0, 4.0]))
    assert t["reg"][0, 4:] == pytest.approx([-1.0, 0.0], abs=1e-6)  # cos 2θ, sin 2θ at 90°
    assert t["amask"].tolist() == [1.0, 0.0]  # no angle known for the second


def test_finder_loss_says_nothing_where_the_labels_are_silent():
    t_hm = torch.zeros(1, 2, 8, 8)
    t_hm[0, 0, 2, 2] = 1.0  # one labelled tile
    ind = torch.tensor([[2 * 8 + 2]])
    t_reg = torch.zeros(1, 1, 6)
    mask, amask = torch.ones(1, 1), torch.zeros(1, 1)
    known = torch.ones(1, 8, 8)
    known[0, 5:, 5:] = 0  # an unlabelled corner
    quiet = torch.full((1, 2, 8, 8), -6.0)
    quiet[0, 0, 2, 2] = 6.0
    reg = torch.zeros(1, 6, 8, 8)

    def loss(hm, kn):
        return _finder_loss(hm, reg, t_hm, kn, ind, t_reg, mask, amask)[1]["focal"]

    corner, row = quiet.clone(), quiet.clone()
    corner[0, 0, 6, 6] = 6.0  # a peak in the unlabelled corner
    row[0, 0, 2, 5] = 6.0  # a peak in the labelled part, where no tile is
    assert loss(corner, known) == pytest.approx(loss(quiet, known))
    assert loss(row, known) > loss(quiet, known) + 1
    assert loss(corner, torch.ones(1, 8, 8)) > loss(quiet, known) + 1  # fully labelled


def test_real_photo_samples_carry_their_labelled_area_with_them(tmp_path):
    # green tiles labelled along the top, a red one nobody labelled in the far corner: after
    # the sample's scaling, cropping and quarter turns the mask still covers the green and
    # not the red
    img = np.full((640, 640, 3), 60, np.uint8)
    boxes = np.array([[40 + 45 * i, 40, 40, 50] for i in range(4)], np.float32)
    for x, y, w, h in boxes.astype(int):
        img[y : y + h, x : x + w] = (0, 255, 0)
    img[480:530, 500:540] = (0, 0, 255)
    cv2.imwrite(str(tmp_path / "p.png"), img)
    photo = LabelledPhoto(tmp_path / "p.png", "p", (640, 640), boxes, np.arange(4))
    for seed in range(12):
        s = _real_finder_sample(photo, 320, np.random.default_rng(seed))
        assert s.known is not None and s.known.shape == s.image.shape[:2]
        g, r = (s.image[..., i].astype(int) for i in (1, 2))
        assert s.known[(g > 200) & (r < 40)].all()
        assert not s.known[(r > 200) & (g < 40)].any()
        for x, y, w, h in s.boxes:  # the boxes turned with the picture too
            cx, cy = int(x + w / 2), int(y + h / 2)
            if 0 <= cx < 320 and 0 <= cy < 320:
                assert g[cy, cx] > 200
    plain = _real_finder_sample(photo, 320, np.random.default_rng(0), mask_unlabelled=False)
    assert plain.known is None


def test_stretched_real_samples_keep_their_boxes_on_their_tiles(tmp_path):
    img = np.full((640, 640, 3), 60, np.uint8)
    boxes = np.array([[40 + 45 * i, 40, 40, 50] for i in range(4)], np.float32)
    for x, y, w, h in boxes.astype(int):
        img[y : y + h, x : x + w] = (0, 255, 0)
    cv2.imwrite(str(tmp_path / "p.png"), img)
    photo = LabelledPhoto(tmp_path / "p.png", "p", (640, 640), boxes, np.arange(4))
    aspects = []
    for seed in range(16):
        s = _real_finder_sample(photo, 320, np.random.default_rng(seed), stretch=1.6)
        g = s.image[..., 1].astype(int)
        for x, y, w, h in s.boxes:
            if x < 0 or y < 0 or x + w > 320 or y + h > 320:
                continue  # cut by the sample's edge
            # the box still fits its tile: green just inside every edge
            inner = g[int(y + 2) : int(y + h - 2), int(x + 2) : int(x + w - 2)]
            assert inner.size and (inner > 200).all()
            aspects.append(min(w, h) / max(w, h))
    # quarter turns alone would keep every tile at 4:5
    assert min(aspects) < 0.72 and max(aspects) > 0.88


def test_finder_leaves_out_photos_whose_boxes_cover_their_neighbours(tmp_path):
    side_by_side = np.array([[40 + 45 * i, 40, 40, 50] for i in range(4)], np.float32)
    enlarged = side_by_side * np.array([1, 1, 3, 3], np.float32)  # three times their tiles
    apart = LabelledPhoto(tmp_path / "a.png", "a", (640, 640), side_by_side, np.arange(4))
    covering = LabelledPhoto(tmp_path / "b.png", "b", (640, 640), enlarged, np.arange(4))
    logged = []
    cfg = TrainConfig.preset(
        "tiny", None, tmp_path, finder_max_label_overlap=0.45, log=logged.append
    )
    assert _fitting_photos(cfg, [apart, covering]) == [apart]
    assert "1 of 2" in logged[0]
    keep_all = TrainConfig.preset("tiny", None, tmp_path, finder_max_label_overlap=None)
    assert _fitting_photos(keep_all, [apart, covering]) == [apart, covering]


def test_crowded_labelled_boxes_teach_only_the_label_when_asked(tmp_path):
    side_by_side = np.array([[40 + 45 * i, 40, 40, 50] for i in range(4)], np.float32)
    enlarged = side_by_side * np.array([1, 1, 3, 3], np.float32)
    for name in ("a", "b"):
        cv2.imwrite(str(tmp_path / f"{name}.png"), np.full((640, 640, 3), 90, np.uint8))
    apart = LabelledPhoto(tmp_path / "a.png", "a", (640, 640), side_by_side, np.arange(4))
    covering = LabelledPhoto(tmp_path / "b.png", "b", (640, 640), enlarged, np.arange(4))
    # the finder found the covering photo's first tile; its other crops stay at their labels
    found = {apart.path: side_by_side, covering.path: np.vstack([side_by_side[:1], enlarged[1:]])}
    rng = np.random.default_rng(0)
    logged = []
    cfg = TrainConfig.preset("tiny", None, tmp_path, label_box_lessons="apart", log=logged.append)
    data = _classifier_data(cfg, [apart, covering], [], rng, None, found)
    assert data.box_known.tolist() == [True] * 5 + [False] * 3
    assert "3 crops teach the label only" in logged[-1]
    everything = TrainConfig.preset("tiny", None, tmp_path, log=logged.append)
    data = _classifier_data(everything, [apart, covering], [], rng, None, found)
    assert data.box_known.all() and len(data.labels) == 8
    # the finder moved apart's first two tiles too: with "none", every crop at its own label
    # goes, in either photo
    apart_unfound = {
        apart.path: np.vstack([side_by_side[:2] + 1, side_by_side[2:]]),
        covering.path: found[covering.path],
    }
    none = TrainConfig.preset("tiny", None, tmp_path, label_box_lessons="none", log=logged.append)
    data = _classifier_data(none, [apart, covering], [], rng, None, apart_unfound)
    assert data.box_known.tolist() == [True, True, False, False, True, False, False, False]


def test_label_box_lessons_must_be_a_known_choice(tmp_path):
    with pytest.raises(ModelError, match="label_box_lessons must be one of all, apart, none"):
        TrainConfig.preset("tiny", None, tmp_path, label_box_lessons="some")


def test_box_loss_counts_only_the_crops_whose_box_is_known():
    box = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    targets = np.zeros((2, 4), np.float32)
    every = torch.nn.functional.smooth_l1_loss(box, torch.from_numpy(targets), beta=0.05)
    assert float(_box_loss(torch, box, targets, None)) == pytest.approx(float(every))
    assert float(_box_loss(torch, box, targets, np.array([True, True]))) == pytest.approx(
        float(every)
    )
    assert float(_box_loss(torch, box, targets, np.array([True, False]))) == 0.0
    assert float(_box_loss(torch, box, targets, np.array([False, True]))) == pytest.approx(0.975)
    assert float(_box_loss(torch, box, targets, np.array([False, False]))) == 0.0


def test_crops_move_to_the_found_box_that_overlaps_their_tile_most():
    labelled = np.array([[0, 0, 40, 40], [40, 0, 40, 40], [200, 200, 30, 30]], np.float32)
    found = np.array(
        [
            [45, 5, 30, 30],  # inside the second label: IoU 0.56
            [5, 5, 30, 30],  # inside the first
            [8, 8, 30, 30],  # the first again, less well: not used
            [120, 0, 40, 40],  # no label there
        ],
        np.float32,
    )
    out = boxes_at_found(labelled, found)
    assert out.tolist() == [[5, 5, 30, 30], [45, 5, 30, 30], [200, 200, 30, 30]]
    assert boxes_at_found(labelled, found[:0]).tolist() == labelled.tolist()
    # two loose labels over one tile: the one found box goes to one of them only
    twins = np.array([[0, 0, 40, 40], [2, 0, 40, 40]], np.float32)
    out = boxes_at_found(twins, np.array([[1, 0, 40, 40]], np.float32))
    assert sorted(out.tolist()) == [[1, 0, 40, 40], [2, 0, 40, 40]]
    assert boxes_at_found(labelled, found, min_iou=0.6).tolist() == labelled.tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(*[st.integers(0, 200)] * 2, *[st.integers(4, 60)] * 2), max_size=8),
    st.lists(st.tuples(*[st.integers(0, 200)] * 2, *[st.integers(4, 60)] * 2), max_size=8),
)
def test_found_boxes_replace_labels_one_to_one_and_only_where_they_overlap(lab, fnd):
    labelled = np.array(lab, np.float32).reshape(-1, 4)
    found = np.array(fnd, np.float32).reshape(-1, 4)
    out = boxes_at_found(labelled, found)
    assert out.shape == labelled.shape
    used = Counter()
    for a, b in zip(labelled, out, strict=True):
        if (a != b).any():
            assert any((f == b).all() for f in found)
            assert box_iou(tuple(a), tuple(b)) >= 0.4 - 1e-6
            used[tuple(b.tolist())] += 1
    # no found box stands for two labelled ones (equal found boxes may stand for one each)
    available = Counter(tuple(f.tolist()) for f in found)
    assert all(n <= available[box] for box, n in used.items())


def test_quarter_turns_keep_boxes_on_their_tiles():
    img = np.zeros((40, 60, 3), np.uint8)
    img[5:15, 20:28] = 255
    boxes = np.array([[20, 5, 8, 10]], np.float32)
    for k in range(4):
        turned, b = _rot90(img, boxes, k)
        x, y, w, h = b[0].astype(int)
        assert turned[y : y + h, x : x + w].min() == 255
        assert turned.sum() == img.sum()


def test_box_target_of_an_unmoved_crop_is_the_tile_itself():
    # the recogniser's window: the middle CROP_SIZE of the stored crop, nothing turned
    m = np.array([[1.0, 0, -(STORE_SIZE - CROP_SIZE) / 2], [0, 1.0, -(STORE_SIZE - CROP_SIZE) / 2]])
    t = box_target(m, (0.75, 1.0))
    assert t[:2] == pytest.approx([0.0, 0.0], abs=1e-6)
    assert np.exp(t[2:]) == pytest.approx([0.75 / CROP_MARGIN, 1.0 / CROP_MARGIN])
    # so the recogniser, cutting its crop around the true box, gets that box back
    box = (100.0, 50.0, 30.0, 40.0)
    assert refine_box(box, t, CROP_MARGIN) == pytest.approx(box)


@settings(max_examples=60, deadline=None)
@given(
    x=st.floats(20, 200), y=st.floats(20, 200), w=st.floats(12, 60), aspect=st.floats(0.5, 2.0),
    seed=st.integers(0, 2**32 - 1), any_tilt=st.sampled_from([0.0, 1.0]),
)  # fmt: skip
# the smallest, tallest tile turned: its mask's plain bounding box reads IoU 0.82 (see below)
@example(x=20.0, y=20.0, w=12.0, aspect=2.0, seed=556, any_tilt=1.0)
# the window drawn smaller than the tile: the crop is all tile, with no edge to measure
@example(x=20.0, y=20.0, w=12.0, aspect=1.0, seed=41133872, any_tilt=0.0)
def test_augmented_crops_know_where_their_tile_is(x, y, w, aspect, seed, any_tilt):
    # a white tile on black: whatever window jitter and turn the augmentation draws, the
    # box it says the tile has in the crop, mapped back through the window the crop stands
    # for, lands on the tile
    h = w * aspect
    img = np.zeros((300, 300, 3), np.uint8)
    cv2.rectangle(img, (round(x), round(y)), (round(x + w) - 1, round(y + h) - 1), (255,) * 3, -1)
    # pixel i covers i-0.5 to i+0.5 (the convention of cv2's warps)
    box = (round(x) - 0.5, round(y) - 0.5, round(x + w) - round(x), round(y + h) - round(y))
    crop = _crop_from_quadless(img, box, None)
    aspects = np.array([[box[2] / max(box[2:]), box[3] / max(box[2:])]], np.float32)
    out, t = _augment_crops(crop[None], aspects, np.random.default_rng(seed), any_tilt)
    cx, cy = (t[0, :2] + 0.5) * CROP_SIZE
    bw, bh = np.exp(t[0, 2:]) * CROP_SIZE
    grey = out[0].max(axis=2).astype(np.float32)
    # the crop's colour jitter moves the levels: the tile is the brighter half
    mask = grey > (grey.min() + grey.max()) / 2
    ys, xs = np.nonzero(mask)
    # the tile must lie whole inside the crop for its edges to be measured
    assume(xs.size > 0)
    assume(xs.min() > 0 and ys.min() > 0 and xs.max() < CROP_SIZE - 1 and ys.max() < CROP_SIZE - 1)
    said = (cx - bw / 2, cy - bh / 2, bw, bh)
    seen = (xs.min() - 0.5, ys.min() - 0.5, xs.max() - xs.min() + 1, ys.max() - ys.min() + 1)
    # a turned tile's box ends at its sharp corners, which the warp's antialiasing leaves
    # under half bright: the mask falls short of it by up to 2 px a side, whatever the tile's
    # size. The mask's turned outline (its least-area rectangle) keeps those corners.
    pixels = [np.stack([xs + dx, ys + dy], 1) for dx in (-0.5, 0.5) for dy in (-0.5, 0.5)]
    corners = cv2.boxPoints(cv2.minAreaRect(np.concatenate(pixels).astype(np.float32)))
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    outline = (lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1])
    assert max(box_iou(seen, said), box_iou(outline, said)) > 0.85


@pytest.mark.parametrize("any_tilt", [0.0, 1.0])
def test_tilted_crops_frame_the_tile_as_the_recognisers_crop_would(any_tilt):
    # the recogniser cuts its crop around the box that holds a tile, CROP_MARGIN x its longer
    # side: however far a crop is tilted, the box around its tile must keep that share of the
    # crop (up to the window's scale jitter), or tilted tiles would be learnt larger than
    # they are ever seen
    img = np.zeros((200, 200, 3), np.uint8)
    cv2.rectangle(img, (85, 80), (114, 119), (255,) * 3, -1)
    crop = _crop_from_quadless(img, (84.5, 79.5, 30, 40), None)
    n = 400
    _, t = _augment_crops(
        np.repeat(crop[None], n, axis=0), np.tile([[0.75, 1.0]], (n, 1)).astype(np.float32),
        np.random.default_rng(7), any_tilt,
    )  # fmt: skip
    sides = np.exp(t[:, 2:])
    longer = sides.max(axis=1) * CROP_MARGIN
    assert 0.95 < np.median(longer) < 1.15
    # and the tilts are drawn: a 3:4 tile turned near 45 degrees has a box near square
    squarish = np.mean((sides[:, 0] / sides[:, 1] > 0.88) & (sides[:, 0] / sides[:, 1] < 1.14))
    if any_tilt:
        assert squarish > 0.25
    else:
        assert squarish == 0.0


@pytest.mark.long(20)
def test_tiny_training_run_exports_a_working_model(tmp_path, shared_data):
    out = tmp_path / "model"
    logs: list[str] = []
    cfg = TrainConfig.preset("tiny", shared_data, out, log=logs.append)
    manifest = train(cfg).to_json()
    for name in ("finder.onnx", "classifier.onnx", "model.json", "base_head.npz"):
        assert (out / name).is_file()
    assert json.loads((out / "model.json").read_text()) == manifest
    assert manifest["training"]["real_train_photos"] == 12
    # the finder threshold is the one of best tile F1 on the validation photos of those
    # that read the rendered tables about as well as the best one
    by_threshold = manifest["training"]["validation"]["tile_f1_by_threshold"]
    table = manifest["training"]["validation"]["table_meld_accuracy_by_threshold"]
    assert sorted(float(t) for t in by_threshold) == list(THRESHOLDS) == sorted(map(float, table))
    eligible = [t for t in table if table[t] >= max(table.values()) - TABLE_SLACK]
    chosen = str(manifest["finder_threshold"])
    assert chosen in eligible
    assert by_threshold[chosen] == max(by_threshold[t] for t in eligible)
    # then the close-up second look, at that threshold
    by_rescale = manifest["training"]["validation"]["tile_f1_by_rescale"]
    assert len(by_rescale) == len(RESCALES) and "off" in by_rescale
    chosen = (
        f"{manifest['rescale_above']:g}/{manifest['rescale_to']:g}"
        if manifest["rescale"]
        else "off"
    )
    assert by_rescale[chosen] == max(by_rescale.values())
    # then the confidence under which a tile is read again turned: a new model starts at
    # never (0), read with the settings chosen so far
    by_reread = manifest["training"]["validation"]["tile_f1_by_reread"]
    assert sorted(map(float, by_reread)) == list(REREADS)
    assert by_reread["0.0"] == by_rescale[chosen]
    # of those that read the rendered tables about as well as the best
    table_u = manifest["training"]["validation"]["table_meld_accuracy_by_reread"]
    assert sorted(map(float, table_u)) == list(REREADS)
    fit = [u for u in table_u if table_u[u] >= max(table_u.values()) - TABLE_SLACK]
    reread = str(manifest["reread_below"])
    assert reread in fit and by_reread[reread] == max(by_reread[u] for u in fit)
    # last the scale of the reported boxes, on the photos whose labels stay apart; a new
    # model starts at 1
    by_scale = manifest["training"]["validation"]["tile_f1_labels_apart_by_box_scale"]
    if by_scale:
        assert sorted(map(float, by_scale)) == list(BOX_SCALES)
        assert by_scale[str(manifest["box_scale"])] == max(by_scale.values())
    if manifest["box_scale"] == 1.0:
        assert manifest["training"]["validation"]["tile_f1"] == by_reread[reread]
    assert any("finder epoch 1/1" in line for line in logs)
    rec = TileRecognizer(out)
    assert rec.rescale == manifest["rescale"]
    assert rec.reread_below == manifest["reread_below"]
    image = (np.random.default_rng(0).random((120, 160, 3)) * 255).astype(np.uint8)
    found = rec.detect(image)  # an untrained model finds anything or nothing, but runs
    assert all(0 <= d.label < 43 for d in found)
    assert rec.embed(image, [(10, 10, 30, 40)]).shape == (1, EMBEDDING)
    assert rec.refine  # the exported classifier places each tile in its crop
    # the classifier was quantised before the settings were chosen, or the manifest says why not
    from vision.training.quantise import is_quantised

    quantised = manifest["training"]["quantised"]
    assert is_quantised(out / "classifier.onnx") == ("refused" not in quantised)
    assert quantised["check_tiles"] > 0
    # then the flower look was fitted on it, or the manifest says why not
    look = manifest["training"]["flower_look"]
    assert (out / FLOWER_LOOK_FILE).is_file() == look["fitted"] == (rec.flower_look is not None)


def test_training_without_shared_data_uses_procedural_faces(tmp_path):
    cfg = TrainConfig.preset("tiny", None, tmp_path / "m", log=lambda _: None)
    manifest = train(cfg).to_json()
    assert manifest["training"]["real_train_photos"] == 0
    assert manifest["finder_threshold"] == 0.4  # no validation photos to choose it on
    TileRecognizer(tmp_path / "m")


def test_a_float_classifier_is_kept_when_asked(tmp_path):
    from vision.training.quantise import is_quantised

    manifest = train(
        TrainConfig.preset("tiny", None, tmp_path / "m", quantise=False, log=print)
    ).to_json()
    assert not is_quantised(tmp_path / "m" / "classifier.onnx")
    assert "quantised" not in manifest["training"]


def test_a_quantisation_that_reads_worse_leaves_the_float_classifier_and_says_so(
    tmp_path, monkeypatch
):
    from vision.training import quantise
    from vision.training.quantise import is_quantised

    monkeypatch.setattr(quantise, "MAX_LOSS", -1.0)  # nothing can be good enough
    logs: list[str] = []
    manifest = train(TrainConfig.preset("tiny", None, tmp_path / "m", log=logs.append)).to_json()
    assert not is_quantised(tmp_path / "m" / "classifier.onnx")
    assert "the float classifier is kept" in manifest["training"]["quantised"]["refused"]
    assert any("the float classifier is kept" in line for line in logs)
    TileRecognizer(tmp_path / "m")


def test_a_quantisation_that_fails_leaves_the_float_classifier_and_says_why(tmp_path, monkeypatch):
    from vision.training import quantise
    from vision.training.quantise import is_quantised

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(quantise, "quantise_classifier", broken)
    manifest = train(TrainConfig.preset("tiny", None, tmp_path / "m", log=lambda _: None)).to_json()
    assert not is_quantised(tmp_path / "m" / "classifier.onnx")
    assert manifest["training"]["quantised"] == {
        "refused": "quantising failed ([Errno 28] No space left on device): the float "
        "classifier is kept"
    }


def test_unknown_preset(tmp_path):
    with pytest.raises(ModelError, match="preset"):
        TrainConfig.preset("huge", None, tmp_path)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """A tiny model (procedural faces only) for the reuse tests to keep a part of."""
    out = tmp_path_factory.mktemp("first") / "model"
    train(TrainConfig.preset("tiny", None, out, log=lambda _: None))
    return out


def test_reusing_a_finder_trains_only_the_classifier(first, tmp_path):
    second = tmp_path / "second"
    logs: list[str] = []
    cfg = TrainConfig.preset(
        "tiny", None, second, reuse_finder=first, finder_epochs=7, log=logs.append
    )
    manifest = train(cfg).to_json()
    assert (second / "finder.onnx").read_bytes() == (first / "finder.onnx").read_bytes()
    assert not any("finder epoch" in line for line in logs)
    TileRecognizer(second)
    # the manifest describes the finder it holds, not this run's settings for one
    config = manifest["training"]["config"]
    assert config["finder_epochs"] == 1 and config["finder_from"] == str(first)
    assert "classifier_from" not in config


def test_reusing_a_classifier_trains_only_the_finder(first, tmp_path):
    from vision.training.quantise import is_quantised

    second = tmp_path / "second"
    logs: list[str] = []
    train(TrainConfig.preset("tiny", None, second, reuse_classifier=first, log=logs.append))
    for name in ("classifier.onnx", "base_head.npz"):
        assert (second / name).read_bytes() == (first / name).read_bytes()
    config = json.loads((second / "model.json").read_text())["training"]["config"]
    assert config["classifier_from"] == str(first) and "finder_from" not in config
    # a kept int8 classifier is not quantised twice, and keeps its record of how it was
    assert is_quantised(second / "classifier.onnx")
    assert any("quantised already: kept" in line for line in logs)
    record = json.loads((first / "model.json").read_text())["training"]["quantised"]
    second_record = json.loads((second / "model.json").read_text())["training"]["quantised"]
    assert second_record == record
    assert any("finder epoch" in line for line in logs)
    assert not any("classifier epoch" in line for line in logs)
    TileRecognizer(second)


def test_a_run_that_fits_no_flower_look_removes_the_old_one(first, tmp_path, monkeypatch):
    out = tmp_path / "m"
    shutil.copytree(first, out)
    # a look fitted to another classifier's embeddings would misread the new one's
    (out / FLOWER_LOOK_FILE).write_bytes(b"a look fitted to another classifier")
    monkeypatch.setattr("vision.training.train.fit_flower_look", lambda *a, **k: None)
    train(TrainConfig.preset("tiny", None, out, log=lambda _: None))
    assert not (out / FLOWER_LOOK_FILE).exists()
    assert TileRecognizer(out).flower_look is None


def test_a_run_that_fails_leaves_the_model_it_would_replace(first, tmp_path, monkeypatch):
    import shutil

    import vision.training.train as training

    out = tmp_path / "model"
    shutil.copytree(first, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while the settings are being chosen

    monkeypatch.setattr(training, "tune", stopped)
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig.preset("tiny", None, out, seed=5, log=lambda _: None))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no work folder left behind


def test_training_into_an_enrolled_model_is_refused_before_any_work(first, tmp_path):
    import shutil

    out = tmp_path / "enrolled"
    shutil.copytree(first, out)
    (out / "head.npz").write_bytes(b"an enrolled head")
    logs: list[str] = []
    with pytest.raises(ModelError, match="holds an enrolled model"):
        train(TrainConfig.preset("tiny", None, out, log=logs.append))
    assert logs == [] and (out / "head.npz").read_bytes() == b"an enrolled head"


def test_what_cannot_be_a_model_folder_is_refused_before_any_work(first, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    with pytest.raises(ModelError, match="not a folder"):
        train(TrainConfig.preset("tiny", None, a_file, log=lambda _: None))
    for reuse in ("reuse_finder", "reuse_classifier"):
        cfg = TrainConfig.preset("tiny", None, tmp_path / "m", **{reuse: tmp_path / "none"})
        with pytest.raises(ModelError, match="no model folder"):
            train(cfg)
        assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("finder_steps", 0, "finder_steps must be a whole number, 1 or more"),
        ("finder_batch", 0, "finder_batch must be"),
        ("classifier_epochs", 0, "classifier_epochs must be"),
        ("classifier_batch", 0, "classifier_batch must be"),
        ("threads", 0, "threads must be"),
        ("synth_scenes", 0, "synth_scenes must be"),
        ("seed", -1, "seed must be a whole number, 0 or more"),
        ("finder_size", 100, "finder_size must be a multiple of 32"),
        ("max_photos", 0, "max_photos must be 1 or more"),
        ("classifier_lr", 0.0, "classifier_lr must be above 0"),
        ("finder_stretch", 0.5, "finder_stretch must be 1"),
        ("quantise", "yes", "quantise must be true or false"),
        ("quantise_photos", -1, "quantise_photos must be a whole number, 0 or more"),
        ("quantise_tables", 1.5, "quantise_tables must be a whole number"),
        ("quantise_tables", 0, "quantise_tables must be 1 or more when"),
        ("seed", 2**70, "seed must be below 2\\*\\*63"),
        ("threads", 100_000, "threads must be at most 256"),
        ("finder_deep_width", float("inf"), "deep width must be above 0 and at most 8"),
    ],
)
def test_settings_that_cannot_train_are_refused_at_once(tmp_path, field, value, said):
    with pytest.raises(ModelError, match=said):
        TrainConfig.preset("tiny", None, tmp_path, **{field: value})


def test_tuning_that_turns_the_second_look_off_leaves_no_numbers_of_it(
    tmp_path, shared_data, monkeypatch
):
    import shutil

    import vision.training.train as training
    from vision.recognizer import DEFAULT_MODEL_DIR
    from vision.training.dataset import load_photos

    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model)
    assert "rescale_above" in json.loads((model / "model.json").read_text())
    # one choice of each, the second look none
    monkeypatch.setattr(training, "THRESHOLDS", (0.3,))
    monkeypatch.setattr(training, "RESCALES", (None,))
    monkeypatch.setattr(training, "REREADS", (0.0,))
    photos = load_photos(shared_data / "real-photos", ["validation"])[:2]
    manifest = training.tune(model, photos, 1, lambda _: None, table_frames=1).to_json()
    assert manifest["rescale"] is False
    assert "rescale_above" not in manifest and "rescale_to" not in manifest
    assert json.loads((model / "model.json").read_text()) == manifest
    assert not TileRecognizer(model).rescale


def test_tuning_fits_the_confidence_calibration_last(tmp_path, shared_data, monkeypatch):
    import shutil

    import vision.training.train as training
    from vision.recognizer import DEFAULT_MODEL_DIR
    from vision.training import confidence_fit
    from vision.training.dataset import load_photos

    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model)
    manifest = json.loads((model / "model.json").read_text())
    manifest["confidence_temperature"] = 5.0  # far from any fit: the tuning must replace it
    (model / "model.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(training, "THRESHOLDS", (0.3,))
    monkeypatch.setattr(training, "RESCALES", ((72.0, 56.0),))
    monkeypatch.setattr(training, "REREADS", (0.8,))
    monkeypatch.setattr(confidence_fit, "MIN_READS", 10)  # two photos' reads: a trial fit
    photos = load_photos(shared_data / "real-photos", ["validation"])[:2]
    said: list[str] = []
    tuned = training.tune(model, photos, 1, said.append, table_frames=1)
    assert tuned.confidence_temperature < 5.0
    assert tuned.training["validation"]["confidence_reads"] >= 10
    assert "confidence calibration" in said[-1]
    assert TileRecognizer(model).temperature == tuned.confidence_temperature


class _BoxScaleTrials:
    """What :func:`_tune_box_scale` asks of the tuning trials: two photos, read with the
    boxes as found."""

    def __init__(self, start: float = 1.0) -> None:
        def photo(name, boxes):
            b = np.array(boxes, np.float32)
            return LabelledPhoto(Path(name), "s", (200, 200), b, np.arange(len(b)))

        # labels that fit two tiles apart; the finder's boxes 1.6x their side, at IoU
        # 1 / 1.6**2 = 0.39 with them, and over 0.5 once scaled by 0.88 or less
        apart = photo("apart.jpg", [(10, 10, 10, 10), (40, 10, 10, 10)])
        # labels twice the tile's side taking in the neighbours: boxes on the tiles match
        # them as found (IoU 0.53) and not once shrunk by 0.88 (0.41)
        crowded = photo("crowded.jpg", [(100, 100, 20, 20), (108, 100, 20, 20), (116, 100, 20, 20)])
        self.val_photos = [apart, crowded]
        self.found = [
            [((7.0, 7.0, 16.0, 16.0), 0, 0.9), ((37.0, 7.0, 16.0, 16.0), 1, 0.9)],
            [((x + 2.75, 102.75, 14.5, 14.5), k, 0.9) for k, x in enumerate((100, 108, 116))],
        ]
        self.start_box_scale = start

    def predictions(self, threshold, rescale, reread, box_scale):
        assert box_scale == 1.0  # read once, as found; scaled afterwards
        return self.found


def test_the_box_scale_is_fitted_on_the_photos_whose_labels_stay_apart():
    said: list[str] = []
    scale, by_s = _tune_box_scale(_BoxScaleTrials(), 0.3, None, 0.8, said.append)
    # the crowded photo, which would keep the boxes as found, has no say
    assert scale == 0.88
    assert by_s[0.88] == 1.0 and by_s[1.0] == 0.0 and sorted(by_s) == list(BOX_SCALES)
    assert "1 validation photos whose labels stay apart" in said[-1] and "using 0.88" in said[-1]


def test_a_tie_keeps_the_models_box_scale_else_the_boxes_as_found():
    trials = _BoxScaleTrials(start=0.94)
    trials.found = [[(scale_box(b, 1 / 1.6), k, c) for b, k, c in f] for f in trials.found]
    # the boxes now fit the labels that stay apart at every scale tried
    scale, by_s = _tune_box_scale(trials, 0.3, None, 0.8, lambda _: None)
    assert set(by_s.values()) == {1.0} and scale == 0.94
    trials.start_box_scale = 0.95  # not among those tried
    assert _tune_box_scale(trials, 0.3, None, 0.8, lambda _: None)[0] == 1.0


def test_without_photos_whose_labels_stay_apart_the_box_scale_is_kept():
    trials = _BoxScaleTrials(start=0.96)
    trials.val_photos = trials.val_photos[1:]
    trials.found = trials.found[1:]
    said: list[str] = []
    assert _tune_box_scale(trials, 0.3, None, 0.8, said.append) == (0.96, {})
    assert "the model keeps its 0.96" in said[-1]


def test_the_settings_of_each_part_are_fields_of_the_configuration():
    from dataclasses import fields

    from vision.training.train import CLASSIFIER_SETTINGS, FINDER_SETTINGS

    names = {f.name for f in fields(TrainConfig)}
    assert set(FINDER_SETTINGS) <= names and set(CLASSIFIER_SETTINGS) <= names
    assert not set(FINDER_SETTINGS) & set(CLASSIFIER_SETTINGS)


def test_a_folder_of_the_users_own_is_not_trained_into(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "model.json").write_text('{"my": "settings"}')
    (out / "notes.txt").write_text("notes")
    logs: list[str] = []
    with pytest.raises(ModelError, match="holds files and is not a model folder"):
        train(TrainConfig.preset("tiny", None, out, log=logs.append))
    assert logs == [] and (out / "model.json").read_text() == '{"my": "settings"}'


def test_a_model_folder_that_cannot_be_made_is_refused_before_any_work(tmp_path):
    (tmp_path / "a-file").write_text("a file where a folder would go")
    logs: list[str] = []
    with pytest.raises(ModelError, match="cannot write the model to"):
        train(TrainConfig.preset("tiny", None, tmp_path / "a-file" / "m", log=logs.append))
    assert logs == []


def test_a_run_that_fails_into_a_new_folder_leaves_no_folder(tmp_path, monkeypatch):
    import vision.training.train as training

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "_train_into", stopped)
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig.preset("tiny", None, tmp_path / "new", log=lambda _: None))
    assert list(tmp_path.iterdir()) == []


def test_a_run_stopped_while_moving_its_files_leaves_a_folder_that_will_not_load(
    first, tmp_path, monkeypatch
):
    # never the new finder with the old manifest's settings, loading without complaint
    import shutil

    import vision.training.train as training

    out = tmp_path / "model"
    shutil.copytree(first, out)
    real = training.os.replace
    moved: list[str] = []

    def stop_at_the_third(src, dst):
        if len(moved) == 2:
            raise KeyboardInterrupt
        moved.append(Path(dst).name)
        return real(src, dst)

    monkeypatch.setattr(training, "_train_into", lambda cfg: _fake_model(first, cfg.out_dir))
    monkeypatch.setattr(training.os, "replace", stop_at_the_third)
    with pytest.raises(KeyboardInterrupt):
        train(TrainConfig.preset("tiny", None, out, log=lambda _: None))
    assert moved == ["finder.onnx", "classifier.onnx"]
    with pytest.raises(ModelError, match=r"has no model\.json"):
        TileRecognizer(out)
    # and the folder can be trained into again
    monkeypatch.setattr(training.os, "replace", real)
    train(TrainConfig.preset("tiny", None, out, log=lambda _: None))
    TileRecognizer(out)


def _fake_model(src: Path, out: Path) -> dict:
    """A run's work folder filled with a copy of ``src`` (no training)."""
    import shutil

    for name in ("finder.onnx", "classifier.onnx", "base_head.npz", "model.json"):
        shutil.copy2(src / name, out / name)
    return json.loads((out / "model.json").read_text())


def test_a_kept_part_is_the_file_its_manifest_names(first, tmp_path):
    import shutil

    from vision.training.train import _kept_file, _reuse

    kept = tmp_path / "kept"
    shutil.copytree(first, kept)
    (kept / "classifier.onnx").rename(kept / "cls.onnx")
    (kept / "classifier.onnx").write_bytes(b"a stale file, named by nothing")
    manifest = json.loads((kept / "model.json").read_text())
    manifest["classifier"] = "cls.onnx"
    (kept / "model.json").write_text(json.dumps(manifest))
    out = tmp_path / "out"
    out.mkdir()
    source = _kept_file(kept, "classifier", "classifier.onnx")
    figures = _reuse(kept, out, "classifier", ((source, "classifier.onnx"),), {})
    assert (out / "classifier.onnx").read_bytes() == (first / "classifier.onnx").read_bytes()
    assert figures == {}  # a kept model whose manifest records no figures gives none


def test_a_kept_classifier_without_its_trained_head_is_refused_before_any_work(first, tmp_path):
    import shutil

    kept = tmp_path / "kept"
    shutil.copytree(first, kept)
    (kept / "base_head.npz").unlink()
    logs: list[str] = []
    cfg = TrainConfig.preset("tiny", None, tmp_path / "m", reuse_classifier=kept, log=logs.append)
    with pytest.raises(ModelError, match=r"has no base_head\.npz"):
        train(cfg)
    assert logs == [] and not (tmp_path / "m").exists()


def test_a_manifest_that_cannot_be_written_is_a_model_error(first, tmp_path):
    from vision.model_manifest import ModelManifest

    with pytest.raises(ModelError, match="cannot write"):
        ModelManifest().write(tmp_path / "none")
    out = tmp_path / "m"
    out.mkdir()
    ModelManifest().write(out)
    assert json.loads((out / "model.json").read_text()) == ModelManifest().to_json()
    assert (out / "model.json").stat().st_mode & 0o644 == 0o644
    assert [p.name for p in out.iterdir()] == ["model.json"]


def test_a_run_without_pytorch_leaves_no_folder(tmp_path, monkeypatch):
    import vision.training.train as training

    def no_torch():
        raise ModelError("training needs PyTorch: pip install -e '.[train]'")

    monkeypatch.setattr(training, "_torch", no_torch)
    with pytest.raises(ModelError, match="needs PyTorch"):
        train(TrainConfig.preset("tiny", None, tmp_path / "new", log=lambda _: None))
    assert list(tmp_path.iterdir()) == []
