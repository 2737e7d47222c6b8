"""The simulator's process side, run in this process: the pty, its stable link, unplug and
replug, the TCP port and the control commands."""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import time

import pytest
import serial

from firmware_bridge import protocol as p
from firmware_bridge.framing import FrameDecoder, FrameKind
from hardware_sim.mcu import SimulatedMcu
from hardware_sim.mcu_line import LineFaults
from hardware_sim.mcu_server import ControlError, McuServer


@pytest.fixture
def server(tmp_path):
    out = io.StringIO()
    srv = McuServer(
        SimulatedMcu(speed=100, seed=1, now=time.monotonic()),
        LineFaults(seed=1),
        link=tmp_path / "mcu",
        tcp_port=0,
        json_mode=True,
        out=out,
    )
    srv.start()
    yield srv, out
    srv.stop()


def statuses(raw: bytes) -> list[p.StatusReport]:
    frames = FrameDecoder().feed(raw)
    return [
        m
        for f in frames
        if f.kind == FrameKind.DATAGRAM
        for m in [p.decode_message(f.payload)]
        if isinstance(m, p.StatusReport)
    ]


def test_ready_line_and_link(server, tmp_path) -> None:
    _srv, out = server
    ready = json.loads(out.getvalue().splitlines()[0])
    assert ready["kind"] == "ready"
    assert ready["port"] == str(tmp_path / "mcu")
    assert os.path.realpath(tmp_path / "mcu") == ready["pty"]
    assert ready["tcp"].startswith("socket://127.0.0.1:")


def test_statuses_reach_a_reader_of_the_pty(server) -> None:
    srv, _ = server
    port = serial.serial_for_url(srv.device, timeout=0.05)
    try:
        got = b""
        deadline = time.monotonic() + 10
        while len(statuses(got)) < 2 and time.monotonic() < deadline:
            srv.step(0.01)
            got += port.read(4096)
        reports = statuses(got)
        assert len(reports) >= 2
        assert reports[0].boot_id == srv.mcu.boot_id
    finally:
        port.close()


def test_unplug_removes_the_link_and_replug_makes_a_new_pty(server, tmp_path) -> None:
    srv, out = server
    link = tmp_path / "mcu"
    first = srv.pty_path
    srv.control("unplug 0.05")
    assert not link.exists()
    assert srv.unplugged
    deadline = time.monotonic() + 10
    while srv.unplugged and time.monotonic() < deadline:
        srv.step(0.01)
    assert link.exists()
    assert srv.pty_path != first or os.path.realpath(link) == srv.pty_path
    notices = [json.loads(x) for x in out.getvalue().splitlines() if '"notice"' in x]
    assert [n["event"] for n in notices] == ["unplugged", "replugged"]
    srv.control("unplug")  # no time: stays unplugged until told
    for _ in range(5):
        srv.step(0.01)
    assert srv.unplugged
    srv.control("replug")
    assert not srv.unplugged and link.exists()


def test_tcp_client_gets_the_line(server) -> None:
    srv, _ = server
    host, port = srv.tcp_host, srv.tcp_port
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.settimeout(0.05)
        got = b""
        deadline = time.monotonic() + 10
        while len(statuses(got)) < 1 and time.monotonic() < deadline:
            srv.step(0.01)
            with contextlib.suppress(TimeoutError):
                got += sock.recv(4096)
        assert statuses(got)


