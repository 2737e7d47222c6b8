"""The recogniser's commands: ``detect``, ``train`` and ``enrol``.

``mahjong-table detect IMAGE… [--json]`` reads every tile in any photo;
``mahjong-table train`` trains the models from ``../shared/data`` (needs the ``train`` extra);
``mahjong-table enrol PHOTO… --out DIR`` adapts the model to a table's own tile set.

Heavy modules (onnxruntime, PyTorch) are imported inside the handlers so that
``mahjong-table --help`` stays instant.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.exit_codes import ExitCode

if TYPE_CHECKING:  # only for annotations: the handlers import these when they run
    import numpy as np

    from vision.detection import TileDetection
    from vision.enrol import EnrolSample
    from vision.recognizer import TileRecognizer

LABEL_BOX_LESSONS = ("all", "apart", "none")
"""``--label-box-lessons``' choices: ``vision.training.train.LABEL_BOX_LESSONS``, spelt out here so
that building the parser imports nothing heavy (a test keeps the two alike)."""


TUNE_TABLES_DEFAULT = 20
"""Rendered tables each finder threshold is run on when ``--tune-tables`` is not given (the
full preset's :attr:`~vision.training.train.TrainConfig.tune_table_frames`)."""
MAX_THREADS = 256
"""More training threads than this is a typing slip (PyTorch crashes on 100000)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_detect(subparsers)
    _register_train(subparsers)
    _register_enrol(subparsers)


def _register_detect(subparsers: argparse._SubParsersAction) -> None:
    d = subparsers.add_parser(
        "detect",
        help="find and read every tile in photos",
        description="Find every tile in each picture and say which it is, with its box, "
        "outline and confidence. Tiles under the confidence threshold are flagged for "
        "confirmation. Exit status 2 if a picture could not be read.",
    )
    d.add_argument("images", nargs="+", metavar="IMAGE", type=Path)
    d.add_argument("--json", action="store_true", help="print JSON (one record per picture)")
    d.add_argument("--model", type=Path, help="model folder (default: the committed model)")
    d.add_argument("--min-confidence", type=float, help="flag tiles under this probability")
    d.add_argument("--annotate", type=Path, metavar="DIR", help="also write each picture with "
                   "its tiles drawn into DIR, as NAME.png (NAME-2.png for a second picture of "
                   "the same name; --json gives each record's 'annotated' file)")  # fmt: skip
    d.set_defaults(func=detect_command)


def _register_train(subparsers: argparse._SubParsersAction) -> None:
    t = subparsers.add_parser(
        "train",
        help="train the tile models (needs the train extra)",
        description="Train the tile finder and classifier from the tile art and real photos "
        "in the shared data folder and export them to ONNX. The full preset takes about an "
        "hour on 2 CPU cores.",
    )
    t.add_argument("--data", type=Path, help="the shared data folder (holding tile-art/ and "
                   "real-photos/); default $MAHJONG_SHARED_DATA, else ../shared/data beside "
                   "the checkout")  # fmt: skip
    t.add_argument("--out", type=Path, default=None, help="where to write the model "
                   "(default: vision/models, the committed model)")  # fmt: skip
    t.add_argument("--preset", choices=("full", "tiny"), default="full")
    t.add_argument("--finder-epochs", type=int, help="override the preset's finder epochs")
    t.add_argument("--classifier-epochs", type=int, help="override the preset's classifier epochs")
    t.add_argument("--finder-deep-width", type=float, help="scale the channel counts of "
                   "the finder's two deepest stages (default 1: the committed design)")  # fmt: skip
    t.add_argument("--classifier-any-tilt", type=float, metavar="SHARE", help="the share of "
                   "the classifier's training crops turned by any angle up to 45 degrees "
                   "(default 0: small turns only)")  # fmt: skip
    t.add_argument("--label-box-lessons", choices=LABEL_BOX_LESSONS, help="which crops cut "
                   "at a labelled box teach the classifier's box output: all (default), "
                   "apart (only in photos whose boxes stay apart) or none")  # fmt: skip
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=None, help="CPU threads (default 2)")
    t.add_argument("--reuse-finder", type=Path, metavar="MODEL_DIR", help="keep this model's "
                   "finder and train only the classifier")  # fmt: skip
    t.add_argument("--reuse-classifier", type=Path, metavar="MODEL_DIR", help="keep this "
                   "model's classifier and train only the finder")  # fmt: skip
    t.add_argument("--retune", type=Path, metavar="MODEL_DIR", help="train nothing: choose "
                   "this model's finder threshold, close-up second look, reread "
                   "confidence and box scale again on the validation photos, fit its "
                   "confidence calibration, "
                   "and write them into its model.json")  # fmt: skip
    t.add_argument("--quantise", type=Path, metavar="MODEL_DIR", help="train nothing: "
                   "quantise this model's float classifier to int8 (ranges from the training "
                   "photos' tiles, checked on the validation photos'), then choose its "
                   "run-time settings again as --retune does")  # fmt: skip
    t.add_argument("--calibrate-confidence", type=Path, metavar="MODEL_DIR", help="train "
                   "nothing: fit this model's confidence calibration (the temperature that "
                   "makes a read at confidence c right about c of the time) on the validation "
                   "photos and write it into its model.json, its other settings kept (--retune "
                   "and --quantise fit it too)")  # fmt: skip
    t.add_argument("--flower-look", type=Path, metavar="MODEL_DIR", help="train nothing "
                   "else: fit this model's flower look (its second reading of the tiles that "
                   "may be flowers, by picture and number) on the training photos and "
                   "rendered tables, choose when it is taken on the validation photos, and "
                   "fit its confidence calibration again")  # fmt: skip
    t.add_argument("--no-quantise", action="store_true", help="keep the trained "
                   "classifier in floating point (by default it is quantised to int8 before "
                   "tuning)")  # fmt: skip
    t.add_argument("--tune-tables", type=int, metavar="N", help="rendered tables each finder "
                   f"threshold is also run on (default {TUNE_TABLES_DEFAULT}; the tiny "
                   "preset 1)")  # fmt: skip
    t.set_defaults(func=train_command)


def _register_enrol(subparsers: argparse._SubParsersAction) -> None:
    e = subparsers.add_parser(
        "enrol",
        help="adapt the recogniser to your own tile set",
        description="Photograph your tiles laid out in rows as LAYOUT says, from above. "
        "Enrol finds them, labels each by its place, writes the labels (labels.json) and a "
        "picture of them (check.png) to check, and refits the classifier to your set, "
        "writing a model folder to use with --model. Correct any wrong label in labels.json "
        "and run again with --labels to refit from your corrections.",
    )
    e.add_argument("photos", nargs="*", metavar="PHOTO", type=Path)
    e.add_argument("--out", type=Path, required=True, help="the enrolled model folder to write")
    e.add_argument(
        "--layout",
        default=None,
        help="rows of the grid, '/' between rows "
        "(default: '123456789m / 123456789p / 123456789s / ESWNCFP / 12345678f')",
    )
    e.add_argument("--labels", type=Path, help="refit from this (corrected) labels file "
                   "instead of finding tiles in photos")  # fmt: skip
    e.add_argument("--model", type=Path, help="the model to adapt (default: the committed one)")
    e.add_argument("--check-only", action="store_true", help="write labels.json and check.png "
                   "but do not refit")  # fmt: skip
    e.set_defaults(func=enrol_command)


def not_markers(tiles: list[TileDetection], image: np.ndarray) -> list[TileDetection]:
    """The tiles found, less any read unsure on one of the table's corner markers: a marker
    in a photo of the table is no tile, and the finder sometimes takes one for a tile (read
    surely, a tile stays, even where a pattern in its art reads as a marker)."""
    import cv2
    import numpy as np

    from vision.calibration import MARKER_IDS, find_marker_sightings

    if not any(t.needs_confirmation for t in tiles):
        return tiles
    sightings = find_marker_sightings(image)
    # the table's own four markers only: other ids are patterns in tiles' art
    markers = [q for k, seen in sightings.items() if k in MARKER_IDS for q in seen]

    def on_a_marker(t: TileDetection) -> bool:
        x, y = np.asarray(t.quad, np.float64).mean(axis=0)
        return any(
            cv2.pointPolygonTest(np.asarray(q, np.float32), (float(x), float(y)), False) >= 0
            for q in markers
        )

    return [t for t in tiles if not (t.needs_confirmation and on_a_marker(t))]


def detect_command(args: argparse.Namespace) -> int:

    from controller.errors import CameraError
    from vision.camera import read_image
    from vision.files import shown, write_picture
    from vision.recognizer import TileRecognizer

    if args.min_confidence is not None and not 0.0 <= args.min_confidence <= 1.0:
        print("mahjong-table detect: --min-confidence is a probability, 0 to 1", file=sys.stderr)
        return ExitCode.INPUT
    if args.annotate:
        try:
            args.annotate.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"mahjong-table detect: --annotate {args.annotate}: {exc}", file=sys.stderr)
            return ExitCode.INPUT
    rec = TileRecognizer(args.model, min_confidence=args.min_confidence)
    records = []
    failed = 0
    written: set[str] = set()
    for path in args.images:
        try:
            img = read_image(path)
            tiles = not_markers(rec.detect(img), img)
        except CameraError as exc:
            failed += 1
            # the recogniser's own checks speak of "the picture": say which
            said = shown(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
            print(f"mahjong-table detect: {said}", file=sys.stderr)
            records.append({"image": shown(path), "error": said})
            continue
        record = {
            "image": shown(path),
            "width": img.shape[1],
            "height": img.shape[0],
            "tiles": [t.to_json() for t in tiles],
        }
        records.append(record)
        if args.annotate:
            # a.png and b/a.jpg must not overwrite each other's picture
            name, n = f"{path.stem}.png", 1
            while name in written:
                n += 1
                name = f"{path.stem}-{n}.png"
            written.add(name)
            target = args.annotate / name
            try:
                write_picture(target, annotate(img, tiles))
                record["annotated"] = shown(target)
            except (OSError, ValueError) as exc:
                failed += 1
                said = f"cannot write {shown(target)}: {getattr(exc, 'strerror', None) or exc}"
                print(f"mahjong-table detect: {said}", file=sys.stderr)
                record["error"] = said
        if not args.json:
            confirm = sum(t.needs_confirmation for t in tiles)
            also = f", {confirm} to confirm" if confirm else ""
            print(f"{shown(path)}: {len(tiles)} tiles{also}")
            for t in tiles:
                x, y, w, h = t.box
                flags = (" sideways" if t.sideways else "") + (
                    " CONFIRM? (" + ", ".join(f"{n}" for n, _ in _alt_names(t)) + ")"
                    if t.needs_confirmation
                    else ""
                )
                print(f"  {t.name:>4} {t.confidence:.2f} at {x:.0f},{y:.0f} {w:.0f}x{h:.0f}{flags}")
    if args.json:
        json.dump(records, sys.stdout, indent=1, ensure_ascii=False)
        print()
    return ExitCode.INPUT if failed else ExitCode.OK


def _alt_names(t) -> list[tuple[str, float]]:
    from vision.labels import label_name

    return [(label_name(lab), p) for lab, p in t.alternatives]


def annotate(img, tiles):
    """A copy of the picture with each tile's outline and label drawn (orange: to confirm)."""
    import cv2
    import numpy as np

    out = img.copy()
    for t in tiles:
        colour = (0, 140, 255) if t.needs_confirmation else (0, 200, 0)
        cv2.polylines(out, [np.round(t.quad).astype(np.int32)], True, colour, 2)
        x, y = int(t.box[0]), int(t.box[1])
        cv2.putText(out, t.name, (x, max(10, y - 3)), cv2.FONT_HERSHEY_SIMPLEX, 0.5, colour, 2)
    return out


def train_command(args: argparse.Namespace) -> int:
    from controller.errors import ConfigError
    from vision.recognizer import DEFAULT_MODEL_DIR
    from vision.training.dataset import shared_data_dir
    from vision.training.train import TrainConfig, default_threads, train

    data = args.data if args.data is not None else shared_data_dir()
    if not (data / "tile-art").is_dir() and not (data / "real-photos").is_dir():
        raise ConfigError(
            f"no training data at {data} (expected tile-art/ and real-photos/); pass --data"
        )
    _check_train_numbers(args)
    given = _model_options_given(args)
    if len(given) > 1:
        flags = [flag for flag, _ in MODEL_OPTIONS]
        raise ConfigError(
            f"{', '.join(flags[:-1])} and {flags[-1]} each take a model: give one of them"
        )
    if given:
        _check_nothing_to_train(args, given[0][0])
        if args.flower_look is not None:
            return _fit_flower_look(
                args.flower_look, data, args.threads or default_threads(), args.seed
            )
        return _retune(
            given[0][1],
            data,
            args.threads or default_threads(),
            args.tune_tables or TUNE_TABLES_DEFAULT,
            quantise=args.quantise is not None,
            calibrate_only=args.calibrate_confidence is not None,
        )
    if args.out is None and args.preset != "full":
        # the default is the committed model, which only the full preset reproduces
        raise ConfigError(f"--preset {args.preset} trains a trial model: give it an --out folder")
    _check_kept_parts(args)
    out = args.out or DEFAULT_MODEL_DIR
    cfg = TrainConfig.preset(
        args.preset,
        data,
        out,
        seed=args.seed,
        threads=args.threads or default_threads(),
        reuse_finder=args.reuse_finder,
        reuse_classifier=args.reuse_classifier,
        **_preset_overrides(args),
        log=lambda msg: print(msg, flush=True),
    )
    manifest = train(cfg)
    print(f"model written to {out}: {json.dumps(manifest.training['validation'])}")
    return ExitCode.OK


def _check_train_numbers(args: argparse.Namespace) -> None:
    """Refuse numbers no training can run with, before any work."""
    from controller.errors import ConfigError

    if args.tune_tables is not None and args.tune_tables < 1:
        raise ConfigError(f"--tune-tables must be at least 1, not {args.tune_tables}")
    for flag, most in (
        ("threads", MAX_THREADS),
        ("finder_epochs", 10_000),
        ("classifier_epochs", 10_000),
    ):
        value = getattr(args, flag)
        # 0 must not read as "the preset's"; PyTorch crashes on 100000 threads
        if value is not None and not 1 <= value <= most:
            raise ConfigError(f"--{flag.replace('_', '-')} must be 1 to {most}, not {value}")
    if not 0 <= args.seed < 2**63:  # the generators take a 64-bit seed
        raise ConfigError(f"--seed must be 0 to 2**63 - 1, not {args.seed}")
    if args.finder_deep_width is not None and not 0 < args.finder_deep_width <= 8:
        raise ConfigError(
            f"--finder-deep-width must be above 0 and at most 8, not {args.finder_deep_width}"
        )
    if args.classifier_any_tilt is not None and not 0 <= args.classifier_any_tilt <= 1:
        raise ConfigError(
            f"--classifier-any-tilt must be a share from 0 to 1, not {args.classifier_any_tilt}"
        )


MODEL_OPTIONS = (
    ("--retune", "retune"),
    ("--quantise", "quantise"),
    ("--calibrate-confidence", "calibrate_confidence"),
    ("--flower-look", "flower_look"),
)
"""The train options that take a model folder and work on it (flag, argument name)."""


def _model_options_given(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The :data:`MODEL_OPTIONS` given, each with its model folder."""
    return [
        (flag, getattr(args, name))
        for flag, name in MODEL_OPTIONS
        if getattr(args, name) is not None
    ]


def _check_nothing_to_train(args: argparse.Namespace, option: str) -> None:
    """Refuse training options given with ``option`` (one of :data:`MODEL_OPTIONS`), which
    trains nothing but its own part: said, not silently dropped, as the user may think they
    trained."""
    from controller.errors import ConfigError

    ignored = [
        f"--{name.replace('_', '-')}"
        for name in (
            "out",
            "reuse_finder",
            "reuse_classifier",
            "finder_epochs",
            "classifier_epochs",
            "finder_deep_width",
            "classifier_any_tilt",
            "label_box_lessons",
        )
        if getattr(args, name) is not None
    ] + (["--no-quantise"] if args.no_quantise else [])
    if option in ("--calibrate-confidence", "--flower-look") and args.tune_tables is not None:
        ignored.append("--tune-tables")  # no setting is chosen on tables
    # the flower look is fitted, so it takes a seed
    seeded = option == "--flower-look"
    ignored += [
        flag
        for flag, given in (
            ("--preset", args.preset != "full"),
            ("--seed", args.seed != 0 and not seeded),
        )
        if given
    ]
    if ignored:
        what = "trains nothing but the flower look" if seeded else "trains nothing"
        raise ConfigError(f"{option} {what}, so {', '.join(ignored)} would do nothing")


def _check_kept_parts(args: argparse.Namespace) -> None:
    """Refuse options that shape a part --reuse-finder or --reuse-classifier keeps."""
    from controller.errors import ConfigError

    for kept, part, options in (
        ("reuse_finder", "finder", ("finder_epochs", "finder_deep_width")),
        (
            "reuse_classifier",
            "classifier",
            ("classifier_epochs", "classifier_any_tilt", "label_box_lessons"),
        ),
    ):
        given = [f"--{o.replace('_', '-')}" for o in options if getattr(args, o) is not None]
        if getattr(args, kept) is not None and given:
            raise ConfigError(
                f"--{kept.replace('_', '-')} keeps the {part}, so {', '.join(given)} would do "
                "nothing"
            )


def _preset_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`~vision.training.train.TrainConfig` fields the options given set over the
    preset's (an option left out leaves the preset's value)."""
    overrides: dict[str, Any] = {}
    for option, field in (
        ("tune_tables", "tune_table_frames"),
        ("finder_epochs", "finder_epochs"),
        ("classifier_epochs", "classifier_epochs"),
        ("finder_deep_width", "finder_deep_width"),
        ("classifier_any_tilt", "classifier_any_tilt"),
    ):
        if getattr(args, option) is not None:
            overrides[field] = getattr(args, option)
    if args.label_box_lessons:
        overrides["label_box_lessons"] = args.label_box_lessons
    if args.no_quantise:
        overrides["quantise"] = False
    return overrides


def _check_model_to_write(model_dir: Path) -> None:
    """Refuse, before any photo is read, a folder that is not a model or that cannot be
    written into (said now, not after the work). Its flower look is not loaded here:
    ``--flower-look`` and ``--quantise`` fit it again, and a look that no longer fits must not
    stop them (the others say so when they read through it)."""
    from controller.errors import ModelError
    from vision.files import check_folder_takes_files
    from vision.recognizer import TileRecognizer

    TileRecognizer(model_dir, flower_look=False)
    try:
        check_folder_takes_files(model_dir)
    except OSError as exc:
        raise ModelError(f"cannot write into {model_dir}: {exc.strerror or exc}") from None


def _retune(
    model_dir: Path,
    data: Path,
    threads: int,
    tables: int,
    quantise: bool,
    calibrate_only: bool = False,
) -> int:
    """``train --retune``, ``--quantise`` or (``calibrate_only``) ``--calibrate-confidence``."""
    from controller.errors import ConfigError, ModelError
    from vision.recognizer import HEAD_FILE
    from vision.training.confidence_fit import calibrate_model
    from vision.training.dataset import load_photos
    from vision.training.flower_look_fit import LookConfig, fit_flower_look
    from vision.training.quantise import classifier_path, is_quantised
    from vision.training.train import TrainConfig, quantise_model, tune

    _check_model_to_write(model_dir)
    photos = (
        load_photos(data / "real-photos", ["validation"]) if (data / "real-photos").is_dir() else []
    )
    if not photos:
        raise ConfigError(f"no validation photos under {data / 'real-photos'} to tune on")

    def log(msg: str) -> None:
        print(msg, flush=True)

    if calibrate_only:
        manifest = calibrate_model(model_dir, photos, threads, log)
        print(
            f"{model_dir / 'model.json'}: confidence_temperature {manifest.confidence_temperature}"
        )
        return ExitCode.OK
    if quantise:
        already = f"the classifier of {model_dir} is quantised already"
        if is_quantised(classifier_path(model_dir)):
            raise ModelError(f"{already} (to choose its settings again, use --retune)")
        if (model_dir / HEAD_FILE).exists():
            raise ModelError(
                f"{model_dir} is enrolled ({HEAD_FILE} was fitted to its float classifier): "
                "quantise the model it was enrolled from, then enrol again"
            )
        cfg = TrainConfig.preset("full", data, model_dir, threads=threads, log=log)
        train_photos = load_photos(data / "real-photos", ["train"])
        if quantise_model(model_dir, train_photos, photos, cfg, keep_float=False) is None:
            raise ModelError(f"{already} (to choose its settings again, use --retune)")
        # the look fitted to the float classifier was removed: fitted again on the int8 one,
        # before the settings that read through it are chosen
        fit_flower_look(model_dir, train_photos, photos, data, LookConfig(threads=threads), log)
    manifest = tune(model_dir, photos, threads, log, tables)
    keys = (
        "finder_threshold",
        "rescale",
        "rescale_above",
        "rescale_to",
        "reread_below",
        "box_scale",
        "confidence_temperature",
    )
    layout = manifest.to_json()
    print(f"{model_dir / 'model.json'}: " + ", ".join(f"{k} {layout.get(k)}" for k in keys))
    return ExitCode.OK


def _fit_flower_look(model_dir: Path, data: Path, threads: int, seed: int) -> int:
    """``train --flower-look``."""
    from controller.errors import ConfigError
    from vision.training.dataset import load_photos
    from vision.training.flower_look_fit import LookConfig, fit_flower_look

    _check_model_to_write(model_dir)
    photos = data / "real-photos"
    if not photos.is_dir():
        raise ConfigError(f"no real photos under {photos} to fit the flower look on")
    manifest = fit_flower_look(
        model_dir,
        load_photos(photos, ["train"]),
        load_photos(photos, ["validation"]),
        data,
        LookConfig(seed=seed, threads=threads),
        log=lambda msg: print(msg, flush=True),
    )
    record = manifest.training.get("flower_look", {})
    print(
        f"{model_dir / 'model.json'}: flower look "
        + ("fitted" if record.get("fitted") else "not fitted")
        + f", flower_look_above {manifest.flower_look_above}, "
        f"confidence_temperature {manifest.confidence_temperature}"
    )
    return ExitCode.OK


def enrol_command(args: argparse.Namespace) -> int:
    from vision import enrol
    from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer

    model_dir = args.model or DEFAULT_MODEL_DIR
    out: Path = args.out
    # before anything is written: labels.json and check.png must not land in the model either
    enrol.check_out_folder(model_dir, out)
    refit = args.labels is not None and args.labels.exists()
    if refit and (args.photos or args.layout):
        raise enrol.EnrolError(
            f"{args.labels} exists, so its tiles are used and the photos and --layout given "
            "would be ignored: give either the labels file or photos (with a new --labels)"
        )
    rec = TileRecognizer(model_dir)
    if out.exists() and not out.is_dir():
        raise enrol.EnrolError(f"cannot use {out} as the output folder: it is a file")
    if refit:
        samples = enrol.read_labels(args.labels)
        print(f"{len(samples)} tiles from {args.labels}")
    else:
        samples = _label_by_layout(args, rec, out)
    if args.check_only:
        return ExitCode.OK
    _make_out(out)
    _fit_enrolled(rec, samples, out)
    return ExitCode.OK


def _make_out(out: Path) -> None:
    """Make the output folder, once there is something to write: photos that cannot be used
    leave no folder."""
    from vision import enrol

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise enrol.EnrolError(f"cannot use {out} as the output folder: {exc}") from None


def _label_by_layout(args: argparse.Namespace, rec: TileRecognizer, out: Path) -> list[EnrolSample]:
    """The tiles found in the photos, each labelled by its place in the layout; writes the
    labels and a picture of them for the user to check."""
    from vision import enrol
    from vision.files import write_picture

    if not args.photos:
        raise enrol.EnrolError("give photos of your tiles laid out (or --labels FILE)")
    layout = enrol.parse_layout(args.layout or enrol.DEFAULT_LAYOUT)
    samples = []
    for photo in args.photos:
        samples.extend(enrol.samples_from_grid(rec, photo, layout))
    labels_path = args.labels or out / "labels.json"
    _make_out(out)
    enrol.write_labels(labels_path, samples)
    try:
        write_picture(out / "check.png", enrol.contact_sheet(samples))
    except (OSError, ValueError) as exc:
        raise enrol.EnrolError(f"cannot write {out / 'check.png'}: {exc}") from None
    wrong = [s for s in samples if s.read_as != s.label]
    print(
        f"{len(samples)} tiles labelled from the layout; the model read {len(wrong)} "
        f"otherwise. Check {labels_path} and {out / 'check.png'}."
    )
    return samples


def _fit_enrolled(rec: TileRecognizer, samples: list[EnrolSample], out: Path) -> None:
    """Refit the classifier's head to the labelled tiles, write the enrolled model to ``out``
    and say how it reads them against the model it adapts."""
    from vision import enrol

    weight, bias = enrol.base_head(rec.model_dir, rec.embedding_size)
    groups = enrol.embeddings_by_photo(rec, samples)
    emb, labels = enrol.stacked(groups)
    before = enrol.accuracy(emb, labels, weight, bias)
    new_w, new_b = enrol.fit_head(emb, labels, weight, bias)
    after = enrol.accuracy(emb, labels, new_w, new_b)
    cross = enrol.cross_photo_accuracy(groups, weight, bias)
    info = {
        "base_model": str(rec.model_dir),
        "tiles": len(samples),
        "photos": sorted({str(s.image) for s in samples}),
        "accuracy_before": round(before, 4),
        "accuracy_after": round(after, 4),
    }
    if cross is not None:
        info["photo_left_out_before"], info["photo_left_out_after"] = (round(v, 4) for v in cross)
    enrol.save_enrolled(rec.model_dir, out, new_w, new_b, info)
    print(
        f"enrolled model written to {out}: it reads {after:.1%} of your tiles' views "
        f"(the model before: {before:.1%}). Use it with --model {out}."
    )
    if cross is None:
        print(
            "With one photo there is no photo to check it on: enrol two or more (other light, "
            "other places on the table) to see how it reads a photo it did not learn from."
        )
        return
    print(
        f"Each photo left out of the fit and read by the others' fit: {cross[1]:.1%} right "
        f"(the model before: {cross[0]:.1%})."
    )
    if cross[1] < cross[0]:
        print(
            "warning: on photos it did not learn from, the enrolled model reads your tiles "
            "worse than the model it adapts: keep that model, or enrol more photos of the "
            "set in the table's own light",
            file=sys.stderr,
        )
