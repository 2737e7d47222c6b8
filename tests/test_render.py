"""The scene renderer: truth outlines, determinism, camera views."""

from __future__ import annotations

import numpy as np
import pytest

from controller.errors import ModelError
from vision.labels import BACK
from vision.rendering.faces import procedural_faces
from vision.rendering.render import Camera, PlacedTile, render_scene

FACES = procedural_faces(64)


def _tiles():
    return [
        PlacedTile(4, (100, 100), 0, 40),
        PlacedTile(27, (160, 100), 90, 40),
        PlacedTile(BACK, (230, 100), 180, 40),
    ]


def test_plane_view_truth_matches_placement():
    out = render_scene(_tiles(), FACES, plane_size=(320, 200), rng=np.random.default_rng(0))
    assert out.image.shape == (200, 320, 3)
    assert [t.label for t in out.tiles] == [4, 27, BACK]
    assert [t.sideways for t in out.tiles] == [False, True, False]
    x, y, w, h = out.tiles[0].box
    assert (x, y, w, h) == pytest.approx((80, 100 - 80 / 3, 40, 160 / 3), abs=1e-3)
    # the tile is drawn where the truth says: its middle is the light body, not felt
    assert out.image[int(y + h / 2), int(x + 3)].mean() > 150
    # the back is drawn in the back's colour
    bx, by, bw, bh = out.tiles[2].box
    assert out.image[int(by + bh / 2), int(bx + bw / 2)][1] > 100


def test_same_seed_same_picture():
    cam = Camera.looking_at((320, 200), (160, 120), tilt=20, glare=0.3, noise=5, blur=1, jpeg=70)
    a = render_scene(
        _tiles(), FACES, plane_size=(320, 200), rng=np.random.default_rng(7), camera=cam
    )
    b = render_scene(
        _tiles(), FACES, plane_size=(320, 200), rng=np.random.default_rng(7), camera=cam
    )
    c = render_scene(
        _tiles(), FACES, plane_size=(320, 200), rng=np.random.default_rng(8), camera=cam
    )
    assert np.array_equal(a.image, b.image)
    assert not np.array_equal(a.image, c.image)


def test_camera_maps_outlines_through_its_homography():
    cam = Camera.looking_at((320, 200), (640, 400), tilt=25, turn=90)
    out = render_scene(_tiles(), FACES, plane_size=(320, 200), rng=np.random.default_rng(1),
                       camera=cam)  # fmt: skip
    assert out.image.shape == (400, 640, 3)
    # turned a quarter: the upright tile now lies sideways and the sideways one upright
    assert [t.sideways for t in out.tiles] == [True, False, True]
    for truth, placed in zip(out.tiles, _tiles(), strict=True):
        pts = np.c_[placed.corners(), np.ones(4)] @ cam.homography.T
        assert np.allclose(truth.quad, pts[:, :2] / pts[:, 2:], atol=1e-3)


def test_tiles_outside_the_picture_have_no_truth():
    tiles = [PlacedTile(1, (50, 50), 0, 30), PlacedTile(2, (500, 50), 0, 30)]
    out = render_scene(tiles, FACES, plane_size=(200, 100), rng=np.random.default_rng(0))
    assert [t.index for t in out.tiles] == [0]


def test_bad_input():
    with pytest.raises(ModelError):
        PlacedTile(43, (0, 0))
    with pytest.raises(ModelError):
        PlacedTile(1, (0, 0), width=0)
    with pytest.raises(ModelError):
        render_scene([], FACES, plane_size=(4, 4), rng=np.random.default_rng(0))
    with pytest.raises(ModelError):
        render_scene([], FACES, plane_size=(50, 50), rng=np.random.default_rng(0), table="marble")
    with pytest.raises(ModelError):
        render_scene([], FACES, plane_size=(50, 50), rng=np.random.default_rng(0),
                     table=np.zeros((10, 10, 3), np.uint8))  # fmt: skip


@pytest.mark.parametrize(
    ("centre", "angle"),
    [((float("nan"), 10.0), 0.0), ((10.0, 10.0), float("inf")), (("a", 10.0), 0.0), (5.0, 0.0)],
)
def test_a_tile_placed_nowhere_is_refused(centre, angle):
    # a NaN centre was dropped silently; an infinite angle raised in the maths
    with pytest.raises(ModelError, match="a tile's centre is two numbers"):
        PlacedTile(0, centre, angle)  # type: ignore[arg-type]


def test_a_camera_leaning_the_other_way_sees_the_tiles_other_sides():
    ahead = Camera.looking_at((400, 300), (400, 300), tilt=20)
    behind = Camera.looking_at((400, 300), (400, 300), tilt=-20)
    assert ahead.view[1] > 0 and behind.view == pytest.approx((-ahead.view[0], -ahead.view[1]))
