"""Benchmark of the tile recogniser: accuracy on held-out real photos, speed, memory, and the
``mahjong-detector`` peer run on the same photos in the same process.

    python -m bench.vision_bench [--data ../shared/data] [--model DIR] [--frames 20]

Prints, on the held-out split of the real photos (sources never trained on):

- first, the measure the vision target is taken over: tile F1 (IoU >= 0.5, the right label)
  and flower F1 over the labelled area of the photos both blind audits call well labelled
  (``bench/audits``, :func:`bench.label_audit.measured_photos`), beside the same for every
  held-out photo and both at IoU >= 0.3 (which tells a loose box from a misread);
- tile-level precision, recall and F1 (a tile counts when a detection has IoU >= 0.5 with it
  and the right label), for all tiles, for the 34 playing kinds and for the flowers apart;
- how the tiles found were read: right, wrong but flagged for confirmation, wrong unflagged;
- the same with a tile found outside a photo's labelled area not counted as false (most
  photos label only the players' rows; see :func:`vision.training.dataset.labelled_area`), and the
  tile finder alone on that footing;
- on that footing too, the flowers as the score sees them: every flower tile is one 花
  whichever it is (docs/rules.md), so a flower read as another flower counts as right; and
  each flower (1f-8f) apart, both ways;
- how far the tiles found can trust their confidence: a reliability table (the reads binned
  by the confidence reported, each bin's mean confidence against the share read right) and
  its expected calibration error, with the classifier's raw probability and with the
  calibrated one the recogniser reports (:mod:`vision.confidence`);
- the labelled-area figures apart for photos whose labelled boxes cover their neighbours
  (:func:`vision.training.dataset.label_overlap`: rotated copies, shifted or enlarged boxes, where a
  detection that fits its tile can miss IoU 0.5) and for the rest;
- the same for the peer on the kinds it knows (its 34 riichi kinds: flower tiles are left
  out of the truth, and what either side finds on one is not counted), and ours on that same
  subset (every face we find counts; backs, which neither the labels nor the peer name, do
  not);
- latency per 1280x960 table frame and per tile, and per 640x640 photo, ours and the peer's,
  each model on 2 onnxruntime threads that do not busy-wait, with their ratio (frames: each
  model in a stretch over all frames, alternating for ``--rounds`` rounds, the ratio of each
  round given too);
- peak resident memory of a fresh process that loads the recogniser and reads a frame;
- the table-frame figures (meld and flower accuracy per seat, through the whole table
  pipeline) from :func:`vision.training.table_eval.run` (the table pipeline's part of this
  benchmark), printed under "table frames";
- sets never seen, before and after enrolment: a tile set no model is trained on, at table
  scale, read, then enrolled from two photos and read again (``bench.unseen_set_bench``);
  and each held-out real source read with the trained head and with one refitted on
  another copy of it (``bench.enrol_bench``).

The peer (a YOLOv8 ONNX model for riichi tiles, ``pip install .[bench]``) is a benchmark peer
only and never shipped.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import itertools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import cv2
import numpy as np

from bench.label_audit import measured_photos
from controller.errors import MahjongTableError
from controller.exit_codes import ExitCode
from vision.confidence import RELIABILITY_EDGES, expected_calibration_error, reliability
from vision.detection import box_iou
from vision.files import why_not_writable
from vision.labels import BACK, FLOWER_LABELS, label_name
from vision.recognizer import DEFAULT_MODEL_DIR, HEAD_FILE, TileRecognizer
from vision.training.dataset import (
    CROWDED_LABELS,
    MISS_CAUSES,
    LabelledPhoto,
    Prediction,
    label_overlap,
    load_photos,
    match_detections,
    miss_causes,
    outside_labelled_area,
    shared_data_dir,
    tile_f1,
)

REPO = Path(__file__).resolve().parent.parent
R = TypeVar("R")

PEER_NAMES = {"chun": "C", "haku": "P", "hatsu": "F", "nan": "S", "pe": "N", "sha": "W", "tou": "E"}


match = match_detections  # the greedy matching the training's threshold choice uses too


class Tally:
    """True positives, false positives and misses for a subset of labels."""

    def __init__(self, name: str, labels: set[int]) -> None:
        self.name, self.labels = name, labels
        self.tp = self.fp = self.fn = 0

    def add(self, preds, truth_labels: np.ndarray, pairs, silent=None) -> None:
        """Count one photo; an unmatched prediction marked in ``silent`` is not counted."""
        matched_truth = {j for _, j in pairs if j is not None}
        for i, j in pairs:
            if preds[i][1] in self.labels:
                if j is None:
                    if silent is None or not silent[i]:
                        self.fp += 1
                else:
                    self.tp += 1
        for j, tl in enumerate(truth_labels):
            if int(tl) in self.labels and j not in matched_truth:
                self.fn += 1

    def figures(self) -> dict[str, float]:
        p = self.tp / max(1, self.tp + self.fp)
        r = self.tp / max(1, self.tp + self.fn)
        f1 = 2 * p * r / max(1e-9, p + r)
        return {"precision": p, "recall": r, "f1": f1, "tiles": self.tp + self.fn}

    def line(self) -> str:
        f = self.figures()
        return (
            f"  {self.name:<38} P {f['precision']:.3f}  R {f['recall']:.3f}  "
            f"F1 {f['f1']:.3f}  ({int(f['tiles'])} tiles)"
        )


TARGETS = {"tiles": 0.95, "flowers": 0.90}
"""The vision targets: F1 over the photos both audits call well labelled, IoU >= 0.5."""
LOOSE_IOU = 0.3
"""The looser match reported beside the measure: a box this close with the right label is a
tile found and read right whose box disagrees with the label's."""