def test_control_commands(server) -> None:
    srv, _ = server
    assert srv.control("fault jam") == {"armed": "jam"}
    assert srv.control("fault tiles-short 140") == {"armed": "tiles_short"}
    assert srv.mcu.injected == {"jam": 0, "tiles_short": 140}
    assert srv.control("lid open") == {"lid_open": True}
    old = srv.mcu.boot_id
    assert srv.control("reset")["boot_id"] != old
    assert srv.control("corrupt 0.01") == {"corrupt": 0.01}
    srv.control("delay 0.1 80")
    assert (srv.line.delay, srv.line.delay_ms) == (0.1, 80)
    assert srv.control("garbage 100") == {"written": 100}
    stats = srv.control("stats")
    assert set(stats) == {"mcu", "line", "server"}
    assert "fault jam" in srv.control("help")["help"]
    srv.control("quit")
    assert not srv.running


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("fault", "needs a name"),
        ("fault gremlins", "unknown fault"),
        ("lid ajar", "lid open"),
        ("drop lots", "not a number"),
        ("corrupt 2", "probability"),
        ("dance", "unknown command"),
        ('fault "jam', "No closing quotation"),
        ("garbage inf", "not a finite number"),
        ("garbage nan", "not a finite number"),
        ("garbage -5", "whole number of bytes"),
        ("garbage 2.5", "whole number of bytes"),
        ("garbage 9999999", "whole number of bytes"),
        ("fault tiles-short inf", "not a finite number"),
        ("unplug nan", "not a finite number"),
        ("corrupt nan", "not a finite number"),
        ("delay 0.1 99999", "delay_ms"),
    ],
)
def test_bad_control_commands(server, text: str, words: str) -> None:
    srv, _ = server
    with pytest.raises(ControlError, match=words):
        srv.control(text)
    assert srv.line.corrupt == 0.0  # a refused rate leaves the old one
    # ... and a refused delay both its rate and its length
    assert (srv.line.delay, srv.line.delay_ms) == (0.0, 30.0)
    assert not srv.unplugged and srv.running


def _server_fed_by_a_pipe(
    schedule: list[tuple[float, str]],
) -> tuple[McuServer, io.StringIO, int, int]:
    """A started JSON-mode server reading control lines from a pipe: (server, its output,
    the pipe's read and write ends). The caller stops the server and closes the ends."""
    r, w = os.pipe()
    out = io.StringIO()
    srv = McuServer(
        SimulatedMcu(speed=100, seed=1, now=time.monotonic()),
        LineFaults(),
        schedule=schedule,
        json_mode=True,
        out=out,
        control_in=r,
    )
    srv.start()
    return srv, out, r, w


def _run_until(srv: McuServer, out: io.StringIO, text: str) -> list[dict]:
    deadline = time.monotonic() + 10
    while text not in out.getvalue() and time.monotonic() < deadline:
        srv.step(0.01)
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_bad_control_lines_and_schedule_entries_do_not_stop_the_simulator() -> None:
    srv, out, r, w = _server_fed_by_a_pipe([(0.0, "garbage nan"), (0.0, "fault tiles-short inf")])
    try:
        os.write(w, b'fault "jam\ngarbage inf\nlid open\n')
        lines = _run_until(srv, out, "lid open")
        errors = {x["command"] for x in lines if x["kind"] == "error"}
        assert errors == {"garbage nan", "fault tiles-short inf", 'fault "jam', "garbage inf"}
        assert srv.running and srv.mcu.lid_open
    finally:
        srv.stop()
        os.close(r)
        os.close(w)


def test_control_input_and_schedule(tmp_path) -> None:
    srv, out, r, w = _server_fed_by_a_pipe([(0.0, "lid open")])
    try:
        os.write(w, b"fault stall\nbogus\n")
        lines = _run_until(srv, out, "bogus")
        kinds = [(x["kind"], x.get("command")) for x in lines]
        assert ("reply", "lid open") in kinds
        assert ("reply", "fault stall") in kinds
        assert ("error", "bogus") in kinds
        assert srv.mcu.lid_open and "stall" in srv.mcu.injected
        os.close(w)
        for _ in range(3):
            srv.step(0.01)  # end of input: keeps running without it
        assert srv.running
    finally:
        srv.stop()
        os.close(r)


def test_human_output_starts_with_the_path(tmp_path) -> None:
    out = io.StringIO()
    srv = McuServer(SimulatedMcu(), LineFaults(), link=tmp_path / "m", out=out)
    srv.start()
    try:
        first, second = out.getvalue().splitlines()[:2]
        assert first == str(tmp_path / "m")
        assert "help" in second
    finally:
        srv.stop()
    assert not (tmp_path / "m").exists()
