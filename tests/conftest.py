"""Shared fixtures. The simulator fixtures (``sim_mcu``, ``mock_pins``, ``sim_camera``) live
here and are reused by every test module that needs simulated hardware."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _find_shared_data() -> Path | None:
    """The shared training data (tile art, real photos), which is never committed.

    Looked for in ``$MAHJONG_SHARED_DATA``, beside this checkout (``../shared/data``), and beside
    the checkout this one was cloned from (a fresh CI clone's ``origin``).
    """
    candidates = []
    if os.environ.get("MAHJONG_SHARED_DATA"):
        candidates.append(Path(os.environ["MAHJONG_SHARED_DATA"]))
    candidates.append(REPO.parent / "shared" / "data")
    try:
        origin = subprocess.run(
            ["git", "-C", str(REPO), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        origin = ""
    if origin and Path(origin).is_dir():
        candidates.append(Path(origin).resolve().parent / "shared" / "data")
    return next((c for c in candidates if (c / "README.md").is_file()), None)


SHARED_DATA = _find_shared_data()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder. Where it is absent the test is skipped with the reason, unless
    ``MAHJONG_REQUIRE_SHARED_DATA=1`` (set by ``.ci/run``), which turns that into a failure."""
    if SHARED_DATA is None:
        msg = "shared data (../shared/data) not found; set MAHJONG_SHARED_DATA"
        if os.environ.get("MAHJONG_REQUIRE_SHARED_DATA") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return SHARED_DATA


# -- rules ---------------------------------------------------------------------------------


@pytest.fixture
def make_win():
    """Build a Win from the hand notation: ``make_win("111p 222p 333p 444p 5p +5p")`` is a
    self-draw by seat 0; keyword arguments set any other field (``how="discard",
    discarder=2``)."""
    from controller.rules import Hand, Win, WinType

    def build(text: str, how: str = "self_draw", winner: int = 0, **fields):
        hand = Hand.parse(text)
        fields.setdefault("flowers", len(hand.flowers))
        return Win(winner=winner, hand=hand, how=WinType(how), **fields)

    return build


@pytest.fixture(scope="session")
def shanghai():
    from controller.profiles import load_profile

    return load_profile("shanghai")


# -- vision table (engineer T): the simulated overhead camera ---------------------------------


@pytest.fixture
def sim_camera():
    """The simulator's overhead camera (``hardware_sim.camera.SimCamera``) over an empty 900 mm
    table, 1280x960, reproducible frames. Lay tiles with ``sim_camera.change_seat(…)`` or
    ``sim_camera.set_layout(…)``; ``sim_camera.unplug()`` makes it vanish."""
    from hardware_sim.camera import SimCamera

    camera = SimCamera(seed=0)
    yield camera
    camera.close()