def measure(readings: Sequence[tuple[list[Prediction], LabelledPhoto]], fitting: frozenset[str]):
    """The measure's figures: ``{photos: {iou: {"tiles": tile_f1, "flowers": tile_f1}}}`` over
    the labelled area, for the photos named in ``fitting`` (``"fitting"``) and for all
    (``"all"``), at IoU 0.5 and :data:`LOOSE_IOU`; and the count of fitting photos."""
    groups = {
        "fitting": [(p, photo) for p, photo in readings if photo.path.name in fitting],
        "all": list(readings),
    }
    out: dict[str, object] = {"fitting_photos": len(groups["fitting"])}
    for name, group in groups.items():
        out[name] = {
            str(iou): {
                "tiles": tile_f1(group, labelled_area_only=True, iou=iou),
                "flowers": tile_f1(group, set(FLOWER_LABELS), labelled_area_only=True, iou=iou),
            }
            for iou in (0.5, LOOSE_IOU)
        }
    return out


FLAG_LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
"""The confidences under which :class:`FlagSweep` counts a tile flagged, beside the model's."""


class FlagSweep:
    """How the tiles found would be flagged at other ``min_confidence`` settings: the share
    flagged (players asked to confirm), the share right but flagged anyway, the share wrong
    and not flagged, and of those the share that changes a score (every flower tile is one 花
    whichever flower it is, docs/rules.md, so a flower read as another flower does not)."""

    def __init__(self) -> None:
        self.reads: list[tuple[float, bool, bool]] = []

    def add(self, confidence: float, label: int, truth: int) -> None:
        right = label == truth
        scores_alike = as_any_flower(label) == as_any_flower(truth)
        self.reads.append((float(confidence), right, scores_alike))

    def at(self, level: float) -> dict[str, float]:
        flagged = right_flagged = silent = silent_scoring = 0
        for confidence, right, scores_alike in self.reads:
            if confidence < level:
                flagged += 1
                right_flagged += right
            elif not right:
                silent += 1
                silent_scoring += not scores_alike
        n = max(1, len(self.reads))
        return {
            "flagged": flagged / n,
            "right_but_flagged": right_flagged / n,
            "silent": silent / n,
            "silent_changing_score": silent_scoring / n,
        }

    def reading(self, level: float) -> dict[str, float]:
        """The tiles found at ``level``: the share read right, wrong and flagged for the
        players to confirm, and wrong unflagged (the silent misreads the product must avoid)."""
        right = sum(r for _, r, _ in self.reads)
        wrong_flagged = sum(c < level and not r for c, r, _ in self.reads)
        n = max(1, len(self.reads))
        return {
            "right": right / n,
            "flagged": wrong_flagged / n,
            "silent": (len(self.reads) - right - wrong_flagged) / n,
        }

    def lines(self, levels: Sequence[float], current: float) -> list[str]:
        out = [
            "  min_confidence  flagged  right but flagged  wrong unflagged  of which change a score"
        ]
        for level in sorted({*levels, current}):
            f = self.at(level)
            mark = "  <- the model's" if level == current else ""
            out.append(
                f"  {level:<14.2f}  {f['flagged']:.3f}    {f['right_but_flagged']:.3f}"
                f"{f['silent']:>31.4f}{f['silent_changing_score']:>18.4f}{mark}"
            )
        return out


def as_any_flower(label: int) -> int:
    """The label with every flower made the first: what the score counts of a flower tile."""
    return FLOWER_LABELS[0] if label in FLOWER_LABELS else label


def peer_predict(img_bgr: np.ndarray):
    """The peer's detections as ``(box, label, confidence)``, boxes in picture pixels."""
    from mahjong_detector.predict import CLASS_NAMES, predict
    from mahjong_detector.preprocess import preprocess_image
    from PIL import Image

    from vision.labels import label_from_name

    # OpenCV's conversion: a reversed-stride view made PIL copy slowly, 3-4 ms of the
    # peer's 31 ms frame that were the bench's, not the peer's
    pil = Image.fromarray(cv2.cvtColor(img_bgr, cv2.COLOR_BGR2RGB))
    pre, padding = preprocess_image(pil)
    out = []
    for d in predict(pre, padding):
        name = CLASS_NAMES[d.class_id]
        label = label_from_name(PEER_NAMES.get(name, name))
        out.append(((d.x1, d.y1, d.x2 - d.x1, d.y2 - d.y1), label, float(d.confidence)))
    return out


