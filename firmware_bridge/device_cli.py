"""``mahjong-table device``: talk to a table's MCU from the shell.

    mahjong-table device --port URL identify | status | shuffle | dice | lift | lower | stop
                                   | clear | lights MASK [LEVEL] | watch

The port is ``--port``, else ``[serial] port`` of ``--config``, else ``$MAHJONG_TABLE_PORT``;
it may be a device path, the simulator's pty or link, or ``socket://host:port``. ``--json``
prints one JSON object per result (per event for ``watch``). Exit status: 0 done, 1 ``status``
found faults, 2 bad usage or configuration, 3 the table refused, failed or did not answer.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
import time
from collections.abc import Callable
from typing import Any

from controller.exit_codes import ExitCode

__all__ = ["on_watching", "register"]

#: Called with the :class:`~firmware_bridge.table_device.TableDevice` once ``watch`` listens:
#: every table event from then on is printed. A program that runs ``watch`` in its own process
#: (a test that opens the simulated lid) starts what the watch is to see from here, instead of
#: sleeping a guess at how long connecting takes. ``None``: nothing is called.
on_watching: Callable[[Any], None] | None = None

COMMANDS = (
    "identify",
    "status",
    "shuffle",
    "dice",
    "lift",
    "lower",
    "stop",
    "clear",
    "lights",
    "watch",
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "device",
        help="talk to the table's MCU (identify, status, shuffle, dice, watch, ...)",
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Example: mahjong-table device --port /dev/serial/by-id/usb-... status",
    )
    parser.add_argument("--port", metavar="URL", help="serial device, pty or socket://host:port")
    parser.add_argument("--config", metavar="FILE", help="table config file ([serial] section)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--timeout", type=float, metavar="S", help="give up after this many seconds"
    )
    sub = parser.add_subparsers(dest="device_command", metavar="COMMAND")
    sub.required = True
    sub.add_parser("identify", help="who the MCU is: firmware, protocol, boot id")
    sub.add_parser("status", help="state, faults, tile sets (exit 1 if any fault)")
    sub.add_parser("shuffle", help="shuffle the next tile set")
    sub.add_parser("dice", help="roll the dice")
    sub.add_parser("lift", help="raise the walls")
    sub.add_parser("lower", help="lower the walls")
    sub.add_parser("stop", help="emergency stop (stays stopped until `clear`)")
    sub.add_parser("clear", help="clear latched faults once their cause is fixed")
    lights = sub.add_parser("lights", help="set the table lights")
    lights.add_argument(
        "mask", help="bit i lights light i (0-3 sides, 4 centre): 0-255, 0x1f, 'on' (all) or 'off'"
    )
    lights.add_argument("level", nargs="?", type=int, default=255, help="brightness 0-255")
    watch = sub.add_parser("watch", help="print events as they come (Ctrl-C to stop)")
    watch.add_argument("--count", type=int, metavar="N", help="stop after N table events")
    watch.add_argument("--seconds", type=float, metavar="S", help="stop after S seconds")
    parser.set_defaults(func=run)


def _mask(text: str) -> int:
    from firmware_bridge.errors import BridgeConfigError

    if text.lower() == "on":
        return 0x1F
    if text.lower() == "off":
        return 0
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 <= value <= 255:
        raise BridgeConfigError(f"lights: mask {text!r} must be 0-255, 0x.., 'on' or 'off'")
    return value


def _check_seconds(value: float, option: str, hi: float | None = None) -> None:
    """Refuse what argparse's ``float`` lets through but no wait can use: ``nan`` (every
    comparison is false, so a deadline never passes), ``inf`` and values past ``hi``
    (``OverflowError`` in the waits), and durations that are not above 0."""
    from firmware_bridge.errors import BridgeConfigError

    if not math.isfinite(value) or value <= 0 or (hi is not None and value > hi):
        limit = f" and at most {hi:g}" if hi is not None else ""
        raise BridgeConfigError(f"{option} must be a number of seconds above 0{limit}, not {value}")


def _port_and_config(args: argparse.Namespace) -> tuple[str, Any]:
    from firmware_bridge.config import MAX_TIMEOUT, SerialConfig, load_bridge_config
    from firmware_bridge.errors import BridgeConfigError

    # the device command talks to the MCU alone: the [seat_panel] section is not its business
    cfg = (
        load_bridge_config(args.config, seat_panel=False).serial if args.config else SerialConfig()
    )
    port = args.port or cfg.port or os.environ.get("MAHJONG_TABLE_PORT")
    if not port:
        raise BridgeConfigError(
            "no serial port: pass --port URL, a --config file with [serial] port, or set "
            "MAHJONG_TABLE_PORT",
            field="serial.port",
        )
    if args.timeout is not None:
        _check_seconds(args.timeout, "--timeout", MAX_TIMEOUT)
        from dataclasses import replace

        t = args.timeout
        cfg = replace(
            cfg,
            connect_timeout=t,
            command_timeout=t,
            shuffle_timeout=t,
            walls_timeout=t,
            dice_timeout=t,
        )
    return port, cfg


def _check_port(port: str) -> None:
    """Fail at once, naming the port, where it is a path to nothing or to something that is no
    serial device: waiting for the table (``connect_timeout``) could not help a one-off
    command. A URL (``socket://``, ``rfc2217://``) is left to the link to try."""
    from firmware_bridge.config import escape
    from firmware_bridge.errors import LinkDown

    shown = escape(port)
    if "://" in port:
        scheme = port.partition("://")[0]
        if not scheme.isidentifier() or not _url_handler(scheme):
            raise LinkDown(
                f"{shown} is not a serial port URL: a device path, or socket://host:port"
            )
        return
    if os.name != "posix":  # COM3 is no path
        return
    try:
        mode = os.stat(port).st_mode
    except PermissionError as exc:  # a folder on the way closed to this user
        raise LinkDown(f"cannot reach serial port {shown}: {exc.strerror}") from None
    except (OSError, ValueError):  # missing, a name too long, a NUL
        raise LinkDown(
            f"serial port {shown} does not exist: is the table plugged in and powered? (for "
            "the simulator, start `mahjong-table sim-mcu` and use the path it prints)"
        ) from None
    if not stat.S_ISCHR(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "a file"
        raise LinkDown(f"{shown} is {what}, not a serial port")
    if not os.access(port, os.R_OK | os.W_OK):
        raise LinkDown(f"no permission to open {shown}: add this user to the 'dialout' group")


def _url_handler(scheme: str) -> bool:
    """Whether pyserial opens URLs of ``scheme`` (``socket``, ``rfc2217``, ``loop``, ...)."""
    import importlib.util

    import serial

    for package in serial.protocol_handler_packages:
        try:
            if importlib.util.find_spec(f"{package}.protocol_{scheme}") is not None:
                return True
        except (ImportError, ValueError):
            continue
    return False


def _print(args: argparse.Namespace, human: str, **data: Any) -> None:
    if args.json:
        print(json.dumps({"command": args.device_command, **data}, ensure_ascii=False))
    else:
        print(human)
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    from controller.errors import DeviceError
    from firmware_bridge.errors import BridgeConfigError, CommandFailed, CommandTimeout
    from firmware_bridge.table_device import TableDevice

    port, cfg = _port_and_config(args)
    if args.device_command == "watch":
        if args.seconds is not None:
            _check_seconds(args.seconds, "watch --seconds")
        if args.count is not None and args.count < 1:
            # 0 would stop before the first event and look like a quiet table
            raise BridgeConfigError(f"watch --count must be 1 or more, not {args.count}")
    mask = _mask(args.mask) if args.device_command == "lights" else 0
    if args.device_command == "lights" and not 0 <= args.level <= 255:
        raise BridgeConfigError("lights: level must be 0-255")
    try:
        _check_port(port)
        with TableDevice(port, config=cfg) as dev:
            dev.wait_ready()
            return _COMMANDS[args.device_command](args, dev, mask)
    except DeviceError as exc:
        if not args.json:
            raise
        data: dict[str, Any] = {"ok": False, "error": str(exc), "type": type(exc).__name__}
        if isinstance(exc, CommandFailed):
            data.update(reason=exc.reason, fault=exc.fault)
        if isinstance(exc, CommandTimeout):
            data.update(maybe_executed=exc.maybe_executed)
        _print(args, "", **data)
        return ExitCode.HARDWARE


def _identify(args: argparse.Namespace, dev: Any, _: int) -> int:
    i = dev.identify()
    _print(
        args,
        f"table:      {i.name}\nfirmware:   {i.firmware} (protocol {i.protocol})\n"
        f"boot id:    {i.boot_id:08x}\ntile sets:  {i.tile_sets} x {i.tiles_per_set} tiles\n"
        f"port:       {dev.port_url}",
        ok=True,
        name=i.name,
        firmware=i.firmware,
        protocol=i.protocol,
        boot_id=i.boot_id,
        tile_sets=i.tile_sets,
        tiles_per_set=i.tiles_per_set,
        port=dev.port_url,
    )
    return ExitCode.OK


def _set_name(s: int | None) -> str:
    return "none" if s is None else str(s)


def _status(args: argparse.Namespace, dev: Any, _: int) -> int:
    s = dev.status()
    from firmware_bridge import protocol as p

    labels = {f.name.lower(): f.label for f in p.Fault}
    faults = ", ".join(labels.get(f, f) for f in s.faults) or "none"
    dice = f"{s.last_dice[0]} + {s.last_dice[1]}" if s.last_dice else "not rolled yet"
    _print(
        args,
        f"state:      {s.state}\nfaults:     {faults}\n"
        f"walls up:   tile set {_set_name(s.table_set)}\n"
        f"shuffled:   tile set {_set_name(s.ready_set)}\n"
        f"lights:     mask 0x{s.lights_mask:02x}, level {s.lights_level}\n"
        f"last dice:  {dice}\nuptime:     {s.uptime:.1f} s (boot {s.boot_id:08x})\n"
        f"commands:   {s.executed} run, {s.replayed} repeats answered from memory, "
        f"{s.duplicates} run twice",
        ok=not s.faults,
        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(s).items()},
    )
    return ExitCode.NO if s.faults else ExitCode.OK


def _shuffle(args: argparse.Namespace, dev: Any, _: int) -> int:
    r = dev.shuffle()
    _print(
        args,
        f"shuffled tile set {r.tile_set} ({r.tiles} tiles)",
        ok=True,
        tile_set=r.tile_set,
        tiles=r.tiles,
    )
    return ExitCode.OK


def _dice(args: argparse.Namespace, dev: Any, _: int) -> int:
    d = dev.roll_dice()
    _print(
        args,
        f"dice: {d.die1} + {d.die2} = {d.total}",
        ok=True,
        dice=[d.die1, d.die2],
        total=d.total,
    )
    return ExitCode.OK


def _lift(args: argparse.Namespace, dev: Any, _: int) -> int:
    s = dev.lift_walls()
    _print(args, f"walls up: tile set {s}", ok=True, tile_set=s)
    return ExitCode.OK


def _lower(args: argparse.Namespace, dev: Any, _: int) -> int:
    s = dev.lower_walls()
    _print(args, f"walls down: tile set {s}", ok=True, tile_set=s)
    return ExitCode.OK


def _stop(args: argparse.Namespace, dev: Any, _: int) -> int:
    dev.emergency_stop()
    _print(args, "emergency stop: the table is stopped until `mahjong-table device clear`", ok=True)
    return ExitCode.OK


def _clear(args: argparse.Namespace, dev: Any, _: int) -> int:
    dev.clear_faults()
    _print(args, "faults cleared", ok=True)
    return ExitCode.OK


def _lights(args: argparse.Namespace, dev: Any, mask: int) -> int:
    dev.lights(mask, args.level)
    _print(
        args, f"lights: mask 0x{mask:02x}, level {args.level}", ok=True, mask=mask, level=args.level
    )
    return ExitCode.OK


def _describe(ev: Any) -> str:
    stamp = (
        time.strftime("%H:%M:%S", time.localtime(ev.time)) + f".{int(ev.time * 1000) % 1000:03d}"
    )
    data = " ".join(
        f"{k}={v}" for k, v in ev.data.items() if k not in ("status",) and v is not None
    )
    where = []
    if ev.number is not None:
        where.append(f"#{ev.number}")
    if ev.command_id is not None:
        where.append(f"command {ev.command_id}")
    tail = f" ({', '.join(where)})" if where else ""
    return f"{stamp} {ev.kind} {data}".rstrip() + tail


def _watch(args: argparse.Namespace, dev: Any, _: int) -> int:
    import queue

    events: queue.Queue[Any] = queue.Queue()
    dev.add_listener(events.put)
    st = dev.last_status
    if st is not None and not args.json:
        print(f"watching {dev.port_url} (state {st.state}; Ctrl-C to stop)")
        sys.stdout.flush()
    if on_watching is not None:
        on_watching(dev)
    deadline = None if args.seconds is None else time.monotonic() + args.seconds
    seen = 0
    try:
        while args.count is None or seen < args.count:
            wait = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if wait <= 0:
                break
            try:
                ev = events.get(timeout=wait)
            except queue.Empty:
                continue
            if ev.kind == "connected":
                continue  # the connection watch itself made
            if ev.number is not None:
                seen += 1
            if args.json:
                print(
                    json.dumps(
                        {
                            "event": ev.kind,
                            "number": ev.number,
                            "command_id": ev.command_id,
                            "boot_id": ev.boot_id,
                            "time": ev.time,
                            **ev.data,
                        },
                        ensure_ascii=False,
                        default=str,
                    )
                )
            else:
                print(_describe(ev))
            sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    return ExitCode.OK


_COMMANDS = {
    "identify": _identify,
    "status": _status,
    "shuffle": _shuffle,
    "dice": _dice,
    "lift": _lift,
    "lower": _lower,
    "stop": _stop,
    "clear": _clear,
    "lights": _lights,
    "watch": _watch,
}
