"""Serial link benchmark: command round trips over a pty, clean and under line faults, beside
a raw pyserial echo over the same kind of pty (the floor any protocol on this path stands on).

    python -m bench.link_bench [--rounds 10] [--per-round 300] [--pin same|split]

What is measured, each in the same process run:

* ``raw echo``: pyserial writes a 15-byte message (the size of a command frame) to a pty whose
  other end, a separate Python process, writes every byte straight back; the round trip ends
  when all 15 bytes are read back.
* ``TableDevice``: ``TableDevice.lights()`` against ``sim-mcu`` on a pty, each call waiting
  for the MCU's answer: framing, CRC, link acknowledgements, the MCU's command memory.
  Sequential (one at a time: latency) and pipelined (many submitted at once: throughput).
* the same under 1% byte corruption and 5% frame loss applied by the simulator to both
  directions ("faults").

The echo and the device runs take turns in rounds, so all see the same load on a shared
machine; p50/p99 are over all rounds. The pty's own latency moves with the machine (from about
12 us to 85 us a round trip on the 2-core development VM, depending on where the kernel runs
the two ends and the pty's work), so the clean/echo ratio is also given per round, from that
round's p50s, with the median over the rounds. ``--pin same`` runs this process and every
peer (echo, simulators) on one CPU, ``--pin split`` this process on one CPU and the peers on
another, so that the echo and the device run with their ends placed alike.

Targets (issue 3): clean p50 within 2x the raw echo's; under faults p99 under 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

from controller.exit_codes import ExitCode

REPO = Path(__file__).resolve().parent.parent

MESSAGE = bytes(range(0xA0, 0xA0 + 15))

#: CPUs for the peer processes (--pin split); None: they inherit this process's
PEER_CPUS: set[int] | None = None


def place_peer(pid: int) -> None:
    if PEER_CPUS is not None:
        os.sched_setaffinity(pid, PEER_CPUS)


def echo_server() -> None:
    """Child process: open a pty, print its path, echo every byte until stdin closes."""
    import tty

    master, slave = os.openpty()
    tty.setraw(slave)
    print(os.ttyname(slave), flush=True)
    while True:
        ready, _, _ = select.select([master, sys.stdin], [], [])
        if sys.stdin in ready and not sys.stdin.readline():
            return
        if master in ready:
            data = os.read(master, 65536)
            os.write(master, data)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def summarise(name: str, lat: list[float], elapsed: float, n: int) -> dict:
    if not n:
        empty = {"p50_ms": None, "p99_ms": None, "max_ms": None, "mean_ms": None}
        return {"name": name, "n": 0, **empty, "per_s": 0.0}
    return {
        "name": name,
        "n": n,
        "p50_ms": pct(lat, 0.50) * 1000 if lat else None,
        "p99_ms": pct(lat, 0.99) * 1000 if lat else None,
        "max_ms": max(lat) * 1000 if lat else None,
        "mean_ms": statistics.fmean(lat) * 1000 if lat else None,
        "per_s": n / elapsed,
    }


class Echo:
    """The floor: a raw pyserial round trip through a pty to a process that echoes bytes."""

    def __init__(self) -> None:
        import serial

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.link_bench", "--echo-server"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        path = self.proc.stdout.readline().strip()
        place_peer(self.proc.pid)
        self.port = serial.serial_for_url(path, timeout=1.0, exclusive=True)

    def round_trips(self, n: int) -> list[float]:
        lat = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.port.write(MESSAGE)
            got = self.port.read(len(MESSAGE))
            lat.append(time.perf_counter() - t0)
            assert got == MESSAGE
        return lat

    def close(self) -> None:
        self.port.close()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Device:
    """TableDevice against a simulated MCU process on a pty."""

    def __init__(self, faults: dict) -> None:
        from firmware_bridge.config import SerialConfig
        from firmware_bridge.table_device import TableDevice
        from hardware_sim.mcu_process import SimMcuProcess

        self.sim = SimMcuProcess(speed=1000, seed=11, **faults)
        place_peer(self.sim.proc.pid)
        self.dev = TableDevice(self.sim.port, config=SerialConfig(command_timeout=30.0))
        self.dev.wait_ready(30)

    def round_trips(self, n: int) -> list[float]:
        lat = []
        for i in range(n):
            t0 = time.perf_counter()
            self.dev.lights(i % 32, 2)
            lat.append(time.perf_counter() - t0)
        return lat

    def pipelined(self, n: int) -> float:
        from firmware_bridge import protocol as p

        start = time.perf_counter()
        pending = [self.dev.submit(p.Lights, 60.0, mask=i % 32, level=3) for i in range(n)]
        for x in pending:
            x.result()
        return n / (time.perf_counter() - start)

    def checks(self) -> dict:
        st = self.dev.status()
        link = self.dev.link_stats
        stats = self.sim.stats()
        return {
            "executed_twice": st.duplicates,
            "mcu_max_runs_per_id": stats["mcu"]["max_runs_per_id"],
            "commands_run": st.executed,
            "retransmits": link.retransmits,
            "timeouts": link.timeouts,
            "naks_sent": link.naks_sent,
            "naks_received": link.naks_received,
            "corrupt_frames_seen": link.corrupt,
            "line": stats["line"],
        }

    def close(self) -> None:
        self.dev.close()
        self.sim.close()


class BareLink:
    """The protocol without TableDevice: the bridge's link layer and codec driven from this
    thread against a simulated MCU process (no reader thread, no hand-over between threads).
    It shows how much of a round trip is the protocol's work and how much TableDevice's."""

    def __init__(self) -> None:
        import serial

        from firmware_bridge.framing import FrameDecoder
        from firmware_bridge.link import LinkEndpoint
        from hardware_sim.mcu_process import SimMcuProcess

        self.sim = SimMcuProcess(speed=1000, seed=11)
        place_peer(self.sim.proc.pid)
        self.port = serial.serial_for_url(self.sim.port, timeout=0.005, exclusive=True)
        self.link = LinkEndpoint(initiator=True)
        self.dec = FrameDecoder()
        self.next_id = 1
        self.link.start_reset(os.urandom(4), time.monotonic())
        self._pump(lambda kind, msg: kind == "reset_done")

    def _pump(self, until) -> None:  # type: ignore[no-untyped-def]
        from firmware_bridge import protocol as p

        while True:
            now = time.monotonic()
            for frame in self.link.poll(now):
                self.port.write(frame)
            data = self.port.read(1)
            if data and self.port.in_waiting:
                data += self.port.read(self.port.in_waiting)
            for frame in self.dec.feed(data):
                for d in self.link.on_frame(frame, now):
                    msg = p.decode_message(d.payload) if d.kind == "data" else None
                    if until(d.kind, msg):
                        return

    def round_trips(self, n: int) -> list[float]:
        from firmware_bridge import protocol as p

        lat = []
        for i in range(n):
            cid = self.next_id
            self.next_id += 1
            t0 = time.perf_counter()
            self.link.send(p.Lights(cmd_id=cid, mask=i % 32, level=4).encode())
            self._pump(lambda kind, msg, cid=cid: isinstance(msg, p.Reply) and msg.cmd_id == cid)
            lat.append(time.perf_counter() - t0)
        return lat

    def close(self) -> None:
        self.port.close()
        self.sim.close()


def measure(rounds: int, per_round: int) -> tuple[list[dict], list[dict], dict, dict]:
    """Echo and device runs interleaved in rounds, so all see the same machine load; returns
    the summary rows, the per-round p50s, and the checks of the clean and faulty runs."""
    echo = Echo()
    bare = BareLink()
    clean = Device({})
    faulty = Device({"corrupt": 0.01, "drop": 0.05})
    runners = (("echo", echo), ("bare", bare), ("clean", clean), ("faulty", faulty))
    try:
        for _, warm in runners:
            warm.round_trips(100)
        lat: dict[str, list[float]] = {name: [] for name, _ in runners}
        spent = dict.fromkeys(lat, 0.0)
        by_round: list[dict] = []
        for _ in range(rounds):
            p50s = {}
            for name, runner in runners:
                t0 = time.perf_counter()
                got = runner.round_trips(per_round)
                spent[name] += time.perf_counter() - t0
                lat[name] += got
                p50s[name] = pct(got, 0.5) * 1000
            by_round.append({f"{k}_p50_ms": v for k, v in p50s.items()})
            by_round[-1]["clean_over_echo"] = p50s["clean"] / p50s["echo"]
        n = rounds * per_round
        rows = [
            summarise("raw pyserial echo (floor)", lat["echo"], spent["echo"], n),
            summarise("link layer alone, caller's thread", lat["bare"], spent["bare"], n),
            summarise("TableDevice clean, one at a time", lat["clean"], spent["clean"], n),
            summarise("TableDevice clean, pipelined", [], 1.0, 0) | {"per_s": clean.pipelined(n)},
            summarise("TableDevice faults, one at a time", lat["faulty"], spent["faulty"], n),
            summarise("TableDevice faults, pipelined", [], 1.0, 0) | {"per_s": faulty.pipelined(n)},
        ]
        return rows, by_round, clean.checks(), faulty.checks()
    finally:
        for _, x in runners:
            x.close()


def fmt(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="interleaved rounds (10)")
    ap.add_argument("--per-round", type=int, default=300, help="round trips per round (300)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument(
        "--pin",
        choices=("same", "split"),
        help="both ends on one CPU (same), or this process and the peers on two (split)",
    )
    ap.add_argument("--echo-server", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.echo_server:
        echo_server()
        return ExitCode.OK
    if args.pin:
        global PEER_CPUS
        cpus = sorted(os.sched_getaffinity(0))
        if args.pin == "split" and len(cpus) < 2:
            ap.error("--pin split needs two CPUs")
        os.sched_setaffinity(0, {cpus[0]})  # before any thread or peer starts: they inherit it
        PEER_CPUS = {cpus[1]} if args.pin == "split" else None

    rows, by_round, clean_checks, fault_checks = measure(args.rounds, args.per_round)
    echo, _, clean_seq, _, fault_seq, _ = rows
    print(
        f"link_bench: {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}; faults = 1% byte corruption + 5% frame "
        f"loss, both directions; placement: {args.pin or 'left to the kernel'}"
    )
    print(f"{'':36} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cmds/s':>9} {'p50/echo':>9}")
    for r in rows:
        ratio = r["p50_ms"] / echo["p50_ms"] if r["p50_ms"] is not None else None
        print(
            f"{r['name']:36} {fmt(r['p50_ms']):>8} {fmt(r['p99_ms']):>8} "
            f"{fmt(r['max_ms'], 1):>8} {r['per_s']:>9.0f} {fmt(ratio, 2):>9}"
        )
    print(f"\n{'round':>5} {'echo p50':>9} {'link p50':>9} {'clean p50':>10} {'clean/echo':>11}")
    for i, r in enumerate(by_round, 1):
        print(
            f"{i:>5} {r['echo_p50_ms']:>9.3f} {r['bare_p50_ms']:>9.3f} "
            f"{r['clean_p50_ms']:>10.3f} {r['clean_over_echo']:>11.2f}"
        )
    ratios = [r["clean_over_echo"] for r in by_round]
    ratio = clean_seq["p50_ms"] / echo["p50_ms"]
    print(
        f"clean p50 / raw echo p50 = {ratio:.2f} over all rounds; per round median "
        f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}); "
        "target <= 2"
    )
    print(f"under faults p99 = {fault_seq['p99_ms']:.1f} ms (target < 100)")
    print(f"clean:  {json.dumps(clean_checks)}")
    print(f"faults: {json.dumps(fault_checks)}")
    ok = all(
        c["executed_twice"] == 0 and c["mcu_max_runs_per_id"] == 1
        for c in (clean_checks, fault_checks)
    )
    print("every command ran exactly once: " + ("yes" if ok else "NO"))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"rows": rows, "rounds": by_round, "clean": clean_checks, "faults": fault_checks},
                indent=2,
            )
        )
    return ExitCode.OK if ok else ExitCode.NO


if __name__ == "__main__":
    sys.exit(main())
