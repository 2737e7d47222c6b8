"""The real-photo dataset: photographs of Chinese tile sets with a box per labelled tile.

The photos (``../shared/data/real-photos/``, Roboflow Universe "Chinese Mahjong Detection" v4,
CC BY 4.0) are three augmentations of each of 430 source photos; a file's source is its name up
to ``.rf.``. :func:`split_of` puts every source, with all its augmentations, in exactly one of
``train``, ``validation`` and ``held_out``, by a hash of the source's name: the split does not
depend on which files are present or in what order, and the benchmark's held-out photos are
never trained on.

Labels are YOLO lines (``class cx cy w h``, normalised) or polygons (``class x1 y1 x2 y2 …``,
of which the bounding box is taken); their class indices are mapped to :mod:`vision.labels`
with :data:`ROBOFLOW_CODES`.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from controller.errors import CameraError, DataError
from controller.rules.tiles import Tile
from vision.recognizer import square_crop

_CODES_TEXT = (
    "bs1 sc1 sd1 sb1 hwe bs2 sc2 sd2 sb2 hws bs3 sc3 sd3 sb3 hww bs4 sc4 sd4 sb4 hwn bf1 "
    "sc5 sd5 sb5 hdw bf2 sc6 sd6 sb6 hdg bf3 sc7 sd7 sb7 hdr bf4 sc8 sd8 sb8 sc9 sd9 sb9"
)
ROBOFLOW_CODES: tuple[str, ...] = tuple(_CODES_TEXT.split())
"""The dataset's class names, by class index (its order, not ours)."""

_HONOURS = {
    "hwe": Tile.EAST,
    "hws": Tile.SOUTH,
    "hww": Tile.WEST,
    "hwn": Tile.NORTH,
    "hdr": Tile.RED,
    "hdg": Tile.GREEN,
    "hdw": Tile.WHITE,
    "bf1": Tile.PLUM,
    "bf2": Tile.ORCHID,
    "bf3": Tile.CHRYSANTHEMUM,
    "bf4": Tile.BAMBOO_FLOWER,
}


def _code_to_label(code: str) -> int:
    if code in _HONOURS:
        return int(_HONOURS[code])
    n = int(code[2])
    if code.startswith("bs"):
        return int(Tile.SPRING) + n - 1
    suit = {"sc": 0, "sd": 9, "sb": 18}[code[:2]]
    return suit + n - 1


ROBOFLOW_TO_LABEL: tuple[int, ...] = tuple(_code_to_label(c) for c in ROBOFLOW_CODES)
"""``ROBOFLOW_TO_LABEL[class_index]`` is our label for the dataset's class."""

SPLITS = ("train", "validation", "held_out")
HELD_OUT_FRACTION = 0.15
VALIDATION_FRACTION = 0.10


def source_of(path: str | Path) -> str:
    """The source photo a file comes from: its name before ``.rf.`` (or its stem)."""
    name = Path(path).name
    return name.split(".rf.", 1)[0] if ".rf." in name else Path(name).stem


def split_of(source: str) -> str:
    """``train``, ``validation`` or ``held_out`` for a source photo (stable: a hash of it)."""
    h = int.from_bytes(hashlib.sha1(source.encode("utf-8")).digest()[:8], "big") / 2.0**64
    if h < HELD_OUT_FRACTION:
        return "held_out"
    if h < HELD_OUT_FRACTION + VALIDATION_FRACTION:
        return "validation"
    return "train"


