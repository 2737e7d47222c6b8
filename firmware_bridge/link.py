"""Reliable, in-order delivery of messages over frames: the link layer both ends share.

:class:`LinkEndpoint` does no I/O and reads no clock: the caller hands it received frames and
the current time, and writes out whatever :meth:`LinkEndpoint.poll` returns. That keeps the
same code usable in the host's reader thread, in the simulated MCU's event loop and in tests
with a fake clock and a lossy in-memory channel.

The rules (``docs/protocol.md`` has the full story):

* DATA frames are numbered 0-255 per link epoch; at most ``window`` are unacknowledged.
* Every DATA frame carries a cumulative ``ack`` (the next number its sender expects); a
  receiver with nothing to send answers with a bare ACK, at once or, with ``ack_delay``, once
  that time has passed without a DATA frame of its own to carry it (or a second frame is
  owed an acknowledgement).
* A gap, or a frame that arrives corrupt, is answered with a NAK: the sender resends from the
  NAK's number at once instead of waiting for its timer.
* Unacknowledged frames are resent when the retransmission timer fires. The timeout starts at
  ``min_rto`` (25 ms) or the measured round trip (whichever is longer), doubles on every
  expiry and is capped at ``max_rto``.
* A link epoch starts with RESET/RESET_ACK, sent by the initiator (the host) whenever it opens
  the port or the MCU has restarted. Both sides then renumber what they have not had
  acknowledged from zero; frames of an old epoch are ignored, so a late frame of a previous
  epoch can never be taken for a new one.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from firmware_bridge.framing import Frame, FrameKind, encode_frame

__all__ = ["Delivery", "LinkEndpoint", "LinkStats"]

# the kinds as plain names: an enum class attribute costs several times a global on every frame
_DATA = FrameKind.DATA
_DATAGRAM = FrameKind.DATAGRAM
_ACK = FrameKind.ACK
_NAK = FrameKind.NAK
_RESET = FrameKind.RESET
_RESET_ACK = FrameKind.RESET_ACK


class Delivery(NamedTuple):
    """Something the link hands up to the application.

    ``kind`` is ``"data"`` (a reliable message, in order, exactly once per epoch),
    ``"datagram"``, ``"reset"`` (the peer started a new epoch; ``payload`` is its RESET
    payload) or ``"reset_done"`` (our RESET was answered).
    """

    kind: str
    payload: bytes


@dataclass
class LinkStats:
    """Counters for diagnostics and benchmarks."""

    data_sent: int = 0
    data_received: int = 0
    retransmits: int = 0
    timeouts: int = 0
    naks_sent: int = 0
    naks_received: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    corrupt: int = 0
    stale: int = 0
    bad_acks: int = 0
    resets: int = 0


class _Tx:
    __slots__ = ("ever_sent", "payload", "retransmitted", "sent_at", "seq", "token")

    def __init__(self, token: int, payload: bytes) -> None:
        self.token = token
        self.payload = payload
        self.seq = -1
        self.sent_at = 0.0
        self.ever_sent = False
        self.retransmitted = False


class LinkEndpoint:
    """One end of the link. ``initiator=True`` for the host (it starts link epochs).

    :param window: most DATA frames in flight unacknowledged (1-16)
    :param min_rto: the retransmission timeout never goes below this (seconds)
    :param max_rto: the cap on the doubling retransmission timeout (seconds)
    :param ack_delay: how long a bare ACK may wait for a DATA frame to ride on (seconds; keep
        it well below the peer's ``min_rto``). The host uses it: its next command usually
        follows an answer within microseconds, and a bare ACK in between costs the MCU a
        wake-up just when that command is on its way.
    """

    def __init__(
        self,
        *,
        initiator: bool,
        window: int = 4,
        min_rto: float = 0.025,
        max_rto: float = 0.4,
        ack_delay: float = 0.0,
        first_epoch: int | None = None,
    ) -> None:
        if not 1 <= window <= 16:
            raise ValueError("window must be 1-16")
        if first_epoch is not None and not 1 <= first_epoch <= 255:
            raise ValueError("first_epoch must be 1-255")
        if not 0 <= ack_delay < min_rto:
            raise ValueError("ack_delay must be at least 0 and below min_rto")
        self.ack_delay = ack_delay
        self.initiator = initiator
        self.window = window
        self.min_rto = min_rto
        self.max_rto = max_rto
        self.stats = LinkStats()
        self.epoch = 0
        # A new host starts at a random epoch: a late frame of the previous host's (same
        # numbers, its command ids forgotten by the MCU with that host) is then of another
        # epoch and ignored, but for one chance in 255
        self._first_epoch = first_epoch or random.SystemRandom().randint(1, 255)
        self._tokens = itertools.count(1)
        self._backlog: deque[_Tx] = deque()
        self._unacked: deque[_Tx] = deque()
        self._tx_next = 0
        self._rx_expected = 0
        self._ack_owed = False
        self._ack_due = 0.0
        self._nak_owed = False
        self._nak_gap = -1
        self._go_back = False
        self._srtt: float | None = None
        self._rttvar = 0.0
        self._base_rto = min_rto
        self._rto = min_rto
        self._rtx_deadline: float | None = None
        #: expiries of the retransmission timer since the last acknowledged progress
        self.consecutive_timeouts = 0
        # epoch handshake
        self._resetting = False
        self._reset_payload = b""
        self._reset_deadline = 0.0
        self._reset_rto = min_rto
        self._reset_ack_owed = False
        self._reset_ack_frame: tuple[int, bytes] = (0, b"")
        self._pending_epoch = 0

    # --- state -------------------------------------------------------------------------------

    @property
    def established(self) -> bool:
        """True once an epoch is agreed and DATA can flow."""
        return self.epoch != 0 and not self._resetting

    @property
    def rto(self) -> float:
        """The current retransmission timeout in seconds."""
        return self._rto

    @property
    def srtt(self) -> float | None:
        """The smoothed round-trip time, once measured."""
        return self._srtt

    def pending(self) -> int:
        """Messages queued or in flight, not yet acknowledged."""
        return len(self._backlog) + len(self._unacked)

    # --- sending -----------------------------------------------------------------------------

    def send(self, payload: bytes, *, urgent: bool = False) -> int:
        """Queue a message for reliable delivery; returns a token for :meth:`cancel`.
        ``urgent`` puts it ahead of everything not yet sent (an emergency stop)."""
        tx = _Tx(next(self._tokens), payload)
        if urgent:
            self._backlog.appendleft(tx)
        else:
            self._backlog.append(tx)
        return tx.token

    def cancel(self, token: int) -> bool:
        """Withdraw a queued message. True if it was withdrawn before ever being sent (so the
        peer cannot have it); False if it is in flight, was sent before, or is gone."""
        for tx in self._backlog:
            if tx.token == token:
                self._backlog.remove(tx)
                return not tx.ever_sent
        return False

    def drain(self) -> list[tuple[int, bytes, bool]]:
        """Take back every message not yet acknowledged, as ``(token, payload, ever_sent)`` in
        order. The host does this before a new epoch, to decide what is safe to send again."""
        out = [(tx.token, tx.payload, tx.ever_sent) for tx in (*self._unacked, *self._backlog)]
        self._unacked.clear()
        self._backlog.clear()
        self._rtx_deadline = None
        self._go_back = False
        return out

    def datagram(self, payload: bytes) -> bytes:
        """The bytes of an unreliable, unnumbered frame carrying *payload*."""
        return encode_frame(_DATAGRAM, self.epoch, 0, 0, payload)

    def start_reset(self, payload: bytes, now: float) -> None:
        """(Initiator) start a new epoch; ``payload`` is echoed by the peer's RESET_ACK."""
        self._resetting = True
        self._reset_payload = payload
        self._pending_epoch = self.epoch % 255 + 1 if self.epoch else self._first_epoch
        self._reset_deadline = now
        self._reset_rto = self.min_rto
        self.stats.resets += 1

    # --- receiving ---------------------------------------------------------------------------

    def on_corrupt(self, now: float) -> None:
        """A corrupt frame arrived: likely one of the peer's, so ask for a resend now."""
        self.stats.corrupt += 1
        if self.established:
            self._nak_owed = True

    def on_frame(self, frame: Frame, now: float) -> list[Delivery]:
        """Process one received frame; returns what it delivers to the application."""
        kind = frame.kind
        if kind == _DATAGRAM:
            return [Delivery("datagram", frame.payload)]
        if kind == _RESET:
            return self._on_reset(frame)
        if kind == _RESET_ACK:
            return self._on_reset_ack(frame, now)
        if frame.epoch != self.epoch or not self.established:
            self.stats.stale += 1
            return []
        self._on_ack(frame.ack, now)
        if kind == _NAK:
            self.stats.naks_received += 1
            self._maybe_go_back(frame.ack, now)
            return []
        if kind != _DATA:
            return []
        self.stats.data_received += 1
        gap = (frame.seq - self._rx_expected) & 0xFF
        if gap == 0:
            self._rx_expected = (self._rx_expected + 1) & 0xFF
            # the gap is filled: a gap at the same number 256 frames on is a new one
            self._nak_gap = -1
            if self._ack_owed:
                self._ack_due = now  # two frames unacknowledged: no more waiting
            else:
                self._ack_owed = True
                self._ack_due = now + self.ack_delay
            return [Delivery("data", frame.payload)]
        if gap < 128:
            # one NAK per gap: the rest of the peer's window arriving behind the missing frame
            # must not each trigger another resend of the whole window
            self.stats.out_of_order += 1
            if self._nak_gap != self._rx_expected:
                self._nak_gap = self._rx_expected
                self._nak_owed = True
        else:
            # the peer resent a frame we had: its timer fired, so it is missing what we sent
            # it (its ack says what); resend that now rather than wait for our own timer
            self.stats.duplicates += 1
            self._ack_owed = True
            self._ack_due = now  # the peer is waiting for it
            self._maybe_go_back(frame.ack, now)
        return []

    def _maybe_go_back(self, ack: int, now: float) -> None:
        """Resend from ``ack`` at once (several requests handled in one batch resend once)."""
        if self._unacked and self._unacked[0].seq == ack:
            self._go_back = True

    def _on_ack(self, ack: int, now: float) -> None:
        unacked = self._unacked
        oldest = unacked[0].seq if unacked else self._tx_next
        done = (ack - oldest) & 0xFF
        if done == 0:
            return
        if done > (self._tx_next - oldest) & 0xFF:
            self.stats.bad_acks += 1
            return
        sample: float | None = None
        for _ in range(done):
            tx = unacked.popleft()
            if not tx.retransmitted:
                sample = now - tx.sent_at
        if sample is not None:
            self._add_rtt(sample)
        self.consecutive_timeouts = 0
        self._rto = self._base_rto
        self._go_back = False
        self._rtx_deadline = now + self._rto if self._unacked else None

    def _add_rtt(self, sample: float) -> None:
        if self._srtt is None:
            self._srtt = sample
            self._rttvar = sample / 2
        else:
            self._rttvar = 0.75 * self._rttvar + 0.25 * abs(self._srtt - sample)
            self._srtt = 0.875 * self._srtt + 0.125 * sample
        self._base_rto = min(self.max_rto, max(self.min_rto, self._srtt + 4 * self._rttvar))

    def _on_reset(self, frame: Frame) -> list[Delivery]:
        if self.initiator:
            self.stats.stale += 1
            return []
        same_host = self.epoch != 0 and frame.payload == self._reset_payload
        if same_host and _epochs_ahead(self.epoch, frame.epoch) > 127:
            # a late RESET of one of this host's earlier epochs: taking it would drop every
            # frame of the present one as stale
            self.stats.stale += 1
            return []
        self._reset_ack_owed = True
        self._reset_ack_frame = (frame.epoch, frame.payload)
        if same_host and frame.epoch == self.epoch:
            return []  # a repeat of the RESET that started this epoch: answer it, change nothing
        self.epoch = frame.epoch
        self._reset_payload = frame.payload
        self._renumber()
        self.stats.resets += 1
        return [Delivery("reset", frame.payload)]

    def _on_reset_ack(self, frame: Frame, now: float) -> list[Delivery]:
        if not (
            self.initiator
            and self._resetting
            and frame.epoch == self._pending_epoch
            and frame.payload == self._reset_payload
        ):
            self.stats.stale += 1
            return []
        self.epoch = frame.epoch
        self._resetting = False
        self._renumber()
        return [Delivery("reset_done", frame.payload)]

    def drop_queued(self) -> int:
        """Forget every message queued or unacknowledged (a new host: what the previous one
        was owed is not this one's). Returns how many were dropped."""
        dropped = len(self._unacked) + len(self._backlog)
        self._unacked.clear()
        self._backlog.clear()
        self._rtx_deadline = None
        self._go_back = False
        return dropped

    def owed_ack(self) -> list[bytes]:
        """The bare ACK owed now, whatever its delay (a host closing the line must not leave
        its last answer unacknowledged: the peer would keep it for the next host)."""
        if not self._ack_owed or self.epoch == 0 or self._resetting:
            return []
        self._ack_owed = False
        return [encode_frame(_ACK, self.epoch, 0, self._rx_expected)]

    def _renumber(self) -> None:
        while self._unacked:
            self._backlog.appendleft(self._unacked.pop())
        self._tx_next = 0
        self._rx_expected = 0
        self._ack_owed = False
        self._nak_owed = False
        self._nak_gap = -1
        self._go_back = False
        self._rtx_deadline = None
        self._rto = self._base_rto
        self.consecutive_timeouts = 0

    # --- timers and output -------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When :meth:`poll` must next be called even if nothing arrives (None: no timer)."""
        if self._resetting:
            return self._reset_deadline
        if self._ack_owed and (self._rtx_deadline is None or self._ack_due < self._rtx_deadline):
            return self._ack_due
        return self._rtx_deadline

    def poll(self, now: float) -> list[bytes]:
        """Everything to write now, as one ``bytes`` per frame, in order."""
        out: list[bytes] = []
        if self._reset_ack_owed:
            epoch, payload = self._reset_ack_frame
            out.append(encode_frame(_RESET_ACK, epoch, 0, 0, payload))
            self._reset_ack_owed = False
        if self._resetting:
            if now >= self._reset_deadline:
                out.append(encode_frame(_RESET, self._pending_epoch, 0, 0, self._reset_payload))
                self._reset_deadline = now + self._reset_rto
                self._reset_rto = min(self._reset_rto * 2, self.max_rto)
            return out
        if self.epoch == 0:
            return out
        resend = False
        if self._unacked and self._go_back:
            resend = True
        elif self._unacked and self._rtx_deadline is not None and now >= self._rtx_deadline:
            resend = True
            self.stats.timeouts += 1
            self.consecutive_timeouts += 1
            self._rto = min(self._rto * 2, self.max_rto)
        if resend:
            self._go_back = False
            for tx in self._unacked:
                out.append(self._data_frame(tx, now))
                tx.retransmitted = True
                self.stats.retransmits += 1
            self._rtx_deadline = now + self._rto
        while self._backlog and len(self._unacked) < self.window:
            tx = self._backlog.popleft()
            tx.seq = self._tx_next
            self._tx_next = (self._tx_next + 1) & 0xFF
            if tx.ever_sent:
                tx.retransmitted = True
                self.stats.retransmits += 1
            self._unacked.append(tx)
            out.append(self._data_frame(tx, now))
            self.stats.data_sent += 1
            if self._rtx_deadline is None:
                self._rtx_deadline = now + self._rto
        if self._nak_owed:
            out.append(encode_frame(_NAK, self.epoch, 0, self._rx_expected))
            self.stats.naks_sent += 1
            self._nak_owed = False
            self._ack_owed = False
        elif self._ack_owed and now >= self._ack_due:
            out.append(encode_frame(_ACK, self.epoch, 0, self._rx_expected))
            self._ack_owed = False
        return out

    def _data_frame(self, tx: _Tx, now: float) -> bytes:
        tx.sent_at = now
        tx.ever_sent = True
        self._ack_owed = False
        return encode_frame(_DATA, self.epoch, tx.seq, self._rx_expected, tx.payload)


def _epochs_ahead(current: int, other: int) -> int:
    """How many epochs ``other`` lies after ``current`` (1-255, counting round past 255 to 1):
    0 for the same epoch; over 127 means it lies behind."""
    return (other - current) % 255
