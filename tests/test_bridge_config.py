"""The [serial] and [seat_panel] sections: defaults, the documented example, and errors that
name the key at fault."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest

from controller.errors import ConfigError
from firmware_bridge.config import (
    SerialConfig,
    load_bridge_config,
    parse_seat_panel,
    parse_serial,
)
from firmware_bridge.errors import BridgeConfigError

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "table-config.example.toml"


def example() -> dict:
    return tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))


def test_documented_example_loads_and_matches_defaults() -> None:
    cfg = load_bridge_config(EXAMPLE)
    # the example documents the defaults: only the port differs
    assert cfg.serial == SerialConfig(port=cfg.serial.port)
    assert cfg.seat_panel is not None
    assert len(cfg.seat_panel.seats) == 4
    assert cfg.seat_panel.seats[0].win == "GPIO5"
    assert cfg.seat_panel.buzzer == "GPIO26"


def test_empty_serial_section_gives_defaults() -> None:
    assert parse_serial(None) == SerialConfig()
    assert parse_serial({}) == SerialConfig()


@pytest.mark.parametrize(
    ("section", "key", "words"),
    [
        ({"prot": "x"}, "serial.prot", "unknown key; did you mean port"),
        ({"zzz": "x"}, "serial.zzz", r"unknown key \(known: baudrate, command_timeout, "),
        ({"port": ""}, "serial.port", "device path or URL"),
        (
            {"command_timeout": "2"},
            "serial.command_timeout",
            "expected a number of seconds between 0.05 and 600, got '2'",
        ),
        ({"status_interval": 1.0}, "serial.status_interval", "between 0.2 and 0.5"),
        ({"window": 0}, "serial.window", "between 1 and 8"),
        ({"window": 2.5}, "serial.window", "expected an integer between 1 and 8, got 2.5"),
        ({"baudrate": True}, "serial.baudrate", "expected an integer .*, got true"),
        ({"baudrate": "fast"}, "serial.baudrate", "expected an integer .*, got 'fast'"),
        ({"link_lost_after": 0.4}, "serial.link_lost_after", "two status intervals"),
        ({"reconnect_min": 3.0, "reconnect_max": 1.0}, "serial.reconnect_max", "below"),
        (
            {"status_interval": 0.5, "watchdog": 0.3},
            "serial.watchdog",
            "two serial.status_interval",
        ),
        ({"status_interval": 0.5, "watchdog": 0.9}, "serial.watchdog", "two serial.status_int"),
    ],
)
def test_serial_errors_name_the_key(section: dict, key: str, words: str) -> None:
    with pytest.raises(BridgeConfigError, match=words) as info:
        parse_serial(section)
    assert info.value.field == key
    assert isinstance(info.value, ConfigError)
    assert str(info.value).startswith(key + ": ")


def _panel(**changes: object) -> dict:
    sec = copy.deepcopy(example()["seat_panel"])
    sec.update(changes)
    return sec


def test_pin_names_are_normalised() -> None:
    sec = _panel()
    sec["seat"][0]["win"] = "bcm7"
    sec["seat"][1]["win"] = "BOARD7"  # physical pin 7 is GPIO4
    sec["seat"][2]["win"] = "J8:8"  # GPIO14
    sec["seat"][3]["win"] = "18"
    cfg = parse_seat_panel(sec)
    assert [s.win for s in cfg.seats] == ["GPIO7", "GPIO4", "GPIO14", "GPIO18"]


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        # one pin under two names: seat 1's LED is GPIO17, which is the header's pin 11
        (("seat", 0, "led"), "BOARD11", r"pin GPIO17 is already used by seat_panel\.seat\[0\]"),
        (("buzzer",), "17", r"pin GPIO17 is already used"),
        (("buzzer",), "BOARD1", "header pin 1 is power or ground"),
        (("buzzer",), "J8:41", "the header's pins are 1-40"),
        (("buzzer",), "banana", "a name such as 'GPIO17'"),
        (("buzzer",), "GPIO99", "GPIO 99 does not exist"),
    ],
)
def test_a_pin_is_known_whatever_it_is_called(where, value, said) -> None:
    # BOARD11 beside GPIO17 passed, and gpiozero then blamed the wrong key for "pin in use"
    sec = _panel()
    if where[0] == "seat":
        sec["seat"][where[1]][where[2]] = value
    else:
        sec["buzzer"] = value
    with pytest.raises(BridgeConfigError, match=said):
        parse_seat_panel(sec)


def test_a_pin_used_twice_is_refused_naming_both() -> None:
    sec = _panel()
    sec["seat"][2]["led"] = "GPIO5"
    with pytest.raises(BridgeConfigError, match=r"already used by seat_panel\.seat\[0\]\.win") as e:
        parse_seat_panel(sec)
    assert e.value.field == "seat_panel.seat[2].led"


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda s: s["seat"].pop(), "seat_panel.seat"),
        (lambda s: s["seat"][1].pop("confirm"), "seat_panel.seat[1].confirm"),
        (lambda s: s["seat"][1].update(colour="red"), "seat_panel.seat[1].colour"),
        (lambda s: s["seat"][3].update(seat=1), "seat_panel.seat[3].seat"),
        (lambda s: s["seat"][0].update(led=99), "seat_panel.seat[0].led"),
        (lambda s: s["seat"][0].update(led=True), "seat_panel.seat[0].led"),
        (lambda s: s.update(debounce=-1), "seat_panel.debounce"),
        (lambda s: s.update(long_press=0.01, debounce=0.02), "seat_panel.long_press"),
        (lambda s: s.update(pull_up="yes"), "seat_panel.pull_up"),
        (lambda s: s.update(buzzer="GPIO6"), "seat_panel.buzzer"),
    ],
)
def test_seat_panel_errors_name_the_key(mutate, key: str) -> None:  # type: ignore[no-untyped-def]
    sec = _panel()
    mutate(sec)
    with pytest.raises(BridgeConfigError) as info:
        parse_seat_panel(sec)
    assert info.value.field == key


def test_missing_seat_panel_section() -> None:
    with pytest.raises(BridgeConfigError, match="missing"):
        parse_seat_panel(None)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(BridgeConfigError, match="does not exist"):
        load_bridge_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[serial\nport = 1\n")
    with pytest.raises(BridgeConfigError, match="not valid TOML"):
        load_bridge_config(bad)
    other = tmp_path / "other.toml"
    other.write_text('[rules]\nprofile = "shanghai"\n[serial]\nport = "socket://localhost:1"\n')
    cfg = load_bridge_config(other)
    assert cfg.serial.port == "socket://localhost:1"
    assert cfg.seat_panel is None
