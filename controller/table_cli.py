"""``mahjong-table run``, ``doctor`` and ``history``: a real table, its health, its past.

::

    mahjong-table run --config /etc/mahjong-table.toml       # under systemd: docs/controller.md
    mahjong-table doctor --config /etc/mahjong-table.toml    # what to fix before the first game
    mahjong-table history                                    # sessions, hands, totals
    mahjong-table history --session 3 --csv night.csv

The event log lives at ``<data_dir>/events.sqlite`` (``[table] data_dir`` in the config).
Exit status: 0 done (``doctor``: every check passed), 1 ``doctor`` found something to fix,
2 bad input (a config, an option), 3 the hardware or the log could not be used.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import random
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.exit_codes import ExitCode

if TYPE_CHECKING:  # only for annotations: the commands import these when they run
    from controller.table.ledger import HandRecord, SessionRecord

LOG_NAME = "events.sqlite"
MIN_FREE_MB = 100
"""Free space the data folder needs: a season of hands is a few MB, a full disk loses one."""

log = logging.getLogger("mahjong_table")


def log_path(cfg: Any) -> Path:
    """Where a table's event log lives."""
    return Path(cfg.table.data_dir) / LOG_NAME


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a real table from its config (the MCU, seat panel, camera, controller)",
        description="Run the table: the MCU on the configured serial port, the seat panel on "
        "the Pi's GPIO, the overhead camera, and the controller keeping its event log in the "
        "data folder. Runs until stopped (SIGTERM or Ctrl-C); a table stopped mid-hand "
        "resumes it on the next start. Exit status 0 stopped cleanly, 2 a bad config, 3 the "
        "hardware or the log could not be used.",
    )
    p.add_argument("--config", type=Path, help="the table's config file (TOML)")
    p.add_argument("--port", type=int, help="the dashboard's port (default: [table] port)")
    p.add_argument("--headless", action="store_true", help="no dashboard")
    p.set_defaults(func=run_command)

    p = subparsers.add_parser(
        "doctor",
        help="check a table's hardware and files, saying what to fix",
        description="Check the config, the data folder and its free space, the event log, "
        "the serial link to the MCU, the seat panel's GPIO pins, the camera, its "
        "calibration and the tile model. Exit status 0 all well, 1 something to fix, "
        "2 the config cannot be read.",
    )
    p.add_argument("--config", type=Path, help="the table's config file (TOML)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the MCU")
    p.set_defaults(func=doctor_command)

    p = subparsers.add_parser(
        "history",
        help="print the sessions and hands in a table's event log",
        description="Print the sessions, their hands (dealer, outcome, winner, hand, "
        "payments) and each session's totals with who pays whom, from the event log. "
        "Exit status 0, 2 bad options, 3 the log cannot be read.",
    )
    p.add_argument("--config", type=Path, help="the table's config file (TOML)")
    p.add_argument("--db", type=Path, help="the event log (default: the config's data folder)")
    p.add_argument("--session", type=int, help="only this session")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the sessions as JSON")
    fmt.add_argument("--csv", type=Path, help="write the session (one) as a spreadsheet here")
    p.set_defaults(func=history_command)


# -- history ---------------------------------------------------------------------------------


def _money(x: Any) -> str:
    from controller.table.ledger import amount_csv

    return amount_csv(x)


def history_command(args: argparse.Namespace) -> int:
    """Print the log's sessions, as text or JSON, or write one as a spreadsheet."""
    from controller.config import load_config
    from controller.table.ledger import build_ledger, export_json
    from controller.table.store import EventLogReader

    cfg = load_config(args.config)
    from controller.rules.errors import escape

    path = args.db or log_path(cfg)
    try:
        found = Path(path).is_file()
    except OSError as exc:  # a name too long for a file, say
        found = False
        print(f"mahjong-table history: {escape(str(path))}: {exc.strerror}", file=sys.stderr)
        return ExitCode.INPUT
    if not found:
        print(f"mahjong-table history: no event log at {escape(str(path))}", file=sys.stderr)
        return ExitCode.HARDWARE
    with EventLogReader(path) as reader:
        ledger = build_ledger(reader.events())
    sessions = ledger.sessions
    if args.session is not None:
        sessions = [s for s in sessions if s.number == args.session]
        if not sessions:
            print(f"mahjong-table history: no session {args.session} in {path}", file=sys.stderr)
            return ExitCode.INPUT
    if args.csv is not None:
        return _write_csv(sessions, args.csv)
    if args.json:
        print(json.dumps([export_json(s) for s in sessions], ensure_ascii=False, indent=1))
        return ExitCode.OK
    if not sessions:
        print("no sessions yet")
    for s in sessions:
        _print_session(s)
    return ExitCode.OK


