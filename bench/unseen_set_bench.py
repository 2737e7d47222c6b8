"""Benchmark of a tile set the recogniser has never seen, at table scale, before and after
``mahjong-table enrol`` with two photos of it.

    python -m bench.unseen_set_bench [--data ../shared/data] [--model DIR] [--tables 12]

The set is the public-domain riichi art of ``tile-art/fluffystuff-cc0`` (34 kinds and a red
back; it prints no flowers), which no model of this project is trained on
(:func:`vision.rendering.faces.riichi_art_faces`). ``--tables`` tables are rendered with it
(seeded): four rows of 13 tiles as the four seats' hands, each row turned to its seat, and
two rows of 8 in the middle, every tile 40-60 px wide on felt, seen by a camera leaning up to
12 degrees with its light, blur, noise and JPEG. Each table is read through the whole
recogniser; printed:

- the tiles found (a detection at IoU >= 0.5 with the tile, any label), of all tiles laid;
- top-1: of the tiles found, the share read as their label (the target: >= 0.97 before
  enrolment, >= 0.99 after), and the classifier alone on the tiles' true boxes;
- what the table would ask about: the share of the wrong reads, and of the right ones, that
  need confirmation (the questions it asks the players);
- the kinds read worst.

Then two photos of the set are rendered as a user takes them for enrolment (the 34 kinds laid
in the rows ``123456789m / 123456789p / 123456789s / ESWNCFP``, from about straight above, in
two lights on two felts) and ``mahjong-table enrol`` is run on them as a user runs it
(in-process, its own output kept apart); the enrolled model reads the same tables again.

``python -m bench.vision_bench`` prints the same in its run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from controller.errors import MahjongTableError
from controller.exit_codes import ExitCode
from vision.files import why_not_writable
from vision.labels import label_name
from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer
from vision.rendering.faces import FaceSet, riichi_art_faces
from vision.rendering.render import Camera, PlacedTile, Rendered, render_scene
from vision.training.dataset import match_detections, shared_data_dir

TARGETS = {"before": 0.97, "after": 0.99}
"""Top-1 of the tiles found on the unseen set, before and after enrolment."""
FRAME = (1280, 960)
"""The table camera's picture (and the plane it sees), as the simulator's."""
TILE_WIDTHS = (40.0, 60.0)
"""A table's tiles are this wide, in pixels of the picture (one width a table)."""
LAYOUT = "123456789m / 123456789p / 123456789s / ESWNCFP"
"""The enrolment grid: ``vision.enrol.DEFAULT_LAYOUT`` without the flowers the set lacks."""
HAND = 13
MIDDLE = (2, 8)  # rows x tiles in the middle of the table


@dataclass(frozen=True)
class Reading:
    """What one head read of the tables: per tile laid, whether it was found, with which
    label and whether that read asks to be confirmed, and the classifier's label at its true
    box."""

    truth: np.ndarray  # the labels laid (tiles at least half in the picture)
    found: np.ndarray  # bool: a detection at IoU >= 0.5, any label
    read: np.ndarray  # the found detection's label, -1 where not found
    asked: np.ndarray  # bool: the found detection needs confirmation (False where not found)
    at_box: np.ndarray  # the classifier's label at the tile's true box
    false_finds: int  # detections on no tile (IoU under 0.5 with every one)

    def figures(self) -> dict[str, Any]:
        found = self.found
        right = found & (self.read == self.truth)
        wrong = found & ~right
        per_kind = {}
        for label in np.unique(self.truth):
            mine = found & (self.truth == label)
            per_kind[label_name(int(label))] = float(right[mine].sum() / max(1, mine.sum()))
        return {
            "tiles": len(self.truth),
            "found": float(found.mean()) if len(found) else 0.0,
            "false_finds": self.false_finds,
            "top1_found": float(right.sum() / max(1, found.sum())),
            "top1_at_true_boxes": float((self.at_box == self.truth).mean())
            if len(self.truth)
            else 0.0,
            # what the table would ask about: the wrong reads it catches, and the right
            # ones it asks about needlessly (the calibration was fitted on sets it was
            # trained on; a new set's reads are where it is tested hardest)
            "wrong_asked": float(self.asked[wrong].sum() / max(1, wrong.sum())),
            "right_asked": float(self.asked[right].sum() / max(1, right.sum())),
            "by_kind": per_kind,
        }


def _row(
    labels: list[int], start: tuple[float, float], step: tuple[float, float], angle: float, w: float
) -> list[PlacedTile]:
    """Tiles from ``start``, ``step`` apart, each turned by ``angle``; the row runs along
    ``step`` turned by how far ``angle`` is off a quarter turn, as a row laid askew is turned
    whole (its tiles side by side, never over one another)."""
    off = math.radians(angle - 90 * round(angle / 90))
    c, s = math.cos(off), math.sin(off)
    dx, dy = step[0] * c - step[1] * s, step[0] * s + step[1] * c
    x, y = start
    return [
        PlacedTile(label, (x + k * dx, y + k * dy), angle=angle, width=w)
        for k, label in enumerate(labels)
    ]


