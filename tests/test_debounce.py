"""Debouncing with an injected clock: bounces ignored, short and long presses told apart."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge.debounce import Debouncer, Press


def run(deb: Debouncer, edges: list[tuple[float, bool]], until: float, step: float = 0.001):
    out: list[Press] = []
    t = 0.0
    queue = sorted(edges)
    while t <= until:
        while queue and queue[0][0] <= t:
            when, level = queue.pop(0)
            deb.edge(level, when)
        out += deb.update(t)
        t = round(t + step, 6)
    return out


def bouncy(start: float, level: bool, n: int = 4, gap: float = 0.002) -> list[tuple[float, bool]]:
    """``n`` fast toggles ending on ``level`` (a real switch's contact bounce)."""
    return [(start + i * gap, level if (n - i) % 2 == 1 else not level) for i in range(n)]


def test_bouncy_short_press_is_one_short_press() -> None:
    deb = Debouncer(0.02, 0.8)
    edges = bouncy(0.100, True) + bouncy(0.300, False)
    presses = run(deb, edges, 0.5)
    assert len(presses) == 1
    assert not presses[0].long
    assert presses[0].held == pytest.approx(0.2, abs=0.01)
    assert deb.edges == 6  # the first of each four toggles repeats the level it had


def test_long_press_reported_while_still_held_and_once() -> None:
    deb = Debouncer(0.02, 0.8)
    presses = run(deb, [(0.1, True), (2.0, False)], 2.5)
    assert [p.long for p in presses] == [True]
    assert presses[0].held == pytest.approx(0.8, abs=0.002)


def test_glitch_shorter_than_debounce_is_ignored() -> None:
    deb = Debouncer(0.02, 0.8)
    assert run(deb, [(0.1, True), (0.11, False)], 0.5) == []
    assert not deb.pressed


def test_deadline_tells_when_to_poll() -> None:
    deb = Debouncer(0.02, 0.8)
    assert deb.next_deadline() is None
    deb.edge(True, 1.0)
    assert deb.next_deadline() == pytest.approx(1.02)
    assert deb.update(1.019) == []
    assert deb.update(1.02) == []
    assert deb.pressed
    assert deb.next_deadline() == pytest.approx(1.8)
    assert deb.update(1.8) == [Press(True, pytest.approx(0.8), 1.0)]


def test_late_poll_still_classifies_by_real_hold_time() -> None:
    deb = Debouncer(0.02, 0.5)
    deb.edge(True, 0.0)
    deb.edge(False, 0.3)
    # polled only once, long after the release: one short press of 0.3 s
    assert deb.update(5.0) == [Press(False, pytest.approx(0.3), 0.0)]


def test_bad_times_refused() -> None:
    with pytest.raises(ValueError, match=r"need 0 <= debounce < long_press"):
        Debouncer(0.5, 0.2)


@given(
    st.lists(st.tuples(st.floats(0.05, 3.0), st.floats(0.05, 3.0)), min_size=1, max_size=6),
    st.integers(0, 5),
)
@settings(deadline=None)  # a loaded CI machine must not fail it on time
def test_clean_presses_counted_exactly(holds: list[tuple[float, float]], bounces: int) -> None:
    """Any sequence of presses (held, then released, each >= 50 ms) with up to 10 ms of
    contact bounce yields exactly one press per press, long iff held >= 0.8 s."""
    deb = Debouncer(0.02, 0.8)
    edges: list[tuple[float, bool]] = []
    t = 0.05
    for hold, gap in holds:
        edges += bouncy(t, True, n=2 * bounces + 1, gap=0.001)
        t += hold
        edges += bouncy(t, False, n=2 * bounces + 1, gap=0.001)
        t += gap
    presses = run(deb, edges, t + 1.0, step=0.005)
    assert len(presses) == len(holds)
    for p, (hold, _) in zip(presses, holds, strict=True):
        if hold >= 0.82:
            assert p.long
        elif hold <= 0.79:
            assert not p.long
