"""Camera sources: OpenCV (files, devices), Picamera2, image folders; errors and retry."""

from __future__ import annotations

import importlib.machinery
import os
import struct
import sys
import tempfile
import types
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import CameraError, VisionError
from vision.camera import (
    CameraLost,
    CameraSource,
    EndOfStream,
    Frame,
    ImageFilesCamera,
    ImageFolderCamera,
    OpenCVCamera,
    PicameraSource,
    as_bgr,
    open_camera,
    read_image,
)


def _solid(value: int, size: tuple[int, int] = (64, 48)) -> np.ndarray:
    img = np.full((size[1], size[0], 3), value, np.uint8)
    cv2.putText(img, str(value), (5, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (255, 0, 0), 2)
    return img


def _write_video(path: Path, n: int, size: tuple[int, int] = (96, 64)) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10.0, size)
    assert writer.isOpened()
    for i in range(n):
        writer.write(_solid(40 * i + 20, size))
    writer.release()


def test_errors_are_camera_errors() -> None:
    assert issubclass(CameraLost, CameraError)
    assert issubclass(EndOfStream, CameraError)
    assert issubclass(CameraError, VisionError)


def test_folder_reads_images_in_name_order_and_skips_past_a_bad_file(tmp_path: Path) -> None:
    for i in (2, 0, 1):
        cv2.imwrite(str(tmp_path / f"f{i}.png"), _solid(50 * i + 10))
    (tmp_path / "f1b.jpg").write_bytes(b"not a jpeg at all")
    (tmp_path / "notes.txt").write_text("ignored")
    cam = ImageFolderCamera(tmp_path)
    assert not cam.live  # frames replayed from files, not a camera to wait for
    first = cam.read()
    assert isinstance(first, Frame)
    assert first.index == 0 and first.source.endswith("f0.png")
    assert first.image.shape == (48, 64, 3) and first.image.dtype == np.uint8
    assert first.size == (64, 48)
    assert cam.read().source.endswith("f1.png")
    with pytest.raises(CameraError, match=r"f1b\.jpg"):
        cam.read()
    third = cam.read()
    assert third.source.endswith("f2.png") and third.index == 2
    assert int(third.image[40, 60, 1]) == 110
    with pytest.raises(EndOfStream):
        cam.read()
    cam.close()


def test_iteration_ends_at_end_of_stream_and_loop_restarts(tmp_path: Path) -> None:
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.png"
        cv2.imwrite(str(p), _solid(10 + i))
        paths.append(p)
    with ImageFilesCamera(paths) as cam:
        assert not cam.live
        assert [f.index for f in cam] == [0, 1, 2]
    looped = ImageFilesCamera(paths, loop=True)
    sources = [Path(f.source).name for f in looped.frames(limit=7)]
    assert sources == ["0.png", "1.png", "2.png", "0.png", "1.png", "2.png", "0.png"]


def test_folder_missing_or_empty_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CameraError, match="does not exist"):
        ImageFolderCamera(tmp_path / "nope").read()
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(CameraError, match="holds no images"):
        ImageFolderCamera(tmp_path).read()


def test_read_image_converts_grey_alpha_and_16_bit(tmp_path: Path) -> None:
    grey = np.full((20, 30), 77, np.uint8)
    cv2.imwrite(str(tmp_path / "g.png"), grey)
    assert read_image(tmp_path / "g.png").shape == (20, 30, 3)
    bgra = np.zeros((20, 30, 4), np.uint8)
    bgra[..., 2] = 200
    cv2.imwrite(str(tmp_path / "a.png"), bgra)
    img = read_image(tmp_path / "a.png")
    assert img.shape == (20, 30, 3) and int(img[0, 0, 2]) == 200
    deep = np.full((20, 30, 3), 65535, np.uint16)
    cv2.imwrite(str(tmp_path / "d.png"), deep)
    assert int(read_image(tmp_path / "d.png")[0, 0, 0]) == 255


