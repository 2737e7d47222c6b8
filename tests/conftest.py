"""Shared fixtures. The simulator fixtures (``sim_mcu``, ``mock_pins``, ``sim_camera``) live
here and are reused by every test module that needs simulated hardware."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("MAHJONG_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared training data (tile art, real photos). Tests that need it fail, not skip,
    when it is absent: CI runs beside ``../shared``."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA} (set MAHJONG_SHARED_DATA)")
    return SHARED_DATA
