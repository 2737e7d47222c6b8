"""Tile faces: the procedural set (always), the art set (from the shared data)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from controller.errors import ModelError
from controller.rules.tiles import parse_tiles
from vision.labels import BACK, NUM_LABELS, label_name
from vision.rendering.faces import (
    FaceSet,
    art_faces,
    back_face,
    procedural_faces,
    riichi_art_faces,
    tile_body,
)


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


def test_a_set_without_flowers_is_allowed_only_as_incomplete():
    full = procedural_faces(32)
    some = {label: full.face(label) for label in (0, 5, BACK)}
    with pytest.raises(ModelError, match="lacks faces for 2m"):
        FaceSet("some", some)
    partial = FaceSet("some", some, complete=False)
    assert partial.labels == (0, 5, BACK) and partial.size == (32, 43)
    with pytest.raises(ModelError, match="'some' has no face for 1f"):
        partial.face(34)
    with pytest.raises(ModelError, match="not a tile label"):
        partial.face(43)
    # the back draws every tile's depth: a set needs it
    with pytest.raises(ModelError, match="lacks faces for back"):
        FaceSet("no back", {0: full.face(0)}, complete=False)


def _needs_resvg() -> None:
    pytest.importorskip("resvg_py", reason="the train extra (resvg-py) is not installed")


def test_art_faces_from_the_shared_sheet(shared_data):
    _needs_resvg()
    for sheet in ("uni.svg", "unib.svg"):
        faces = art_faces(shared_data / "tile-art", 72, sheet=sheet)
        assert faces.size == (72, 96)
        assert _distinct(faces) > 1.0
        # the art is drawn on the body: a face holds ink, not only the body colour
        one_dot = faces.face(9).astype(np.int16)
        assert np.abs(one_dot - one_dot[5, 36]).sum(axis=2).max() > 150


def test_art_faces_draw_every_label_on_the_body_asked_for(shared_data):
    _needs_resvg()
    body, back = (180, 200, 230), (200, 60, 40)
    faces = art_faces(shared_data / "tile-art", 60, body=body, back=back)
    plain = tile_body(60, body=body).astype(np.int16)
    assert faces.name == "art:uni.svg" and faces.size == (60, 80)
    for label in range(NUM_LABELS):
        img = faces.face(label)
        assert img.shape == (80, 60, 3) and img.dtype == np.uint8 and not img.flags.writeable
        if label == BACK:
            assert np.array_equal(img, back_face(60, colour=back, body=body))
            continue
        ink = np.abs(img.astype(np.int16) - plain).max(axis=2)
        # every tile's art is drawn, inside the border: the body's edge is left as it was
        assert (ink > 60).sum() > 20, label_name(label)
        assert ink[:2].max() == ink[-2:].max() == ink[:, :2].max() == ink[:, -2:].max() == 0


def test_art_faces_without_resvg_say_to_install_the_train_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "resvg_py", None)  # `import resvg_py` raises ImportError
    with pytest.raises(ModelError, match=r"needs resvg-py: pip install -e '\.\[train\]'"):
        art_faces(tmp_path)


def test_art_faces_missing_sheet(tmp_path):
    _needs_resvg()
    with pytest.raises(ModelError, match="cannot read the tile art"):
        art_faces(tmp_path)
    (tmp_path / "wikimedia-pd").mkdir()
    (tmp_path / "wikimedia-pd" / "uni.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    with pytest.raises(ModelError, match="no symbol"):
        art_faces(tmp_path)


def test_art_that_draws_nothing_names_its_symbol(tmp_path):
    _needs_resvg()
    from vision.rendering.faces import _ART_IDS

    symbols = [
        f'<symbol id="{sym}" viewBox="0 0 10 10"><rect x="1" y="1" width="8" height="8"/></symbol>'
        for sym in _ART_IDS.values()
    ]
    (tmp_path / "wikimedia-pd").mkdir()
    sheet = tmp_path / "wikimedia-pd" / "uni.svg"
    sheet.write_text("<svg xmlns='http://www.w3.org/2000/svg'>" + "".join(symbols) + "</svg>")
    assert art_faces(tmp_path, 48).size == (48, 64)  # symbols, not only nested <svg>s, are drawn
    first = next(iter(_ART_IDS.values()))
    # a reference to nothing would give a blank face, which training would learn as that tile
    symbols[0] = f'<symbol id="{first}" viewBox="0 0 10 10"><use href="#nowhere"/></symbol>'
    sheet.write_text("<svg xmlns='http://www.w3.org/2000/svg'>" + "".join(symbols) + "</svg>")
    with pytest.raises(ModelError, match=f"symbol '{first}' .* draws nothing"):
        art_faces(tmp_path, 48)


def test_flowers_carry_the_numbers_real_sets_print():
    # sets number the flowers 梅 1, 兰 2, 菊 3, 竹 4 (the photos' labels agree), though the
    # project lists them in the idiom's order 梅兰竹菊 (7f is 竹, 8f is 菊)
    from vision.rendering.faces import _FLOWER_NUMERALS

    numbers = {t: _FLOWER_NUMERALS[int(parse_tiles(t)[0])] for t in "春夏秋冬梅兰菊竹"}
    assert numbers == dict(zip("春夏秋冬梅兰菊竹", [1, 2, 3, 4, 1, 2, 3, 4], strict=True))


def test_the_riichi_art_draws_the_34_kinds_and_a_back(shared_data):
    _needs_resvg()
    faces = riichi_art_faces(shared_data / "tile-art", 48)
    assert not faces.complete and faces.labels == (*range(34), BACK)
    assert faces.size == (48, 64)
    imgs = {label: faces.face(label).astype(np.float32) for label in faces.labels}
    # every kind drawn apart from every other; 白 is this set's empty face, the back is red
    assert min(float(np.abs(imgs[a] - imgs[b]).mean()) for a in imgs for b in imgs if a < b) > 1.0
    blank = imgs[33][8:-8, 8:-8]
    assert blank.std() < 12 and blank.mean() > 180
    b, g, r = imgs[BACK][32, 24]
    assert r > 180 and g < 100 and b < 100
    with pytest.raises(ModelError, match="has no face for 1f"):
        faces.face(34)


def test_the_riichi_art_missing_or_unreadable_is_a_model_error(tmp_path):
    _needs_resvg()
    with pytest.raises(ModelError, match=r"cannot draw the tile art .*Front\.svg"):
        riichi_art_faces(tmp_path)
    folder = tmp_path / "fluffystuff-cc0"
    folder.mkdir()
    (folder / "Front.svg").write_text(
        "<svg xmlns='http://www.w3.org/2000/svg' width='30' height='40'>"
        "<rect width='30' height='40' fill='#eee'/></svg>"
    )
    (folder / "Man1.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'")
    with pytest.raises(ModelError, match=r"Man1\.svg"):
        riichi_art_faces(tmp_path)
