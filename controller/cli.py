"""The ``mahjong-table`` command.

Each area of the project adds its own subcommands: a module listed in ``COMMAND_MODULES``
exposes ``register(subparsers)``, which adds parsers whose ``func`` default takes the parsed
arguments and returns the exit status. Registration must stay cheap (no heavy imports at module
level) so that ``mahjong-table --help`` is instant.

Exit status (the table in :mod:`controller.exit_codes`): 0 success, 1 a negative answer (an
invalid win, a failed check), 2 bad input or usage (with a message naming what is wrong, never a
traceback), 3 hardware or I/O failure, 130 Ctrl-C, 141 the output's reader went away.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from controller.errors import DeviceError, MahjongTableError, StorageError, VisionError
from controller.exit_codes import ExitCode

COMMAND_MODULES: tuple[str, ...] = (
    "controller.score_cli",
    "controller.table_cli",
    "vision.cli",
    "vision.calibrate_cli",
    "vision.watch_cli",
    "firmware_bridge.device_cli",
    "hardware_sim.mcu_cli",
    "hardware_sim.camera_cli",
    "hardware_sim.table_sim_cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mahjong-table",
        description="A self-scoring Shanghai mahjong table.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # a file name that is not UTF-8 (its odd bytes held as surrogates) is printed escaped,
    # never a UnicodeEncodeError in the middle of a command's output or message
    for stream in (sys.stdout, sys.stderr):
        # a TextIOWrapper as a rule, but a replaced stream may lack reconfigure
        reconfigure = getattr(stream, "reconfigure", None)
        with contextlib.suppress(AttributeError, ValueError, OSError):
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args) or ExitCode.OK)
        sys.stdout.flush()  # inside the try: a closed pipe shows up here, not at exit
        return code
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`mahjong-table detect … | head`): say nothing more, and keep
        # Python from complaining as it flushes stdout on the way out
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.BROKEN_PIPE
    except (DeviceError, VisionError, StorageError) as exc:
        print(f"mahjong-table {args.command}: {exc}", file=sys.stderr)
        return ExitCode.HARDWARE
    except MahjongTableError as exc:
        print(f"mahjong-table {args.command}: {exc}", file=sys.stderr)
        return ExitCode.INPUT


if __name__ == "__main__":
    sys.exit(main())