def test_pictures_and_calibrations_under_home_are_found_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vision.calibration import Calibration, load_calibration

    monkeypatch.setenv("HOME", str(tmp_path))
    cv2.imwrite(str(tmp_path / "p.png"), np.full((20, 30, 3), 77, np.uint8))
    assert read_image("~/p.png").shape == (20, 30, 3)
    Calibration(np.eye(3), (900, 900)).save(tmp_path / "c.json")
    assert load_calibration("~/c.json").image_size == (900, 900)


def test_read_image_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(CameraError, match="does not exist"):
        read_image(tmp_path / "missing.png")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(CameraError, match=r"empty\.png is not a readable image"):
        read_image(tmp_path / "empty.png")
    good = cv2.imencode(".png", _solid(90))[1].tobytes()
    (tmp_path / "cut.png").write_bytes(good[: len(good) // 3])
    with pytest.raises(CameraError, match=r"cut\.png"):
        read_image(tmp_path / "cut.png")
    with pytest.raises(CameraError, match="is a folder, not an image file"):
        read_image(tmp_path)
    (tmp_path / "notes.jpg").write_text("not a picture")
    with pytest.raises(CameraError, match=r"notes\.jpg is not a readable image"):
        read_image(tmp_path / "notes.jpg")


def _with_exif_orientation(jpeg: bytes, orientation: int) -> bytes:
    """``jpeg`` with an APP1 EXIF segment holding only the Orientation tag (0x0112), as a
    phone writes it for a photo taken holding the phone on its side."""
    tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1)
    tiff += struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)
    app1 = b"Exif\x00\x00" + tiff
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpeg[2:]


def test_read_image_stands_a_phone_photo_up_as_its_exif_says(tmp_path: Path) -> None:
    img = np.zeros((20, 30, 3), np.uint8)
    img[:, :6] = 255  # a white band down the left side
    jpeg = cv2.imencode(".jpg", img)[1].tobytes()
    (tmp_path / "plain.jpg").write_bytes(jpeg)
    assert read_image(tmp_path / "plain.jpg").shape == (20, 30, 3)
    (tmp_path / "turned.jpg").write_bytes(_with_exif_orientation(jpeg, 6))  # rotate 90° cw
    turned = read_image(tmp_path / "turned.jpg")
    assert turned.shape == (30, 20, 3)
    # turned clockwise, the left band becomes the top one
    assert turned[:4].mean() > 200 and turned[-10:].mean() < 50


def test_read_image_reads_a_path_that_is_not_ascii(tmp_path: Path) -> None:
    path = tmp_path / "麻将 牌.png"
    cv2.imencode(".png", _solid(90))[1].tofile(str(path))
    assert read_image(path).shape[2] == 3


@given(
    st.sampled_from([np.float32, np.int8, np.int32, np.float64]),
    st.integers(8, 20),
    st.integers(8, 20),
)
def test_as_bgr_rejects_non_8_bit_pixels(dtype: type, h: int, w: int) -> None:
    with pytest.raises(CameraError, match="8-bit"):
        as_bgr(np.zeros((h, w, 3), dtype), "frame")


@pytest.mark.parametrize(
    "bad", [None, "image", np.zeros((0, 0, 3), np.uint8), np.zeros((4, 4, 3), np.uint8)]
)
def test_as_bgr_rejects_what_is_not_a_usable_image(bad: object) -> None:
    with pytest.raises(CameraError):
        as_bgr(bad, "frame")
    with pytest.raises(CameraError):
        as_bgr(np.zeros((10, 10, 5), np.uint8), "frame")


def test_video_file_plays_to_its_end(tmp_path: Path) -> None:
    video = tmp_path / "hand.avi"
    _write_video(video, 4)
    cam = OpenCVCamera(video)
    assert not cam.live
    frames = list(cam)
    assert [f.index for f in frames] == [0, 1, 2, 3]
    assert frames[0].image.shape == (64, 96, 3)
    assert abs(int(frames[2].image[60, 90, 1]) - 100) < 12  # MJPG is lossy
    with pytest.raises(EndOfStream):
        cam.read()
    cam.close()


