"""TileDetection: geometry, JSON, immutability."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vision.detection import TileDetection, box_intersections, box_iou, box_of_quad, scale_box
from vision.labels import BACK
from vision.recognizer import quad_of


def _det(**kw):
    quad = np.array([[10, 20], [40, 20], [40, 60], [10, 60]], np.float32)
    fields = dict(label=4, confidence=0.9, box=(10, 20, 30, 40), quad=quad)
    fields.update(kw)
    return TileDetection(**fields)


def test_fields_and_json():
    d = _det(alternatives=((13, 0.05), (22, 0.01)), needs_confirmation=True)
    assert d.name == "5m" and not d.face_down
    assert d.centre == (25.0, 40.0)
    assert d.angle == pytest.approx(90.0)
    record = json.loads(json.dumps(d.to_json()))
    assert record["label"] == "5m" and record["index"] == 4
    assert record["box"] == [10.0, 20.0, 30.0, 40.0]
    assert record["quad"][2] == [40.0, 60.0]
    assert record["needs_confirmation"] is True
    assert [a["label"] for a in record["alternatives"]] == ["5p", "5s"]


def test_frozen_and_quad_read_only():
    d = _det()
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.label = 5  # type: ignore[misc]
    with pytest.raises(ValueError):
        d.quad[0, 0] = 1.0
    assert _det(label=BACK).face_down


def test_sideways_angle():
    quad = np.array([[0, 0], [0, 30], [40, 30], [40, 0]], np.float32)  # long axis along x
    d = _det(quad=quad, box=(0, 0, 40, 30), sideways=True)
    assert d.angle == pytest.approx(0.0)
    # the recogniser's outline of the same tile starts at the picture's top-left corner
    outline, sideways = quad_of((0, 0, 40, 30), 0.0)
    assert sideways and _det(quad=outline, box=(0, 0, 40, 30)).angle == pytest.approx(0.0)
    upright, _ = quad_of((0, 0, 30, 40), math.pi / 2)
    assert _det(quad=upright).angle == pytest.approx(90.0)


def test_iou_examples():
    assert box_iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert box_iou((0, 0, 10, 10), (10, 0, 10, 10)) == 0.0
    assert box_iou((0, 0, 10, 10), (5, 0, 10, 10)) == pytest.approx(50 / 150)
    assert box_iou((0, 0, 0, 0), (0, 0, 0, 0)) == 0.0


boxes = st.tuples(
    st.floats(-100, 100), st.floats(-100, 100), st.floats(0.1, 100), st.floats(0.1, 100)
)


@given(boxes, boxes)
def test_iou_is_symmetric_and_bounded(a, b):
    v = box_iou(a, b)
    assert 0.0 <= v <= 1.0 + 1e-9
    assert v == pytest.approx(box_iou(b, a))


def test_scale_box_examples():
    assert scale_box((10, 20, 40, 60), 0.5) == (20.0, 35.0, 20.0, 30.0)
    assert scale_box((10, 20, 40, 60), 1.0) == (10, 20, 40, 60)


@given(boxes, st.floats(0.5, 1.5))
def test_scale_box_keeps_the_centre_and_undoes_itself(box, factor):
    x, y, w, h = scale_box(box, factor)
    assert (x + w / 2, y + h / 2) == pytest.approx((box[0] + box[2] / 2, box[1] + box[3] / 2))
    assert (w, h) == pytest.approx((box[2] * factor, box[3] * factor))
    assert scale_box((x, y, w, h), 1 / factor) == pytest.approx(box)
    # as much of the smaller box lies in the larger as a box's sides are scaled: IoU f**2
    assert box_iou(box, (x, y, w, h)) == pytest.approx(min(factor, 1 / factor) ** 2)


def test_box_of_quad():
    assert box_of_quad(np.array([[1, 2], [5, 1], [6, 7], [0, 4]])) == (0.0, 1.0, 6.0, 6.0)


_boxes = st.lists(st.tuples(*[st.integers(-50, 200)] * 2, *[st.integers(0, 80)] * 2), max_size=6)


@given(_boxes, _boxes)
def test_box_intersections_agree_with_box_iou_pair_by_pair(a, b):
    inter = box_intersections(np.array(a).reshape(-1, 4), np.array(b).reshape(-1, 4))
    assert inter.shape == (len(a), len(b))
    for i, p in enumerate(a):
        for j, q in enumerate(b):
            union = p[2] * p[3] + q[2] * q[3] - inter[i, j]
            expected = box_iou(p, q)
            got = inter[i, j] / union if inter[i, j] > 0 and union > 0 else 0.0
            assert got == pytest.approx(expected)


def test_reading_order_keeps_a_row_together_whatever_grid_it_falls_on() -> None:
    from vision.detection import reading_order

    # (name, v, u): a row straddling v = 10 is one row; 12 past the first one's v is the next
    items = [("c", 9.0, 3.0), ("a", 11.0, 1.0), ("b", 13.0, 2.0), ("d", 21.5, 0.0)]
    ordered = reading_order(items, lambda t: t[1], lambda t: t[2], gap=4.0)
    assert [t[0] for t in ordered] == ["a", "b", "c", "d"]
    assert reading_order([], lambda t: t, lambda t: t, gap=1.0) == []
