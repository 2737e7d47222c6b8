"""The simulated MCU's process side: a pty (and optionally a TCP port) standing in for the
table's serial cable, the event loop that runs :class:`~hardware_sim.mcu.SimulatedMcu`, and the
run-time control commands read from standard input.

The pty's path changes every time it is reopened, as a USB serial device's ``/dev/ttyACM*``
may; ``--link PATH`` keeps a symlink to the current one (like ``/dev/serial/by-id/...``),
removed while "unplugged" and recreated on replug.

Control commands (one per line on standard input, or scheduled with ``--at``)::

    fault jam | fault tiles-short [COUNT] | fault stall      arm a fault for the next operation
    lid open | lid close                                   the lid sensor
    reset                                                  restart the MCU (new boot id)
    unplug [SECONDS] | replug                              close the pty; reopen it later
    corrupt P | drop P | duplicate P | delay P [MS]        line faults, both directions
    garbage N                                              write N random bytes to the line
    stats                                                  counters as JSON
    quit
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import selectors
import shlex
import signal
import socket
import sys
import time
import tty
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from controller.exit_codes import ExitCode
from firmware_bridge.framing import FrameDecoder
from hardware_sim.mcu import SimulatedMcu
from hardware_sim.mcu_line import LineFaults

__all__ = ["ControlError", "McuServer"]

# a partial frame whose bytes stop for this long is given up (see FrameDecoder.flush_stale)
_STALE_PARTIAL = 0.005

HELP = __doc__.split("Control commands", 1)[1].split("\n", 1)[1] if __doc__ else ""


class ControlError(ValueError):
    """A control command that cannot be carried out."""


def _number(cmd: str, args: list[str], i: int, default: float | None = None) -> float:
    """Command ``cmd``'s ``i``-th argument as a finite number (``default`` where it has none,
    if that is not None)."""
    if len(args) <= i:
        if default is None:
            raise ControlError(f"{cmd} needs a number")
        return default
    try:
        value = float(args[i])
    except ValueError:
        raise ControlError(f"{cmd}: {args[i]!r} is not a number") from None
    # inf and nan parse, but int(inf) overflows and nan slips past every range check
    if not math.isfinite(value):
        raise ControlError(f"{cmd}: {args[i]!r} is not a finite number")
    return value


class McuServer:
    """Runs one simulated MCU behind a pty (and a TCP port if asked).

    :param link: keep a symlink to the current pty here
    :param tcp_port: also listen on this TCP port (0 picks a free one) for ``socket://``
    :param schedule: ``(seconds after start, control command)`` pairs
    :param json_mode: every line printed is a JSON object (for scripts and tests)
    """

    def __init__(
        self,
        mcu: SimulatedMcu,
        line: LineFaults,
        *,
        link: str | Path | None = None,
        tcp_port: int | None = None,
        tcp_host: str = "127.0.0.1",
        schedule: list[tuple[float, str]] | None = None,
        json_mode: bool = False,
        out: TextIO | None = None,
        control_in: int | None = None,
        quit_on_eof: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mcu = mcu
        self.line = line
        self.link = Path(link) if link else None
        self.tcp_host = tcp_host
        self.tcp_port = tcp_port
        self.schedule = sorted(schedule or [])
        self.json_mode = json_mode
        self.out = out or sys.stdout
        self.control_in = control_in
        self.quit_on_eof = quit_on_eof
        self.clock = clock
        self.sel = selectors.DefaultSelector()
        self.master: int | None = None
        self.slave: int | None = None
        self.pty_path: str | None = None
        self.listener: socket.socket | None = None
        self.client: socket.socket | None = None
        self.decoders: dict[str, FrameDecoder] = {}
        self.unplugged = False
        self.replug_at: float | None = None
        self.running = True
        self.started = clock()
        self.stats = {"bytes_in": 0, "bytes_out": 0, "tx_dropped": 0, "unplugs": 0}
        self._control_buf = b""
        self._last_byte: dict[str, float] = {}

    # --- output ------------------------------------------------------------------------------

    def say(self, kind: str, text: str, **data: Any) -> None:
        if self.json_mode:
            print(json.dumps({"kind": kind, **data}, ensure_ascii=False), file=self.out)
        elif text:
            print(text, file=self.out)
        self.out.flush()

    # --- transports --------------------------------------------------------------------------

    def open_pty(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        self.master, self.slave = master, slave
        self.pty_path = os.ttyname(slave)
        self.decoders["pty"] = FrameDecoder()
        self.sel.register(master, selectors.EVENT_READ, "pty")
        if self.link is not None:
            tmp = self.link.with_name(self.link.name + ".new")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            os.symlink(self.pty_path, tmp)
            os.replace(tmp, self.link)

    def close_pty(self) -> None:
        if self.master is not None:
            self.sel.unregister(self.master)
            os.close(self.master)
        if self.slave is not None:
            os.close(self.slave)
        self.master = self.slave = None
        if self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link.unlink()

    def open_tcp(self) -> None:
        if self.tcp_port is None:
            return
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((self.tcp_host, self.tcp_port))
        srv.listen(1)
        srv.setblocking(False)
        self.tcp_port = srv.getsockname()[1]
        self.listener = srv
        self.sel.register(srv, selectors.EVENT_READ, "listen")

    def drop_client(self) -> None:
        if self.client is not None:
            self.sel.unregister(self.client)
            self.client.close()
            self.client = None

    @property
    def device(self) -> str:
        """The path a host should open."""
        return str(self.link) if self.link else (self.pty_path or "")

    def ports(self) -> dict[str, Any]:
        return {
            "port": self.device,
            "pty": self.pty_path,
            "link": str(self.link) if self.link else None,
            "tcp": f"socket://{self.tcp_host}:{self.tcp_port}" if self.listener else None,
        }

    def write(self, data: bytes) -> None:
        if not data or self.unplugged:
            return
        if self.master is not None:
            try:
                n = os.write(self.master, data)
            except BlockingIOError:
                n = 0  # nobody is reading the pty: a UART's bytes go nowhere
            self.stats["tx_dropped"] += len(data) - n
            self.stats["bytes_out"] += n
        if self.client is not None:
            try:
                sent = self.client.send(data)
            except BlockingIOError:
                sent = 0  # the client is not reading: drop, as a UART would
            except OSError:
                self.drop_client()
                return
            self.stats["tx_dropped"] += len(data) - sent

    # --- control -----------------------------------------------------------------------------

    def control(self, text: str) -> dict[str, Any]:
        """Carry out one control command; returns what to report."""
        try:
            words = shlex.split(text)
        except ValueError as exc:  # an unclosed quote: a typo, not a reason to stop the table
            raise ControlError(f"cannot read {text!r}: {exc}") from None
        if not words:
            return {}
        cmd, args = words[0].lower(), words[1:]
        now = self.clock()
        mcu = self.mcu
        if cmd == "fault":
            return self._arm_fault(args)
        if cmd == "lid":
            if args not in (["open"], ["close"]):
                raise ControlError("lid open | lid close")
            mcu.set_lid(args[0] == "open", now)
            return {"lid_open": mcu.lid_open}
        if cmd == "reset":
            mcu.boot(now, reason=2)
            return {"boot_id": mcu.boot_id}
        if cmd == "unplug":
            seconds = _number(cmd, args, 0, 0.0)
            self.unplug(now, seconds)
            return {"replug_in": seconds or None}
        if cmd == "replug":
            self.replug()
            return self.ports()
        if cmd in ("corrupt", "drop", "duplicate", "delay"):
            return self._spoil_line(cmd, args)
        if cmd == "garbage":
            return self._write_garbage(args)
        if cmd in ("stats", "status"):
            return self.snapshot()
        if cmd in ("quit", "exit"):
            self.running = False
            return {}
        if cmd == "help":
            return {"help": HELP}
        raise ControlError(f"unknown command {cmd!r}; type 'help'")

    def _arm_fault(self, args: list[str]) -> dict[str, Any]:
        """``fault NAME [N]``: arm one of the MCU's faults."""
        if not args:
            raise ControlError("fault needs a name: jam, tiles-short, stall")
        name = args[0].replace("-", "_")
        try:
            self.mcu.inject(name, int(_number("fault", args, 1)) if len(args) > 1 else None)
        except ValueError as exc:
            raise ControlError(str(exc)) from None
        return {"armed": name}

    def _spoil_line(self, cmd: str, args: list[str]) -> dict[str, Any]:
        """``corrupt|drop|duplicate RATE``, ``delay RATE [MS]``: set how the line spoils
        what it carries."""
        line = self.line
        rate = _number(cmd, args, 0)
        delay_ms = _number(cmd, args, 1) if cmd == "delay" and len(args) > 1 else line.delay_ms
        old, old_ms = getattr(line, cmd), line.delay_ms
        setattr(line, cmd, rate)
        line.delay_ms = delay_ms
        try:
            line.validate()
        except ValueError as exc:  # a refused command changes nothing: restore both
            setattr(line, cmd, old)
            line.delay_ms = old_ms
            raise ControlError(str(exc)) from None
        return {cmd: rate}

    def _write_garbage(self, args: list[str]) -> dict[str, Any]:
        """``garbage N``: write N random bytes to the line."""
        n = _number("garbage", args, 0)
        if n != int(n) or not 0 <= n <= 1 << 20:
            raise ControlError(f"garbage: a whole number of bytes, 0-{1 << 20}, not {args[0]}")
        self.write(os.urandom(int(n)))
        return {"written": int(n)}

    def snapshot(self) -> dict[str, Any]:
        return {
            "mcu": self.mcu.snapshot(),
            "line": vars(self.line.stats),
            "server": {**self.stats, **self.ports(), "unplugged": self.unplugged},
        }

    def _run_control(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        try:
            result = self.control(text)
        except ControlError as exc:
            self.say("error", f"sim-mcu: {exc}", command=text, error=str(exc))
            return
        human = json.dumps(result, ensure_ascii=False) if result else "ok"
        self.say("reply", f"sim-mcu: {text}: {human}", command=text, **{"result": result})

    def unplug(self, now: float, seconds: float) -> None:
        if not self.unplugged:
            self.unplugged = True
            self.stats["unplugs"] += 1
            self.close_pty()
            self.drop_client()
            self.line.forget()
            self.say("notice", "sim-mcu: unplugged", event="unplugged")
        self.replug_at = now + seconds if seconds > 0 else None

    def replug(self) -> None:
        self.replug_at = None
        if not self.unplugged:
            return
        self.unplugged = False
        self.open_pty()
        self.say(
            "notice", f"sim-mcu: replugged at {self.device}", event="replugged", **self.ports()
        )

    # --- the loop ----------------------------------------------------------------------------

    def _read(self, source: str, data: bytes | None, now: float) -> None:
        """Bytes from a transport (``None``: give up on its stalled partial frame)."""
        dec = self.decoders.get(source)
        if dec is None:
            dec = self.decoders[source] = FrameDecoder()
        if data is None:
            frames = dec.flush_stale()
        else:
            self.stats["bytes_in"] += len(data)
            self._last_byte[source] = now
            frames = dec.feed(self.line.corrupt_bytes(data))
        frames = self.line.incoming(frames, now)
        self.mcu.on_frames(frames, dec.take_errors(), now)

    def step(self, max_wait: float = 0.05) -> None:
        now = self.clock()
        until = min(self.mcu.next_deadline(), now + max_wait)
        for dec in self.decoders.values():
            if dec.partial:
                until = min(until, now + _STALE_PARTIAL)
        due = self.line.next_due()
        if due is not None:
            until = min(until, due)
        if self.replug_at is not None:
            until = min(until, self.replug_at)
        if self.schedule:
            until = min(until, self.started + self.schedule[0][0])
        timeout = max(0.0, until - now)
        for key, _ in self.sel.select(timeout):
            tag = key.data
            now = self.clock()
            if tag == "pty" and self.master is not None:
                try:
                    data = os.read(self.master, 65536)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    if exc.errno != errno.EIO:
                        raise
                    continue
                self._read("pty", data, now)
            elif tag == "listen" and self.listener is not None:
                conn, _ = self.listener.accept()
                if self.unplugged or self.client is not None:
                    conn.close()  # one host at a time, and none while unplugged
                    continue
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.client = conn
                self.decoders["tcp"] = FrameDecoder()
                self.sel.register(conn, selectors.EVENT_READ, "tcp")
            elif tag == "tcp" and self.client is not None:
                try:
                    data = self.client.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.drop_client()
                    continue
                self._read("tcp", data, now)
            elif tag == "control":
                self._read_control()
        now = self.clock()
        for source, dec in self.decoders.items():
            if dec.partial and now - self._last_byte.get(source, now) > _STALE_PARTIAL:
                self._read(source, None, now)
        while self.schedule and now >= self.started + self.schedule[0][0]:
            _, text = self.schedule.pop(0)
            self._run_control(text)
        if self.replug_at is not None and now >= self.replug_at:
            self.replug()
        late = self.line.incoming([], now)
        if late:
            self.mcu.on_frames(late, 0, now)
        frames = self.mcu.poll(now)
        self.write(self.line.outgoing(frames, now))

    def _read_control(self) -> None:
        assert self.control_in is not None
        try:
            data = os.read(self.control_in, 4096)
        except BlockingIOError:
            return
        if not data:
            if self.quit_on_eof:  # the process driving us is gone: do not outlive it
                self.running = False
                return
            self.sel.unregister(self.control_in)  # stdin closed: keep running without it
            return
        self._take_control(data)

    def _take_control(self, data: bytes) -> None:
        """Run the whole control lines ``data`` completes (a stop ends the run)."""
        self._control_buf += data
        while b"\n" in self._control_buf and self.running:
            raw, self._control_buf = self._control_buf.split(b"\n", 1)
            self._run_control(raw.decode("utf-8", errors="replace"))

    def start(self) -> None:
        self.open_pty()
        self.open_tcp()
        unwatchable = False
        if self.control_in is not None:
            try:
                self.sel.register(self.control_in, selectors.EVENT_READ, "control")
            except OSError:
                unwatchable = True  # a file or /dev/null: epoll refuses them
            except ValueError:  # not a descriptor: the simulator runs without control input
                self.control_in = None
        ports = self.ports()
        if self.json_mode:
            self.say("ready", "", boot_id=self.mcu.boot_id, pid=os.getpid(), **ports)
        else:
            print(self.device, file=self.out)
            extra = f"; TCP {ports['tcp']}" if ports["tcp"] else ""
            print(
                f"sim-mcu: simulated table MCU on {self.device}{extra}; speed x{self.mcu.speed:g}; "
                "type 'help' for run-time faults, Ctrl-C to stop",
                file=self.out,
            )
            self.out.flush()
        if unwatchable:
            self._read_file_input()

    def _read_file_input(self) -> None:
        """Input that cannot be watched is always readable: run its commands now. Its end is
        an end like any other (with ``quit_on_eof``, the simulator stops)."""
        assert self.control_in is not None
        while self.running and (data := os.read(self.control_in, 4096)):
            self._take_control(data)
        if self.quit_on_eof:
            self.running = False

    def stop(self) -> None:
        self.close_pty()
        self.drop_client()
        if self.listener is not None:
            self.sel.unregister(self.listener)
            self.listener.close()
            self.listener = None

    def run(self) -> int:
        """Serve until ``quit``, SIGINT or SIGTERM."""

        def stop(signum: int, frame: object) -> None:
            self.running = False

        old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.start()
            while self.running:
                self.step()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            self.stop()
            self.say("bye", "sim-mcu: stopped", **self.snapshot())
        return ExitCode.OK
