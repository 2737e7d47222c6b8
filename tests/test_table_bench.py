"""The whole-table benchmark (``bench/table_bench.py``): it plays real hands on the simulator,
prints its figures, and leaves nothing behind unless asked to keep the table's files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench import table_bench
from controller.exit_codes import ExitCode
from controller.table.events import HandSettled
from controller.table.store import EventLog

LONG_S = 300


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary-files folder of the test's own, for this process and the replay's."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def _ours(folder: Path) -> list[str]:
    # (onnxruntime keeps a small ``.ses`` file among temporary files: not the bench's)
    return [p.name for p in folder.iterdir() if p.name != ".ses"]


@pytest.mark.timeout(LONG_S)
@pytest.mark.long(60)
def test_a_run_prints_its_figures_and_leaves_nothing_behind(
    own_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert table_bench.main(["--hands", "1", "--seed", "3"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "1 hands, seed 3" in out
    assert "hand   1" in out
    assert "settled wrong: 0" in out
    assert "replay identical to the live log: True" in out
    # the table's log, the inputs and the replay's log were all temporary
    assert _ours(own_tmp) == []


@pytest.mark.timeout(LONG_S)
@pytest.mark.long(60)
def test_work_keeps_the_tables_files_and_is_never_reused(
    own_tmp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "kept" / "run"
    assert table_bench.main(["--hands", "1", "--seed", "3", "--work", str(work)]) == ExitCode.OK
    log = EventLog(work / "table.sqlite")
    try:
        assert any(isinstance(e, HandSettled) for _, e in log.events())
    finally:
        log.close()
    assert (work / "inputs.jsonl").read_text(encoding="utf-8").strip()
    assert _ours(own_tmp) == []
    capsys.readouterr()
    # a second run there would resume the first's table and count its hands as its own
    with pytest.raises(SystemExit) as stop:
        table_bench.main(["--hands", "1", "--work", str(work)])
    assert stop.value.code == 2
    assert "already holds a table's log" in capsys.readouterr().err


def test_work_that_cannot_be_made_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        table_bench.main(["--hands", "1", "--work", str(blocker / "run")])
    assert stop.value.code == 2
    assert f"cannot make {blocker / 'run'}" in capsys.readouterr().err