def configure_peer(threads: int) -> None:
    """Give the peer the onnxruntime session ours runs with: ``threads`` threads, no
    busy-waiting. Left alone it makes its own with onnxruntime's defaults (a thread per core,
    spinning), which is not the comparison the figures claim."""
    import onnxruntime as ort

    # the package's own name `predict` is its function: the module is fetched by path
    peer_module = importlib.import_module("mahjong_detector.predict")

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    peer_module.threadlocal.session = ort.InferenceSession(
        str(peer_module.model_path), opts, providers=["CPUExecutionProvider"]
    )


def on_flower(box, flower_boxes: np.ndarray) -> bool:
    """Whether a detection lies on a labelled flower tile (IoU at least 0.5)."""
    return bool(len(flower_boxes)) and max(box_iou(box, fb) for fb in flower_boxes) >= 0.5


def for_the_peer(preds, boxes: np.ndarray, labels: np.ndarray):
    """One rule for both sides of the comparison with the peer, whose 34 kinds have no
    flowers: the flower tiles leave the truth, and so does whatever is found on one (the peer
    must call it a playing tile, ours may read it right); every other face found counts,
    backs (which neither the labels nor the peer name) do not. Returns the detections kept
    and the truth's boxes and labels."""
    keep = labels < 34
    flower_boxes = boxes[~keep]
    kept = [p for p in preds if p[1] != BACK and not on_flower(p[0], flower_boxes)]
    return kept, boxes[keep], labels[keep]


def ours_read(rec: TileRecognizer, img: np.ndarray) -> tuple[list, list[float]]:
    """Our detections as ``(box, label, raw confidence)``, and the confidence each reports.

    The raw probability is what ``min_confidence`` compares (and what the figures here were
    always scored with); the reported one is calibrated. A tile the finder alone calls face
    down has the finder's share as both."""
    found = rec.detect_with_probabilities(img)
    preds = [(d.box, d.label, d.confidence if p is None else float(p[d.label])) for d, p in found]
    return preds, [d.confidence for d, _ in found]


class ConfidenceTable:
    """The tiles found on labelled tiles, each with its raw and its reported (calibrated)
    confidence and whether it was read right: how far either can be trusted."""

    def __init__(self) -> None:
        self.raw: list[float] = []
        self.shown: list[float] = []
        self.right: list[bool] = []
        self.finder_backs = 0

    def add(self, raw: float, shown: float, label: int, truth: int) -> None:
        self.raw.append(raw)
        self.shown.append(shown)
        self.right.append(label == truth)
        self.finder_backs += label == BACK and raw == shown

    def figures(self) -> dict[str, object]:
        out: dict[str, object] = {"reads": len(self.right), "finder_backs": self.finder_backs}
        for name, confidences in (("raw", self.raw), ("calibrated", self.shown)):
            out[name] = {
                "ece": expected_calibration_error(confidences, self.right),
                "bins": [
                    {
                        "low": b.low,
                        "high": b.high,
                        "reads": b.count,
                        "confidence": b.confidence,
                        "accuracy": b.accuracy,
                    }
                    for b in reliability(confidences, self.right)
                ],
            }
        return out

    def lines(self) -> list[str]:
        """The reliability table, raw and calibrated side by side, bin by bin (a bin neither
        holds is left out), and the expected calibration error of each."""
        raw = {b.low: b for b in reliability(self.raw, self.right)}
        shown = {b.low: b for b in reliability(self.shown, self.right)}
        heads = f"{'raw: reads':>18}  mean   right  {'calibrated: reads':>18}  mean   right"
        out = [f"    confidence   {heads}"]
        for low, high in itertools.pairwise(RELIABILITY_EDGES):
            if low not in raw and low not in shown:
                continue
            cells = [
                f"{b.count:>18}  {b.confidence:.3f}  {b.accuracy:.3f}" if b else f"{0:>18}{'':14}"
                for b in (raw.get(low), shown.get(low))
            ]
            out.append(f"    {low:.2f}-{high:.2f}   {cells[0]}  {cells[1]}")
        raw_ece = expected_calibration_error(self.raw, self.right)
        shown_ece = expected_calibration_error(self.shown, self.right)
        out.append(f"    expected calibration error: raw {raw_ece:.4f}, calibrated {shown_ece:.4f}")
        return out


