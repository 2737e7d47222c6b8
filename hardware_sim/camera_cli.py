"""``mahjong-table sim-camera``: the simulated overhead camera's frames of one hand, written to
a folder, with the truth beside them.

::

    mahjong-table sim-camera --out /tmp/hand --seed 3
    mahjong-table calibrate --image /tmp/hand/frame-0000.jpg --out /tmp/hand/calibration.json
    mahjong-table watch --camera /tmp/hand --calibration /tmp/hand/calibration.json

The frames show the table from empty to the winner's hand laid open
(:func:`hardware_sim.hand_script.laid_hand`), rendered as :class:`hardware_sim.camera.
SimCamera` renders them; ``truth.json`` says what lies on the table at the end, and in which
frames each step was seen, to set beside what ``watch`` reads. A folder that already holds
pictures is refused: frames of two hands would mix.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from controller.exit_codes import ExitCode

FORMATS = ("jpg", "png")
MAX_SIDE = 4096
"""The largest frame side drawn: beyond it a frame is gigabytes of rendering for nothing."""
JPEG_QUALITY = 92
"""Near what a camera's own JPEG gives, at about a tenth of a PNG's size."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sim-camera",
        help="write the simulated camera's frames of one hand to a folder (for watch)",
        description="Render the simulated overhead camera's frames of one hand, from the "
        "empty table to the winner's hand laid open, into a folder that 'mahjong-table "
        "calibrate --image' and 'mahjong-table watch --camera' read, with truth.json beside "
        "them. Exit status 0 written, 2 bad arguments (or a folder already holding "
        "pictures), 3 the folder cannot be written.",
    )
    p.add_argument("--out", type=Path, required=True, help="the folder to write (new or empty)")
    p.add_argument("--seed", type=int, default=0, help="which hand, and the camera's noise")
    p.add_argument("--hold", type=int, default=6, help="frames each step is seen (default 6)")
    p.add_argument("--size", help="frame size, WxH (default 1280x960)")
    p.add_argument("--no-arms", action="store_true", help="lay things with no arm reaching in")
    p.add_argument("--walls", action="store_true", help="leave the four walls standing")
    p.add_argument("--format", choices=FORMATS, default="jpg", help="picture format (jpg)")
    p.set_defaults(func=sim_camera_command)


def sim_camera_command(args: argparse.Namespace) -> int:
    from vision.calibrate_cli import parse_size
    from vision.camera import IMAGE_SUFFIXES

    try:
        size = parse_size(args.size) or (1280, 960)
        if max(size) > MAX_SIDE:
            raise ValueError(f"--size: at most {MAX_SIDE} pixels a side, not {args.size}")
        if args.seed < 0:
            raise ValueError(f"--seed is 0 or more, not {args.seed}")
        if args.hold < 1:
            raise ValueError(f"--hold is 1 frame or more, not {args.hold}")
        if args.out.exists() and not args.out.is_dir():
            raise ValueError(f"--out {args.out} is a file, not a folder")
        if args.out.is_dir() and any(
            p.suffix.lower() in IMAGE_SUFFIXES or p.name == "truth.json" for p in args.out.iterdir()
        ):
            raise ValueError(f"--out {args.out} already holds pictures: choose a new folder")
    except ValueError as exc:
        print(f"mahjong-table sim-camera: {exc}", file=sys.stderr)
        return ExitCode.INPUT
    except OSError as exc:
        print(f"mahjong-table sim-camera: --out {args.out}: {exc}", file=sys.stderr)
        return ExitCode.HARDWARE
    created = not args.out.exists()
    wrote: list[Path] = []
    try:
        written, truth = write_hand(args.out, args, size, wrote)
    except OSError as exc:
        # half a hand is no use, and would make the folder refused next time: take it away
        for path in wrote:
            path.unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):
                args.out.rmdir()
        why = exc.strerror or exc
        print(f"mahjong-table sim-camera: cannot write to {args.out}: {why}", file=sys.stderr)
        return ExitCode.HARDWARE
    first = args.out / f"frame-0000.{args.format}"
    print(
        f"wrote {written} frames of one hand to {args.out} (truth in "
        f"{args.out / 'truth.json'}); to read them:\n"
        f"  mahjong-table calibrate --image {first} --out {args.out / 'calibration.json'}\n"
        f"  mahjong-table watch --camera {args.out} --calibration "
        f"{args.out / 'calibration.json'}"
    )
    for seat in truth["seats"]:
        print(f"  {seat['describe']}")
    return ExitCode.OK


def write_hand(
    out: Path, args: argparse.Namespace, size: tuple[int, int], wrote: list[Path]
) -> tuple[int, dict[str, Any]]:
    """Render and write the frames, each path to ``wrote`` as it is written; returns how
    many, and the truth written beside them."""
    import cv2
    import numpy as np

    from hardware_sim.camera import SimCamera
    from hardware_sim.hand_script import laid_hand
    from vision.melds import seat_line

    final, steps = laid_hand(
        np.random.default_rng(args.seed), hold=args.hold, arms=not args.no_arms, walls=args.walls
    )
    out.mkdir(parents=True, exist_ok=True)
    camera = SimCamera(seed=args.seed, size=size)
    params = [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY] if args.format == "jpg" else []
    suffix = f".{args.format}"
    frame = 0
    seen = []
    try:
        for step in steps:
            camera.set_layout(step.layout)
            seen.append({"frames": [frame, frame + step.frames - 1], "what": step.what})
            for _ in range(step.frames):
                path = out / f"frame-{frame:04d}{suffix}"
                ok, data = cv2.imencode(suffix, camera.read().image, params)
                if not ok:
                    raise OSError(f"OpenCV could not encode frame {frame} as {args.format}")
                wrote.append(path)
                path.write_bytes(data.tobytes())  # an OSError here says why (disk full, …)
                frame += 1
    finally:
        camera.close()
    truth: dict[str, Any] = {
        "seed": args.seed,
        "frames": frame,
        "size": list(size),
        "steps": seen,
        "seats": [
            {
                "seat": k,
                "flowers": [t.code for t in seat.flowers],
                "melds": [m.to_json() for m in seat.melds],
                "open_tiles": [t.code for t in seat.open_tiles],
                "describe": seat_line(
                    k, seat.flowers, [m.notation() for m in seat.melds], seat.open_tiles
                ),
            }
            for k, seat in enumerate(final.seats)
        ],
    }
    wrote.append(out / "truth.json")
    (out / "truth.json").write_text(
        json.dumps(truth, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    return frame, truth
