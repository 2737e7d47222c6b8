"""The helper that runs the simulator as a process for tests and benchmarks."""

from __future__ import annotations

import os

import pytest

from hardware_sim.mcu_process import SimMcuError, SimMcuProcess


def test_start_control_and_close(tmp_path) -> None:
    sim = SimMcuProcess(speed=10, link=str(tmp_path / "m"), at=["0.1:lid open"])
    try:
        assert sim.port == str(tmp_path / "m")
        assert os.path.realpath(sim.port) == sim.pty
        assert sim.control("fault jam") == {"armed": "jam"}
        with pytest.raises(SimMcuError, match="unknown command"):
            sim.control("dance")
        stats = sim.stats()
        assert stats["mcu"]["injected"] == {"jam": 0}
    finally:
        bye = sim.close()
    assert bye is not None and bye["kind"] == "bye"
    assert sim.proc.returncode == 0
    assert not (tmp_path / "m").exists()


def test_a_simulator_that_cannot_start_says_why(tmp_path) -> None:
    with pytest.raises(SimMcuError, match=r"exited: .*cannot read faults file"):
        SimMcuProcess(faults=str(tmp_path / "missing.toml"))


def test_a_simulator_that_says_much_on_stderr_does_not_block(tmp_path, monkeypatch) -> None:
    # Python's import trace writes far more than a pipe holds before the simulator is ready
    monkeypatch.setenv("PYTHONVERBOSE", "2")
    sim = SimMcuProcess(speed=10, link=str(tmp_path / "m"), start_timeout=60)
    try:
        assert sim.control("fault jam") == {"armed": "jam"}
    finally:
        sim.close()


def test_a_simulator_too_slow_to_start_is_stopped_not_left_running(tmp_path, monkeypatch) -> None:
    import subprocess

    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", popen)
    fds = set(os.listdir("/proc/self/fd"))
    with pytest.raises(SimMcuError, match="did not answer"):
        SimMcuProcess(speed=100, link=str(tmp_path / "m"), start_timeout=0.001)
    (proc,) = started
    assert proc.poll() is not None  # stopped, not left to run on
    assert set(os.listdir("/proc/self/fd")) <= fds  # and its pipes closed
