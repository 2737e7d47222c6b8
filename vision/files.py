"""Writing a file whole or not at all.

A calibration or a model manifest half written (a full SD card, a power cut, two writers at
once) would leave the table unable to start, or started on a mixture of two. Each is written
to a temporary file of its own beside it, flushed to the disk, and then renamed over it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


def write_text_atomically(
    path: str | os.PathLike[str], text: str, *, make_folder: bool = False
) -> Path:
    """Write ``text`` to ``path`` (UTF-8) whole or not at all; ``make_folder`` makes its
    folder first where there is none.

    A file replaced keeps its permissions; a new one is readable by all (``0644``), since the
    table's service may run as another user than whoever wrote it. Raises :class:`OSError`,
    leaving no temporary file behind; the callers turn it into their own errors."""
    p = Path(path)
    if make_folder:
        p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if p.exists():
            shutil.copymode(p, tmp)
        else:
            os.chmod(tmp, 0o644)  # mkstemp makes it its owner's alone
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p
