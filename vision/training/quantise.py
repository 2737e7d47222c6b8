"""The classifier in 8-bit integers: onnxruntime's static quantisation, chosen on real crops.

The classifier runs once for every face-up tile of every frame, and on a CPU with 8-bit dot
products (x86 VNNI; the Arm cores of a Raspberry Pi 5) an int8 network reads a batch of crops
in about two thirds of the float one's time. Quantising is a training step (it needs the
``onnx`` package of the ``train`` extra); the product only runs the result, which is an
ordinary ONNX file that onnxruntime reads like any other.

The weights are quantised per output channel; the activations' ranges are measured on crops
cut as the recogniser cuts them (at the finder's boxes, from the training photos and from
rendered table frames), so the ranges are those the classifier meets at the table. Both
models then read other labelled tiles (the validation photos'): a quantised model that reads
them more than :data:`MAX_LOSS` worse than the float one is refused and the float one kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from controller.errors import ModelError
from vision.flower_look import FLOWER_LOOK_FILE
from vision.model_manifest import ModelManifest

MAX_LOSS = 0.01
"""How much less of the check tiles the quantised classifier may read right than the float
one. (Where the float classifier is unsure, the two often pick different labels: on the
committed model's validation tiles they agree on about 97 %, yet read them equally well.)"""

CALIBRATION_SEED = 5
"""The rendered tables' seed: neither the benchmark's tables (0 and 1) nor the tuning's (2)."""


class QuantisationRefused(ModelError):
    """The quantised classifier read the check tiles too much worse than the float one: the
    float classifier is kept. ``figures`` says how each read them."""

    def __init__(self, message: str, figures: dict[str, Any]) -> None:
        super().__init__(message)
        self.figures = figures


_QUANTISED_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "ConvInteger"}


WEIGHTS = "int8 per channel, stored as uint8 about 128 (exact u8u8 arithmetic on every CPU)"
"""How the quantised classifier's weights are kept, as ``model.json`` records it."""


def is_quantised(path: str | os.PathLike[str]) -> bool:
    """Whether the ONNX file at ``path`` is already quantised (holds quantisation operators)."""
    onnx = _onnx()
    try:
        model = onnx.load(str(path))
    except Exception as exc:  # onnx raises its own untyped errors for bad files
        raise ModelError(f"the model file {path} is corrupt or not ONNX: {exc}") from None
    return any(node.op_type in _QUANTISED_OPS for node in model.graph.node)