class FlowerCounts:
    """Each flower (1f-8f) over the labelled area, read as another flower counted right, as
    the score counts it: a labelled flower found and read as any flower is found; a flower
    read is right where it lies on any labelled flower. (The plain figures, the flower named
    right, are :class:`PhotoCounts`' per-label tallies.)"""

    def __init__(self) -> None:
        self.hits = dict.fromkeys(FLOWER_LABELS, 0)  # reads of k on a flower
        self.false = dict.fromkeys(FLOWER_LABELS, 0)  # reads of k on no flower
        self.found = dict.fromkeys(FLOWER_LABELS, 0)  # labelled k read as a flower
        self.missed = dict.fromkeys(FLOWER_LABELS, 0)
        self.as_another = dict.fromkeys(FLOWER_LABELS, 0)  # labelled k read as another flower

    def add(self, preds, truth: np.ndarray, flower_pairs, silent) -> None:
        """One photo: ``flower_pairs`` matches ``preds`` to the labelled tiles with every
        flower made one (:func:`as_any_flower`); ``silent`` as :meth:`Tally.add`'s."""
        matched = {j: i for i, j in flower_pairs if j is not None}
        for i, j in flower_pairs:
            label = preds[i][1]
            if label in self.hits:
                if j is not None:
                    self.hits[label] += 1
                elif not silent[i]:
                    self.false[label] += 1
        for j, t in enumerate(truth):
            k = int(t)
            if k not in self.found:
                continue
            if j in matched:
                self.found[k] += 1
                self.as_another[k] += preds[matched[j]][1] != k
            else:
                self.missed[k] += 1

    def figures(self, k: int) -> dict[str, float]:
        p = self.hits[k] / max(1, self.hits[k] + self.false[k])
        r = self.found[k] / max(1, self.found[k] + self.missed[k])
        return {
            "precision": p,
            "recall": r,
            "f1": 2 * p * r / max(1e-9, p + r),
            "read_as_another_flower": self.as_another[k],
        }


def timed(fn: Callable[..., R], *args, repeat: int) -> tuple[float, R]:
    """Median seconds of ``repeat`` calls (after one warm-up) and the last result."""
    result = fn(*args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def table_frames(n: int, seed: int = 0) -> list[tuple[np.ndarray, int]]:
    """``n`` rendered 1280x960 table frames (simulator camera) with their tile counts."""
    from vision.training.synth import procedural_variants, table_frame

    rng = np.random.default_rng(seed)
    faces = procedural_variants()
    out = []
    for _ in range(n):
        frame = table_frame(rng, faces)
        out.append((frame.image, len(frame.truths)))
    return out


# VmHWM (the peak resident set of this process's memory) starts afresh at exec, unlike
# ru_maxrss, which a child inherits from the process that forked it
MEMORY_PROBE = """
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
from vision.camera import read_image
from vision.recognizer import TileRecognizer
frame = read_image({frame!r})
before = peak()
rec = TileRecognizer({model!r})
for _ in range(3):
    rec.detect(frame)
print(peak(), before)
"""


def peak_memory_mb(model: str | None, frame: np.ndarray) -> tuple[float, float]:
    """Peak resident MB of a fresh process that reads a 1280x960 frame from a file, loads
    the recogniser and reads the frame three times, and its peak before loading the model
    (Python, numpy, OpenCV and the frame)."""
    import tempfile

    import cv2

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "frame.png")
        cv2.imwrite(path, frame)
        model = str(Path(model).resolve()) if model else None  # the probe runs in REPO
        code = MEMORY_PROBE.format(model=model, frame=path)
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
        )
    peak, before = (float(v) for v in out.stdout.split())
    return peak, before


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=shared_data_dir())
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--frames", type=int, default=12, help="table frames to time")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per picture")
    ap.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds of frame timing (ours, peer)"
    )
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--limit", type=int, help="only this many held-out photos (a quick look)")
    ap.add_argument("--table-frames", type=int, default=20, help="tables for the meld figures")
    ap.add_argument(
        "--unseen-tables",
        type=int,
        default=12,
        help="tables of the unseen set to read before and after enrolment (0: none)",
    )
    ap.add_argument(
        "--enrol-sources",
        type=int,
        default=None,
        help="held-out sources to enrol and read again (default: all; 0: none)",
    )
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument(
        "--no-refine", action="store_true", help="keep the finder's boxes (the box output's worth)"
    )
    ap.add_argument(
        "--classifier-weights",
        choices=("auto", "stored", "signed"),
        default="auto",
        help="an int8 classifier's weights as stored (exact on every CPU), signed (fast, exact "
        "only with VNNI), or as the recogniser chooses for this CPU (default)",
    )
    args = ap.parse_args(argv)
    for name in ("frames", "repeat", "rounds", "limit"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            ap.error(f"--{name} must be 1 or more")
    for name in ("table_frames", "unseen_tables", "enrol_sources"):
        if (getattr(args, name) or 0) < 0:
            ap.error(f"--{name.replace('_', '-')} must be 0 (none) or more")
    if args.json is not None and (why := why_not_writable(args.json)):
        ap.error(f"cannot write {args.json}: {why}")
    try:
        return _run(args)
    except MahjongTableError as exc:  # no data, no model
        print(f"vision_bench: {exc}", file=sys.stderr)
        return ExitCode.INPUT


def _run(args: argparse.Namespace) -> int:
    signed = {"auto": None, "stored": False, "signed": True}[args.classifier_weights]
    rec = TileRecognizer(args.model, threads=2, refine=not args.no_refine, signed_weights=signed)
    photos = load_photos(args.data / "real-photos", ["held_out"])[: args.limit]
    if not photos:
        print(
            f"vision_bench: no held-out photos under {args.data / 'real-photos'}", file=sys.stderr
        )
        return ExitCode.INPUT
    sources = len({p.source for p in photos})
    print(f"held-out real photos: {len(photos)} ({sources} source photos never trained on)")
    figures: dict[str, object] = {"photos": len(photos), "sources": sources}

    use_peer = not args.no_peer and importlib.util.find_spec("mahjong_detector") is not None
    if use_peer:
        configure_peer(threads=2)
    counts = PhotoCounts(use_peer)
    for photo in photos:
        counts.add(rec, photo)
    counts.report(rec, figures)
    frames = _frame_latency(args, rec, counts, figures)
    _peak_memory(args, frames, figures)
    _table_figures(args, rec, figures)
    _unseen_sets(args, figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=float) + "\n")
    return ExitCode.OK


