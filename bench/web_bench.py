"""The dashboard under load: open pages receiving the live feed while the simulator plays.

::

    python -m bench.web_bench                       # 20 pages, 2 hands flat out; about 2 minutes
    python -m bench.web_bench --pages 20 --hands 3 --speed 10   # at the sim's default pace

The whole simulated table (:class:`hardware_sim.table_sim.TableSim`: the MCU on a pty, the
seat panel on mock GPIO, the rendered camera read by the real vision pipeline, the controller
and its log) and the dashboard (:func:`webui.server.start_dashboard`, waitress) run in this
process, as ``mahjong-table sim`` runs them. ``--pages`` live feeds (``GET /api/events``, what
each open page holds) are read by another process, one thread each, and every frame is stamped
as it arrives. Each controller event is stamped here as the controller emits it (after the
log has it: when it is decided), and matched to its frame on every page by its JSON text.

It prints, against the target (issue 23: p95 < 250 ms):

- the event delay, from the controller emitting an event to a page receiving it: p50, p95
  and max over every event on every page; events a page missed (it must be none);
- the server's memory: this process's resident set before the pages open, with them open
  while the table plays (peak), and what the pages added; its threads.

The pages here read the stream as a browser's ``EventSource`` does but draw nothing: the
delay is the server's and the network's, not a page's rendering (the browser tests check that
a page shows an event within a second). Exit status 1 when the target is missed or an event
did not reach every page.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from controller.exit_codes import ExitCode

TARGET_P95_MS = 250.0


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory (``VmRSS``) or its peak (``VmHWM``), in MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def canonical(data: Any) -> str:
    """An event's JSON as one text, however it was spaced: the key that matches its frames."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the pages (their own process) -------------------------------------------------------------