def table_tiles(labels: list[int], width: float, rng: np.random.Generator) -> list[PlacedTile]:
    """Four hands of :data:`HAND` tiles, each row turned to its seat, and the middle rows,
    taking ``labels`` in order (4 x 13 + 2 x 8 of them), on a :data:`FRAME` plane."""
    pw, ph = FRAME
    h = width * 4 / 3
    gap = width + rng.uniform(0.5, 2.0)  # tiles of a hand touch, or nearly
    half = (HAND - 1) * gap / 2
    margin = h / 2 + rng.uniform(30, 60)
    jitter = rng.uniform(-3, 3, 4)
    cx, cy = pw / 2, ph / 2
    it = iter(labels)
    # seat 0 at the bottom edge reads its tiles upright; the others turn with their seats:
    # (first tile's centre, step to the next, angle)
    seats = (
        ((cx - half, ph - margin), (gap, 0.0), 0.0),
        ((pw - margin, cy + half), (0.0, -gap), 270.0),
        ((cx + half, margin), (-gap, 0.0), 180.0),
        ((margin, cy - half), (0.0, gap), 90.0),
    )
    hands = [
        _row([next(it) for _ in range(HAND)], start, step, angle + turn, width)
        for (start, step, angle), turn in zip(seats, jitter, strict=True)
    ]
    rows, per_row = MIDDLE
    middle = []
    for r in range(rows):
        angle = float(rng.choice([0.0, 180.0])) + rng.uniform(-4, 4)
        y = cy + (r - (rows - 1) / 2) * h * 1.8
        x0 = cx - (per_row - 1) * (width + 3) / 2
        middle += _row([next(it) for _ in range(per_row)], (x0, y), (width + 3, 0), angle, width)
    return [t for hand in hands for t in hand] + middle


def tables(faces: FaceSet, n: int, seed: int) -> list[Rendered]:
    """``n`` tables of the set (see the module's text), every kind the set has laid about as
    often; the same pictures for the same seed."""
    rng = np.random.default_rng(seed)
    per_table = 4 * HAND + MIDDLE[0] * MIDDLE[1]
    kinds = list(faces.labels)
    pool: list[int] = []
    out = []
    for _ in range(n):
        while len(pool) < per_table:
            pool += [int(k) for k in rng.permutation(kinds)]
        labels, pool = pool[:per_table], pool[per_table:]
        width = float(rng.uniform(*TILE_WIDTHS))
        camera = Camera.looking_at(
            FRAME,
            FRAME,
            tilt=float(rng.uniform(-12, 12)),
            turn=float(rng.uniform(-3, 3)),
            zoom=float(rng.uniform(0.96, 1.0)),
            brightness=float(rng.uniform(0.85, 1.15)),
            gradient=float(rng.uniform(0, 0.2)),
            blur=float(rng.uniform(0, 0.8)),
            noise=float(rng.uniform(1, 4)),
            jpeg=int(rng.integers(80, 96)),
        )
        tiles = table_tiles(labels, width, rng)
        out.append(
            render_scene(tiles, faces, plane_size=FRAME, rng=rng, table="felt", camera=camera)
        )
    return out


def grid_photo(faces: FaceSet, rng: np.random.Generator, width: float = 56.0) -> np.ndarray:
    """A photo of the set laid out as :data:`LAYOUT` says, from about straight above."""
    from vision.enrol import parse_layout

    rows = parse_layout(LAYOUT)
    h = width * 4 / 3
    step = width * 1.25
    top = FRAME[1] / 2 - (len(rows) - 1) * h * 1.7 / 2
    tiles = []
    for r, labels in enumerate(rows):
        x0 = FRAME[0] / 2 - (len(labels) - 1) * step / 2
        tiles += _row(labels, (x0, top + r * h * 1.7), (step, 0), float(rng.uniform(-2, 2)), width)
    camera = Camera.looking_at(
        FRAME,
        FRAME,
        tilt=float(rng.uniform(-5, 5)),
        turn=float(rng.uniform(-2, 2)),
        brightness=float(rng.uniform(0.85, 1.15)),
        noise=float(rng.uniform(1, 3)),
        jpeg=90,
    )
    return render_scene(tiles, faces, plane_size=FRAME, rng=rng, table="felt", camera=camera).image


