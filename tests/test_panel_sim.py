"""The panel simulator itself: its clock and the pin levels it drives."""

from __future__ import annotations

import threading
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from firmware_bridge.config import parse_seat_panel
from hardware_sim.panel_sim import FakeClock, PanelSim, watch_pins

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "table-config.example.toml"


def cfg():
    return parse_seat_panel(tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))["seat_panel"])


def test_fake_clock_moves_only_forward() -> None:
    clock = FakeClock(5.0)
    assert clock() == 5.0
    clock.advance(0.25)
    assert clock() == 5.25
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_press_drives_the_button_pin_and_ticks(mock_pins) -> None:
    c = cfg()
    pin = mock_pins.pin(c.seats[1].win)
    pin.input_with_pull("up")
    clock = FakeClock()
    ticks: list[float] = []
    levels: list[bool] = []
    sim = PanelSim(
        c, mock_pins, clock, on_tick=lambda t: (ticks.append(t), levels.append(pin.state))
    )
    sim.press(1, "win", hold=0.05, bounces=3)
    assert pin.state is True  # released: the pull-up holds it high
    assert False in levels  # held low while pressed
    assert ticks == sorted(ticks)
    assert clock() == pytest.approx(1000.0 + 0.003 + 0.05 + 0.003 + 0.045, abs=1e-6)


def test_pull_down_wiring_drives_high_when_pressed(mock_pins) -> None:
    c = replace(cfg(), pull_up=False)
    pin = mock_pins.pin(c.seats[0].confirm)
    pin.input_with_pull("down")
    sim = PanelSim(c, mock_pins, FakeClock())
    sim.hold(0, "confirm", bounces=0)
    assert pin.state is True
    sim.release(0, "confirm", bounces=0)
    assert pin.state is False


def test_a_watched_pin_wakes_its_waiter_when_it_changes(mock_pins) -> None:
    c = cfg()
    watch_pins(mock_pins)
    sim = PanelSim(c, mock_pins, FakeClock())
    led = mock_pins.pin(c.seats[2].led)
    led.function = "output"
    assert not sim.wait_led(2, True, timeout=0)
    answers: list[bool] = []
    waiter = threading.Thread(target=lambda: answers.append(sim.wait_led(2, True, timeout=60)))
    waiter.start()
    led.state = True
    waiter.join(5)
    assert not waiter.is_alive() and answers == [True]
    assert sim.wait_led(2, True, timeout=0) and not sim.wait_led(2, False, timeout=0)
    buzzer = mock_pins.pin(c.buzzer)
    buzzer.function = "output"
    assert sim.wait_buzzer(False, timeout=0) and not sim.wait_buzzer(True, timeout=0)


def test_waiting_on_a_pin_that_cannot_be_watched_says_how(mock_pins) -> None:
    c = cfg()
    sim = PanelSim(c, mock_pins, FakeClock())
    with pytest.raises(TypeError, match=r"call watch_pins\(factory\) before"):
        sim.wait_led(0, True, timeout=0)
    quiet = PanelSim(replace(c, buzzer=None), mock_pins, FakeClock())
    with pytest.raises(ValueError, match="no buzzer"):
        quiet.wait_buzzer(True, timeout=0)
