"""Writing a file whole or not at all, and checking beforehand that it can be written.

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


def check_folder_takes_files(folder: str | os.PathLike[str]) -> None:
    """Raise :class:`OSError` unless a file can be made in ``folder`` (made and removed at
    once): said before a long run, not after it."""
    tempfile.TemporaryFile(dir=folder).close()


def why_not_writable(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` could not be written as a file, or ``None`` if it could; nothing is made
    (a run that fails must not leave an empty file behind)."""
    p = Path(path)
    if p.is_dir():
        return "it is a folder"
    if not p.parent.is_dir():
        return "no such folder"
    if not os.access(p if p.exists() else p.parent, os.W_OK):
        return "permission denied"
    return None
