"""Benchmark of the table tracker (:class:`vision.tracker.TableTracker`): how often what it
settles is flagged when right, and left unflagged when wrong, under noisy per-frame reads.

    python -m bench.tracker_bench [--frames 800] [--seed 7] [--scenario NAME ...] [--json PATH]

One fixed table (:data:`LAYOUT`: four seats with flowers, pungs, chows, exposed, added and
concealed kongs, and one hand laid open), laid out once by
:class:`vision.rendering.table_scene.TableScene`, is read frame after frame as the
recogniser would read it, with the noise of each named scenario (:data:`SCENARIOS`): reads
dipping below the model's ``min_confidence`` (flagged), tiles not found, a hand over part of
a meld for a few frames, glare reading a tile sure as a neighbouring label for 2-8 frames
(10-40 in "long glare", longer than the tracker takes to settle a reading and then to stop
doubting it). The reads go through :func:`vision.melds.group_table` (which merges a tile
found twice) to :meth:`TableTracker.update`, with a bare-felt test as the pipeline's (a
place is bare when 85 % of it shows felt, and never under the hand).

After the first :data:`WARMUP` frames (the table settling), every frame's settled views
(:attr:`TableTracker.views`) are scored against the layout by :func:`score`. Each flower,
meld and laid-open tile settled at a seat is one *item-frame*: right when the seat's truth
holds it (same flower, same meld with its kind and source, same tile), wrong otherwise;
flagged when it asks the players to confirm. Per scenario:

- false flag %: item-frames right but flagged, of all item-frames (players asked about a
  thing that is right; under glare that includes a meld the grouping repaired from a misread
  tile and flagged, which is the flag doing its job on a frame that was wrong);
- silent %: item-frames wrong and unflagged, of all item-frames (a misread that can reach
  a score);
- wrong %: item-frames wrong, of all; caught %: wrong item-frames flagged, of the wrong ones;
- absent: truth items not settled at their seat, summed over frames;
- frames with a false flag, of the scored frames; and frames with a note about a stray tile
  at any seat (a sideways tile in no meld, a face-down one in no kong: the seat's view then
  asks for confirmation too, and on this table no tile is stray);
- changes reported after warm-up (:class:`vision.tracker.TableChange`), and how many were
  flagged; the settling changes of the warm-up are given apart in the JSON;
- :meth:`TableTracker.update` time per frame, mean and max, in ms (the tracker only, not
  grouping the reads).

There is no peer tracker to run beside it: the figures are absolute, to compare one version
of the tracker with another on the same seed. Everything is seeded (the scene by
:data:`SCENE_SEED`, each scenario's noise by ``--seed`` and its name), so a run repeats
exactly but for the times. ``--json`` also writes every figure to a file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from controller.exit_codes import ExitCode
from controller.rules.melds import Meld
from controller.rules.tiles import Tile, parse_tiles
from vision.calibration import Calibration
from vision.files import why_not_writable
from vision.labels import BACK
from vision.melds import SeatView, TileRead, group_table
from vision.model_manifest import ModelManifest
from vision.recognizer import DEFAULT_MODEL_DIR
from vision.rendering.table_scene import PlacedOnTable, TableLayout, TableScene
from vision.tracker import BareTest, TableTracker

SCENE_SEED = 5
DEFAULT_SEED = 7
DEFAULT_FRAMES = 800
WARMUP = 10
"""Frames not scored: the tracker needs ``stable_frames`` (5) of them to settle the table."""
CAL = Calibration(np.eye(3), (900, 900))  # the plane itself, 1 px per mm
FELT_SHARE = 0.85  # as the pipeline's bare-felt test
HAND_REACH_MM = 22.0  # a hand over a tile hides what lies within about a tile's width of it

LAYOUT = (
    TableLayout()
    .with_seat(
        0,
        flowers=(Tile(34), Tile(38)),
        melds=(
            Meld.of("pung", "EEE", 2),
            Meld.of("chow", "345p", 3),
            Meld.of("added_kong", "7777s", 1),
        ),
    )
    .with_seat(
        1,
        flowers=(Tile(36),),
        melds=(
            Meld.of("concealed_kong", "9999s"),
            Meld.of("kong", "CCCC", 0),
            Meld.of("chow", "678m", 0),
        ),
    )
    .with_seat(
        2,
        flowers=(Tile(37), Tile(39)),
        melds=(Meld.of("added_kong", "1111m", 1), Meld.of("pung", "WWW", 3)),
    )
    .with_seat(
        3,
        open_tiles=tuple(parse_tiles("22m 456m 789p 444s")),
        melds=(Meld.of("pung", "FFF", 1),),
    )
)


def _min_confidence() -> float:
    """The committed model's ``min_confidence``, read from its manifest as the recogniser
    reads it (without loading the model): reads under it come flagged. The tracker goes by
    the flag alone; the numbers only have to agree with it, as the recogniser's do."""
    return ModelManifest.read(DEFAULT_MODEL_DIR).min_confidence


