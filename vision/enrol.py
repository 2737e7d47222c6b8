"""Enrolment: adapt the recogniser to a table's own tile set.

Tile sets differ (colours, fonts, flower pictures), so a user photographs their own set laid
out in a known grid, checks the labels, and refits the classifier's last layer to it:

1. lay the tiles in rows as the *layout* says (by default one row each of 1-9 万, 1-9 筒, 1-9 条,
   the winds and dragons ``E S W N C F P``, the flowers ``1f``-``8f``), and photograph them
   from above, once or several times (other light, other places);
2. :func:`samples_from_grid` finds the tiles, groups them into rows and gives each the label
   its place in the layout says; :func:`write_labels` and :func:`contact_sheet` put them in a
   JSON file and a picture to check, and the user corrects any wrong label in the file;
3. :func:`fit_head` refits the last layer (a multinomial logistic regression on the
   classifier's embedding, kept close to the trained one so tiles not shown keep their
   reading) and :func:`save_enrolled` writes a model folder: the same two ONNX models plus
   ``head.npz``, which :class:`~vision.recognizer.TileRecognizer` uses when present.

No PyTorch is needed: enrolment runs on the table's own computer.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from controller.errors import CameraError, ConfigError, ModelError
from controller.rules.errors import HandError
from controller.rules.tiles import parse_tiles
from vision.camera import read_image
from vision.detection import Box, TileDetection, box_intersections, is_box, scale_box
from vision.labels import BACK, NUM_LABELS, label_from_name, label_name
from vision.model_manifest import MANIFEST_FILE, ModelManifest
from vision.recognizer import HEAD_FILE, TileRecognizer, join_pieces

BASE_HEAD_FILE = "base_head.npz"
"""The classifier's trained last layer, which enrolment refits."""
DEFAULT_LAYOUT = "123456789m / 123456789p / 123456789s / ESWNCFP / 12345678f"
"""One row per suit, then the honours, then the flowers; ``/`` separates rows."""
GRID_PIECES_OVERLAP = 0.1
"""Two tiles found in a grid photo whose boxes share more than this part of the smaller box,
and whose union is about one tile, are pieces of one tile: looser than the recogniser's own
joining (``vision.recognizer.PIECES_OVERLAP``), since the tiles of a grid lie apart."""


class EnrolError(ConfigError):
    """An enrolment that cannot go on: a photo that does not match the layout, a labels file
    that is not what enrolment wrote."""


@dataclass(frozen=True)
class EnrolSample:
    """One tile of the user's set: the photo it is in, its box there, the label it has (from
    the layout, or as the user corrected it) and what the model read before enrolment."""

    image: Path
    box: Box
    label: int
    read_as: int = -1
    confidence: float = 0.0


def parse_layout(text: str) -> list[list[int]]:
    """Rows of labels from a layout text: rows separated by ``/`` or new lines, each in the
    tile notation (``123456789m``, ``ESWNCFP``, ``12345678f``), ``#`` for a face-down tile."""
    rows = []
    for n, part in enumerate(text.replace("\n", "/").split("/"), 1):
        part = part.strip()
        if not part:
            continue
        row: list[int] = []
        for k, chunk in enumerate(part.split("#")):
            if k:
                row.append(BACK)
            try:
                row.extend(int(t) for t in parse_tiles(chunk))
            except HandError as exc:
                raise EnrolError(f"layout row {n} ({part!r}): {exc.message}") from None
        if row:
            rows.append(row)
    if not rows:
        raise EnrolError("the layout names no tiles")
    return rows


def group_rows(detections: list[TileDetection]) -> list[list[TileDetection]]:
    """The tiles of a grid photo grouped into rows (top to bottom), each left to right."""
    if not detections:
        return []
    dets = sorted(detections, key=lambda d: d.centre[1])
    heights = np.array([d.box[3] for d in dets])
    gap = float(np.median(heights)) * 0.5
    rows: list[list[TileDetection]] = [[dets[0]]]
    for d in dets[1:]:
        row_y = float(np.mean([r.centre[1] for r in rows[-1]]))
        if d.centre[1] - row_y > gap:
            rows.append([d])
        else:
            rows[-1].append(d)
    return [sorted(r, key=lambda d: d.centre[0]) for r in rows]


