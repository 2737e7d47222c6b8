"""``mahjong-table run``, ``doctor`` and ``history`` against the simulated hardware: the MCU on
a pty, gpiozero's mock pins, and a folder of the simulated camera's frames."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import cv2
import pytest

from controller.cli import main
from controller.table import events as ev
from controller.table.store import EventLog, EventLogReader
from vision.calibration import calibrate_from_markers

REPO = Path(__file__).resolve().parent.parent


def _write_log(path: Path) -> None:
    log = EventLog(path)
    t = 1_780_000_000.0
    log.append_many(
        [
            ev.SessionStarted(
                time=t,
                session=1,
                profile="shanghai",
                stake=2,
                seats=["Ann", "Bo", "Cy", "Di"],
                dealer=0,
            ),
            ev.HandStarted(time=t + 1, session=1, hand=1, dealer=0, huangfan=0),
            ev.HandSettled(
                time=t + 300,
                session=1,
                hand=1,
                wins=[],
                settlement={"hand": "平胡"},
                payments={"0": 12, "1": -4, "2": -4, "3": -4},
                next_dealer=0,
                huangfan_next=0,
            ),
            ev.HandStarted(time=t + 301, session=1, hand=2, dealer=0, huangfan=0),
            ev.HandDrawn(time=t + 600, session=1, hand=2, next_dealer=0, huangfan_next=1),
        ]
    )
    log.close()


def test_history_prints_hands_totals_and_who_pays_whom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "events.sqlite"
    _write_log(db)
    assert main(["history", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "session 1" in out and "stake 2" in out
    assert "hand   1  dealer Ann  settled  平胡  +12  -4  -4  -4" in out
    assert "hand   2  dealer Ann  drawn" in out
    assert "totals: Ann 12  Bo -4  Cy -4  Di -4" in out
    assert "Bo pays Ann 4" in out


def test_history_as_json_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "events.sqlite"
    _write_log(db)
    assert main(["history", "--db", str(db), "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out)
    assert sessions[0]["totals"] == [12, -4, -4, -4]
    sheet = tmp_path / "night.csv"
    assert main(["history", "--db", str(db), "--session", "1", "--csv", str(sheet)]) == 0
    text = sheet.read_text(encoding="utf-8-sig")
    assert text.splitlines()[0].endswith("Ann,Bo,Cy,Di")
    assert main(["history", "--db", str(db), "--csv", str(sheet)]) == 0  # one session: fine
    assert main(["history", "--db", str(db), "--session", "7"]) == 2


def test_history_refuses_a_foreign_or_missing_log_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--db", str(tmp_path / "none.sqlite")]) == 3
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database at all" * 10)
    assert main(["history", "--db", str(bad)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "not a mahjong-table event log" in err[1]


@pytest.fixture
def real_table(tmp_path: Path, sim_mcu, sim_camera) -> Path:
    """A config for a 'real' table made of simulated parts: the MCU on its pty, mock GPIO
    pins (GPIOZERO_PIN_FACTORY=mock), a folder of camera frames, their calibration."""
    mcu = sim_mcu()
    frames = tmp_path / "frames"
    frames.mkdir()
    first = sim_camera.read().image
    for i in range(3):
        cv2.imwrite(
            str(frames / f"frame-{i:04d}.png"), first if i == 0 else sim_camera.read().image
        )
    data = tmp_path / "data"
    data.mkdir()
    calibrate_from_markers(first).save(data / "calibration.json")
    example = (REPO / "docs" / "table-config.example.toml").read_text(encoding="utf-8")
    panel = example[example.index("[seat_panel]") :]
    panel = panel[: panel.index("[camera]")] if "[camera]" in panel else panel
    config = tmp_path / "table.toml"
    config.write_text(
        f'[table]\ndata_dir = "{data}"\ndealer = 1\n\n'
        f'[serial]\nport = "{mcu.port}"\n\n'
        f'[camera]\nsource = "{frames}"\n\n' + panel,
        encoding="utf-8",
    )
    return config


def test_doctor_passes_a_table_whose_parts_all_answer(
    real_table: Path, mock_pins, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["doctor", "--config", str(real_table)])
    out = capsys.readouterr().out
    assert code == 0, out
    for part in ("disk", "event log", "serial", "gpio", "model", "calibration", "camera"):
        assert f"ok   {part}:" in out
    assert "all well" in out


def test_doctor_says_what_to_fix(
    tmp_path: Path, mock_pins, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "table.toml"
    config.write_text(
        f'[table]\ndata_dir = "{tmp_path}"\n[serial]\nport = "/dev/ttyNOPE9"\n'
        f'[camera]\nsource = "{tmp_path / "no-such-video.mp4"}"\n',
        encoding="utf-8",
    )
    assert main(["doctor", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    assert "FIX  serial: the serial port /dev/ttyNOPE9 does not exist" in out
    assert "FIX  calibration: no calibration at" in out
    assert "FIX  camera:" in out
    assert "3 thing(s) to fix" in out


def test_run_refuses_a_config_it_cannot_run_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--config", str(tmp_path / "missing.toml")]) == 2
    config = tmp_path / "table.toml"
    config.write_text(f'[table]\ndata_dir = "{tmp_path}"\n', encoding="utf-8")
    assert main(["run", "--config", str(config)]) == 2  # the simulator's camera
    config.write_text(
        f'[table]\ndata_dir = "{tmp_path}"\n[serial]\nport = "/dev/ttyNOPE9"\n'
        '[camera]\nsource = "0"\n',
        encoding="utf-8",
    )
    assert main(["run", "--config", str(config)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3
    assert "camera" in err[1] and "/dev/ttyNOPE9 does not exist" in err[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_run_starts_a_session_serves_the_dashboard_and_stops_on_sigterm(
    real_table: Path,
) -> None:
    env = dict(os.environ, GPIOZERO_PIN_FACTORY="mock", PYTHONUNBUFFERED="1")
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "run",
            "--config",
            str(real_table),
            "--port",
            str(port),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    running = threading.Event()

    def follow() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "the table is running" in line:
                running.set()
        running.set()  # it ended: nothing more is coming

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    db = real_table.parent / "data" / "events.sqlite"
    try:
        # said once the session is logged and the dashboard listens: no polling either
        assert running.wait(60) and proc.poll() is None, "".join(lines)
        with EventLogReader(db) as log:
            types = [e.type for _, e in log.events()]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=30) as r:
            state = json.loads(r.read())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(30)
    err = "".join(lines)
    assert state["session"] == 1, err
    assert state["seat_names"] == ["East", "South", "West", "North"]
    assert proc.returncode == 0, err
    assert "session_started" in types, err
    assert "the table is running" in err and "stopping" in err
    with EventLogReader(db) as reader:
        session = next(e for _, e in reader.events() if isinstance(e, ev.SessionStarted))
    assert session.dealer == 1 and session.seats == ["East", "South", "West", "North"]
