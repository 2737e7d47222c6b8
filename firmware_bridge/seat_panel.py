"""The seat panel: per seat a win (胡) button, a confirm button and an LED, and one shared
buzzer, on GPIO through gpiozero.

Devices are composed on a gpiozero pin factory: on a Raspberry Pi 5 gpiozero picks its lgpio
factory; off a Pi, set ``GPIOZERO_PIN_FACTORY=mock`` (or pass a
:class:`gpiozero.pins.mock.MockFactory`) and drive the pins from the simulator
(:mod:`hardware_sim.panel_sim`). Presses are debounced here, by
:class:`~firmware_bridge.debounce.Debouncer`, on an injectable clock, and reported as
:class:`SeatPress` values, short or long::

    panel = SeatPanel(config.seat_panel)
    panel.add_listener(lambda press: print(press.seat, press.button, press.long))
    panel.show(dealer=0, turn=1)     # dealer's LED on, the seat to play blinks
    panel.beep()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from firmware_bridge.config import SeatPanelConfig
from firmware_bridge.debounce import Debouncer
from firmware_bridge.errors import BridgeConfigError, PinError

__all__ = ["BUTTONS", "SeatPanel", "SeatPress"]

log = logging.getLogger(__name__)

#: the buttons of each seat
BUTTONS = ("win", "confirm")


@dataclass(frozen=True)
class SeatPress:
    """A debounced button press. ``button`` is ``"win"`` or ``"confirm"``; ``long`` when held
    at least the configured long-press time (reported when that time is reached, while still
    held); ``held`` seconds held when reported; ``time`` when it started (panel clock)."""

    seat: int
    button: str
    long: bool
    held: float
    time: float


def _gpio_error(exc: BaseException, what: str) -> PinError:
    name = type(exc).__name__
    if "BadPinFactory" in name:
        return PinError(
            f"no GPIO pin factory for the {what}: on a Raspberry Pi 5 install lgpio "
            "(python3-lgpio); off a Pi set GPIOZERO_PIN_FACTORY=mock"
        )
    if "InUse" in name:
        return PinError(f"the {what}'s pin is already in use by another device or program")
    return PinError(f"cannot set up the {what}: {exc}")


class SeatPanel:
    """The GPIO seat panel described by a ``[seat_panel]`` config.

    :param pin_factory: a gpiozero pin factory (default: gpiozero's own choice, which honours
        ``GPIOZERO_PIN_FACTORY``)
    :param clock: the time source for debouncing (seconds, monotonic)
    :param poll_interval: how often the background thread evaluates the debouncers; ``None``
        starts no thread, and the owner calls :meth:`poll` itself (tests with a fake clock)
    """

    def __init__(
        self,
        config: SeatPanelConfig,
        *,
        pin_factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        poll_interval: float | None = 0.005,
    ) -> None:
        try:
            from gpiozero import LED, Buzzer, DigitalInputDevice
        except ImportError as exc:  # pragma: no cover - gpiozero is a dependency
            raise PinError(f"gpiozero is not installed: {exc}") from None
        self.config = config
        self.clock = clock
        self._lock = threading.Lock()
        # told after every poll (and on close): wait_held waits on it instead of guessing
        self._polled = threading.Condition()
        self._closed = False
        self._listeners: list[Callable[[SeatPress], None]] = []
        self._devices: list[Any] = []
        self._debouncers: dict[tuple[int, str], Debouncer] = {}
        self.leds: list[Any] = []
        self.buzzer: Any = None
        self._led_mode: list[str] = []
        try:
            for seat, pins in enumerate(config.seats):
                for button in BUTTONS:
                    pin = getattr(pins, button)
                    what = f"seat {seat} {button} button ({pin})"
                    try:
                        dev = DigitalInputDevice(
                            pin, pull_up=config.pull_up, bounce_time=None, pin_factory=pin_factory
                        )
                    except Exception as exc:
                        raise _gpio_error(exc, what) from None
                    self._devices.append(dev)
                    try:
                        deb = Debouncer(config.debounce, config.long_press, pressed=dev.is_active)
                    except ValueError as exc:  # a SeatPanelConfig built in code, unchecked
                        raise BridgeConfigError(f"seat panel timing: {exc}") from None
                    self._debouncers[(seat, button)] = deb
                    dev.when_activated = self._edge_handler(deb, True)
                    dev.when_deactivated = self._edge_handler(deb, False)
                try:
                    led = LED(pins.led, pin_factory=pin_factory)
                except Exception as exc:
                    raise _gpio_error(exc, f"seat {seat} LED ({pins.led})") from None
                self._devices.append(led)
                self.leds.append(led)
                self._led_mode.append("off")
            if config.buzzer is not None:
                try:
                    self.buzzer = Buzzer(config.buzzer, pin_factory=pin_factory)
                except Exception as exc:
                    raise _gpio_error(exc, f"buzzer ({config.buzzer})") from None
                self._devices.append(self.buzzer)
        except (PinError, BridgeConfigError):
            self.close()
            raise
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if poll_interval is not None:
            self._thread = threading.Thread(
                target=self._run, args=(poll_interval,), name="seat-panel", daemon=True
            )
            self._thread.start()

    def _edge_handler(self, deb: Debouncer, pressed: bool) -> Callable[[], None]:
        def handler() -> None:
            with self._lock:
                deb.edge(pressed, self.clock())

        return handler

    # --- presses -----------------------------------------------------------------------------

    def add_listener(self, callback: Callable[[SeatPress], None]) -> None:
        """Call ``callback(press)`` for every press (from the panel's thread, or from
        :meth:`poll` when there is none)."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[SeatPress], None]) -> None:
        self._listeners.remove(callback)

    def poll(self, now: float | None = None) -> list[SeatPress]:
        """Decide the presses due by ``now`` (default: the panel clock), hand them to the
        listeners and return them."""
        if self._closed:
            return []
        t = self.clock() if now is None else now
        presses: list[SeatPress] = []
        with self._lock:
            for (seat, button), deb in self._debouncers.items():
                for p in deb.update(t):
                    presses.append(SeatPress(seat, button, p.long, p.held, p.start))
        presses.sort(key=lambda p: p.time)
        try:
            for press in presses:
                for cb in list(self._listeners):
                    if self._closed:  # a listener may close the panel: no press after that
                        return presses
                    try:
                        cb(press)
                    except Exception:
                        log.exception("a seat panel listener failed")
        finally:
            # after the listeners: a waiter woken by this poll knows they have its presses
            with self._polled:
                self._polled.notify_all()
        return presses

    def is_held(self, seat: int, button: str) -> bool:
        """The debounced state of a button right now."""
        return self._debouncers[(self._seat(seat), button)].pressed

    def wait_held(
        self, seat: int, button: str, held: bool = True, timeout: float | None = None
    ) -> bool:
        """Block until a button's debounced state (:meth:`is_held`) is ``held``, or
        ``timeout`` seconds pass, or the panel is closed; returns whether it is.

        A level counts only once it has lasted the debounce time on the panel's clock and a
        poll (the panel's thread, or the owner's :meth:`poll`) has looked at it; when this
        returns, the listeners have had every press that poll decided. Whoever drives a
        button (a simulator, a test on mock pins, a self-check) waits here to know the press
        has registered before it lets go, instead of sleeping a guess at how long that takes
        on a busy machine.
        """
        deb = self._debouncers[(self._seat(seat), button)]
        with self._polled:
            self._polled.wait_for(lambda: deb.pressed == held or self._closed, timeout)
        return deb.pressed == held

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.poll()
            except Exception:
                log.exception("seat panel poll failed")

    # --- LEDs and buzzer ---------------------------------------------------------------------

    @staticmethod
    def _seat(seat: int) -> int:
        if not 0 <= seat <= 3:
            raise ValueError(f"seat must be 0-3, not {seat}")
        return seat

    def _open(self, what: str) -> None:
        if self._closed:
            raise PinError(f"the seat panel is closed: cannot {what}")

    def set_led(self, seat: int, on: bool) -> None:
        self._open("set an LED")
        led = self.leds[self._seat(seat)]
        led.on() if on else led.off()
        self._led_mode[seat] = "on" if on else "off"

    def blink_led(self, seat: int, on_time: float = 0.4, off_time: float = 0.4) -> None:
        self._open("blink an LED")
        self.leds[self._seat(seat)].blink(on_time=on_time, off_time=off_time, background=True)
        self._led_mode[seat] = "blink"

    def show(self, *, dealer: int | None, turn: int | None) -> None:
        """The dealer's LED steady on, the LED of the seat whose turn it is blinking (also
        when it is the dealer's), the others off."""
        self._open("show the dealer and turn")
        for seat in range(len(self.leds)):
            if seat == turn:
                self.blink_led(seat)
            else:
                self.set_led(seat, seat == dealer)

    def led_modes(self) -> list[str]:
        """What each LED was last told to do: ``"on"``, ``"off"`` or ``"blink"`` (all
        ``"off"`` once the panel is closed and its pins released)."""
        if self._closed:
            return ["off"] * len(self._led_mode)
        return list(self._led_mode)

    def beep(self, duration: float = 0.1, count: int = 1, gap: float = 0.1) -> None:
        """Sound the buzzer ``count`` times, in the background. Does nothing without one."""
        if self.buzzer is None:
            return
        self._open("sound the buzzer")
        self.buzzer.beep(on_time=duration, off_time=gap, n=count, background=True)

    # --- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop polling and release the pins; no press is delivered after it, and the
        LEDs and buzzer refuse with :class:`PinError`."""
        self._closed = True
        with self._polled:
            self._polled.notify_all()
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()
        thread = getattr(self, "_thread", None)
        # a listener may close the panel: it runs on the poll thread, which cannot join itself
        # (and stops by itself once ``_stop`` is set); the pins must be released either way
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)
        for dev in reversed(self._devices):
            try:
                dev.close()
            except Exception:
                log.debug("closing %r failed", dev, exc_info=True)
        self._devices.clear()

    def __enter__(self) -> SeatPanel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
