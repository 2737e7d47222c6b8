"""Calibrated confidence (vision/confidence.py): tempering, the temperature's fit, and the
reliability table and its expected calibration error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision.confidence import (
    RELIABILITY_EDGES,
    TEMPERATURE_RANGE,
    expected_calibration_error,
    fit_temperature,
    reliability,
    temper,
)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _overconfident(seed: int, truth: float, n: int = 3000, k: int = 10):
    """Reads whose labels are drawn from ``softmax(z / truth)`` while the model reports
    ``softmax(z)``: over-confident by the temperature ``truth``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1, (n, k)) * rng.uniform(1.5, 4.0, (n, 1))
    z[np.arange(n), rng.integers(0, k, n)] += 3.0  # most reads have a clear favourite
    calibrated = _softmax(z / truth)
    labels = (rng.random((n, 1)) > np.cumsum(calibrated, axis=1)).sum(axis=1)
    return _softmax(z).astype(np.float32), np.minimum(labels, k - 1)


def _ece(probs: np.ndarray, labels: np.ndarray) -> float:
    return expected_calibration_error(probs.max(axis=1), probs.argmax(axis=1) == labels)


def test_tempering_is_a_softmax_of_the_logits_over_the_temperature():
    z = np.array([[2.0, 0.5, -1.0, -30.0], [0.0, 0.0, 1.0, 0.2]])
    for t in (0.5, 1.0, 2.5):
        np.testing.assert_allclose(temper(_softmax(z), t), _softmax(z / t), atol=1e-6)


def test_tempering_keeps_the_order_of_the_labels_and_a_label_of_no_chance():
    p = np.array([[0.7, 0.2, 0.1, 0.0]], np.float32)
    for t in (0.3, 3.0):
        q = temper(p, t)
        assert list(np.argsort(-q[0])) == list(np.argsort(-p[0]))
        assert q[0, 3] == 0.0 and q.sum() == pytest.approx(1.0)
    # sharper under 1, softer over it
    assert temper(p, 0.5)[0, 0] > 0.7 > temper(p, 2.0)[0, 0]
    assert temper(np.zeros((0, 43), np.float32), 0.5).shape == (0, 43)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), truth=st.floats(1.5, 4.0))
def test_fitting_over_confident_reads_brings_their_calibration_error_down(seed, truth):
    probs, labels = _overconfident(seed, truth)
    t = fit_temperature(probs, labels)
    before, after = _ece(probs, labels), _ece(temper(probs, t), labels)
    assert t > 1.0  # softened, as they need
    assert after < before / 2
    # and close to the temperature they were drawn with
    assert t == pytest.approx(truth, rel=0.25)


def test_well_calibrated_reads_keep_a_temperature_near_one():
    probs, labels = _overconfident(7, 1.0, n=5000)
    assert fit_temperature(probs, labels) == pytest.approx(1.0, abs=0.1)


def test_under_confident_reads_are_sharpened():
    probs, labels = _overconfident(3, 0.6)
    assert fit_temperature(probs, labels) < 0.8


def test_reads_all_right_take_the_sharpest_temperature_searched():
    probs = np.array([[0.6, 0.4], [0.3, 0.7]], np.float32)
    t = fit_temperature(probs, np.array([0, 1]))
    assert t == pytest.approx(TEMPERATURE_RANGE[0], rel=1e-3)


@pytest.mark.parametrize(
    ("probs", "labels"),
    [
        (np.zeros((0, 3)), np.zeros(0, int)),
        (np.full((2, 3), 1 / 3), np.array([0])),
        (np.full((2, 3), 1 / 3), np.array([0, 3])),
        (np.full(3, 1 / 3), np.array([0])),
    ],
)
def test_probabilities_and_labels_that_do_not_fit_are_refused(probs, labels):
    with pytest.raises(ValueError):
        fit_temperature(probs, labels)


def test_the_reliability_table_bins_by_reported_confidence():
    confidences = [0.05, 0.55, 0.58, 0.97, 1.0, 0.995]
    right = [False, True, False, True, True, False]
    bins = reliability(confidences, right)
    assert [(b.low, b.high, b.count) for b in bins] == [
        (0.0, 0.1, 1),
        (0.5, 0.6, 2),
        (0.95, 0.99, 1),
        (0.99, 1.0, 2),  # 1.0 itself falls in the top bin
    ]
    assert bins[1].confidence == pytest.approx(0.565) and bins[1].accuracy == 0.5
    assert bins[1].gap == pytest.approx(-0.065)
    # the gaps weighted by each bin's share of the reads
    want = (0.05 + 2 * 0.065 + 0.03 + 2 * abs(0.5 - 0.9975)) / 6
    assert expected_calibration_error(confidences, right) == pytest.approx(want)
    assert RELIABILITY_EDGES[0] == 0.0 and RELIABILITY_EDGES[-1] == 1.0


def test_no_reads_have_no_error_and_mismatched_lists_are_refused():
    assert reliability([], []) == [] and expected_calibration_error([], []) == 0.0
    with pytest.raises(ValueError):
        reliability([0.5, 0.6], [True])
