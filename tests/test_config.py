"""The table's configuration file (controller.config): defaults, the documented example, each
section's happy path, and for every kind of mistake a one-line message naming the file and the
dotted key."""

from __future__ import annotations

import re
import time
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config import (
    FAULTS,
    CameraSection,
    ConfigFileError,
    SimSection,
    TableConfig,
    TableSection,
    config_from_mapping,
    decode_section,
    default_config,
    load_config,
)
from controller.errors import ConfigError
from firmware_bridge.config import SeatPanelConfig, SerialConfig

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "table-config.example.toml"

SEATS = [
    {"win": 5, "confirm": 6, "led": 12},
    {"win": 13, "confirm": 16, "led": 17},
    {"win": 19, "confirm": 20, "led": 21},
    {"win": 22, "confirm": 23, "led": 24},
]


def refused(data: Any, source: str = "table.toml") -> ConfigError:
    """The error ``data`` is refused with, after checking that its message is one line."""
    with pytest.raises(ConfigError) as info:
        config_from_mapping(data, source)
    text = str(info.value)
    assert text.isprintable(), text  # one line, no control character echoed raw
    assert text.startswith(f"{source}: "), text
    return info.value


# --- defaults and the example ---------------------------------------------------------------


def test_defaults_run_the_simulator() -> None:
    cfg = default_config()
    assert cfg == load_config(None) == config_from_mapping({}) == TableConfig()
    assert cfg.table.name == "table"
    assert cfg.table.data_dir == Path("~/.local/share/mahjong-table").expanduser()
    assert cfg.table.profile == "shanghai"
    assert cfg.table.stake == 1 and isinstance(cfg.table.stake, Fraction)
    assert len(cfg.table.seats) == 4
    assert cfg.table.dealer == "random"
    assert (cfg.table.port, cfg.table.host) == (8080, "0.0.0.0")
    assert cfg.serial == SerialConfig() and cfg.seat_panel is None
    assert cfg.camera == CameraSection(source="sim", width=1280, height=960, fps=10.0)
    assert cfg.camera.calibration is None and cfg.camera.model_dir is None
    assert cfg.calibration_path == cfg.table.data_dir / "calibration.json"
    assert cfg.sim == SimSection(seed=0, speed=10.0, hands=0, faults=(), confirm="players")


def test_the_example_loads_and_documents_the_defaults() -> None:
    cfg = load_config(EXAMPLE)
    assert cfg.serial.port == "/dev/serial/by-id/usb-mahjong-table-mcu-if00"
    assert isinstance(cfg.seat_panel, SeatPanelConfig)
    assert cfg.seat_panel.seats[3].led == "GPIO24"
    # but for its wiring (the port and the pins), the example is the defaults
    assert msgspec.structs.replace(cfg, serial=SerialConfig(), seat_panel=None) == default_config()


def test_the_example_shows_every_section_and_key() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    sections = {
        "table": TableSection,
        "serial": SerialConfig,
        "camera": CameraSection,
        "sim": SimSection,
    }
    for name, type_ in sections.items():
        assert f"\n[{name}]" in text, name
        for key in msgspec.inspect.type_info(type_).fields:
            assert f"\n{key.name} = " in text or f"\n# {key.name} = " in text, f"{name}.{key.name}"
    for key in ("buzzer", "debounce", "long_press", "pull_up", "win", "confirm", "led"):
        assert f"\n{key} = " in text, key


# --- each section's happy path ---------------------------------------------------------------


def test_table_section(tmp_path: Path) -> None:
    cfg = config_from_mapping(
        {
            "table": {
                "name": "麻将桌 2",
                "data_dir": "data",
                "profile": "lazi",
                "stake": "0.5",
                "seats": ["东", "南", "西", "北"],
                "dealer": 2,
                "port": 8081,
                "host": "127.0.0.1",
            }
        },
        base_dir=tmp_path,
    )
    t = cfg.table
    assert (t.name, t.profile, t.stake, t.seats) == (
        "麻将桌 2",
        "lazi",
        Fraction(1, 2),
        tuple("东南西北"),
    )
    assert (t.dealer, t.port, t.host) == (2, 8081, "127.0.0.1")
    assert t.data_dir == tmp_path / "data"  # relative to the config file's folder


