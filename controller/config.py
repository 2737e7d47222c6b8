"""The table's configuration file: one TOML file describes a whole table, read at start into
typed, frozen structures, so that a wrong key or value stops the table before it plays,
with a one-line message naming the file and the key::

    table.toml: serial.baudrate: expected an integer between 1200 and 4000000, got 'fast'
    table.toml: seat_panel.seat[2].lde: unknown key; did you mean led?

Every key is optional; the defaults run the simulator. ``docs/table-config.example.toml``
shows every section and key with its default. The tree (:class:`TableConfig`)::

    table       TableSection: name, data_dir, profile, stake, seats, dealer,
                port, host
    serial      firmware_bridge.config.SerialConfig (the MCU's link)
    seat_panel  firmware_bridge.config.SeatPanelConfig, or None without a [seat_panel]
    camera      CameraSection: source, calibration, model_dir, width, height, fps
    sim         SimSection: seed, speed, hands, faults, confirm

msgspec does the checking (``forbid_unknown_fields``, ``Meta`` limits, ``Literal`` choices);
only what it cannot say is checked by hand after decoding: names unique, a profile that
exists, and the bridge's own rules (pins used twice, ``watchdog >= 2 * status_interval``).
:func:`decode_section` is the same machinery for any other TOML a module validates.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args

import msgspec
from msgspec import Meta, Struct, field

from controller.errors import ConfigError
from controller.profiles import builtin_names
from controller.rules.stake import MAX_STAKE, STAKE_DECIMALS, STAKE_RULE, parse_stake
from firmware_bridge.config import (
    SeatPanelConfig,
    SerialConfig,
    convert_section,
    escape,
    parse_seat_panel,
    parse_serial,
    show_key,
    show_value,
)
from firmware_bridge.errors import BridgeConfigError

__all__ = [
    "DEFAULT_DATA_DIR",
    "FAULTS",
    "MAX_STAKE",
    "STAKE_DECIMALS",
    "CameraSection",
    "ConfigFileError",
    "SimSection",
    "TableConfig",
    "TableSection",
    "config_from_mapping",
    "decode_section",
    "default_config",
    "load_config",
]

T = TypeVar("T")

DEFAULT_DATA_DIR = "~/.local/share/mahjong-table"
"""Where the SQLite event log (and, by default, the camera's calibration) lives."""

MAX_FILE_BYTES = 1 << 20
"""A config file is a few kilobytes; a larger one is the wrong file (a log, a photo)."""


class ConfigFileError(ConfigError):
    """A setting that cannot be used, naming where it came from (``source``: the file, or
    "command line" for overrides) and the dotted key (``field``)::

        table.toml: serial.baudrate: expected an integer between 1200 and 4000000, got 'fast'
    """

    def __init__(self, message: str, *, field: str | None = None, source: str) -> None:
        super().__init__(message, field=field or None)
        self.source = source

    def __str__(self) -> str:
        return f"{self.source}: {super().__str__()}"


def _error_factory(source: str) -> Callable[[str, str], Exception]:
    """What :func:`~firmware_bridge.config.convert_section` raises for ``source``."""
    return lambda key, message: ConfigFileError(message, field=key, source=source)


# --- the sections ------------------------------------------------------------------------------

Fault = Literal["jam", "lid", "reset", "unplug", "camera", "misread"]
FAULTS: tuple[str, ...] = get_args(Fault)
"""The faults ``mahjong-table sim`` can inject: a shuffle jam, the lid opened, an MCU reset,
the serial cable unplugged, the camera lost, a tile misread."""

SeatName = Annotated[str, Meta(min_length=1, max_length=32)]


def _default_data_dir() -> Path:
    return Path(DEFAULT_DATA_DIR).expanduser()


class TableSection(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[table]``: the table as the players see it."""

    name: Annotated[str, Meta(min_length=1, max_length=64)] = "table"
    #: where the SQLite event log lives (``~`` expanded; relative to the config file)
    data_dir: Path = field(default_factory=_default_data_dir)
    #: a built-in rules profile by name, or a profile file (a path ending in .toml)
    profile: Annotated[str, Meta(min_length=1)] = "shanghai"
    #: 底分: the unit every payment is counted in (exact: at most 4 decimal places)
    stake: Fraction = Fraction(1)
    #: the four seats' names, seat 0 first, in turn order
    seats: tuple[SeatName, SeatName, SeatName, SeatName] = ("East", "South", "West", "North")
    #: the first hand's dealer: a seat 0-3, or "random" (the dice decide)
    dealer: Annotated[int, Meta(ge=0, le=3)] | Literal["random"] = "random"
    #: the dashboard's TCP port and address
    port: Annotated[int, Meta(ge=1, le=65535)] = 8080
    host: Annotated[str, Meta(min_length=1, max_length=253)] = "0.0.0.0"


class CameraSection(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[camera]``: the overhead camera that reads the tiles."""

    #: "sim" (the simulator's camera), a device index ("0"), a video file or a URL
    source: Annotated[str, Meta(min_length=1)] = "sim"
    #: the calibration file; None: ``<data_dir>/calibration.json`` (see
    #: :attr:`TableConfig.calibration_path`)
    calibration: Path | None = None
    #: a folder with a recognition model; None: the model committed with the code
    model_dir: Path | None = None
    width: Annotated[int, Meta(ge=160, le=7680)] = 1280
    height: Annotated[int, Meta(ge=120, le=4320)] = 960
    fps: Annotated[float, Meta(ge=0.5, le=60.0)] = 10.0


class SimSection(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[sim]``: ``mahjong-table sim``, a whole table simulated (MCU, panel, camera, bots)."""

    seed: Annotated[int, Meta(ge=0, le=2**63 - 1)] = 0
    #: simulated seconds per real second (10: a hand in under a minute); 0: as fast as it can
    speed: Annotated[float, Meta(ge=0.0, le=1000.0)] = 10.0
    #: hands to play before stopping; 0: forever
    hands: Annotated[int, Meta(ge=0, le=1_000_000_000)] = 0
    #: faults to inject now and then (see :data:`FAULTS`)
    faults: tuple[Fault, ...] = ()
    #: who confirms each settlement: "players" (the bots check it and press confirm) or
    #: "dashboard" (the bots lay their hands and answer the table's questions, then leave the
    #: proposal to whoever watches the dashboard, to check, correct and confirm)
    confirm: Literal["players", "dashboard"] = "players"


class TableConfig(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A whole table's configuration, one field per section of the file."""

    table: TableSection = field(default_factory=TableSection)
    serial: SerialConfig = field(default_factory=SerialConfig)
    #: None when the file has no ``[seat_panel]`` (no GPIO panel: the dashboard's buttons)
    seat_panel: SeatPanelConfig | None = None
    camera: CameraSection = field(default_factory=CameraSection)
    sim: SimSection = field(default_factory=SimSection)

    @property
    def calibration_path(self) -> Path:
        """The camera's calibration file: as given, else in the data directory (so moving
        ``data_dir`` moves it too)."""
        return self.camera.calibration or self.table.data_dir / "calibration.json"

    def with_overrides(
        self,
        overrides: Mapping[str, object] | None = None,
        /,
        *,
        source: str = "command line",
        **dotted: object,
    ) -> TableConfig:
        """This configuration with some keys replaced, checked like the file: a mapping or
        keywords of dotted keys (``cfg.with_overrides({"table.port": 8081})``). A None
        value is skipped, so a command line can pass every option, given or not."""
        raw = _raw(self)
        for key, value in {**(overrides or {}), **dotted}.items():
            if value is None:
                continue
            section, _, name = key.partition(".") if isinstance(key, str) else ("", "", "")
            if not section or not re.fullmatch(r"[a-z_]+", name):
                raise ConfigFileError(
                    "an override names a section and a key, such as table.port",
                    field=show_key(key),
                    source=source,
                )
            target = raw.setdefault(section, {})
            target[name] = value
        return config_from_mapping(raw, source)


def _raw(cfg: TableConfig) -> dict[str, dict[str, Any]]:
    """``cfg`` as the mapping it could have been read from (values already typed, such as
    Path and Fraction, are taken as they are), to check it again with changes."""
    raw: dict[str, dict[str, Any]] = {
        "table": msgspec.structs.asdict(cfg.table),
        "serial": dataclasses.asdict(cfg.serial),
        "camera": msgspec.structs.asdict(cfg.camera),
        "sim": msgspec.structs.asdict(cfg.sim),
    }
    if cfg.seat_panel is not None:
        panel = dataclasses.asdict(cfg.seat_panel)
        panel["seat"] = panel.pop("seats")
        raw["seat_panel"] = panel
    return raw


# --- values msgspec does not know ---------------------------------------------------------------


def _stake(value: object) -> Fraction:
    """A stake as an exact Fraction: a positive int, a decimal string ("0.5"), or a float as
    written (0.5); above 0, at most :data:`MAX_STAKE`, at most 4 decimal places (the rule a
    win's JSON follows too: :func:`controller.rules.stake.parse_stake`)."""
    try:
        return parse_stake(value)
    except ValueError:
        raise ValueError(
            f'expected {STAKE_RULE}, such as 1 or "0.5", got {show_value(value)}'
        ) from None


def _path(value: object, base: Path | None) -> Path:
    """A path from the file: ``~`` expanded, and a relative one taken from ``base`` (the
    config file's folder) when there is one, not from wherever the table was started."""
    if isinstance(value, Path):
        path = value
    elif isinstance(value, str) and value and "\x00" not in value:
        path = Path(value)
    else:
        raise ValueError(f"expected a path, got {show_value(value)}")
    try:
        path = path.expanduser()
    except RuntimeError:  # ~someone who does not exist
        raise ValueError(f"{show_value(str(value))}: no such user's home folder") from None
    return base / path if base is not None and not path.is_absolute() else path


def _dec_hook(base: Path | None) -> Callable[[type, Any], Any]:
    """msgspec's hook for the types it does not know: Fraction (a stake) and Path."""

    def hook(type_: type, value: Any) -> Any:
        if type_ is Fraction:
            return _stake(value)
        if type_ is Path:
            return _path(value, base)
        raise NotImplementedError(f"no decoder for {type_!r}")

    return hook


def decode_section(
    data: Any,
    type_: type[T],
    *,
    section: str,
    source: str,
    base_dir: Path | None = None,
    dec_hook: Callable[[type, Any], Any] | None = None,
) -> T:
    """Validate one TOML table (``data``, as :mod:`tomllib` gives it; None means absent: all
    defaults) into ``type_``, raising :class:`ConfigFileError` naming ``source`` and the dotted
    key under ``section`` (``"training.epochs"``) with a one-line message.

    Meant for any module's settings (rules profiles, training settings): declare ``type_`` as
    a ``msgspec.Struct`` with ``frozen=True, forbid_unknown_fields=True``, limits as
    ``Annotated[int, Meta(ge=1)]`` and choices as ``Literal[...]``; Path and Fraction fields
    work (paths relative to ``base_dir``), others need a ``dec_hook`` whose ``ValueError``
    becomes the message. Check what msgspec cannot say afterwards and raise
    ``ConfigFileError(message, field=key, source=source)`` the same way.
    """
    if data is None:
        data = {}
    elif isinstance(data, Mapping) and not isinstance(data, dict):
        data = dict(data)
    return convert_section(
        data,
        type_,
        section=section,
        dec_hook=dec_hook or _dec_hook(base_dir),
        error=_error_factory(source),
    )


# --- what msgspec cannot say ---------------------------------------------------------------------


def _text(value: str, key: str, source: str, *, strip: bool = True) -> None:
    """Text a screen or a log shows: printable, and without stray spaces around it."""
    if not value.isprintable() or (strip and value != value.strip()):
        raise ConfigFileError(
            f"expected printable text without spaces around it, got {show_value(value)}",
            field=key,
            source=source,
        )


def _check_table(sec: TableSection, source: str, base: Path | None) -> TableSection:
    _text(sec.name, "table.name", source)
    _text(sec.host, "table.host", source)
    if any(c.isspace() for c in sec.host):
        raise ConfigFileError("a host name has no spaces", field="table.host", source=source)
    seen: dict[str, int] = {}
    for i, name in enumerate(sec.seats):
        _text(name, f"table.seats[{i}]", source)
        if name.casefold() in seen:
            raise ConfigFileError(
                f"{show_value(name)} is also seat {seen[name.casefold()]}'s name",
                field=f"table.seats[{i}]",
                source=source,
            )
        seen[name.casefold()] = i
    return msgspec.structs.replace(sec, profile=_profile(sec.profile, source, base))


def _profile(value: str, source: str, base: Path | None) -> str:
    """A built-in profile's name as it is; a profile file's path made absolute from the config
    file's folder (the profile itself is read, and checked, by :mod:`controller.profiles`)."""
    if value.endswith(".toml"):
        try:
            return str(_path(value, base))
        except ValueError as exc:
            raise ConfigFileError(str(exc), field="table.profile", source=source) from None
    if value not in builtin_names():
        raise ConfigFileError(
            f"no built-in profile {show_value(value)} (built-in: {', '.join(builtin_names())}; "
            "a profile file's name ends in .toml)",
            field="table.profile",
            source=source,
        )
    return value


def _check_camera(sec: CameraSection, source: str) -> CameraSection:
    _text(sec.source, "camera.source", source, strip=False)
    return sec


def _check_sim(sec: SimSection, source: str) -> SimSection:
    for i, fault in enumerate(sec.faults):
        if fault in sec.faults[:i]:
            raise ConfigFileError(
                f"{show_value(fault)} is listed twice", field=f"sim.faults[{i}]", source=source
            )
    return sec


def _bridge(parse: Callable[[Any], T], section: Any, source: str) -> T:
    """A bridge section, parsed by the bridge, its error given the file's name."""
    try:
        return parse(section)
    except BridgeConfigError as exc:
        raise ConfigFileError(exc.message, field=exc.field, source=source) from None


# --- the whole file ----------------------------------------------------------------------------


class _Document(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The file's top level: which sections there may be, each a table."""

    table: dict[str, Any] | None = None
    serial: dict[str, Any] | None = None
    seat_panel: dict[str, Any] | None = None
    camera: dict[str, Any] | None = None
    sim: dict[str, Any] | None = None


def default_config() -> TableConfig:
    """Every key at its default: the simulator's table (the same as ``load_config(None)``)."""
    return TableConfig()


def config_from_mapping(
    data: Mapping[str, Any], source: str = "<config>", *, base_dir: Path | None = None
) -> TableConfig:
    """A configuration from a parsed TOML document (or any mapping of sections), checked
    section by section; errors name ``source``. Relative paths are taken from ``base_dir``
    (the config file's folder), or the working directory when None."""
    raw = dict(data) if isinstance(data, Mapping) else data
    doc = convert_section(raw, _Document, section="", error=_error_factory(source))
    hook = _dec_hook(base_dir)

    def section(name: str, type_: type[T]) -> T:
        return decode_section(getattr(doc, name), type_, section=name, source=source, dec_hook=hook)

    return TableConfig(
        table=_check_table(section("table", TableSection), source, base_dir),
        serial=_bridge(parse_serial, doc.serial, source),
        seat_panel=None
        if doc.seat_panel is None
        else _bridge(parse_seat_panel, doc.seat_panel, source),
        camera=_check_camera(section("camera", CameraSection), source),
        sim=_check_sim(section("sim", SimSection), source),
    )


def _read_text(path: Path, source: str) -> str:
    """The file's text, or a ConfigFileError saying in one line why it cannot be had."""

    def fail(message: str) -> ConfigFileError:
        return ConfigFileError(message, source=source)

    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise fail("no such file") from None
    except IsADirectoryError:
        raise fail("is a folder, not a file") from None
    except OSError as exc:
        raise fail(f"cannot be read: {escape(exc.strerror or str(exc))}") from None
    if len(data) > MAX_FILE_BYTES:
        raise fail(f"larger than {MAX_FILE_BYTES // 1024} KiB: not a config file")
    try:
        return data.decode("utf-8-sig")  # a byte-order mark, as Notepad writes, is fine
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise fail(f"not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})") from None


def load_config(path: str | Path | None) -> TableConfig:
    """The table's configuration from a TOML file; None: :func:`default_config`.

    Every mistake raises :class:`ConfigFileError` (a :class:`~controller.errors.ConfigError`)
    with one line naming the file and, where there is one, the key or the line at fault.
    """
    if path is None:
        return default_config()
    p = Path(path)
    source = escape(str(path))
    text = _read_text(p, source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"not valid TOML: {escape(str(exc))}", source=source) from None
    except RecursionError:
        raise ConfigFileError("not valid TOML: nested too deeply", source=source) from None
    return config_from_mapping(data, source, base_dir=p.absolute().parent)