class PhotoCounts:
    """What :func:`_run` counts over the held-out photos, photo by photo, and its report."""

    def __init__(self, use_peer: bool) -> None:
        self.use_peer = use_peer
        flowers = set(FLOWER_LABELS)
        playing = set(range(34))
        everything = set(range(BACK + 1))
        self.ours_all = Tally("ours, all tiles", everything)
        self.ours_play = Tally("ours, the 34 playing kinds", playing)
        self.ours_flow = Tally("ours, flowers", flowers)
        self.ours_on_peer = Tally("ours, peer's kinds (flower tiles left out)", set(range(BACK)))
        self.peer = Tally("peer, its 34 kinds (flower tiles left out)", playing)
        self.per_label = {k: Tally(label_name(k), {k}) for k in range(42)}
        # the same, not counting what is found outside a photo's labelled area (see
        # vision.training.dataset.labelled_area): most photos label only the players' rows
        self.area_all = Tally("ours, all tiles", everything)
        self.area_flow = Tally("ours, flowers", flowers)
        self.area_finder = Tally("tile finding alone (any label)", {0})
        # every flower tile is one 花 whichever flower it is: how the score sees them
        self.area_any_flower = Tally("flowers, read as any flower", {FLOWER_LABELS[0]})
        # the same apart for photos whose labelled boxes cover their neighbours (rotated
        # copies, shifted or enlarged boxes: see vision.training.dataset.label_overlap) and for
        # the rest
        self.by_fit = {
            crowded: (
                Tally("ours, all tiles", everything),
                Tally("tile finding alone (any label)", {0}),
                [0],
            )
            for crowded in (False, True)
        }
        # why each labelled tile was missed, and how our boxes compare in size with the
        # labels' where they match, apart by label fit: the labels of the two kinds of photo
        # follow different conventions, which caps what one recogniser can score on both
        self.causes = {crowded: dict.fromkeys(MISS_CAUSES, 0) for crowded in (False, True)}
        self.size_ratio: dict[bool, list[float]] = {False: [], True: []}
        self.finder_hits = self.finder_truth = self.finder_found = 0
        # of the tiles found (any label), how each was read, and how it would be flagged
        self.sweep = FlagSweep()
        self.trust = ConfidenceTable()
        self.flowers = FlowerCounts()
        self.read_right = self.read_all = self.read_flower_right = self.read_flower_all = 0
        self.our_times: list[float] = []
        self.peer_times: list[float] = []
        self.readings: list[tuple[list[Prediction], LabelledPhoto]] = []

    def add(self, rec: TileRecognizer, photo) -> None:
        """Run ours (and the peer) on one photo and count what each found and read."""
        img = photo.image()
        t, (preds, shown) = timed(ours_read, rec, img, repeat=1)
        self.our_times.append(t)
        self.readings.append((preds, photo))
        pairs = match(preds, photo.boxes, photo.labels)
        for tally in (self.ours_all, self.ours_play, self.ours_flow):
            tally.add(preds, photo.labels, pairs)
        # the finder alone: any label
        anyl = [(b, 0, c) for b, _, c in preds]
        pairs_any = match(anyl, photo.boxes, np.zeros(len(photo.labels), np.int64))
        self.finder_hits += sum(j is not None for _, j in pairs_any)
        for i, j in pairs_any:
            if j is not None:
                _, label, confidence = preds[i]
                self.sweep.add(confidence, label, int(photo.labels[j]))
                self.trust.add(confidence, shown[i], label, int(photo.labels[j]))
        silent = outside_labelled_area(preds, photo)
        self._add_labelled_area(photo, preds, pairs, anyl, pairs_any, silent)
        self._add_by_label_fit(photo, preds, pairs, anyl, pairs_any, silent)
        self.finder_truth += len(photo.labels)
        self.finder_found += len(preds)
        self._add_reading_alone(rec, img, photo)
        self._add_peer_subset(img, photo, preds)

    def _add_labelled_area(self, photo, preds, pairs, anyl, pairs_any, silent) -> None:
        self.area_all.add(preds, photo.labels, pairs, silent)
        self.area_flow.add(preds, photo.labels, pairs, silent)
        for tally in self.per_label.values():
            tally.add(preds, photo.labels, pairs, silent)
        self.area_finder.add(anyl, np.zeros(len(photo.labels), np.int64), pairs_any, silent)
        fl_preds = [(b, as_any_flower(label), c) for b, label, c in preds]
        fl_truth = np.array([as_any_flower(int(t)) for t in photo.labels], np.int64)
        fl_pairs = match(fl_preds, photo.boxes, fl_truth)
        self.area_any_flower.add(fl_preds, fl_truth, fl_pairs, silent)
        self.flowers.add(preds, photo.labels, fl_pairs, silent)

    def _add_by_label_fit(self, photo, preds, pairs, anyl, pairs_any, silent) -> None:
        crowded = bool(label_overlap(photo.boxes) >= CROWDED_LABELS)
        fit_all, fit_finder, fit_photos = self.by_fit[crowded]
        fit_all.add(preds, photo.labels, pairs, silent)
        fit_finder.add(anyl, np.zeros(len(photo.labels), np.int64), pairs_any, silent)
        fit_photos[0] += 1
        for cause, n in miss_causes(preds, photo.boxes, photo.labels, pairs).items():
            self.causes[crowded][cause] += n
        for i, j in pairs:
            if j is not None:
                (_, _, w, h), tb = preds[i][0], photo.boxes[j]
                self.size_ratio[crowded].append(float(np.sqrt(w * h / max(1e-9, tb[2] * tb[3]))))

    def _add_reading_alone(self, rec: TileRecognizer, img: np.ndarray, photo) -> None:
        """The classifier alone, on the labelled boxes."""
        probs = rec.classify(img, [tuple(float(v) for v in b) for b in photo.boxes])
        if len(probs):
            right = probs.argmax(axis=1) == photo.labels
            self.read_right += int(right.sum())
            self.read_all += len(right)
            fl = photo.labels >= 34
            self.read_flower_right += int(right[fl].sum())
            self.read_flower_all += int(fl.sum())

    def _add_peer_subset(self, img: np.ndarray, photo, preds) -> None:
        """The peer's subset, one rule for both sides (:func:`for_the_peer`)."""
        ours_sub, tb, tl = for_the_peer(preds, photo.boxes, photo.labels)
        self.ours_on_peer.add(ours_sub, tl, match(ours_sub, tb, tl))
        if self.use_peer:
            t, ppreds = timed(peer_predict, img, repeat=1)
            self.peer_times.append(t)
            ppreds, _, _ = for_the_peer(ppreds, photo.boxes, photo.labels)
            self.peer.add(ppreds, tl, match(ppreds, tb, tl))

    def report(self, rec: TileRecognizer, figures: dict[str, object]) -> None:
        """Print the accuracy figures and put them into ``figures``."""
        self._report_measure(figures)
        print("accuracy on held-out real photos (IoU >= 0.5 and the right label):")
        peer = (self.peer,) if self.use_peer else ()
        for tally in (self.ours_all, self.ours_play, self.ours_flow, self.ours_on_peer, *peer):
            print(tally.line())
        fp = self.finder_hits / max(1, self.finder_found)
        fr = self.finder_hits / max(1, self.finder_truth)
        print(f"  tile finding alone (any label):        P {fp:.3f}  R {fr:.3f}  "
              f"F1 {2 * fp * fr / max(1e-9, fp + fr):.3f}")  # fmt: skip
        self._report_reading(rec, figures)
        self._report_labelled_area(figures)
        self._report_flowers(figures)
        self._report_by_label_fit(figures)
        # a label none of the photos holds or was read as has no F1 to be weakest by
        present = [t for t in self.per_label.values() if t.tp + t.fp + t.fn]
        worst = sorted(present, key=lambda t: t.figures()["f1"])[:6]
        weakest = ", ".join(f"{t.name} {t.figures()['f1']:.2f}" for t in worst)
        print(f"  weakest labels (labelled area): {weakest}")
        compared = (self.ours_on_peer, self.peer) if self.use_peer else ()
        figures["accuracy"] = {
            t.name: t.figures() for t in (self.ours_all, self.ours_play, self.ours_flow, *compared)
        }
        figures["finder"] = {"precision": fp, "recall": fr}

    def _report_measure(self, figures: dict[str, object]) -> None:
        fitting = measured_photos()
        got = measure(self.readings, fitting)
        figures["measure"] = {"targets": TARGETS, **got}
        whole = "" if got["fitting_photos"] == len(fitting) else f"; {len(fitting)} of all held out"
        print(
            f"the measure: tile F1 over the labelled area of the {got['fitting_photos']} of "
            f"these {len(self.readings)} photos that both blind audits call well labelled "
            f"(bench/audits{whole}), beside all of them:"
        )
        print(f"    {'':<32}{'IoU >= 0.5':>12}{'target':>8}{f'IoU >= {LOOSE_IOU}':>13}")
        for photos in ("fitting", "all"):
            for kind in ("tiles", "flowers"):
                strict, loose = (got[photos][str(iou)][kind] for iou in (0.5, LOOSE_IOU))
                target = f"{TARGETS[kind]:.2f}" if photos == "fitting" else ""
                name = f"{photos} photos, {kind} ({int(strict['tiles'])})"
                print(f"    {name:<32}{strict['f1']:>12.3f}{target:>8}{loose['f1']:>13.3f}")

    def _report_reading(self, rec: TileRecognizer, figures: dict[str, object]) -> None:
        read_alone = self.read_right / max(1, self.read_all)
        read_flowers = self.read_flower_right / max(1, self.read_flower_all)
        print(
            f"  reading alone (classifier on the labelled boxes): {read_alone:.3f}"
            f" right, flowers {read_flowers:.3f}"
        )
        found = self.sweep.reading(rec.min_confidence)
        print(
            f"  reading the tiles found: {found['right']:.3f} right, "
            f"{found['flagged']:.3f} wrong and flagged for confirmation, "
            f"{found['silent']:.3f} wrong unflagged"
        )
        figures["reading_found"] = found
        print("  the same tiles flagged at other settings (what a table could choose):")
        print("\n".join(self.sweep.lines(FLAG_LEVELS, rec.min_confidence)))
        figures["flagging_by_min_confidence"] = {
            f"{level:g}": self.sweep.at(level)
            for level in sorted({*FLAG_LEVELS, rec.min_confidence})
        }
        figures["reading_alone"] = {"accuracy": read_alone, "flower_accuracy": read_flowers}
        backs = self.trust.finder_backs
        print(
            f"  how far the confidence of the tiles found can be trusted ({len(self.trust.right)} "
            f"reads; temperature {rec.temperature:g}"
            + (f"; {backs} the finder alone called face down, at its own share" if backs else "")
            + "):"
        )
        print("\n".join(self.trust.lines()))
        figures["confidence_calibration"] = {
            "temperature": rec.temperature,
            **self.trust.figures(),
        }

    def _report_labelled_area(self, figures: dict[str, object]) -> None:
        print(
            "the same, a tile found outside a photo's labelled area not counted as false "
            "(the labels there are silent):"
        )
        tallies = (self.area_all, self.area_flow, self.area_any_flower, self.area_finder)
        for tally in tallies:
            print(tally.line())
        figures["accuracy_labelled_area"] = {t.name: t.figures() for t in tallies}

    def _report_flowers(self, figures: dict[str, object]) -> None:
        print(
            "  each flower (labelled area), and with a flower read as another counted right "
            "(as the score counts it):"
        )
        print("    flower  tiles  P      R      F1       any flower: P      R      F1    "
              "read as another")  # fmt: skip
        per_flower: dict[str, object] = {}
        for k in FLOWER_LABELS:
            plain = self.per_label[k].figures()
            lenient = self.flowers.figures(k)
            print(
                f"    {label_name(k):<6}  {int(plain['tiles']):>5}  {plain['precision']:.3f}  "
                f"{plain['recall']:.3f}  {plain['f1']:.3f}{' ' * 15}{lenient['precision']:.3f}  "
                f"{lenient['recall']:.3f}  {lenient['f1']:.3f}  "
                f"{lenient['read_as_another_flower']:>8}"
            )
            per_flower[label_name(k)] = {**plain, "any_flower": lenient}
        figures["flowers_by_kind"] = per_flower

    def _report_by_label_fit(self, figures: dict[str, object]) -> None:
        by_fit: dict[str, object] = {}
        figures["accuracy_by_label_fit"] = by_fit
        for crowded, (fit_all, fit_finder, fit_photos) in self.by_fit.items():
            name = "labels covering their neighbours" if crowded else "labels apart"
            cover = f">= {CROWDED_LABELS}" if crowded else f"< {CROWDED_LABELS}"
            print(f"  photos with {name} (median cover {cover}): {fit_photos[0]} photos")
            for tally in (fit_all, fit_finder):
                print("  " + tally.line())
            ratios = self.size_ratio[crowded]
            median = statistics.median(ratios) if ratios else float("nan")
            missed = ", ".join(f"{cause} {n}" for cause, n in self.causes[crowded].items())
            print(f"    labelled tiles missed: {missed}")
            print(f"    our box / the label's, matched tiles (side, median): {median:.2f}")
            by_fit[name] = {
                "photos": fit_photos[0],
                **{t.name: t.figures() for t in (fit_all, fit_finder)},
                "missed": self.causes[crowded],
                "box_size_ratio": median,
            }


