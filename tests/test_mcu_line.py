"""Line faults: each kind happens at about its rate, and only what was asked happens."""

from __future__ import annotations

import itertools
import re

import pytest

from firmware_bridge.framing import Frame, FrameDecoder, FrameKind, encode_frame
from hardware_sim.mcu_line import MAX_OVERTAKEN, LineFaults

FRAMES = [encode_frame(FrameKind.DATA, 1, i % 256, 0, bytes([i % 256]) * 8) for i in range(2000)]


def test_clean_line_passes_everything_unchanged() -> None:
    line = LineFaults(seed=1)
    assert not line.active
    assert line.outgoing(FRAMES, 0.0) == b"".join(FRAMES)
    decoded = [Frame(FrameKind.DATA, 1, 0, 0, b"x")]
    assert line.incoming(decoded, 0.0) == decoded


def test_corruption_rate_per_byte() -> None:
    line = LineFaults(corrupt=0.01, seed=2)
    out = line.outgoing(FRAMES, 0.0)
    sent = b"".join(FRAMES)
    changed = sum(a != b for a, b in zip(out, sent, strict=True))
    assert changed == line.stats.bytes_corrupted
    assert 0.005 * len(sent) < changed < 0.02 * len(sent)


def test_drop_rate_per_frame_and_nothing_else() -> None:
    line = LineFaults(drop=0.05, seed=3)
    frames = FrameDecoder().feed(line.outgoing(FRAMES, 0.0))
    assert len(frames) == len(FRAMES) - line.stats.frames_dropped
    assert 50 < line.stats.frames_dropped < 150
    seqs = [f.seq for f in frames]
    assert all((b - a) % 256 >= 1 for a, b in itertools.pairwise(seqs))


def test_duplicates_follow_their_original() -> None:
    line = LineFaults(duplicate=0.1, seed=4)
    frames = FrameDecoder().feed(line.outgoing(FRAMES[:200], 0.0))
    assert len(frames) == 200 + line.stats.frames_duplicated > 200


def test_delayed_frames_come_later_and_out_of_order() -> None:
    line = LineFaults(delay=0.2, delay_ms=50, seed=5)
    now_bytes = line.outgoing(FRAMES[:60], 0.0)  # fewer than MAX_OVERTAKEN: all held to time
    held = line.stats.frames_delayed
    assert held > 5
    assert len(FrameDecoder().feed(now_bytes)) == 60 - held
    due = line.next_due()
    assert due is not None and 0.02 <= due <= 0.08
    later = line.outgoing([], 1.0)
    assert len(FrameDecoder().feed(later)) == held
    assert line.next_due() is None


@pytest.mark.parametrize("direction", ["outgoing", "incoming"])
def test_a_delayed_frame_is_never_overtaken_by_more_than_max_overtaken(direction) -> None:
    # the 8-bit sequence numbers must still tell a late frame from a new one
    line = LineFaults(delay=0.3, delay_ms=10_000, seed=8)
    sent = [Frame(FrameKind.DATA, 1, i % 256, 0, i.to_bytes(2, "little")) for i in range(3000)]
    got: list[Frame] = []
    for i in range(0, len(sent), 7):  # in batches, as a busy line delivers them
        batch = sent[i : i + 7]
        if direction == "outgoing":
            got += FrameDecoder().feed(line.outgoing([f.encode() for f in batch], 0.0))
        else:
            got += line.incoming(batch, 0.0)
    if direction == "outgoing":  # the last ones, held to their time
        got += FrameDecoder().feed(line.outgoing([], 20.0))
    else:
        got += line.incoming([], 20.0)
    assert line.stats.frames_delayed > 500
    order = [int.from_bytes(f.payload, "little") for f in got]
    assert sorted(order) == list(range(3000))  # nothing lost, nothing twice
    position = {n: i for i, n in enumerate(order)}
    overtaken_by = [
        sum(1 for later in order[: position[n]] if later > n) for n in range(0, 2900, 10)
    ]
    assert max(overtaken_by) == MAX_OVERTAKEN  # reordered, but only so far


def test_incoming_frames_get_the_same_treatment() -> None:
    line = LineFaults(drop=0.5, seed=6)
    frames = [Frame(FrameKind.DATA, 1, i, 0, b"") for i in range(200)]
    kept = line.incoming(frames, 0.0)
    assert len(kept) == 200 - line.stats.frames_dropped
    line = LineFaults(delay=1.0, seed=7)
    assert line.incoming(frames[:3], 0.0) == []
    line.forget()
    assert line.incoming([], 10.0) == []


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"corrupt": 1.5}, "corrupt must be a probability between 0 and 1, not 1.5"),
        ({"drop": -0.1}, "drop must be a probability between 0 and 1, not -0.1"),
        ({"delay_ms": -1}, "delay_ms must be between 0 and 10000"),
    ],
)
def test_rates_are_checked(bad: dict, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        LineFaults(**bad)
