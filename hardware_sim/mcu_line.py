"""Faults on the simulated MCU's serial line: byte corruption, dropped, duplicated and
delayed frames, applied in both directions (to what the MCU sends and to what it receives).

Rates are probabilities: ``corrupt`` per byte, the others per frame. A delayed frame is held
back for about ``delay_ms`` while later frames go ahead of it, as a congested USB-serial
bridge might do.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from firmware_bridge.framing import Frame

__all__ = ["LineFaults", "LineStats"]


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
        self._order = 0
        self._late_tx: list[tuple[float, int, bytes]] = []
        self._late_rx: list[tuple[float, int, Frame]] = []
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
        parts: list[bytes] = []
        for raw in frames:
            fate = self._fate()
            if fate < 0:
                self._order += 1
                heapq.heappush(self._late_tx, (self._later(now), self._order, raw))
            else:
                parts.extend([raw] * fate)
        while self._late_tx and self._late_tx[0][0] <= now:
            parts.append(heapq.heappop(self._late_tx)[2])
        return self.corrupt_bytes(b"".join(parts))

    def incoming(self, frames: list[Frame], now: float) -> list[Frame]:
        """The received frames as the MCU gets them (plus any delayed ones now due)."""
        out: list[Frame] = []
        for f in frames:
            fate = self._fate()
            if fate < 0:
                self._order += 1
                heapq.heappush(self._late_rx, (self._later(now), self._order, f))
            else:
                out.extend([f] * fate)
        while self._late_rx and self._late_rx[0][0] <= now:
            out.append(heapq.heappop(self._late_rx)[2])
        return out

    def next_due(self) -> float | None:
        """When a delayed frame falls due."""
        times = [q[0][0] for q in (self._late_tx, self._late_rx) if q]
        return min(times) if times else None

    def forget(self) -> None:
        """Drop delayed frames (the line was unplugged)."""
        self._late_tx.clear()
        self._late_rx.clear()
