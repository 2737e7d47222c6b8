"""The bridge's part of the table configuration file: its ``[serial]`` and ``[seat_panel]``
tables (see ``docs/table-config.example.toml``).

The controller reads the whole file with :func:`controller.config.load_config`, which hands
these two sections to :func:`parse_serial` and :func:`parse_seat_panel`;
:func:`load_bridge_config` does both for tools that only need the bridge. Unknown keys, wrong
types and impossible values raise :class:`~firmware_bridge.errors.BridgeConfigError` naming
the key (``serial.port``, ``seat_panel.seat[2].led``), so a typo never passes silently.

Validation goes through msgspec: the limits live on the fields as ``Annotated[..., Meta()]``,
and a strict ``Struct`` (``forbid_unknown_fields``) is decoded first. Only what msgspec cannot
say is checked by hand afterwards: rules between two fields and pins used twice.

:func:`convert_section` (msgspec's error turned into a one-line message naming the dotted key)
lives here rather than in :mod:`controller.config` because the bridge may not import the
controller beyond its errors; ``controller.config`` builds its own sections on it.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import msgspec
import msgspec.inspect as mi
from msgspec import Meta

from firmware_bridge.errors import BridgeConfigError

__all__ = [
    "MAX_TIMEOUT",
    "BridgeConfig",
    "SeatPanelConfig",
    "SeatPins",
    "SerialConfig",
    "convert_section",
    "describe_type",
    "describe_validation_error",
    "escape",
    "load_bridge_config",
    "parse_seat_panel",
    "parse_serial",
    "show_key",
    "show_value",
]

T = TypeVar("T")

SEATS = 4

MAX_TIMEOUT = 3600.0
"""The longest a command may be given to finish, in seconds (an hour's shuffle is a jam; far
larger values overflow the platform's time_t inside the waits)."""


SECONDS = Meta(extra={"unit": "seconds"})
"""Marks a number as seconds, for the error message (see :func:`describe_type`); the limits
beside it (``Meta(ge=, le=)``) also refuse NaN and the infinities."""


Debounce = Annotated[float, Meta(ge=0.0, le=0.5), SECONDS]
LongPress = Annotated[float, Meta(ge=0.1, le=10.0), SECONDS]


@dataclass(frozen=True)
class SerialConfig:
    """How to reach the table's MCU. Times are in seconds.

    A frozen dataclass (not a msgspec Struct) so that ``dataclasses.replace`` keeps working for
    the device command's ``--timeout``; the ``Annotated`` limits are what the file may say.
    """

    #: a pyserial URL: ``/dev/serial/by-id/...``, a pty path, ``socket://host:port``
    port: str | None = None
    baudrate: Annotated[int, Meta(ge=1200, le=4_000_000)] = 115200
    #: timeout of quick commands (identify, status, lights, stop, clear)
    command_timeout: Annotated[float, Meta(ge=0.05, le=600.0), SECONDS] = 2.0
    shuffle_timeout: Annotated[float, Meta(ge=0.1, le=MAX_TIMEOUT), SECONDS] = 60.0
    #: timeout of raising or lowering the walls
    walls_timeout: Annotated[float, Meta(ge=0.1, le=MAX_TIMEOUT), SECONDS] = 30.0
    dice_timeout: Annotated[float, Meta(ge=0.1, le=600.0), SECONDS] = 10.0
    #: how long to wait for the port and the handshake before a call gives up
    connect_timeout: Annotated[float, Meta(ge=0.1, le=600.0), SECONDS] = 10.0
    #: how often the MCU is asked to send its status (0.2-0.5 s)
    status_interval: Annotated[float, Meta(ge=0.2, le=0.5), SECONDS] = 0.25
    #: no status for this long means the link is lost
    link_lost_after: Annotated[float, Meta(ge=0.3, le=60.0), SECONDS] = 1.0
    #: the MCU stops the motors when the host is silent for longer than this
    watchdog: Annotated[float, Meta(ge=0.3, le=60.0), SECONDS] = 1.0
    #: backoff between attempts to reopen a lost port: starts here, doubles, capped
    reconnect_min: Annotated[float, Meta(ge=0.01, le=10.0), SECONDS] = 0.05
    reconnect_max: Annotated[float, Meta(ge=0.05, le=60.0), SECONDS] = 2.0
    #: DATA frames in flight before waiting for an acknowledgement
    window: Annotated[int, Meta(ge=1, le=8)] = 4
    #: cap of the doubling retransmission timeout (it starts at 25 ms)
    retransmit_cap: Annotated[float, Meta(ge=0.05, le=5.0), SECONDS] = 0.4
    #: tiles in one set (136 + 8 flowers), pushed to the MCU at every handshake
    tiles_per_set: Annotated[int, Meta(ge=1, le=1000)] = 144


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
    debounce: Debounce = 0.02
    #: a press held at least this long is a long press (seconds)
    long_press: LongPress = 0.8
    #: buttons connect the pin to ground, with the internal pull-up (True) or to 3.3 V
    pull_up: bool = True


@dataclass(frozen=True)
class BridgeConfig:
    serial: SerialConfig = field(default_factory=SerialConfig)
    seat_panel: SeatPanelConfig | None = None


# --- msgspec errors as one-line messages naming the key -------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")
_MISSING = object()
_CUSTOM_NAMES: dict[type, str] = {Path: "a path"}
_DICT_TYPES = tuple(
    t for t in (mi.DictType, getattr(mi, "FrozenDictType", None)) if t is not None
)  # FrozenDictType is newer than msgspec 0.18


def escape(text: str) -> str:
    """``text`` with every character that is not printable (control characters, line and
    paragraph separators, bidi overrides) escaped as Python would, so a message stays one
    honest line; printable non-ASCII (seat names in Chinese) is kept."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def show_key(key: object) -> str:
    """A key as a message may echo it: bare TOML keys as they are, anything else quoted with
    ``repr`` (control characters escaped, never printed raw) and cut short."""
    if isinstance(key, str) and _BARE_KEY.fullmatch(key):
        return key
    return show_value(key)


def show_value(value: object) -> str:
    """A value as a message may echo it: one line, control characters escaped, cut short, in
    TOML's spelling where it differs from Python's (``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # str() of a huge int is slow, and refused past 4300 digits
        return (
            repr(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
        )
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[:40]) + ("..." if len(value) > 40 else "")
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)}"
    if value is None:
        return "nothing"
    if isinstance(value, datetime.date | datetime.time):
        return f"a {type(value).__name__} ({value.isoformat()})"
    return f"a {type(value).__name__}"


