"""The label audit sheet: its pictures, its verdicts read back, and the figures per verdict."""

import csv
from pathlib import Path

import numpy as np
import pytest

from bench import label_audit
from vision.training.dataset import MISS_CAUSES, LabelledPhoto, tile_f1


def _photo(name: str, boxes, labels, size=(200, 100)) -> LabelledPhoto:
    return LabelledPhoto(
        Path("/nowhere") / name,
        name.split(".")[0],
        size,
        np.array(boxes, np.float32).reshape(-1, 4),
        np.array(labels, np.int64),
    )


def _sheet(tmp_path: Path, rows: list[tuple[str, str]], header=("photo", "verdict")) -> Path:
    path = tmp_path / "audit.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rank", *header])
        for k, row in enumerate(rows, 1):
            w.writerow([k, *row])
    return path


PHOTOS = [_photo(f"p{k}.jpg", [(10, 10, 20, 30)], [0]) for k in range(3)]


def test_verdicts_are_read_back_and_empty_ones_left_out(tmp_path):
    sheet = _sheet(tmp_path, [("p0.jpg", "fits"), ("p1.jpg", " MISFIT "), ("p2.jpg", "")])
    assert label_audit.read_verdicts(sheet, PHOTOS) == {"p0.jpg": "fits", "p1.jpg": "misfit"}


@pytest.mark.parametrize(
    ("rows", "header", "says"),
    [
        ([("p0.jpg", "fits")], ("photo", "verdict_"), "no verdict column"),
        ([("p0.jpg", "fine")], ("photo", "verdict"), "line 2: verdict 'fine' for p0.jpg"),
        ([("p9.jpg", "fits")], ("photo", "verdict"), "'p9.jpg' is not a photo of this split"),
        ([("p0.jpg", "fits"), ("p0.jpg", "")], ("photo", "verdict"), "line 3: p0.jpg is named"),
        ([("p0.jpg", ""), ("p0.jpg", "misfit")], ("photo", "verdict"), "line 3: p0.jpg is named"),
    ],
)
def test_a_sheet_that_cannot_be_read_says_where_and_why(tmp_path, rows, header, says):
    with pytest.raises(label_audit.AuditError, match=says):
        label_audit.read_verdicts(_sheet(tmp_path, rows, header), PHOTOS)


def test_a_missing_sheet_is_an_audit_error(tmp_path):
    with pytest.raises(label_audit.AuditError, match="cannot read the audit sheet"):
        label_audit.read_verdicts(tmp_path / "none.csv", PHOTOS)


def test_the_figures_per_verdict_split_the_photos():
    right = [((10.0, 10.0, 20.0, 30.0), 0, 0.9)]
    wrong = [((10.0, 10.0, 20.0, 30.0), 5, 0.9)]
    preds = [right, wrong, right]
    out = label_audit.score({"p0.jpg": "fits", "p1.jpg": "misfit"}, PHOTOS, preds)
    assert [out[k]["photos"] for k in ("all", "fits", "misfit", "not audited")] == [3, 1, 1, 1]
    assert out["fits"]["f1"] == 1.0 and out["misfit"]["f1"] == 0.0
    assert out["misfit"]["misread"] == 1 and out["all"]["misread"] == 1
    whole = tile_f1(list(zip(preds, PHOTOS, strict=True)), labelled_area_only=True)
    assert out["all"]["f1"] == pytest.approx(whole["f1"])


def test_a_sheet_with_every_photo_audited_scores_an_empty_group_as_empty():
    right = [((10.0, 10.0, 20.0, 30.0), 0, 0.9)]
    verdicts = {"p0.jpg": "fits", "p1.jpg": "misfit", "p2.jpg": "fits"}
    out = label_audit.score(verdicts, PHOTOS, [right, right, right])
    assert out["not audited"]["photos"] == 0
    assert [out["not audited"][c] for c in MISS_CAUSES] == [0] * len(MISS_CAUSES)


