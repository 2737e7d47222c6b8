"""Table-frame figures for ``bench/vision_bench.py``: meld and flower accuracy per seat on
rendered table frames, read through the real pipeline (see :mod:`vision.table_eval`).

    python bench/table_frames.py [--frames 20] [--mode frame|seats] [--model DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vision import table_eval


def run(recognizer: Any) -> dict[str, Any]:
    """The figures on 20 rendered 1280x960 table frames (the hook vision_bench.py calls)."""
    return table_eval.run(recognizer, frames=20, seed=0)


if __name__ == "__main__":
    sys.exit(table_eval.main())
