"""The whole table on the simulator, measured: does every hand settle right, how often does the
table have to ask, how fast does it answer, how much memory does the controller need.

::

    python -m bench.table_bench                    # 100 hands, seed 1; about 40 minutes here
    python -m bench.table_bench --hands 20 --seed 5 --json out.json
    python -m bench.table_bench --hands 5 --work /tmp/tb   # keep the table's log and inputs

It plays ``--hands`` hands flat out with :class:`hardware_sim.table_sim.TableSim` (the
simulated MCU on a pty, mock GPIO, the simulated camera read by the real vision pipeline, the
real controller and its SQLite log on disk), then prints:

- every hand settled wrong, with what differed (target: none), and every question asked and
  correction made, with the rate of hands that needed one (target: questions on at most 5 %);
- latency: from the stimulus the controller needed last (the frame showing the hand laid
  open, read through the vision pipeline, or the press) to its proposed settlement, p50/p95
  (target p95 < 500 ms);
- hands per minute, flat out (each hand renders and reads every frame of it);
- the controller's resident memory without the recogniser: a fresh process replays the
  controller's recorded inputs through a new controller and log and reports its peak RSS
  (target < 150 MB); it also checks that the replayed controller emits exactly the events the
  live one logged (the controller is deterministic given its inputs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.exit_codes import ExitCode

if TYPE_CHECKING:
    from controller.table.store import EventLog

REPO = Path(__file__).resolve().parent.parent


def controller_only(inputs: Path, log_path: Path) -> dict[str, object]:
    """Feed the recorded inputs to a fresh controller and log; its peak memory and whether
    it emitted what the live run logged. Runs in its own process (see ``--controller-only``);
    its log is a temporary one, removed after."""
    from controller.table.store import EventLog

    rss_start = peak_rss_mb()
    with tempfile.TemporaryDirectory(prefix="table-bench-") as tmp:
        log = EventLog(Path(tmp) / "replay.sqlite")
        try:
            return _replay(inputs, log_path, log, rss_start)
        finally:
            log.close()


def _replay(inputs: Path, log_path: Path, log: EventLog, rss_start: float) -> dict[str, object]:
    """What :func:`controller_only` measures, the replay logged to ``log``."""
    from controller.table.events import event_from_json
    from controller.table.machine import TableController
    from controller.table.state import TableState
    from controller.table.store import EventLog

    controller = TableController(TableState())
    outputs = 0
    started = time.perf_counter()
    with inputs.open(encoding="utf-8") as f:
        for line in f:
            out = controller.handle(event_from_json(line))
            if out:
                log.append_many(out)
                outputs += len(out)
    took = time.perf_counter() - started
    original = EventLog(log_path)
    live = [e.to_json() for _, e in original.events()]
    replayed = [e.to_json() for _, e in log.events()]
    original.close()
    return {
        "inputs": sum(1 for _ in inputs.open(encoding="utf-8")),
        "outputs": outputs,
        "same_as_live": live == replayed,
        "seconds": round(took, 3),
        "rss_mb": peak_rss_mb(),
        "rss_at_start_mb": rss_start,
        "modules": sorted(
            m for m in sys.modules if m.split(".")[0] in ("vision", "onnxruntime", "cv2", "torch")
        ),
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory. ``VmHWM``, not ``ru_maxrss``: Linux carries the
    latter over from the parent across fork and exec, so a child of a big process would
    report its parent's."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write every hand's report here")
    ap.add_argument(
        "--faults",
        default="",
        help="inject these faults (comma-separated: jam,lid,reset,unplug,camera,misread)",
    )
    ap.add_argument("--fault-rate", type=float, default=0.25, help="share of hands with a fault")
    ap.add_argument(
        "--work",
        type=Path,
        help="keep the table's log (table.sqlite) and the controller's inputs here, to look "
        "into a hand afterwards (default: a temporary folder, removed at the end)",
    )
    ap.add_argument("--controller-only", nargs=2, metavar=("INPUTS", "LOG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.controller_only:
        print(
            json.dumps(
                controller_only(Path(args.controller_only[0]), Path(args.controller_only[1]))
            )
        )
        return ExitCode.OK

    if args.work is not None:
        # a log already there would be resumed, and its hands counted as this run's
        if (args.work / "table.sqlite").exists():
            ap.error(f"{args.work} already holds a table's log: give a new or empty folder")
        try:
            args.work.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            ap.error(f"cannot make {args.work}: {exc.strerror}")
        return _bench(args, args.work)
    with tempfile.TemporaryDirectory(prefix="table-bench-") as work:
        return _bench(args, Path(work))


def _bench(args: argparse.Namespace, work: Path) -> int:
    """Play, replay and print the figures, the table's files in ``work``; the exit code."""
    db = work / "table.sqlite"
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores; "
        f"{args.hands} hands, seed {args.seed}"
    )
    reports, took = _play_hands(args, db, work / "inputs.jsonl")
    wrong = _print_hands_summary(reports, took)
    ctl = _controller_alone(work / "inputs.jsonl", db)
    if args.json:
        args.json.write_text(
            json.dumps({"reports": [r.to_json() for r in reports], "controller": ctl}, indent=1),
            encoding="utf-8",
        )
    return ExitCode.NO if wrong or not ctl["same_as_live"] else ExitCode.OK