def test_serial_and_seat_panel_sections() -> None:
    cfg = config_from_mapping(
        {
            "serial": {"port": " socket://localhost:7000 ", "status_interval": 0.5, "watchdog": 1},
            "seat_panel": {"seat": SEATS, "buzzer": "BOARD37", "pull_up": False},
        }
    )
    assert cfg.serial.port == "socket://localhost:7000"
    assert (cfg.serial.status_interval, cfg.serial.watchdog) == (0.5, 1.0)
    assert cfg.seat_panel is not None
    assert cfg.seat_panel.buzzer == "GPIO26" and cfg.seat_panel.pull_up is False
    assert [s.win for s in cfg.seat_panel.seats] == ["GPIO5", "GPIO13", "GPIO19", "GPIO22"]


def test_camera_section(tmp_path: Path) -> None:
    cfg = config_from_mapping(
        {
            "table": {"data_dir": "/srv/table"},
            "camera": {
                "source": "0",
                "model_dir": "~/models",
                "width": 640,
                "height": 480,
                "fps": 2,
            },
        },
        base_dir=tmp_path,
    )
    assert cfg.camera.source == "0"
    assert cfg.camera.model_dir == Path("~/models").expanduser()
    assert (cfg.camera.width, cfg.camera.height, cfg.camera.fps) == (640, 480, 2.0)
    assert cfg.calibration_path == Path("/srv/table/calibration.json")
    cal = config_from_mapping({"camera": {"calibration": "cal.json"}}, base_dir=tmp_path)
    assert cal.calibration_path == tmp_path / "cal.json"


def test_sim_section() -> None:
    cfg = config_from_mapping(
        {"sim": {"seed": 7, "speed": 20, "hands": 50, "faults": ["jam", "unplug"]}}
    )
    assert cfg.sim == SimSection(seed=7, speed=20.0, hands=50, faults=("jam", "unplug"))
    assert set(FAULTS) == {"jam", "lid", "reset", "unplug", "camera", "misread"}
    assert config_from_mapping({"sim": {"confirm": "dashboard"}}).sim.confirm == "dashboard"


def test_a_profile_file_is_found_beside_the_config(tmp_path: Path) -> None:
    cfg = config_from_mapping({"table": {"profile": "mine.toml"}}, base_dir=tmp_path)
    assert cfg.table.profile == str(tmp_path / "mine.toml")


@pytest.mark.parametrize(
    ("given", "stake"),
    [
        ("0.5", Fraction(1, 2)),
        (0.5, Fraction(1, 2)),
        (0.1, Fraction(1, 10)),  # a float as written, not its binary value
        (3, Fraction(3)),
        ("0.0001", Fraction(1, 10_000)),
        ("10000", Fraction(10_000)),
        ("007", Fraction(7)),
    ],
)
def test_stake_forms(given: object, stake: Fraction) -> None:
    assert config_from_mapping({"table": {"stake": given}}).table.stake == stake


# --- mistakes: each names the file and the key ----------------------------------------------

