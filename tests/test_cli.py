from __future__ import annotations

import pytest

from controller import cli


def test_every_command_module_registers():
    parser = cli.build_parser()
    assert parser.prog == "mahjong-table"


def test_help_and_unknown_command(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    assert "score" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["no-such-command"])
    assert e.value.code == 2


def test_a_reader_that_goes_away_ends_the_command_quietly(monkeypatch, capsys):
    # `mahjong-table detect … | head`: the pipe closes while the output is still flushing
    class ClosedPipe:
        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self) -> int:
            return 1

    moved: list[int] = []
    monkeypatch.setattr(cli.sys, "stdout", ClosedPipe())
    monkeypatch.setattr(cli.os, "dup2", lambda fd, to: moved.append(to))
    assert cli.main(["rules"]) == cli.EXIT_BROKEN_PIPE == 141
    assert moved == [1]  # stdout pointed at /dev/null: nothing left for Python to complain of
    assert capsys.readouterr().err == ""
