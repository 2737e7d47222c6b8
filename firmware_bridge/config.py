"""The bridge's part of the table configuration file: its ``[serial]`` and ``[seat_panel]``
tables (see ``docs/table-config.example.toml``).

The controller loads the whole TOML file and hands each section to :func:`parse_serial` and
:func:`parse_seat_panel`; :func:`load_bridge_config` does both for tools that only need the
bridge. Unknown keys, wrong types and impossible values raise
:class:`~firmware_bridge.errors.BridgeConfigError` naming the key (``serial.port``,
``seat_panel.seat[2].led``), so a typo never passes silently.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from firmware_bridge.errors import BridgeConfigError

__all__ = [
    "BridgeConfig",
    "SeatPanelConfig",
    "SeatPins",
    "SerialConfig",
    "load_bridge_config",
    "parse_seat_panel",
    "parse_serial",
]

SEATS = 4


@dataclass(frozen=True)
class SerialConfig:
    """How to reach the table's MCU. Times are in seconds."""

    #: a pyserial URL: ``/dev/serial/by-id/...``, a pty path, ``socket://host:port``
    port: str | None = None
    baudrate: int = 115200
    #: timeout of quick commands (identify, status, lights, stop, clear)
    command_timeout: float = 2.0
    shuffle_timeout: float = 60.0
    #: timeout of raising or lowering the walls
    walls_timeout: float = 30.0
    dice_timeout: float = 10.0
    #: how long to wait for the port and the handshake before a call gives up
    connect_timeout: float = 10.0
    #: how often the MCU is asked to send its status (0.2-0.5 s)
    status_interval: float = 0.25
    #: no status for this long means the link is lost
    link_lost_after: float = 1.0
    #: the MCU stops the motors when the host is silent for longer than this
    watchdog: float = 1.0
    #: backoff between attempts to reopen a lost port: starts here, doubles, capped
    reconnect_min: float = 0.05
    reconnect_max: float = 2.0
    #: DATA frames in flight before waiting for an acknowledgement
    window: int = 4
    #: cap of the doubling retransmission timeout (it starts at 25 ms)
    retransmit_cap: float = 0.4
    #: tiles in one set (136 + 8 flowers), pushed to the MCU at every handshake
    tiles_per_set: int = 144


@dataclass(frozen=True)
class SeatPins:
    """The pins of one seat: its win (胡) button, its confirm button and its LED."""

    win: str
    confirm: str
    led: str


@dataclass(frozen=True)
class SeatPanelConfig:
    """The GPIO seat panel. Pins are gpiozero pin names by GPIO number (``GPIO17``); the
    config file may also say ``17``, ``BCM17``, ``BOARD11`` or ``J8:11``."""

    seats: tuple[SeatPins, ...]
    buzzer: str | None = None
    #: a level must hold this long to count (seconds)
    debounce: float = 0.02
    #: a press held at least this long is a long press (seconds)
    long_press: float = 0.8
    #: buttons connect the pin to ground, with the internal pull-up (True) or to 3.3 V
    pull_up: bool = True


@dataclass(frozen=True)
class BridgeConfig:
    serial: SerialConfig = field(default_factory=SerialConfig)
    seat_panel: SeatPanelConfig | None = None


def _err(key: str, message: str) -> BridgeConfigError:
    return BridgeConfigError(message, field=key)


