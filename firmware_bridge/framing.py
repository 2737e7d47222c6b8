"""Frames on the serial line: the byte layout, its CRC, and a decoder that finds frames in a
noisy byte stream and resynchronises after anything corrupt or cut short.

A frame (see ``docs/protocol.md``)::

    0xA5  LEN  KIND  EPOCH  SEQ  ACK  PAYLOAD[LEN]  CRC_HI  CRC_LO

``CRC`` is CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF) over the bytes from
``LEN`` to the end of the payload, sent big-endian. The header is checked before the decoder
waits for a payload, so a sync byte found inside noise rarely stalls it.
"""

from __future__ import annotations

import binascii
import enum
import struct
from typing import NamedTuple

from firmware_bridge.errors import FrameError

__all__ = [
    "HEADER_SIZE",
    "MAX_PAYLOAD",
    "OVERHEAD",
    "SYNC",
    "Frame",
    "FrameDecoder",
    "FrameKind",
    "crc16",
    "encode_frame",
]

SYNC = 0xA5
HEADER_SIZE = 6  # sync, len, kind, epoch, seq, ack
OVERHEAD = HEADER_SIZE + 2
MAX_PAYLOAD = 200


class FrameKind(enum.IntEnum):
    """What a frame carries; see ``docs/protocol.md`` for the rules of each."""

    #: a message delivered reliably and in order (numbered by ``seq``)
    DATA = 0
    #: a message sent once, never acknowledged (periodic status, keepalive)
    DATAGRAM = 1
    #: "I have every DATA frame before ``ack``"
    ACK = 2
    #: like ACK, and "please resend from ``ack`` now"
    NAK = 3
    #: start a new link epoch: both sides renumber from zero
    RESET = 4
    #: the answer to RESET, echoing its epoch and payload
    RESET_ACK = 5


def crc16(data: bytes | bytearray | memoryview, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE of *data* (``crc16(b"123456789") == 0x29B1``)."""
    return binascii.crc_hqx(data, crc)


# FrameKind(k) costs a call into the enum machinery; indexing this (values 0-5 in order) is a
# tuple lookup
_KINDS = tuple(FrameKind)
_SYNC_BYTE = bytes((SYNC,))
_HEAD = struct.Struct(">BBBBB")  # len, kind, epoch, seq, ack
_CRC = struct.Struct(">H")


class Frame(NamedTuple):
    """One decoded frame. ``seq`` is meaningful for DATA only, ``ack`` for DATA, ACK and NAK.
    (A named tuple: a decoder makes one per frame, several times faster than a dataclass.)"""

    kind: FrameKind
    epoch: int = 0
    seq: int = 0
    ack: int = 0
    payload: bytes = b""

    def encode(self) -> bytes:
        return encode_frame(self.kind, self.epoch, self.seq, self.ack, self.payload)


def _header_ok(length: int, kind: int, seq: int, ack: int) -> bool:
    """The header rules of ``docs/protocol.md``: cheap checks that reject most false syncs."""
    if length > MAX_PAYLOAD:
        return False
    if kind == 0:  # DATA
        return True
    if kind == 2 or kind == 3:  # ACK, NAK
        return length == 0 and seq == 0
    if kind == 1 or kind == 4 or kind == 5:  # DATAGRAM, RESET, RESET_ACK
        return seq == 0 and ack == 0
    return False


def encode_frame(kind: int, epoch: int, seq: int, ack: int, payload: bytes = b"") -> bytes:
    """The bytes of one frame. Raises :class:`FrameError` for a field out of range."""
    length = len(payload)
    if length > MAX_PAYLOAD:
        raise FrameError(f"frame payload of {length} bytes exceeds {MAX_PAYLOAD}")
    if not (0 <= epoch <= 0xFF and 0 <= seq <= 0xFF and 0 <= ack <= 0xFF):
        for name, value in (("epoch", epoch), ("seq", seq), ("ack", ack)):
            if not 0 <= value <= 0xFF:
                raise FrameError(f"frame {name} {value} is not a byte")
    if not _header_ok(length, kind, seq, ack):
        raise FrameError(f"invalid frame header: kind {kind}, seq {seq}, ack {ack}")
    body = _HEAD.pack(length, kind, epoch, seq, ack) + payload
    return _SYNC_BYTE + body + _CRC.pack(binascii.crc_hqx(body, 0xFFFF))


class FrameDecoder:
    """Turns a byte stream into frames, whatever the stream holds.

    Feed it bytes as they arrive; it returns the complete, valid frames found so far and keeps
    any partial frame for the next call. A frame that fails its header or CRC check costs only
    its sync byte: scanning restarts at the next byte, so a valid frame that began inside a
    corrupt or truncated one is still found. Never raises on input.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        #: frames that failed the header or CRC check (or were given up) since creation
        self.corrupt = 0
        #: bytes thrown away while looking for a frame
        self.discarded = 0
        #: valid frames returned
        self.frames = 0
        self._fresh_errors = 0

    def take_errors(self) -> int:
        """How many corrupt frames were seen since the last call (and reset that count)."""
        n, self._fresh_errors = self._fresh_errors, 0
        return n

    @property
    def partial(self) -> bool:
        """True while bytes of an incomplete frame are waiting for the rest."""
        return bool(self._buf)

    def flush_stale(self) -> list[Frame]:
        """Give up on the incomplete frame at the head of the buffer (call this when the line
        has been idle for a while: a corrupted length byte would otherwise make the decoder
        wait for bytes that are not coming). Counts as a corrupt frame; returns any valid
        frames found in the rest of the buffer."""
        if not self._buf:
            return []
        self._reject(1)
        del self._buf[:1]
        return self.feed(b"")

    def reset(self) -> None:
        """Forget any partial frame (after the port was reopened)."""
        self.discarded += len(self._buf)
        self._buf.clear()

    def feed(self, data: bytes | bytearray) -> list[Frame]:
        buf = self._buf
        if buf:
            buf += data
            src: bytes | bytearray = buf
        else:
            # the usual case: a read holds whole frames; parse them where they lie
            src = data
        out: list[Frame] = []
        pos = 0
        n = len(src)
        while True:
            start = src.find(SYNC, pos)
            if start < 0:
                if n > pos:
                    self._noise(n - pos)
                pos = n
                break
            if start > pos:
                self._noise(start - pos)
            pos = start
            if n - pos < HEADER_SIZE:
                break
            length, kind, epoch, seq, ack = _HEAD.unpack_from(src, pos + 1)
            if not _header_ok(length, kind, seq, ack):
                self._reject(1)
                pos += 1
                continue
            end = pos + HEADER_SIZE + length + 2
            if n < end:
                break
            crc = (src[end - 2] << 8) | src[end - 1]
            if binascii.crc_hqx(src[pos + 1 : end - 2], 0xFFFF) != crc:
                self._reject(1)
                pos += 1
                continue
            payload = bytes(src[pos + HEADER_SIZE : end - 2])
            out.append(Frame(_KINDS[kind], epoch, seq, ack, payload))
            pos = end
        if src is buf:
            del buf[:pos]
        elif pos < n:
            buf += src[pos:]  # the start of a frame: wait for the rest
        self.frames += len(out)
        return out

    def _noise(self, nbytes: int) -> None:
        # bytes between frames: a clean line has none, so they are a corrupt frame's remains
        self.discarded += nbytes
        self._fresh_errors += 1

    def _reject(self, nbytes: int) -> None:
        self.corrupt += 1
        self._fresh_errors += 1
        self.discarded += nbytes
