"""An audit sheet for the real photos' labels: every photo of a split read by the recogniser,
the worst drawn with the labelled boxes and the detections over it, and a verdict column for
a person to fill in; then the tile F1 over the photos each verdict names.

    python -m bench.label_audit OUT [--split held_out] [--photos 60] [--model DIR] [--data DIR]
    python -m bench.label_audit OUT --blind [--photos 40] [--seed 0]
    python -m bench.label_audit --score OUT/audit.csv [--split held_out] [--model DIR]
    python -m bench.label_audit --score SHEET --agree SECOND_SHEET

The first form writes ``OUT/audit.csv`` (one row per photo, worst tile F1 first: its tiles,
F1 over the labelled area, misses by cause as :func:`vision.training.dataset.miss_causes` splits
them, how much its labels cover one another, our box's side over the label's), ``OUT/index.html``
(the rows with their pictures) and a picture per drawn photo:

- a labelled box matched by a detection of its label at IoU >= 0.5: green;
- a labelled box missed: magenta, with its label;
- a detection matched: thin blue; unmatched inside the labelled area (a false find): red,
  with its label; unmatched outside it (not counted): grey.

With ``--blind`` the recogniser is not run: the photos come in a shuffled order (``--seed``)
and each picture shows the labelled boxes alone, so that a verdict cannot lean on how the
recogniser did on the photo; the sheet holds no figures. The verdicts of a blind audit of a
random sample say how the figure over fitting photos compares with the whole:
``bench/audits/held_out_blind_seed0.csv`` holds one person's verdicts on every held-out
photo in seed 0's order, and ``held_out_blind_seed1_second.csv`` a second auditor's, blind
to the first, in seed 1's (figures and how far to trust them in ``docs/benchmarks.md``).
``--agree`` says how two sheets agree and scores the photos both call alike.

The ``verdict`` column is for the auditor: ``fits`` where the labelled boxes sit on their
tiles as a person would draw them, ``misfit`` where they do not (shifted off the tiles, or
enlarged to take in the neighbours), empty where not looked at. ``--score`` reads the verdicts
back, runs the recogniser over the split again, and prints the tile F1 over the labelled area
for every photo and for each verdict's photos apart. The headline figure of
``docs/benchmarks.md`` stays the one over every photo: which photos fit is for whoever owns
the target to decide, and this sheet is the evidence to decide it on.
"""

from __future__ import annotations