def _play_hands(args: argparse.Namespace, db: Path, inputs: Path) -> tuple[list[Any], float]:
    """Play the hands on the simulator flat out, the controller's inputs journalled to
    ``inputs`` (for :func:`controller_only` to replay), a line printed per hand; the hands'
    reports and the seconds they took."""
    from controller.table.events import event_to_json_text
    from hardware_sim.table_sim import TableSim

    reports = []
    started = time.perf_counter()
    faults = tuple(f for f in args.faults.split(",") if f)
    with inputs.open("w", encoding="utf-8") as journal:

        def record(e: Any) -> None:
            journal.write(event_to_json_text(e) + "\n")

        with TableSim(
            seed=args.seed, db=db, on_input=record, faults=faults, fault_rate=args.fault_rate
        ) as sim:
            for r in sim.play(args.hands):
                reports.append(r)
                flag = "WRONG" if r.mismatches else ("asked" if r.questions else "ok")
                if r.corrections:
                    flag += ", corrected"
                fault = f"  fault {r.fault}: {', '.join(r.faults) or 'not seen'}" if r.fault else ""
                print(
                    f"  hand {r.hand:3d} {r.outcome:8s} {','.join(r.how) or '-':22s} "
                    f"{r.frames:4d} frames  {flag}{fault}",
                    flush=True,
                )
    return reports, time.perf_counter() - started


def _print_hands_summary(reports: list[Any], took: float) -> list[Any]:
    """Print what the hands came to: outcomes, wrong settlements, questions, corrections,
    latency and pace; returns the hands settled wrong."""
    wrong = [r for r in reports if r.mismatches]
    asked = [r for r in reports if r.questions]
    corrected = [r for r in reports if r.corrections]
    lat = [r.latency_s * 1000 for r in reports if r.latency_s is not None]
    outcomes = Counter(r.outcome for r in reports)
    hows = Counter(h for r in reports for h in r.how)
    kinds = Counter(q.split(":")[0] for r in reports for q in r.questions)
    frames = sum(r.frames for r in reports)
    print()
    print(f"hands: {len(reports)} ({dict(outcomes)}); wins by {dict(hows)}")
    print(f"settled wrong: {len(wrong)}")
    for r in wrong:
        for m in r.mismatches:
            print(f"  hand {r.hand}: {m}")
    print(
        f"hands with a question: {len(asked)} ({100 * len(asked) / max(1, len(reports)):.1f} %); "
        f"questions by kind {dict(kinds)}"
    )
    for r in asked:
        for q in r.questions:
            print(f"  hand {r.hand}: {q}")
    print(f"hands with a correction (the players put right a misread): {len(corrected)}")
    for r in corrected:
        for c in r.corrections:
            print(f"  hand {r.hand}: {c}")
    if lat:
        print(
            f"stimulus -> proposed settlement: p50 {pct(lat, 0.5):.0f} ms, "
            f"p95 {pct(lat, 0.95):.0f} ms, "
            f"max {max(lat):.0f} ms ({len(lat)} wins)"
        )
    print(
        f"flat out: {len(reports) / (took / 60):.2f} hands/min, {frames} frames "
        f"({1000 * took / max(1, frames):.0f} ms per frame, everything included)"
    )
    return wrong


def _controller_alone(inputs: Path, db: Path) -> dict[str, Any]:
    """Replay the journalled inputs through the controller alone in a fresh process (its
    memory and imports the controller's own, not the simulator's), and print its figures."""
    out = subprocess.run(
        [
            *(sys.executable, "-m", "bench.table_bench", "--controller-only"),
            *(str(inputs), str(db)),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    ctl: dict[str, Any] = json.loads(out.stdout)
    print(
        f"controller alone: {ctl['inputs']} inputs -> {ctl['outputs']} events "
        f"in {ctl['seconds']} s; "
        f"peak RSS {ctl['rss_mb']:.0f} MB (interpreter at start {ctl['rss_at_start_mb']:.0f} MB); "
        f"replay identical to the live log: {ctl['same_as_live']}; vision modules loaded: "
        f"{ctl['modules'] or 'none'}"
    )
    return ctl


if __name__ == "__main__":
    sys.exit(main())