def _write_csv(sessions: list[SessionRecord], path: Path) -> int:
    """``history --csv``: the one session asked for, written as a spreadsheet."""
    from controller.table.ledger import export_csv

    if len(sessions) != 1:
        print("mahjong-table history: --csv writes one session: add --session N", file=sys.stderr)
        return ExitCode.INPUT
    try:
        path.write_text(export_csv(sessions[0]), encoding="utf-8-sig")
    except OSError as exc:
        print(f"mahjong-table history: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return ExitCode.HARDWARE
    print(f"session {sessions[0].number}: {len(sessions[0].hands)} hands written to {path}")
    return ExitCode.OK


def _print_session(s: SessionRecord) -> None:
    """One session as text: its heading, a line a hand, its totals and who pays whom."""
    from controller.table.ledger import settle_up

    names = s.seat_names
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.started))
    print(
        f"session {s.number} ({when}): {s.profile}, stake {s.stake}; "
        + ", ".join(f"{i} {n}" for i, n in enumerate(names))
    )
    for h in s.hands:
        print(_hand_line(h, names))
    totals = s.totals
    print("  totals: " + "  ".join(f"{n} {_money(x)}" for n, x in zip(names, totals, strict=False)))
    for a, b, x in settle_up(totals):
        print(f"    {names[a]} pays {names[b]} {_money(x)}")


def _hand_line(h: HandRecord, names: list[str]) -> str:
    """One hand of a session: its dealer, outcome, hand and payments, and what was corrected."""
    dealer = names[h.dealer] if h.dealer < len(names) else str(h.dealer)
    line = f"  hand {h.number:3d}  dealer {dealer}"
    line += f"  {h.outcome}"
    st = h.settlement or {}
    if h.payments is not None:
        kind = st.get("hand")
        if isinstance(kind, list):
            kind = " / ".join(str(k) for k in kind)
        line += f"  {kind or ''}  " + "  ".join(
            f"{'+' if x > 0 else ''}{_money(x)}" for x in h.payments
        )
    if h.corrected:
        line += f"  (corrected: {', '.join(h.corrected)})"
    return line


# -- run ---------------------------------------------------------------------------------------


def _check_port(url: str) -> None:
    from controller.errors import DeviceError

    try:
        there = "://" in url or Path(url).exists()
    except OSError as exc:
        raise DeviceError(f"the serial port {url!r} cannot be: {exc.strerror}") from None
    if not there:
        raise DeviceError(f"the serial port {url} does not exist: is the table's cable plugged in?")


def _session_args(cfg: Any) -> dict[str, Any]:
    from controller.table.ledger import amount_json

    t = cfg.table
    dealer = random.randrange(4) if t.dealer == "random" else int(t.dealer)
    return {
        "profile": t.profile,
        "stake": amount_json(t.stake),
        "seats": list(t.seats),
        "dealer": dealer,
    }


def _describe(e: Any) -> str | None:
    """An event worth a line in the journal."""
    from controller.table import events as ev

    if isinstance(e, ev.PhaseChanged):
        return f"{e.phase}: {e.reason}"
    if isinstance(e, ev.FaultChanged):
        return f"fault {e.fault} {'on' if e.active else 'cleared'} {e.message}".rstrip()
    if isinstance(e, ev.HandSettled):
        return f"hand {e.hand} settled: {e.payments}"
    if isinstance(e, ev.HandDrawn):
        return f"hand {e.hand} drawn"
    if isinstance(e, ev.QuestionAsked):
        return f"asked: {e.text}"
    return None


