"""The ``mahjong-table`` command.

Each area of the project adds its own subcommands: a module listed in ``COMMAND_MODULES``
exposes ``register(subparsers)``, which adds parsers whose ``func`` default takes the parsed
arguments and returns the exit status. Registration must stay cheap (no heavy imports at module
level) so that ``mahjong-table --help`` is instant.

Exit status: 0 success, 1 a negative answer (an invalid win, a failed check), 2 bad input or
usage (with a message naming what is wrong, never a traceback), 3 hardware or I/O failure, 141
the output's reader went away (a closed pipe).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from controller.errors import DeviceError, MahjongTableError, StorageError, VisionError

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

EXIT_OK = 0
EXIT_NO = 1
EXIT_INPUT = 2
EXIT_HARDWARE = 3
EXIT_BROKEN_PIPE = 141
"""What a shell reports for a program ended by SIGPIPE (128 + 13)."""


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
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a closed pipe shows up here, not at exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`mahjong-table detect … | head`): say nothing more, and keep
        # Python from complaining as it flushes stdout on the way out
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (DeviceError, VisionError, StorageError) as exc:
        print(f"mahjong-table {args.command}: {exc}", file=sys.stderr)
        return EXIT_HARDWARE
    except MahjongTableError as exc:
        print(f"mahjong-table {args.command}: {exc}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