MIN_CONFIDENCE = _min_confidence()


@dataclass(frozen=True)
class Scenario:
    """The noise on the reads: per read and frame, the chance it ``dip`` below
    ``min_confidence`` or be ``miss``-ed; per frame, the chance a ``hand`` comes over part of
    a meld (for 2-6 frames) and that ``glare`` starts on a tile (read sure as a neighbouring
    label for ``glare_frames`` frames, both ends included)."""

    name: str
    dip: float = 0.0
    miss: float = 0.0
    hand: float = 0.0
    glare: float = 0.0
    glare_frames: tuple[int, int] = (2, 8)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("clean"),
    Scenario("dip 0.5%", dip=0.005),
    Scenario("dip 1%", dip=0.01),
    Scenario("missed 1%", miss=0.01),
    Scenario("hand 3%", hand=0.03),
    Scenario("dip+miss+hand", dip=0.005, miss=0.005, hand=0.03),
    Scenario("glare 2%", glare=0.02),
    Scenario("glare 2% + dip 0.5%", glare=0.02, dip=0.005),
    Scenario("glare 1% + dip 1%", glare=0.01, dip=0.01),
    # a tile read sure as another for longer than it takes to settle and then to stop
    # doubting what settled: the misreads no single frame can tell from the truth
    Scenario("long glare 1%", glare=0.01, glare_frames=(10, 40)),
)


def neighbour(label: int) -> int:
    """What glare reads a face as here, and a sure read's runner-up: the next of its suit,
    honours or flowers (the one before, for the last), so a playing tile stays one and a
    flower a flower, as the classifier's likeliest confusions do."""
    if label < 27:
        return label + 1 if label % 9 < 8 else label - 1
    if label < 34:
        return label + 1 if label < 33 else label - 1
    return label + 1 if label < BACK - 1 else label - 1


class Feed:
    """The frames of a scenario: each one's reads (as the recogniser gives them, before
    merging) and its bare-felt test."""

    def __init__(
        self, placed: Sequence[PlacedOnTable], scenario: Scenario, rng: np.random.Generator
    ) -> None:
        self.placed = list(placed)
        self.quads = [p.quad() for p in self.placed]
        self.scenario = scenario
        self.rng = rng
        # each meld's tiles in the order laid: a hand comes over a meld from one end
        groups: dict[tuple[int | None, int], list[int]] = {}
        for i, p in enumerate(self.placed):
            if p.role == "meld":
                groups.setdefault((p.seat, p.group), []).append(i)
        self.melds = list(groups.values())
        self.faces = [i for i, p in enumerate(self.placed) if p.label != BACK]
        self.hidden: set[int] = set()
        self.hand_left = 0
        self.glare: dict[int, tuple[int, int]] = {}  # tile -> (read as, frames left)
        self.covered = np.zeros(CAL.image_size[::-1], np.uint8)
        for q in self.quads:
            cv2.fillConvexPoly(self.covered, np.round(q).astype(np.int32), 1)

    def next(self) -> tuple[list[TileRead], BareTest]:
        s, rng = self.scenario, self.rng
        if self.hand_left:
            self.hand_left -= 1
            if not self.hand_left:
                self.hidden = set()
        elif s.hand and rng.random() < s.hand:
            tiles = self.melds[int(rng.integers(len(self.melds)))]
            k = int(rng.integers(1, len(tiles)))  # never the whole meld: a hand over part
            self.hidden = set(tiles[:k] if rng.random() < 0.5 else tiles[-k:])
            self.hand_left = int(rng.integers(2, 7))
        if s.glare and rng.random() < s.glare:
            i = self.faces[int(rng.integers(len(self.faces)))]
            lo, hi = s.glare_frames
            self.glare[i] = (neighbour(self.placed[i].label), int(rng.integers(lo, hi + 1)))
        reads = []
        for i, p in enumerate(self.placed):
            if i in self.hidden or (s.miss and rng.random() < s.miss):
                continue
            label, runner = p.label, neighbour(p.label) if p.label != BACK else None
            conf = float(np.clip(rng.normal(0.9, 0.04), MIN_CONFIDENCE + 0.01, 0.995))
            if i in self.glare:
                label, left = self.glare[i]
                runner = p.label
                conf = float(rng.uniform(MIN_CONFIDENCE + 0.05, 0.9))
                if left > 1:
                    self.glare[i] = (label, left - 1)
                else:
                    del self.glare[i]
            elif s.dip and rng.random() < s.dip:
                conf = float(rng.uniform(0.35, MIN_CONFIDENCE - 0.01))
            alts = ((runner, round((1 - conf) / 2, 3)),) if runner is not None else ()
            reads.append(TileRead(label, conf, self.quads[i], conf < MIN_CONFIDENCE, alts))
        return reads, self._bare_test([self.quads[i].mean(axis=0) for i in self.hidden])

    def _bare_test(self, hand: list[np.ndarray]) -> BareTest:
        covered, (h, w) = self.covered, self.covered.shape

        def is_bare(quad: np.ndarray) -> bool:
            centre = quad.mean(axis=0)
            if any(float(np.hypot(*(centre - c))) < HAND_REACH_MM for c in hand):
                return False
            # only the quad's box of the table, not the whole 900x900 mask per call
            x0, y0 = np.maximum(np.floor(quad.min(axis=0)).astype(int), 0)
            x1, y1 = np.minimum(np.ceil(quad.max(axis=0)).astype(int) + 1, (w, h))
            if x1 <= x0 or y1 <= y0:
                return False
            inside = np.zeros((y1 - y0, x1 - x0), np.uint8)
            cv2.fillConvexPoly(inside, np.round(quad - (x0, y0)).astype(np.int32), 1)
            under = covered[y0:y1, x0:x1][inside.astype(bool)]
            return bool(under.size and 1.0 - under.mean() >= FELT_SHARE)

        return is_bare


