"""The turned-tile benchmark's geometry: a tile turned with its picture stays inside the box
the benchmark reads it at."""

import cv2
import numpy as np
import pytest

from bench import turned_bench


@pytest.mark.parametrize("angle", [0, 15, 30, 45, -30])
def test_a_turned_tile_fills_the_box_that_holds_it(angle):
    img = np.zeros((120, 160, 3), np.uint8)
    cv2.rectangle(img, (40, 30), (69, 69), (255,) * 3, -1)  # 30 x 40 px
    big, boxes = turned_bench.turned(img, np.array([[39.5, 29.5, 30.0, 40.0]]), angle)
    assert big.shape[:2] == (180, 240)
    ys, xs = np.nonzero(big.max(axis=2) > 127)
    seen = (xs.min() - 0.5, ys.min() - 0.5, xs.max() + 0.5, ys.max() + 0.5)
    x, y, w, h = boxes[0]
    assert seen == pytest.approx((x, y, x + w, y + h), abs=1.5)


def test_a_split_without_photos_is_a_clear_failure(tmp_path, capsys):
    from vision.training.dataset import split_of

    # one photo, of a source that falls in the training split
    source = next(f"src{k}" for k in range(1000) if split_of(f"src{k}") == "train")
    (tmp_path / "real-photos" / "images").mkdir(parents=True)
    (tmp_path / "real-photos" / "labels").mkdir()
    cv2.imwrite(str(tmp_path / "real-photos" / "images" / f"{source}.jpg"), np.zeros((64, 64, 3)))
    (tmp_path / "real-photos" / "labels" / f"{source}.txt").write_text("")  # no tiles
    assert turned_bench.main(["--data", str(tmp_path), "--split", "validation"]) == 2
    assert "no validation photo to read" in capsys.readouterr().err
