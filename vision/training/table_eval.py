"""Table-frame figures: how well the whole pipeline reads rendered tables, seat by seat.

Each frame is a random table (:func:`vision.rendering.table_scene.random_layout`: melds of every
kind, flowers, sometimes a hand laid open, discards and walls in the centre) rendered by the
simulator's renderer with a random camera mounting and picture faults. The frame goes through
the real path: calibration from its ArUco markers, the recogniser, grouping per seat. Each
seat's reading is compared with what was laid:

* meld accuracy: melds read exactly (kind, tiles and the seat claimed from) over melds laid;
  meld precision: melds read exactly over melds reported;
* flower accuracy and precision, likewise, per flower;
* open-tile accuracy on the hands laid open (tiles matched as a multiset);
* seat accuracy: seats read exactly right in everything;
* how many melds were flagged for confirmation, and the time per frame.

``bench/vision_bench.py`` calls :func:`run`; ``python -m vision.training.table_eval`` prints the
figures alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from controller.errors import VisionError
from controller.exit_codes import ExitCode
from vision.calibration import SEATS, calibrate_from_markers
from vision.melds import SeatView
from vision.pipeline import Recognizer, TablePipeline
from vision.rendering.table_scene import SeatLayout, TableScene, random_layout

FELTS = ((135, 95, 35), (60, 120, 30), (40, 100, 20), (50, 50, 140), (70, 70, 70))
"""Felt colours the frames are drawn on (blue, greens, red, grey)."""


@dataclass
class _Count:
    right: int = 0
    truth: int = 0
    reported: int = 0

    def add(self, truth: Sequence[Any], reported: Sequence[Any]) -> None:
        common = Counter(truth) & Counter(reported)
        self.right += sum(common.values())
        self.truth += len(truth)
        self.reported += len(reported)

    def __add__(self, other: _Count) -> _Count:
        return _Count(
            self.right + other.right, self.truth + other.truth, self.reported + other.reported
        )

    @property
    def accuracy(self) -> float:
        return self.right / self.truth if self.truth else 1.0

    @property
    def precision(self) -> float:
        return self.right / self.reported if self.reported else 1.0


@dataclass
class TableFigures:
    """The tallies of an evaluation; :meth:`figures` turns them into the reported numbers."""

    frames: int = 0
    calibration_failures: int = 0
    melds: list[_Count] = field(default_factory=lambda: [_Count() for _ in range(SEATS)])
    flowers: list[_Count] = field(default_factory=lambda: [_Count() for _ in range(SEATS)])
    open_tiles: _Count = field(default_factory=_Count)
    seats_right: int = 0
    seats_read: int = 0
    flagged_melds: int = 0
    seconds: list[float] = field(default_factory=list)

    def add_seat(self, seat: int, laid: SeatLayout, view: SeatView) -> None:
        truth_melds = [(m.kind.value, m.tiles, m.source) for m in laid.melds]
        read_melds = []
        for m in view.melds:
            meld = m.meld
            read_melds.append((meld.kind.value, meld.tiles, meld.source) if meld else ("?",))
            self.flagged_melds += int(m.needs_confirmation)
        self.melds[seat].add(truth_melds, read_melds)
        self.flowers[seat].add(list(laid.flowers), list(view.flowers))
        if laid.open_tiles or view.open_tiles:
            self.open_tiles.add(list(laid.open_tiles), list(view.open_tiles))
        exact = (
            Counter(truth_melds) == Counter(read_melds)
            and Counter(laid.flowers) == Counter(view.flowers)
            and Counter(laid.open_tiles) == Counter(view.open_tiles)
        )
        self.seats_right += int(exact)
        self.seats_read += 1

    def figures(self) -> dict[str, Any]:
        melds = sum(self.melds, _Count())
        flowers = sum(self.flowers, _Count())
        ms = 1000 * float(np.mean(self.seconds)) if self.seconds else 0.0
        return {
            "frames": self.frames,
            "calibration_failures": self.calibration_failures,
            "meld_accuracy": round(melds.accuracy, 4),
            "meld_precision": round(melds.precision, 4),
            "melds_laid": melds.truth,
            "meld_accuracy_by_seat": [round(m.accuracy, 4) for m in self.melds],
            "flower_accuracy": round(flowers.accuracy, 4),
            "flower_precision": round(flowers.precision, 4),
            "flowers_laid": flowers.truth,
            "flower_accuracy_by_seat": [round(f.accuracy, 4) for f in self.flowers],
            "open_tile_accuracy": round(self.open_tiles.accuracy, 4),
            "seat_accuracy": round(self.seats_right / self.seats_read, 4)
            if self.seats_read
            else 1.0,
            "melds_flagged": self.flagged_melds,
            "ms_per_frame": round(ms, 1),
        }


def evaluate(
    recognizer: Recognizer,
    *,
    frames: int = 20,
    seed: int = 0,
    mode: str = "frame",
    frame_size: tuple[int, int] = (1280, 960),
) -> TableFigures:
    """Render ``frames`` random tables and read each through the pipeline with
    ``recognizer``; the same ``seed`` gives the same frames."""
    if frames < 1:
        raise VisionError("evaluate at least one frame")
    rng = np.random.default_rng(seed)
    tally = TableFigures()
    scenes: dict[int, TableScene] = {}
    for _ in range(frames):
        felt = int(rng.integers(len(FELTS)))
        if felt not in scenes:  # a scene is costly to build: one per felt
            scenes[felt] = TableScene(felt_colour=FELTS[felt], seed=felt)
        scene = scenes[felt]
        layout = random_layout(rng, discards=int(rng.integers(0, 20)), walls=rng.random() < 0.5)
        camera = scene.camera(
            frame_size,
            tilt=float(rng.uniform(0, 12)),
            turn=float(rng.choice([0.0, 90.0, 180.0, 270.0]) + rng.normal(0, 2)),
            zoom=float(rng.uniform(0.8, 0.88)),
            brightness=float(rng.uniform(0.8, 1.15)),
            gradient=float(rng.uniform(0, 0.4)),
            glare=float(rng.choice([0.0, rng.uniform(0.05, 0.2)])),
            blur=float(rng.uniform(0.3, 0.9)),
            noise=float(rng.uniform(1, 4)),
        )
        frame = scene.render(layout, camera, rng=rng)
        tally.frames += 1
        try:
            calibration = calibrate_from_markers(frame.image, scene.geometry)
        except VisionError:
            tally.calibration_failures += 1
            for k in range(SEATS):
                tally.add_seat(k, layout.seats[k], SeatView(k))
            continue
        pipeline = TablePipeline(calibration, recognizer, mode=mode)
        start = time.perf_counter()
        reading = pipeline.read(frame.image)
        tally.seconds.append(time.perf_counter() - start)
        for k in range(SEATS):
            tally.add_seat(k, layout.seats[k], reading.views[k])
    return tally


def run(recognizer: Recognizer, frames: int = 20, seed: int = 0) -> dict[str, Any]:
    """The table-frame figures ``bench/vision_bench.py`` prints (1280x960 frames)."""
    return evaluate(recognizer, frames=frames, seed=seed).figures()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", choices=("frame", "seats"), default="frame")
    ap.add_argument("--model", help="model folder (default: the committed model)")
    args = ap.parse_args(argv)
    if args.frames < 1:
        ap.error("--frames must be 1 or more")
    from controller.errors import MahjongTableError
    from vision.recognizer import TileRecognizer

    try:
        recognizer = TileRecognizer(args.model)
        figures = evaluate(recognizer, frames=args.frames, seed=args.seed, mode=args.mode)
    except MahjongTableError as exc:
        print(f"{ap.prog}: {exc}", file=sys.stderr)
        return ExitCode.INPUT
    print(json.dumps(figures.figures(), indent=2))
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