OUTCOMES = ("right", "wrong", "false_flag", "silent", "caught", "absent")
"""What :func:`score` counts, every one of them in every tally."""

Item = tuple[str, Any]  # ("flower" | "meld" | "open", its label or Meld)


def truth_items(layout: TableLayout) -> list[Counter[Item]]:
    """Each seat's flowers, melds and laid-open tiles as the layout has them."""
    out = []
    for seat in layout.seats:
        items: Counter[Item] = Counter()
        items.update(("flower", int(t)) for t in seat.flowers)
        items.update(("meld", m) for m in seat.melds)
        items.update(("open", int(t)) for t in seat.open_tiles)
        out.append(items)
    return out


def settled_items(view: SeatView) -> list[tuple[Item, bool]]:
    """What a seat's settled view holds, each with whether it is flagged. A meld whose tiles
    make none (``MeldView.meld`` is ``None``) is its tiles as read: right for no truth."""
    out: list[tuple[Item, bool]] = []
    out += [(("flower", int(r.label)), bool(r.needs_confirmation)) for r in view.flower_reads]
    for m in view.melds:
        what = m.meld if m.meld is not None else (m.kind.value, tuple(int(t) for t in m.tiles))
        out.append((("meld", what), bool(m.needs_confirmation)))
    out += [(("open", int(r.label)), bool(r.needs_confirmation)) for r in view.open_reads]
    return out


def score(views: Sequence[SeatView], layout: TableLayout) -> Counter[str]:
    """One frame's settled views against the layout: ``right``, ``wrong``, ``false_flag``
    (right, flagged), ``silent`` (wrong, unflagged), ``caught`` (wrong, flagged) and
    ``absent`` (in the layout, not settled at its seat).

    Items are matched by what they are at their seat, not where they lie. Where a seat
    settles more of a thing than it holds, the unflagged ones take the truth first: which
    copy is the extra cannot be told, and the flagged one may well be it."""
    out: Counter[str] = Counter(dict.fromkeys(OUTCOMES, 0))
    for view, truth in zip(views, truth_items(layout), strict=True):
        left = Counter(truth)
        for item, flagged in sorted(settled_items(view), key=lambda x: x[1]):
            if left[item] > 0:
                left[item] -= 1
                out["right"] += 1
                out["false_flag"] += flagged
            else:
                out["wrong"] += 1
                out["caught" if flagged else "silent"] += 1
        out["absent"] += sum(left.values())
    return out


