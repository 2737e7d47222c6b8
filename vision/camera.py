"""Camera sources: every way a frame reaches the vision pipeline, behind one interface.

A :class:`CameraSource` hands out :class:`Frame` objects from :meth:`~CameraSource.read`:

* :class:`OpenCVCamera` - anything ``cv2.VideoCapture`` opens: a USB camera by index
  (``0``), a device path (``/dev/video0``), a stream URL (``rtsp://…``, ``http://…``) or a
  video file;
* :class:`PicameraSource` - a Raspberry Pi CSI camera through Picamera2 (``VideoCapture``
  cannot open those), imported only when asked for;
* :class:`ImageFilesCamera` / :class:`ImageFolderCamera` - still images, one per frame;
* the simulator's camera, ``hardware_sim.camera.SimCamera``, which renders the table.

:func:`open_camera` turns the text an installer types (``0``, ``/dev/video2``, ``picamera``,
``photos/``, ``match.mp4``) into the right source.

Failures never escape as anything but :class:`~controller.errors.CameraError`: a camera that
cannot be opened, an unreadable image, and :class:`CameraLost` when a live camera stops
delivering (unplugged, stream dropped). After :class:`CameraLost` the source is closed; the
next :meth:`~CameraSource.read` tries to open it again, so the caller retries simply by reading
again (later). A file or folder that has no more frames raises :class:`EndOfStream`, which
iteration over a source treats as the normal end.

>>> with open_camera("frames/") as camera:   # doctest: +SKIP
...     for frame in camera:
...         print(frame.index, frame.image.shape)
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import os
import stat
import struct
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import numpy as np

from controller.errors import CameraError

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"})
"""File name endings read as still images (anything else OpenCV opens is taken as video)."""


class CameraLost(CameraError):
    """A live camera stopped delivering frames. Reading again tries to reopen it."""


class EndOfStream(CameraError):
    """A video file or a set of images has no more frames (the normal end, not a fault)."""


@dataclass(frozen=True)
class Frame:
    """One image from a camera: ``image`` is BGR ``uint8`` of shape ``(height, width, 3)``;
    ``index`` counts the frames this source has delivered (from 0); ``timestamp`` is
    :func:`time.monotonic` when it was read; ``source`` names the camera (or the image file)."""

    image: np.ndarray = field(repr=False)
    index: int
    timestamp: float
    source: str

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return int(self.image.shape[1]), int(self.image.shape[0])


SAMPLE_BITS = (8, 10, 12, 14, 16)
"""The sample depths a 16-bit picture may hold: cameras deliver 10, 12 or 14 bits in 16-bit
words, at the bottom of each word."""


def eight_bits(image: np.ndarray) -> np.ndarray:
    """A 16-bit picture as 8 bits, read as the smallest of :data:`SAMPLE_BITS` that holds its
    brightest pixel. A 12-bit camera's frame, whose pixels never pass 4095, keeps its
    brightness instead of coming out all but black (and unreadable) from the top byte alone;
    a full-range 16-bit picture is read by its top byte."""
    top = int(image.max())
    bits = next(b for b in SAMPLE_BITS if top < 1 << b)
    return (image >> (bits - 8)).astype(np.uint8)


def as_bgr(image: Any, what: str = "the picture", min_side: int = 8) -> np.ndarray:
    """``image`` as a contiguous BGR ``uint8`` array; grey and BGRA images are converted,
    16-bit ones scaled down to 8 bits (by their depth, see :func:`eight_bits`).

    Raises :class:`CameraError` naming ``what`` for anything that is not an image: ``None`` (a
    camera that delivered nothing), not an array, empty, pixels neither 8 nor 16 bits (a float
    picture is refused rather than guessed at: 0-1 and 0-255 both occur), a shape that is not
    HxW, HxWx1, HxWx3 or HxWx4, or a side shorter than ``min_side`` pixels."""
    import cv2

    if image is None:
        raise CameraError(f"{what}: no picture, the camera delivered nothing (None)")
    if not isinstance(image, np.ndarray):
        raise CameraError(f"{what} must be a numpy array, not {type(image).__name__}")
    if image.size == 0:
        raise CameraError(f"{what} is empty (shape {image.shape})")
    if image.dtype != np.uint8:
        if image.dtype.kind == "u" and image.dtype.itemsize == 2:  # any byte order
            image = eight_bits(image.astype(np.uint16))
        else:
            raise CameraError(
                f"{what} has {image.dtype} pixels; expected 8-bit (or 16-bit) colour, as uint8"
            )
    if image.ndim == 2:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    elif image.ndim == 3 and image.shape[2] == 1:
        image = cv2.cvtColor(image[:, :, 0], cv2.COLOR_GRAY2BGR)
    elif image.ndim == 3 and image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    elif not (image.ndim == 3 and image.shape[2] == 3):
        raise CameraError(f"{what} has shape {image.shape}; expected a colour image (HxWx3)")
    if image.shape[0] < min_side or image.shape[1] < min_side:
        raise CameraError(
            f"{what} is only {image.shape[1]}x{image.shape[0]} pixels, too small"
            f" (at least {min_side}x{min_side})"
        )
    return np.ascontiguousarray(image)


MAX_SIDE = 4096
""":func:`read_image` reads a larger picture reduced, to at most this many pixels on its long
side: the tiles stay many pixels wide, and a Pi's memory is spared."""

