"""Calibrated confidence: the recogniser's probabilities made to mean what they say.

A classifier trained on cross-entropy is over-confident on photos unlike its training ones: of
the tiles it reads at 0.95, fewer than 95 % are right. *Temperature scaling* mends that with
one number fitted on the validation photos: the logits are divided by a temperature ``T``
before the softmax (``T`` > 1 softens the probabilities, < 1 sharpens them). It never changes
which label is likeliest, nor the order of the runners-up.

The recogniser applies it to the probabilities it settles on, as ``softmax(log p / T)``: for a
tile read once that is exactly ``softmax(logits / T)``; for a tile read again in its four
quarter turns it is the same tempering of the four readings' average. The thresholds
(``min_confidence``, ``reread_below``) keep comparing the raw probability they were chosen
on, so calibrating changes what is reported, never what is decided.

>>> p = np.array([[0.9, 0.1]], np.float32)
>>> temper(p, 2.0).round(3).tolist()
[[0.75, 0.25]]

Only numpy here: the table's computer tempers; fitting (:func:`fit_temperature`) runs in
training, and :func:`reliability` and :func:`expected_calibration_error` in the benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TEMPERATURE_RANGE = (0.05, 20.0)
"""The temperatures :func:`fit_temperature` searches; a model's setting outside it is refused
(far past either end the probabilities are all one label's, or all alike)."""

RELIABILITY_EDGES: tuple[float, ...] = (*(k / 10 for k in range(10)), 0.95, 0.99, 1.0)
"""Bins of reported confidence for :func:`reliability`: tenths, with the top tenth, where most
reads lie, split at 0.95 and 0.99."""

_FLOOR = 1e-30
"""A probability a float32 softmax rounded to 0, as the fit sees it (its log must be finite)."""


def temper(probs: np.ndarray, temperature: float) -> np.ndarray:
    """Probabilities (N x K) tempered: ``softmax(log probs / temperature)`` per row, float32.
    A label of probability 0 stays 0; ``temperature`` 1 leaves them as they are."""
    p = np.asarray(probs, np.float64)
    if temperature == 1.0 or p.size == 0:
        return p.astype(np.float32)
    with np.errstate(divide="ignore"):
        z = np.log(p) / temperature
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def _nll(logp: np.ndarray, labels: np.ndarray, inverse: float) -> float:
    """Mean negative log-likelihood of ``labels`` under ``softmax(inverse * logp)``."""
    z = inverse * logp
    top = z.max(axis=1)
    lse = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
    return float(np.mean(lse - z[np.arange(len(labels)), labels]))


def fit_temperature(probs: np.ndarray, labels: np.ndarray) -> float:
    """The temperature of least negative log-likelihood of the true ``labels`` (N) under the
    tempered ``probs`` (N x K), searched within :data:`TEMPERATURE_RANGE`.

    The log-likelihood is concave in ``1 / T`` (a log-sum-exp of lines minus a line), so a
    golden-section search on ``1 / T`` finds its one maximum. ``ValueError`` for no reads,
    or probabilities and labels that do not fit each other."""
    p = np.asarray(probs, np.float64)
    y = np.asarray(labels, np.int64)
    if p.ndim != 2 or len(p) == 0 or y.shape != (len(p),):
        raise ValueError(f"probabilities of {p.shape} and labels of {y.shape} do not fit")
    if (y < 0).any() or (y >= p.shape[1]).any():
        raise ValueError(f"labels must be 0 to {p.shape[1] - 1}")
    logp = np.log(np.maximum(p, _FLOOR))
    lo, hi = 1.0 / TEMPERATURE_RANGE[1], 1.0 / TEMPERATURE_RANGE[0]
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = lo + (1 - ratio) * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = _nll(logp, y, a), _nll(logp, y, b)
    for _ in range(80):  # shrinks the bracket by 0.618 each step: far below 1e-6 relative
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = lo + (1 - ratio) * (hi - lo)
            fa = _nll(logp, y, a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = _nll(logp, y, b)
    return float(1.0 / ((lo + hi) / 2))


@dataclass(frozen=True)
class ReliabilityBin:
    """The reads reported at a confidence in ``[low, high)`` (the last bin takes 1.0 too):
    how many, their mean confidence and the share of them that are right."""

    low: float
    high: float
    count: int
    confidence: float
    accuracy: float

    @property
    def gap(self) -> float:
        """Accuracy less mean confidence: under 0 where the reads are over-confident."""
        return self.accuracy - self.confidence


def reliability(
    confidences: Sequence[float] | np.ndarray,
    right: Sequence[bool] | np.ndarray,
    edges: Sequence[float] = RELIABILITY_EDGES,
) -> list[ReliabilityBin]:
    """The reads binned by reported confidence (bins between consecutive ``edges``); empty
    bins are left out."""
    c = np.asarray(confidences, np.float64)
    r = np.asarray(right, bool)
    if c.shape != r.shape:
        raise ValueError(f"{c.shape} confidences and {r.shape} verdicts")
    cuts = np.asarray(edges, np.float64)
    # right-open bins, the last closed: a read at exactly 1.0 belongs to the top bin
    which = np.clip(np.searchsorted(cuts, c, side="right") - 1, 0, len(cuts) - 2)
    out = []
    for k in range(len(cuts) - 1):
        inside = which == k
        n = int(inside.sum())
        if n:
            out.append(
                ReliabilityBin(
                    float(cuts[k]),
                    float(cuts[k + 1]),
                    n,
                    float(c[inside].mean()),
                    float(r[inside].mean()),
                )
            )
    return out


def expected_calibration_error(
    confidences: Sequence[float] | np.ndarray,
    right: Sequence[bool] | np.ndarray,
    edges: Sequence[float] = RELIABILITY_EDGES,
) -> float:
    """The reads' mean gap between confidence and accuracy, bin by bin (:func:`reliability`),
    each bin weighted by its share of the reads: 0 for perfectly calibrated reads."""
    bins = reliability(confidences, right, edges)
    total = sum(b.count for b in bins)
    return sum(b.count * abs(b.gap) for b in bins) / total if total else 0.0
