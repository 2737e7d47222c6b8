"""``mahjong-table sim-mcu``: run a simulated table MCU on a pty (and optionally TCP).

It prints the device path to open (first line), then serves until Ctrl-C, SIGTERM or
``quit`` on standard input. Faults come from the command line, a faults file (TOML, see
``docs/protocol.md``) and, at run time, commands typed on standard input (``help`` lists them).

Also runnable as ``python -m hardware_sim.mcu_cli`` (which the test fixtures use).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from controller.exit_codes import ExitCode

__all__ = ["build_server", "load_faults_file", "main", "register"]


class FaultsFileError(ValueError):
    pass


def _number(text: str) -> float:
    """An option's value as a number, or the error argparse shows for it."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _probability(text: str) -> float:
    v = _number(text)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{v} is not a probability between 0 and 1")
    return v


def _positive(text: str) -> float:
    v = _number(text)
    if not (math.isfinite(v) and v > 0):  # nan would make every duration nan: no jam fires
        raise argparse.ArgumentTypeError("must be a number above 0")
    return v


def _tcp_port(text: str) -> int:
    """A TCP port number; checked here because ``bind`` raises ``OverflowError``, not
    ``OSError``, for one past 65535."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"{v} is not a TCP port (0-65535; 0: any free)")
    return v


def _at(text: str) -> tuple[float, str]:
    when, sep, command = text.partition(":")
    try:
        seconds = float(when)
    except ValueError:
        seconds = -1.0
    if not sep or not 0 <= seconds < math.inf or not command.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: use SECONDS:COMMAND, e.g. 5:reset")
    return seconds, command.strip()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--link", metavar="PATH", help="keep a symlink to the pty here")
    parser.add_argument(
        "--tcp", type=_tcp_port, metavar="PORT", help="also listen on this TCP port (0: any free)"
    )
    parser.add_argument("--tcp-host", default="127.0.0.1", metavar="HOST")
    parser.add_argument(
        "--speed", type=_positive, default=None, help="divide mechanical times by this (1)"
    )
    parser.add_argument("--seed", type=int, default=None, help="seed the dice and boot ids")
    parser.add_argument("--faults", metavar="FILE", help="a faults file (TOML)")
    line = parser.add_argument_group("line faults (both directions)")
    line.add_argument("--corrupt", type=_probability, metavar="P", help="per-byte corruption")
    line.add_argument("--drop", type=_probability, metavar="P", help="per-frame loss")
    line.add_argument("--duplicate", type=_probability, metavar="P", help="per-frame repeat")
    line.add_argument("--delay", type=_probability, metavar="P", help="per-frame delay")
    line.add_argument("--delay-ms", type=_positive, metavar="MS", help="delay length (30)")
    table = parser.add_argument_group("table faults (armed for the next operation)")
    table.add_argument("--jam", action="store_true", help="the next shuffle jams (卡牌)")
    table.add_argument(
        "--tiles-short", type=int, metavar="COUNT", help="the next shuffle counts COUNT tiles"
    )
    table.add_argument("--stall", action="store_true", help="the next motor move stalls")
    table.add_argument("--lid-open", action="store_true", help="start with the lid open")
    parser.add_argument(
        "--at",
        type=_at,
        action="append",
        default=[],
        metavar="SECONDS:COMMAND",
        help="run a control command at a time after start (e.g. 5:reset, 8:'unplug 2')",
    )
    parser.add_argument("--json", action="store_true", help="print JSON lines")
    parser.add_argument(
        "--quit-on-eof",
        action="store_true",
        help="stop when standard input closes (a parent process driving the simulator has gone)",
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sim-mcu",
        help="run a simulated table MCU on a pty (for tests and bringing up software)",
        description=(__doc__ or "").split("\n\n")[0],
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


_LINE_KEYS = {"corrupt", "drop", "duplicate", "delay", "delay_ms"}
_TABLE_KEYS = {"speed", "seed", "jam", "tiles_short", "stall", "lid_open"}


def load_faults_file(path: str | Path) -> dict[str, Any]:
    """Read a faults file into ``{"line": {...}, "table": {...}, "schedule": [(at, cmd)]}``."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FaultsFileError(f"cannot read faults file {p}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise FaultsFileError(f"{p} is not valid TOML: {exc}") from None
    out: dict[str, Any] = {"line": {}, "table": {}, "schedule": []}
    for key in data:
        if key not in ("line", "table", "schedule"):
            raise FaultsFileError(f"{p}: unknown section [{key}] (line, table, schedule)")
    for section, allowed in (("line", _LINE_KEYS), ("table", _TABLE_KEYS)):
        sec = data.get(section, {})
        if not isinstance(sec, dict):
            raise FaultsFileError(f"{p}: [{section}] must be a table")
        for key, value in sec.items():
            if key not in allowed:
                known = ", ".join(sorted(allowed))
                raise FaultsFileError(f"{p}: {section}.{key} is unknown ({known})")
            if isinstance(value, bool) != (key in ("jam", "stall", "lid_open")) or not isinstance(
                value, int | float
            ):
                raise FaultsFileError(f"{p}: {section}.{key} has the wrong type ({value!r})")
            # TOML has inf and nan: int(inf) overflows and nan passes every range check
            if not math.isfinite(value):
                raise FaultsFileError(f"{p}: {section}.{key} must be a finite number ({value!r})")
            if key in ("tiles_short", "seed") and not isinstance(value, int):
                raise FaultsFileError(f"{p}: {section}.{key} must be a whole number ({value!r})")
            out[section][key] = value
    sched = data.get("schedule", [])
    if not isinstance(sched, list):
        raise FaultsFileError(f"{p}: schedule must be [[schedule]] entries")
    for i, entry in enumerate(sched):
        at, do = (entry.get("at"), entry.get("do")) if isinstance(entry, dict) else (None, None)
        if isinstance(at, bool) or not isinstance(at, int | float) or not 0 <= at < math.inf:
            raise FaultsFileError(f"{p}: schedule[{i}].at must be seconds after start")
        if not isinstance(do, str) or not do.strip():
            raise FaultsFileError(f"{p}: schedule[{i}].do must be a control command")
        out["schedule"].append((float(at), do.strip()))
    return out