def _number(sec: Mapping[str, Any], prefix: str, key: str, lo: float, hi: float) -> float | None:
    if key not in sec:
        return None
    v = sec[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise _err(f"{prefix}.{key}", f"must be a number of seconds, not {v!r}")
    if not lo <= v <= hi:
        raise _err(f"{prefix}.{key}", f"must be between {lo} and {hi}, not {v}")
    return float(v)


def _integer(sec: Mapping[str, Any], prefix: str, key: str, lo: int, hi: int) -> int | None:
    if key not in sec:
        return None
    v = sec[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise _err(f"{prefix}.{key}", f"must be a whole number, not {v!r}")
    if not lo <= v <= hi:
        raise _err(f"{prefix}.{key}", f"must be between {lo} and {hi}, not {v}")
    return v


def _check_keys(sec: Mapping[str, Any], prefix: str, allowed: set[str]) -> None:
    for key in sec:
        if key not in allowed:
            hint = ", ".join(sorted(allowed))
            raise _err(f"{prefix}.{key}", f"unknown setting (known: {hint})")


def _section(value: Any, name: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _err(name, f"must be a table ([{name}]), not {type(value).__name__}")
    return value


MAX_TIMEOUT = 3600.0
"""The longest a command may be given to finish, in seconds (an hour's shuffle is a jam; far
larger values overflow the platform's time_t inside the waits)."""

_SERIAL_NUMBERS = {
    "command_timeout": (0.05, 600.0),
    "shuffle_timeout": (0.1, MAX_TIMEOUT),
    "walls_timeout": (0.1, MAX_TIMEOUT),
    "dice_timeout": (0.1, 600.0),
    "connect_timeout": (0.1, 600.0),
    "status_interval": (0.2, 0.5),
    "link_lost_after": (0.3, 60.0),
    "watchdog": (0.3, 60.0),
    "reconnect_min": (0.01, 10.0),
    "reconnect_max": (0.05, 60.0),
    "retransmit_cap": (0.05, 5.0),
}


def parse_serial(section: Mapping[str, Any] | None) -> SerialConfig:
    """The ``[serial]`` table (missing keys take the defaults of :class:`SerialConfig`)."""
    sec = _section(section, "serial")
    allowed = {"port", "baudrate", "window", "tiles_per_set", *_SERIAL_NUMBERS}
    _check_keys(sec, "serial", allowed)
    kw: dict[str, Any] = {}
    if "port" in sec:
        port = sec["port"]
        if not isinstance(port, str) or not port.strip():
            raise _err("serial.port", "must be a device path or URL such as socket://host:port")
        kw["port"] = port.strip()
    for key, (lo, hi) in _SERIAL_NUMBERS.items():
        v = _number(sec, "serial", key, lo, hi)
        if v is not None:
            kw[key] = v
    for key, lo, hi in (
        ("baudrate", 1200, 4_000_000),
        ("window", 1, 8),
        ("tiles_per_set", 1, 1000),
    ):
        iv = _integer(sec, "serial", key, lo, hi)
        if iv is not None:
            kw[key] = iv
    cfg = SerialConfig(**kw)
    if cfg.link_lost_after < 2 * cfg.status_interval:
        raise _err(
            "serial.link_lost_after",
            f"must be at least two status intervals ({2 * cfg.status_interval} s), "
            "or a single late status would count as a lost link",
        )
    if cfg.watchdog < 2 * cfg.status_interval:
        # the host's keepalives come about once per status interval; a shorter watchdog
        # would stop every motion between two of them
        raise _err(
            "serial.watchdog",
            f"must be at least two serial.status_interval ({2 * cfg.status_interval} s), "
            "or the MCU stops the motors between two keepalives",
        )
    if cfg.reconnect_max < cfg.reconnect_min:
        raise _err("serial.reconnect_max", "must not be below serial.reconnect_min")
    return cfg


_GPIO_NAME = re.compile(r"^(?:GPIO|BCM)?(\d+)$", re.IGNORECASE)
_HEADER_NAME = re.compile(r"^(?:BOARD|J8:)(\d+)$", re.IGNORECASE)
_HEADER_GPIO = {
    3: 2, 5: 3, 7: 4, 8: 14, 10: 15, 11: 17, 12: 18, 13: 27, 15: 22, 16: 23, 18: 24, 19: 10,
    21: 9, 22: 25, 23: 11, 24: 8, 26: 7, 27: 0, 28: 1, 29: 5, 31: 6, 32: 12, 33: 13, 35: 19,
    36: 16, 37: 26, 38: 20, 40: 21,
}  # fmt: skip
"""The 40-pin header's GPIO pins (physical number: Broadcom GPIO); the others are power and
ground."""


def _pin(value: Any, key: str) -> str:
    """A pin as gpiozero names it by its GPIO number (``GPIO17``), from any of the names
    that mean it (17, ``"17"``, ``"BCM17"``, ``"BOARD11"``, ``"J8:11"``), so that one pin
    given under two names is caught as used twice."""
    forms = "a GPIO number or a name such as 'GPIO17', 'BCM17', 'BOARD11' or 'J8:11'"
    if isinstance(value, bool):
        raise _err(key, f"must be {forms}, not {value!r}")
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if m := _GPIO_NAME.match(text):
            number = int(m.group(1))
        elif m := _HEADER_NAME.match(text):
            physical = int(m.group(1))
            if not 1 <= physical <= 40:
                raise _err(key, f"{text}: the header's pins are 1-40")
            if physical not in _HEADER_GPIO:
                raise _err(key, f"{text}: header pin {physical} is power or ground, not a GPIO")
            number = _HEADER_GPIO[physical]
        else:
            raise _err(key, f"must be {forms}, not {value!r}")
    else:
        raise _err(key, f"must be {forms}, not {value!r}")
    if not 0 <= number <= 53:
        raise _err(key, f"GPIO {number} does not exist (0-53)")
    return f"GPIO{number}"


def parse_seat_panel(section: Mapping[str, Any] | None) -> SeatPanelConfig:
    """The ``[seat_panel]`` table with its four ``[[seat_panel.seat]]`` entries (seat 0
    first). Raises if a pin is used twice."""
    if section is None:
        raise _err("seat_panel", "missing: the seat panel needs a [seat_panel] table")
    sec = _section(section, "seat_panel")
    _check_keys(sec, "seat_panel", {"seat", "buzzer", "debounce", "long_press", "pull_up"})
    used: dict[str, str] = {}

    def claim(pin: str, key: str) -> str:
        if pin in used:
            raise _err(key, f"pin {pin} is already used by {used[pin]}")
        used[pin] = key
        return pin

    seats_raw = sec.get("seat")
    if not isinstance(seats_raw, list) or len(seats_raw) != SEATS:
        n = len(seats_raw) if isinstance(seats_raw, list) else 0
        raise _err(
            "seat_panel.seat",
            f"needs exactly {SEATS} [[seat_panel.seat]] entries, seat 0 first; found {n}",
        )
    seats = []
    for i, entry in enumerate(seats_raw):
        prefix = f"seat_panel.seat[{i}]"
        entry = _section(entry, prefix)
        _check_keys(entry, prefix, {"seat", "win", "confirm", "led"})
        if "seat" in entry and entry["seat"] != i:
            raise _err(
                f"{prefix}.seat", f"entry {i} says seat {entry['seat']!r}; list seats 0-3 in order"
            )
        pins = {}
        for role in ("win", "confirm", "led"):
            if role not in entry:
                raise _err(f"{prefix}.{role}", "missing pin")
            pins[role] = claim(_pin(entry[role], f"{prefix}.{role}"), f"{prefix}.{role}")
        seats.append(SeatPins(**pins))
    buzzer = None
    if "buzzer" in sec:
        buzzer = claim(_pin(sec["buzzer"], "seat_panel.buzzer"), "seat_panel.buzzer")
    kw: dict[str, Any] = {}
    for key, lo, hi in (("debounce", 0.0, 0.5), ("long_press", 0.1, 10.0)):
        v = _number(sec, "seat_panel", key, lo, hi)
        if v is not None:
            kw[key] = v
    if "pull_up" in sec:
        if not isinstance(sec["pull_up"], bool):
            raise _err("seat_panel.pull_up", "must be true or false")
        kw["pull_up"] = sec["pull_up"]
    cfg = SeatPanelConfig(seats=tuple(seats), buzzer=buzzer, **kw)
    if cfg.long_press <= cfg.debounce:
        raise _err("seat_panel.long_press", "must be longer than seat_panel.debounce")
    return cfg


def load_bridge_config(path: str | Path, *, seat_panel: bool = True) -> BridgeConfig:
    """Read the table config file and parse the bridge's sections (others are left alone;
    ``seat_panel=False`` leaves ``[seat_panel]`` alone too, for a serial-only tool, so a
    wiring mistake there does not stop it talking to the MCU)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BridgeConfigError(f"config file {p} does not exist") from None
    except OSError as exc:
        raise BridgeConfigError(f"cannot read config file {p}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BridgeConfigError(f"{p} is not valid TOML: {exc}") from None
    serial = parse_serial(data.get("serial"))
    panel = parse_seat_panel(data["seat_panel"]) if seat_panel and "seat_panel" in data else None
    return BridgeConfig(serial=serial, seat_panel=panel)