def calibration_crops(
    recognizer: Any, pictures: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> np.ndarray:
    """The crops (N x S x S x 3 ``uint8``, as :func:`as_input` hands them to the classifier)
    of the tiles of labelled ``pictures``
    (``(picture, boxes, labels)``), cut as the recogniser cuts them: at the boxes of the
    face-up tiles its finder sees, or at the labelled boxes where it sees none (a finder
    barely trained, in a short test run).

    Only the finder's boxes where it has any: the committed classifier quantised on the
    labelled boxes as well read the validation tiles 84.5 % right against 84.8 % on the
    finder's alone (the float one: 85.0 %). Labelled boxes shifted off their tiles give
    crops the table never shows, and the ranges stretched to hold them are coarser."""
    batches = []
    for img, labelled, _labels in pictures:
        boxes = [f[0] for f in recognizer.find(img) if f[3] < recognizer.back_threshold]
        if not boxes:
            boxes = [tuple(map(float, b)) for b in labelled]
        if boxes:
            batches.append(recognizer.crops(img, boxes))
    if not batches:
        size = recognizer.crop_size
        return np.zeros((0, size, size, 3), np.uint8)
    return np.concatenate(batches)


def as_input(crops: np.ndarray) -> np.ndarray:
    """Crops (N x S x S x 3 ``uint8``) as the classifier takes them (N x 3 x S x S float32).
    Kept as bytes until a batch is read: as floats, the crops of two hundred photos took a
    third of a gigabyte."""
    return np.ascontiguousarray(crops.transpose(0, 3, 1, 2), dtype=np.float32)


def quantise_classifier(
    model_dir: Path,
    calibration: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    check: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    *,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Quantise the classifier of the model folder ``model_dir`` in place and record it in
    the folder's ``model.json`` (``training.quantised``, and ``classifier_int8_accuracy``
    beside the other validation figures). Returns what was recorded.

    ``calibration`` and ``check`` are labelled pictures, ``(picture, boxes, labels)`` (BGR,
    N x 4 boxes, N labels; see :func:`labelled_pictures`): the first's tiles set the
    activations' ranges (:func:`calibration_crops`), both models read the second's labelled
    tiles (another set: figures for tiles the ranges were not set on). Each is read once,
    one picture at a time. :class:`ModelError` for a
    classifier already quantised or pictures with no tile in them,
    :class:`QuantisationRefused` for a quantised model that reads too much worse; the folder
    is then left as it was.
    """
    from vision.recognizer import TileRecognizer

    # it cuts the crops; its flower look, fitted to the float classifier, is not read
    rec = TileRecognizer(model_dir, threads=1, flower_look=False)
    path = classifier_path(model_dir)
    if is_quantised(path):
        raise ModelError(f"the classifier {path} is quantised already")
    calib = calibration_crops(rec, calibration)
    crops, labels = _labelled_crops(rec, check)
    if not len(calib) or not len(crops):
        raise ModelError(
            "quantising needs pictures with tiles in them, to set the ranges on and to check on"
        )
    log(f"quantising {path.name}: ranges from {len(calib)} crops, checked on {len(crops)} tiles")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=".classifier-int8-", suffix=".onnx", dir=model_dir)
    except OSError as exc:
        raise ModelError(f"cannot write the quantised classifier into {model_dir}: {exc}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            _quantise_file(path, tmp, calib)
        except (OSError, MemoryError):
            raise
        except Exception as exc:  # onnxruntime's and onnx's own untyped errors
            raise ModelError(f"onnxruntime could not quantise {path}: {exc}") from None
        figures = _compare_readings(path, tmp, crops, labels, len(calib), log)
        record = {
            "weights": WEIGHTS,
            "activations": "uint8, ranges from the calibration crops' minima and maxima",
            **figures,
        }
        _put_in_place(model_dir, path, tmp, record)
    except OSError as exc:  # a full disk, a folder made read-only: said, not a traceback
        raise ModelError(f"cannot write the quantised classifier into {model_dir}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return record


def _compare_readings(
    path: Path,
    quantised: Path,
    crops: np.ndarray,
    labels: np.ndarray,
    calibration_crops: int,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """How the float classifier at ``path`` and the ``quantised`` one read the check crops;
    :class:`QuantisationRefused` where the quantised one reads too much worse."""
    float_read, int8_read = (_labels(p, crops) for p in (path, quantised))
    figures: dict[str, Any] = {
        "calibration_crops": calibration_crops,
        "check_tiles": len(crops),
        "float_accuracy": round(float(np.mean(float_read == labels)), 4),
        "int8_accuracy": round(float(np.mean(int8_read == labels)), 4),
        "agreement": round(float(np.mean(float_read == int8_read)), 4),
    }
    log(
        f"check tiles read right: float {figures['float_accuracy']:.2%}, "
        f"int8 {figures['int8_accuracy']:.2%}; same label {figures['agreement']:.2%}"
    )
    if figures["int8_accuracy"] < figures["float_accuracy"] - MAX_LOSS:
        raise QuantisationRefused(
            f"the quantised classifier reads {figures['int8_accuracy']:.2%} of the check "
            f"tiles right against the float one's {figures['float_accuracy']:.2%}, more "
            f"than {MAX_LOSS:.0%} worse: the float classifier is kept",
            figures,
        )
    return figures


def _put_in_place(model_dir: Path, path: Path, quantised: Path, record: dict[str, Any]) -> None:
    """Replace the classifier at ``path`` with the ``quantised`` one and record it in the
    folder's manifest (read before the classifier is replaced: a manifest that cannot be read
    leaves the float classifier)."""
    manifest = ModelManifest.read(model_dir)
    validation = {**manifest.training.get("validation", {})}
    validation["classifier_int8_accuracy"] = record["int8_accuracy"]
    manifest = manifest.with_training(quantised=record, validation=validation)
    look = model_dir / FLOWER_LOOK_FILE
    if look.exists():
        manifest = manifest.with_training(flower_look={"fitted": False, "removed": STALE_LOOK})
    shutil.copymode(path, quantised)  # mkstemp's file is its owner's alone; the table's may not be
    os.replace(quantised, path)
    # a look fitted to the float classifier's embeddings would misread the int8 one's
    look.unlink(missing_ok=True)
    manifest.write(model_dir)


STALE_LOOK = "it was fitted to the float classifier: fit it again (train --flower-look)"
"""Why quantising removes a model's flower look (:mod:`vision.flower_look`)."""


def classifier_path(model_dir: Path) -> Path:
    """The classifier file of the model folder ``model_dir``, as its manifest names it (read
    from the manifest alone: no model is loaded for it)."""
    return ModelManifest.read(model_dir).file(model_dir, "classifier")


