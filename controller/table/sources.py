"""The producers: each turns what one piece of hardware reports into input events on the
runtime's bus. None of them decides anything; the controller does.

- :func:`device_events` listens to a :class:`~firmware_bridge.table_device.TableDevice`.
- :func:`panel_events` listens to a :class:`~firmware_bridge.seat_panel.SeatPanel`.
- :class:`CameraFeed` turns the vision pipeline's updates into
  :class:`~controller.table.events.CameraChanged` and the camera's coming and going into
  :class:`~controller.table.events.CameraStatus`; :class:`CameraLoop` runs it over a camera.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from controller.table import events as ev

__all__ = ["CameraFeed", "CameraLoop", "device_events", "meld_json", "panel_events"]

log = logging.getLogger(__name__)

Put = Callable[[ev.Event], None]


def device_events(device: Any, put: Put, clock: Callable[[], float]) -> Callable[[], None]:
    """Forward the MCU's events; returns a function that stops forwarding."""

    def forward(e: Any) -> None:
        put(
            ev.DeviceEvent(
                time=clock(),
                kind=e.kind,
                data=dict(e.data),
                number=e.number,
                boot_id=e.boot_id,
            )
        )

    device.add_listener(forward)
    return lambda: device.remove_listener(forward)


def panel_events(panel: Any, put: Put, clock: Callable[[], float]) -> Callable[[], None]:
    """Forward the seat panel's presses; returns a function that stops forwarding."""

    def forward(press: Any) -> None:
        put(ev.SeatPressed(time=clock(), seat=press.seat, button=press.button, long=press.long))

    panel.add_listener(forward)
    return lambda: panel.remove_listener(forward)


def meld_json(meld: Any) -> ev.MeldJson:
    """A camera's :class:`~vision.melds.MeldView` (or a rules Meld) as the events write it."""
    from controller.rules.tiles import format_tiles

    tiles = format_tiles(meld.tiles) if meld.tiles else ""
    return ev.MeldJson(
        kind=str(getattr(meld.kind, "value", meld.kind)), tiles=tiles, source=meld.source
    )


def _tiles(tiles: Any) -> str:
    return " ".join(t.code for t in tiles)


class CameraFeed:
    """Turns :class:`vision.pipeline.TableUpdate` values into events. ``reset()`` (the
    controller's, at each new hand) is carried out before the next frame is read, on the
    thread that reads frames, so the pipeline is only ever touched by one thread."""

    def __init__(self, pipeline: Any, put: Put, clock: Callable[[], float]) -> None:
        self.pipeline = pipeline
        self.put = put
        self.clock = clock
        self._reset = threading.Event()
        self._live: bool | None = None
        self._last: tuple[Any, Any] | None = None  # the last frame's image and reading
        self._last_lock = threading.Lock()

    def reset(self) -> None:
        self._reset.set()

    def process(self, frame: Any) -> Any:
        """Read one frame through the pipeline and put its settled changes on the bus."""
        if self._reset.is_set():
            self._reset.clear()
            self.pipeline.reset()
        update = self.pipeline.process(frame)
        self.keep(frame, update)
        self.live(True)
        self.changes(update)
        return update

    def keep(self, frame: Any, update: Any) -> None:
        """Keep the frame and what was read in it, for :meth:`view_jpeg`."""
        image = getattr(frame, "image", frame)
        with self._last_lock:
            self._last = (image, update.reading)

    def view_jpeg(self, max_side: int = 960, quality: int = 80) -> bytes | None:
        """The last frame with each tile read drawn over it (green: sure, orange: to
        confirm), as a JPEG; None before the first frame. For the dashboard's camera view:
        players trust what they can see the camera saw."""
        import cv2
        import numpy as np

        from vision.labels import label_name

        with self._last_lock:
            last = self._last
        if last is None:
            return None
        image, reading = last
        out = image.copy()
        h, w = out.shape[:2]
        calibration = self.pipeline.calibration
        for t in reading.reads:
            quad = calibration.to_image(np.asarray(t.quad, np.float64), (w, h))
            colour = (0, 140, 255) if t.needs_confirmation else (0, 200, 0)
            pts = np.round(quad).astype(np.int32)
            cv2.polylines(out, [pts], True, colour, 2)
            x, y = int(pts[:, 0].min()), int(pts[:, 1].min())
            cv2.putText(
                out,
                label_name(t.label),
                (x, max(12, y - 4)),
                cv2.FONT_HERSHEY_SIMPLEX,
                0.5,
                colour,
                2,
            )
        scale = max_side / max(h, w)
        if scale < 1:
            out = cv2.resize(
                out, (round(w * scale), round(h * scale)), interpolation=cv2.INTER_AREA
            )
        ok, buf = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, quality])
        return buf.tobytes() if ok else None

    def changes(self, update: Any) -> None:
        for change in update.changes:
            view = update.views[change.seat]
            previous = change.previous
            if previous is not None:
                previous = meld_json(previous) if hasattr(previous, "tiles") else previous.code
            self.put(
                ev.CameraChanged(
                    time=self.clock(),
                    seat=change.seat,
                    kind=change.kind.value,
                    frame=change.frame,
                    flower=change.flower.code if change.flower is not None else None,
                    meld=meld_json(change.meld) if change.meld is not None else None,
                    previous=previous,
                    open_tiles=_tiles(change.open_tiles),
                    flagged=change.needs_confirmation,
                    note=change.note,
                    view_flowers=_tiles(view.flowers),
                    view_melds=[meld_json(m) for m in view.melds],
                    view_open=_tiles(view.open_tiles),
                    view_notes=list(view.notes),
                )
            )

    def live(self, live: bool, message: str = "") -> None:
        """Say when the camera comes or goes (only changes are put on the bus)."""
        if live != self._live:
            self._live = live
            self.put(ev.CameraStatus(time=self.clock(), live=live, message=message))


class _Recording:
    """A camera that keeps the last frame it gave (for the dashboard's camera view)."""

    def __init__(self, camera: Any) -> None:
        self.camera = camera
        self.last: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.camera, name)

    def read(self) -> Any:
        frame = self.camera.read()
        self.last = frame
        return frame


class CameraLoop:
    """Reads a camera continuously through a :class:`CameraFeed` on its own thread (a real
    table); a camera that goes away is reported and waited for."""

    def __init__(self, feed: CameraFeed, camera: Any, *, retry_s: float = 2.0) -> None:
        self.feed = feed
        self.camera = camera
        self.retry_s = retry_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="camera-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        from controller.errors import VisionError

        def on_error(exc: VisionError) -> None:
            self.feed.live(False, str(exc))

        pipeline = self.feed.pipeline
        recording = _Recording(self.camera)
        try:
            for update in pipeline.watch(
                recording,  # type: ignore[arg-type]
                retry_s=self.retry_s,
                on_error=on_error,
                should_stop=self._stop.is_set,
            ):
                if self.feed._reset.is_set():
                    self.feed._reset.clear()
                    pipeline.reset()
                if recording.last is not None:
                    self.feed.keep(recording.last, update)
                self.feed.live(True)
                self.feed.changes(update)
        except VisionError as exc:  # the model failed: every frame would
            log.error("the camera loop stopped: %s", exc)
            self.error = exc
            self.feed.live(False, str(exc))