import argparse
import csv
import html
import sys
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from controller.errors import MahjongTableError
from controller.exit_codes import ExitCode
from vision.labels import label_name
from vision.recognizer import TileRecognizer
from vision.training.dataset import (
    MISS_CAUSES,
    SPLITS,
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

AUDITS = Path(__file__).resolve().parent / "audits"
MEASURE_SHEETS = (AUDITS / "held_out_blind_seed0.csv", AUDITS / "held_out_blind_seed1_second.csv")
"""The two blind audits of the held-out labels: the photos both call ``fits`` are the ones the
vision target is measured over (:func:`measured_photos`)."""
VERDICTS = ("fits", "misfit")
"""What an auditor may write in the ``verdict`` column (or leave it empty)."""
BLIND_COLUMNS = ("rank", "photo", "source", "picture", "verdict")
"""The columns of a blind sheet (no figures)."""
COLUMNS = (
    "rank",
    "photo",
    "source",
    "tiles",
    "f1",
    "overlap",
    *(c.replace(" ", "_") for c in MISS_CAUSES),
    "box_ratio",
    "picture",
    "verdict",
)

# BGR
MATCHED = (60, 190, 60)
MISSED = (220, 40, 220)
FOUND = (230, 120, 30)
FALSE = (40, 40, 230)
SILENT = (150, 150, 150)


class AuditError(Exception):
    """A verdict sheet that cannot be read (the message says where and why)."""


def figures(preds: list[Prediction], photo: LabelledPhoto) -> dict[str, object]:
    """One photo's row: tiles, F1 over the labelled area, misses by cause, label overlap and
    the median of our box's side over the label's where they match."""
    pairs = match_detections(preds, photo.boxes, photo.labels)
    f = tile_f1([(preds, photo)], labelled_area_only=True)
    ratios = []
    for i, j in pairs:
        if j is not None:
            (_, _, w, h), label_box = preds[i][0], photo.boxes[j]
            ratios.append(float(np.sqrt(w * h / max(1e-9, label_box[2] * label_box[3]))))
    row: dict[str, object] = {
        "photo": photo.path.name,
        "source": photo.source,
        "tiles": len(photo.labels),
        "f1": round(f["f1"], 3),
        "overlap": round(label_overlap(photo.boxes), 3),
    }
    for cause, n in miss_causes(preds, photo.boxes, photo.labels, pairs).items():
        row[cause.replace(" ", "_")] = n
    row["box_ratio"] = round(float(np.median(ratios)), 2) if ratios else ""
    return row


def draw(img: np.ndarray, photo: LabelledPhoto, preds: list[Prediction] | None) -> np.ndarray:
    """The photo with its labelled boxes and the detections drawn over it (colours as in the
    module's docstring), doubled in size when small so that the labels can be read. With
    ``preds`` None (a blind audit) only the labelled boxes, all green, without names."""
    scale = 2 if max(img.shape[:2]) <= 800 else 1
    out = cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_LINEAR)

    def rect(box, colour, thick, text=""):
        x, y, w, h = (float(v) * scale for v in box)
        p0, p1 = (round(x), round(y)), (round(x + w), round(y + h))
        cv2.rectangle(out, p0, p1, colour, thick)
        if text:
            cv2.putText(out, text, (p0[0] + 2, p1[1] - 3), cv2.FONT_HERSHEY_SIMPLEX, 0.45,
                        colour, 1, cv2.LINE_AA)  # fmt: skip

    if preds is None:
        for box in photo.boxes:
            rect(box, MATCHED, 2)
        return out
    pairs = match_detections(preds, photo.boxes, photo.labels)
    hit = {j for _, j in pairs if j is not None}
    silent = outside_labelled_area(preds, photo)
    for j, (box, label) in enumerate(zip(photo.boxes, photo.labels, strict=True)):
        if j in hit:
            rect(box, MATCHED, 2)
        else:
            rect(box, MISSED, 2, label_name(int(label)))
    for i, j in pairs:
        box, label, _ = preds[i]
        if j is not None:
            rect(box, FOUND, 1)
        elif silent[i]:
            rect(box, SILENT, 1)
        else:
            # a false find's label goes at its top, clear of a missed label's at the bottom
            rect(box, FALSE, 1)
            x, y = (round(float(v) * scale) for v in box[:2])
            cv2.putText(out, label_name(label), (x + 2, y + 12), cv2.FONT_HERSHEY_SIMPLEX,
                        0.45, FALSE, 1, cv2.LINE_AA)  # fmt: skip
    return out


