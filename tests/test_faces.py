"""Tile faces: the procedural set (always), the art set (from the shared data)."""

from __future__ import annotations

import numpy as np
import pytest

from controller.errors import ModelError
from controller.rules.tiles import parse_tiles
from vision.faces import FaceSet, art_faces, procedural_faces
from vision.labels import BACK, NUM_LABELS


def _distinct(faces: FaceSet) -> float:
    """The smallest mean absolute difference between any two faces of the set."""
    imgs = [faces.face(i).astype(np.float32) for i in range(NUM_LABELS)]
    return min(
        float(np.abs(imgs[i] - imgs[j]).mean())
        for i in range(NUM_LABELS)
        for j in range(i + 1, NUM_LABELS)
    )


def test_procedural_faces_cover_every_label_at_3_by_4():
    faces = procedural_faces(60)
    assert faces.size == (60, 80)
    for label in range(NUM_LABELS):
        img = faces.face(label)
        assert img.shape == (80, 60, 3) and img.dtype == np.uint8
        assert not img.flags.writeable
    # every face differs from every other one (no two labels drawn alike)
    assert _distinct(faces) > 1.0


def test_procedural_faces_are_deterministic_and_recoloured():
    a, b = procedural_faces(48), procedural_faces(48)
    assert all(np.array_equal(a.face(i), b.face(i)) for i in range(NUM_LABELS))
    blue = procedural_faces(48, back=(200, 0, 0))
    centre = blue.face(BACK)[32, 24]
    assert centre[0] > 150 and centre[1] < 60


def test_bad_labels_and_sizes():
    faces = procedural_faces(32)
    with pytest.raises(ModelError):
        faces.face(43)
    with pytest.raises(ModelError):
        procedural_faces(10)
    with pytest.raises(ModelError, match="lacks faces"):
        FaceSet("broken", {0: faces.face(0)})


def test_art_faces_from_the_shared_sheet(shared_data):
    for sheet in ("uni.svg", "unib.svg"):
        faces = art_faces(shared_data / "tile-art", 72, sheet=sheet)
        assert faces.size == (72, 96)
        assert _distinct(faces) > 1.0
        # the art is drawn on the body: a face holds ink, not only the body colour
        one_dot = faces.face(9).astype(np.int16)
        assert np.abs(one_dot - one_dot[5, 36]).sum(axis=2).max() > 150


def test_art_faces_missing_sheet(tmp_path):
    with pytest.raises(ModelError, match="cannot read the tile art"):
        art_faces(tmp_path)
    (tmp_path / "wikimedia-pd").mkdir()
    (tmp_path / "wikimedia-pd" / "uni.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    with pytest.raises(ModelError, match="no symbol"):
        art_faces(tmp_path)


@pytest.mark.parametrize("broken", ['<path d="M1 2 L3"/>', '<rect x="1px" width="5" height="5"/>'])
def test_art_that_cannot_be_drawn_names_its_symbol(tmp_path, broken):
    from vision.faces import _ART_IDS

    symbols = [
        f'<symbol id="{sym}" viewBox="0 0 10 10"><rect x="1" y="1" width="8" height="8"/></symbol>'
        for sym in _ART_IDS.values()
    ]
    first = next(iter(_ART_IDS.values()))
    symbols[0] = f'<symbol id="{first}" viewBox="0 0 10 10">{broken}</symbol>'
    (tmp_path / "wikimedia-pd").mkdir()
    (tmp_path / "wikimedia-pd" / "uni.svg").write_text(
        "<svg xmlns='http://www.w3.org/2000/svg'>" + "".join(symbols) + "</svg>"
    )
    with pytest.raises(ModelError, match=f"symbol '{first}' .* cannot be drawn"):
        art_faces(tmp_path, 48)


@pytest.mark.parametrize(
    ("compact", "spaced"),
    [
        ("M0 0a5 5 0 00.5 10", "M0 0 a5 5 0 0 0 0.5 10"),
        ("M0 0a5 5 0 1110 0", "M0 0 a5 5 0 1 1 10 0"),
        ("M0 0A5 5 0 0 1.5.5", "M0 0 A5 5 0 0 1 .5 .5"),
    ],
)
def test_arc_flags_written_together_read_as_spaced(compact: str, spaced: str) -> None:
    from vision.faces import _path_polygons

    (a,) = _path_polygons(compact)
    (b,) = _path_polygons(spaced)
    assert np.allclose(a, b)


def test_an_arc_flag_that_is_not_0_or_1_is_refused() -> None:
    from vision.faces import _path_polygons

    with pytest.raises(ValueError, match="arc flag"):
        _path_polygons("M0 0 a5 5 0 2 0 10 0")


@pytest.mark.timeout(10)
def test_numbers_after_a_closepath_are_an_error_not_a_hang():
    from vision.faces import _path_polygons

    with pytest.raises(ValueError, match="after a closepath"):
        _path_polygons("M0 0 L10 0 L10 10 Z 5 5")


def test_a_subpath_drawn_on_after_a_closepath_starts_where_that_one_did():
    from vision.faces import _path_polygons

    polys = _path_polygons("M0 0 L10 0 L10 10 Z L0 10 L0 20")
    assert len(polys) == 2 and tuple(polys[1][0]) == (0.0, 0.0)


def test_colours_are_read_or_refused_never_guessed_black():
    from vision.faces import _colour

    assert _colour("rgb(255, 0, 0)") == (0, 0, 255)
    assert _colour("rgb(100%, 50%, 0%)") == (0, 128, 255)
    assert _colour("green") == (0, 128, 0) and _colour("Blue") == (255, 0, 0)
    assert _colour("#0f0") == (0, 255, 0) and _colour("none") is None
    with pytest.raises(ValueError, match="does not know"):
        _colour("currentColor")


def test_flowers_carry_the_numbers_real_sets_print():
    # sets number the flowers 梅 1, 兰 2, 菊 3, 竹 4 (the photos' labels agree), though the
    # project lists them in the idiom's order 梅兰竹菊 (7f is 竹, 8f is 菊)
    from vision.faces import _FLOWER_NUMERALS

    numbers = {t: _FLOWER_NUMERALS[int(parse_tiles(t)[0])] for t in "春夏秋冬梅兰菊竹"}
    assert numbers == dict(zip("春夏秋冬梅兰菊竹", [1, 2, 3, 4, 1, 2, 3, 4], strict=True))
