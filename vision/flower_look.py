"""The flower look: a second reading of the tiles the classifier thinks may be flowers, closer.

The eight flower tiles of a set share a style and differ in a picture and a numeral 1-4,
which the classifier's 48 px crop of the whole tile (and a margin of its neighbours) barely
resolves: on the validation photos most flower errors were one flower read as another of its
group. The look reads the tile's middle enlarged (:data:`MIDDLE` of its side, where the
picture and most of the numeral lie) through the classifier's own network, and a small
network (:class:`FlowerLook`, weights in ``flower_look.npz`` in the model folder) turns that
embedding and the tile's own into nine probabilities: each flower, or "not a flower";
:func:`merge` makes those the tile's probabilities of the 43 labels.

Of the views tried, the middle carried the gain: each quarter of the tile enlarged as well
(where many sets print the numeral) added two to three points of flowers read right on the
validation photos and under one on the held-out ones, at five crops a tile instead of one
(the tile's own embedding is the classifier's first reading, kept). Training:
:mod:`vision.training.flower_look_fit`.

A look reads one classifier's embeddings, so it records the SHA-256 of the classifier file it
was fitted on, and a recogniser whose classifier is another refuses it: a classifier replaced
by hand beside an old look of the same shape would otherwise read every flower wrong, and say
nothing. (A look saved before the digest was recorded is taken on its shape alone.)
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from controller.errors import ModelError
from vision.detection import Box
from vision.labels import FLOWER_LABELS

FLOWER_LOOK_FILE = "flower_look.npz"
VIEWS = 2
"""The views of a tile the look reads (see :func:`view_boxes`)."""
MIDDLE = 0.6
"""The middle view's side, as a share of the tile's."""
CLASSES = len(FLOWER_LABELS) + 1
"""The look's outputs: the eight flowers in label order, then "not a flower"."""
_FLOWERS = np.array(FLOWER_LABELS)
_PARTS = ("mean", "scale", "w1", "b1", "w2", "b2")
_CLASSIFIER = "classifier"


def file_digest(path: Path) -> str:
    """The SHA-256 of the file at ``path``, in hex; :class:`~controller.errors.ModelError`
    when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise ModelError(f"the model file {path} cannot be read: {exc.strerror or exc}") from None


def view_boxes(box: Box) -> list[Box]:
    """The boxes a tile at ``box`` is read at: the tile itself, and its middle (:data:`MIDDLE`
    of its side, cut as the classifier cuts a tile, so enlarged)."""
    x, y, w, h = (float(v) for v in box)
    cx, cy = x + w / 2, y + h / 2
    return [(x, y, w, h), (cx - w * MIDDLE / 2, cy - h * MIDDLE / 2, w * MIDDLE, h * MIDDLE)]


def flower_chance(probs: np.ndarray) -> np.ndarray:
    """The chance the classifier gives each tile of being a flower, the eight together, from
    its probabilities of the 43 labels (the last axis): what decides who takes the look."""
    return np.asarray(probs)[..., _FLOWERS].sum(axis=-1)


def features(embeddings: np.ndarray) -> np.ndarray:
    """The look's input (N x 2E) from the embeddings of each tile's views (N x 2 x E): the
    tile's, then the middle's."""
    e = np.asarray(embeddings, np.float32)
    if e.ndim != 3 or e.shape[1] != VIEWS:
        raise ValueError(f"expected N x {VIEWS} x E embeddings, not {e.shape}")
    return e.reshape(len(e), -1)


def merge(probs: np.ndarray, look: np.ndarray) -> np.ndarray:
    """The 43 label probabilities of tiles read ``probs`` by the classifier and ``look`` (N x
    9) by the look: each flower's the look's; every other label's the look's "not a flower"
    shared out as the classifier shares its own among the labels that are not flowers."""
    p = np.asarray(probs, np.float32)
    q = np.asarray(look, np.float32)
    out = p.copy()
    out[:, _FLOWERS] = 0.0
    rest = out.sum(axis=1, keepdims=True)
    # a classifier sure of a flower leaves nothing to share: "not a flower" goes to its
    # likeliest other label
    none = rest[:, 0] <= 1e-12
    if none.any():
        out[none] = 0.0
        masked = p[none].copy()
        masked[:, _FLOWERS] = -1.0
        out[none, masked.argmax(axis=1)] = 1.0
        rest[none] = 1.0
    out *= q[:, -1:] / rest
    out[:, _FLOWERS] = q[:, :-1]
    return out


@dataclass(frozen=True)
class FlowerLook:
    """The look's network: standardise the features, one hidden layer of ReLUs, nine
    probabilities; ``classifier`` the SHA-256 of the classifier file it was fitted on
    (:func:`file_digest`; empty where it was not recorded)."""

    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    classifier: str = ""

    @property
    def embedding_size(self) -> int:
        return len(self.mean) // VIEWS

    def probabilities(self, feats: np.ndarray) -> np.ndarray:
        """The nine probabilities (N x 9) of tiles with :func:`features` ``feats``."""
        x = (np.asarray(feats, np.float32) - self.mean) / self.scale
        z = np.maximum(x @ self.w1 + self.b1, 0.0) @ self.w2 + self.b2
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

    def save(self, path: Path) -> None:
        """Write the weights to ``path`` (an ``.npz``) whole or not at all (through a file
        beside it: a look cut short would stop the model loading);
        :class:`~controller.errors.ModelError` when it cannot be written."""
        path = Path(path)
        part = path.with_name(f".{path.name}.part")
        try:
            with open(part, "wb") as out:
                parts = {k: getattr(self, k) for k in _PARTS}
                if self.classifier:
                    parts[_CLASSIFIER] = np.array(self.classifier)
                np.savez(out, **parts)
            os.replace(part, path)
        except OSError as exc:
            part.unlink(missing_ok=True)
            raise ModelError(
                f"cannot write the flower look {path}: {exc.strerror or exc}"
            ) from None

    @classmethod
    def load(cls, path: Path, embedding_size: int, classifier: str | None = None) -> FlowerLook:
        """The look saved at ``path`` for a classifier of ``embedding_size`` whose file's
        digest is ``classifier`` (None: not checked); :class:`~controller.errors.ModelError`
        for a file that is unreadable, does not fit, or was fitted on another classifier."""
        try:
            with np.load(path) as data:
                parts = {k: data[k].astype(np.float32) for k in _PARTS}
                fitted_on = str(data[_CLASSIFIER]) if _CLASSIFIER in data.files else ""
        except Exception as exc:  # a truncated or foreign .npz, or a key missing
            raise ModelError(f"the flower look {path} is unreadable: {exc}") from None
        if classifier is not None and fitted_on and fitted_on != classifier:
            raise ModelError(
                f"the flower look {path} was fitted on another classifier than its folder's: "
                f"fit it again (mahjong-table train --flower-look {Path(path).parent}) or "
                "remove it"
            )
        look = cls(**parts, classifier=fitted_on)
        n = VIEWS * embedding_size
        hidden = look.b1.shape[0] if look.b1.ndim == 1 else -1
        shapes_fit = (
            look.mean.shape == (n,)
            and look.scale.shape == (n,)
            and look.w1.shape == (n, hidden)
            and look.w2.shape == (hidden, CLASSES)
            and look.b2.shape == (CLASSES,)
        )
        if not shapes_fit:
            raise ModelError(f"the flower look {path} does not fit this classifier")
        if not all(np.isfinite(v).all() for v in parts.values()) or not (look.scale > 0).all():
            raise ModelError(f"the flower look {path} holds numbers that are not weights")
        return look
