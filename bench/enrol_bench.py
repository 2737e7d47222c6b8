"""Benchmark of enrolment (``mahjong-table enrol``) on the held-out real photos: what showing
the model a set's own tiles once is worth when it reads those tiles again.

    python -m bench.enrol_bench [--data ../shared/data] [--model DIR] [--split held_out]

Each source photo of the split comes as three copies (the dataset's augmentations: turned,
cropped, recoloured). For every source and every copy of it, the classifier's last layer is
refitted on that copy's tiles exactly as ``mahjong-table enrol`` refits it: at the
recogniser's own boxes, each tile it finds given its labelled tile's label (as the user checks
them against the grid's layout), embedded in every view (:func:`vision.enrol.embed_views`),
fitted from the model's ``base_head.npz`` (:func:`vision.enrol.fit_head`). The source's other
copies are then read through the whole recogniser with the trained head and with the refitted
one. Printed for both:

- of the tiles found (IoU >= 0.5 with a labelled tile, any label), the share read right, all
  tiles and flowers apart;
- end to end: tile-level F1 over each photo's labelled area (as in
  ``python -m bench.vision_bench``), all tiles and flowers apart.

What this measures is an optimistic case of enrolment: the tiles read afterwards are the very
tiles enrolled, in another copy of the same photo (same light, same camera), and only the
labels in that photo are enrolled. A real enrolment shows all 42 faces in a grid photographed
separately from the table. Each photo is read once per other copy of its source, with both
heads, so the two columns count the same readings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from controller.errors import MahjongTableError
from controller.exit_codes import ExitCode
from vision.enrol import base_head, embed_views, fit_head
from vision.files import why_not_writable
from vision.labels import BACK
from vision.recognizer import TileRecognizer
from vision.training.dataset import (
    LabelledPhoto,
    Prediction,
    load_photos,
    match_detections,
    shared_data_dir,
    tile_f1,
)

REPO = Path(__file__).resolve().parent.parent

FLOWERS = 34  # labels from here on are the eight flowers


def found_tiles(preds, photo) -> list[tuple[Prediction, int]]:
    """The detections that found a labelled tile (IoU >= 0.5, any label), each with that
    tile's label."""
    anyl = [(b, 0, c) for b, _, c in preds]
    pairs = match_detections(anyl, photo.boxes, np.zeros(len(photo.labels), np.int64))
    return [(preds[i], int(photo.labels[j])) for i, j in pairs if j is not None]


