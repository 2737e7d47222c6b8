"""``mahjong-table calibrate``: measure where the table lies in the overhead camera's view.

With the four corner markers in place and the camera mounted, run::

    mahjong-table calibrate --camera 0 --out calibration.json --preview check.png

It takes frames until it sees all four markers, fits the table plane, writes the calibration
and, with ``--preview``, a picture of the seat zones drawn over the frame to check by eye.
Without markers, give the table's four corners picked in a saved frame (``--save-frame``)::

    mahjong-table calibrate --image frame.png --corners "1012,880 1020,75 262,70 250,884"

``--check`` compares a saved calibration with what the camera sees now (has it moved?);
``--markers-sheet`` writes the page of markers to print. See ``docs/camera.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from controller.exit_codes import ExitCode

if TYPE_CHECKING:  # only for annotations: the handler imports these when it runs
    import numpy as np

    from vision.calibration import Calibration, TableGeometry

DRIFT_TOLERANCE_MM = 5.0
"""How far a marker may seem to have moved before ``--check`` says to calibrate again."""
SHEET_DPI = 300
"""The marker sheet's resolution, recorded in its PNG so it prints at the size drawn."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="measure the table in the overhead camera's view",
        description="Find the four corner markers (or take four corners given by hand) in a "
        "camera frame and save the mapping from the camera to the table and the seats' zones. "
        "Exit status 0 when saved (or, with --check, when the camera has not moved), 1 when "
        "--check finds it moved, 2 for bad arguments, 3 when the camera or markers cannot be "
        "read.",
    )
    src = p.add_mutually_exclusive_group()
    add_camera_argument(src)
    src.add_argument("--image", type=Path, help="calibrate from this still picture instead")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("calibration.json"),
        help="where to write the calibration (default calibration.json)",
    )
    add_size_argument(p)
    p.add_argument("--frames", type=int, default=15, help="frames to try before giving up")
    p.add_argument(
        "--corners",
        help="calibrate by hand: the four table corners in pixels, 'x,y x,y x,y x,y', in "
        "marker order (corner of seats 0/1, 1/2, 2/3, 3/0)",
    )
    p.add_argument("--table-mm", type=float, default=900.0, help="side of the playing surface")
    p.add_argument("--marker-mm", type=float, default=50.0, help="side of a marker's black square")
    p.add_argument(
        "--marker-inset-mm",
        type=float,
        default=40.0,
        help="distance from each table edge to a marker's centre",
    )
    p.add_argument(
        "--zone-depth-mm",
        type=float,
        default=185.0,
        help="how far each seat's zone reaches from its edge",
    )
    p.add_argument("--preview", type=Path, help="write the frame with the seat zones drawn")
    p.add_argument(
        "--save-frame",
        type=Path,
        help="write the frame used (also when no markers are found: to pick corners in)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="do not write: say how far the markers now lie from the saved calibration",
    )
    p.add_argument(
        "--markers-sheet",
        type=Path,
        metavar="PNG",
        help="write the printable page of markers (300 dpi A4) and stop",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=calibrate_command)


def add_camera_argument(parser: argparse.ArgumentParser | argparse._ActionsContainer) -> None:
    """``--camera``, as every command that reads the overhead camera takes it."""
    parser.add_argument(
        "--camera",
        default="0",
        help="camera to read: an index (0), a device (/dev/video0), a URL, 'picamera', a "
        "video file or a folder of images (default 0)",
    )


def add_size_argument(parser: argparse.ArgumentParser) -> None:
    """``--size``, read by :func:`parse_size`."""
    parser.add_argument("--size", help="frame size to ask the camera for, WxH (e.g. 1280x960)")


def parse_size(text: str | None) -> tuple[int, int] | None:
    """``--size WxH`` as (width, height), ``None`` when not given; ValueError when bad."""
    if not text:
        return None
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size is WxH, like 1280x960, not {text!r}") from None
    if w < 16 or h < 16:
        raise ValueError(f"--size {text} is too small")
    return w, h