def read_verdicts(path: Path, photos: Sequence[LabelledPhoto] | None) -> dict[str, str]:
    """``{photo file name: verdict}`` for the rows of an audit sheet whose verdict is filled
    in. :class:`AuditError` for a sheet without the ``photo`` and ``verdict`` columns, a
    verdict other than :data:`VERDICTS`, a photo named twice, or one not in ``photos``
    (``None``: the names are not checked against any photos)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read the audit sheet {path}: {exc}") from None
    rows = csv.DictReader(text.splitlines())
    missing = {"photo", "verdict"} - set(rows.fieldnames or ())
    if missing:
        raise AuditError(f"{path} has no {' or '.join(sorted(missing))} column")
    known = None if photos is None else {p.path.name for p in photos}
    out: dict[str, str] = {}
    seen: set[str] = set()  # with or without a verdict: a second row would be ambiguous
    for n, row in enumerate(rows, 2):
        name = (row["photo"] or "").strip()
        verdict = (row["verdict"] or "").strip().lower()
        if name in seen:
            raise AuditError(f"{path} line {n}: {name} is named twice")
        seen.add(name)
        if known is not None and name not in known:
            raise AuditError(f"{path} line {n}: {name!r} is not a photo of this split")
        if not verdict:
            continue
        if verdict not in VERDICTS:
            raise AuditError(
                f"{path} line {n}: verdict {row['verdict']!r} for {name}; write "
                f"{' or '.join(VERDICTS)}, or leave it empty"
            )
        out[name] = verdict
    return out


def write_sheet(
    out: Path,
    rows: list[dict[str, object]],
    pictures: dict[str, str],
    columns: Sequence[str] = COLUMNS,
) -> None:
    """``audit.csv`` and ``index.html`` in ``out`` for ``rows`` (already ranked); the blind
    form when ``columns`` is :data:`BLIND_COLUMNS`."""
    blind = tuple(columns) == BLIND_COLUMNS
    with (out / "audit.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns, restval="", extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({**row, "picture": pictures.get(str(row["photo"]), ""), "verdict": ""})
    cells = []
    for row in rows:
        pic = pictures.get(str(row["photo"]))
        if not pic:
            continue
        facts = ", ".join(f"{k} {row[k]}" for k in columns[3:-2] if row.get(k, "") != "")
        cells.append(
            f'<figure><img src="{html.escape(pic)}" loading="lazy">'
            f"<figcaption>#{row['rank']} {html.escape(str(row['photo']))}<br>{facts}"
            "</figcaption></figure>"
        )
    legend = (
        "the labelled boxes alone, in a shuffled order."
        if blind
        else (
            "labelled box matched: green; labelled box missed: magenta, with its label; detection "
            "matched: thin blue; false find inside the labelled area: red, with its label; "
            "unmatched outside it (not counted): grey."
        )
    )
    (out / "index.html").write_text(
        "<!doctype html><meta charset=utf-8><title>Label audit</title>"
        "<style>body{font:14px sans-serif}figure{display:inline-block;margin:8px;"
        "vertical-align:top;max-width:660px}img{max-width:640px}</style>"
        f"<h1>Label audit{', blind' if blind else ', worst tile F1 first'}</h1><p>{legend}</p>"
        "<p>Write <b>fits</b> (the boxes sit on their tiles) or <b>misfit</b> (shifted off "
        "them, or enlarged to take in the neighbours) "
        "in audit.csv's verdict column for each photo looked at, then run <code>python -m "
        f"bench.label_audit --score {html.escape(str(out / 'audit.csv'))}</code>.</p>"
        + "".join(cells),
        encoding="utf-8",
    )


def score(
    verdicts: dict[str, str], photos: Sequence[LabelledPhoto], preds: Sequence[list[Prediction]]
) -> dict[str, dict[str, float]]:
    """Tile F1 over the labelled area and the misses by cause (:data:`MISS_CAUSES`) for every
    photo and for each verdict's photos (and the photos not audited), keyed ``all``,
    ``fits``, ``misfit``, ``not audited``."""
    groups: dict[str, list[tuple[list[Prediction], LabelledPhoto]]] = {
        "all": [],
        **{v: [] for v in VERDICTS},
        "not audited": [],
    }
    misses: dict[str, dict[str, int]] = {}  # each photo matched once, for every group it is in
    for p, photo in zip(preds, photos, strict=True):
        groups["all"].append((p, photo))
        groups[verdicts.get(photo.path.name, "not audited")].append((p, photo))
        pairs = match_detections(p, photo.boxes, photo.labels)
        misses[photo.path.name] = miss_causes(p, photo.boxes, photo.labels, pairs)
    out = {}
    for name, group in groups.items():
        row: dict[str, float] = {
            **tile_f1(group, labelled_area_only=True),
            "photos": len(group),
            **dict.fromkeys(MISS_CAUSES, 0),  # a group may be empty (every photo audited)
        }
        for _, photo in group:
            for cause, n in misses[photo.path.name].items():
                row[cause] = row.get(cause, 0) + n
        out[name] = row
    return out


def agreement(a: dict[str, str], b: dict[str, str], names: Sequence[str]) -> dict[str, float]:
    """How two auditors' verdicts on ``names`` agree: the photos each pair of verdicts names
    (``fits/misfit`` is fits in ``a`` and misfit in ``b``; ``-`` for none), the share of the
    photos both judged on which they agree, and Cohen's kappa there (agreement beyond what
    two auditors calling fits as often as these would reach by chance)."""
    out: dict[str, float] = {}
    for name in names:
        key = f"{a.get(name, '-')}/{b.get(name, '-')}"
        out[key] = out.get(key, 0) + 1
    both = [n for n in names if n in a and n in b]
    if both:
        agree = sum(a[n] == b[n] for n in both) / len(both)
        fa = sum(a[n] == "fits" for n in both) / len(both)
        fb = sum(b[n] == "fits" for n in both) / len(both)
        chance = fa * fb + (1 - fa) * (1 - fb)
        out["agreement"] = agree
        out["kappa"] = (agree - chance) / (1 - chance) if chance < 1 else 1.0
    return out


def agreed(a: dict[str, str], b: dict[str, str]) -> dict[str, str]:
    """The verdicts two sheets give alike (a photo they differ on, or that either left
    empty, is left out)."""
    return {name: v for name, v in a.items() if b.get(name) == v}


def measured_photos(sheets: Sequence[Path] = MEASURE_SHEETS) -> frozenset[str]:
    """The file names of the photos every sheet calls ``fits``: by default the held-out
    photos both blind audits find labelled on their tiles, over which the vision target is
    measured (the sheets are committed, so the subset is fixed). :class:`AuditError` for a
    sheet that cannot be read."""
    first, *rest = (read_verdicts(path, None) for path in sheets)
    for other in rest:
        first = agreed(first, other)
    return frozenset(name for name, v in first.items() if v == "fits")


def blind_sheet(out: Path, photos: Sequence[LabelledPhoto], drawn: int, seed: int) -> None:
    """The blind sheet: ``photos`` shuffled by ``seed``, the first ``drawn`` pictured with
    their labelled boxes alone."""
    out.mkdir(parents=True, exist_ok=True)
    order = np.random.default_rng(seed).permutation(len(photos))
    rows, pictures = [], {}
    for rank, k in enumerate(order, 1):
        photo = photos[k]
        rows.append({"rank": rank, "photo": photo.path.name, "source": photo.source})
        if rank <= drawn:
            pictures[photo.path.name] = name = f"{rank:03d}.png"
            cv2.imwrite(str(out / name), draw(photo.image(), photo, None))
    write_sheet(out, rows, pictures, BLIND_COLUMNS)


def ranked_sheet(
    out: Path,
    photos: Sequence[LabelledPhoto],
    preds: Sequence[list[Prediction]],
    drawn: int,
) -> None:
    """The sheet ranked by tile F1, worst first, the first ``drawn`` pictured with the
    labelled boxes and the detections (each pictured photo read from disk again, so that the
    split's pictures are not all held at once)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [figures(p, photo) for p, photo in zip(preds, photos, strict=True)]
    order = sorted(range(len(rows)), key=lambda k: (rows[k]["f1"], -rows[k]["overlap"]))
    ranked, pictures = [], {}
    for rank, k in enumerate(order, 1):
        ranked.append({"rank": rank, **rows[k]})
        if rank <= drawn:
            pictures[photos[k].path.name] = name = f"{rank:03d}.png"
            cv2.imwrite(str(out / name), draw(photos[k].image(), photos[k], preds[k]))
    write_sheet(out, ranked, pictures)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, nargs="?", help="folder for the audit sheet")
    ap.add_argument("--score", type=Path, help="an audit sheet with verdicts filled in")
    ap.add_argument(
        "--agree",
        type=Path,
        metavar="SHEET",
        help="with --score: a second auditor's sheet; say how the two agree, and score the "
        "photos both call alike",
    )
    ap.add_argument("--data", type=Path, default=shared_data_dir())
    ap.add_argument("--split", default="held_out", choices=SPLITS)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--photos", type=int, default=60, help="how many photos to picture")
    ap.add_argument("--limit", type=int, help="only the split's first photos (a quick look)")
    ap.add_argument(
        "--blind", action="store_true", help="labelled boxes only, shuffled, no recogniser"
    )
    ap.add_argument("--seed", type=int, default=0, help="the blind sheet's shuffle")
    args = ap.parse_args(argv)
    if (args.out is None) == (args.score is None):
        ap.error("give either an output folder or --score SHEET")
    if args.blind and args.out is None:
        ap.error("--blind writes a sheet: give an output folder")
    if args.agree is not None and args.score is None:
        ap.error("--agree compares a sheet with the one --score reads: give --score too")
    for name in ("limit", "photos"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            ap.error(f"--{name} must be 1 or more")  # -1 would drop the last photo silently
    try:
        return _run(args)
    except (AuditError, MahjongTableError, OSError) as exc:  # a bad sheet, no data or model
        print(f"label_audit: {exc}", file=sys.stderr)
        return ExitCode.INPUT


def _run(args: argparse.Namespace) -> int:
    split = load_photos(args.data / "real-photos", [args.split])
    photos = split[: args.limit]
    drawn = min(args.photos, len(photos))
    if args.blind:
        blind_sheet(args.out, photos, drawn, args.seed)
        print(
            f"{len(photos)} {args.split} photos shuffled, the first {drawn} pictured with their "
            f"labels alone: {args.out / 'index.html'}; verdicts go in {args.out / 'audit.csv'}"
        )
        return ExitCode.OK
    verdicts = {}
    if args.score is not None:
        # a sheet that cannot be read is said before the photos are read; it is checked
        # against the whole split, and only the photos looked at are scored
        looked_at = {p.path.name for p in photos}
        verdicts = {
            name: v for name, v in read_verdicts(args.score, split).items() if name in looked_at
        }
        if args.agree is not None:
            second = {
                name: v for name, v in read_verdicts(args.agree, split).items() if name in looked_at
            }
            agree = agreement(verdicts, second, [p.path.name for p in photos])
            pairs = ", ".join(f"{k} {int(v)}" for k, v in agree.items() if "/" in k)
            print(f"{args.score.name} / {args.agree.name}, photos by verdicts: {pairs}")
            if "agreement" in agree:
                print(
                    f"  agreement on the photos both judged {agree['agreement']:.3f}, "
                    f"Cohen's kappa {agree['kappa']:.2f}"
                )
            verdicts = agreed(verdicts, second)
    rec = TileRecognizer(args.model, threads=2)
    preds = [[(d.box, d.label, d.confidence) for d in rec.detect(p.image())] for p in photos]
    if args.score is not None:
        print(
            f"{len(photos)} {args.split} photos, {len(verdicts)} audited; tile F1 over the "
            f"labelled area, and the labelled tiles missed by cause:"
        )
        both = {"fits": "both fit", "misfit": "both misfit", "not audited": "not agreed"}
        for name, f in score(verdicts, photos, preds).items():
            misses = ", ".join(f"{c} {int(f[c])}" for c in MISS_CAUSES)
            name = both.get(name, name) if args.agree is not None else name
            print(
                f"  {name:<12} {int(f['photos']):>4} photos  P {f['precision']:.3f}  "
                f"R {f['recall']:.3f}  F1 {f['f1']:.3f}  ({int(f['tiles'])} tiles; {misses})"
            )
        return ExitCode.OK
    ranked_sheet(args.out, photos, preds, drawn)
    whole = tile_f1(list(zip(preds, photos, strict=True)), labelled_area_only=True)
    print(
        f"{len(photos)} {args.split} photos, tile F1 over the labelled area {whole['f1']:.3f}; "
        f"the worst {drawn} pictured: {args.out / 'index.html'}; verdicts go in "
        f"{args.out / 'audit.csv'}"
    )
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