def figures(readings: list[tuple[list[Prediction], LabelledPhoto]]) -> dict[str, Any]:
    """One head's readings: of the tiles found, the share read right (flowers apart), and
    tile-level figures over the labelled area (:func:`vision.training.dataset.tile_f1`)."""
    found = [(p[1], truth) for preds, photo in readings for p, truth in found_tiles(preds, photo)]
    right = [label == truth for label, truth in found]
    flower_right = [label == truth for label, truth in found if truth >= FLOWERS]
    return {
        "reading": sum(right) / max(1, len(right)),
        "reading_flowers": sum(flower_right) / max(1, len(flower_right)),
        "tiles": tile_f1(readings, labelled_area_only=True),
        "flowers": tile_f1(readings, labels=set(range(FLOWERS, BACK)), labelled_area_only=True),
        "readings": len(right),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=shared_data_dir())
    ap.add_argument("--model", type=Path, default=REPO / "vision" / "models")
    ap.add_argument("--split", default="held_out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, help="only this many sources (a quick look)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--steps", type=int, default=300, help="fit_head's steps (the command's)")
    ap.add_argument(
        "--anchor", type=float, default=1e-3, help="fit_head's pull to the trained head"
    )
    args = ap.parse_args(argv)
    for name in ("limit", "threads", "steps"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            ap.error(f"--{name} must be 1 or more")
    if args.json is not None and (why := why_not_writable(args.json)):
        ap.error(f"cannot write {args.json}: {why}")
    try:
        return _run(args, ap)
    except MahjongTableError as exc:  # no data, no model, an unknown split
        print(f"enrol_bench: {exc}", file=sys.stderr)
        return ExitCode.INPUT


def _run(args: argparse.Namespace, ap: argparse.ArgumentParser) -> int:
    if (args.model / "head.npz").exists():
        ap.error(f"{args.model} is already enrolled: give the model it was enrolled from")
    results = run(
        args.model,
        args.data,
        split=args.split,
        limit=args.limit,
        threads=args.threads,
        steps=args.steps,
        anchor=args.anchor,
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return ExitCode.OK


def run(
    model: Path,
    data: Path,
    *,
    split: str = "held_out",
    limit: int | None = None,
    threads: int = 2,
    steps: int = 300,
    anchor: float = 1e-3,
) -> dict[str, Any]:
    """The benchmark (see the module's text) on ``model`` (one not enrolled), printing its
    table; returns the figures of each head. ``python -m bench.vision_bench`` runs it too."""
    rec = TileRecognizer(model, threads=threads)
    w0, b0 = (a.astype(np.float32) for a in base_head(model))
    by_source = defaultdict(list)
    for photo in load_photos(data / "real-photos", [split]):
        by_source[photo.source].append(photo)
    sources = [g for g in by_source.values() if len(g) > 1][:limit]
    print(
        f"{split} real photos: {sum(len(g) for g in sources)} copies of "
        f"{len(sources)} source photos; model {model}"
    )
    readings: dict[str, list[tuple[list[Prediction], LabelledPhoto]]] = {
        "trained head": [],
        "enrolled head": [],
    }
    t0 = time.time()
    skipped = 0
    for group in sources:
        images = [p.image() for p in group]
        rec.head = (w0, b0)
        base = [[(d.box, d.label, d.confidence) for d in rec.detect(img)] for img in images]
        for k, enrolled in enumerate(group):
            # as `mahjong-table enrol` does: the recogniser's own boxes, each given the label
            # of the tile it found (there the user checks them against the grid's layout)
            found = found_tiles(base[k], enrolled)
            if not found:
                # nothing to enrol from this copy: its user keeps the trained head, and the
                # copies it would have read count in both columns, so that every copy
                # weighs the same in each
                skipped += 1
                for t, photo in enumerate(group):
                    if t != k:
                        readings["trained head"].append((base[t], photo))
                        readings["enrolled head"].append((base[t], photo))
                continue
            emb = embed_views(rec, images[k], [p[0] for p, _ in found])
            labels = np.tile([truth for _, truth in found], len(emb) // len(found))
            head = fit_head(emb, labels, w0, b0, steps=steps, anchor=anchor)
            rec.head = head
            for t, photo in enumerate(group):
                if t != k:
                    preds = [(d.box, d.label, d.confidence) for d in rec.detect(images[t])]
                    readings["trained head"].append((base[t], photo))
                    readings["enrolled head"].append((preds, photo))
            rec.head = (w0, b0)

    results = {name: figures(r) for name, r in readings.items()}
    print(
        f"({time.time() - t0:.0f} s; finder threshold {rec.finder_threshold}; {skipped} copies "
        "with no tile found to enrol, their siblings read by the trained head in both columns)"
    )
    head = ("tiles found read right", "flowers", "end-to-end F1", "flowers")
    print(f"{'':<16}{head[0]:>24}{head[1]:>9}{head[2]:>15}{head[3]:>9}")
    for name, f in results.items():
        print(
            f"{name:<16}{f['reading']:>24.3f}{f['reading_flowers']:>9.3f}"
            f"{f['tiles']['f1']:>15.3f}{f['flowers']['f1']:>9.3f}"
        )
    print(f"tiles found per column: {results['trained head']['readings']}")
    return results


if __name__ == "__main__":
    sys.exit(main())