def test_a_live_source_that_stops_is_lost_and_reading_again_reopens_it(tmp_path: Path) -> None:
    video = tmp_path / "stream.avi"
    _write_video(video, 2)
    cam = OpenCVCamera(video, live=True)  # a file standing in for a camera that is unplugged
    cam.read()
    cam.read()
    with pytest.raises(CameraLost, match="stopped delivering"):
        cam.read()
    assert not cam.is_open
    again = cam.read()  # the caller's retry: the source opens again
    assert again.index == 2 and cam.is_open
    video.unlink()
    cam.close()
    with pytest.raises(CameraError, match="does not exist"):
        cam.read()


def test_opencv_open_failures_are_clear(tmp_path: Path) -> None:
    with pytest.raises(CameraError, match="does not exist"):
        OpenCVCamera(tmp_path / "gone.mp4").read()
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x01garbage" * 100)
    with pytest.raises(CameraError, match="cannot open"):
        OpenCVCamera(junk).read()
    with pytest.raises(CameraError, match="no camera at index 57"):
        OpenCVCamera(57).read()
    with pytest.raises(CameraError, match="index is 0 or more"):
        OpenCVCamera(-1)
    with pytest.raises(CameraError, match="below 2"):
        open_camera("99999999999999999999")
    for bad in ({"width": "640"}, {"height": 0}, {"fps": float("nan")}):
        with pytest.raises(CameraError, match="is a number above 0"):
            OpenCVCamera(0, **bad)


def test_a_source_opencv_refuses_outright_is_a_camera_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: object) -> None:
        raise cv2.error("(-5:Bad argument) in function 'VideoCapture'")

    monkeypatch.setattr(cv2, "VideoCapture", refuse)
    with pytest.raises(CameraError, match=r"camera 3: .*Bad argument"):
        OpenCVCamera(3).read()


def test_open_camera_understands_what_an_installer_types(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "still.jpg"), _solid(30))
    _write_video(tmp_path / "clip.avi", 2)
    cam = open_camera("2")
    assert isinstance(cam, OpenCVCamera) and cam.source == 2 and cam.live
    assert isinstance(open_camera(1), OpenCVCamera)
    url = open_camera("rtsp://192.168.1.20/stream", size=(1280, 960))
    assert isinstance(url, OpenCVCamera) and url.live and url.width == 1280
    assert isinstance(open_camera(str(tmp_path)), ImageFolderCamera)
    still = open_camera(str(tmp_path / "still.jpg"))
    assert isinstance(still, ImageFilesCamera)
    assert still.read().image.shape == (48, 64, 3)
    clip = open_camera(str(tmp_path / "clip.avi"))
    assert isinstance(clip, OpenCVCamera) and not clip.live
    assert len(list(clip)) == 2
    with pytest.raises(CameraError, match="neither a camera index"):
        open_camera(str(tmp_path / "nothing-here"))
    with pytest.raises(CameraError, match="does not name a camera"):
        open_camera("  ")
    # a device not plugged in yet is a camera to plug in (watch() retries it), not a file
    # name that is "neither a camera index, a device, a URL …"
    unplugged = open_camera("/dev/video97")
    assert isinstance(unplugged, OpenCVCamera) and unplugged.live
    with pytest.raises(CameraError, match=r"there is no /dev/video97 now: .* plugged in"):
        unplugged.read()
    # only a name not there is taken for a device to plug in: a folder or a picture under
    # /dev (frames on the RAM disk /dev/shm) is what it is
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
            cv2.imwrite(f"{shm}/f.png", np.zeros((20, 30, 3), np.uint8))
            assert isinstance(open_camera(shm), ImageFolderCamera)
            assert isinstance(open_camera(f"{shm}/f.png"), ImageFilesCamera)
    with pytest.raises(CameraError, match="picamera:N"):
        open_camera("picamera:x")
    # digits to str.isdigit() but not to int()
    with pytest.raises(CameraError, match="neither a camera index"):
        open_camera("²")
    with pytest.raises(CameraError, match="picamera:N"):
        open_camera("picamera:²")


@given(st.integers(0, 10_000))
def test_open_camera_reads_any_digits_as_a_device_index(n: int) -> None:
    cam = open_camera(str(n))
    assert isinstance(cam, OpenCVCamera) and cam.source == n and not cam.is_open