def read_pages(port: int, pages: int, out: Path) -> None:
    """Open ``pages`` feeds; say ``ready`` on stdout once each has its first snapshot; read
    until stdin closes, then write every page's frames (arrival time, event type, data) to
    ``out`` as JSON."""
    frames: list[list[tuple[float, str, str]]] = [[] for _ in range(pages)]
    ready = threading.Barrier(pages + 1)
    conns: list[http.client.HTTPConnection] = []

    def page(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        conns.append(conn)
        conn.request("GET", "/api/events", headers={"Accept": "text/event-stream"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise SystemExit(f"page {i}: the feed answered {resp.status}")
        kind = ""
        first = True
        try:
            for raw in resp:
                line = raw.decode("utf-8").rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    frames[i].append((time.time(), kind, line[6:]))
                    if first:
                        first = False
                        ready.wait()
        except (OSError, http.client.HTTPException, ValueError):
            return

    threads = [threading.Thread(target=page, args=(i,), daemon=True) for i in range(pages)]
    for t in threads:
        t.start()
    ready.wait(60)
    print("ready", flush=True)
    sys.stdin.read()  # until the bench is done
    for conn in conns:
        conn.close()
    out.write_text(json.dumps(frames), encoding="utf-8")


def match_delays(
    emitted: list[tuple[float, str, str]], received: list[list[list[Any]]]
) -> tuple[list[float], int]:
    """Each emitted event's delay to each page, in ms, and how many (event, page) pairs never
    arrived. ``emitted``: (time, type, canonical JSON) in the order the controller emitted
    them; ``received``: per page, its frames as (time, type, JSON text). The k-th emission of
    a JSON text is the k-th frame of that text on a page (the controller may emit one event
    twice, the same to the letter)."""
    delays: list[float] = []
    missed = 0
    for frames in received:
        arrivals: dict[str, list[float]] = {}
        for t, kind, data in frames:
            if kind != "snapshot":
                arrivals.setdefault(canonical(json.loads(data)), []).append(t)
        seen: Counter[str] = Counter()
        for t, _kind, data in emitted:
            k = seen[data]
            seen[data] += 1
            got = arrivals.get(data, [])
            if k < len(got):
                delays.append((got[k] - t) * 1000)
            else:
                missed += 1
    return delays, missed


# -- the table and the server (this process) ----------------------------------------------------


def _free_port() -> int:
    """A port on this machine that nothing listens on now, for the dashboard."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _start_pages(port: int, pages: int, out: Path) -> subprocess.Popen[str]:
    """The pages' own process (:func:`read_pages`), so that reading the feeds takes none of
    the server's time."""
    return subprocess.Popen(
        [sys.executable, "-m", "bench.web_bench", "--read-pages", str(port), str(pages), str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


class _PeakRss:
    """This process's resident memory, sampled every quarter second on a thread of its own
    from now until :meth:`stop`: the peak while the table plays."""

    def __init__(self) -> None:
        self.first = rss_mb()
        self._samples = [self.first]
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.25):
            self._samples.append(rss_mb())

    def stop(self) -> float:
        """Stop sampling; the peak, in MB."""
        self._done.set()
        self._thread.join()
        return max(self._samples)


def _delay_figures(delays: list[float]) -> dict[str, float | None]:
    """The event delays' p50, p95 and max, in ms (none where no event arrived)."""
    return {
        "p50": round(percentile(delays, 0.50), 2) if delays else None,
        "p95": round(percentile(delays, 0.95), 2) if delays else None,
        "max": round(max(delays), 2) if delays else None,
    }


def _rss_figures(before: float, pages_open: float, peak: float) -> dict[str, float]:
    """The server's memory before the pages opened, with them open and at its peak while the
    table played, in MB."""
    return {
        "before_pages": round(before, 1),
        "pages_open": round(pages_open, 1),
        "peak_playing": round(peak, 1),
        "added_by_pages": round(pages_open - before, 1),
    }


def run(pages: int, hands: int, seed: int, speed: float) -> dict[str, Any]:
    """Play ``hands`` hands on the simulated table with ``pages`` pages reading its feed;
    the figures :func:`main` prints."""
    from controller.table.events import Event
    from hardware_sim.table_sim import TableSim
    from webui.server import start_dashboard

    emitted: list[tuple[float, str, str]] = []
    recording = threading.Event()

    def on_event(e: Event) -> None:
        if recording.is_set():
            emitted.append((time.time(), e.type, canonical(e.to_json())))

    port = _free_port()
    work = Path(tempfile.mkdtemp(prefix="web-bench-"))
    sim = TableSim(seed=seed, db=work / "table.db", pace=speed, on_event=on_event)
    sim.start()
    server = start_dashboard(
        sim.runtime, camera=sim.feed, data_dir=work, host="127.0.0.1", port=port, speak=False
    )
    rss_before = rss_mb()
    out = work / "pages.json"
    reader = _start_pages(port, pages, out)
    try:
        assert reader.stdout is not None and reader.stdin is not None
        if reader.stdout.readline().strip() != "ready":
            raise SystemExit("the pages did not open")
        rss = _PeakRss()
        recording.set()
        started = time.perf_counter()
        reports = list(sim.play(hands))
        took = time.perf_counter() - started
        recording.clear()
        time.sleep(1.0)  # the last frames reach the pages
        peak = rss.stop()
        threads = threading.active_count()
        reader.stdin.close()
        reader.wait(60)
    finally:
        if reader.poll() is None:
            reader.kill()
        server.stop()
        sim.stop()
    received: list[list[list[Any]]] = json.loads(out.read_text(encoding="utf-8"))

    delays, missed = match_delays(emitted, received)
    return {
        "pages": pages,
        "hands": len(reports),
        "hands_wrong": sum(1 for r in reports if not r.ok),
        "seconds": round(took, 1),
        "events": len(emitted),
        "events_by_type": dict(Counter(kind for _, kind, _ in emitted).most_common()),
        "frames_per_page": round(sum(len(f) for f in received) / max(1, len(received)), 1),
        "delay_ms": _delay_figures(delays),
        "missed": missed,
        "rss_mb": _rss_figures(rss_before, rss.first, peak),
        "threads": threads,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.web_bench", description=__doc__)
    p.add_argument("--pages", type=int, default=20, help="open pages (default 20)")
    p.add_argument("--hands", type=int, default=2, help="hands to play (default 2)")
    p.add_argument("--seed", type=int, default=1, help="the simulator's seed (default 1)")
    p.add_argument(
        "--speed",
        type=float,
        default=0.0,
        help="simulated seconds per second (default 0: flat out)",
    )
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    p.add_argument(
        "--read-pages", nargs=3, metavar=("PORT", "PAGES", "OUT"), help=argparse.SUPPRESS
    )
    args = p.parse_args(argv)
    if args.read_pages:
        read_pages(int(args.read_pages[0]), int(args.read_pages[1]), Path(args.read_pages[2]))
        return ExitCode.OK
    if not 1 <= args.pages <= 24:
        p.error("--pages: 1 to 24 (the dashboard's stream cap)")
    if args.hands < 1:
        p.error("--hands: at least 1")
    print(
        f"web bench: {args.pages} pages, {args.hands} hands, seed {args.seed}, "
        f"{'flat out' if not args.speed else f'{args.speed:g}x'}; {os.cpu_count()} cores",
        flush=True,
    )
    r = run(args.pages, args.hands, args.seed, args.speed)
    d, m = r["delay_ms"], r["rss_mb"]
    print(f"hands played {r['hands']} ({r['hands_wrong']} settled wrong) in {r['seconds']} s")
    print(f"events {r['events']}, frames per page {r['frames_per_page']}")
    print(
        f"event delay (controller -> page): p50 {d['p50']} ms, p95 {d['p95']} ms, max {d['max']} "
        f"ms (target p95 < {TARGET_P95_MS:g} ms); missed {r['missed']}"
    )
    print(
        f"server memory: {m['before_pages']} MB before the pages, {m['pages_open']} MB with "
        f"{r['pages']} open (+{m['added_by_pages']} MB), peak {m['peak_playing']} MB while "
        f"playing; {r['threads']} threads"
    )
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
    ok = r["missed"] == 0 and d["p95"] is not None and d["p95"] < TARGET_P95_MS
    print("target met" if ok else "TARGET MISSED")
    return ExitCode.OK if ok else ExitCode.NO


if __name__ == "__main__":
    sys.exit(main())
