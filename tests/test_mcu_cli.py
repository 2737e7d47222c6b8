"""``sim-mcu`` options and faults files."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

import pytest

from controller.cli import build_parser, main
from hardware_sim.mcu_cli import FaultsFileError, build_server, load_faults_file


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["sim-mcu", *argv])


def test_options_reach_the_simulator(tmp_path) -> None:
    args = parse(
        "--speed", "20", "--seed", "4", "--corrupt", "0.01", "--drop", "0.05",
        "--duplicate", "0.02", "--delay", "0.03", "--delay-ms", "60", "--jam",
        "--tiles-short", "140", "--lid-open", "--at", "2:reset", "--at", "3:unplug 1",
        "--link", str(tmp_path / "m"), "--tcp", "0", "--json",
    )  # fmt: skip
    srv = build_server(args)
    assert srv.mcu.speed == 20
    line = srv.line
    assert (line.corrupt, line.drop, line.duplicate, line.delay, line.delay_ms) == (
        0.01, 0.05, 0.02, 0.03, 60
    )  # fmt: skip
    assert srv.mcu.injected == {"jam": 0, "tiles_short": 140}
    assert srv.mcu.lid_open
    assert srv.schedule == [(2.0, "reset"), (3.0, "unplug 1")]
    assert srv.json_mode and srv.tcp_port == 0


def test_faults_file_and_command_line_precedence(tmp_path) -> None:
    f = tmp_path / "faults.toml"
    f.write_text(
        "[line]\ncorrupt = 0.01\ndrop = 0.05\n"
        "[table]\nspeed = 50\nseed = 3\nstall = true\n"
        '[[schedule]]\nat = 1.5\ndo = "lid open"\n'
    )
    spec = load_faults_file(f)
    assert spec["line"] == {"corrupt": 0.01, "drop": 0.05}
    assert spec["schedule"] == [(1.5, "lid open")]
    srv = build_server(parse("--faults", str(f), "--drop", "0.2", "--speed", "5"))
    assert (srv.line.corrupt, srv.line.drop) == (0.01, 0.2)
    assert srv.mcu.speed == 5
    assert "stall" in srv.mcu.injected
    assert srv.schedule == [(1.5, "lid open")]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[lines]\n", "unknown section"),
        ("[line]\ncorupt = 0.1\n", "line.corupt is unknown"),
        ('[line]\ndrop = "a lot"\n', "wrong type"),
        ("[table]\njam = 1\n", "wrong type"),
        ("[[schedule]]\nat = -1\ndo = 'reset'\n", "schedule[0].at"),
        ("[[schedule]]\nat = 1\n", "schedule[0].do"),
        ("[line\n", "not valid TOML"),
    ],
)
def test_bad_faults_files_exit_2(tmp_path, capsys, text: str, words: str) -> None:
    f = tmp_path / "faults.toml"
    f.write_text(text)
    assert main(["sim-mcu", "--faults", str(f)]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[table]\ntiles_short = inf\n", "table.tiles_short must be a finite number"),
        ("[table]\ntiles_short = 140.5\n", "table.tiles_short must be a whole number"),
        ("[table]\nspeed = nan\n", "table.speed must be a finite number"),
        ("[line]\ndelay_ms = inf\n", "line.delay_ms must be a finite number"),
        ("[[schedule]]\nat = nan\ndo = 'reset'\n", "schedule[0].at"),
    ],
)
def test_numbers_a_faults_file_cannot_use(tmp_path, capsys, text: str, words: str) -> None:
    """Refused by the loader (before a simulator runs: nan as the speed would never stop)."""
    f = tmp_path / "faults.toml"
    f.write_text(text)
    with pytest.raises(FaultsFileError, match=re.escape(words)):
        load_faults_file(f)
    assert main(["sim-mcu", "--faults", str(f)]) == 2
    assert words in capsys.readouterr().err


def test_bad_rates_in_a_file_exit_2(tmp_path, capsys) -> None:
    f = tmp_path / "faults.toml"
    f.write_text("[line]\ncorrupt = 3.0\n")
    assert main(["sim-mcu", "--faults", str(f)]) == 2
    assert "probability" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--drop", "2"], "--drop: 2.0 is not a probability between 0 and 1"),
        (["--speed", "0"], "--speed: must be a number above 0"),
        (["--at", "soon:reset"], "--at: 'soon:reset': use SECONDS:COMMAND"),
        (["--at", "5"], "--at: '5': use SECONDS:COMMAND"),
        (["--at", "nan:reset"], "--at: 'nan:reset': use SECONDS:COMMAND"),
        (["--tcp", "99999"], "--tcp: 99999 is not a TCP port"),
        (["--tcp", "-1"], "--tcp: -1 is not a TCP port"),
    ],
)
def test_bad_options_are_usage_errors(argv: list[str], words: str, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        parse(*argv)
    assert e.value.code == 2
    out, err = capsys.readouterr()
    # the usage, then one line naming the option and what is wrong with its value
    assert out == "" and err.startswith("usage: ")
    assert err.splitlines()[-1].startswith(f"mahjong-table sim-mcu: error: argument {words}")


def test_a_tcp_port_out_of_range_exits_2_without_a_traceback(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["sim-mcu", "--tcp", "99999"])
    assert e.value.code == 2
    assert "99999 is not a TCP port" in capsys.readouterr().err


def test_missing_faults_file(tmp_path, capsys) -> None:
    assert main(["sim-mcu", "--faults", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read faults file" in capsys.readouterr().err


def _start_sim(*flags: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "hardware_sim.mcu_cli", "--json", *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["kind"] == "ready"
    return proc


def test_quit_on_eof_stops_with_its_parent() -> None:
    """A simulator driven over stdin stops when its driver goes, instead of lingering."""
    proc = _start_sim("--quit-on-eof")
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0


def test_quit_on_eof_with_input_from_a_file_runs_it_then_stops(tmp_path) -> None:
    # /dev/null and files cannot be watched for input (epoll refuses them)
    commands = tmp_path / "commands.txt"
    commands.write_text("fault jam\n")
    for source in (os.devnull, str(commands)):
        with open(source) as stdin:
            done = subprocess.run(
                [sys.executable, "-m", "hardware_sim.mcu_cli", "--json", "--quit-on-eof"],
                stdin=stdin, capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        kinds = [json.loads(line)["kind"] for line in done.stdout.splitlines()]
        assert kinds[0] == "ready" and kinds[-1] == "bye"
        assert ("reply" in kinds) == (source != os.devnull)


def test_without_quit_on_eof_closed_stdin_keeps_it_running() -> None:
    """Started in the background from a shell (stdin at end), it must keep serving."""
    proc = _start_sim()
    try:
        assert proc.stdin is not None
        proc.stdin.close()
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_speed_that_is_no_speed_is_refused(value: str, capsys) -> None:
    # nan made every duration nan, so an armed jam never fired
    with pytest.raises(SystemExit) as stop:
        parse("--speed", value)
    assert stop.value.code == 2 and "must be a number above 0" in capsys.readouterr().err
