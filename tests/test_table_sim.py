"""The whole table in the loop: bots play seeded hands through the simulated MCU (a real pty),
the seat panel on mock GPIO pins and the simulated camera read by the real vision pipeline,
and the controller's ledger must equal the bots' truth hand by hand; a controller killed with
SIGKILL at any moment loses nothing settled and resumes where it was."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from controller.table.ledger import build_ledger
from controller.table.state import replay
from controller.table.store import EventLog
from hardware_sim.table_sim import SimError, TableSim

REPO = Path(__file__).resolve().parent.parent
HANDS = 10


def _ledger_totals(path: Path) -> list[Fraction]:
    log = EventLog(path)
    try:
        events = [e for _, e in log.events()]
    finally:
        log.close()
    build_ledger(events).check_zero_sum()
    state = replay(events)
    return [Fraction(t) for t in state.totals]


# whole hands through the rendered camera: a few minutes on 2 idle cores, more on loaded ones
LONG_S = 1200


@pytest.mark.timeout(LONG_S)
@pytest.mark.long(205)
def test_ten_seeded_hands_settle_as_the_bots_truly_played_them(tmp_path: Path) -> None:
    db = tmp_path / "table.sqlite"
    with TableSim(seed=2026, db=db) as sim:
        reports = list(sim.play(HANDS))
    assert len(reports) == HANDS
    wrong = [(r.hand, r.mismatches) for r in reports if r.mismatches]
    assert not wrong, wrong
    truth = [Fraction(0)] * 4
    for r in reports:
        assert r.outcome in ("settled", "drawn")
        assert {k: Fraction(str(v)) for k, v in r.settled.items()} == {
            k: Fraction(str(v)) for k, v in r.truth.items()
        }
        for seat in range(4):
            truth[seat] += Fraction(str(r.truth[str(seat)]))
    assert _ledger_totals(db) == truth
    # a question is the table being careful, not wrong: bench/table_bench.py measures how often
    assert all(r.outcome != "stopped" for r in reports)
    assert any(r.outcome == "settled" for r in reports)


@pytest.mark.timeout(LONG_S)
@pytest.mark.long(75)
def test_a_restarted_table_finishes_the_hand_it_was_playing(tmp_path: Path) -> None:
    db = tmp_path / "table.sqlite"
    with TableSim(seed=5, db=db) as sim:
        first = next(sim.play(1))
        # the dealer starts the next hand; the power goes while the walls come up
        sim._press(sim.dealer, "confirm")
        sim._wait_after(0, lambda e: e.type == "hand_started", "start", timeout=10.0)
    with TableSim(seed=5, db=db) as sim:
        assert sim.snapshot()["phase"] in ("shuffling", "dice", "playing")
        again = next(sim.play(1))
        assert again.resumed and again.hand == first.hand + 1
        assert not again.mismatches, again.mismatches
        after = next(sim.play(1))
        assert not after.resumed and not after.mismatches
    assert _ledger_totals(db) == [
        sum(Fraction(str(r.truth[str(s)])) for r in (first, again, after)) for s in range(4)
    ]


@pytest.mark.long(27)
def test_sim_command_prints_each_settlement_with_its_working(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "sim",
            "--hands",
            "1",
            "--speed",
            "0",
            "--headless",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "hand 1: dealer seat 0" in out.stdout
    assert "matches the bots' true outcome" in out.stdout
    assert "1 hand(s), 0 settled wrong" in out.stdout
    assert "the table is running on the simulator (seed 0, flat out); Ctrl-C ends it" in out.stdout


def test_sim_command_refuses_bad_arguments() -> None:
    from controller.cli import main

    assert main(["sim", "--hands", "-1"]) == 2
    assert main(["sim", "--speed", "-3"]) == 2
    assert main(["sim", "--confirm", "bots"]) == 2


def test_sim_command_refuses_dashboard_confirmation_without_a_dashboard(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from controller.cli import main

    assert main(["sim", "--confirm", "dashboard", "--headless", "--hands", "1"]) == 2
    err = capsys.readouterr().err
    assert "need the dashboard: drop --headless" in err and len(err.splitlines()) == 1


def test_sim_command_says_when_the_dashboard_cannot_listen(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket
    import tempfile

    # the dashboard's data lives as long as the run: none is left behind, even by a failure
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    from controller.cli import main
    from controller.exit_codes import ExitCode

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["sim", "--hands", "1", "--speed", "0", "--host", "127.0.0.1", "--port", str(port)]
        assert main(argv) == ExitCode.HARDWARE
    err = capsys.readouterr().err
    assert f"the dashboard cannot listen on 127.0.0.1:{port}" in err and "--headless" in err
    assert not list(tmp_path.glob("mahjong-sim-dashboard-*"))


def test_a_headless_sim_makes_no_dashboard_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from controller.cli import main
    from controller.exit_codes import ExitCode

    # (the kill -9 test's headless runs each left one behind: nothing could remove it)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made: list[str] = []
    real = tempfile.TemporaryDirectory

    def watched(*args, **kwargs):
        made.append(kwargs.get("prefix", ""))
        return real(*args, **kwargs)

    def no_table(self: TableSim) -> None:
        assert not made  # the moment a dashboard would have wanted its folder
        raise SimError("the table stopped at once (this test's)")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", watched)
    monkeypatch.setattr(TableSim, "start", no_table)
    assert main(["sim", "--headless", "--hands", "1", "--speed", "0"]) == ExitCode.HARDWARE
    assert "the table stopped at once" in capsys.readouterr().err
    assert not [m for m in made if m.startswith("mahjong-sim-dashboard")]
    assert not list(tmp_path.iterdir())


def test_the_simulator_refuses_an_unknown_confirmer() -> None:
    with pytest.raises(SimError, match='"players" or "dashboard", not \'bots\''):
        TableSim(confirm="bots")


def _truth_from_log(path: Path, seed: int) -> list[tuple[int, dict[str, Fraction]]]:
    """Each closed hand in the log beside what the bots truly played in it: the game follows
    from the seed, the hand's number, its dealer, 荒番 and the dice the MCU rolled."""
    from controller.profiles import load_profile
    from controller.table import events as ev
    from hardware_sim.game import play_hand

    log = EventLog(path)
    try:
        events = [e for _, e in log.events()]
    finally:
        log.close()
    profile = load_profile("shanghai")
    out = []
    started: ev.HandStarted | None = None
    dice = None
    session = 0
    for e in events:
        if isinstance(e, ev.SessionStarted):
            session = e.session
        elif isinstance(e, ev.HandStarted):
            started = e
        elif isinstance(e, ev.Learnt) and e.fact == "dice":
            dice = (e.value["dice"][0], e.value["dice"][1])
        elif isinstance(e, ev.HandSettled | ev.HandDrawn):
            assert started is not None and dice is not None
            played = play_hand(
                random.Random(f"{seed}/{session}/{started.hand}"),
                profile=profile,
                dealer=started.dealer,
                dice=dice,
                huangfan=started.huangfan,
            )
            truth = {str(k): Fraction(0) for k in range(4)}
            if played.settlement is not None:
                truth = {str(k): Fraction(v) for k, v in enumerate(played.settlement.totals)}
            got = {str(k): Fraction(0) for k in range(4)}
            if isinstance(e, ev.HandSettled):
                got = {k: Fraction(str(v)) for k, v in e.payments.items()}
            assert got == truth, (started.hand, got, truth)
            out.append((started.hand, got))
    return out