def _number(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def _bounds(t: mi.IntType | mi.FloatType) -> str:
    if t.ge is not None and t.le is not None:
        return f" between {_number(t.ge)} and {_number(t.le)}"
    lo = f"at least {_number(t.ge)}" if t.ge is not None else None
    lo = f"above {_number(t.gt)}" if t.gt is not None else lo
    hi = f"at most {_number(t.le)}" if t.le is not None else None
    hi = f"below {_number(t.lt)}" if t.lt is not None else hi
    parts = [p for p in (lo, hi) if p]
    return " " + " and ".join(parts) if parts else ""


def _length(lo: int | None, hi: int | None, unit: str) -> str:
    if lo is not None and hi is not None:
        return f" of {lo}-{hi} {unit}" if lo != hi else f" of {lo} {unit}"
    if lo is not None:
        return f" of at least {lo} {unit}"
    return f" of at most {hi} {unit}" if hi is not None else ""


def describe_type(t: mi.Type) -> str:
    """What a value of type ``t`` looks like, in words a config file's author knows."""
    match t:
        case mi.Metadata(type=mi.IntType() | mi.FloatType() as number) if (
            t.extra and "unit" in t.extra
        ):
            # Meta(extra={"unit": "seconds"}) says what the number counts
            return f"a number of {t.extra['unit']}{_bounds(number)}"
        case mi.Metadata():
            return describe_type(t.type)
        case mi.BoolType():
            return "true or false"
        case mi.IntType() | mi.FloatType():
            return ("an integer" if isinstance(t, mi.IntType) else "a number") + _bounds(t)
        case mi.StrType() if t.min_length == 1 and t.max_length is None:
            return "a non-empty string"
        case mi.StrType():
            return "a string" + _length(t.min_length, t.max_length, "characters")
        case mi.LiteralType() | mi.EnumType():
            values = t.values if isinstance(t, mi.LiteralType) else [m.value for m in t.cls]
            shown = [show_value(v) for v in values]
            return shown[0] if len(shown) == 1 else "one of " + ", ".join(shown)
        case mi.TupleType():
            return f"a list of {len(t.item_types)}"
        case mi.CollectionType():
            return "a list" + _length(t.min_length, t.max_length, "items")
        case mi.StructType() | mi.DataclassType() | mi.DictType() | mi.TypedDictType():
            return "a table"
        case mi.DateTimeType() | mi.DateType() | mi.TimeType():
            return "a TOML date or time"
        case mi.UnionType():
            members = [m for m in t.types if not isinstance(m, mi.NoneType)]
            return " or ".join(describe_type(m) for m in members) or "nothing"
        case mi.CustomType():
            return _CUSTOM_NAMES.get(t.cls, f"a {t.cls.__name__}")
        case mi.NoneType():
            return "nothing"
        case _:
            return "a value of another kind"


def _parse_path(where: str) -> list[str | int | None] | None:
    """msgspec's ``$.seat[2].led`` as steps (``None`` for a dict entry msgspec does not
    name, ``[...]``), or None when the path cannot be read."""
    if not where.startswith("$"):
        return None
    steps: list[str | int | None] = []
    for m in re.finditer(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[\.\.\.\]|(.)", where[1:]):
        if m.group(3) is not None:
            return None
        steps.append(m.group(1) if m.group(1) else int(m.group(2)) if m.group(2) else None)
    return steps


def _render(steps: Sequence[str | int | None]) -> str:
    out = ""
    for s in steps:
        out += f"[{s}]" if isinstance(s, int) else "[...]" if s is None else f".{s}"
    return out.removeprefix(".")


def _step_type(t: mi.Type, step: str | int | None) -> mi.Type | None:
    """The type one step below ``t`` (a union is narrowed to its member that has steps)."""
    while isinstance(t, mi.Metadata):
        t = t.type
    if isinstance(t, mi.UnionType):
        members = (_step_type(m, step) for m in t.types)
        return next((m for m in members if m is not None), None)
    if isinstance(step, str) and isinstance(t, mi.StructType | mi.DataclassType):
        return next((f.type for f in t.fields if f.encode_name == step), None)
    if isinstance(t, _DICT_TYPES) and not isinstance(step, int):
        return t.value_type
    if isinstance(step, int) and isinstance(t, mi.TupleType):
        return t.item_types[step] if step < len(t.item_types) else None
    if isinstance(step, int) and isinstance(t, mi.CollectionType):
        return t.item_type
    return None


def _step_value(value: Any, step: str | int | None) -> Any:
    if isinstance(step, str) and isinstance(value, Mapping):
        return value.get(step, _MISSING)
    if isinstance(step, int) and isinstance(value, list | tuple) and step < len(value):
        return value[step]
    return _MISSING


def _fields(t: mi.Type | None) -> tuple[mi.Field, ...]:
    while isinstance(t, mi.Metadata):
        t = t.type
    if isinstance(t, mi.UnionType):
        return next((f for f in map(_fields, t.types) if f), ())
    if isinstance(t, mi.StructType | mi.DataclassType | mi.TypedDictType):
        return t.fields
    return ()


def _unknown_key_message(key: object, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) else []
    if close:
        return f"unknown key; did you mean {close[0]}?"
    return f"unknown key (known: {', '.join(sorted(known))})" if known else "unknown key"


def describe_validation_error(
    exc: msgspec.ValidationError, data: Any, type_: Any
) -> tuple[str, str]:
    """``(key, message)`` for msgspec's error about ``data`` decoded as ``type_``: the dotted
    key relative to ``data`` (``seat[2].led``; ``""`` for ``data`` itself) and a one-line
    message that says what was expected and echoes, escaped, what was found.

    msgspec's own text names types as Python does (``Expected `int`, got `str```) and never
    shows the value; the type at the key is looked up instead, so the limits can be said too.
    """
    text = str(exc)
    message, sep, where = text.rpartition(" - at `")
    if not sep:
        message, where = text, "$`"
    where = where.removesuffix("`")
    in_key = where.startswith("key` in `")
    steps = _parse_path(where.removeprefix("key` in `"))
    if steps is None:  # a path msgspec spells in a way not foreseen: still one line
        return "", escape(text)
    value: Any = data
    t: mi.Type | None = mi.type_info(type_)
    for step in steps:
        value, t = _step_value(value, step), _step_type(t, step) if t is not None else None
    key = _render(steps)
    if in_key and isinstance(value, Mapping):
        bad = next((k for k in value if not isinstance(k, str)), "?")
        return key, f"keys must be strings, got {show_value(bad)}"
    if message.startswith("Object contains unknown field") and isinstance(value, Mapping):
        known = [f.encode_name for f in _fields(t)]
        bad = next((k for k in value if k not in known), "?")
        return _join(key, show_key(bad)), _unknown_key_message(bad, known)
    if message.startswith("Object missing required field") and isinstance(value, Mapping):
        missing = next(
            (f.encode_name for f in _fields(t) if f.required and f.encode_name not in value), "?"
        )
        return _join(key, missing), "missing (required)"
    if t is None or isinstance(t, mi.CustomType) or value is _MISSING:
        # a dec_hook's own words (it names what it expects), or a path we could not follow
        return key, escape(message)
    return key, f"expected {describe_type(t)}, got {show_value(value)}"


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix and not key.startswith("[") else prefix + key


def _bridge_error(key: str, message: str) -> Exception:
    return BridgeConfigError(message, field=key)


def convert_section(
    data: Any,
    type_: type[T],
    *,
    section: str,
    dec_hook: Callable[[type, Any], Any] | None = None,
    error: Callable[[str, str], Exception] = _bridge_error,
) -> T:
    """``msgspec.convert(data, type_)``, where a mistake raises ``error(key, message)`` with
    the dotted key under ``section`` (``seat_panel.seat[2].led``) and a one-line message.

    ``type_`` should be a frozen ``msgspec.Struct`` with ``forbid_unknown_fields=True`` (or
    any type msgspec converts to; dataclasses let unknown keys pass). ``dec_hook`` turns
    values into types msgspec does not know (a ``ValueError`` it raises becomes the message).
    """
    try:
        return msgspec.convert(data, type_, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        key, message = describe_validation_error(exc, data, type_)
        raise error(_join(section, key), message) from None


@cache
def _strict_mirror(cls: type) -> type[msgspec.Struct]:
    """A frozen Struct with the fields, types, limits and defaults of the flat dataclass
    ``cls`` that refuses unknown keys, which msgspec does not do for dataclasses."""
    hints = get_type_hints(cls, include_extras=True)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            fields.append((f.name, hints[f.name], f.default))
        elif f.default_factory is not dataclasses.MISSING:
            fields.append((f.name, hints[f.name], msgspec.field(default_factory=f.default_factory)))
        else:
            fields.append((f.name, hints[f.name]))
    return msgspec.defstruct(
        f"{cls.__name__}Section", fields, frozen=True, forbid_unknown_fields=True, kw_only=True
    )


def _as_dict(value: Any) -> Any:
    """A section as msgspec converts it: None is an empty table, any mapping a dict."""
    if value is None:
        return {}
    return dict(value) if isinstance(value, Mapping) and not isinstance(value, dict) else value


# --- [serial] ---------------------------------------------------------------------------------


def parse_serial(section: Mapping[str, Any] | None) -> SerialConfig:
    """The ``[serial]`` table (missing keys take the defaults of :class:`SerialConfig`)."""
    raw = convert_section(_as_dict(section), _strict_mirror(SerialConfig), section="serial")
    cfg = SerialConfig(**msgspec.structs.asdict(raw))
    if cfg.port is not None:
        if not cfg.port.strip():
            raise _bridge_error(
                "serial.port", "must be a device path or URL such as socket://host:port"
            )
        cfg = dataclasses.replace(cfg, port=cfg.port.strip())
    _check_serial(cfg)
    return cfg


def _check_serial(cfg: SerialConfig) -> None:
    """The rules between two [serial] keys, which msgspec's per-field limits cannot say."""
    if cfg.link_lost_after < 2 * cfg.status_interval:
        raise _bridge_error(
            "serial.link_lost_after",
            f"must be at least two status intervals ({2 * cfg.status_interval} s), "
            "or a single late status would count as a lost link",
        )
    if cfg.watchdog < 2 * cfg.status_interval:
        # the host's keepalives come about once per status interval; a shorter watchdog
        # would stop every motion between two of them
        raise _bridge_error(
            "serial.watchdog",
            f"must be at least two serial.status_interval ({2 * cfg.status_interval} s), "
            "or the MCU stops the motors between two keepalives",
        )
    if cfg.reconnect_max < cfg.reconnect_min:
        raise _bridge_error("serial.reconnect_max", "must not be below serial.reconnect_min")


# --- [seat_panel] -----------------------------------------------------------------------------

_GPIO_NAME = re.compile(r"^(?:GPIO|BCM)?(\d+)$", re.IGNORECASE)
_HEADER_NAME = re.compile(r"^(?:BOARD|J8:)(\d+)$", re.IGNORECASE)
_HEADER_GPIO = {
    3: 2, 5: 3, 7: 4, 8: 14, 10: 15, 11: 17, 12: 18, 13: 27, 15: 22, 16: 23, 18: 24, 19: 10,
    21: 9, 22: 25, 23: 11, 24: 8, 26: 7, 27: 0, 28: 1, 29: 5, 31: 6, 32: 12, 33: 13, 35: 19,
    36: 16, 37: 26, 38: 20, 40: 21,
}  # fmt: skip
"""The 40-pin header's GPIO pins (physical number: Broadcom GPIO); the others are power and
ground."""

Pin = int | str
"""A pin as the file may give it: a GPIO number or a name; :func:`_pin` reads the name."""


class _SeatEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One ``[[seat_panel.seat]]`` as written; ``seat``, when given, must be its index."""

    win: Pin
    confirm: Pin
    led: Pin
    seat: int | None = None


# (seats, with no default, is not read from here)
_PANEL_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(SeatPanelConfig)}


class _SeatPanelSection(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The ``[seat_panel]`` table as written (pins not yet read); defaults are those of
    :class:`SeatPanelConfig`, limits too."""

    seat: list[_SeatEntry] = msgspec.field(default_factory=list)
    buzzer: Pin | None = None
    debounce: Debounce = _PANEL_DEFAULTS["debounce"]
    long_press: LongPress = _PANEL_DEFAULTS["long_press"]
    pull_up: bool = _PANEL_DEFAULTS["pull_up"]


def _small(digits: str) -> int:
    """A pin number's digits as an int, any run too long for a pin read as 9999 (no pin),
    so that a thousand-digit 'GPIO...' costs nothing."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 4 else 9999


def _pin(value: Pin, key: str) -> str:
    """A pin as gpiozero names it by its GPIO number (``GPIO17``), from any of the names
    that mean it (17, ``"17"``, ``"BCM17"``, ``"BOARD11"``, ``"J8:11"``), so that one pin
    given under two names is caught as used twice."""
    forms = "a GPIO number or a name such as 'GPIO17', 'BCM17', 'BOARD11' or 'J8:11'"
    text = value.strip() if isinstance(value, str) else ""
    if isinstance(value, int):
        number = value
    elif text.isascii() and (m := _GPIO_NAME.match(text)):
        number = _small(m.group(1))
    elif text.isascii() and (m := _HEADER_NAME.match(text)):
        physical = _small(m.group(1))
        if not 1 <= physical <= 40:
            raise _bridge_error(key, f"{escape(text[:40])}: the header's pins are 1-40")
        if physical not in _HEADER_GPIO:
            raise _bridge_error(
                key, f"{text}: header pin {physical} is power or ground, not a GPIO"
            )
        number = _HEADER_GPIO[physical]
    else:
        raise _bridge_error(key, f"must be {forms}, not {show_value(value)}")
    if not 0 <= number <= 53:
        raise _bridge_error(key, f"GPIO {show_value(number)} does not exist (0-53)")
    return f"GPIO{number}"


def parse_seat_panel(section: Mapping[str, Any] | None) -> SeatPanelConfig:
    """The ``[seat_panel]`` table with its four ``[[seat_panel.seat]]`` entries (seat 0
    first). Raises if a pin is used twice."""
    if section is None:
        raise _bridge_error("seat_panel", "missing: the seat panel needs a [seat_panel] table")
    raw = convert_section(_as_dict(section), _SeatPanelSection, section="seat_panel")
    if len(raw.seat) != SEATS:
        raise _bridge_error(
            "seat_panel.seat",
            f"needs exactly {SEATS} [[seat_panel.seat]] entries, seat 0 first; "
            f"found {len(raw.seat)}",
        )
    used: dict[str, str] = {}

    def claim(value: Pin, key: str) -> str:
        pin = _pin(value, key)
        if pin in used:
            raise _bridge_error(key, f"pin {pin} is already used by {used[pin]}")
        used[pin] = key
        return pin

    seats = []
    for i, entry in enumerate(raw.seat):
        prefix = f"seat_panel.seat[{i}]"
        if entry.seat is not None and entry.seat != i:
            raise _bridge_error(
                f"{prefix}.seat", f"entry {i} says seat {entry.seat}; list seats 0-3 in order"
            )
        pins = {
            role: claim(getattr(entry, role), f"{prefix}.{role}")
            for role in ("win", "confirm", "led")
        }
        seats.append(SeatPins(**pins))
    buzzer = None if raw.buzzer is None else claim(raw.buzzer, "seat_panel.buzzer")
    if raw.long_press <= raw.debounce:
        raise _bridge_error("seat_panel.long_press", "must be longer than seat_panel.debounce")
    return SeatPanelConfig(
        seats=tuple(seats),
        buzzer=buzzer,
        debounce=raw.debounce,
        long_press=raw.long_press,
        pull_up=raw.pull_up,
    )


# --- the file ---------------------------------------------------------------------------------


def load_bridge_config(path: str | Path, *, seat_panel: bool = True) -> BridgeConfig:
    """Read the table config file and parse the bridge's sections (others are left alone;
    ``seat_panel=False`` leaves ``[seat_panel]`` alone too, for a serial-only tool, so a
    wiring mistake there does not stop it talking to the MCU)."""
    p = Path(path)
    name = escape(str(p))
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BridgeConfigError(f"config file {name} does not exist") from None
    except OSError as exc:
        raise BridgeConfigError(f"cannot read config file {name}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BridgeConfigError(f"{name} is not valid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise BridgeConfigError(f"{name} is not valid TOML: {escape(str(exc))}") from None
    except RecursionError:
        raise BridgeConfigError(f"{name} is not valid TOML: nested too deeply") from None
    serial = parse_serial(data.get("serial"))
    panel = parse_seat_panel(data["seat_panel"]) if seat_panel and "seat_panel" in data else None
    return BridgeConfig(serial=serial, seat_panel=panel)