def test_a_photo_read_right_has_no_misses():
    photo = _photo("a.jpg", [(10, 10, 20, 30), (40, 10, 20, 30)], [0, 1])
    preds = [((10.0, 10.0, 20.0, 30.0), 0, 0.9), ((40.0, 10.0, 20.0, 30.0), 1, 0.8)]
    row = label_audit.figures(preds, photo)
    assert row["f1"] == 1.0 and row["box_ratio"] == 1.0 and row["tiles"] == 2
    assert [row[c] for c in ("box", "misread", "box_and_misread", "not_found")] == [0] * 4


def _colour_at(img: np.ndarray, xy) -> tuple[int, ...]:
    # the pictures are drawn at twice the photo's size
    x, y = xy
    return tuple(int(v) for v in img[2 * y, 2 * x])


def test_the_picture_colours_each_box_by_what_it_is():
    photo = _photo("a.jpg", [(10, 10, 20, 30), (60, 10, 20, 30)], [0, 1])
    img = np.zeros((100, 200, 3), np.uint8)
    preds = [
        ((12.0, 12.0, 20.0, 30.0), 0, 0.9),  # right: the label matched
        ((35.0, 10.0, 20.0, 30.0), 3, 0.9),  # a false find between the labels
        ((170.0, 60.0, 20.0, 30.0), 3, 0.9),  # outside the labelled area: not counted
    ]
    out = label_audit.draw(img, photo, preds)
    assert out.shape == (200, 400, 3)
    assert _colour_at(out, (10, 25)) == label_audit.MATCHED  # the matched label's left edge
    assert _colour_at(out, (60, 25)) == label_audit.MISSED
    assert _colour_at(out, (12, 30)) == label_audit.FOUND
    assert _colour_at(out, (35, 30)) == label_audit.FALSE
    assert _colour_at(out, (170, 75)) == label_audit.SILENT
    blind = label_audit.draw(img, photo, None)
    assert _colour_at(blind, (60, 25)) == label_audit.MATCHED  # labels alone, one colour