def merge_pieces(
    recognizer: TileRecognizer, img: np.ndarray, found: list[TileDetection]
) -> list[TileDetection]:
    """The tiles found in a grid photo with the pieces of one tile made one
    (:func:`vision.recognizer.join_pieces`, at :data:`GRID_PIECES_OVERLAP`), each joined tile
    read again at its union box and marked to check. A set unlike any the model learnt from
    can be found in pieces (each half of a 4 筒 taken for a tile), and enrolment is for such
    sets; the recogniser joins the pieces that overlap most itself, and in a grid, where
    tiles lie apart or touch, one tile's worth of overlapping finds cannot be two tiles.
    Pieces are joined, and read, at the boxes the recogniser read them from
    (:meth:`~vision.recognizer.TileRecognizer.read_box`)."""
    if len(found) < 2:
        return found
    boxes = np.array([recognizer.read_box(d.box) for d in found], np.float64)
    tile = float(np.median(boxes[:, 2] * boxes[:, 3]))
    joined, kept = join_pieces(boxes, list(range(len(found))), tile, GRID_PIECES_OVERLAP)
    out: list[TileDetection] = []
    for i in kept:
        if np.array_equal(joined[i], boxes[i]):
            out.append(found[i])
            continue
        ux, uy, uw, uh = (float(v) for v in joined[i])
        union: Box = (ux, uy, uw, uh)
        probs = recognizer.classify(img, [union])[0]
        label = int(probs.argmax())
        x0, y0, w, h = scale_box(union, recognizer.box_scale)
        quad = np.array([[x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h]], np.float32)
        out.append(
            TileDetection(
                label,
                float(probs[label]),
                (x0, y0, w, h),
                quad,
                sideways=w > h,
                needs_confirmation=True,  # found in pieces: the label is a guess to check
            )
        )
    return out


def samples_from_grid(
    recognizer: TileRecognizer, photo: str | Path, layout: list[list[int]]
) -> list[EnrolSample]:
    """Find the tiles in a photo of the layout and label each by its place in it.

    Raises :class:`EnrolError` naming the first row whose count differs from the layout's,
    so the user can re-lay or re-take the photo.
    """
    path = Path(photo).resolve()  # a refit may run from another folder
    img = _photo(path)
    found = merge_pieces(recognizer, img, recognizer.detect(img))
    rows = group_rows(found)
    if len(rows) != len(layout):
        raise EnrolError(
            f"{path.name}: found {len(rows)} rows of tiles ({', '.join(str(len(r)) for r in rows)}"
            f" tiles), the layout has {len(layout)} rows; lay the rows apart and photograph "
            "from straight above"
        )
    out = []
    for n, (row, want) in enumerate(zip(rows, layout, strict=True), 1):
        if len(row) != len(want):
            names = " ".join(label_name(x) for x in want)
            raise EnrolError(
                f"{path.name}: row {n} has {len(row)} tiles found, the layout says "
                f"{len(want)} ({names})"
            )
        for det, label in zip(row, want, strict=True):
            out.append(EnrolSample(path, det.box, label, det.label, det.confidence))
    return out


def _photo(path: Path) -> np.ndarray:
    """An enrolment photo; a photo that cannot be read is the user's to mend (an EnrolError,
    exit 2), not a camera failure."""
    try:
        return read_image(path)
    except CameraError as exc:
        raise EnrolError(f"enrolment photo: {exc.message}") from None


def write_labels(path: str | Path, samples: list[EnrolSample]) -> None:
    """Write the samples as JSON for the user to check: one record per tile with its
    ``label`` (edit it if wrong) and what the model ``read_as`` before enrolment. Photos are
    named relative to the labels file's folder, which is where :func:`read_labels` looks
    for them, whichever folder a later run starts in."""
    p = Path(path)
    folder = p.resolve().parent
    records = [
        {
            "image": _relative(s.image, folder),
            "box": [round(v, 1) for v in s.box],
            "label": label_name(s.label),
            "read_as": label_name(s.read_as) if s.read_as >= 0 else None,
            "confidence": round(s.confidence, 3),
        }
        for s in samples
    ]
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"tiles": records}, indent=1, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise EnrolError(f"cannot write the labels file {p}: {exc.strerror or exc}") from None


def _relative(image: Path, folder: Path) -> str:
    try:
        return os.path.relpath(Path(image).resolve(), folder)
    except ValueError:  # another drive (Windows): no relative path
        return str(Path(image).resolve())


