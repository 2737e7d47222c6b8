"""Writing a file (text or a picture) whole or not at all, and checking beforehand that it
can be written.

A calibration or a model manifest half written (a full SD card, a power cut, two writers at
once) would leave the table unable to start, or started on a mixture of two. Each is written
to a temporary file of its own beside it, flushed to the disk, and then renamed over it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any


def write_text_atomically(
    path: str | os.PathLike[str], text: str, *, make_folder: bool = False
) -> Path:
    """Write ``text`` to ``path`` (UTF-8) whole or not at all; ``make_folder`` makes its
    folder first where there is none (see :func:`write_bytes_atomically`)."""
    return write_bytes_atomically(path, text.encode("utf-8"), make_folder=make_folder)


def write_bytes_atomically(
    path: str | os.PathLike[str], data: bytes, *, make_folder: bool = False
) -> Path:
    """Write ``data`` to ``path`` whole or not at all; ``make_folder`` makes its folder first
    where there is none.

    A file replaced keeps its permissions; a new one is readable by all (``0644``), since the
    table's service may run as another user than whoever wrote it. Raises :class:`OSError`,
    leaving no temporary file behind; the callers turn it into their own errors."""
    p = Path(path)
    if make_folder:
        p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
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


def check_picture_name(path: str | os.PathLike[str]) -> None:
    """:class:`ValueError` unless ``path`` names a picture :func:`write_picture` can write:
    one of the endings the cameras read as still images."""
    from vision.camera import IMAGE_SUFFIXES

    suffix = Path(path).suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        raise ValueError(f"cannot write a picture as {Path(path).name!r}: name it .png or .jpg")


def write_picture(
    path: str | os.PathLike[str], image: Any, *, dpi: int | None = None, make_folder: bool = False
) -> Path:
    """Write a BGR picture as PNG or JPEG (by ``path``'s ending), whole or not at all;
    ``dpi`` records the print resolution in a PNG (so that printing at 100 % gives the sizes
    drawn). Encoded here and written by Python, so any file name the system takes works
    (OpenCV's own writer crashed the process on a name that is not UTF-8). Raises
    :class:`ValueError` for a name or picture that cannot be written as one, :class:`OSError`
    when the file cannot be written."""
    import cv2

    p = Path(path)
    check_picture_name(p)
    try:
        ok, data = cv2.imencode(p.suffix.lower(), image)
    except cv2.error as exc:
        raise ValueError(f"{p.name}: not a picture OpenCV can encode ({exc})") from None
    if not ok:
        raise ValueError(f"{p.name}: not a picture OpenCV can encode")
    raw = data.tobytes()
    if dpi is not None and p.suffix.lower() == ".png":
        raw = _png_with_dpi(raw, dpi)
    return write_bytes_atomically(p, raw, make_folder=make_folder)


def _png_with_dpi(png: bytes, dpi: int) -> bytes:
    # a pHYs chunk (pixels per metre, both ways) right after the IHDR chunk, which a PNG's
    # 8-byte signature and IHDR's 25 bytes always lead with
    per_metre = round(dpi / 0.0254)
    body = b"pHYs" + struct.pack(">IIB", per_metre, per_metre, 1)
    chunk = struct.pack(">I", 9) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    return png[:33] + chunk + png[33:]


def shown(path: str | os.PathLike[str]) -> str:
    """A file name as text that can always be printed and put in JSON: a name whose bytes
    are not UTF-8 shows them as ``\\xe9`` escapes instead of failing the output."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def png_dpi(png: bytes) -> float | None:
    """The print resolution a PNG records (its pHYs chunk, in dots per inch), or ``None``
    where it records none."""
    at = 8  # after the signature, chunk by chunk: length, type, data, CRC
    while at + 8 <= len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind = png[at + 4 : at + 8]
        if kind == b"pHYs" and length == 9:
            x, _, unit = struct.unpack(">IIB", png[at + 8 : at + 17])
            return x * 0.0254 if unit == 1 else None
        if kind == b"IDAT":
            return None  # pHYs must come before the picture's data
        at += 12 + length
    return None
