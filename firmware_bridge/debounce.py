"""Debouncing and short/long press classification for one button, on an injected clock.

gpiozero's ``bounce_time`` is ignored by its mock pins and varies between pin libraries, so the
seat panel does its own: :class:`Debouncer` takes the raw edges with their times and decides,
from the same clock, when a level has held long enough to count. Nothing here sleeps or reads
the time; the caller passes it in, so tests drive it with a fake clock.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Debouncer", "Press"]


class Press(NamedTuple):
    """A debounced press: ``long`` when it was held for at least the long-press time (then it
    is reported as soon as that time is reached, while still held), else reported on release.
    ``held`` is how long it had been held when reported; ``start`` when it began."""

    long: bool
    held: float
    start: float


class Debouncer:
    """One button's debouncer.

    :param debounce: a raw level must hold this long (seconds) to become the stable level
    :param long_press: a stable press held this long is a long press
    :param pressed: the raw level at start
    """

    def __init__(self, debounce: float, long_press: float, *, pressed: bool = False) -> None:
        if debounce < 0 or long_press <= debounce:
            raise ValueError("need 0 <= debounce < long_press")
        self.debounce = debounce
        self.long_press = long_press
        self._raw = pressed
        self._raw_since = float("-inf")
        self.pressed = pressed  #: the stable (debounced) level
        self._press_start: float | None = None
        self._long_sent = False
        #: raw edges seen, for diagnostics (a bouncy switch shows many per press)
        self.edges = 0
        self._out: list[Press] = []

    def edge(self, pressed: bool, t: float) -> None:
        """The raw input changed to ``pressed`` at time ``t``."""
        if pressed == self._raw:
            return
        # the level that ends now may have held long enough to count, even if nobody
        # polled in between
        self._settle(t)
        self.edges += 1
        self._raw = pressed
        self._raw_since = t

    def next_deadline(self) -> float | None:
        """When :meth:`update` could next produce something."""
        if self._raw != self.pressed:
            return self._raw_since + self.debounce
        if self.pressed and not self._long_sent and self._press_start is not None:
            return self._press_start + self.long_press
        return None

    def update(self, t: float) -> list[Press]:
        """Presses decided by time ``t`` (including any decided at earlier edges)."""
        self._settle(t)
        out, self._out = self._out, []
        return out

    def _settle(self, t: float) -> None:
        if self._raw != self.pressed and t - self._raw_since >= self.debounce:
            self.pressed = self._raw
            if self.pressed:
                self._press_start = self._raw_since
                self._long_sent = False
            else:
                start = self._press_start
                if start is not None and not self._long_sent:
                    held = self._raw_since - start
                    # a press that was long by release time but polled late is still long
                    self._out.append(Press(held >= self.long_press, held, start))
                self._press_start = None
        start = self._press_start
        if self.pressed and start is not None and not self._long_sent:
            # held until now, or until a release that has not yet settled
            end = t if self._raw else self._raw_since
            if end - start >= self.long_press:
                self._long_sent = True
                self._out.append(Press(True, end - start, start))
