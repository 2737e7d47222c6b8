"""The seat panel on gpiozero mock pins, driven by the panel simulator with a fake clock."""

from __future__ import annotations

import copy
import threading
import tomllib
from pathlib import Path

import pytest

from firmware_bridge.config import parse_seat_panel
from firmware_bridge.errors import PinError
from firmware_bridge.seat_panel import SeatPanel, SeatPress
from hardware_sim.panel_sim import FakeClock, PanelSim, watch_pins

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "table-config.example.toml"


@pytest.fixture
def cfg():
    return parse_seat_panel(tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))["seat_panel"])


@pytest.fixture
def rig(cfg, mock_pins):
    watch_pins(mock_pins)  # LEDs blink and the buzzer beeps on gpiozero's real-time threads
    clock = FakeClock()
    panel = SeatPanel(cfg, pin_factory=mock_pins, clock=clock, poll_interval=None)
    got: list[SeatPress] = []
    panel.add_listener(got.append)
    sim = PanelSim(cfg, mock_pins, clock, on_tick=panel.poll)
    yield panel, sim, got
    panel.close()


def test_short_and_long_presses_per_seat_and_button(rig) -> None:
    _panel, sim, got = rig
    sim.press(0, "win", hold=0.1)
    sim.press(3, "confirm", hold=1.2)
    sim.press(2, "win", hold=0.5, bounces=7)
    assert [(p.seat, p.button, p.long) for p in got] == [
        (0, "win", False),
        (3, "confirm", True),
        (2, "win", False),
    ]
    assert got[1].held == pytest.approx(0.8, abs=0.01)  # reported as soon as it was long


def test_long_press_is_reported_while_still_held(rig) -> None:
    panel, sim, got = rig
    sim.hold(1, "win")
    sim.wait(0.5)
    assert got == []
    assert panel.is_held(1, "win")
    sim.wait(0.4)
    assert [(p.seat, p.long) for p in got] == [(1, True)]
    sim.release(1, "win")
    sim.wait(0.1)
    assert len(got) == 1  # releasing a long press adds nothing
    assert not panel.is_held(1, "win")


def test_wait_held_follows_the_polled_state_and_close_ends_it(cfg, rig) -> None:
    panel, sim, _ = rig
    assert panel.wait_held(2, "win", held=False, timeout=0)
    sim.hold(2, "win")
    assert not panel.wait_held(2, "win", timeout=0)  # not held until a poll passes debounce
    sim.wait(cfg.debounce + sim.tick)
    assert panel.wait_held(2, "win", timeout=0)
    answers: list[bool] = []
    waiter = threading.Thread(
        target=lambda: answers.append(panel.wait_held(2, "win", held=False, timeout=60))
    )
    waiter.start()
    panel.close()  # nobody will poll again: the wait ends now, not in a minute
    waiter.join(5)
    assert not waiter.is_alive() and answers == [False]


def test_glitches_and_bounce_never_make_extra_presses(rig) -> None:
    _panel, sim, got = rig
    for _ in range(5):
        sim.glitch(0, "confirm", 0.005)
        sim.wait(0.05)
    assert got == []
    sim.press(0, "confirm", hold=0.2, bounces=9)
    assert len(got) == 1


def test_seats_do_not_interfere(rig) -> None:
    _panel, sim, got = rig
    for seat in range(4):
        sim.hold(seat, "win", bounces=1)
    sim.wait(0.1)
    for seat in (3, 1, 0, 2):
        sim.release(seat, "win", bounces=1)
        sim.wait(0.05)
    assert sorted(p.seat for p in got) == [0, 1, 2, 3]
    assert all(not p.long and p.button == "win" for p in got)


def test_leds_show_dealer_and_turn(rig) -> None:
    panel, sim, _ = rig
    panel.show(dealer=2, turn=2)
    assert panel.led_modes() == ["off", "off", "blink", "off"]
    panel.show(dealer=0, turn=3)
    assert panel.led_modes() == ["on", "off", "off", "blink"]
    assert sim.led(0) is True
    assert sim.led(1) is False
    panel.set_led(0, False)
    assert sim.led(0) is False
    with pytest.raises(ValueError):
        panel.set_led(4, True)


def test_blinking_led_toggles_its_pin(rig) -> None:
    panel, sim, _ = rig
    assert sim.led(1) is False
    panel.blink_led(1, on_time=0.01, off_time=0.01)
    # on, off and on again: toggling, not merely switched on
    for on in (True, False, True):
        assert sim.wait_led(1, on, timeout=5), f"the LED never went {'on' if on else 'off'}"
    assert panel.led_modes()[1] == "blink"


def test_buzzer_beeps(rig) -> None:
    panel, sim, _ = rig
    assert sim.buzzer() is False
    panel.beep(duration=0.05)
    assert sim.wait_buzzer(True, timeout=5)
    assert sim.wait_buzzer(False, timeout=5)  # a beep ends by itself