def _frame_latency(
    args: argparse.Namespace,
    rec: TileRecognizer,
    counts: PhotoCounts,
    figures: dict[str, object],
) -> list[tuple[np.ndarray, int]]:
    """Print the latency per photo (timed as the photos were counted) and per rendered table
    frame, ours and the peer's, into ``figures`` too; returns the frames."""
    use_peer = counts.use_peer
    print(f"latency (median, 2 CPU threads each; classifier weights {rec.classifier_weights}):")
    figures["classifier_weights"] = rec.classifier_weights
    our_photo = statistics.median(counts.our_times)
    print(f"  640x640 photo: ours {our_photo * 1000:.0f} ms", end="")
    if use_peer:
        peer_photo = statistics.median(counts.peer_times)
        print(f", peer {peer_photo * 1000:.0f} ms (ours / peer = {our_photo / peer_photo:.2f})")
    else:
        print()
    frames = table_frames(args.frames)
    tiles = [max(1, len(rec.detect(img))) for img, _n in frames]
    ft, pt, ratios = _time_frames(rec, frames, args.rounds, args.repeat, use_peer)
    frame_ms = statistics.median(ft) * 1000
    per_tile = (
        statistics.median([t / n for t, n in zip(ft, tiles * args.rounds, strict=True)]) * 1000
    )
    print(
        f"  1280x960 table frame: ours {frame_ms:.0f} ms "
        f"({statistics.median(tiles):.0f} tiles, {per_tile:.1f} ms per tile)",
        end="",
    )
    latency: dict[str, object] = {
        "photo": our_photo * 1000,
        "frame": frame_ms,
        "per_tile": per_tile,
    }
    figures["latency_ms"] = latency
    if use_peer:
        peer_frame = statistics.median(pt) * 1000
        print(
            f", peer {peer_frame:.0f} ms (ours / peer = {frame_ms / peer_frame:.2f}; "
            f"by round {', '.join(f'{r:.2f}' for r in ratios)})"
        )
        latency.update(
            {"peer_photo": peer_photo * 1000, "peer_frame": peer_frame, "frame_ratios": ratios}
        )
    else:
        print()
    return frames


