"""The manifest of a model folder (``model.json``): which files it holds and the settings the
recogniser runs them with, read by the recogniser and written by training, tuning,
quantisation and enrolment, all through :class:`ModelManifest`.

>>> m = ModelManifest.read(DEFAULT_MODEL_DIR)                 # doctest: +SKIP
>>> m.finder_threshold, m.training["validation"]["tile_f1"]  # doctest: +SKIP
(0.3, 0.758)

A key the file leaves out takes its default (the recogniser's of models written before the
key existed); a key of the wrong type is a :class:`~controller.errors.ModelError` naming the
file and the key. The ranges the settings must lie in are checked by the recogniser, with
the settings its caller gives.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from controller.errors import ModelError
from vision.files import write_text_atomically
from vision.labels import LABEL_NAMES, NUM_LABELS

MANIFEST_FILE = "model.json"
FORMAT = 1
RESCALE_ABOVE = 72.0
"""Default ``rescale_above``: the median tile width (finder pixels) above which a picture
is read again shrunk."""
RESCALE_TO = 56.0
"""Default ``rescale_to``: the tile width (finder pixels) such a close-up is shrunk to."""

FLOWER_LOOK_ABOVE = 0.05
"""Default ``flower_look_above``."""

_NUMBERS = (
    "crop_margin",
    "finder_input",
    "finder_threshold",
    "min_confidence",
    "back_threshold",
    "rescale_above",
    "rescale_to",
    "reread_below",
    "confidence_temperature",
    "box_scale",
    "flower_look_above",
)
_WHOLE = ("stride", "crop_size")
_POSITIVE = ("stride", "crop_size", "crop_margin")
_SWITCHES = ("rescale", "refine")
_FILES = ("finder", "classifier")


@dataclass(frozen=True)
class ModelManifest:
    """A model folder's ``model.json``, every key typed, in the order the file lists them."""

    format: int = FORMAT
    finder: str = "finder.onnx"
    """The finder's ONNX file, in the model folder."""
    classifier: str = "classifier.onnx"
    """The classifier's ONNX file, in the model folder."""
    stride: int = 4
    """The finder's grid, in pixels of its input."""
    crop_size: int = 48
    """The side, in pixels, of the square crop the classifier reads."""
    crop_margin: float = 1.3
    """The crop's side as a multiple of the tile box's longer side."""
    finder_input: int = 640
    """The longer side, in pixels, the finder sees the picture at."""
    finder_threshold: float = 0.3
    """The finder score a tile needs to be reported at all."""
    min_confidence: float = 0.6
    """The probability under which a tile is flagged for the players to confirm."""
    back_threshold: float = 0.85
    """The share of its peak over which a tile is read as face down."""
    labels: tuple[str, ...] = LABEL_NAMES
    """The classifier's outputs, by name: always this program's labels, in its order."""
    training: dict[str, Any] = field(default_factory=dict)
    """How the model was trained and what it scored (``config``, ``validation``,
    ``quantised``...): a free-form report, read by people and by a later training run."""
    rescale: bool = True
    """Whether large tiles are read again from a smaller picture (the close-up second look)."""
    rescale_above: float = RESCALE_ABOVE
    """Tiles wider than this in the finder's picture take the second look (written only with
    ``rescale``)."""
    rescale_to: float = RESCALE_TO
    """The width they are scaled to for it (written only with ``rescale``)."""
    reread_below: float = 0.0
    """The confidence under which a tile is read again turned (0: every tile read once)."""
    refine: bool = True
    """Whether the classifier's boxes replace the finder's (written only when false)."""
    confidence_temperature: float = 1.0
    """The temperature the classifier's probabilities are tempered by before they are
    reported (:mod:`vision.confidence`), fitted on the validation photos so that a read at
    confidence c is right about c of the time; 1 (models before the setting) reports them raw.
    The thresholds above compare the raw probability whatever it is."""
    box_scale: float = 1.0
    """The factor each reported tile box's sides are scaled by about its centre, fitted on
    the validation photos whose labelled boxes stay apart: the boxes the model learnt from
    include photos whose labels take in the neighbours, which teaches boxes a little larger
    than the tile. Reading is unchanged: tiles are read from the boxes as found. 1 (models
    before the setting) reports them as found."""
    flower_look_above: float = FLOWER_LOOK_ABOVE
    """The classifier's probability of "a flower" (all eight together) from which a tile
    takes the flower look (:mod:`vision.flower_look`), where the folder holds one; chosen on
    the validation photos."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys of the file this program does not know, kept as they are (written last)."""

    # -- reading ------------------------------------------------------------------------------

    @classmethod
    def read(cls, model_dir: Path) -> ModelManifest:
        """The manifest of the model folder ``model_dir``, checked for its format, labels and
        types; :class:`~controller.errors.ModelError` when there is none or it is wrong."""
        path = Path(model_dir) / MANIFEST_FILE
        if not Path(model_dir).is_dir():
            raise ModelError(f"no model folder at {model_dir}")
        if not path.is_file():
            raise ModelError(f"the model folder {model_dir} has no {MANIFEST_FILE}")
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            # ValueError: bad JSON, or a number of thousands of digits; RecursionError: nesting
            raise ModelError(f"the model manifest {path} is unreadable: {exc}") from None
        return cls.from_json(data, path)

    @classmethod
    def from_json(cls, data: Any, path: Path) -> ModelManifest:
        """The manifest a parsed ``model.json`` describes (``path``: the file, for errors)."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ModelError(f"{path} is not a tile model manifest of format {FORMAT}")
        labels = data.get("labels")
        # the outputs are named in this program's order: a model listing another would be misread
        if labels is not None and labels != list(LABEL_NAMES):
            raise ModelError(
                f"{path}: labels must be the {NUM_LABELS} labels in this program's order "
                f"({', '.join(LABEL_NAMES[:3])} … {LABEL_NAMES[-1]})"
            )
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        values: dict[str, Any] = {}
        for key in _NUMBERS + _WHOLE:
            if key in data:
                values[key] = _number(path, key, data[key])
        for key in _POSITIVE:
            if key in values and values[key] <= 0:
                raise ModelError(f"{path}: {key} must be above 0, not {values[key]}")
        for key in _WHOLE:
            if key in values:
                if not values[key].is_integer():  # 4.7 would be read as 4: another model's grid
                    raise ModelError(f"{path}: {key} must be a whole number, not {values[key]}")
                values[key] = int(values[key])
        if "finder_input" in values:
            values["finder_input"] = int(values["finder_input"])
        for key in _SWITCHES:
            # "false" in a hand-edited manifest must not read as true
            if key in data:
                if not isinstance(data[key], bool):
                    raise ModelError(f"{path}: {key} must be true or false, not {data[key]!r}")
                values[key] = data[key]
        for key in _FILES:
            if key in data:
                value = data[key]
                if not isinstance(value, str) or not value or Path(value).name != value:
                    raise ModelError(
                        f"{path}: {key} must name a file in the model folder, not {value!r}"
                    )
                values[key] = value
        if "training" in data:
            if not isinstance(data["training"], dict):
                raise ModelError(
                    f"{path}: training must be an object, not {data['training']!r:.40}"
                )
            values["training"] = data["training"]
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra)

    # -- writing ------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The manifest as ``model.json`` lays it out (the keys in the file's order; the second
        look's sizes only with ``rescale``, ``refine`` only when false)."""
        out: dict[str, Any] = {
            "format": self.format,
            "finder": self.finder,
            "classifier": self.classifier,
            "stride": self.stride,
            "crop_size": self.crop_size,
            "crop_margin": self.crop_margin,
            "finder_input": self.finder_input,
            "finder_threshold": self.finder_threshold,
            "min_confidence": self.min_confidence,
            "back_threshold": self.back_threshold,
            "labels": list(self.labels),
            "training": self.training,
            "rescale": self.rescale,
        }
        if self.rescale:  # a second look's numbers left behind would read as if in use
            out["rescale_above"] = self.rescale_above
            out["rescale_to"] = self.rescale_to
        out["reread_below"] = self.reread_below
        out["confidence_temperature"] = self.confidence_temperature
        out["box_scale"] = self.box_scale
        out["flower_look_above"] = self.flower_look_above
        if not self.refine:
            out["refine"] = False
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out

    def write(self, model_dir: Path) -> None:
        """Write ``model.json`` into ``model_dir`` whole or not at all (through a file beside
        it), or ModelError: a retune that cannot write must say so, and never leave half a
        manifest."""
        path = Path(model_dir) / MANIFEST_FILE
        try:
            write_text_atomically(path, json.dumps(self.to_json(), indent=2) + "\n")
        except OSError as exc:
            raise ModelError(f"cannot write {path}: {exc.strerror or exc}") from None

    def file(self, model_dir: Path, key: Literal["finder", "classifier"]) -> Path:
        """The path of the file the manifest names under ``key``, in ``model_dir``."""
        return Path(model_dir) / (self.finder if key == "finder" else self.classifier)

    def with_training(self, **changes: Any) -> ModelManifest:
        """A copy whose ``training`` record has ``changes`` set (the rest kept)."""
        return dataclasses.replace(self, training={**self.training, **changes})


def _number(path: Path, key: str, value: Any) -> float:
    """A number of the manifest; ModelError naming the key when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelError(f"{path}: {key} must be a number, not {value!r}")
    return float(value)