def test_picamera_not_installed_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)  # not installed
    with pytest.raises(CameraError, match="python3-picamera2"):
        PicameraSource()
    with pytest.raises(CameraError, match="Picamera2 is not installed"):
        open_camera("picamera")


class _FakeLibcamera:
    """Stands in for ``picamera2.Picamera2`` (which needs a Pi): records what it is asked."""

    instances: list[_FakeLibcamera] = []  # noqa: RUF012 - shared log for the test

    def __init__(self, num: int) -> None:
        if num > 0:
            raise IndexError("list index out of range")
        self.calls: list[str] = []
        self.fail_capture = False
        _FakeLibcamera.instances.append(self)

    def create_video_configuration(self, main: dict) -> dict:
        self.calls.append(f"config {main['size']} {main['format']}")
        return {"main": main}

    def configure(self, config: dict) -> None:
        self.size = config["main"]["size"]

    def start(self) -> None:
        self.calls.append("start")

    def capture_array(self, stream: str) -> np.ndarray:
        if self.fail_capture:
            raise RuntimeError("Camera frontend has timed out!")
        w, h = self.size
        return np.full((h, w, 3), 123, np.uint8)

    def stop(self) -> None:
        self.calls.append("stop")

    def close(self) -> None:
        self.calls.append("close")


@pytest.fixture
def fake_picamera2(monkeypatch: pytest.MonkeyPatch) -> type[_FakeLibcamera]:
    module = types.ModuleType("picamera2")
    module.__spec__ = importlib.machinery.ModuleSpec("picamera2", loader=None)
    module.Picamera2 = _FakeLibcamera  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "picamera2", module)
    _FakeLibcamera.instances = []
    return _FakeLibcamera


def test_picamera_source_configures_bgr_frames_and_recovers(
    fake_picamera2: type[_FakeLibcamera],
) -> None:
    cam = open_camera("picamera", size=(640, 480))
    assert isinstance(cam, PicameraSource)
    frame = cam.read()
    assert frame.image.shape == (480, 640, 3) and frame.source == "picamera 0"
    lib = fake_picamera2.instances[0]
    assert lib.calls == ["config (640, 480) RGB888", "start"]
    lib.fail_capture = True
    with pytest.raises(CameraLost, match="timed out"):
        cam.read()
    assert lib.calls[-2:] == ["stop", "close"] and not cam.is_open
    assert cam.read().index == 1  # a fresh Picamera2 was opened
    assert len(fake_picamera2.instances) == 2
    cam.close()


def test_picamera_missing_camera_number(fake_picamera2: type[_FakeLibcamera]) -> None:
    with pytest.raises(CameraError, match="no Picamera2 camera 1"):
        open_camera("picamera:1").read()


def test_a_source_is_one_interface() -> None:
    for cls in (OpenCVCamera, PicameraSource, ImageFilesCamera, ImageFolderCamera):
        assert issubclass(cls, CameraSource)


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG file whose header claims ``width`` x ``height`` pixels, with almost no data."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def test_an_image_claiming_more_pixels_than_opencv_decodes_is_a_camera_error(
    tmp_path: Path,
) -> None:
    # OpenCV raises (rather than returns None) past its pixel limit: a folder being watched
    # must skip the file, not end
    cv2.imwrite(str(tmp_path / "0.png"), _solid(10))
    (tmp_path / "1.png").write_bytes(_png_claiming(60000, 60000))
    cv2.imwrite(str(tmp_path / "2.png"), _solid(200))
    with pytest.raises(CameraError, match=r"1\.png cannot be decoded"):
        read_image(tmp_path / "1.png")
    cam = ImageFolderCamera(tmp_path)
    assert cam.read().source.endswith("0.png")
    with pytest.raises(CameraError, match=r"1\.png"):
        cam.read()
    assert cam.read().source.endswith("2.png")


