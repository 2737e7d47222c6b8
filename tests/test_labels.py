"""The vision labels: 0-41 are the rules' Tile values, 42 the back."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import ModelError
from controller.rules.tiles import Tile
from vision.detection import TileDetection
from vision.labels import (
    BACK,
    FLOWER_LABELS,
    LABEL_NAMES,
    NUM_LABELS,
    is_tile,
    label_from_name,
    label_name,
)


def test_labels_are_tile_values_then_the_back():
    assert NUM_LABELS == 43 and BACK == 42
    for tile in Tile:
        assert label_name(int(tile)) == tile.code
    assert label_name(BACK) == "back"
    assert [label_name(x) for x in FLOWER_LABELS] == [f"{i}f" for i in range(1, 9)]
    assert label_name(4) == "5m" and label_name(27) == "E" and label_name(34) == "1f"
    assert LABEL_NAMES[31] == "C" and len(LABEL_NAMES) == NUM_LABELS


@given(st.integers(0, NUM_LABELS - 1))
def test_names_read_back(label):
    assert label_from_name(label_name(label)) == label


def test_chinese_names_and_back_are_read():
    assert label_from_name("五万") == 4
    assert label_from_name("春") == 34
    assert label_from_name(" Back ") == BACK
    assert is_tile(0) and not is_tile(BACK)


@pytest.mark.parametrize("bad", [-1, 43, 100, True, 2.0, 42.0, "5m", np.int64(43)])
def test_not_a_label(bad):
    with pytest.raises(ModelError, match="not a tile label"):
        label_name(bad)


def test_numpy_integers_are_labels():
    # an argmax gives numpy integers: TileDetection(label=np.int64(4)).name raised
    assert label_name(np.int64(4)) == "5m" and label_name(np.int32(BACK)) == "back"
    assert (
        TileDetection(np.int64(4), 0.9, (0, 0, 10, 14), np.zeros((4, 2))).to_json()["label"] == "5m"
    )


def test_unknown_name():
    with pytest.raises(ModelError, match="'X' is not a tile label"):
        label_from_name("X")
