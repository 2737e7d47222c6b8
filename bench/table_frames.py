"""Table-frame figures for ``python -m bench.vision_bench``: meld and flower accuracy per seat on
rendered table frames, read through the real pipeline (see :mod:`vision.training.table_eval`).

    python -m bench.table_frames [--frames 20] [--mode frame|seats] [--model DIR]
"""

from __future__ import annotations

import sys
from typing import Any

from vision.training import table_eval


def run(recognizer: Any) -> dict[str, Any]:
    """The figures on 20 rendered 1280x960 table frames (the hook vision_bench.py calls)."""
    return table_eval.run(recognizer, frames=20, seed=0)


if __name__ == "__main__":
    sys.exit(table_eval.main())
