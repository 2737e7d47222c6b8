"""Frames: layout, CRC, and the decoder's resynchronisation on noisy input."""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from firmware_bridge.errors import FrameError
from firmware_bridge.framing import (
    MAX_PAYLOAD,
    OVERHEAD,
    SYNC,
    Frame,
    FrameDecoder,
    FrameKind,
    crc16,
    encode_frame,
)

frames = st.one_of(
    st.builds(
        Frame,
        st.just(FrameKind.DATA),
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(0, 255),
        st.binary(max_size=MAX_PAYLOAD),
    ),
    # (every field given: hypothesis would fill a named tuple's defaulted ones with any int)
    st.builds(
        Frame,
        st.just(FrameKind.DATAGRAM),
        st.integers(0, 255),
        st.just(0),
        st.just(0),
        st.binary(max_size=60),
    ),
    st.builds(
        Frame,
        st.sampled_from([FrameKind.ACK, FrameKind.NAK]),
        st.integers(0, 255),
        st.just(0),
        st.integers(0, 255),
        st.just(b""),
    ),
    st.builds(
        Frame,
        st.sampled_from([FrameKind.RESET, FrameKind.RESET_ACK]),
        st.integers(1, 255),
        st.just(0),
        st.just(0),
        st.binary(min_size=4, max_size=4),
    ),
)


def test_crc_is_ccitt_false() -> None:
    assert crc16(b"123456789") == 0x29B1
    assert crc16(b"") == 0xFFFF


def test_layout_of_a_data_frame() -> None:
    raw = encode_frame(FrameKind.DATA, 7, 3, 9, b"\x01\x02")
    assert raw[0] == SYNC
    assert raw[1:6] == bytes([2, FrameKind.DATA, 7, 3, 9])
    assert raw[6:8] == b"\x01\x02"
    assert int.from_bytes(raw[8:10], "big") == crc16(raw[1:8])
    assert len(raw) == 2 + OVERHEAD


@pytest.mark.parametrize(
    ("kind", "seq", "ack", "payload"),
    [
        (FrameKind.DATA, 0, 0, bytes(MAX_PAYLOAD + 1)),
        (FrameKind.ACK, 1, 0, b""),
        (FrameKind.ACK, 0, 0, b"x"),
        (FrameKind.DATAGRAM, 0, 4, b"x"),
        (9, 0, 0, b""),
        (FrameKind.DATA, 256, 0, b""),
    ],
)
def test_encode_refuses_bad_headers(kind: int, seq: int, ack: int, payload: bytes) -> None:
    with pytest.raises(FrameError):
        encode_frame(kind, 1, seq, ack, payload)


@given(st.lists(frames, max_size=8), st.integers(1, 40))
@settings(deadline=None)
def test_round_trip_in_any_chunking(fs: list[Frame], chunk: int) -> None:
    wire = b"".join(f.encode() for f in fs)
    dec = FrameDecoder()
    got: list[Frame] = []
    for i in range(0, len(wire), chunk):
        got += dec.feed(wire[i : i + chunk])
    assert got == fs
    assert dec.corrupt == 0


@given(st.binary(max_size=2000))
@example(b"\xa5J\x00")  # a sync and a length of 74: a frame longer than what follows
@settings(max_examples=300, deadline=None)
def test_random_bytes_never_raise(noise: bytes) -> None:
    dec = FrameDecoder()
    for f in dec.feed(noise):
        assert isinstance(f.kind, FrameKind)
    # whatever the noise left half-parsed, valid frames after it are found
    tail = [Frame(FrameKind.DATA, 1, i, 0, bytes([i]) * 5) for i in range(3)]
    got = dec.feed(b"".join(f.encode() for f in tail) * 1)
    got += dec.feed(b"".join(f.encode() for f in tail))
    # noise that reads as the header of a frame longer than what follows keeps the decoder
    # waiting for bytes that are not coming: both ends of the link give that frame up when the
    # line goes idle (flush_stale), and the frames inside it come out then
    while dec.partial:
        got += dec.flush_stale()
    assert got[-3:] == tail


def test_truncated_frame_does_not_hide_the_next_one() -> None:
    a = encode_frame(FrameKind.DATA, 1, 0, 0, b"A" * 40)
    b = encode_frame(FrameKind.DATA, 1, 1, 0, b"B")
    dec = FrameDecoder()
    # a cut short after 10 bytes (an unplug, a dropped write), then b
    out = dec.feed(a[:10] + b)
    out += dec.feed(b"")
    # b sits inside the 40-byte window a promised; it is found once enough bytes came
    out += dec.feed(encode_frame(FrameKind.DATAGRAM, 0, 0, 0, bytes(40)))
    assert Frame(FrameKind.DATA, 1, 1, 0, b"B") in out
    assert dec.corrupt >= 1


def test_single_byte_corruption_is_always_caught() -> None:
    rng = random.Random(3)
    raw = encode_frame(FrameKind.DATA, 2, 5, 6, bytes(range(30)))
    for i in range(1, len(raw)):
        for _ in range(8):
            bad = bytearray(raw)
            bad[i] ^= rng.randrange(1, 256)
            dec = FrameDecoder()
            assert dec.feed(bytes(bad)) == []
    good = FrameDecoder().feed(raw)
    assert len(good) == 1


@given(st.lists(frames, min_size=1, max_size=20), st.randoms(use_true_random=False))
@settings(max_examples=100, deadline=None)
def test_corrupted_stream_yields_only_sent_frames(fs: list[Frame], rnd: random.Random) -> None:
    wire = bytearray(b"".join(f.encode() for f in fs))
    for i in range(len(wire)):
        if rnd.random() < 0.02:
            wire[i] ^= rnd.randrange(1, 256)
    got = FrameDecoder().feed(bytes(wire))
    # every frame that comes out is one that went in, in order (a CRC-16 miss is ~1/65536
    # per multi-byte-corrupted frame; the seeded randoms keep this deterministic)
    it = iter(fs)
    assert all(any(g == f for f in it) for g in got)


def test_take_errors_counts_since_last_call() -> None:
    dec = FrameDecoder()
    raw = bytearray(encode_frame(FrameKind.DATA, 1, 0, 0, b"xyz"))
    raw[7] ^= 0xFF
    dec.feed(bytes(raw))
    assert dec.take_errors() >= 1
    assert dec.take_errors() == 0


def test_a_corrupted_length_is_given_up_by_flush_stale() -> None:
    good = encode_frame(FrameKind.DATA, 1, 0, 0, b"abc")
    bad = bytearray(good)
    bad[1] = 150  # the length now promises 150 bytes that will never come
    dec = FrameDecoder()
    assert dec.feed(bytes(bad)) == []
    assert dec.partial
    assert dec.flush_stale() == []
    assert dec.take_errors() >= 1
    # the frames that follow are found normally
    assert dec.feed(good) == [Frame(FrameKind.DATA, 1, 0, 0, b"abc")]
    assert dec.flush_stale() == []


def test_noise_between_frames_counts_as_an_error() -> None:
    dec = FrameDecoder()
    good = encode_frame(FrameKind.ACK, 1, 0, 3)
    dec.feed(good)
    assert dec.take_errors() == 0
    # a frame whose sync byte was hit leaves only noise behind
    dec.feed(b"\x00" + good[1:])
    assert dec.take_errors() == 1