def _time_frames(
    rec: TileRecognizer,
    frames: list[tuple[np.ndarray, int]],
    rounds: int,
    repeat: int,
    use_peer: bool,
) -> tuple[list[float], list[float], list[float]]:
    """Seconds per frame, ours and the peer's, over all rounds, and each round's ratio of
    their medians.

    Each model reads all the frames in a stretch, in its steady state (switching models call
    by call slows both: their weights and thread pools evict each other), and the stretches
    alternate, round after round, so that drift in the machine's speed shows up as spread
    between rounds rather than as a bias against one of them."""
    ft: list[float] = []
    pt: list[float] = []
    ratios: list[float] = []
    for _ in range(rounds):
        ours_round = [timed(rec.detect, img, repeat=repeat)[0] for img, _n in frames]
        ft.extend(ours_round)
        if use_peer:
            peer_round = [timed(peer_predict, img, repeat=repeat)[0] for img, _n in frames]
            pt.extend(peer_round)
            ratios.append(statistics.median(ours_round) / statistics.median(peer_round))
    return ft, pt, ratios


def _peak_memory(
    args: argparse.Namespace, frames: list[tuple[np.ndarray, int]], figures: dict[str, object]
) -> None:
    peak, before = peak_memory_mb(str(args.model) if args.model else None, frames[0][0])
    print(f"peak resident memory reading a frame: {peak:.0f} MB ({before:.0f} MB before loading)")
    figures["memory_mb"] = {"peak": peak, "before_model": before}


