"""``mahjong-table device`` against the simulated MCU, through the project's CLI entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from controller.cli import main
from firmware_bridge import device_cli


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["device", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_identify_and_status(sim_mcu, capsys) -> None:
    sim = sim_mcu()
    code, out, _ = run(capsys, "--port", sim.port, "identify")
    assert code == 0
    assert "protocol 1" in out and "2 x 144 tiles" in out
    code, out, _ = run(capsys, "--port", sim.port, "--json", "status")
    assert code == 0
    data = json.loads(out)
    assert data["command"] == "status" and data["ok"] is True
    assert data["state"] == "idle" and data["faults"] == []


def test_a_hand_cycle_from_the_shell(sim_mcu, capsys) -> None:
    port = sim_mcu().port
    assert run(capsys, "--port", port, "shuffle")[1] == "shuffled tile set 0 (144 tiles)\n"
    assert run(capsys, "--port", port, "lift")[1] == "walls up: tile set 0\n"
    code, out, _ = run(capsys, "--port", port, "--json", "dice")
    d = json.loads(out)
    assert code == 0 and len(d["dice"]) == 2 and d["total"] == sum(d["dice"])
    assert run(capsys, "--port", port, "lights", "0x15", "90")[1] == "lights: mask 0x15, level 90\n"
    assert run(capsys, "--port", port, "lights", "off")[0] == 0
    assert run(capsys, "--port", port, "lower")[1] == "walls down: tile set 0\n"


def test_stop_makes_status_fail_until_clear(sim_mcu, capsys) -> None:
    port = sim_mcu().port
    assert run(capsys, "--port", port, "stop")[0] == 0
    code, out, _ = run(capsys, "--port", port, "status")
    assert code == 1
    assert "emergency stop" in out
    code, _, err = run(capsys, "--port", port, "shuffle")
    assert code == 3
    assert "mahjong-table device: shuffle:" in err and "clear" in err
    code, out, _ = run(capsys, "--port", port, "--json", "shuffle")
    assert code == 3
    assert json.loads(out)["reason"] == "fault"
    assert run(capsys, "--port", port, "clear")[1] == "faults cleared\n"
    assert run(capsys, "--port", port, "status")[0] == 0


def test_port_from_config_file_and_environment(sim_mcu, capsys, tmp_path, monkeypatch) -> None:
    port = sim_mcu().port
    cfg = tmp_path / "table.toml"
    cfg.write_text(f'[serial]\nport = "{port}"\ncommand_timeout = 5.0\n')
    assert run(capsys, "--config", str(cfg), "identify")[0] == 0
    monkeypatch.setenv("MAHJONG_TABLE_PORT", port)
    assert run(capsys, "identify")[0] == 0
    # a wiring mistake in [seat_panel] does not stop the device command talking to the MCU
    cfg.write_text(f'[serial]\nport = "{port}"\n[seat_panel]\nnot_a_key = 1\n', encoding="utf-8")
    assert run(capsys, "--config", str(cfg), "identify")[0] == 0


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["status"], "no serial port"),
        (["--port", "x", "lights", "300"], "mask '300'"),
        (["--port", "x", "lights", "on", "999"], "level must be 0-255"),
        (["--port", "x", "--timeout", "0", "status"], "--timeout"),
        (["--port", "x", "--timeout", "inf", "status"], "--timeout must be a number"),
        (["--port", "x", "--timeout", "1e300", "status"], "at most 3600"),
        (["--port", "x", "--timeout", "nan", "status"], "--timeout must be a number"),
        (["--port", "x", "watch", "--seconds", "nan"], "--seconds must be a number"),
        (["--port", "x", "watch", "--seconds", "-1"], "--seconds must be a number"),
        (["--port", "x", "watch", "--count", "0"], "--count must be 1 or more"),
        (["--port", "x", "watch", "--count", "-3"], "--count must be 1 or more"),
    ],
)
def test_bad_usage_exits_2(argv, words, capsys, monkeypatch) -> None:
    monkeypatch.delenv("MAHJONG_TABLE_PORT", raising=False)
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert words in err


def test_unreachable_port_exits_3(tmp_path, capsys) -> None:
    code, _, err = run(capsys, "--port", str(tmp_path / "gone"), "--timeout", "0.5", "status")
    assert code == 3
    assert "does not exist" in err


@pytest.mark.parametrize(
    ("port", "words"),
    [
        ("/nonexistent", "serial port /nonexistent does not exist"),
        ("x" * 300, "does not exist"),  # a name too long for a file
        ("/x\x1b[31m", "serial port /x\\x1b[31m does not exist"),
        (".", ". is a folder, not a serial port"),
        (__file__, "is a file, not a serial port"),
        ("nosuch://host:1", "nosuch://host:1 is not a serial port URL"),
    ],
)
def test_a_port_that_cannot_be_one_fails_at_once(port, words, capsys) -> None:
    """Without --timeout the table is waited for 10 s; no wait makes a missing port appear."""
    start = time.monotonic()
    code, out, err = run(capsys, "--port", port, "status")
    assert time.monotonic() - start < 2
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and words in err, err
    code, out, err = run(capsys, "--port", port, "--json", "identify")
    assert code == 3 and err == ""
    data = json.loads(out)
    assert data["ok"] is False and data["type"] == "LinkDown" and words in data["error"]


def test_a_port_where_nothing_answers_says_so(capsys) -> None:
    leader, follower = os.openpty()
    try:
        name = os.ttyname(follower)
        code, _, err = run(capsys, "--port", name, "--timeout", "0.5", "status")
    finally:
        os.close(leader)
        os.close(follower)
    assert code == 3
    assert f"the MCU did not answer on {name} within 0.5 s" in err
    assert "not connected yet" not in err


def test_watch_prints_events_as_they_come(sim_mcu, capsys, monkeypatch) -> None:
    sim = sim_mcu()
    listening = threading.Event()
    monkeypatch.setattr(device_cli, "on_watching", lambda dev: listening.set())

    def poke() -> None:
        # the lid moves only once the watch listens: what it prints came while it watched
        if listening.wait(30):
            sim.control("lid open")
            sim.control("lid close")

    t = threading.Thread(target=poke)
    t.start()
    code, out, _ = run(
        capsys, "--port", sim.port, "--json", "watch", "--count", "2", "--seconds", "30"
    )
    t.join()
    assert listening.is_set()
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["event"], e["open"]) for e in events] == [("lid", True), ("lid", False)]
    assert events[0]["number"] < events[1]["number"]


def test_watch_human_output(sim_mcu, capsys, monkeypatch) -> None:
    sim = sim_mcu()
    # opened once the watch listens (a lid opened at a set time could beat a slow connection)
    monkeypatch.setattr(device_cli, "on_watching", lambda dev: sim.control("lid open"))
    code, out, _ = run(capsys, "--port", sim.port, "watch", "--count", "1", "--seconds", "30")
    assert code == 0
    assert out.splitlines()[0].startswith("watching ")
    assert " lid open=True (#" in out


def test_real_processes_end_to_end(tmp_path) -> None:
    """`mahjong-table sim-mcu` and `mahjong-table device` as an integrator would run them."""
    # the same main() as the console script, without depending on where pip put it
    exe = [sys.executable, "-m", "controller.cli"]
    link = tmp_path / "mcu"
    sim = subprocess.Popen(
        [*exe, "sim-mcu", "--link", str(link), "--speed", "100"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sim.stdout is not None
        assert sim.stdout.readline().strip() == str(link)
        done = subprocess.run(
            [*exe, "device", "--port", str(link), "--json", "dice"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["ok"] is True
    finally:
        assert sim.stdin is not None
        sim.stdin.write("quit\n")
        sim.stdin.close()
        sim.wait(timeout=20)
    assert not link.exists()  # the link goes when the simulator stops
