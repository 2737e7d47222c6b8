"""The simulator's overhead camera: a camera source that renders the table.

:class:`SimCamera` is a :class:`vision.camera.CameraSource` like a USB or Pi camera, so the
vision pipeline reads it through the same code. What lies on the table is a
:class:`vision.rendering.table_scene.TableLayout` that the simulator changes while the game runs
(:meth:`SimCamera.set_layout`, :meth:`SimCamera.change_seat`); every :meth:`read` renders the
layout as it is at that moment, through the same renderer the tile model is trained on, with
fresh sensor noise per frame. :meth:`SimCamera.unplug` and :meth:`SimCamera.replug` make it
vanish and come back, to exercise the product's handling of a lost camera.

The table as laid (before the camera's faults) is kept while the layout stays the same
(:data:`LAID_KEPT` layouts, the latest used), so only the first frame of a layout pays for
laying it: the frames after it only warp it and add their faults.

>>> from controller.rules.tiles import Tile
>>> camera = SimCamera()
>>> layout = camera.change_seat(0, flowers=(Tile.PLUM,))
>>> camera.read().image.shape
(960, 1280, 3)
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, MutableMapping
from typing import Any

import numpy as np

from controller.errors import CameraError
from vision.calibration import Calibration
from vision.camera import CameraLost, CameraSource
from vision.rendering.render import Camera
from vision.rendering.table_scene import LaidTable, TableFrame, TableLayout, TableScene

DEFAULT_FAULTS: dict[str, float] = {"noise": 2.0, "blur": 0.5, "gradient": 0.15}
"""A decent camera's picture: a little sensor noise and softness, light falling off a bit."""


MAX_TILT = 60.0
"""The most the simulated camera may lean (degrees): more and the table leaves the picture."""

LAID_KEPT = 2
"""How many laid tables (the layouts' pictures before the camera's faults, about 22 MB each
for the default table) a camera keeps, the latest used."""

_QUANTILES = 1 << 16


@functools.cache
def _normal_quantiles() -> np.ndarray:
    """The standard normal's 65536 quantiles at the middles of equal steps of probability,
    scaled to a variance of exactly 1 (``float32``, read-only)."""
    dist = statistics.NormalDist()
    q = np.array([dist.inv_cdf((i + 0.5) / _QUANTILES) for i in range(_QUANTILES)])
    q /= np.sqrt(np.mean(q * q))
    q = q.astype(np.float32)
    q.setflags(write=False)
    return q


_NOISE_ROWS = 32
"""The quick noise is drawn and added this many rows at a time (the pieces stay in cache)."""


def _quick_noise(rng: np.random.Generator) -> Callable[[np.ndarray, float], None]:
    """Sensor noise drawn from ``rng`` several times faster than ``rng.normal``, added in
    place: a random 16-bit quantile of the normal per value (a normal to within 1/65536 of
    probability, cut off past 4.2 sigma)."""

    def add_noise(image: np.ndarray, sigma: float) -> None:
        table = _normal_quantiles() * np.float32(sigma)
        for top in range(0, image.shape[0], _NOISE_ROWS):
            rows = image[top : top + _NOISE_ROWS]
            picks = rng.integers(0, _QUANTILES, size=rows.shape, dtype=np.uint16)
            rows += np.take(table, picks)

    return add_noise


def _laid_key(layout: TableLayout) -> tuple[Any, ...]:
    """What the laid table depends on (the arms are drawn over each frame)."""
    return layout.seats, layout.discards, layout.walls


def _view_key(view: Camera) -> tuple[Any, ...]:
    """Everything a frame takes from ``view``, as a value (its homography is an array)."""
    out: list[Any] = []
    for f in dataclasses.fields(view):
        value = getattr(view, f.name)
        if isinstance(value, np.ndarray):
            value = (value.shape, value.dtype.str, value.tobytes())
        out.append(value)
    return tuple(out)


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _check_fault(name: str, value: Any) -> None:
    """A picture fault's value as the renderer takes it, or :class:`CameraError`."""
    if name == "colour":
        ok = (
            isinstance(value, tuple | list)
            and len(value) == 3
            and all(_number(v) and v >= 0 for v in value)
        )
        if not ok:
            raise CameraError(
                f"the simulated camera's colour is three numbers 0 or more (a BGR white "
                f"balance), not {value!r}"
            )
    elif name == "jpeg":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
            raise CameraError(
                f"the simulated camera's jpeg is a quality from 1 to 100 (0: none), not {value!r}"
            )
    elif not _number(value) or value < 0:
        raise CameraError(f"the simulated camera's {name} is a number 0 or more, not {value!r}")