def _table_figures(
    args: argparse.Namespace, rec: TileRecognizer, figures: dict[str, object]
) -> None:
    """The table pipeline's part of the benchmark (:func:`vision.training.table_eval.run`), where
    that module is present and tables are asked for."""
    if importlib.util.find_spec("vision.training.table_eval") is None or not args.table_frames:
        return
    from vision.training.table_eval import run as table_run

    print(f"table frames ({args.table_frames} rendered tables through the table pipeline):")
    table = table_run(rec, frames=args.table_frames)
    for k, v in table.items():
        print(f"  {k}: {v}")
    figures["table_frames"] = table


def _unseen_sets(args: argparse.Namespace, figures: dict[str, object]) -> None:
    """Sets never seen, before and after enrolment: the riichi art at table scale
    (``bench.unseen_set_bench``, where resvg can draw it) and the held-out real sources
    (``bench.enrol_bench``)."""
    from bench import enrol_bench, unseen_set_bench

    if args.unseen_tables:
        try:
            figures["unseen_set"] = unseen_set_bench.run(args.data, args.model, args.unseen_tables)
        except MahjongTableError as exc:  # the art or resvg missing: the rest stands
            print(f"unseen tile set: not read: {exc}")
            figures["unseen_set"] = {"not_read": str(exc)}
    model = args.model or DEFAULT_MODEL_DIR
    if args.enrol_sources != 0 and (model / HEAD_FILE).exists():
        print(f"held-out real sources: not enrolled: {model} is an enrolled model already")
    elif args.enrol_sources != 0:
        print("held-out real sources, each enrolled from one copy and read in the others:")
        figures["enrolment"] = enrol_bench.run(model, args.data, limit=args.enrol_sources)


if __name__ == "__main__":
    sys.exit(main())