MISTAKES = [
    # unknown keys, at every level
    ({"tabel": {}}, "tabel", "unknown key; did you mean table?"),
    ({"table": {"nmae": "x"}}, "table.nmae", "did you mean name?"),
    ({"serial": {"baud": 9600}}, "serial.baud", "unknown key"),
    ({"seat_panel": {"seat": SEATS, "buzz": 4}}, "seat_panel.buzz", "did you mean buzzer?"),
    (
        {"seat_panel": {"seat": [*SEATS[:2], {**SEATS[2], "lde": 7}, SEATS[3]]}},
        "seat_panel.seat[2].lde",
        "did you mean led?",
    ),
    ({"camera": {"zzz": 1}}, "camera.zzz", "known: calibration, fps, height, model_dir"),
    ({"sim": {"seeds": 1}}, "sim.seeds", "did you mean seed?"),
    # wrong types
    ({"serial": {"baudrate": "fast"}}, "serial.baudrate", "expected an integer .*, got 'fast'"),
    ({"table": 5}, "table", "expected a table, got 5"),
    ({"table": {"port": "8081"}}, "table.port", "expected an integer between 1 and 65535"),
    ({"table": {"auto_shuffle": True}}, "table.auto_shuffle", "unknown"),
    ({"table": {"seats": "ESWN"}}, "table.seats", "expected a list of 4, got 'ESWN'"),
    ({"table": {"seats": ["a", "b", "c"]}}, "table.seats", "got a list of 3"),
    ({"table": {"seats": ["a", "b", 3, "d"]}}, "table.seats[2]", "expected a string"),
    ({"table": {"data_dir": 5}}, "table.data_dir", "expected a path, got 5"),
    ({"camera": {"width": 640.5}}, "camera.width", "expected an integer"),
    ({"sim": {"faults": "jam"}}, "sim.faults", "expected a list, got 'jam'"),
    ({"sim": {"faults": ["jam", "fire"]}}, "sim.faults[1]", "one of .*'misread'.*, got 'fire'"),
    ({"sim": {"confirm": "bots"}}, "sim.confirm", "one of 'dashboard', 'players', got 'bots'"),
    ({"seat_panel": {"seat": SEATS, "pull_up": 1}}, "seat_panel.pull_up", "true or false"),
    # out of range
    ({"table": {"port": 0}}, "table.port", "between 1 and 65535, got 0"),
    ({"table": {"dealer": 4}}, "table.dealer", "between 0 and 3 or 'random', got 4"),
    ({"table": {"dealer": "east"}}, "table.dealer", "got 'east'"),
    ({"camera": {"fps": 100}}, "camera.fps", "between 0.5 and 60, got 100"),
    ({"sim": {"speed": -1}}, "sim.speed", "between 0 and 1000"),
    ({"sim": {"speed": float("nan")}}, "sim.speed", "got nan"),
    ({"sim": {"hands": -1}}, "sim.hands", "between 0 and"),
    ({"serial": {"status_interval": 1.0}}, "serial.status_interval", "seconds between 0.2"),
    ({"table": {"port": 2**80}}, "table.port", "got an integer of 81 bits"),
    # what msgspec cannot say
    ({"serial": {"status_interval": 0.5, "watchdog": 0.9}}, "serial.watchdog", "two serial"),
    ({"table": {"seats": ["A", "b", "c", "a"]}}, "table.seats[3]", "also seat 0's name"),
    ({"table": {"seats": [" A", "b", "c", "d"]}}, "table.seats[0]", "without spaces"),
    ({"table": {"profile": "shanghia"}}, "table.profile", "no built-in profile 'shanghia'"),
    ({"table": {"host": "my host"}}, "table.host", "no spaces"),
    ({"sim": {"faults": ["lid", "lid"]}}, "sim.faults[1]", "listed twice"),
    ({"seat_panel": {"seat": SEATS, "buzzer": "GPIO5"}}, "seat_panel.buzzer", "already used"),
    ({"seat_panel": {"seat": SEATS[:3]}}, "seat_panel.seat", "exactly 4"),
]


@pytest.mark.parametrize(("data", "key", "words"), MISTAKES)
def test_a_mistake_names_the_file_and_the_key(data: dict, key: str, words: str) -> None:
    error = refused(data)
    assert isinstance(error, ConfigFileError)
    assert error.field == key and error.source == "table.toml"
    assert str(error).startswith(f"table.toml: {key}: "), str(error)
    assert re.search(words, str(error)), str(error)


@pytest.mark.parametrize(
    "stake",
    ["1_000", "١", "١٢", "1e100000000", "1e3", 0, -1, "-1", "0", "0.00001", 10_001, "10000.5",
     True, "", " 1", "1/2", "+1", "1.", float("inf"), float("nan"), 1e-5, [1], None],
)  # fmt: skip
def test_a_stake_that_is_not_a_plain_positive_decimal_is_refused(stake: object) -> None:
    error = refused({"table": {"stake": stake}})
    assert error.field == "table.stake"
    assert "at most 4 decimal places" in str(error) or "got nothing" in str(error)


def test_a_huge_exponent_is_refused_at_once() -> None:
    start = time.perf_counter()
    for text in ("1e100000000", "9" * 100_000, "0." + "1" * 100_000):
        refused({"table": {"stake": text}})
    assert time.perf_counter() - start < 0.05


def test_control_characters_are_echoed_escaped() -> None:
    error = refused({"table": {"name": "red\x1b[31m\nline"}})
    assert "'red\\x1b[31m\\nline'" in str(error)
    error = refused({"table": {"na\x00me\u202e": 1}})
    assert error.field == "table.'na\\x00me\\u202e'"
    error = refused({"camera": {"source": "cam\r\n"}})
    assert "\\r\\n" in str(error)


def test_a_long_value_is_cut_short() -> None:
    error = refused({"table": {"port": "x" * 10_000}})
    assert len(str(error)) < 200