def test_a_folder_this_user_may_not_enter_is_a_camera_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pathlib raises PermissionError, rather than answering False, for a closed folder (the
    # tests run as root, where nothing is closed, so the refusal is staged)
    closed = tmp_path / "closed"
    closed.mkdir()

    def refuse(self: Path, *args: object, **kwargs: object) -> bool:
        if closed in (self, *self.parents):
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *args, **kwargs)

    real_stat = Path.stat
    monkeypatch.setattr(Path, "stat", refuse)
    with pytest.raises(CameraError, match="Permission denied"):
        read_image(closed / "a.png")
    with pytest.raises(CameraError, match="Permission denied"):
        open_camera(str(closed / "a.png"))
    with pytest.raises(CameraError, match=r"cannot list image folder .*Permission denied"):
        ImageFolderCamera(closed).read()


def test_a_backend_that_cannot_take_timeouts_is_opened_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenCV's V4L2 backend (every USB camera) refuses to open when handed the stream
    # timeouts; a camera must still open
    video = tmp_path / "clip.avi"
    _write_video(video, 2)
    real = cv2.VideoCapture
    asked: list[list[int]] = []

    def v4l2_like(src: object, api: int, params: list[int]) -> object:
        asked.append(list(params))
        return real(str(tmp_path / "nothing.avi")) if params else real(str(src), api)

    monkeypatch.setattr(cv2, "VideoCapture", v4l2_like)
    frame = OpenCVCamera(video).read()
    assert frame.image.shape == (64, 96, 3)
    assert asked[0] and asked[1] == []  # the timeouts first, then without
    # a stream is not opened again without them: a frozen URL would hang for 30 s
    asked.clear()
    with pytest.raises(CameraError, match="cannot open the stream"):
        OpenCVCamera("rtsp://192.0.2.1/frozen", timeout_s=0.5).read()
    assert len(asked) == 1 and asked[0]


def test_a_recording_whose_decoder_throws_goes_on_and_is_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    video = tmp_path / "match.avi"
    _write_video(video, 4)
    real = cv2.VideoCapture

    class ThrowsOnThird:
        def __init__(self, *args: object) -> None:
            self.cap, self.reads = real(*args), 0

        def __getattr__(self, name: str) -> object:
            return getattr(self.cap, name)

        def read(self) -> tuple[bool, np.ndarray]:
            self.reads += 1
            if self.reads == 3:
                raise cv2.error("decoder failed")
            return self.cap.read()

    monkeypatch.setattr(cv2, "VideoCapture", ThrowsOnThird)
    cam = OpenCVCamera(video)
    assert not cam.live
    seen: list[object] = []
    for _ in range(6):
        try:
            seen.append(round((int(cam.read().image[5, 5, 1]) - 20) / 40))  # its frame number
        except EndOfStream:
            seen.append("end")
        except CameraLost:
            seen.append("lost")  # would reopen the file at its start
        except CameraError:
            seen.append("bad frame")
    assert seen[:3] == [0, 1, "bad frame"] and "lost" not in seen
    assert seen[-1] == "end" and 0 not in seen[3:]


def test_picamera2_that_is_found_but_cannot_be_imported_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pip's picamera2 in a venv without --system-site-packages: found, but libcamera is not
    spec = importlib.machinery.ModuleSpec("picamera2", loader=None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec)

    def no_libcamera(name: str) -> types.ModuleType:
        raise ModuleNotFoundError("No module named 'libcamera'")

    monkeypatch.setattr(importlib, "import_module", no_libcamera)
    with pytest.raises(CameraError, match=r"libcamera.*system-site-packages"):
        PicameraSource().read()


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: OpenCVCamera(0, timeout_s=float("inf")), "timeout is a number of seconds"),
        (lambda: OpenCVCamera(0, timeout_s=float("nan")), "timeout is a number of seconds"),
        (lambda: OpenCVCamera(0, timeout_s=1e9), "timeout is a number of seconds"),
        (lambda: OpenCVCamera(0, width=float("inf")), "width is a number above 0"),
        (lambda: open_camera("0", size=(1280,)), r"size is \(width, height\)"),
        (lambda: open_camera("0", size=1280), r"size is \(width, height\)"),  # type: ignore[arg-type]
        (lambda: open_camera("0", size=(1280.5, 960)), "two whole numbers"),
        (lambda: ImageFilesCamera("shot.png"), "a list of image paths, not one path"),  # type: ignore[arg-type]
    ],
)
def test_camera_settings_that_cannot_work_are_refused_up_front(make, said) -> None:
    with pytest.raises(CameraError, match=said):
        make()


