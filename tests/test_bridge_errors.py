"""The bridge's errors sit under the project's area classes and carry what callers need."""

from __future__ import annotations

import pytest

from controller.errors import (
    ConfigError,
    DeviceError,
    LinkError,
    MahjongTableError,
    ProtocolError,
)
from firmware_bridge.errors import (
    BridgeConfigError,
    CommandFailed,
    CommandTimeout,
    FrameError,
    InterlockError,
    LinkDown,
    MessageError,
    PinError,
)


@pytest.mark.parametrize(
    ("cls", "area"),
    [
        (FrameError, ProtocolError),
        (MessageError, ProtocolError),
        (LinkDown, LinkError),
        (CommandTimeout, DeviceError),
        (CommandFailed, DeviceError),
        (InterlockError, CommandFailed),
        (BridgeConfigError, ConfigError),
        (PinError, DeviceError),
    ],
)
def test_hierarchy(cls: type, area: type) -> None:
    assert issubclass(cls, area)
    assert issubclass(cls, MahjongTableError)


def test_fields_and_messages() -> None:
    t = CommandTimeout("dice: no answer", command="dice", maybe_executed=True)
    assert (t.command, t.maybe_executed, str(t)) == ("dice", True, "dice: no answer")
    f = InterlockError("shuffle: lid open", command="shuffle", reason="lid_open", fault="lid_open")
    assert (f.command, f.reason, f.fault) == ("shuffle", "lid_open", "lid_open")
    c = BridgeConfigError("must be a number", field="serial.window")
    assert str(c) == "serial.window: must be a number"


def test_the_bridge_imports_nothing_of_other_areas() -> None:
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "firmware_bridge"
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top not in ("vision", "webui", "hardware_sim"), (path.name, name)
                if top == "controller":
                    # the one exception root, and the one table of exit codes
                    assert name in ("controller.errors", "controller.exit_codes"), (path.name, name)