def run_command(args: argparse.Namespace) -> int:
    from controller.config import load_config

    cfg = load_config(args.config).with_overrides({"table.port": args.port})
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    with contextlib.ExitStack() as stack:
        runtime, feed = start_table(cfg, stack, on_line=lambda line: log.info("%s", line))
        if not args.headless:
            from controller.errors import ConfigError
            from webui.server import start_dashboard

            try:
                server = start_dashboard(
                    runtime,
                    camera=feed,
                    data_dir=Path(cfg.table.data_dir) / "dashboard",
                    host=cfg.table.host,
                    port=cfg.table.port,
                )
            except OSError as exc:
                raise ConfigError(
                    f"the dashboard cannot listen on {cfg.table.host}:{cfg.table.port}: "
                    f"{exc.strerror or exc}: set [table] port or pass --port"
                ) from None
            stack.callback(server.stop)
            log.info("dashboard on %s", server.url)
        log.info("the table is running (event log %s)", log_path(cfg))
        try:
            while not stop.wait(0.5):
                if runtime.fatal is not None:
                    raise runtime.fatal
        except KeyboardInterrupt:
            pass
        log.info("stopping")
    return ExitCode.OK


def start_table(cfg: Any, stack: contextlib.ExitStack, on_line: Callable[[str], None]) -> Any:
    """Start everything a real table runs, each part closed by ``stack``; returns the
    running :class:`~controller.table.runtime.TableRuntime` and its camera feed."""
    from controller.errors import ConfigError
    from controller.table.runtime import TableRuntime
    from controller.table.sources import CameraFeed, CameraLoop, device_events, panel_events
    from controller.table.store import EventLog
    from firmware_bridge.table_device import TableDevice
    from vision.calibration import load_calibration
    from vision.camera import open_camera
    from vision.pipeline import TablePipeline
    from vision.recognizer import TileRecognizer

    if cfg.camera.source == "sim":
        raise ConfigError(
            "[camera] source is 'sim', the simulator's camera: name the table's camera "
            "(0, /dev/video0, picamera), or run 'mahjong-table sim'"
        )
    port = cfg.serial.port
    if not port:
        raise ConfigError("[serial] port is not set: name the table MCU's serial port")
    _check_port(port)
    data = Path(cfg.table.data_dir)
    try:
        data.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make the data folder {data}: {exc.strerror}") from None
    calibration = load_calibration(cfg.calibration_path)
    pipeline = TablePipeline(calibration, TileRecognizer(cfg.camera.model_dir))
    camera = open_camera(cfg.camera.source, size=(cfg.camera.width, cfg.camera.height))
    event_log = EventLog(log_path(cfg))
    stack.callback(event_log.close)
    device = TableDevice(port, config=cfg.serial)
    stack.callback(device.close)
    feed_holder: list[Any] = []
    runtime = TableRuntime(event_log, device=device, on_hand_start=lambda: feed_holder[0].reset())
    feed = CameraFeed(pipeline, runtime.put, time.time)
    feed_holder.append(feed)

    def describe(e: Any) -> None:
        line = _describe(e)
        if line:
            on_line(line)

    runtime.subscribe(describe)
    stack.callback(device_events(device, runtime.put, time.time))
    if cfg.seat_panel is not None:
        from firmware_bridge.seat_panel import SeatPanel

        panel = SeatPanel(cfg.seat_panel)
        stack.callback(panel.close)
        stack.callback(panel_events(panel, runtime.put, time.time))
    runtime.start()
    stack.callback(runtime.stop)
    loop = CameraLoop(feed, camera)
    loop.start()
    stack.callback(loop.stop)
    if not runtime.snapshot()["session"]:
        runtime.request("new_session", _session_args(cfg), by="run")
    return runtime, feed


# -- doctor ------------------------------------------------------------------------------------


def doctor_command(args: argparse.Namespace) -> int:
    from controller.config import load_config

    cfg = load_config(args.config)
    checks = doctor_checks(cfg, timeout=args.timeout)
    bad = 0
    for name, ok, message in checks:
        bad += not ok
        print(f"{'ok  ' if ok else 'FIX '} {name}: {message}")
    print("all well" if not bad else f"{bad} thing(s) to fix")
    return ExitCode.OK if not bad else ExitCode.NO


