"""``mahjong-table watch``: read the table through the overhead camera and say what settles.

Once the camera is calibrated (``mahjong-table calibrate``), run::

    mahjong-table watch --camera 0 --calibration calibration.json

Each flower, meld and hand laid open is printed as the tracker settles it (a few frames after
it is laid; see ``docs/camera.md``), with what to confirm and why; a camera that goes away
is reported and waited for. On Ctrl-C, at the end of a video or folder of pictures, or after
``--frames`` or ``--seconds``, the settled table is printed, seat by seat. ``--json`` prints
each update as a JSON line (``vision.pipeline.TableUpdate.to_json``) and the settled table
as the last line. This is how a camera is brought up before the table controller runs it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.exit_codes import ExitCode

if TYPE_CHECKING:  # only for annotations: the handler imports these when it runs
    from controller.errors import VisionError
    from vision.melds import SeatView


def register(subparsers: argparse._SubParsersAction) -> None:
    from vision.calibrate_cli import add_camera_argument, add_size_argument

    p = subparsers.add_parser(
        "watch",
        help="read the table through the camera and print what settles (Ctrl-C to stop)",
        description="Read the table frame by frame through the calibrated overhead camera "
        "and print each flower, meld and hand laid open as it settles, then the settled "
        "table when stopped (Ctrl-C, the end of a video or folder, --frames or --seconds). "
        "Exit status 0 when it ran, 2 for bad arguments, 3 when the calibration, model or "
        "camera cannot be used or no frame could be read.",
    )
    add_camera_argument(p)
    p.add_argument(
        "--calibration",
        type=Path,
        default=Path("calibration.json"),
        help="the calibration 'mahjong-table calibrate' saved (default calibration.json)",
    )
    add_size_argument(p)
    p.add_argument("--model", type=Path, help="model folder (default: the committed model)")
    p.add_argument("--min-confidence", type=float, help="flag tiles under this probability")
    p.add_argument(
        "--mode",
        choices=("frame", "seats"),
        default="frame",
        help="read the whole frame (default) or each seat's strip, turned upright",
    )
    p.add_argument("--frames", type=int, metavar="N", help="stop after N frames read")
    p.add_argument("--seconds", type=float, metavar="S", help="stop after S seconds")
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON lines: each update that settles a change, then the settled table",
    )
    p.add_argument(
        "--every-frame",
        action="store_true",
        help="with --json, print every frame's update, changes or not",
    )
    p.set_defaults(func=watch_command)


def _checked(args: argparse.Namespace) -> tuple[int, int] | None:
    """The frame size asked for; raises ValueError naming a bad argument."""
    from vision.calibrate_cli import parse_size

    if args.frames is not None and args.frames < 1:
        raise ValueError(f"--frames must be 1 or more, not {args.frames}")
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds > 0):
        raise ValueError(f"--seconds must be a number above 0, not {args.seconds}")
    if args.min_confidence is not None and not 0.0 <= args.min_confidence <= 1.0:
        raise ValueError("--min-confidence is a probability, 0 to 1")
    if args.every_frame and not args.json:
        raise ValueError("--every-frame goes with --json")
    return parse_size(args.size)


def watch_command(args: argparse.Namespace) -> int:
    try:
        size = _checked(args)
    except ValueError as exc:
        print(f"mahjong-table watch: {exc}", file=sys.stderr)
        return ExitCode.INPUT

    from vision.calibration import load_calibration
    from vision.camera import open_camera
    from vision.pipeline import TablePipeline
    from vision.recognizer import TileRecognizer

    # what cannot be used at all stops here, before any frame (main reports it, status 3)
    calibration = load_calibration(args.calibration)
    recognizer = TileRecognizer(args.model, min_confidence=args.min_confidence)
    pipeline = TablePipeline(calibration, recognizer, mode=args.mode)
    camera = open_camera(args.camera, size=size)
    # a video or folder of frames is replayed: one that cannot open never will (a camera
    # not plugged in yet is waited for), and a bad frame there is no reason to wait
    replayed = not camera.live
    if replayed:
        camera.open()
    errors = _Errors()
    deadline = None if args.seconds is None else time.monotonic() + args.seconds

    def should_stop() -> bool:
        if replayed and not camera.is_open:  # the file went away, or broke, half way
            return True
        return deadline is not None and time.monotonic() >= deadline

    if not args.json:
        print(f"watching {camera.name} (Ctrl-C to stop)")
        sys.stdout.flush()
    frames = 0
    ended = "the camera's frames ran out"
    try:
        for update in pipeline.watch(
            camera,
            limit=args.frames,
            retry_s=0.0 if replayed else 2.0,
            on_error=errors.report,
            should_stop=should_stop,
        ):
            frames += 1
            if args.json:
                if update.changes or args.every_frame:
                    print(json.dumps(update.to_json(), ensure_ascii=False))
            else:
                for change in update.changes:
                    print(f"frame {change.frame}: {change.describe()}")
            sys.stdout.flush()
        if args.frames is not None and frames >= args.frames:
            ended = f"{frames} frames read"
        elif replayed and not camera.is_open:
            ended = f"{camera.name} could not be read on"
        elif deadline is not None and time.monotonic() >= deadline:
            ended = f"{args.seconds:g} seconds passed"
    except KeyboardInterrupt:
        ended = "stopped"
    finally:
        camera.close()
        errors.flush()
    if frames or args.json:  # a JSON reader gets its last line whatever happened
        _settled(pipeline.views, frames, ended, as_json=args.json)
    if not frames:
        print(f"mahjong-table watch: no frame of {camera.name} could be read", file=sys.stderr)
        return ExitCode.HARDWARE
    return ExitCode.OK


class _Errors:
    """Reports the camera's troubles on stderr, a trouble repeated frame after frame (a
    camera unplugged, frames of the wrong size) once, with how often it came."""

    def __init__(self) -> None:
        self.last = ""
        self.repeats = 0

    def report(self, exc: VisionError) -> None:
        text = str(exc)
        if text == self.last:
            self.repeats += 1
            return
        self.flush()
        self.last = text
        print(f"mahjong-table watch: {text}", file=sys.stderr)
        sys.stderr.flush()

    def flush(self) -> None:
        if self.repeats:
            more = "once more" if self.repeats == 1 else f"{self.repeats} more times"
            print(f"mahjong-table watch: (the same, {more})", file=sys.stderr)
        self.last, self.repeats = "", 0


def _settled(views: tuple[SeatView, ...], frames: int, ended: str, *, as_json: bool) -> None:
    if as_json:
        record: dict[str, Any] = {
            "end": ended,
            "frames": frames,
            "views": [v.to_json() for v in views],
            "needs_confirmation": any(v.needs_confirmation for v in views),
        }
        print(json.dumps(record, ensure_ascii=False))
        return
    print(f"the table after {frames} frames ({ended}):")
    for view in views:
        print(f"  {view.describe()}")
        for note in view.notes:
            print(f"    please confirm: {note}")
