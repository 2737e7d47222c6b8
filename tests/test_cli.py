"""The ``mahjong-table`` command: its parser, its exit statuses, and random arguments to every
quick command ending in an exit status, never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller import cli
from controller.exit_codes import ExitCode


def test_every_command_module_registers():
    # each module adds commands of its own, each runs a function, and together they are
    # every command the entry point has: none lost, none taken over by another module
    registered: dict[str, str] = {}
    for module in cli.COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(sub)
        assert sub.choices, f"{module} registers no command"
        for name, parser in sub.choices.items():
            assert name not in registered, f"{module} and {registered[name]} both add {name}"
            assert callable(parser.get_default("func")), f"{name} runs nothing"
            registered[name] = module
    assert registered.keys() == _commands().keys()


def _summaries() -> dict[str, str]:
    """Each command's one-line summary, as the top-level help lists it."""
    parser = cli.build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a.help or "" for a in sub._choices_actions}


def test_help_and_unknown_command(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("usage: mahjong-table ")
    shown = " ".join(out.split())  # the summaries are wrapped
    for name, summary in _summaries().items():
        assert f" {name} {summary} " in shown, name
    with pytest.raises(SystemExit) as e:
        cli.main(["no-such-command"])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    # nothing on stdout; on stderr the usage and one line naming what was typed
    assert out == "" and err.startswith("usage: mahjong-table ")
    assert err.splitlines()[-1].startswith(
        "mahjong-table: error: argument COMMAND: invalid choice: 'no-such-command'"
    )


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
    assert cli.main(["rules"]) == ExitCode.BROKEN_PIPE == 141
    assert moved == [1]  # stdout pointed at /dev/null: nothing left for Python to complain of
    assert capsys.readouterr().err == ""


# -- fuzz: random argument lists for each command's parser -------------------------------------

REPO = Path(__file__).resolve().parent.parent
WIN_TEXT = (REPO / "examples" / "win.json").read_text(encoding="utf-8")

# commands that start hardware, a simulator or long work are not fuzzed
NOT_FUZZED = frozenset({"sim", "run", "sim-mcu", "sim-camera", "watch", "train", "enrol"})

# values an argument may take: files that exist in the fuzz's folder, paths that do not and
# cannot be made, by root either (under a file: a command that makes its output folder, as
# detect --annotate does, made /nonexistent/x when CI ran as root, and a later test found
# /nonexistent a folder), numbers argparse takes but no command can use, text that would
# break a message
VALUES = [
    "", "-", "--", "0", "1", "-1", "0.5", "1e309", "nan", "inf", "99999999999999999999",
    "x", "é", "五饼", "a\nb", "\x1b[31mred", "x" * 300, ".", "..", "/", "/dev/null/x", "win.json/x",
    "win.json", "bad.json", "big.json", "slow.json", "pic.png", "cut.png", "folder", "shanghai",
    "house", "on", "off", "0x1f", "7f", "new.toml", "out.csv",
]  # fmt: skip


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


# the values most likely to break something, drawn more often
HOSTILE = [
    "x" * 300, "/dev/null/x", "win.json/x", "a\nb", "\x1b[31mred", "1e309", "nan", "-1",
    "slow.json", "big.json", "bad.json", "cut.png", "folder", ".",
]  # fmt: skip
# never a URL (device would try to reach it), never a NUL (no shell can pass one)
NOISE = st.text(max_size=8).filter(lambda t: "://" not in t and "\x00" not in t)
VALUE = st.one_of(st.sampled_from(HOSTILE), st.sampled_from(VALUES), NOISE)


def _argvs(parser: argparse.ArgumentParser) -> st.SearchStrategy[list[str]]:
    """Command lines for ``parser``: a few of its options (each with one of its choices or a
    value from VALUES), flags and positional values, in any order, and then, where it has
    subcommands, one of them with its own."""
    units: list[st.SearchStrategy[list[str]]] = [NOISE.map(lambda v: [v])]
    commands: list[st.SearchStrategy[list[str]]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                commands.append(_argvs(child).map(lambda rest, name=name: [name, *rest]))
            continue
        value = VALUE
        if action.choices:
            value = st.one_of(st.sampled_from([str(c) for c in action.choices]), VALUE)
        if not action.option_strings:
            units.append(value.map(lambda v: [v]))
        elif action.nargs == 0:
            if "-h" not in action.option_strings:
                units.append(st.just(action.option_strings[-1:]))
        else:
            units.append(st.tuples(st.sampled_from(action.option_strings), value).map(list))
    own = st.lists(st.one_of(*units), max_size=4).map(lambda us: [w for u in us for w in u])
    if not commands:
        return own
    return st.tuples(own, st.one_of(*commands)).map(lambda t: [*t[0], *t[1]])


@pytest.fixture(scope="module")
def fuzz_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder to run in, holding the files VALUES name; the commands' own files land here."""
    import cv2
    import numpy as np

    here = tmp_path_factory.mktemp("fuzz")
    (here / "win.json").write_text(WIN_TEXT, encoding="utf-8")
    (here / "bad.json").write_text('{"stake": ', encoding="utf-8")
    (here / "slow.json").write_text(WIN_TEXT.replace('"stake": 1', '"stake": "1e100000000"'))
    (here / "big.json").write_text(WIN_TEXT.replace('"stake": 1', '"stake": "1e4400"'))
    picture = cv2.imencode(".png", np.full((40, 60, 3), 90, np.uint8))[1].tobytes()
    (here / "pic.png").write_bytes(picture)
    (here / "cut.png").write_bytes(picture[: len(picture) // 2])
    (here / "folder").mkdir()
    old = Path.cwd()
    os.chdir(here)
    try:
        yield here
    finally:
        os.chdir(old)
        shutil.rmtree(here, ignore_errors=True)


def call(argv: list[str]) -> tuple[int, str, str]:
    """``mahjong-table ARGV`` in this process: its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        mock.patch.object(sys, "stdin", io.StringIO(WIN_TEXT)),
        mock.patch.dict(os.environ, {"MAHJONG_TABLE_PORT": ""}),
    ):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: usage errors (2), --help (0)
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


COMMANDS = _commands()
FUZZED = sorted(set(COMMANDS) - NOT_FUZZED)
EXAMPLES = {"detect": 15, "calibrate": 60}  # these load a model or look for markers


def test_the_fuzz_covers_every_quick_command():
    assert {"score", "rules", "detect", "device", "doctor", "history", "calibrate"} <= set(FUZZED)


@pytest.mark.parametrize("command", FUZZED)
def test_random_arguments_end_in_an_exit_status_never_a_traceback(command, fuzz_folder):
    argvs = _argvs(COMMANDS[command])

    @settings(
        max_examples=EXAMPLES.get(command, 200),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(argvs)
    def check(argv: list[str]) -> None:
        start = time.monotonic()
        code, out, err = call([command, *argv])
        assert code in (0, 1, 2, 3), (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        if code in (2, 3):
            assert (err + out).strip(), argv  # a message says what is wrong
        assert time.monotonic() - start < 5, argv

    check()


def test_a_file_name_holding_a_nul_is_bad_input(fuzz_folder):
    code, _, err = call(["score", "a\x00b.json"])
    assert code == 2 and err == "mahjong-table score: file: no file is named 'a\\x00b.json'\n"