def doctor_checks(cfg: Any, *, timeout: float = 5.0) -> list[tuple[str, bool, str]]:
    """Each check as (what, passed, what was found or what to do)."""
    out: list[tuple[str, bool, str]] = []

    def check(name: str, fn: Callable[[], str]) -> None:
        try:
            out.append((name, True, fn()))
        except Exception as exc:  # each check reports its own failure, and the rest go on
            out.append((name, False, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))

    data = Path(cfg.table.data_dir)
    check("disk", lambda: _check_disk(data))
    check("event log", lambda: _check_event_log(cfg))
    check("serial", lambda: _check_serial(cfg, timeout))
    check("gpio", lambda: _check_gpio(cfg))
    check("model", lambda: _check_model(cfg))
    check("calibration", lambda: _check_calibration(cfg))
    check("camera", lambda: _check_camera(cfg))
    return out


def _check_disk(data: Path) -> str:
    data.mkdir(parents=True, exist_ok=True)
    probe = data / ".doctor-probe"
    probe.write_text("ok", encoding="utf-8")
    probe.unlink()
    free = shutil.disk_usage(data).free / 2**20
    if free < MIN_FREE_MB:
        raise OSError(f"only {free:.0f} MB free in {data}: free at least {MIN_FREE_MB} MB")
    return f"{data} is writable, {free:,.0f} MB free"


def _check_event_log(cfg: Any) -> str:
    from controller.table.ledger import build_ledger
    from controller.table.store import EventLogReader

    path = log_path(cfg)
    if not path.exists():
        return f"none yet at {path} (the first run makes it)"
    with EventLogReader(path) as reader:
        ledger = build_ledger(reader.events())
        last = reader.last_seq()
    ledger.check_zero_sum()
    return f"{path}: {last} events, {len(ledger.sessions)} session(s), adds up"


def _check_serial(cfg: Any, timeout: float) -> str:
    from firmware_bridge.table_device import TableDevice

    port = cfg.serial.port
    if not port:
        raise ValueError("[serial] port is not set: name the MCU's port (/dev/ttyAMA0)")
    _check_port(port)
    device = TableDevice(port, config=cfg.serial)
    try:
        ident = device.wait_ready(timeout=timeout)
        st = device.status(timeout=timeout)
    finally:
        device.close()
    faults = f", faults: {', '.join(st.faults)}" if getattr(st, "faults", None) else ""
    return f"{port}: {ident}{faults}"


def _check_gpio(cfg: Any) -> str:
    from firmware_bridge.seat_panel import SeatPanel

    if cfg.seat_panel is None:
        return "no [seat_panel] configured: players use the dashboard's buttons"
    panel = SeatPanel(cfg.seat_panel, poll_interval=None)
    panel.close()
    return f"{len(cfg.seat_panel.seats)} seats' buttons and LEDs claimed and released"


def _check_model(cfg: Any) -> str:
    from vision.recognizer import TileRecognizer

    TileRecognizer(cfg.camera.model_dir)
    return f"the tile model in {cfg.camera.model_dir or 'vision/models'} loads"


def _check_calibration(cfg: Any) -> str:
    from vision.calibration import load_calibration

    path = cfg.calibration_path
    load_calibration(path)
    return f"{path} loads"


def _check_camera(cfg: Any) -> str:
    from vision.camera import open_camera

    if cfg.camera.source == "sim":
        return "'sim': the simulator's camera (set [camera] source on a real table)"
    cam = open_camera(cfg.camera.source, size=(cfg.camera.width, cfg.camera.height))
    try:
        frame = cam.read()
    finally:
        cam.close()
    h, w = frame.image.shape[:2]
    want = (cfg.camera.width, cfg.camera.height)
    if (w, h) != want:
        raise ValueError(
            f"{cfg.camera.source} gives {w}x{h} frames, not the {want[0]}x{want[1]} "
            "configured: set [camera] width and height, then calibrate again"
        )
    return f"{cfg.camera.source}: a {w}x{h} frame read"