def _run_sim(db: Path, hands: int, tmp: Path) -> subprocess.Popen[str]:
    # its temporary folders in ``tmp``: a run killed by -9 cannot remove its own
    env = dict(os.environ, PYTHONUNBUFFERED="1", TMPDIR=str(tmp))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "sim",
            "--db",
            str(db),
            "--hands",
            str(hands),
            "--speed",
            "0",
            "--seed",
            "9",
            "--json",
            "--headless",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.timeout(LONG_S)
@pytest.mark.long(115)
def test_kill_9_at_random_moments_loses_nothing_settled(tmp_path: Path) -> None:
    db = tmp_path / "table.sqlite"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    rng = random.Random(4)
    target, kills, runs = 4, 0, 0
    while runs < 10:
        closed = len(_truth_from_log(db, 9)) if db.exists() else 0
        if closed >= target:
            break
        phase_before = _phase(db)
        proc = _run_sim(db, target - closed, tmp)
        runs += 1
        # the first three runs are killed at a random moment; the last plays to the end
        try:
            proc.wait(rng.uniform(4.0, 25.0) if kills < 3 else None)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        stdout, stderr = proc.communicate(timeout=60)
        if proc.returncode != -signal.SIGKILL:
            assert proc.returncode == 0, stderr
        lines = [json.loads(line)["report"] for line in stdout.splitlines()]
        if lines:
            # a hand the last run left under way is finished by this one, not begun again
            assert lines[0]["resumed"] == (phase_before not in (None, "idle"))
        assert all(not r["mismatches"] for r in lines), [r["mismatches"] for r in lines]
        # whatever the moment, the log reads, adds up to zero, and holds every hand printed
        hands = dict(_truth_from_log(db, 9)) if db.exists() else {}
        assert {r["hand"] for r in lines} <= set(hands)
        if db.exists():
            _ledger_totals(db)
    assert kills == 3
    # each killed run may leave its link's folder; the run that played to the end removed its
    # (onnxruntime keeps a small ``.ses`` file there too: not the table's)
    left = [p.name for p in tmp.iterdir() if p.name.startswith("table-sim-")]
    assert len(left) <= kills, left
    closed = _truth_from_log(db, 9)
    assert [hand for hand, _ in closed] == list(range(1, target + 1))
    totals = [sum(paid[str(s)] for _, paid in closed) for s in range(4)]
    assert _ledger_totals(db) == totals


def _phase(db: Path) -> str | None:
    if not db.exists():
        return None
    log = EventLog(db)
    try:
        return replay(e for _, e in log.events()).phase
    finally:
        log.close()