def _corners(text: str) -> list[tuple[float, float]]:
    points = []
    for part in text.replace(";", " ").split():
        try:
            x, y = (float(v) for v in part.split(","))
        except ValueError:
            raise ValueError(f"--corners takes 'x,y' pairs, and {part!r} is not one") from None
        points.append((x, y))
    if len(points) != 4:
        raise ValueError(f"--corners takes four corners, not {len(points)}")
    return points


def calibrate_command(args: argparse.Namespace) -> int:
    from vision.calibration import CalibrationError, TableGeometry, marker_sheet, scale_note
    from vision.files import check_picture_name

    try:
        geometry = TableGeometry(
            side_mm=args.table_mm,
            marker_mm=args.marker_mm,
            marker_inset_mm=args.marker_inset_mm,
            zone_depth_mm=args.zone_depth_mm,
        )
        size = parse_size(args.size)
        corners = _corners(args.corners) if args.corners else None
        if args.frames < 1:
            raise ValueError("--frames must be 1 or more")
        for option, path in (
            ("--markers-sheet", args.markers_sheet),
            ("--preview", args.preview),
            ("--save-frame", args.save_frame),
        ):
            if path is not None:
                try:
                    check_picture_name(path)
                except ValueError as exc:
                    raise ValueError(f"{option}: {exc}") from None
        if args.markers_sheet is not None and args.markers_sheet.suffix.lower() != ".png":
            # only a PNG here records the print resolution that makes "100 %" the true size
            raise ValueError(
                f"--markers-sheet: name the sheet .png, not {args.markers_sheet.name!r} (it "
                "carries its 300 dpi, so it prints at its true size)"
            )
    except (ValueError, CalibrationError) as exc:
        print(f"mahjong-table calibrate: {exc}", file=sys.stderr)
        return ExitCode.INPUT

    if args.markers_sheet:
        # the resolution goes into the file: printed "at 100 %", a picture without one comes
        # out at 72 or 96 dpi, each marker three or four times too large
        _write(args.markers_sheet, marker_sheet(geometry, dpi=SHEET_DPI), dpi=SHEET_DPI)
        print(f"wrote the markers to print to {args.markers_sheet} (print at 100%)")
        return ExitCode.OK
    if args.check:
        return _check(args, size)

    try:
        image, calibration = _calibrate(args, geometry, size, corners)
    except _CornersRefused as exc:  # the corners typed are wrong, not the camera
        print(f"mahjong-table calibrate: --corners: {exc}", file=sys.stderr)
        return ExitCode.INPUT
    if args.preview:
        _write(args.preview, preview(image, calibration))
    calibration.save(args.out)
    result = calibration.to_json()
    note = scale_note(calibration)
    if note:
        print(f"mahjong-table calibrate: note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"saved": str(args.out), **result}, indent=2))
    else:
        how = "markers" if calibration.method == "aruco" else "corners given by hand"
        print(
            f"calibrated from {how}: table {geometry.side_mm:g} mm seen in "
            f"{calibration.image_size[0]}x{calibration.image_size[1]} frames, fit within "
            f"{calibration.error_mm:.1f} mm; saved to {args.out}"
        )
    return ExitCode.OK


def _frames(args: argparse.Namespace, size: tuple[int, int] | None) -> Iterator[np.ndarray]:
    """Frames to calibrate from: the still picture, or up to ``--frames`` from the camera."""
    from vision.camera import EndOfStream, open_camera, read_image

    if args.image:
        yield read_image(args.image)
        return
    camera = open_camera(args.camera, size=size)
    try:
        for _ in range(args.frames):
            try:
                yield camera.read().image
            except EndOfStream:
                return
    finally:
        camera.close()


def _calibrate(
    args: argparse.Namespace,
    geometry: TableGeometry,
    size: tuple[int, int] | None,
    corners: list[tuple[float, float]] | None,
) -> tuple[np.ndarray, Calibration]:
    from vision.calibration import CalibrationError, calibrate_from_markers, calibrate_manual

    last_error: CalibrationError | None = None
    for image in _frames(args, size):
        if args.save_frame:  # saved even when calibration fails: to pick corners in by hand
            _write(args.save_frame, image)
        if corners is not None:
            h, w = image.shape[:2]
            try:
                return image, calibrate_manual(corners, (w, h), geometry).with_felt(image)
            except CalibrationError as exc:
                raise _CornersRefused(exc.message) from None
        try:
            return image, calibrate_from_markers(image, geometry)
        except CalibrationError as exc:  # cameras take a few frames to settle their exposure
            last_error = exc
    if last_error is not None:
        raise last_error
    raise CalibrationError("the camera gave no frames to calibrate from")


class _CornersRefused(ValueError):
    """Corners given by hand that describe no view of the table."""


def _check(args: argparse.Namespace, size: tuple[int, int] | None) -> int:
    from vision.calibration import load_calibration

    calibration = load_calibration(args.out)
    drift: dict[int, float] = {}
    for image in _frames(args, size):
        seen = calibration.marker_drift_mm(image)
        if len(seen) > len(drift):  # a frame seeing fewer markers (a hand over one) says less
            drift = seen
        if len(drift) == 4:
            break
    if not drift:
        from vision.calibration import CalibrationError

        # "cannot see" is not "moved": the help gives each its own status
        raise CalibrationError("no markers in view to check against")
    worst = max(drift.values())
    moved = worst > DRIFT_TOLERANCE_MM
    if args.json:
        rounded = {str(k): round(v, 2) for k, v in drift.items()}
        print(json.dumps({"drift_mm": rounded, "moved": moved}))
    else:
        shown = ", ".join(f"marker {k}: {v:.1f} mm" for k, v in sorted(drift.items()))
        verdict = "the camera has moved: calibrate again" if moved else "still calibrated"
        print(f"{shown}; {verdict}")
    return ExitCode.NO if moved else ExitCode.OK


def preview(image: np.ndarray, calibration: Calibration) -> np.ndarray:
    """The frame with each seat's zone outlined and named, and crosses where the markers'
    centres should be, for an installer to check the calibration by eye."""
    import cv2
    import numpy as np

    from vision.calibration import apply

    out = image.copy()
    colours = [(0, 200, 255), (255, 120, 0), (60, 220, 60), (200, 60, 255)]
    size = (out.shape[1], out.shape[0])
    g = calibration.geometry
    for seat, zone in enumerate(calibration.zones):
        pts = np.round(calibration.to_image(zone, size)).astype(np.int32)
        cv2.polylines(out, [pts], True, colours[seat], 2, cv2.LINE_AA)
        name_at = apply(g.seat_to_plane(seat), [(g.side_mm / 2 - 40, 40.0)])
        x, y = calibration.to_image(name_at, size)[0]
        cv2.putText(
            out, f"seat {seat}", (int(x), int(y)), cv2.FONT_HERSHEY_SIMPLEX, 0.9, colours[seat], 2
        )
    for k in range(4):
        x, y = calibration.to_image([g.marker_centre(k)], size)[0]
        cv2.drawMarker(out, (int(x), int(y)), (0, 0, 255), cv2.MARKER_CROSS, 24, 2)
    return out


def _write(path: Path, image: np.ndarray, dpi: int | None = None) -> None:
    from vision.calibration import CalibrationError
    from vision.files import write_picture

    try:
        write_picture(path, image, dpi=dpi, make_folder=True)
    except ValueError as exc:
        raise CalibrationError(str(exc)) from None
    except OSError as exc:
        raise CalibrationError(f"cannot write {path}: {exc.strerror or exc}") from None