def test_blind_sheet_then_scored_on_the_real_photos(shared_data, tmp_path, capsys):
    out = tmp_path / "blind"
    argv = ["--data", str(shared_data), "--limit", "5"]
    assert label_audit.main([str(out), "--blind", "--photos", "2", *argv]) == 0
    rows = list(csv.DictReader((out / "audit.csv").open()))
    assert len(rows) == 5 and sorted(p.name for p in out.glob("*.png")) == ["001.png", "002.png"]
    assert "f1" not in rows[0]  # a blind sheet holds no figures
    assert "001.png" in (out / "index.html").read_text()
    rows[0]["verdict"], rows[1]["verdict"] = "fits", "misfit"
    with (out / "audit.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, rows[0].keys())
        w.writeheader()
        w.writerows(rows)
    capsys.readouterr()
    assert label_audit.main(["--score", str(out / "audit.csv"), *argv]) == 0
    said = capsys.readouterr().out
    assert "5 held_out photos, 2 audited" in said
    assert "fits            1 photos" in said and "not audited     3 photos" in said


def test_two_auditors_agreement_and_the_photos_they_call_alike():
    a = {"p0.jpg": "fits", "p1.jpg": "misfit", "p2.jpg": "fits", "p3.jpg": "fits"}
    b = {"p0.jpg": "fits", "p1.jpg": "fits", "p2.jpg": "fits", "p4.jpg": "misfit"}
    names = [f"p{k}.jpg" for k in range(5)]
    out = label_audit.agreement(a, b, names)
    assert {k: v for k, v in out.items() if "/" in k} == {
        "fits/fits": 2,
        "misfit/fits": 1,
        "fits/-": 1,
        "-/misfit": 1,
    }
    # both judged three photos and agree on two; a calls fits 2/3, b 3/3: chance 2/3
    assert out["agreement"] == pytest.approx(2 / 3) and out["kappa"] == pytest.approx(0.0)
    assert label_audit.agreed(a, b) == {"p0.jpg": "fits", "p2.jpg": "fits"}
    same = label_audit.agreement(a, a, names)
    assert same["agreement"] == 1.0 and same["kappa"] == 1.0
    assert "agreement" not in label_audit.agreement(a, {}, names)


def test_a_second_sheet_scores_the_photos_both_call_alike(shared_data, tmp_path, capsys):
    from vision.training.dataset import load_photos

    names = [p.path.name for p in load_photos(shared_data / "real-photos", ["held_out"])][:4]
    first = _sheet(tmp_path, list(zip(names, ["fits", "fits", "misfit", ""], strict=True)))
    second = tmp_path / "second.csv"
    second.write_text(
        "photo,verdict\n"
        + "".join(f"{n},{v}\n" for n, v in zip(names[:2], ["fits", "misfit"], strict=True))
    )
    argv = ["--data", str(shared_data), "--limit", "4", "--score", str(first)]
    assert label_audit.main([*argv, "--agree", str(second)]) == 0
    said = capsys.readouterr().out
    assert "fits/fits 1, fits/misfit 1, misfit/- 1, -/- 1" in said
    assert "agreement on the photos both judged 0.500" in said
    assert "both fit        1 photos" in said and "not agreed      3 photos" in said
    with pytest.raises(SystemExit) as stop:
        label_audit.main([str(tmp_path / "out"), "--agree", str(second)])
    assert stop.value.code == 2 and "give --score too" in capsys.readouterr().err


def test_ranked_sheet_puts_the_worst_photos_first(shared_data, tmp_path):
    out = tmp_path / "ranked"
    argv = [str(out), "--data", str(shared_data), "--limit", "6", "--photos", "3"]
    assert label_audit.main(argv) == 0
    rows = list(csv.DictReader((out / "audit.csv").open()))
    f1 = [float(r["f1"]) for r in rows]
    assert len(rows) == 6 and f1 == sorted(f1)
    assert [r["picture"] for r in rows] == ["001.png", "002.png", "003.png", "", "", ""]


def test_a_bad_sheet_stops_before_the_photos_are_read(shared_data, tmp_path, capsys):
    sheet = _sheet(tmp_path, [("not-a-photo.jpg", "fits")])
    argv = ["--score", str(sheet), "--data", str(shared_data), "--limit", "3"]
    assert label_audit.main(argv) == 2
    assert "'not-a-photo.jpg' is not a photo of this split" in capsys.readouterr().err


def test_no_data_or_an_unknown_split_is_a_clear_failure(tmp_path, capsys):
    assert label_audit.main([str(tmp_path / "out"), "--data", str(tmp_path)]) == 2
    assert "no photos in" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        label_audit.main([str(tmp_path / "out"), "--split", "bogus"])
    assert stop.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_the_committed_audit_names_photos_of_the_held_out_split(shared_data):
    from vision.training.dataset import load_photos

    photos = load_photos(shared_data / "real-photos", ["held_out"])
    sheet = Path(label_audit.__file__).parent / "audits" / "held_out_blind_seed0.csv"
    verdicts = label_audit.read_verdicts(sheet, photos)
    assert sorted(set(verdicts.values())) == ["fits", "misfit"] and len(verdicts) == 181
    # the second auditor's, blind to the first, judged every held-out photo
    second = label_audit.read_verdicts(sheet.with_name("held_out_blind_seed1_second.csv"), photos)
    assert sorted(set(second.values())) == ["fits", "misfit"] and len(second) == 207


def test_the_measured_photos_are_those_every_sheet_calls_fitting(tmp_path):
    a = _sheet(tmp_path, [("p0.jpg", "fits"), ("p1.jpg", "fits"), ("p2.jpg", "misfit")])
    b = a.with_name("b.csv")
    b.write_text("photo,verdict\np0.jpg,fits\np1.jpg,misfit\np2.jpg,misfit\np9.jpg,fits\n")
    # misfit in both is not measured, nor a photo one sheet left out or judged otherwise
    assert label_audit.measured_photos([a, b]) == {"p0.jpg"}
    assert label_audit.measured_photos([a]) == {"p0.jpg", "p1.jpg"}
    with pytest.raises(label_audit.AuditError, match="cannot read the audit sheet"):
        label_audit.measured_photos([a, tmp_path / "none.csv"])


def test_the_committed_measure_is_taken_over_the_photos_both_audits_call_fitting(shared_data):
    from vision.training.dataset import load_photos

    photos = load_photos(shared_data / "real-photos", ["held_out"])
    fitting = label_audit.measured_photos()
    # the 124 of docs/benchmarks.md, each a held-out photo
    assert len(fitting) == 124 and fitting <= {p.path.name for p in photos}