def read_labels(path: str | Path) -> list[EnrolSample]:
    """Read a labels file written by :func:`write_labels` (perhaps corrected by hand)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise EnrolError(f"cannot read the labels file {p}: {exc}") from None
    records = data.get("tiles") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise EnrolError(f"{p} is not an enrolment labels file: it has no list of tiles")
    folder = p.resolve().parent
    out: list[EnrolSample] = []
    where: dict[tuple[Path, Box], tuple[int, int]] = {}
    for i, r in enumerate(records, 1):
        sample = _sample(r, folder, f"{p}: tile {i}")
        key = (sample.image, sample.box)
        if key in where and where[key][1] != sample.label:
            # one tile taught as two: which the user meant cannot be told
            raise EnrolError(
                f"{p}: tiles {where[key][0]} and {i} are the same tile of {sample.image.name} "
                f"labelled {label_name(where[key][1])} and {label_name(sample.label)}: keep one"
            )
        where[key] = (i, sample.label)
        out.append(sample)
    if not out:
        raise EnrolError(f"{p} holds no tiles")
    return out


def _sample(record: Any, folder: Path, what: str) -> EnrolSample:
    """One record of a labels file; :class:`EnrolError` naming the tile for anything wrong."""
    if not isinstance(record, dict):
        raise EnrolError(f"{what} is not a record of image, box and label")
    for key in ("image", "box", "label"):
        if key not in record:
            raise EnrolError(f"{what} has no {key}")
    try:
        label = label_from_name(str(record["label"]))
    except ModelError as exc:
        raise EnrolError(f"{what}: {exc.message}") from None
    raw = record["box"]
    try:
        # "1234" would iterate into four numbers: a box is a list
        box = tuple(float(v) for v in raw) if isinstance(raw, list) else ()
    except (TypeError, ValueError):
        box = ()
    if not is_box(box):
        raise EnrolError(f"{what} has a bad box {raw!r}: [x, y, width, height] expected")
    image = record["image"]
    if not isinstance(image, str) or not image.strip():
        raise EnrolError(f"{what} has no image file named ({image!r})")
    path = Path(os.path.normpath(folder / image))
    if not path.exists() and not Path(image).is_absolute() and Path(image).exists():
        # a labels file written before photos were named relative to it named them relative
        # to the folder enrol ran in: found there, it is read as it was meant
        path = Path(image).resolve()
    return EnrolSample(path, box, label)  # type: ignore[arg-type]


def contact_sheet(samples: list[EnrolSample], columns: int = 9, cell: int = 72) -> np.ndarray:
    """A picture of every enrolled tile with its label under it (red where the model read it
    otherwise before enrolment), to check the labels by eye."""
    cache: dict[Path, np.ndarray] = {}
    rows = -(-len(samples) // columns)
    sheet = np.full((rows * (cell + 18), columns * cell, 3), 255, np.uint8)
    for i, s in enumerate(samples):
        img = cache.get(s.image)
        if img is None:
            img = cache[s.image] = read_image(s.image)
        x, y, w, h = s.box
        side = max(w, h) * 1.1
        cx, cy = x + w / 2, y + h / 2
        k = cell / side
        m = np.array([[k, 0, cell / 2 - cx * k], [0, k, cell / 2 - cy * k]], np.float32)
        crop = cv2.warpAffine(img, m, (cell, cell), borderMode=cv2.BORDER_REPLICATE)
        r, c = divmod(i, columns)
        y0, x0 = r * (cell + 18), c * cell
        sheet[y0 : y0 + cell, x0 : x0 + cell] = crop
        differs = s.read_as >= 0 and s.read_as != s.label
        text = label_name(s.label) + (f" ({label_name(s.read_as)})" if differs else "")
        colour = (0, 0, 200) if differs else (0, 0, 0)
        cv2.putText(sheet, text, (x0 + 2, y0 + cell + 13), cv2.FONT_HERSHEY_SIMPLEX, 0.4, colour)
    return sheet


def _augmented_views(img: np.ndarray, boxes: list[Box]) -> list[tuple[np.ndarray, list[Box]]]:
    """The photo in four quarter turns, each with its boxes, plus boxes a little larger and
    smaller (as the finder's boxes vary): the head learns each tile from every side."""
    views = []
    cur, cur_boxes = img, list(boxes)
    for _ in range(4):
        for f in (1.0, 0.9, 1.12):
            views.append(
                (
                    cur,
                    [
                        (x + w * (1 - f) / 2, y + h * (1 - f) / 2, w * f, h * f)
                        for x, y, w, h in cur_boxes
                    ],
                )
            )
        w_img = cur.shape[1]
        cur = np.ascontiguousarray(np.rot90(cur))  # counter-clockwise
        cur_boxes = [(y, w_img - x - w, h, w) for x, y, w, h in cur_boxes]
    return views


def embeddings_of(
    recognizer: TileRecognizer, samples: list[EnrolSample]
) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings (and labels) of every sample in every augmented view."""
    return stacked(embeddings_by_photo(recognizer, samples))


def stacked(groups: list[PhotoEmbeddings]) -> tuple[np.ndarray, np.ndarray]:
    """The photos' embeddings and labels, one after the other."""
    return np.concatenate([g.views for g in groups]), np.concatenate([g.labels for g in groups])


@dataclass(frozen=True)
class PhotoEmbeddings:
    """One enrolment photo's tiles: ``views`` (every tile in every augmented view, view after
    view) with their ``labels``; the first ``tiles`` rows are the photo as taken."""

    image: Path
    views: np.ndarray
    labels: np.ndarray
    tiles: int


def embeddings_by_photo(
    recognizer: TileRecognizer, samples: list[EnrolSample]
) -> list[PhotoEmbeddings]:
    """The samples' embeddings (:func:`embed_views`), photo by photo."""
    by_image: dict[Path, list[EnrolSample]] = {}
    for s in samples:
        by_image.setdefault(s.image, []).append(s)
    out = []
    for path, group in by_image.items():
        img = _photo(path)
        height, width = img.shape[:2]
        boxes = [s.box for s in group]
        inside = box_intersections(np.array(boxes), np.array([(0.0, 0.0, width, height)]))[:, 0]
        for s, area in zip(group, inside, strict=True):
            # a tile mostly off the photo would teach the head the photo's border
            if area < 0.5 * s.box[2] * s.box[3]:
                raise EnrolError(
                    f"{path}: the box {s.box} of a {label_name(s.label)} lies mostly outside "
                    f"the {width}x{height} photo"
                )
        emb = embed_views(recognizer, img, boxes)
        labels = np.array([s.label for s in group] * (len(emb) // len(group)), np.int64)
        out.append(PhotoEmbeddings(path, emb, labels, len(group)))
    return out


def cross_photo_accuracy(
    groups: list[PhotoEmbeddings], weight: np.ndarray, bias: np.ndarray, **fit: Any
) -> tuple[float, float] | None:
    """How enrolment reads tiles in a photo it did not learn from: for each photo, the head
    is refitted (:func:`fit_head`, with ``fit``'s settings) on all the other photos and reads
    that photo's tiles as taken. Returns the share read right by the trained head and by
    the refitted ones, over all photos' tiles; None with fewer than two photos.

    The accuracy on the enrolled tiles themselves cannot show a refit that learnt one photo's
    light or framing rather than the set (on real photos that happens: see
    ``bench/enrol_bench.py``); this can."""
    if len(groups) < 2:
        return None
    right_before = right_after = tiles = 0
    for i, held in enumerate(groups):
        w, b = fit_head(*stacked(groups[:i] + groups[i + 1 :]), weight, bias, **fit)
        x, y = held.views[: held.tiles], held.labels[: held.tiles]
        right_before += int(((x @ weight + bias).argmax(axis=1) == y).sum())
        right_after += int(((x @ w + b).argmax(axis=1) == y).sum())
        tiles += held.tiles
    return right_before / max(1, tiles), right_after / max(1, tiles)


def embed_views(recognizer: TileRecognizer, img: np.ndarray, boxes: list[Box]) -> np.ndarray:
    """Embeddings of the tiles at ``boxes`` in a picture, in every augmented view: one row
    per tile per view, view after view (the tiles' order repeats). The boxes are the
    reported ones: each tile is cut at its
    :meth:`~vision.recognizer.TileRecognizer.read_box`, as the recogniser reads it."""
    read_at = [recognizer.read_box(b) for b in boxes]
    return np.concatenate([recognizer.embed(v, b) for v, b in _augmented_views(img, read_at)])


def base_head(model_dir: Path, embedding_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The trained last layer (``base_head.npz`` beside the model): a weight of
    ``embedding_size`` (when given) x 43 and a bias of 43, every value a number."""
    path = Path(model_dir) / BASE_HEAD_FILE
    try:
        with np.load(path) as data:
            weight, bias = data["weight"].astype(np.float64), data["bias"].astype(np.float64)
    except Exception as exc:  # numpy raises what its zip reader raises for a truncated file
        raise ModelError(
            f"the model at {model_dir} has no usable {BASE_HEAD_FILE}: {exc}"
        ) from None
    rows = embedding_size if embedding_size is not None else weight.shape[0]
    if weight.shape != (rows, NUM_LABELS) or bias.shape != (NUM_LABELS,):
        raise ModelError(
            f"{path} holds a weight of {list(weight.shape)} and a bias of {list(bias.shape)}, "
            f"not {rows}x{NUM_LABELS} and {NUM_LABELS} for this model's classifier"
        )
    if not (np.all(np.isfinite(weight)) and np.all(np.isfinite(bias))):
        raise ModelError(f"{path} holds values that are not numbers")
    return weight, bias


def fit_head(
    emb: np.ndarray,
    labels: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray,
    *,
    steps: int = 300,
    lr: float = 0.05,
    anchor: float = 1e-3,
) -> tuple[np.ndarray, np.ndarray]:
    """Refit the last layer on the user's tiles: softmax cross-entropy by gradient descent,
    starting from the trained ``weight`` (E x 43) and ``bias``, with an L2 pull of strength
    ``anchor`` back towards them (labels the user did not show keep their trained reading)."""
    if len(emb) != len(labels) or len(emb) == 0:
        raise EnrolError("no enrolled tiles to fit")
    x = emb.astype(np.float64)
    y = np.eye(NUM_LABELS)[labels]
    w0, b0 = weight.astype(np.float64), bias.astype(np.float64)
    w, b = w0.copy(), b0.copy()
    n = len(x)
    # Adam: the embedding's scale varies a lot between features
    mw, vw, mb, vb = (np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b))
    for t in range(1, steps + 1):
        z = x @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) / n
        gw = x.T @ g + anchor * (w - w0)
        gb = g.sum(axis=0) + anchor * (b - b0)
        for param, grad, m, v in ((w, gw, mw, vw), (b, gb, mb, vb)):
            m *= 0.9
            m += 0.1 * grad
            v *= 0.999
            v += 0.001 * grad * grad
            param -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w.astype(np.float32), b.astype(np.float32)


def accuracy(emb: np.ndarray, labels: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> float:
    """Share of embeddings the head reads as their label."""
    if len(labels) == 0:
        return 0.0
    return float(((emb @ weight + bias).argmax(axis=1) == labels).mean())


def check_out_folder(base_dir: Path, out_dir: Path) -> None:
    """Refuse to write an enrolment into the model it adapts (before anything is written)."""
    if Path(out_dir).resolve() == Path(base_dir).resolve():
        raise EnrolError("write the enrolled model to a new folder, not over the model it adapts")


def save_enrolled(
    base_dir: Path, out_dir: Path, weight: np.ndarray, bias: np.ndarray, info: dict
) -> Path:
    """Write an enrolled model folder: the base model's own files (its manifest, the two ONNX
    models it names and the trained head), ``head.npz`` and ``enrolment.json`` (what was
    enrolled). Returns the folder.

    The manifest keeps the base model's confidence calibration (``confidence_temperature``):
    an enrolment has no photos of the set apart from those it learns from to fit another on
    (fitted on the enrolled tiles themselves, it would call the head surer than it is), and
    on the held-out photos enrolled as ``bench/enrol_bench.py`` does, the kept temperature
    left the expected calibration error within 0.004 of the best one for the enrolled heads.

    Nothing else of the base folder is copied: a base that is itself enrolled holds the
    user's ``labels.json`` of that enrolment, which must not overwrite this one's. The files
    are written into a folder of their own first and moved in only when all are written, so
    a full disk leaves ``out_dir`` as it was; :class:`EnrolError` says what failed."""
    base_dir, out_dir = Path(base_dir).resolve(), Path(out_dir).resolve()
    check_out_folder(base_dir, out_dir)
    manifest = ModelManifest.read(base_dir)
    names = [
        manifest.finder,
        manifest.classifier,
        BASE_HEAD_FILE,
        MANIFEST_FILE,  # after the files it names
    ]
    staging: Path | None = None
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".enrolling-", dir=out_dir))
        for name in names:
            shutil.copy2(base_dir / name, staging / name)
        np.savez(staging / HEAD_FILE, weight=weight, bias=bias)
        (staging / "enrolment.json").write_text(json.dumps(info, indent=2) + "\n")
        for name in [*names, HEAD_FILE, "enrolment.json"]:
            os.replace(staging / name, out_dir / name)
    except OSError as exc:
        raise EnrolError(
            f"cannot write the enrolled model to {out_dir}: {exc.strerror or exc}"
        ) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir
