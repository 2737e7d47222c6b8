"""The tile scale: the coarse look's size and picture, the noise measure and smoothing, and
the rules that tell a close-up's tiles from clumps, racks and table frames."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision import scale
from vision.labels import BACK, NUM_LABELS
from vision.rendering.faces import procedural_faces
from vision.rendering.render import PlacedTile, render_scene

# -- the coarse look ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "usual, coarse", [(640, 128), (1280, 256), (960, 192), (320, 64), (256, 64), (64, 64)]
)
def test_the_coarse_look_is_a_fifth_in_whole_32s(usual, coarse):
    assert scale.coarse_input(usual) == coarse


@given(st.integers(2, 128).map(lambda k: 32 * k))
def test_the_coarse_look_is_a_finder_input_and_never_larger_than_a_fifth(usual):
    coarse = scale.coarse_input(usual)
    assert coarse % 32 == 0 and coarse >= scale.COARSE_MIN
    if usual >= 5 * scale.COARSE_MIN:
        assert coarse <= usual / 5 < coarse + 32


def test_halving_averages_each_block_of_four():
    picture = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    out = scale.halved(picture, 32)
    assert out.shape == (24, 32, 3)
    blocks = picture.reshape(24, 2, 32, 2, 3).astype(np.float64).mean(axis=(1, 3))
    assert np.abs(out.astype(np.float64) - blocks).max() <= 0.5
    # an odd last row and column are dropped, not averaged in
    odd = np.zeros((49, 65, 3), np.uint8)
    odd[48], odd[:, 64] = 255, 255
    assert scale.halved(odd, 32).shape == (24, 32, 3) and not scale.halved(odd, 32).any()


@settings(max_examples=40, deadline=None)
@given(st.integers(40, 700), st.integers(40, 700), st.sampled_from([32, 64, 128]))
def test_halving_stops_under_twice_the_size(w, h, size):
    out = scale.halved(np.full((h, w, 3), 77, np.uint8), size)
    assert (out == 77).all()
    longer, shorter = max(out.shape[:2]), min(out.shape[:2])
    # halved while the longer side was twice the size (and the shorter not yet under 32)
    assert longer < 2 * size or shorter < 32
    halvings = round(np.log2(max(w, h) / longer))
    assert out.shape[:2] == (h >> halvings, w >> halvings)


def test_a_small_picture_is_not_halved():
    picture = np.zeros((90, 120, 3), np.uint8)
    assert scale.halved(picture, 128) is picture


# -- noise --------------------------------------------------------------------------------------


def _noisy(sigma: float, shape=(480, 640), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(128 + rng.normal(0, sigma, shape), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("sigma", [2.0, 5.0, 12.0, 30.0])
def test_the_noise_level_is_the_noise_standard_deviation(sigma):
    assert scale.noise_level(_noisy(sigma)) == pytest.approx(sigma, rel=0.1)


def test_tiles_outlines_and_pips_are_not_noise():
    tiles = [PlacedTile(k, (60 + 46 * (k % 12), 80 + 70 * (k // 12)), 0.0, 40.0) for k in range(36)]
    rng = np.random.default_rng(0)
    faces = procedural_faces()
    picture = render_scene(tiles, faces, plane_size=(640, 320), rng=rng, table="wood").image
    level = scale.noise_level(picture)
    assert level < 5.0
    # noise added on top of all those edges is measured as the noise it is
    grey = cv2.cvtColor(picture, cv2.COLOR_BGR2GRAY).astype(np.float64)
    noisy = np.clip(grey + np.random.default_rng(1).normal(0, 20, grey.shape), 0, 255)
    assert scale.noise_level(noisy.astype(np.uint8)) == pytest.approx(20, rel=0.15)


@settings(max_examples=30, deadline=None)
@given(
    st.floats(-1.0, 1.0),
    st.floats(-1.0, 1.0),
    st.integers(0, 120),
    st.integers(16, 200),
    st.integers(16, 200),
)
def test_flat_pictures_and_ramps_have_no_noise(gx, gy, base, w, h):
    y, x = np.mgrid[0:h, 0:w]
    ramp = np.clip(base + gx * x + gy * y, 0, 255).astype(np.uint8)
    assert scale.noise_level(np.full((h, w), base, np.uint8)) == 0.0
    # what the kernel finds on a ramp is its rounding down to whole grey levels, each off by
    # under 1: its taps, +8 and -8 in all, answer under 8, a level under 8 / (0.6745 x 6)
    assert scale.noise_level(ramp) < 8 / (0.6745 * 6)


def test_pictures_too_small_to_measure_have_no_noise():
    assert scale.noise_level(np.zeros((2, 50, 3), np.uint8)) == 0.0


def test_colour_noise_is_measured_in_grey():
    rng = np.random.default_rng(2)
    picture = np.clip(128 + rng.normal(0, 30, (240, 320, 3)), 0, 255).astype(np.uint8)
    # the grey mix of three independent channels: 30 x |(0.114, 0.587, 0.299)|
    assert scale.noise_level(picture) == pytest.approx(30 * 0.668, rel=0.1)


def test_only_noise_over_the_limit_is_smoothed():
    quiet = cv2.cvtColor(_noisy(5.0), cv2.COLOR_GRAY2BGR)
    assert scale.smooth_noise(quiet) is quiet
    loud = cv2.cvtColor(_noisy(40.0), cv2.COLOR_GRAY2BGR)
    out = scale.smooth_noise(loud)
    assert out.shape == loud.shape and out.dtype == loud.dtype
    assert scale.noise_level(out) < scale.NOISE_LIMIT / 2
    # the picture's mean survives the smoothing
    assert abs(float(out.mean()) - float(loud.mean())) < 1.0
    # a limit of one's own
    assert scale.smooth_noise(quiet, limit=2.0) is not quiet


@settings(max_examples=20, deadline=None)
@given(st.floats(16.0, 90.0), st.integers(0, 2**16))
def test_smoothed_noise_is_under_the_limit(sigma, seed):
    out = scale.smooth_noise(_noisy(sigma, (120, 160), seed))
    assert scale.noise_level(out) < scale.NOISE_LIMIT


# -- a close-up's tiles -------------------------------------------------------------------------


def _find(x, y, w, h, score=0.8, down=0.0):
    return ((float(x), float(y), float(w), float(h)), score, 0.0, down)


def _pips(box, n=4, width=30, score=0.7):
    """``n`` small finds inside ``box``, as the usual pass finds a close-up's pips."""
    x, y, w, h = box
    return [
        _find(x + (k + 0.5) * w / n - width / 2, y + h / 2, width, width, score) for k in range(n)
    ]


# one picture 1280 pixels on its longer side: boxes there are twice the usual 640's
SIDE, USUAL = 1280, 640
TILE = _find(400, 200, 500, 660)  # 250 pixels wide at the usual input


def _tiles(coarse, found, **kw):
    return scale.close_up_tiles(coarse, found, side=SIDE, input_size=USUAL, **kw)


def test_a_coarse_tile_holding_pips_is_a_close_ups():
    assert _tiles([TILE], _pips(TILE[0])) == [TILE]
    # a blank tile shows the usual pass nothing
    assert _tiles([TILE], []) == [TILE]


def test_a_coarse_tile_of_a_size_the_usual_pass_knows_is_left_to_it():
    # 120 pixels wide at the usual input: its own second look reads such tiles
    small = _find(400, 200, 240, 320)
    assert _tiles([small], []) == []
    assert _tiles([small], [], above=100.0) == [small]


def test_a_coarse_tile_the_finder_is_unsure_of_does_not_count():
    unsure = _find(*TILE[0], score=scale.CLOSE_UP_SCORE - 0.01)
    assert _tiles([unsure], _pips(TILE[0])) == []


def test_a_coarse_tile_as_wide_as_what_the_usual_pass_found_in_it_is_no_close_up():
    # the usual pass saw a tile there whole (or a clump's tiles about its size)
    whole = [_find(420, 220, 460, 620)]
    assert _tiles([TILE], whole) == []
    # the pieces must be PIECES times narrower than the tile: 400-pixel finds in a 500-pixel
    # tile are not its pieces, 320-pixel ones are
    assert _tiles([TILE], _pips(TILE[0], n=2, width=400)) == []
    assert _tiles([TILE], _pips(TILE[0], n=2, width=400), pieces=1.2) == [TILE]
    assert _tiles([TILE], _pips(TILE[0], n=2, width=320)) == [TILE]
    assert _tiles([TILE], _pips(TILE[0], n=2, width=320), pieces=1.6) == []


def test_what_lies_outside_a_coarse_tile_does_not_judge_it():
    far = [_find(1100, 900, 600, 600)]  # centred off the tile
    assert _tiles([TILE], _pips(TILE[0]) + far) == [TILE]


def test_a_back_counts_only_over_grain_the_usual_pass_is_unsure_of():
    back = _find(*TILE[0], score=0.85, down=0.95)
    assert _tiles([back], []) == [back]
    assert _tiles([back], _pips(TILE[0], score=0.4)) == [back]
    # a pale stretch of a photo taken for a back, holding real tiles scored as high as it
    assert _tiles([back], _pips(TILE[0], score=0.7)) == []
    assert _tiles([back], _pips(TILE[0], score=0.7), back_lead=0.1) == [back]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-200, 1200),
            st.floats(-200, 900),
            st.floats(10, 900),
            st.floats(10, 900),
            st.floats(0, 1),
            st.floats(0, 1),
        ),
        max_size=6,
    ),
    st.lists(
        st.tuples(st.floats(0, 1200), st.floats(0, 900), st.floats(5, 300), st.floats(5, 300)),
        max_size=12,
    ),
)
def test_close_up_tiles_are_coarse_tiles_that_pass_every_rule(coarse, found):
    coarse_finds = [_find(x, y, w, h, s, d) for x, y, w, h, s, d in coarse]
    found_finds = [_find(*b) for b in found]
    out = _tiles(coarse_finds, found_finds)
    assert all(any(t is c for c in coarse_finds) for t in out)
    for box, score, _, _ in out:
        assert score >= scale.CLOSE_UP_SCORE
        assert min(box[2], box[3]) * USUAL / SIDE > scale.CLOSE_UP_ABOVE
    # a looser rule never drops one a stricter rule keeps
    loose = _tiles(coarse_finds, found_finds, pieces=1.0, back_lead=-1.0, min_score=0.0)
    assert all(any(t is c for c in loose) for t in out)


def test_a_close_ups_tiles_hold_most_of_what_the_usual_pass_found():
    pips = _pips(TILE[0], n=6)
    elsewhere = [_find(20 + 60 * k, 20, 40, 40) for k in range(6)]
    assert scale.covers([TILE], pips)
    assert scale.covers([TILE], pips + elsewhere)  # half: just enough
    assert not scale.covers([TILE], pips + elsewhere + [_find(20, 900, 40, 40)])
    assert not scale.covers([TILE], pips + elsewhere, share=0.6)
    # a blank tile shows the usual pass nothing
    assert scale.covers([TILE], [])
    assert not scale.covers([], pips)


def test_two_tiles_cover_together():
    other = _find(1000, 200, 500, 660)
    found = _pips(TILE[0]) + _pips(other[0]) + [_find(20, 20, 40, 40)] * 3
    assert not scale.covers([TILE], found)
    assert scale.covers([TILE, other], found)


def _probabilities(*best: tuple[int, float]) -> np.ndarray:
    rows = np.full((len(best), NUM_LABELS), 0.0)
    for row, (label, p) in zip(rows, best, strict=True):
        row[:] = (1 - p) / (NUM_LABELS - 1)
        row[label] = p
    return rows


def test_a_close_up_tile_must_read_as_one_tile():
    a, b, c = _find(0, 0, 300, 400), _find(300, 0, 300, 400), _find(600, 0, 300, 400, down=0.9)
    probs = _probabilities((4, 0.95), (38, 0.53), (BACK, 0.9))
    # nine tiles the coarse look took for one read 0.53: not a tile; a back read as one is
    assert scale.confirmed([a, b, c], probs) == [a, c]
    assert scale.confirmed([a, b, c], probs, min_read=0.5) == [a, b, c]
    assert scale.confirmed([a, b, c], probs, min_read=0.96) == []
    assert scale.confirmed([], np.zeros((0, NUM_LABELS))) == []


def test_the_close_up_input_shrinks_its_tiles_to_rescale_to():
    # 250 pixels wide at 640: 640 x 56 / 250 = 143, in whole 32s 128
    assert scale.close_up_input([TILE], side=SIDE, input_size=USUAL, rescale_to=56.0) == 128
    big, small = _find(0, 0, 1000, 1300), _find(0, 0, 60, 80)

    def size(tiles, rescale_to=56.0):
        return scale.close_up_input(tiles, side=SIDE, input_size=USUAL, rescale_to=rescale_to)

    # the median tile decides
    assert size([TILE, TILE, big]) == 128
    # never under the smallest, never over the usual input
    assert size([big], rescale_to=20.0) == scale.SMALLEST_INPUT
    assert size([small]) == USUAL


@given(
    st.floats(1.0, 4000.0),
    st.sampled_from([320, 640, 1280]),
    st.integers(100, 4000),
    st.floats(8.0, 80.0),
)
def test_the_close_up_input_is_a_finder_input_in_range(width, usual, side, rescale_to):
    tile = _find(0, 0, width, width * 4 / 3)
    size = scale.close_up_input([tile], side=side, input_size=usual, rescale_to=rescale_to)
    assert size % 32 == 0 and scale.SMALLEST_INPUT <= size <= usual
    seen = width * size / side  # the tile's width at that input
    if scale.SMALLEST_INPUT < size < usual:
        # as large as rescale_to allows, in whole 32s
        assert seen <= rescale_to * (1 + 1e-9) < width * (size + 32) / side
