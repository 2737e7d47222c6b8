"""``mahjong-table sim``: the whole table on the simulator, with four bots playing.

::

    mahjong-table sim                      # plays on until Ctrl-C, ten times real time
    mahjong-table sim --hands 8 --seed 3 --speed 0 --json

Each hand is played from the dealer's confirm press to the settled score through every real
code path (:mod:`hardware_sim.table_sim`); each settlement is printed with its working as the
table settles it, and checked against the bots' true outcome. Exit status 0 when every hand
settled right, 1 when one did not (each listed), 2 bad arguments, 3 a part of the table
could not start (the event log, the simulated MCU).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.exit_codes import ExitCode

if TYPE_CHECKING:  # only for annotations: the command imports these when it runs
    from controller.config import TableConfig
    from hardware_sim.table_sim import TableSim
    from webui.server import Server


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sim",
        help="run the table on the simulator: four bots play, the table scores",
        description="Run the whole table on the simulator: the simulated MCU on a pty, the "
        "seat panel on mock GPIO pins, the simulated overhead camera read by the real vision "
        "pipeline, and the table controller, while four bots play Shanghai hands. Prints "
        "each settlement as the table settles it, checked against the bots' true outcome. "
        "Ctrl-C ends it cleanly. Exit status 0 every hand settled right, 1 one did not, "
        "2 bad arguments, 3 a part of the table could not start.",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="a table config file: its [sim] and [table] sections set the defaults below",
    )
    p.add_argument("--hands", type=int, help="hands to play (default 0: until Ctrl-C)")
    p.add_argument("--seed", type=int, help="the bots' walls and choices, the dice (default 0)")
    p.add_argument(
        "--speed",
        type=float,
        help="simulated seconds per real second (default 10); 0 plays as fast as it can",
    )
    p.add_argument("--profile", help="rules profile (default shanghai)")
    p.add_argument("--stake", help="底分, the stake (default 1)")
    p.add_argument(
        "--faults",
        help="inject faults now and then, comma-separated: jam,lid,reset,unplug,camera,misread",
    )
    p.add_argument(
        "--db",
        type=Path,
        help="keep the table's event log in this file (default: in memory); an existing "
        "log is resumed where it was",
    )
    p.add_argument(
        "--confirm",
        help="who confirms each settlement: the bots (players, the default) or you, on the "
        "dashboard (the bots lay their hands and answer the table, then wait for you)",
    )
    p.add_argument("--json", action="store_true", help="print each hand's report as one JSON line")
    p.add_argument(
        "--events", action="store_true", help="with --json, also print every controller event"
    )
    p.add_argument("--port", type=int, help="the dashboard's port (default: [table] port)")
    p.add_argument("--host", help="the address the dashboard listens on (default: [table] host)")
    p.add_argument("--headless", action="store_true", help="no dashboard")
    p.set_defaults(func=sim_command)


def _text_report(report: Any, settled: Any, profile: Any) -> str:
    from controller.rules import settle, win_from_json
    from controller.rules.report import format_settlement

    head = (
        f"hand {report.hand}: dealer seat {report.dealer}, dice {report.dice[0]}+{report.dice[1]}"
    )
    lines = [head]
    if report.outcome == "drawn":
        lines.append("  drawn (流局): nobody pays")
    elif settled is not None:
        wins = [win_from_json(w) for w in settled.wins]
        lines += ["  " + line for line in format_settlement(settle(wins, profile)).splitlines()]
    for q in report.questions:
        lines.append(f"  asked: {q}")
    for c in report.corrections:
        lines.append(f"  corrected: {c}")
    if report.mismatches:
        lines += [f"  WRONG: {m}" for m in report.mismatches]
    elif report.outcome != "stopped":
        lines.append("  matches the bots' true outcome")
    return "\n".join(lines)


def sim_command(args: argparse.Namespace) -> int:
    """Play the hands, printing each as it is settled; the totals at the end."""
    from controller.errors import MahjongTableError, StorageError
    from controller.table import events as ev
    from controller.table.events import event_to_json_text
    from hardware_sim.mcu_process import SimMcuError
    from hardware_sim.table_sim import SimError

    cfg = _sim_config(args)
    # the event thread and the reports print to one stream: a line is never cut by another
    lock = threading.Lock()
    settled: dict[int, Any] = {}

    def on_event(e: Any) -> None:
        if isinstance(e, ev.HandSettled):
            settled[e.hand] = e
        if args.json and args.events:
            with lock:
                print(event_to_json_text(e), flush=True)

    try:
        sim = _new_sim(args, cfg, on_event)
    except MahjongTableError as exc:
        print(f"mahjong-table sim: {exc}", file=sys.stderr)
        return ExitCode.INPUT
    if cfg.sim.confirm == "dashboard" and args.headless:
        print(
            "mahjong-table sim: settlements confirmed on the dashboard need the dashboard: "
            "drop --headless, or let the players confirm (--confirm players)",
            file=sys.stderr,
        )
        return ExitCode.INPUT
    tally = _Tally()
    server = None
    # the dashboard's session key and PIN live as long as this run: removed when it ends
    # (a headless run has none; a run killed with SIGKILL cannot remove its own)
    board: tempfile.TemporaryDirectory[str] | None = None
    try:
        sim.start()
        if not args.headless:
            board = tempfile.TemporaryDirectory(prefix="mahjong-sim-dashboard-")
            server = _start_dashboard(sim, cfg, board.name)
            if server is None:
                return ExitCode.HARDWARE
        if not args.json:
            _say_running(cfg)
        with _stop_on_signals(sim):
            _print_reports(sim, cfg.sim.hands, args.json, settled, lock, tally)
        if sim.stopping and not args.json:
            _say_stopped()
    except KeyboardInterrupt:  # before the handlers were set, or a second Ctrl-C
        sim.stop()
        if not args.json:
            _say_stopped()
    except (SimError, SimMcuError, StorageError, OSError) as exc:
        print(f"mahjong-table sim: {exc}", file=sys.stderr)
        return ExitCode.HARDWARE
    finally:
        totals = _totals(sim)
        if server is not None:
            server.stop()
        sim.close()
        if board is not None:
            board.cleanup()
    if not args.json:
        _say_totals(tally, totals)
    return ExitCode.NO if tally.wrong else ExitCode.OK


def _new_sim(args: argparse.Namespace, cfg: TableConfig, on_event: Any) -> TableSim:
    """The simulated table as configured, not yet started."""
    from hardware_sim.table_sim import TableSim

    return TableSim(
        seed=cfg.sim.seed,
        db=args.db or ":memory:",
        profile=cfg.table.profile,
        stake=cfg.table.stake,
        seats=tuple(cfg.table.seats),
        pace=cfg.sim.speed,
        faults=tuple(cfg.sim.faults),
        confirm=cfg.sim.confirm,
        on_event=on_event,
    )


@dataclass
class _Tally:
    """The hands played so far, and how many of them were settled wrong."""

    played: int = 0
    wrong: int = 0


def _print_reports(
    sim: TableSim,
    hands: int,
    as_json: bool,
    settled: dict[int, Any],
    lock: threading.Lock,
    tally: _Tally,
) -> None:
    """Play ``hands`` hands (0: until stopped), printing each one's report, counted in
    ``tally`` as it comes (an interrupted run still says what it played)."""
    for report in sim.play(hands):
        tally.played += 1
        tally.wrong += bool(report.mismatches)
        if as_json:
            line = json.dumps({"report": report.to_json()}, ensure_ascii=False)
        else:
            line = _text_report(report, settled.get(report.hand), sim.profile)
        with lock:
            print(line, flush=True)


@contextmanager
def _stop_on_signals(sim: Any) -> Iterator[None]:
    """Ctrl-C and SIGTERM ask the simulator to stop at its next safe point (a
    KeyboardInterrupt raised anywhere could leave a lock held, and the close hang); a second
    Ctrl-C interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        sim.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _sim_config(args: argparse.Namespace) -> TableConfig:
    """The configuration, the command line's options over the config file's."""
    from controller.config import load_config

    faults = None if args.faults is None else [f for f in args.faults.split(",") if f]
    # the command line's options are checked as the config file's keys are
    return load_config(args.config).with_overrides(
        {
            "sim.hands": args.hands,
            "sim.seed": args.seed,
            "sim.speed": args.speed,
            "sim.faults": faults,
            "sim.confirm": args.confirm,
            "table.profile": args.profile,
            "table.stake": args.stake,
            "table.port": args.port,
            "table.host": args.host,
        }
    )


