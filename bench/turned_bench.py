"""How well the classifier reads tiles turned by any angle (tiles tossed askew on a table,
close-ups taken at a slant), one model or several side by side.

    python -m bench.turned_bench [--data ../shared/data] [--split validation] [MODEL_DIR ...]

Each photo of the split whose labelled boxes stay apart
(:func:`vision.training.dataset.label_overlap` under 0.2, so that the boxes fit their tiles)
is turned about its centre by each angle on a canvas half as large again (the edges
repeated, nothing cut off), and every labelled box is turned with it; the classifier reads
each tile at the axis-aligned box that holds its turned box, as the finder boxes a tilted
tile. Printed per angle and model: the share of tiles read right, and of the flowers.
Without a model folder, the committed model is read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

from controller.errors import MahjongTableError
from controller.exit_codes import ExitCode
from vision.labels import FLOWER_LABELS
from vision.recognizer import TileRecognizer
from vision.training.dataset import label_overlap, load_photos, shared_data_dir

ANGLES = (0, 15, 30, 45)
APART = 0.2


def turned(img: np.ndarray, boxes: np.ndarray, angle: float):
    """The picture turned by ``angle`` degrees on a canvas 1.5x its size, and the boxes
    (N x 4, x y w h) that hold each turned box."""
    h, w = img.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)
    m[:, 2] += (w * 0.25, h * 0.25)
    big = cv2.warpAffine(img, m, (int(w * 1.5), int(h * 1.5)), borderMode=cv2.BORDER_REPLICATE)
    x, y, bw, bh = (boxes[:, k, None] for k in range(4))
    xs = np.hstack([x, x + bw, x + bw, x])
    ys = np.hstack([y, y, y + bh, y + bh])
    tx = m[0, 0] * xs + m[0, 1] * ys + m[0, 2]
    ty = m[1, 0] * xs + m[1, 1] * ys + m[1, 2]
    lo_x, lo_y = tx.min(axis=1), ty.min(axis=1)
    held = np.stack([lo_x, lo_y, tx.max(axis=1) - lo_x, ty.max(axis=1) - lo_y], axis=1)
    return big, held


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=shared_data_dir())
    ap.add_argument("--split", default="validation")
    ap.add_argument("models", nargs="*", type=Path, help="model folders (default: committed)")
    args = ap.parse_args(argv)
    try:
        return _run(args)
    except MahjongTableError as exc:  # no data, no model, an unknown split
        print(f"turned_bench: {exc}", file=sys.stderr)
        return ExitCode.INPUT


def _run(args: argparse.Namespace) -> int:
    photos = [
        p
        for p in load_photos(args.data / "real-photos", [args.split])
        if len(p.boxes) and label_overlap(p.boxes) < APART
    ]
    tiles = sum(len(p.labels) for p in photos)
    print(f"{args.split} photos whose labels stay apart: {len(photos)}, {tiles} tiles")
    if not tiles:
        print(f"turned_bench: no {args.split} photo to read", file=sys.stderr)
        return ExitCode.INPUT
    models = args.models or [None]
    readers = [TileRecognizer(m, threads=2) for m in models]
    # a few dozen 640 px photos: read once, not once per angle and model
    images = [p.image() for p in photos]
    for angle in ANGLES:
        cells = []
        for rec in readers:
            right = flower_right = flowers = 0
            for p, img in zip(photos, images, strict=True):
                big, boxes = turned(img, p.boxes.astype(np.float64), angle)
                read = rec.classify(big, [tuple(b) for b in boxes]).argmax(axis=1)
                ok = read == p.labels
                fl = np.isin(p.labels, FLOWER_LABELS)
                right += int(ok.sum())
                flower_right += int(ok[fl].sum())
                flowers += int(fl.sum())
            cells.append(f"{right / tiles:.3f} (flowers {flower_right / max(1, flowers):.3f})")
        said = (f"{m or 'committed'} {c}" for m, c in zip(models, cells, strict=True))
        print(f"turned {angle:2d}°: " + "; ".join(said))
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