class SimCamera(CameraSource):
    """A rendered overhead camera.

    ``scene`` is the table (size, markers, felt, tile set; default a 900 mm table); ``size``
    the picture; ``tilt``, ``turn`` and ``zoom`` how the camera is mounted (see
    :meth:`vision.rendering.table_scene.TableScene.camera`); ``faults`` the picture's faults
    (default :data:`DEFAULT_FAULTS`); ``seed`` makes the frames reproducible; ``layout`` what
    lies on the table at first.

    ``frame_cache`` is a store of rendered frames that cameras may share (a test suite's, so
    that each frame is rendered once however many tests read it). A frame is found there by
    everything it is drawn from: the scene (the same object), the view, the seed, the frame's
    number, its layout and whether the frame before showed the same layout; so a camera gives
    the very frames with it that it gives without. The frames kept are read-only, and every
    frame taken from it has its own copy of the picture.
    """

    def __init__(
        self,
        scene: TableScene | None = None,
        *,
        size: tuple[int, int] = (1280, 960),
        tilt: float = 8.0,
        turn: float = 0.0,
        zoom: float = 0.85,
        faults: dict[str, Any] | None = None,  # checked here: CameraFaults' keys and values
        seed: int = 0,
        layout: TableLayout | None = None,
        frame_cache: MutableMapping[Hashable, TableFrame] | None = None,
    ) -> None:
        super().__init__("simulated camera")
        try:
            width, height = size
        except (TypeError, ValueError):
            raise CameraError(
                f"the simulated camera's size is (width, height), not {size!r}"
            ) from None
        if not (isinstance(width, int) and isinstance(height, int) and min(width, height) >= 16):
            raise CameraError(
                "the simulated camera's size is two whole numbers of pixels, 16 or more, "
                f"not {size}"
            )
        for name, value, low, high in (
            ("tilt", tilt, -MAX_TILT, MAX_TILT),
            ("turn", turn, -math.inf, math.inf),
            ("zoom", zoom, 0.0, math.inf),
        ):
            if not _number(value) or not low <= value <= high or (name == "zoom" and not value):
                what = {"tilt": f"from {-MAX_TILT:g} to {MAX_TILT:g} degrees", "turn": "of degrees"}
                raise CameraError(
                    f"the simulated camera's {name} must be a number "
                    f"{what.get(name, 'above 0')}, not {value!r}"
                )
        faults = DEFAULT_FAULTS if faults is None else faults
        known = {f.name for f in dataclasses.fields(Camera)} - {"size", "homography", "view"}
        unknown = sorted(set(faults) - known)
        if unknown:
            raise CameraError(
                f"the simulated camera has no fault {', '.join(map(repr, unknown))}; it has "
                f"{', '.join(sorted(known))}"
            )
        for name, value in faults.items():
            _check_fault(name, value)
        if layout is not None and not isinstance(layout, TableLayout):
            raise CameraError("the simulated camera shows a TableLayout")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise CameraError(
                f"the simulated camera's seed is a whole number 0 or more, not {seed!r}"
            )
        self.scene = scene or TableScene(seed=seed)
        self.seed = int(seed)
        self.view: Camera = self.scene.camera(size, tilt=tilt, turn=turn, zoom=zoom, **faults)
        self._layout = layout or TableLayout()
        # reentrant: a change given to update() may read the layout it changes
        self._lock = threading.RLock()
        self._plugged = True
        self._last: TableFrame | None = None
        self._rendered = 0
        # the laid tables kept, the latest used last, for the scene and view they were laid for
        self._laid: OrderedDict[tuple[Any, ...], LaidTable] = OrderedDict()
        self._laid_for: tuple[TableScene, Camera] | None = None
        self._shown: TableLayout | None = None  # the layout of the latest frame
        self._frame_cache = frame_cache

    # -- what lies on the table ----------------------------------------------------------------

    @property
    def layout(self) -> TableLayout:
        with self._lock:
            return self._layout

    def set_layout(self, layout: TableLayout) -> None:
        """Lay the table out anew (seen from the next frame on)."""
        if not isinstance(layout, TableLayout):
            raise CameraError("the simulated camera shows a TableLayout")
        with self._lock:
            self._layout = layout

    def update(self, change: Callable[[TableLayout], TableLayout]) -> TableLayout:
        """Apply ``change`` to the layout atomically (other threads see before or after)."""
        with self._lock:
            changed = change(self._layout)
            if not isinstance(changed, TableLayout):
                # kept, every frame after would fail to render
                raise CameraError(
                    f"a change to the table gives a TableLayout, not {type(changed).__name__}"
                )
            self._layout = changed
            return changed

    def change_seat(self, seat: int, **changes: Any) -> TableLayout:
        """Change one seat's part (``flowers=…``, ``melds=…``, ``open_tiles=…``)."""
        return self.update(lambda layout: layout.with_seat(seat, **changes))

    def clear(self) -> None:
        """An empty table (the table swallows the tiles between hands)."""
        self.set_layout(TableLayout())

    # -- faults --------------------------------------------------------------------------------

    def unplug(self) -> None:
        """The camera vanishes: reads fail with :class:`~vision.camera.CameraLost`, and it
        cannot be reopened until :meth:`replug`."""
        self._plugged = False

    def replug(self) -> None:
        self._plugged = True

    # -- truth, for checking -------------------------------------------------------------------

    @property
    def last_frame(self) -> TableFrame | None:
        """The last frame rendered, with where every tile truly lies."""
        return self._last

    def true_calibration(self) -> Calibration:
        """The exact calibration of this camera (a real installation measures it with
        ``mahjong-table calibrate`` instead)."""
        return self.scene.true_calibration(self.view)

    def render(self, layout: TableLayout | None = None) -> TableFrame:
        """Render a frame of ``layout`` (default the current one) without reading it. It
        takes the next frame of the seeded sequence, as a read does: the frames read after it
        differ from those of a camera that was only read.

        A frame of another layout than the frame before is the scene's
        :meth:`~vision.rendering.table_scene.TableScene.render` with the frame's seed; the frames
        after it that show the same layout reuse the laid table and draw their sensor noise a
        quicker way (the same spread, other values), so the same seed and the same layouts
        in the same order give the same frames."""
        with self._lock:  # two threads rendering at once must not share a frame's noise
            number = self._rendered
            self._rendered += 1
            layout = layout or self._layout
            again = layout == self._shown
            self._shown = layout
            scene, view = self.scene, self.view
            if not self._laid_for_is(scene, view):
                self._laid.clear()
                self._laid_for = (scene, view)
            key = _laid_key(layout)
            laid = self._laid.get(key)
            if laid is not None:
                self._laid.move_to_end(key)
        cache = self._frame_cache
        kept_as = self._frame_key(scene, view, number, layout, again)
        if cache is not None and kept_as is not None:
            kept = cache.get(kept_as)
            if kept is not None:
                return dataclasses.replace(kept, image=kept.image.copy())
        rng = np.random.default_rng([self.seed, number])
        if laid is None:
            try:
                laid = scene.lay(layout, view)
            except BaseException:
                with self._lock:
                    if self._shown is layout:
                        self._shown = None  # no frame of it was drawn
                raise
            for truth in laid.truths:  # shared by the frames: none may move another's
                truth.quad.setflags(write=False)
            with self._lock:
                if self._laid_for_is(scene, view):
                    self._laid[key] = laid
                    while len(self._laid) > LAID_KEPT:
                        self._laid.popitem(last=False)
        add_noise = _quick_noise(rng) if again else None
        frame = scene.view(layout, laid, view, rng=rng, add_noise=add_noise)
        if cache is not None and kept_as is not None:
            image = frame.image.copy()  # the caller's picture is theirs to draw on
            image.setflags(write=False)
            cache[kept_as] = dataclasses.replace(frame, image=image)
        return frame

    def _frame_key(
        self, scene: TableScene, view: Camera, number: int, layout: TableLayout, again: bool
    ) -> tuple[Any, ...] | None:
        """Where the frame cache keeps this frame; None without one, or for a layout that
        cannot be a key (an arm's reach given as a list)."""
        if self._frame_cache is None:
            return None
        key = (scene, _view_key(view), self.seed, number, layout, again)
        try:
            hash(key)
        except TypeError:
            return None
        return key

    def _laid_for_is(self, scene: TableScene, view: Camera) -> bool:
        """Whether the laid tables kept were laid by ``scene`` for ``view`` (both may be
        replaced; held under the lock)."""
        return (
            self._laid_for is not None and self._laid_for[0] is scene and self._laid_for[1] is view
        )

    # -- the camera source ---------------------------------------------------------------------

    def _open(self) -> None:
        if not self._plugged:
            raise CameraError("the simulated camera is unplugged")

    def _grab(self) -> np.ndarray:
        if not self._plugged:
            raise CameraLost("the simulated camera stopped delivering frames (unplugged)")
        self._last = self.render()
        return self._last.image

    def _close(self) -> None:
        pass