def _start_dashboard(sim: TableSim, cfg: TableConfig, board: str) -> Server | None:
    """The dashboard's server on the simulated table, its data in ``board``; None (said)
    where it cannot listen."""
    from webui.server import start_dashboard

    try:
        server = start_dashboard(
            sim.runtime,
            camera=sim.feed,
            data_dir=board,
            host=cfg.table.host,
            port=cfg.table.port,
        )
    except OSError as exc:
        print(
            f"mahjong-table sim: the dashboard cannot listen on {cfg.table.host}:"
            f"{cfg.table.port}: {exc.strerror or exc}; choose another --port, or "
            "--headless",
            file=sys.stderr,
        )
        return None
    print(f"dashboard: {server.url}", file=sys.stderr, flush=True)
    return server


def _say_running(cfg: TableConfig) -> None:
    pace = "flat out" if not cfg.sim.speed else f"{cfg.sim.speed:g}x real time"
    print(
        f"the table is running on the simulator (seed {cfg.sim.seed}, {pace}); Ctrl-C ends it",
        flush=True,
    )


def _say_stopped() -> None:
    """Say that a stop left the hand in play unfinished (the log resumes it)."""
    print("\nstopped: the hand in play is left as it was", file=sys.stderr)


def _say_totals(tally: _Tally, totals: list[Any]) -> None:
    """The closing line: hands played, how many settled wrong, each seat's total."""
    print(
        f"{tally.played} hand(s), {tally.wrong} settled wrong; totals: "
        + "  ".join(f"seat {k} {v}" for k, v in enumerate(totals)),
        flush=True,
    )


def _totals(sim: Any) -> list[Any]:
    try:
        return list(sim.snapshot()["totals"])
    except Exception:
        return []
