"""Benchmark of the whole camera chain on simulated hands: how often the table is read right,
and flagged when not, as a hand is laid from the empty table to the winner's hand laid open.

    python -m bench.sim_hands_bench [--hands 20] [--first 0] [--hold 6] [--json PATH]

Each hand is :func:`hardware_sim.hand_script.laid_hand` of its seed (the same hand
``mahjong-table sim-camera --seed N`` writes): flowers and melds laid one at a time by an arm
reaching in from the seat, an added kong first as its pung, the winner's hand laid open last,
each step held ``--hold`` frames. :class:`hardware_sim.camera.SimCamera` renders every frame
(1280x960, its default noise and blur); the pipeline is the product's own: calibration from
the markers in the hand's first frame, the committed recogniser, grouping, the tracker
(:class:`vision.pipeline.TablePipeline`). Per hand:

- checkpoints: at the last frame of each step that lays something (``--hold`` frames after
  it appeared, more than the tracker's 5 to settle it), whether every seat's settled view is
  exactly what lies on the table then; a checkpoint that is not exact is *caught* when a
  seat whose view is wrong asks for confirmation;
- the end: the settled table after the last frame, exact or not, and whether it asks for
  confirmation (a false flag when it is exact);
- changes reported, and how many were flagged;
- the pipeline's time per frame (reading and settling, not rendering), median.

There is no peer: the figures speak for this version of the recogniser and tracker on these
seeds, to compare with another version on the same seeds. Everything is seeded, so a run
repeats exactly but for the times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from controller.exit_codes import ExitCode
from hardware_sim.camera import SimCamera
from hardware_sim.hand_script import laid_hand
from vision.calibration import calibrate_from_markers
from vision.files import why_not_writable
from vision.melds import SeatView
from vision.pipeline import TablePipeline
from vision.recognizer import TileRecognizer
from vision.rendering.table_scene import TableLayout

DEFAULT_HANDS = 20
DEFAULT_HOLD = 6


def seat_right(view: SeatView, layout: TableLayout) -> bool:
    """Whether a settled seat view is exactly what its seat of ``layout`` holds."""
    want = layout.seats[view.seat]
    return (
        view.flowers == want.flowers
        and [m.meld for m in view.melds] == list(want.melds)
        and view.open_tiles == want.open_tiles
    )


def run_hand(seed: int, hold: int, recognizer: TileRecognizer) -> dict[str, Any]:
    """One hand laid and read; its figures."""
    _, steps = laid_hand(np.random.default_rng(seed), hold=hold)
    camera = SimCamera(seed=seed)
    try:
        camera.set_layout(steps[0].layout)
        first = camera.read()
        pipeline = TablePipeline(calibrate_from_markers(first.image), recognizer)
        times: list[float] = []
        checkpoints = exact = caught = changes = flagged_changes = 0
        wrong_at: list[str] = []
        frame = first
        for n, step in enumerate(steps):
            camera.set_layout(step.layout)
            for k in range(step.frames):
                if not (n == 0 and k == 0):
                    frame = camera.read()
                start = time.perf_counter()
                update = pipeline.process(frame)
                times.append(time.perf_counter() - start)
                changes += len(update.changes)
                flagged_changes += sum(c.needs_confirmation for c in update.changes)
            if step.layout.arms or n == 0:
                continue
            checkpoints += 1
            views = pipeline.views
            wrong = [v for v in views if not seat_right(v, step.layout)]
            exact += not wrong
            caught += bool(wrong) and all(v.needs_confirmation for v in wrong)
            if wrong:
                wrong_at.append(f"{step.what}: read {'; '.join(v.describe() for v in wrong)}")
        end = pipeline.views
        end_exact = all(seat_right(v, steps[-1].layout) for v in end)
        end_flagged = any(v.needs_confirmation for v in end)
    finally:
        camera.close()
    return {
        "seed": seed,
        "frames": sum(s.frames for s in steps),
        "checkpoints": checkpoints,
        "exact": exact,
        "caught": caught,
        "end_exact": end_exact,
        "end_flagged": end_flagged,
        "changes": changes,
        "flagged_changes": flagged_changes,
        "ms_per_frame": 1000 * statistics.median(times),
        "not_exact": wrong_at,
    }


def summary(hands: list[dict[str, Any]]) -> dict[str, Any]:
    total = sum(h["checkpoints"] for h in hands)
    exact = sum(h["exact"] for h in hands)
    wrong = total - exact
    ends = [h for h in hands if not h["end_exact"]]
    return {
        "hands": len(hands),
        "frames": sum(h["frames"] for h in hands),
        "checkpoints": total,
        "checkpoints_exact": exact / total if total else 0.0,
        "checkpoints_wrong_caught": sum(h["caught"] for h in hands) / wrong if wrong else None,
        "ends_exact": sum(h["end_exact"] for h in hands),
        "ends_wrong_flagged": sum(h["end_flagged"] for h in ends),
        "ends_wrong_unflagged": sum(not h["end_flagged"] for h in ends),
        "ends_right_flagged": sum(h["end_flagged"] for h in hands if h["end_exact"]),
        "changes": sum(h["changes"] for h in hands),
        "flagged_changes": sum(h["flagged_changes"] for h in hands),
        "ms_per_frame": statistics.median(h["ms_per_frame"] for h in hands),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=DEFAULT_HANDS, help="how many hands")
    ap.add_argument("--first", type=int, default=0, help="the first hand's seed")
    ap.add_argument("--hold", type=int, default=DEFAULT_HOLD, help="frames each step is held")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if args.hands < 1 or args.first < 0 or args.hold < 1:
        ap.error("--hands and --hold are 1 or more, --first 0 or more")
    if args.json is not None and (why := why_not_writable(args.json)):
        ap.error(f"cannot write {args.json}: {why}")
    recognizer = TileRecognizer()
    print(f"sim hands bench: seeds {args.first}-{args.first + args.hands - 1}, hold {args.hold}")
    print(
        "| seed | frames | checkpoints exact | wrong but caught | end "
        "| changes flagged/all | ms/frame |"
    )
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    hands = []
    for seed in range(args.first, args.first + args.hands):
        h = run_hand(seed, args.hold, recognizer)
        hands.append(h)
        end = ("exact" if h["end_exact"] else "WRONG") + (", flagged" if h["end_flagged"] else "")
        print(
            f"| {seed} | {h['frames']} | {h['exact']}/{h['checkpoints']} | "
            f"{h['caught']}/{h['checkpoints'] - h['exact']} | {end} | "
            f"{h['flagged_changes']}/{h['changes']} | {h['ms_per_frame']:.1f} |",
            flush=True,
        )
    s = summary(hands)
    caught = s["checkpoints_wrong_caught"]
    print(
        f"\n{s['hands']} hands, {s['frames']} frames: checkpoints exact "
        f"{s['checkpoints_exact']:.3f} of {s['checkpoints']}"
        + (f" (the others caught {caught:.2f})" if caught is not None else "")
        + f"; hands ending exact {s['ends_exact']}/{s['hands']} (wrong: "
        f"{s['ends_wrong_flagged']} flagged, {s['ends_wrong_unflagged']} not; right but "
        f"flagged: {s['ends_right_flagged']}); changes flagged {s['flagged_changes']}/"
        f"{s['changes']}; {s['ms_per_frame']:.1f} ms a frame"
    )
    for h in hands:
        for line in h["not_exact"]:
            print(f"  seed {h['seed']}, after {line}")
    print(f"run time {time.perf_counter() - start:.1f} s")
    if args.json is not None:
        figures = {"first": args.first, "hold": args.hold, "summary": s, "hands": hands}
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