@dataclass(frozen=True)
class LabelledPhoto:
    """One photo: its path, source, and the labelled tiles as ``boxes`` (N x 4, ``x y w h``
    in pixels) with ``labels`` (N, :mod:`vision.labels` values)."""

    path: Path
    source: str
    size: tuple[int, int]
    boxes: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)

    @property
    def split(self) -> str:
        return split_of(self.source)

    def image(self) -> np.ndarray:
        """The photo as BGR ``uint8``; :class:`~controller.errors.CameraError` if unreadable.

        Its pixels as stored, an EXIF orientation not applied: the labels and :attr:`size`
        (read from the JPEG header) refer to the stored grid."""
        img = cv2.imread(str(self.path), cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
        if img is None:
            raise CameraError(f"cannot read the photo {self.path}")
        return img


COORD_SLACK = 0.01
"""How far past the photo's edge (as a share of its side) a label's coordinate may reach."""
PHOTO_SUFFIXES = frozenset({".jpg", ".jpeg"})


def parse_label_file(text: str, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (N x 4, pixels) and labels (N) from the text of one YOLO label file."""
    boxes, labels = [], []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            cls = int(parts[0])
            vals = [float(v) for v in parts[1:]]
        except ValueError:
            raise DataError(f"label line {n} is not numbers: {line!r}") from None
        if not all(math.isfinite(v) for v in vals):
            # max(0, nan) is 0 and min(1, nan) is 1: a NaN would become a whole-photo box
            raise DataError(f"label line {n} has a coordinate that is not a number: {line!r}")
        # coordinates are shares of the photo's sides: pixels (320) or a size of 3 would be
        # clipped into a whole-photo box or dropped, silently teaching the wrong tile
        if not all(-COORD_SLACK <= v <= 1 + COORD_SLACK for v in vals):
            raise DataError(
                f"label line {n} has a coordinate outside 0-1 (coordinates are shares of the "
                f"photo's width and height): {line!r}"
            )
        if not 0 <= cls < len(ROBOFLOW_TO_LABEL):
            raise DataError(f"label line {n} has class {cls}, not 0-{len(ROBOFLOW_TO_LABEL) - 1}")
        if len(vals) == 4:
            cx, cy, w, h = vals
            if w <= 0 or h <= 0:
                raise DataError(f"label line {n} has a box of no size: {line!r}")
            x0, y0, x1, y1 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
        elif len(vals) >= 6 and len(vals) % 2 == 0:
            xs, ys = vals[0::2], vals[1::2]
            x0, y0, x1, y1 = min(xs), min(ys), max(xs), max(ys)
        else:
            raise DataError(f"label line {n} has {len(vals)} coordinates: {line!r}")
        x0, x1 = max(0.0, x0) * width, min(1.0, x1) * width
        y0, y1 = max(0.0, y0) * height, min(1.0, y1) * height
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        boxes.append((x0, y0, x1 - x0, y1 - y0))
        labels.append(ROBOFLOW_TO_LABEL[cls])
    return np.array(boxes, np.float32).reshape(-1, 4), np.array(labels, np.int64)


def load_photos(root: str | Path, splits: Iterable[str] = SPLITS) -> list[LabelledPhoto]:
    """Every labelled photo under ``root`` (``images/*.jpg`` with ``labels/*.txt``) whose
    source falls in one of ``splits``, sorted by file name.

    Raises :class:`~controller.errors.DataError` when the folder holds no photos.
    """
    root = Path(root)
    wanted = set(splits)
    unknown = wanted - set(SPLITS)
    if unknown:
        raise DataError(f"unknown split(s) {sorted(unknown)}; use {', '.join(SPLITS)}")
    try:
        images = (
            sorted(p for p in (root / "images").iterdir() if p.suffix.lower() in PHOTO_SUFFIXES)
            if (root / "images").is_dir()
            else []
        )
        if not images:
            raise DataError(f"no photos in {root / 'images'}")
        # classes.txt is the class list some labelling tools write beside the labels
        label_names = {
            p.stem
            for p in (root / "labels").iterdir()
            if p.suffix == ".txt" and p.name != "classes.txt"
        }
    except OSError as exc:
        raise DataError(
            f"{root} is not a folder of labelled photos (images/ and labels/): "
            f"{exc.strerror or exc}"
        ) from None
    # a photo without its label file would teach that it holds no tiles; a label file
    # without its photo says the data was damaged in copying
    unlabelled = [p.name for p in images if p.stem not in label_names]
    orphans = sorted(label_names - {p.stem for p in images})
    for names, what in (
        (unlabelled, "photos without a label file"),
        (orphans, "label files without a photo"),
    ):
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            raise DataError(f"{root}: {len(names)} {what}: {', '.join(names[:3])}{more}")
    out = []
    for img_path in images:
        source = source_of(img_path)
        if split_of(source) not in wanted:
            continue
        label_path = root / "labels" / (img_path.stem + ".txt")
        try:
            # utf-8-sig: a file saved by a Windows editor starts with a byte-order mark
            text = label_path.read_text(encoding="utf-8-sig")
            w, h = _jpeg_size(img_path)
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read {label_path.name} or its photo: {exc}") from None
        try:
            boxes, labels = parse_label_file(text, w, h)
        except DataError as exc:
            raise DataError(f"{label_path}: {exc.message}") from None
        out.append(LabelledPhoto(img_path, source, (w, h), boxes, labels))
    return out


def _jpeg_size(path: Path) -> tuple[int, int]:
    """Width and height from the JPEG header (without decoding the picture)."""
    with path.open("rb") as f:
        data = f.read(65536)
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            break
        marker = data[i + 1]
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            h = int.from_bytes(data[i + 5 : i + 7], "big")
            w = int.from_bytes(data[i + 7 : i + 9], "big")
            return w, h
        i += 2 + length
    img = cv2.imread(str(path))
    if img is None:
        raise CameraError(f"cannot read the photo {path}")
    return img.shape[1], img.shape[0]


def labelled_area(boxes: np.ndarray, width: int, height: int, grow: float = 0.5) -> np.ndarray:
    """Where a photo's labels say anything: the convex hull of its labelled boxes, grown by
    ``grow`` x their median side, as a ``height`` x ``width`` ``uint8`` mask (1 inside).

    Most of these photos label only the players' rows: the discards, walls and loose tiles
    around them are real tiles with no box. Outside this area the labels are silent, so
    training does not teach "no tile here" there and scoring does not count a tile found
    there as false (as partially labelled detection sets mark "don't care" regions)."""
    mask = np.zeros((height, width), np.uint8)
    if len(boxes) == 0:
        return mask
    b = np.asarray(boxes, np.float32)
    pad = grow * float(np.median(np.maximum(b[:, 2], b[:, 3])))
    x0, y0 = b[:, 0] - pad, b[:, 1] - pad
    x1, y1 = b[:, 0] + b[:, 2] + pad, b[:, 1] + b[:, 3] + pad
    corners = np.concatenate(
        [np.stack(c, axis=1) for c in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    )
    hull = cv2.convexHull(np.round(corners).astype(np.int32))
    cv2.fillConvexPoly(mask, hull, 1)
    return mask


CROWDED_LABELS = 0.35
"""A photo's :func:`label_overlap` from which its labelled boxes are taken to cover their
neighbours (the benchmark reports such photos apart)."""


def label_overlap(boxes: np.ndarray) -> float:
    """How much a photo's labelled boxes cover one another: the median, over its boxes, of the
    share of a box's area covered by the one other box that covers it most (0 with fewer
    than two boxes).

    Tiles lying side by side have boxes that barely overlap. In many of the photos the boxes
    cover a third or more of their neighbours: copies rotated by the dataset's augmentation
    (an axis-aligned box around a turned tile takes in its neighbours' corners), and boxes
    shifted or enlarged past their tiles. There a detection that fits its tile can stay
    under IoU 0.5 with the label, so accuracy is worth reading on such photos apart."""
    b = np.asarray(boxes, np.float32).reshape(-1, 4)
    if len(b) < 2:
        return 0.0
    from vision.detection import box_intersections

    inter = box_intersections(b, b)
    np.fill_diagonal(inter, 0.0)
    area = np.maximum(b[:, 2] * b[:, 3], 1e-9)
    return float(np.median((inter / area[:, None]).max(axis=1)))


def iter_crops(
    photos: Iterable[LabelledPhoto], size: int, margin: float = 1.3
) -> Iterator[tuple[np.ndarray, int]]:
    """Square crops (``size`` pixels, side ``margin`` x the box's longer side, centred on it)
    of every labelled tile, with its label."""
    for photo in photos:
        img = photo.image()
        for box, label in zip(photo.boxes, photo.labels, strict=True):
            yield square_crop(img, box, size, margin), int(label)


SHARED_DATA_VARIABLE = "MAHJONG_SHARED_DATA"


def shared_data_dir() -> Path:
    """Where the shared training data (``tile-art/``, ``real-photos/``) is looked for:
    ``$MAHJONG_SHARED_DATA`` where it is set, else ``../shared/data`` beside the checkout."""
    named = os.environ.get(SHARED_DATA_VARIABLE)
    if named:
        return Path(named).expanduser()
    return Path(__file__).resolve().parents[3] / "shared" / "data"


Prediction = tuple[tuple[float, float, float, float], int, float]
"""A detection as the scoring sees it: ``(box x y w h, label, confidence)``."""


def match_detections(
    preds: list[Prediction],
    truth_boxes: np.ndarray,
    truth_labels: np.ndarray,
    iou: float = 0.5,
) -> list[tuple[int, int | None]]:
    """Greedy matching, most confident prediction first: each prediction is paired with the
    unmatched labelled tile of highest IoU (at least ``iou``) *with the same label*, else with
    none. Returns ``(prediction index, labelled tile index or None)`` per prediction."""
    from vision.detection import box_iou

    order = sorted(range(len(preds)), key=lambda i: -preds[i][2])
    taken: set[int] = set()
    out = []
    for i in order:
        box, label, _ = preds[i]
        best, bj = iou, None
        for j, (tb, tl) in enumerate(zip(truth_boxes, truth_labels, strict=True)):
            if j in taken or int(tl) != label:
                continue
            x, y, w, h = (float(v) for v in tb)
            overlap = box_iou(box, (x, y, w, h))
            if overlap >= best:
                best, bj = overlap, j
        if bj is not None:
            taken.add(bj)
        out.append((i, bj))
    return out


def outside_labelled_area(preds: list[Prediction], photo: LabelledPhoto) -> list[bool]:
    """Per prediction, whether its centre lies outside the photo's
    :func:`labelled_area` (where the labels cannot say whether it is right)."""
    w, h = photo.size
    area = labelled_area(photo.boxes, w, h)
    out = []
    for (x, y, bw, bh), _, _ in preds:
        cx = min(max(int(x + bw / 2), 0), w - 1)
        cy = min(max(int(y + bh / 2), 0), h - 1)
        out.append(not area[cy, cx])
    return out


def tile_f1(
    per_photo: Iterable[tuple[list[Prediction], LabelledPhoto]],
    labels: set[int] | None = None,
    labelled_area_only: bool = False,
    iou: float = 0.5,
) -> dict[str, float]:
    """Tile-level precision, recall and F1 over photos (a labelled tile counts when a
    detection of its label has IoU >= ``iou`` with it), restricted to ``labels`` if given.
    With ``labelled_area_only`` an unmatched detection outside the photo's labelled area is
    not counted as false (see :func:`labelled_area`)."""
    tp = fp = fn = 0
    for preds, photo in per_photo:
        pairs = match_detections(preds, photo.boxes, photo.labels, iou)
        hit = {j for _, j in pairs if j is not None}
        silent = outside_labelled_area(preds, photo) if labelled_area_only else [False] * len(preds)
        for i, j in pairs:
            if labels is None or preds[i][1] in labels:
                tp += j is not None
                fp += j is None and not silent[i]
        for j, tl in enumerate(photo.labels):
            if (labels is None or int(tl) in labels) and j not in hit:
                fn += 1
    p = tp / max(1, tp + fp)
    r = tp / max(1, tp + fn)
    return {"precision": p, "recall": r, "f1": 2 * p * r / max(1e-9, p + r), "tiles": tp + fn}


MISS_CAUSES = ("box", "misread", "box and misread", "not found")
"""Why a labelled tile was missed (see :func:`miss_causes`)."""


def miss_causes(
    preds: list[Prediction],
    truth_boxes: np.ndarray,
    truth_labels: np.ndarray,
    pairs: list[tuple[int, int | None]],
    near: float = 0.25,
) -> dict[str, int]:
    """Why each labelled tile that :func:`match_detections` left unmatched was missed:

    - ``box``: a detection with its label lies on it, but with IoU under 0.5 (at least
      ``near``): the tile was found and read right, and the two boxes disagree;
    - ``misread``: a detection lies on it with IoU 0.5 or more, with another label;
    - ``box and misread``: a detection lies on it (IoU ``near`` to 0.5), with another label;
    - ``not found``: no detection overlaps it by ``near`` or more.

    The split matters because the labels of the real photos do not all fit their tiles
    (rotated copies, shifted or enlarged boxes): a ``box`` miss may be the label's error,
    a ``misread`` is the recogniser's."""
    from vision.detection import box_iou

    hit = {j for _, j in pairs if j is not None}
    out = dict.fromkeys(MISS_CAUSES, 0)
    for j, (tb, tl) in enumerate(zip(truth_boxes, truth_labels, strict=True)):
        if j in hit:
            continue
        x, y, w, h = (float(v) for v in tb)
        box = (x, y, w, h)
        best = same = 0.0
        for p, label, _ in preds:
            iou = box_iou(p, box)
            best = max(best, iou)
            if label == int(tl):
                same = max(same, iou)
        if best >= 0.5:
            # a detection of its label at IoU >= 0.5 left it unmatched only by matching
            # another labelled box better (labels drawn over each other): a box miss
            out["box" if same >= 0.5 else "misread"] += 1
        elif same >= near:
            out["box"] += 1
        elif best >= near:
            out["box and misread"] += 1
        else:
            out["not found"] += 1
    return out