def run_scenario(scenario: Scenario, frames: int, seed: int) -> dict[str, Any]:
    """Feed ``frames`` frames of a scenario to a fresh tracker; its figures."""
    placed = TableScene(seed=SCENE_SEED).place(LAYOUT)
    rng = np.random.default_rng([seed, zlib.crc32(scenario.name.encode())])
    feed = Feed(placed, scenario, rng)
    tracker = TableTracker(CAL.geometry)
    tally: Counter[str] = Counter()
    times: list[float] = []
    settling = settling_flagged = changes = flagged = 0
    for f in range(frames):
        reads, is_bare = feed.next()
        views = group_table(reads, CAL)  # which merges a tile found twice, as in the pipeline
        start = time.perf_counter()
        out = tracker.update(views, is_bare=is_bare)
        times.append(time.perf_counter() - start)
        n, nf = len(out), sum(c.needs_confirmation for c in out)
        if f < WARMUP:
            settling, settling_flagged = settling + n, settling_flagged + nf
            continue
        changes, flagged = changes + n, flagged + nf
        settled = tracker.views
        sc = score(settled, LAYOUT)
        tally += sc
        tally["frames"] += 1
        tally["frames_with_false_flag"] += sc["false_flag"] > 0
        tally["frames_with_silent"] += sc["silent"] > 0
        # a seat's note about a stray tile flags its view as much as any item's flag does,
        # and every tile of this table lies where it should
        tally["frames_with_stray_note"] += any(v.stray_notes for v in settled)
    items = tally["right"] + tally["wrong"]
    wrong = tally["wrong"]
    return {
        "scenario": asdict(scenario),
        "frames": frames,
        "frames_scored": tally["frames"],
        "item_frames": items,
        **{k: tally[k] for k in OUTCOMES},
        "frames_with_false_flag": tally["frames_with_false_flag"],
        "frames_with_silent": tally["frames_with_silent"],
        "frames_with_stray_note": tally["frames_with_stray_note"],
        "false_flag_pct": 100.0 * tally["false_flag"] / items if items else 0.0,
        "silent_pct": 100.0 * tally["silent"] / items if items else 0.0,
        "wrong_pct": 100.0 * wrong / items if items else 0.0,
        "caught_pct": 100.0 * tally["caught"] / wrong if wrong else None,
        "settling_changes": settling,
        "settling_changes_flagged": settling_flagged,
        "changes": changes,
        "changes_flagged": flagged,
        "update_ms_mean": 1000.0 * float(np.mean(times)),
        "update_ms_max": 1000.0 * float(np.max(times)),
    }


def table(results: Sequence[dict[str, Any]]) -> list[str]:
    """The figures as markdown rows."""
    head = (
        "| scenario | item-frames | false flag % | silent % | wrong % | caught % | absent "
        "| frames w/ false flag | frames w/ stray note | changes flagged/all "
        "| update ms mean/max |"
    )
    rows = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in results:
        caught = f"{r['caught_pct']:.1f}" if r["caught_pct"] is not None else "-"
        rows.append(
            f"| {r['scenario']['name']} | {r['item_frames']} | {r['false_flag_pct']:.2f} "
            f"| {r['silent_pct']:.3f} | {r['wrong_pct']:.2f} | {caught} | {r['absent']} "
            f"| {r['frames_with_false_flag']}/{r['frames_scored']} "
            f"| {r['frames_with_stray_note']}/{r['frames_scored']} "
            f"| {r['changes_flagged']}/{r['changes']} "
            f"| {r['update_ms_mean']:.2f}/{r['update_ms_max']:.1f} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=DEFAULT_FRAMES, help="frames per scenario")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seeds the reads' noise")
    names = [s.name for s in SCENARIOS]
    ap.add_argument(
        "--scenario",
        action="append",
        choices=names,
        metavar="NAME",
        # argparse %-formats help, and the names hold "%"
        help="run only this scenario (repeatable): " + ", ".join(names).replace("%", "%%"),
    )
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args(argv)
    if args.frames <= WARMUP:
        ap.error(f"--frames must be more than the {WARMUP} warm-up frames, not {args.frames}")
    if args.json is not None and (why := why_not_writable(args.json)):
        ap.error(f"cannot write {args.json}: {why}")
    chosen = [s for s in SCENARIOS if not args.scenario or s.name in args.scenario]
    things = sum(sum(t.values()) for t in truth_items(LAYOUT))
    print(
        f"tracker bench: {len(chosen)} scenarios x {args.frames} frames (the first {WARMUP} "
        f"not scored), seed {args.seed}, {things} things on the table"
    )
    start = time.perf_counter()
    results = []
    for s in chosen:
        results.append(run_scenario(s, args.frames, args.seed))
        print(table(results)[-1] if len(results) > 1 else "\n".join(table(results)), flush=True)
    print(f"run time {time.perf_counter() - start:.1f} s")
    if args.json is not None:
        figures = {
            "seed": args.seed,
            "frames": args.frames,
            "warmup": WARMUP,
            "scene_seed": SCENE_SEED,
            "min_confidence": MIN_CONFIDENCE,
            "scenarios": {r["scenario"]["name"]: r for r in results},
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
