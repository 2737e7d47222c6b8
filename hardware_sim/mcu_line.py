"""Faults on the simulated MCU's serial line: byte corruption, dropped, duplicated and
delayed frames, applied in both directions (to what the MCU sends and to what it receives).

Rates are probabilities: ``corrupt`` per byte, the others per frame. A delayed frame is held
back for about ``delay_ms`` while later frames go ahead of it, as a congested USB-serial
bridge might do, but never behind more than :data:`MAX_OVERTAKEN` later frames: the link's
8-bit sequence numbers tell a late frame from a new one only while fewer than 128 newer frames
have gone past it (a serial line itself never reorders, so the protocol relies on that), and a
frame held for 60 ms on a fast pty could otherwise come back a whole sequence cycle late and be
taken for a new one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from firmware_bridge.framing import Frame

T = TypeVar("T")

__all__ = ["MAX_OVERTAKEN", "LineFaults", "LineStats"]

#: a held frame is let through at the latest when this many later frames have passed it
MAX_OVERTAKEN = 64


@dataclass
class LineStats:
    bytes_corrupted: int = 0
    frames_dropped: int = 0
    frames_duplicated: int = 0
    frames_delayed: int = 0


@dataclass
class LineFaults:
    corrupt: float = 0.0
    drop: float = 0.0
    duplicate: float = 0.0
    delay: float = 0.0
    delay_ms: float = 30.0
    seed: int | None = None
    stats: LineStats = field(default_factory=LineStats)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._late_tx = _Held[bytes]()
        self._late_rx = _Held[Frame]()
        self.validate()

    def validate(self) -> None:
        for name in ("corrupt", "drop", "duplicate", "delay"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a probability between 0 and 1, not {v}")
        if not 0 <= self.delay_ms <= 10_000:
            raise ValueError("delay_ms must be between 0 and 10000")

    @property
    def active(self) -> bool:
        return bool(self.corrupt or self.drop or self.duplicate or self.delay)

    def corrupt_bytes(self, data: bytes) -> bytes:
        """Flip random bits in about ``corrupt`` of the bytes."""
        if not self.corrupt or not data:
            return data
        out = bytearray(data)
        rng = self.rng
        for i in range(len(out)):
            if rng.random() < self.corrupt:
                out[i] ^= rng.randrange(1, 256)
                self.stats.bytes_corrupted += 1
        return bytes(out)

    def _fate(self) -> int:
        """How many copies of a frame go through now: 0 dropped, 1, 2 duplicated, -1 delayed."""
        rng = self.rng
        if self.drop and rng.random() < self.drop:
            self.stats.frames_dropped += 1
            return 0
        if self.delay and rng.random() < self.delay:
            self.stats.frames_delayed += 1
            return -1
        if self.duplicate and rng.random() < self.duplicate:
            self.stats.frames_duplicated += 1
            return 2
        return 1

    def _later(self, now: float) -> float:
        return now + self.delay_ms / 1000 * (0.5 + self.rng.random())

    def outgoing(self, frames: list[bytes], now: float) -> bytes:
        """The bytes to write now for these frames (plus any delayed ones now due)."""
        if not self.active and not self._late_tx:
            return b"".join(frames)
        passed = self._pass(frames, self._late_tx, now)  # (T is bytes, not join's Buffer)
        return self.corrupt_bytes(b"".join(passed))

    def incoming(self, frames: list[Frame], now: float) -> list[Frame]:
        """The received frames as the MCU gets them (plus any delayed ones now due)."""
        if not self.active and not self._late_rx:
            return frames
        return self._pass(frames, self._late_rx, now)

    def _pass(self, frames: list[T], held: _Held[T], now: float) -> list[T]:
        out: list[T] = []
        for f in frames:
            fate = self._fate()
            if fate < 0:
                held.hold(f, self._later(now))
            for _ in range(fate):
                out.append(f)
                held.went_past(out)
        held.release_due(now, out)
        return out

    def next_due(self) -> float | None:
        """When a delayed frame falls due."""
        times = [q.next_due() for q in (self._late_tx, self._late_rx) if q]
        return min(times) if times else None

    def forget(self) -> None:
        """Drop delayed frames (the line was unplugged)."""
        self._late_tx.clear()
        self._late_rx.clear()


class _Held(Generic[T]):
    """Frames held back in one direction, each until its time or until :data:`MAX_OVERTAKEN`
    later frames have gone past it."""

    def __init__(self) -> None:
        # (due, frames passed when it was held, frame), in the order held
        self._items: list[tuple[float, int, T]] = []
        self._passed = 0

    def __bool__(self) -> bool:
        return bool(self._items)

    def hold(self, item: T, due: float) -> None:
        self._items.append((due, self._passed, item))

    def went_past(self, out: list[T]) -> None:
        """One more frame went through; lets the oldest held frames through after it once
        too many have overtaken them."""
        self._passed += 1
        items = self._items
        while items and self._passed - items[0][1] >= MAX_OVERTAKEN:
            out.append(items.pop(0)[2])
            self._passed += 1

    def release_due(self, now: float, out: list[T]) -> None:
        """Appends the held frames whose time has come, earliest first."""
        if not self._items or self.next_due() > now:
            return
        due = sorted((x for x in self._items if x[0] <= now), key=lambda x: x[0])
        self._items = [x for x in self._items if x[0] > now]
        for x in due:
            out.append(x[2])
            self._passed += 1

    def next_due(self) -> float:
        return min(x[0] for x in self._items)

    def clear(self) -> None:
        self._items.clear()
