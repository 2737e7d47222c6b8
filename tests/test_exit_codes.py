"""The one table of exit codes (:mod:`controller.exit_codes`): its codes, and that every command
returns them rather than numbers of its own (read from the source, not by running it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from controller import cli
from controller.exit_codes import ExitCode

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "vision", "firmware_bridge", "webui", "hardware_sim", "bench")

NOT_EXIT_CODES = {("firmware_bridge/device_cli.py", "_mask")}
"""Functions of a command's module that return a number which is not an exit status."""


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def command_modules() -> list[Path]:
    """Every module a command runs from: ``mahjong-table``'s, the ``python -m`` tools'
    (a ``__main__`` block) and the benchmarks."""
    named = {REPO / (m.replace(".", "/") + ".py") for m in cli.COMMAND_MODULES}
    run = {p for p in sources() if '__name__ == "__main__"' in p.read_text(encoding="utf-8")}
    return sorted(named | run | set((REPO / "bench").glob("*.py")))


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_the_codes_are_distinct_and_keep_their_values():
    assert len({int(c) for c in ExitCode}) == len(ExitCode)
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0,
        "NO": 1,
        "INPUT": 2,
        "HARDWARE": 3,
        "INTERRUPTED": 130,
        "BROKEN_PIPE": 141,
    }
    assert all(0 <= c <= 255 for c in ExitCode)  # what a shell can see


def test_the_table_documents_every_code():
    import controller.exit_codes as module

    rows = re.findall(r"^(\d+)\s+``(\w+)``", module.__doc__ or "", flags=re.M)
    assert [(int(v), n) for v, n in rows] == [(int(c), c.name) for c in ExitCode]


def test_the_commands_are_found():
    found = {rel(p) for p in command_modules()}
    assert {"controller/score_cli.py", "firmware_bridge/device_cli.py"} <= found
    assert {
        "hardware_sim/mcu_cli.py",
        "vision/training/table_eval.py",
        "bench/rules_bench.py",
    } <= found


@pytest.mark.parametrize("path", sources(), ids=rel)
def test_no_module_declares_exit_codes_of_its_own(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for t in targets:
            if isinstance(t, ast.Name):
                assert "EXIT" not in t.id.upper(), f"{rel(path)}: {t.id}: use ExitCode"


def _bare_numbers(value: ast.expr | None) -> list[int]:
    """The plain numbers a return or exit gives: ``0``, or ``0 if ok else 1``."""
    if isinstance(value, ast.IfExp):
        return _bare_numbers(value.body) + _bare_numbers(value.orelse)
    if isinstance(value, ast.Constant) and type(value.value) is int:
        return [value.value]
    return []


@pytest.mark.parametrize("path", command_modules(), ids=rel)
def test_commands_return_exit_codes_not_numbers(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or (rel(path), fn.name) in NOT_EXIT_CODES:
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Return):
                assert not _bare_numbers(node.value), (
                    f"{rel(path)}:{node.lineno} {fn.name} returns a number: use ExitCode"
                )
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("exit", "SystemExit"):
                assert not _bare_numbers(node.args[0]), f"{rel(path)}:{node.lineno}: use ExitCode"
