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
