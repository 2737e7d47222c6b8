"""The exit status of every command: ``mahjong-table``'s subcommands, ``python -m …`` tools and
the benchmarks (``python -m bench.NAME``). The one table of them; the docs point here.

=====  ===============  ============================================================================
code   name             meaning
=====  ===============  ============================================================================
0      ``OK``           done: the command did what was asked, the check passed
1      ``NO``           a negative answer, said in full on the output: no valid win (``score``),
                        something to fix (``doctor``), faults set (``device status``), the camera
                        has moved (``calibrate --check``), a hand settled wrong (``sim``), a
                        benchmark missed its target (``bench.link_bench``, ``bench.table_bench``)
2      ``INPUT``        bad input or usage, refused before anything ran: an option, a file, a
                        config, a win's JSON that cannot be used (argparse's usage errors are 2
                        too); the message names what is wrong, never a traceback
3      ``HARDWARE``     hardware or I/O failure: the MCU refused, failed or did not answer, the
                        camera, the model, the event log or an output file could not be used
130    ``INTERRUPTED``  stopped by Ctrl-C before it finished (128 + SIGINT)
141    ``BROKEN_PIPE``  the output's reader went away (``… | head``; 128 + SIGPIPE)
=====  ===============  ============================================================================

A command that runs until stopped (``run``, ``watch``, ``device watch``, ``sim``, ``sim-mcu``)
and is stopped cleanly, by Ctrl-C or SIGTERM, exits 0. This module imports nothing, so every
layer, the serial bridge and the vision package included, may import it
(``tests/test_architecture.py``).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """A command's exit status (the table above). An ``int``: return it from ``main``."""

    OK = 0
    NO = 1
    INPUT = 2
    HARDWARE = 3
    INTERRUPTED = 130
    BROKEN_PIPE = 141