MAX_DECODE_PIXELS = 40_000_000
"""The most pixels a picture that cannot be decoded reduced (a PNG, a progressive JPEG, a
TIFF) may have: it is decoded whole before it is made smaller, 120 MB at 8 bits a colour."""

MAX_JPEG_SIDE = 8 * MAX_SIDE
"""The longest side of a plain JPEG, which the decoder reduces by up to 8 as it reads."""

MAX_IMAGE_BYTES = 256 << 20
"""The largest image file :func:`read_image` reads (a camera's photo is a few megabytes)."""


@dataclass(frozen=True)
class ImageHeader:
    """What an image file's header says, read before anything is decoded: its ``kind``
    (``"png"``, ``"jpeg"``, ...), its size in pixels, whether the decoder can reduce it as it
    reads (``scalable``: a plain JPEG), and whether the file is ``complete`` (a PNG read to its
    end chunk; None where that is not checked)."""

    kind: str
    width: int
    height: int
    scalable: bool = False
    complete: bool | None = None


def image_header(data: bytes) -> ImageHeader | None:
    """The header of a PNG, JPEG, BMP, WebP or TIFF file's bytes; None for anything else (or a
    header too damaged to read)."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            return _png_header(data)
        if data.startswith(b"\xff\xd8"):
            return _jpeg_header(data)
        if data.startswith(b"BM") and len(data) >= 26:
            size = int.from_bytes(data[14:18], "little")
            if size == 12:  # OS/2's header
                w, h = struct.unpack_from("<HH", data, 18)
            else:
                w, h = struct.unpack_from("<ii", data, 18)
            return ImageHeader("bmp", abs(w), abs(h))
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_header(data)
        if data[:4] in (b"II*\x00", b"MM\x00*"):
            return _tiff_header(data)
    except (struct.error, IndexError, ValueError):
        return None
    return None


def _png_header(data: bytes) -> ImageHeader | None:
    if data[12:16] != b"IHDR":
        return None
    w, h = struct.unpack_from(">II", data, 16)
    # walk the chunks to IEND: a file cut short is told here, not by libpng on stderr
    pos, complete = 8, False
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            break
        if kind == b"IEND":
            complete = True
            break
        pos = end
    return ImageHeader("png", w, h, complete=complete)


_JPEG_SOF = frozenset(
    {*range(0xC0, 0xC4), *range(0xC5, 0xC8), *range(0xC9, 0xCC), 0xCD, 0xCE, 0xCF}
)
"""The markers that start a JPEG frame (SOF0-SOF15 but DHT, JPG and DAC)."""


def _jpeg_header(data: bytes) -> ImageHeader | None:
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # no length
            pos += 2
            continue
        if marker in (0xD9, 0xDA):  # the end, or the scan before any frame header
            return None
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if marker in _JPEG_SOF:
            h, w = struct.unpack_from(">HH", data, pos + 5)
            # a plain (sequential) JPEG in one scan is reduced as it is decoded; a progressive
            # or multi-scan one needs every coefficient of the whole picture first
            one_scan = data.count(b"\xff\xda", pos) == 1
            return ImageHeader("jpeg", w, h, scalable=marker in (0xC0, 0xC1, 0xC9) and one_scan)
        pos += 2 + length
    return None


def _webp_header(data: bytes) -> ImageHeader | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack_from("<HH", data, 26)
        return ImageHeader("webp", w & 0x3FFF, h & 0x3FFF)
    if chunk == b"VP8L" and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return ImageHeader("webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return ImageHeader("webp", w, h)
    return None


def _tiff_header(data: bytes) -> ImageHeader | None:
    order = "<" if data[:2] == b"II" else ">"
    (ifd,) = struct.unpack_from(order + "I", data, 4)
    (count,) = struct.unpack_from(order + "H", data, ifd)
    size: dict[int, int] = {}
    for k in range(count):
        tag, kind, _n = struct.unpack_from(order + "HHI", data, ifd + 2 + 12 * k)
        if tag in (256, 257):
            fmt = "H" if kind == 3 else "I"
            (size[tag],) = struct.unpack_from(order + fmt, data, ifd + 10 + 12 * k)
    if 256 not in size or 257 not in size:
        return None
    return ImageHeader("tiff", size[256], size[257])


def read_image(path: str | os.PathLike[str], *, max_side: int = MAX_SIDE) -> np.ndarray:
    """Read an image file as BGR ``uint8``; a clear :class:`CameraError` naming the file if it
    cannot be. A phone photo's EXIF orientation is applied, so the picture stands as the phone
    showed it (enrolment's grid depends on it).

    A picture longer than ``max_side`` pixels is read reduced to that (a plain JPEG by the
    decoder itself, so a huge photo never takes its full size in memory); one too large to
    read at all (more than :data:`MAX_DECODE_PIXELS` that must be decoded whole, a JPEG side
    over :data:`MAX_JPEG_SIDE`) is refused, as is a file cut short, before anything is
    decoded. What the image libraries would print on stderr is folded into the message."""
    import cv2

    p = Path(path).expanduser()
    try:
        # pathlib raises, rather than answers False, where a folder on the way is closed to us
        if not p.exists():
            raise CameraError(f"image {p} does not exist")
        if p.is_dir():
            raise CameraError(f"{p} is a folder, not an image file")
        if not p.is_file():
            raise CameraError(f"{p} is not a file")
        if p.stat().st_size > MAX_IMAGE_BYTES:
            raise CameraError(
                f"{p} is larger than {MAX_IMAGE_BYTES >> 20} MB: too large for a picture to read"
            )
        raw = p.read_bytes()
    except OSError as exc:
        raise CameraError(f"cannot read image {p}: {exc.strerror or exc}") from None
    data = np.frombuffer(raw, dtype=np.uint8)
    unreadable = (
        f"{p} is not a readable image (empty, truncated or not a JPEG, PNG, BMP, TIFF or WebP file)"
    )
    header = image_header(raw)
    # ANYCOLOR|ANYDEPTH keeps grey and 16-bit pictures and, unlike UNCHANGED, honours EXIF
    # orientation.
    flags = cv2.IMREAD_ANYCOLOR | cv2.IMREAD_ANYDEPTH
    if header is not None:
        w, h = header.width, header.height
        if header.complete is False:
            raise CameraError(f"{p} is cut short: the file ends before the picture does")
        if w == 0 or h == 0:
            raise CameraError(unreadable)
        long_side = max(w, h)
        if header.scalable and long_side > max_side:
            if long_side > MAX_JPEG_SIDE:
                raise CameraError(
                    f"{p} cannot be decoded: {w}x{h} pixels is too large to read (a JPEG up to "
                    f"{MAX_JPEG_SIDE} pixels on its long side)"
                )
            factor = next(f for f in (2, 4, 8) if -(-long_side // f) <= max_side or f == 8)
            flags = {
                2: cv2.IMREAD_REDUCED_COLOR_2,
                4: cv2.IMREAD_REDUCED_COLOR_4,
                8: cv2.IMREAD_REDUCED_COLOR_8,
            }[factor]
        elif not header.scalable and w * h > MAX_DECODE_PIXELS:
            raise CameraError(
                f"{p} cannot be decoded: {w}x{h} pixels is too large to read (at most "
                f"{MAX_DECODE_PIXELS // 1_000_000} million pixels in a {header.kind.upper()};"
                " make it smaller first)"
            )
    # imdecode rather than imread: it reads any path (non-ASCII too) and never aborts on junk.
    said: list[str] = []
    try:
        with _c_stderr_to(said):
            image = cv2.imdecode(data, flags) if data.size else None
    except cv2.error as exc:  # a header claiming more pixels than OpenCV will decode, say
        raise CameraError(f"{p} cannot be decoded: {_cv_message(exc)}") from None
    if image is None:
        if said:
            raise CameraError(f"{unreadable}: {said[-1]}")
        raise CameraError(unreadable)
    image = as_bgr(image, f"image {p}")
    if max(image.shape[:2]) > max_side:  # a picture the decoder could not reduce as it read
        scale = max_side / max(image.shape[:2])
        size = (max(1, round(image.shape[1] * scale)), max(1, round(image.shape[0] * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return image


_DECODER_NOISE = (
    "libpng",
    "libjpeg",
    "libtiff",
    "TIFF",
    "Corrupt JPEG",
    "Premature end of JPEG",
    "Invalid SOS",
    "Not a JPEG",
    "Warning",
    "[ WARN:",
    "[ERROR:",
)
"""How the image libraries' own lines on stderr begin."""

_stderr_lock = threading.Lock()


@contextlib.contextmanager
def _c_stderr_to(said: list[str]) -> Iterator[None]:
    """Hold what C code writes on the process's stderr (libpng's "libpng error: ...") while
    the block runs: the image libraries' lines go into ``said``, for the caller's message, and
    anything else (another thread's) is written out afterwards. The descriptor is shared by
    every thread, so one block at a time. Without a stderr or a temporary file to hold it in,
    the block runs as it is."""
    with _stderr_lock:
        saved = held = None
        try:
            saved = os.dup(2)
            held = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the `with held` below
        except OSError:
            if saved is not None:
                os.close(saved)
            saved = None
        if saved is None or held is None:
            yield
            return
        with held:
            with contextlib.suppress(AttributeError, ValueError, OSError):
                sys.stderr.flush()
            os.dup2(held.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                held.seek(0)
                _sort_out(held.read(1 << 16).decode("utf-8", "replace"), said)


def _sort_out(text: str, said: list[str]) -> None:
    """The image libraries' lines of ``text`` into ``said``; the rest back onto stderr."""
    other = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(_DECODER_NOISE):
            said.append(line)
        elif line:
            other.append(line)
    if other:
        with contextlib.suppress(AttributeError, ValueError, OSError):
            print("\n".join(other), file=sys.stderr)


def _cv_message(exc: Exception) -> str:
    """OpenCV's own message, without the source file and line it prefixes."""
    text = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    return text.split(" error: ", 1)[-1]


def _positive_number(value: Any) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value > 0
    )


class CameraSource(ABC):
    """The interface of every camera: :meth:`open`, :meth:`read`, :meth:`close`.

    :meth:`read` opens the source if needed, so a caller that got :class:`CameraLost` retries
    by calling it again. A source is a context manager and an iterator of frames (iteration
    ends at :class:`EndOfStream`; other errors propagate). Subclasses implement ``_open``,
    ``_grab`` and ``_close``.
    """

    live: bool = True
    """Whether frames come as they happen (a camera: one that cannot be opened may be plugged
    in later) or are replayed from files (a video, pictures: one that cannot be opened never
    will be)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._is_open = False
        self._count = 0

    @property
    def is_open(self) -> bool:
        return self._is_open

    @property
    def frames_read(self) -> int:
        """How many frames this source has delivered."""
        return self._count

    def open(self) -> Self:
        """Open the source (a no-op when open). Raises :class:`CameraError` when it cannot."""
        if not self._is_open:
            self._open()
            self._is_open = True
        return self

    def read(self) -> Frame:
        """The next frame. Raises :class:`CameraLost` (source closed; read again to retry),
        :class:`EndOfStream`, or :class:`CameraError` for a frame that cannot be used."""
        self.open()
        try:
            raw = self._grab()
        except CameraLost:
            self.close()
            raise
        image = as_bgr(raw, f"a frame from {self.name}")
        frame = Frame(image, self._count, time.monotonic(), self._frame_source())
        self._count += 1
        return frame

    def close(self) -> None:
        """Release the device; safe to call twice."""
        if self._is_open:
            self._is_open = False
            self._close()

    def frames(self, limit: int | None = None) -> Iterator[Frame]:
        """Frames until the end of the stream (or ``limit`` frames)."""
        n = 0
        while limit is None or n < limit:
            try:
                yield self.read()
            except EndOfStream:
                return
            n += 1

    def __iter__(self) -> Iterator[Frame]:
        return self.frames()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}{' open' if self._is_open else ''}>"

    def _frame_source(self) -> str:
        return self.name

    @abstractmethod
    def _open(self) -> None: ...

    @abstractmethod
    def _grab(self) -> Any: ...

    @abstractmethod
    def _close(self) -> None: ...


class OpenCVCamera(CameraSource):
    """A camera or video that ``cv2.VideoCapture`` opens.

    ``source`` is a device index (``0``), a device path (``/dev/video0``), a URL or a video
    file. ``width``, ``height`` and ``fps`` are requested from live cameras (the driver may pick
    the nearest mode it has). ``live`` says whether running out of frames means the camera was
    lost (:class:`CameraLost`) or the video ended (:class:`EndOfStream`); by default a regular
    file is not live and everything else is.
    """

    def __init__(
        self,
        source: int | str | os.PathLike[str],
        *,
        width: int | None = None,
        height: int | None = None,
        fps: float | None = None,
        live: bool | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        # OpenCV takes the index as a C int
        if isinstance(source, bool) or (isinstance(source, int) and not 0 <= source < 2**31):
            raise CameraError(f"a camera index is 0 or more (and below 2**31), not {source!r}")
        self.source: int | str = source if isinstance(source, int) else os.fspath(source)
        for name, value in (("width", width), ("height", height), ("fps", fps)):
            # OpenCV's set() raises its own TypeError for "640", after the camera is open
            if value is not None and not _positive_number(value):
                raise CameraError(f"a camera's {name} is a number above 0, not {value!r}")
        # OpenCV takes the timeouts as a C int of milliseconds
        if not _positive_number(timeout_s) or timeout_s * 1000 >= 2**31:
            raise CameraError(
                f"a camera's timeout is a number of seconds above 0 (and below 2**31 ms), "
                f"not {timeout_s!r}"
            )
        self.width, self.height, self.fps = width, height, fps
        self.timeout_s = float(timeout_s)
        if live is None:
            live = not (isinstance(self.source, str) and _is_regular_file(self.source))
        self.live = live
        super().__init__(
            f"camera {self.source}" if isinstance(self.source, int) else str(self.source)
        )
        self._cap: Any = None

    def _open(self) -> None:
        import cv2

        src = self.source
        if isinstance(src, str) and "://" not in src and not os.path.exists(src):
            if src.startswith("/dev/"):
                raise CameraError(f"there is no {src} now: {self._open_failure()}")
            raise CameraError(f"{src} does not exist (no such camera device or video file)")
        params: list[int] = []
        timeout_ms = max(1, int(self.timeout_s * 1000))
        for prop in ("CAP_PROP_OPEN_TIMEOUT_MSEC", "CAP_PROP_READ_TIMEOUT_MSEC"):
            if hasattr(cv2, prop):  # honoured by the stream backends; a frozen URL cannot hang us
                params += [getattr(cv2, prop), timeout_ms]
        cap = self._capture(src, params)
        stream = isinstance(src, str) and "://" in src
        # a stream keeps its timeouts: opened without them, a frozen URL would hang for
        # FFmpeg's own 30 s and then read with no timeout at all
        if not cap.isOpened() and params and not stream:
            # a backend that cannot set a timeout (V4L2 for USB cameras) refuses to open when
            # given one, and CAP_ANY then drops it: open again without the timeouts
            cap.release()
            cap = self._capture(src, [])
        if not cap.isOpened():
            cap.release()
            raise CameraError(self._open_failure())
        if self.live:
            if self.width:
                cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.width)
            if self.height:
                cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.height)
            if self.fps:
                cap.set(cv2.CAP_PROP_FPS, self.fps)
        self._cap = cap

    def _capture(self, src: int | str, params: list[int]) -> Any:
        import cv2

        try:
            return cv2.VideoCapture(src, cv2.CAP_ANY, params)
        except cv2.error as exc:  # OpenCV refuses some sources outright rather than failing
            raise CameraError(f"{self.name}: {_cv_message(exc)}") from None

    def _open_failure(self) -> str:
        src = self.source
        if isinstance(src, int):
            return (
                f"no camera at index {src}: check it is plugged in and not used by another "
                "program (v4l2-ctl --list-devices lists cameras)"
            )
        if "://" in src:
            return f"cannot open the stream {src}: check the address and that it is reachable"
        if src.startswith("/dev/"):
            return (
                f"cannot open camera device {src}: check it is plugged in, that this user may "
                "read it (group 'video') and that no other program holds it"
            )
        return f"cannot open {src} as a video (unsupported or corrupt file)"

    def _grab(self) -> Any:
        try:
            ok, image = self._cap.read()
        except Exception as exc:  # a backend that throws on a vanished device
            if not self.live:
                # a file is not reopened: that would play it again from the start, forever
                raise CameraError(f"{self.name}: cannot read the next frame ({exc})") from None
            raise CameraLost(f"{self.name} stopped delivering frames ({exc})") from None
        if ok and image is not None:
            return image
        if self.live:
            raise CameraLost(
                f"{self.name} stopped delivering frames (unplugged or stream dropped); "
                "reading again will try to reopen it"
            )
        raise EndOfStream(f"{self.name} has no more frames")

    def _close(self) -> None:
        cap, self._cap = self._cap, None
        if cap is not None:
            cap.release()


class PicameraSource(CameraSource):
    """A Raspberry Pi CSI camera through Picamera2 (``libcamera``).

    Picamera2 is imported when the source is opened; asking for this source where Picamera2 is
    not installed raises :class:`CameraError` at once, with how to install it.
    """

    def __init__(self, camera_num: int = 0, *, size: tuple[int, int] = (1280, 960)) -> None:
        if importlib.util.find_spec("picamera2") is None:
            raise CameraError(
                "Picamera2 is not installed: on Raspberry Pi OS run "
                "'sudo apt install python3-picamera2' and create the virtual environment with "
                "--system-site-packages (USB cameras work without it: use a camera index)"
            )
        if isinstance(camera_num, bool) or not isinstance(camera_num, int) or camera_num < 0:
            raise CameraError(f"a Picamera2 camera number is 0 or more, not {camera_num!r}")
        super().__init__(f"picamera {camera_num}")
        self.camera_num = camera_num
        self.size = _size_pair(size, "a Picamera2 frame size")
        self._cam: Any = None

    def _open(self) -> None:
        try:
            picamera2 = importlib.import_module("picamera2")
        except ImportError as exc:  # found, but its libcamera bindings are not on the path
            raise CameraError(
                f"Picamera2 cannot be imported ({exc}): install it with 'sudo apt install "
                "python3-picamera2' and create the virtual environment with "
                "--system-site-packages (pip cannot install libcamera)"
            ) from None
        try:
            cam = picamera2.Picamera2(self.camera_num)
        except Exception as exc:  # libcamera reports a missing camera in several ways
            raise CameraError(
                f"no Picamera2 camera {self.camera_num} ({exc}): check the ribbon cable and "
                "that 'rpicam-hello --list-cameras' lists it"
            ) from None
        try:
            # "RGB888" is libcamera's name for bytes in B, G, R order: what OpenCV expects
            config = cam.create_video_configuration(main={"size": self.size, "format": "RGB888"})
            cam.configure(config)
            cam.start()
        except Exception as exc:
            _close_quietly(cam)
            raise CameraError(f"cannot start {self.name}: {exc}") from None
        self._cam = cam

    def _grab(self) -> Any:
        try:
            return self._cam.capture_array("main")
        except Exception as exc:
            raise CameraLost(f"{self.name} stopped delivering frames ({exc})") from None

    def _close(self) -> None:
        cam, self._cam = self._cam, None
        if cam is not None:
            _close_quietly(cam)


def _close_quietly(cam: Any) -> None:
    # Closing a camera that already vanished must not mask the error being reported.
    for method in ("stop", "close"):
        try:
            getattr(cam, method)()
        except Exception:  # best effort on a device that may already be gone
            continue


class ImageFilesCamera(CameraSource):
    """Still images as frames, in the order given. ``loop`` starts again after the last one.

    An image that cannot be read raises :class:`CameraError` naming it; the next read moves on
    to the following image, so one bad file loses nothing else.
    """

    live = False

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        loop: bool = False,
        name: str | None = None,
    ) -> None:
        if isinstance(paths, str | bytes | os.PathLike):
            # a lone path is a sequence of its characters: one image would become many
            raise CameraError(f"give a list of image paths, not one path ({paths!r})")
        self.paths = [Path(p) for p in paths]
        self.loop = loop
        super().__init__(name or (str(self.paths[0]) if len(self.paths) == 1 else "images"))
        self._next = 0
        self._current: Path | None = None

    def _open(self) -> None:
        if not self.paths:
            raise CameraError(f"{self.name}: no images to read")

    def _grab(self) -> Any:
        if self._next >= len(self.paths):
            if not self.loop:
                raise EndOfStream(f"{self.name}: all {len(self.paths)} images read")
            self._next = 0
        path = self.paths[self._next]
        self._next += 1
        self._current = path
        return read_image(path)

    def _frame_source(self) -> str:
        return str(self._current) if self._current else self.name

    def _close(self) -> None:
        pass


class ImageFolderCamera(ImageFilesCamera):
    """Every image in a folder (by :data:`IMAGE_SUFFIXES`), in name order, as frames."""

    def __init__(self, folder: str | os.PathLike[str], *, loop: bool = False) -> None:
        self.folder = Path(folder)
        super().__init__([], loop=loop, name=str(self.folder))

    def _open(self) -> None:
        try:
            if not self.folder.is_dir():
                raise CameraError(f"image folder {self.folder} does not exist")
            self.paths = sorted(
                p
                for p in self.folder.iterdir()
                if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()
            )
        except OSError as exc:
            raise CameraError(
                f"cannot list image folder {self.folder}: {exc.strerror or exc}"
            ) from None
        if not self.paths:
            kinds = ", ".join(sorted(IMAGE_SUFFIXES))
            raise CameraError(f"image folder {self.folder} holds no images ({kinds})")
        self._next = min(self._next, len(self.paths))


def _is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def open_camera(spec: str | int, *, size: tuple[int, int] | None = None) -> CameraSource:
    """The camera source named by ``spec``, as an installer would write it.

    ``0`` (a USB camera index), ``/dev/video0`` (a device), ``rtsp://…`` or ``http://…`` (a
    stream), ``picamera`` or ``picamera:1`` (a CSI camera through Picamera2), a folder of
    images, an image file, or a video file. ``size`` is the ``(width, height)`` to ask live
    cameras for. The source is returned unopened; its first :meth:`~CameraSource.read` opens it.
    """
    width, height = _size_pair(size, "the camera size") if size is not None else (None, None)
    if isinstance(spec, int) and not isinstance(spec, bool):
        return OpenCVCamera(spec, width=width, height=height)
    if not isinstance(spec, str) or not spec.strip():
        raise CameraError(f"{spec!r} does not name a camera")
    text = spec.strip()
    # "²".isdigit() is true, but int() refuses it
    if text.isascii() and text.isdigit():
        return OpenCVCamera(int(text), width=width, height=height)
    lowered = text.lower()
    if lowered == "picamera" or lowered.startswith("picamera:"):
        num = text.partition(":")[2] or "0"
        if not (num.isascii() and num.isdigit()):
            raise CameraError(f"{text!r}: write picamera or picamera:N with N the camera number")
        return PicameraSource(int(num), size=size or (1280, 960))
    if "://" in text:
        return OpenCVCamera(text, width=width, height=height)
    path = Path(text).expanduser()
    try:
        is_dir, exists = path.is_dir(), path.exists()
    except OSError as exc:  # a folder on the way that this user may not enter
        raise CameraError(f"cannot look at {text}: {exc.strerror or exc}") from None
    if is_dir:
        return ImageFolderCamera(path)
    if not exists and text.startswith("/dev/"):
        # a device not there yet is a camera to plug in, not a file name mistyped: opening it
        # says so, and a table watching it finds it once it is plugged in
        return OpenCVCamera(text, width=width, height=height)
    if not exists:
        raise CameraError(
            f"{text} is neither a camera index, a device, a URL, nor an existing file or folder"
        )
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return ImageFilesCamera([path])
    return OpenCVCamera(str(path), width=width, height=height)


def _size_pair(size: Any, what: str) -> tuple[int, int]:
    """``(width, height)`` as two whole numbers above 0, or :class:`CameraError`."""
    try:
        w, h = size
    except (TypeError, ValueError):
        raise CameraError(f"{what} is (width, height), not {size!r}") from None
    for v in (w, h):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 < v < 2**16:
            raise CameraError(f"{what} is two whole numbers of pixels above 0, not {size!r}")
    return int(w), int(h)