def _stdin_fd() -> int | None:
    """Standard input's descriptor for run-time commands, if there is a real one."""
    try:
        return sys.stdin.fileno() if sys.stdin is not None else None
    except (OSError, ValueError):
        return None


def build_server(args: argparse.Namespace) -> Any:
    """The :class:`~hardware_sim.mcu_server.McuServer` the arguments describe (command line
    values win over the faults file)."""
    from hardware_sim.mcu import SimulatedMcu
    from hardware_sim.mcu_line import LineFaults
    from hardware_sim.mcu_server import McuServer

    spec: dict[str, Any] = {"line": {}, "table": {}, "schedule": []}
    if args.faults:
        spec = load_faults_file(args.faults)
    line_kw = dict(spec["line"])
    for key in ("corrupt", "drop", "duplicate", "delay", "delay_ms"):
        v = getattr(args, key)
        if v is not None:
            line_kw[key] = v
    table = dict(spec["table"])
    speed = args.speed if args.speed is not None else float(table.get("speed", 1.0))
    seed = args.seed if args.seed is not None else table.get("seed")
    if speed <= 0:
        raise FaultsFileError("table.speed must be above 0")
    now = time.monotonic()
    mcu = SimulatedMcu(speed=speed, seed=seed, now=now)
    line = LineFaults(seed=None if seed is None else seed + 1, **line_kw)
    if args.jam or table.get("jam"):
        mcu.inject("jam")
    if args.stall or table.get("stall"):
        mcu.inject("stall")
    short = args.tiles_short if args.tiles_short is not None else table.get("tiles_short")
    if short is not None:
        mcu.inject("tiles_short", int(short))
    if args.lid_open or table.get("lid_open"):
        mcu.set_lid(True, now)
    return McuServer(
        mcu,
        line,
        link=args.link,
        tcp_port=args.tcp,
        tcp_host=args.tcp_host,
        schedule=[*spec["schedule"], *args.at],
        json_mode=args.json,
        control_in=_stdin_fd(),
        quit_on_eof=args.quit_on_eof,
        clock=time.monotonic,
    )


def run(args: argparse.Namespace) -> int:
    from controller.errors import ConfigError

    try:
        server = build_server(args)
    except (FaultsFileError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    try:
        return server.run()
    except OSError as exc:
        print(f"mahjong-table sim-mcu: {exc}", file=sys.stderr)
        return ExitCode.HARDWARE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sim-mcu", description=(__doc__ or "").split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except Exception as exc:  # a config error: say it, no traceback
        from controller.errors import MahjongTableError

        if isinstance(exc, MahjongTableError):
            print(f"sim-mcu: {exc}", file=sys.stderr)
            return ExitCode.INPUT
        raise


if __name__ == "__main__":
    sys.exit(main())