def test_a_big_endian_16_bit_picture_is_read_as_16_bit() -> None:
    grey = np.full((10, 12), 0x8040, dtype=">u2")
    assert as_bgr(grey).shape == (10, 12, 3) and int(as_bgr(grey)[0, 0, 0]) == 0x80


@pytest.mark.parametrize("bits", [10, 12, 14, 16])
def test_a_16_bit_picture_is_read_by_its_depth(bits) -> None:
    # a 10- or 12-bit camera delivers its samples at the bottom of 16-bit words: read by the
    # top byte alone such a frame came out all but black, and the recogniser found no tiles
    eight = np.random.default_rng(bits).integers(0, 256, (30, 40, 3), dtype=np.uint8)
    eight[0, 0] = 255  # the brightest pixel sets the depth
    deep = (eight.astype(np.uint16) << (bits - 8)) | np.uint16((1 << (bits - 8)) - 1)
    np.testing.assert_array_equal(as_bgr(deep), eight)


def test_a_dark_16_bit_picture_is_not_brightened_past_its_depth() -> None:
    # pixels under 256 are 8-bit samples in 16-bit words, read as they are
    dark = np.full((20, 20), 200, np.uint16)
    assert int(as_bgr(dark)[0, 0, 0]) == 200


# -- pictures too large, cut short or damaged: told before (or instead of) the decoder's words ---


def _sof_patched(jpeg: bytes, width: int, height: int) -> bytes:
    """``jpeg`` whose frame header claims ``width`` x ``height``."""
    from vision.camera import _JPEG_SOF

    data = bytearray(jpeg)
    i = 2
    while data[i + 1] not in _JPEG_SOF:
        i += 2 + int.from_bytes(data[i + 2 : i + 4], "big")
    data[i + 5 : i + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def test_the_header_gives_the_size_of_every_kind_of_picture() -> None:
    from vision.camera import image_header

    picture = np.full((30, 50, 3), 90, np.uint8)
    for suffix, kind in [(".png", "png"), (".jpg", "jpeg"), (".bmp", "bmp"),
                         (".webp", "webp"), (".tiff", "tiff")]:  # fmt: skip
        header = image_header(cv2.imencode(suffix, picture)[1].tobytes())
        assert header is not None and (header.kind, header.width, header.height) == (kind, 50, 30)
    lossless = cv2.imencode(".webp", picture, [cv2.IMWRITE_WEBP_QUALITY, 101])[1].tobytes()
    assert image_header(lossless) is not None and image_header(lossless).width == 50
    plain = image_header(cv2.imencode(".jpg", picture)[1].tobytes())
    progressive = cv2.imencode(".jpg", picture, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])[1].tobytes()
    assert plain is not None and plain.scalable
    assert image_header(progressive) is not None and not image_header(progressive).scalable
    for junk in (b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"RIFF", b"II*\x00\xff\xff", b"x"):
        assert image_header(junk) is None


def test_a_huge_png_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    # decoded, 20000 x 20000 took 2.3 GiB: more than a Pi 4 may have
    (tmp_path / "huge.png").write_bytes(_png_claiming(20000, 20000))
    decoded = []
    real = cv2.imdecode
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cv2, "imdecode", lambda *a: decoded.append(a) or real(*a))
        with pytest.raises(CameraError, match=r"huge\.png cannot be decoded: 20000x20000 pixels"):
            read_image(tmp_path / "huge.png")
    assert decoded == []


def test_a_large_jpeg_is_decoded_reduced(tmp_path: Path) -> None:
    img = np.zeros((600, 1000, 3), np.uint8)
    img[:, :500] = 255
    (tmp_path / "wide.jpg").write_bytes(cv2.imencode(".jpg", img)[1].tobytes())
    flags = []
    real = cv2.imdecode
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cv2, "imdecode", lambda data, f: flags.append(f) or real(data, f))
        small = read_image(tmp_path / "wide.jpg", max_side=300)
    assert flags == [cv2.IMREAD_REDUCED_COLOR_4]  # 1000 / 4 = 250: the decoder made it small
    assert small.shape == (150, 250, 3)
    assert small[:, :100].mean() > 200 and small[:, -100:].mean() < 50
    assert read_image(tmp_path / "wide.jpg").shape == (600, 1000, 3)  # under 4096: as it is