def _labelled_crops(
    recognizer: Any, check: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    crops, labels = [], []
    for img, boxes, tile_labels in check:
        if len(boxes):
            crops.append(recognizer.crops(img, [tuple(map(float, b)) for b in boxes]))
            labels.append(np.asarray(tile_labels))
    if not crops:
        size = recognizer.crop_size
        return np.zeros((0, size, size, 3), np.uint8), np.zeros(0, np.int64)
    return np.concatenate(crops), np.concatenate(labels)


def labelled_pictures(
    photos: Sequence[Any], count: int, face_sets: Sequence[Any], tables: int, seed: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(picture, boxes, labels)`` of up to ``count`` of ``photos``
    (:class:`~vision.training.dataset.LabelledPhoto`, drawn evenly over the list), then of
    ``tables`` rendered table frames of ``seed`` (the tiles in view): one at a time, as
    quantising reads them (two hundred photos held at once would take a quarter of a gigabyte)."""
    from vision.training.synth import table_frame

    if photos and count > 0:
        step = len(photos) / min(count, len(photos))
        for i in range(min(count, len(photos))):
            photo = photos[int(i * step)]
            yield photo.image(), photo.boxes, photo.labels
    rng = np.random.default_rng(seed)
    for _ in range(tables):
        frame = table_frame(rng, face_sets)
        seen = frame.visible()
        boxes = np.array([t.box for t in seen], np.float64).reshape(-1, 4)
        yield frame.image, boxes, np.array([t.label for t in seen], np.int64)


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ModelError(
            "quantising the classifier needs the onnx package: pip install -e '.[train]'"
        ) from None
    return onnx


def _quantise_file(src: Path, dst: Path, crops: np.ndarray) -> None:
    _onnx()
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Batches(CalibrationDataReader):
        def __init__(self) -> None:
            # small batches: the calibration session keeps every layer's output of a batch,
            # and at 256 crops a batch quantising took 1.8 GB
            self._left = (as_input(crops[i : i + 32]) for i in range(0, len(crops), 32))

        def get_next(self) -> dict[str, np.ndarray] | None:
            batch = next(self._left, None)
            return None if batch is None else {"crops": batch}

    with tempfile.TemporaryDirectory(prefix="quantise-") as work:
        prepared = Path(work) / "prepared.onnx"
        with warnings.catch_warnings():
            # onnxruntime advises running its pre-processing, which is what this does
            warnings.simplefilter("ignore")
            quant_pre_process(str(src), str(prepared))
            quantize_static(
                str(prepared),
                str(dst),
                Batches(),
                quant_format=QuantFormat.QDQ,
                per_channel=True,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
            )
        unsign_weights(dst, dst)


def unsign_weights(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> int:
    """Store the int8 weights of the quantised model at ``src`` as uint8 with their zero
    point moved up by 128 (the same numbers exactly), written to ``dst``; returns how many
    weight tensors moved.

    Why: with int8 weights and uint8 activations, onnxruntime on an x86 CPU with AVX2 but no
    VNNI multiplies with an instruction that sums pairs of products into 16 bits and clips
    the sum, so the same model read a table differently there (6p for 7p, tiles for bare
    felt) than on a CPU with VNNI or on an ARM board. Unsigned weights take a path that sums
    exactly on every CPU; symmetric int8 keeps the quantisation's precision. That path is
    slow where VNNI would be exact: there :mod:`vision.int8_weights` signs them again as the
    recogniser loads them."""
    onnx = _onnx()
    from onnx import numpy_helper

    model = onnx.load(str(src))
    inits = {t.name: t for t in model.graph.initializer}
    moved = 0
    shifted_names: set[str] = set()  # a tensor two nodes share moves once
    for node in model.graph.node:
        if node.op_type != "DequantizeLinear" or len(node.input) < 3:
            continue
        weight, zero = inits.get(node.input[0]), inits.get(node.input[2])
        if weight is None or zero is None or weight.data_type != onnx.TensorProto.INT8:
            continue
        for tensor in (weight, zero):
            if tensor.name in shifted_names:
                continue
            shifted_names.add(tensor.name)
            shifted = numpy_helper.to_array(tensor).astype(np.int16) + 128
            tensor.CopyFrom(numpy_helper.from_array(shifted.astype(np.uint8), tensor.name))
        moved += 1
    onnx.save(model, str(dst))
    return moved


def _labels(path: Path, crops: np.ndarray) -> np.ndarray:
    """The classifier at ``path``'s label for each crop."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    logits = [
        session.run(["logits"], {"crops": as_input(crops[i : i + 256])})[0]
        for i in range(0, len(crops), 256)
    ]
    return np.concatenate(logits).argmax(axis=1)
