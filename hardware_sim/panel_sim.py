"""Drive a :class:`~firmware_bridge.seat_panel.SeatPanel` from the outside, through gpiozero's
mock pins: press buttons (with contact bounce), read back LEDs and the buzzer.

The panel reads its pins through the same gpiozero devices as on a Pi; only the pin factory
differs. Time is a :class:`FakeClock` that the panel is given as its clock, so a test decides
exactly when the panel looks::

    clock = FakeClock()
    panel = SeatPanel(cfg, pin_factory=factory, clock=clock, poll_interval=None)
    sim = PanelSim(cfg, factory, clock, on_tick=panel.poll)
    sim.press(2, "win", hold=1.0)       # a long press of seat 2's 胡 button

Blinking LEDs and beeps are timed by gpiozero's own threads on the real clock, which no fake
clock reaches: :func:`watch_pins` makes a factory's pins ones that can be waited on, and
:meth:`PanelSim.wait_led` and :meth:`PanelSim.wait_buzzer` wait for them to change.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from firmware_bridge.config import SeatPanelConfig

__all__ = ["FakeClock", "PanelSim", "watch_pins"]


def watch_pins(factory: Any) -> None:
    """Make the pins ``factory`` (a :class:`gpiozero.pins.mock.MockFactory`) builds from now
    on ones that can be waited on. Call it before the panel claims its pins: a factory keeps
    the pin objects it has made."""
    factory.pin_class = _watched_pin_class()


@functools.cache
def _watched_pin_class() -> type:
    # built on first use: gpiozero's mock module costs ~90 ms to import, and the simulated
    # table imports this module whether or not anything waits on a pin
    from gpiozero.pins.mock import MockPin

    class WatchedPin(MockPin):
        """A mock pin whose every change of level wakes :meth:`wait_for_state`."""

        def __init__(self, factory: Any, info: Any) -> None:
            self._changed = threading.Condition()
            super().__init__(factory, info)

        def _change_state(self, value: bool) -> bool:
            # released before MockPin calls the edge callbacks (the panel's debouncers take
            # their own lock), so a waiter never holds up a press
            with self._changed:
                changed = bool(super()._change_state(value))
                if changed:
                    self._changed.notify_all()
            return changed

        def wait_for_state(self, state: bool, timeout: float | None = None) -> bool:
            with self._changed:
                return self._changed.wait_for(lambda: bool(self.state) == state, timeout)

    return WatchedPin


class FakeClock:
    """A clock that moves only when told. Call it for the time."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not run backwards")
        self.now += seconds


class PanelSim:
    """Pushes a seat panel's buttons on mock pins.

    :param factory: the :class:`gpiozero.pins.mock.MockFactory` the panel was built on
    :param clock: the panel's :class:`FakeClock`
    :param on_tick: called with the time after every step (pass the panel's ``poll``)
    :param tick: the step by which time advances while a button is held
    """

    def __init__(
        self,
        config: SeatPanelConfig,
        factory: Any,
        clock: FakeClock,
        *,
        on_tick: Callable[[float], object] | None = None,
        tick: float = 0.005,
    ) -> None:
        self.config = config
        self.factory = factory
        self.clock = clock
        self.on_tick = on_tick
        self.tick = tick

    def _pin(self, name: str) -> Any:
        return self.factory.pin(name)

    def button_pin(self, seat: int, button: str) -> Any:
        return self._pin(getattr(self.config.seats[seat], button))

    def _drive(self, seat: int, button: str, pressed: bool) -> None:
        pin = self.button_pin(seat, button)
        # a pressed button pulls a pull-up pin low, or a pull-down pin high
        low = pressed if self.config.pull_up else not pressed
        pin.drive_low() if low else pin.drive_high()

    def wait(self, seconds: float) -> None:
        """Let time pass in steps of ``tick``, calling ``on_tick`` after each."""
        end = self.clock.now + seconds
        while self.clock.now < end - 1e-12:
            self.clock.advance(min(self.tick, end - self.clock.now))
            if self.on_tick is not None:
                self.on_tick(self.clock.now)

    def _bounce(self, seat: int, button: str, pressed: bool, bounces: int) -> None:
        # contact bounce: the level flickers for a few milliseconds before it settles
        for i in range(bounces):
            self._drive(seat, button, pressed if i % 2 == 0 else not pressed)
            self.clock.advance(0.001)
        self._drive(seat, button, pressed)

    def press(self, seat: int, button: str, *, hold: float = 0.1, bounces: int = 3) -> None:
        """Press and release a button, holding it ``hold`` seconds, with ``bounces`` flickers
        at each transition, then wait long enough for the release to settle."""
        self._bounce(seat, button, True, bounces)
        self.wait(hold)
        self._bounce(seat, button, False, bounces)
        self.wait(self.config.debounce * 2 + self.tick)

    def hold(self, seat: int, button: str, *, bounces: int = 3) -> None:
        """Press a button and leave it pressed."""
        self._bounce(seat, button, True, bounces)

    def release(self, seat: int, button: str, *, bounces: int = 3) -> None:
        self._bounce(seat, button, False, bounces)

    def glitch(self, seat: int, button: str, seconds: float = 0.005) -> None:
        """A spike shorter than the debounce time (interference, a brushed button)."""
        self._drive(seat, button, True)
        self.clock.advance(seconds)
        self._drive(seat, button, False)

    def led(self, seat: int) -> bool:
        return bool(self._pin(self.config.seats[seat].led).state)

    def buzzer(self) -> bool:
        if self.config.buzzer is None:
            return False
        return bool(self._pin(self.config.buzzer).state)

    def _wait_pin(self, name: str, what: str, state: bool, timeout: float) -> bool:
        wait = getattr(self._pin(name), "wait_for_state", None)
        if wait is None:
            raise TypeError(
                f"the {what}'s pin cannot be waited on: call watch_pins(factory) before the "
                "panel claims its pins"
            )
        return bool(wait(state, timeout))

    def wait_led(self, seat: int, on: bool, timeout: float) -> bool:
        """Wait until ``seat``'s LED is ``on`` (``True``) or off, or ``timeout`` seconds pass;
        returns whether it is. Needs :func:`watch_pins`."""
        return self._wait_pin(self.config.seats[seat].led, f"seat {seat} LED", on, timeout)

    def wait_buzzer(self, on: bool, timeout: float) -> bool:
        """Wait until the buzzer is sounding (``on``) or silent, or ``timeout`` seconds pass;
        returns whether it is. Needs :func:`watch_pins`."""
        if self.config.buzzer is None:
            raise ValueError("this panel has no buzzer")
        return self._wait_pin(self.config.buzzer, "buzzer", on, timeout)