def test_a_large_png_is_made_smaller_after_decoding(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "wide.png"), np.full((500, 1000), 200, np.uint16) * 300)
    small = read_image(tmp_path / "wide.png", max_side=400)
    assert small.shape == (200, 400, 3) and small.dtype == np.uint8


def test_a_jpeg_too_large_even_reduced_is_refused(tmp_path: Path) -> None:
    jpeg = cv2.imencode(".jpg", np.zeros((16, 16, 3), np.uint8))[1].tobytes()
    (tmp_path / "wide.jpg").write_bytes(_sof_patched(jpeg, 60000, 100))
    with pytest.raises(CameraError, match=r"60000x100 pixels is too large"):
        read_image(tmp_path / "wide.jpg")
    progressive = cv2.imencode(
        ".jpg", np.zeros((16, 16, 3), np.uint8), [cv2.IMWRITE_JPEG_PROGRESSIVE, 1]
    )[1].tobytes()
    (tmp_path / "deep.jpg").write_bytes(_sof_patched(progressive, 10000, 10000))
    with pytest.raises(CameraError, match=r"10000x10000 pixels is too large"):
        read_image(tmp_path / "deep.jpg")


def test_a_png_cut_short_is_told_without_libpngs_own_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    good = cv2.imencode(".png", np.random.default_rng(0).integers(0, 255, (60, 80, 3), np.uint8))
    data = good[1].tobytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    with pytest.raises(CameraError, match=r"cut\.png is cut short"):
        read_image(tmp_path / "cut.png")
    assert capfd.readouterr().err == ""


def test_what_the_decoder_says_of_a_damaged_picture_goes_into_the_message(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    data = bytearray(
        cv2.imencode(".png", np.random.default_rng(1).integers(0, 255, (60, 80, 3), np.uint8))[1]
    )
    at = data.index(b"IDAT")
    length = int.from_bytes(data[at - 4 : at], "big")
    for i in range(at + 4 + 20, at + 4 + 120):  # damage the data, keep the checksum right
        data[i] ^= 0x55
    data[at + 4 + length : at + 8 + length] = struct.pack(
        ">I", zlib.crc32(data[at : at + 4 + length])
    )
    (tmp_path / "damaged.png").write_bytes(bytes(data))
    with pytest.raises(CameraError, match=r"damaged\.png is not a readable image.*libpng error"):
        read_image(tmp_path / "damaged.png")
    assert capfd.readouterr().err == ""


def test_other_output_on_stderr_while_decoding_is_kept(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cv2.imwrite(str(tmp_path / "p.png"), _solid(90))
    real = cv2.imdecode

    def talking(data: np.ndarray, flags: int) -> np.ndarray:
        os.write(2, b"another thread's line\n")
        os.write(2, b"libpng warning: iCCP: known incorrect sRGB profile\n")
        return real(data, flags)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cv2, "imdecode", talking)
        assert read_image(tmp_path / "p.png").shape == (48, 64, 3)
    assert capfd.readouterr().err == "another thread's line\n"


@given(
    st.sampled_from([b"\x89PNG\r\n\x1a\n", b"\xff\xd8", b"BM", b"RIFF\0\0\0\0WEBP", b"II*\x00"]),
    st.binary(max_size=64),
)
def test_any_bytes_behind_a_known_signature_give_a_header_or_none(
    start: bytes, rest: bytes
) -> None:
    from vision.camera import ImageHeader, image_header

    header = image_header(start + rest)
    assert header is None or isinstance(header, ImageHeader)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.img"
        path.write_bytes(start + rest)
        try:
            picture = read_image(path)
        except CameraError as exc:
            # refused in one printable line that says which file
            said = str(exc)
            assert str(path) in said and said.isprintable(), said
        else:
            assert picture.dtype == np.uint8 and picture.ndim == 3 and picture.shape[2] == 3
            assert picture.size > 0
        assert path.read_bytes() == start + rest  # only read, never touched
