"""Start and steer a simulated MCU in its own process, as tests and benchmarks need it.

:class:`SimMcuProcess` runs ``python -m hardware_sim.mcu_cli --json`` (the code behind
``mahjong-table sim-mcu``), waits for the pty path it prints, and sends run-time control
commands on its standard input, returning each answer::

    with SimMcuProcess(speed=50, link=tmp_path / "mcu") as sim:
        with TableDevice(sim.port) as table:
            sim.control("fault jam")
            ...
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["SimMcuError", "SimMcuProcess"]

_REPO = Path(__file__).resolve().parent.parent


class SimMcuError(RuntimeError):
    """The simulator process failed to start or to answer."""


class SimMcuProcess:
    """A simulated MCU process. Keyword arguments become ``sim-mcu`` options
    (``speed=50`` -> ``--speed 50``, ``jam=True`` -> ``--jam``)."""

    def __init__(self, *, start_timeout: float = 30.0, **options: Any) -> None:
        # --quit-on-eof: the simulator's stdin is our pipe, so it stops when this process dies
        argv = [sys.executable, "-m", "hardware_sim.mcu_cli", "--json", "--quit-on-eof"]
        for key, value in options.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                argv.append(flag)
            elif value is False or value is None:
                continue
            elif isinstance(value, list | tuple):
                for v in value:
                    argv += [flag, str(v)]
            else:
                argv += [flag, str(value)]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_REPO), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=_REPO,
        )
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.notices: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        # stderr is read as it comes: a simulator that says much there would otherwise block on
        # a full pipe; the last of it explains a simulator that exits
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._stderr_pump = threading.Thread(
            target=self._pump_stderr, daemon=True, name="sim-mcu-err"
        )
        self._stderr_pump.start()
        threading.Thread(target=self._pump, daemon=True, name="sim-mcu-out").start()
        try:
            ready = self._next(start_timeout, kinds=("ready",))
        except BaseException:
            # a simulator that never got ready is still a process with three pipes: stop it
            self.proc.kill()
            self.proc.wait()
            self._close_pipes()
            raise
        self.info = ready
        self.port: str = ready["port"]
        self.pty: str = ready["pty"]
        self.tcp: str | None = ready.get("tcp")

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        with contextlib.suppress(ValueError, OSError):  # closed under it by close()
            for line in self.proc.stderr:
                self._stderr.append(line)

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if msg.get("kind") == "notice":
                self.notices.append(msg)
            self._lines.put(msg)
        self._lines.put(None)

    def _next(self, timeout: float, kinds: tuple[str, ...]) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                msg = self._lines.get(timeout=max(0.0, left))
            except queue.Empty:
                raise SimMcuError(f"the simulated MCU did not answer within {timeout} s") from None
            if msg is None:
                self._stderr_pump.join(timeout=5)  # the rest of what it said
                err = "".join(self._stderr)
                raise SimMcuError(f"the simulated MCU exited: {err.strip()[-2000:]}")
            if msg.get("kind") in kinds:
                return msg

    def control(self, command: str, timeout: float = 10.0) -> dict[str, Any]:
        """Send one control command (``"fault jam"``, ``"unplug 1"``, ``"stats"``); returns its
        result, raising :class:`SimMcuError` if the simulator refused it."""
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
            while True:
                msg = self._next(timeout, kinds=("reply", "error"))
                if msg.get("command") != command.strip():
                    continue
                if msg["kind"] == "error":
                    raise SimMcuError(msg["error"])
                return msg.get("result") or {}

    def stats(self) -> dict[str, Any]:
        return self.control("stats")

    def close(self) -> dict[str, Any] | None:
        """Stop the simulator; returns its final counters."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        bye = None
        while True:
            try:
                msg = self._lines.get(timeout=2)
            except queue.Empty:
                break
            if msg is None:
                break
            if msg.get("kind") == "bye":
                bye = msg
        self._close_pipes()
        return bye

    def _close_pipes(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self) -> SimMcuProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