def read(rec: TileRecognizer, scenes: list[Rendered]) -> Reading:
    """Every table read through the whole recogniser, and by the classifier at the true
    boxes."""
    truth, found, got, asked, at_box = [], [], [], [], []
    false_finds = 0
    for scene in scenes:
        labels = np.array([t.label for t in scene.tiles], np.int64)
        boxes = np.array([t.box for t in scene.tiles], np.float32).reshape(-1, 4)
        dets = rec.detect(scene.image)
        anyl = [(d.box, 0, d.confidence) for d in dets]
        read_as = np.full(len(labels), -1, np.int64)
        unsure = np.zeros(len(labels), bool)
        for i, j in match_detections(anyl, boxes, np.zeros(len(labels), np.int64)):
            if j is not None:
                read_as[j] = dets[i].label
                unsure[j] = dets[i].needs_confirmation
            else:
                false_finds += 1
        probs = rec.classify(scene.image, boxes)
        truth.append(labels)
        got.append(read_as)
        found.append(read_as >= 0)
        asked.append(unsure)
        at_box.append(probs.argmax(axis=1) if len(probs) else np.zeros(0, np.int64))
    return Reading(*(np.concatenate(a) for a in (truth, found, got, asked, at_box)), false_finds)


def enrol(model: Path, faces: FaceSet, folder: Path, seed: int) -> tuple[Path | None, str]:
    """Two grid photos of the set written to ``folder`` and ``mahjong-table enrol`` run on
    them as a user runs it. Returns the enrolled model folder (None when enrol refused the
    photos) and what the command said (its last line, or why it refused)."""
    from controller.cli import main as mahjong_table

    rng = np.random.default_rng(seed + 1000)
    photos = []
    for k in range(2):
        path = folder / f"grid{k + 1}.png"
        cv2.imwrite(str(path), grid_photo(faces, rng))
        photos.append(str(path))
    out = folder / "enrolled"
    said, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(errors):
        code = mahjong_table(
            ["enrol", *photos, "--layout", LAYOUT, "--out", str(out), "--model", str(model)]
        )
    lines = [line for line in (said.getvalue() + errors.getvalue()).splitlines() if line.strip()]
    if code != ExitCode.OK:
        return None, lines[-1] if lines else f"exit {code}"
    return out, next((line for line in lines if line.startswith("Each photo left out")), lines[-1])


def run(
    data: Path, model: Path | None, n_tables: int, seed: int = 0, threads: int = 2
) -> dict[str, Any]:
    """The benchmark's figures (see the module's text), printing as it goes.
    :class:`~controller.errors.MahjongTableError` when the art cannot be drawn."""
    model = model or DEFAULT_MODEL_DIR
    faces = riichi_art_faces(data / "tile-art")
    t0 = time.perf_counter()
    scenes = tables(faces, n_tables, seed)
    before = read(TileRecognizer(model, threads=threads), scenes).figures()
    with tempfile.TemporaryDirectory(prefix="mahjong-unseen-set-") as tmp:
        enrolled, said = enrol(model, faces, Path(tmp), seed)
        after = (
            read(TileRecognizer(enrolled, threads=threads), scenes).figures() if enrolled else None
        )
    out: dict[str, Any] = {
        "set": faces.name,
        "tables": n_tables,
        "seed": seed,
        "targets": TARGETS,
        "before": before,
        "enrol": said,
        "after": after,
    }
    print(
        f"unseen tile set ({faces.name}, never trained on): {n_tables} tables of "
        f"{before['tiles']} tiles 40-60 px wide on felt ({time.perf_counter() - t0:.0f} s)"
    )
    print(
        f"    {'':<30}{'found':>8}{'false finds':>13}{'top-1, found':>14}{'target':>8}"
        f"{'top-1, true boxes':>19}"
    )
    for name, f in (("before enrolment", before), ("after enrol, 2 photos", after)):
        if f is None:
            print(f"    {name:<30}enrolment refused the photos: {said}")
            continue
        target = TARGETS["before" if f is before else "after"]
        print(
            f"    {name:<30}{f['found']:>8.3f}{f['false_finds']:>13}{f['top1_found']:>14.3f}"
            f"{target:>8.2f}"
            f"{f['top1_at_true_boxes']:>19.3f}"
        )
    for name, f in (("before", before), ("after", after)):
        if f is not None:
            print(
                f"    the table would ask {name}: about {100 * f['wrong_asked']:.0f} % of "
                f"the wrong reads, {100 * f['right_asked']:.0f} % of the right ones"
            )
    print(f"    enrol said: {said}")
    for name, f in (("before", before), ("after", after)):
        if f is not None:
            worst = sorted(f["by_kind"].items(), key=lambda kv: kv[1])[:6]
            print(f"    read worst {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in worst))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=shared_data_dir())
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--tables", type=int, default=12, help="tables to render and read")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    for name in ("tables", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be 1 or more")
    if args.json is not None and (why := why_not_writable(args.json)):
        ap.error(f"cannot write {args.json}: {why}")
    try:
        figures = run(args.data, args.model, args.tables, args.seed, args.threads)
    except MahjongTableError as exc:  # no art, no resvg, no model
        print(f"unseen_set_bench: {exc}", file=sys.stderr)
        return ExitCode.INPUT
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