# --- the file -------------------------------------------------------------------------------


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "table.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_errors_from_a_file_name_it(tmp_path: Path) -> None:
    path = write(tmp_path, '[serial]\nbaudrate = "fast"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f"{path}: serial.baudrate: expected an integer between 1200 and 4000000, got 'fast'"
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "no such file"),
        ("[serial\nport = 1\n", r"not valid TOML: .*line 1"),
        ('[table]\nname = "a"\nname = "b"\n', r"not valid TOML: .*line 3"),
        (b'[table]\nname = "a"\nhost = "\xff"\n', "not UTF-8 text .*line 3"),
        ("x = " + "[" * 100_000, "not valid TOML"),
        ("# " + "x" * (1 << 20), "larger than 1024 KiB"),
    ],
)
def test_a_file_that_cannot_be_read(tmp_path: Path, content: str | bytes | None, said) -> None:
    path = tmp_path / "table.toml" if content is None else write(tmp_path, content)
    with pytest.raises(ConfigFileError, match=said) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ")
    assert str(info.value).isprintable()


def test_a_folder_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="is a folder"):
        load_config(tmp_path)


def test_a_byte_order_mark_is_fine_and_paths_are_the_files(tmp_path: Path) -> None:
    path = write(tmp_path, '\ufeff[table]\ndata_dir = "log"\n'.encode())
    assert load_config(str(path)).table.data_dir == tmp_path / "log"


# --- overrides ------------------------------------------------------------------------------


def test_overrides_replace_keys_and_are_checked_like_the_file(tmp_path: Path) -> None:
    cfg = load_config(EXAMPLE)
    moved = cfg.with_overrides({"table.port": 8081, "camera.fps": None}, **{"sim.seed": 3})
    assert (moved.table.port, moved.sim.seed, moved.camera.fps) == (8081, 3, 10.0)
    assert moved.seat_panel == cfg.seat_panel and moved.serial == cfg.serial
    assert moved.table.stake == cfg.table.stake
    assert cfg.with_overrides() == cfg
    with pytest.raises(ConfigFileError) as info:
        cfg.with_overrides({"table.port": "x"})
    assert str(info.value).startswith("command line: table.port: expected an integer")
    # checked with the file's other keys: the watchdog against the file's status interval
    slow = cfg.with_overrides({"serial.status_interval": 0.5})
    with pytest.raises(ConfigFileError, match=r"two serial\.status_interval"):
        slow.with_overrides({"serial.watchdog": 0.9})
    for key in ("port", "table.", "table.seats[0]", "nope.key"):
        with pytest.raises(ConfigFileError):
            cfg.with_overrides({key: 1})


def test_moving_the_data_dir_moves_the_default_calibration() -> None:
    cfg = default_config().with_overrides({"table.data_dir": "/srv/t"})
    assert cfg.calibration_path == Path("/srv/t/calibration.json")


# --- decode_section for other modules' settings ---------------------------------------------


class Training(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    epochs: Annotated[int, msgspec.Meta(ge=1)] = 10
    out: Path | None = None
    rate: Fraction = Fraction(1, 2)


def test_decode_section_is_the_same_machinery_for_any_settings(tmp_path: Path) -> None:
    got = decode_section(
        {"epochs": 3, "out": "runs"},
        Training,
        section="training",
        source="t.toml",
        base_dir=tmp_path,
    )
    assert got == Training(epochs=3, out=tmp_path / "runs")
    assert decode_section(None, Training, section="training", source="t.toml") == Training()
    with pytest.raises(ConfigFileError) as info:
        decode_section({"epochs": 0}, Training, section="training", source="t.toml")
    assert str(info.value) == "t.toml: training.epochs: expected an integer at least 1, got 0"
    with pytest.raises(ConfigFileError, match=r"^t\.toml: training\.epoch: unknown key"):
        decode_section({"epoch": 1}, Training, section="training", source="t.toml")


# --- nothing but ConfigError, whatever the mapping --------------------------------------------

KEYS = st.sampled_from(
    ["table", "serial", "seat_panel", "camera", "sim", "seat", "win", "led", "stake", "port",
     "seats", "dealer", "faults", "fps", "baudrate", "watchdog", "buzzer", "data_dir"]
) | st.text(max_size=6)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["0.5", "GPIO5", "BOARD11", "random", "jam", "~", "a.toml", "\x00"])
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=5) | VALUES)
def test_any_mapping_gives_a_config_or_a_config_error(data: Any) -> None:
    try:
        cfg = config_from_mapping(data, "fuzz.toml")
    except ConfigError as exc:
        assert str(exc).isprintable() and str(exc).startswith("fuzz.toml: ")
    else:
        assert isinstance(cfg, TableConfig)