def test_background_thread_uses_the_real_clock(cfg, mock_pins) -> None:
    got: list[SeatPress] = []
    reported = threading.Event()

    def take(press: SeatPress) -> None:
        got.append(press)
        reported.set()

    with SeatPanel(cfg, pin_factory=mock_pins) as panel:
        panel.add_listener(take)
        pin = mock_pins.pin(cfg.seats[1].confirm)
        pin.drive_low()
        # only the poll thread, reading the real clock, can pass the debounce time
        assert panel.wait_held(1, "confirm", timeout=5)
        assert got == []  # a short press is reported on release
        pin.drive_high()
        assert reported.wait(5)
        assert panel.wait_held(1, "confirm", held=False, timeout=5)
    assert [(p.seat, p.button, p.long) for p in got] == [(1, "confirm", False)]
    assert cfg.debounce <= got[0].held < cfg.long_press


def test_timings_that_cannot_work_are_a_config_error_and_free_the_pins(cfg, mock_pins) -> None:
    # a SeatPanelConfig built in code reached the debouncer unchecked: a bare ValueError
    from dataclasses import replace

    from firmware_bridge.errors import BridgeConfigError

    with pytest.raises(BridgeConfigError, match="seat panel timing"):
        SeatPanel(replace(cfg, debounce=0.9, long_press=0.8), pin_factory=mock_pins)
    SeatPanel(cfg, pin_factory=mock_pins, poll_interval=None).close()  # every pin is free


def test_nothing_is_delivered_or_driven_after_close(cfg, mock_pins) -> None:
    # a second press decided in the same poll reached the listeners after one closed the
    # panel; poll() after close() still delivered; the LEDs raised gpiozero's own error
    clock = FakeClock()
    panel = SeatPanel(cfg, pin_factory=mock_pins, clock=clock, poll_interval=None)
    got: list[int] = []

    def first_closes(press: SeatPress) -> None:
        got.append(press.seat)
        panel.close()

    panel.add_listener(first_closes)
    sim = PanelSim(cfg, mock_pins, clock, on_tick=None)
    sim.hold(0, "win", bounces=0)
    sim.hold(1, "win", bounces=0)
    clock.advance(0.1)
    sim.release(0, "win", bounces=0)
    sim.release(1, "win", bounces=0)
    clock.advance(0.1)
    panel.poll()
    assert len(got) == 1
    clock.advance(1.0)
    assert panel.poll() == [] and len(got) == 1
    for call in (
        lambda: panel.set_led(0, True),
        lambda: panel.blink_led(1),
        lambda: panel.show(dealer=0, turn=1),
    ):
        with pytest.raises(PinError, match="closed"):
            call()
    assert panel.led_modes() == ["off"] * 4


def test_a_listener_may_close_the_panel(cfg, mock_pins) -> None:
    """A listener (on the panel's own poll thread) closing the panel releases every pin and
    lets the thread end, instead of failing to join itself."""
    from gpiozero import LED

    panel = SeatPanel(cfg, pin_factory=mock_pins)
    closed = threading.Event()

    def close_on_press(press: SeatPress) -> None:
        panel.close()
        closed.set()

    panel.add_listener(close_on_press)
    pin = mock_pins.pin(cfg.seats[0].win)
    pin.drive_low()
    assert panel.wait_held(0, "win", timeout=5)
    pin.drive_high()
    assert closed.wait(5)
    assert panel._thread is not None
    panel._thread.join(5)
    assert not panel._thread.is_alive()
    # every pin is free again
    LED(cfg.seats[0].led, pin_factory=mock_pins).close()
    SeatPanel(cfg, pin_factory=mock_pins, poll_interval=None).close()


def test_pull_down_wiring(cfg, mock_pins) -> None:
    from dataclasses import replace

    from gpiozero.pins.mock import MockFactory

    cfg = replace(cfg, pull_up=False)
    factory = MockFactory()
    clock = FakeClock()
    with SeatPanel(cfg, pin_factory=factory, clock=clock, poll_interval=None) as panel:
        got: list[SeatPress] = []
        panel.add_listener(got.append)
        PanelSim(cfg, factory, clock, on_tick=panel.poll).press(0, "win", hold=0.1)
    assert [(p.seat, p.button) for p in got] == [(0, "win")]


def test_a_pin_in_use_is_a_pin_error_and_releases_the_rest(cfg, mock_pins) -> None:
    from gpiozero import LED

    blocker = LED(cfg.seats[2].led, pin_factory=mock_pins)
    with pytest.raises(PinError, match="seat 2 LED"):
        SeatPanel(cfg, pin_factory=mock_pins, poll_interval=None)
    blocker.close()
    # nothing was left reserved by the failed attempt
    SeatPanel(cfg, pin_factory=mock_pins, poll_interval=None).close()


def test_no_pin_factory_is_explained(cfg, monkeypatch) -> None:
    from gpiozero import Device

    monkeypatch.setattr(Device, "pin_factory", None)
    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "no-such-factory")
    with pytest.raises(PinError, match="GPIOZERO_PIN_FACTORY=mock"):
        SeatPanel(copy.deepcopy(cfg), poll_interval=None)
