"""The link layer, driven through an in-memory channel with a fake clock: loss, corruption,
duplication and reordering never lose, repeat or reorder a message within an epoch."""

from __future__ import annotations

import heapq
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge.framing import Frame, FrameDecoder, FrameKind, encode_frame
from firmware_bridge.link import Delivery, LinkEndpoint


class Channel:
    """Two endpoints joined by a faulty wire; time is simulated."""

    def __init__(
        self,
        rng: random.Random,
        *,
        drop: float = 0.0,
        corrupt: float = 0.0,
        dup: float = 0.0,
        delay: float = 0.0,
        window: int = 4,
        ack_delay: float = 0.0,
    ) -> None:
        self.rng = rng
        self.drop, self.corrupt, self.dup, self.delay = drop, corrupt, dup, delay
        self.now = 0.0
        self.host = LinkEndpoint(initiator=True, window=window, ack_delay=ack_delay, first_epoch=1)
        self.mcu = LinkEndpoint(initiator=False, window=window)
        self.decoders = {id(self.host): FrameDecoder(), id(self.mcu): FrameDecoder()}
        self.wire: list[tuple[float, int, int, bytes]] = []  # (time, order, to, bytes)
        self._order = 0
        self._last: dict[int, float] = {}
        self.got: dict[int, list[bytes]] = {id(self.host): [], id(self.mcu): []}
        self.events: dict[int, list[str]] = {id(self.host): [], id(self.mcu): []}

    def _put(self, to: LinkEndpoint, raw: bytes) -> None:
        r = self.rng
        if r.random() < self.drop:
            return
        copies = 2 if r.random() < self.dup else 1
        for _ in range(copies):
            data = bytearray(raw)
            for i in range(len(data)):
                if r.random() < self.corrupt:
                    data[i] ^= r.randrange(1, 256)
            # a serial line keeps order; only an injected delay reorders
            at = max(self.now + 0.0003 + r.random() * 0.0002, self._last.get(id(to), 0.0))
            if r.random() < self.delay:
                at += r.random() * 0.05
            else:
                self._last[id(to)] = at
            self._order += 1
            heapq.heappush(self.wire, (at, self._order, id(to), bytes(data)))

    def flush(self) -> None:
        for src, dst in ((self.host, self.mcu), (self.mcu, self.host)):
            for raw in src.poll(self.now):
                self._put(dst, raw)

    def step(self) -> bool:
        """Advance to the next thing that happens; False when nothing is left to happen."""
        times = [t for t in (self.host.next_deadline(), self.mcu.next_deadline()) if t]
        if self.wire:
            times.append(self.wire[0][0])
        if not times:
            return False
        self.now = max(self.now, min(times))
        while self.wire and self.wire[0][0] <= self.now:
            _, _, to, raw = heapq.heappop(self.wire)
            ep = self.host if to == id(self.host) else self.mcu
            dec = self.decoders[to]
            for frame in dec.feed(raw):
                for d in ep.on_frame(frame, self.now):
                    if d.kind == "data":
                        self.got[to].append(d.payload)
                    else:
                        self.events[to].append(d.kind)
            if dec.take_errors():
                ep.on_corrupt(self.now)
        self.flush()
        return True

    def run(self, until: float = 120.0) -> None:
        while self.now < until and self.step():
            pass

    def connect(self) -> None:
        self.host.start_reset(b"inst", self.now)
        self.flush()
        self.run(until=self.now + 5)
        assert self.host.established


def test_handshake_then_exchange() -> None:
    ch = Channel(random.Random(1))
    assert not ch.host.established
    ch.connect()
    assert ch.events[id(ch.mcu)] == ["reset"]
    assert ch.events[id(ch.host)] == ["reset_done"]
    for i in range(10):
        ch.host.send(b"h%d" % i)
        ch.mcu.send(b"m%d" % i)
    ch.flush()
    ch.run()
    assert ch.got[id(ch.mcu)] == [b"h%d" % i for i in range(10)]
    assert ch.got[id(ch.host)] == [b"m%d" % i for i in range(10)]
    assert ch.host.pending() == 0
    assert ch.mcu.pending() == 0
    assert ch.host.stats.retransmits == 0


def test_nothing_flows_before_an_epoch() -> None:
    ch = Channel(random.Random(2))
    ch.mcu.send(b"early")
    ch.flush()
    ch.run(until=1.0)
    assert ch.got[id(ch.host)] == []
    ch.connect()
    ch.run()
    assert ch.got[id(ch.host)] == [b"early"]


@given(
    seed=st.integers(0, 2**32),
    drop=st.sampled_from([0.0, 0.05, 0.2]),
    corrupt=st.sampled_from([0.0, 0.01, 0.03]),
    dup=st.sampled_from([0.0, 0.05]),
    delay=st.sampled_from([0.0, 0.05]),
    window=st.integers(1, 8),
    ack_delay=st.sampled_from([0.0, 0.005]),
)
@settings(max_examples=60, deadline=None)
def test_exactly_once_in_order_under_faults(
    seed: int, drop: float, corrupt: float, dup: float, delay: float, window: int, ack_delay: float
) -> None:
    ch = Channel(random.Random(seed), window=window, ack_delay=ack_delay)
    ch.connect()
    ch.drop, ch.corrupt, ch.dup, ch.delay = drop, corrupt, dup, delay
    sent_h = [b"cmd-%d" % i for i in range(60)]
    sent_m = [b"evt-%d" % i for i in range(60)]
    for a, b in zip(sent_h, sent_m, strict=True):
        ch.host.send(a)
        ch.mcu.send(b)
    ch.flush()
    ch.run(until=600)
    assert ch.got[id(ch.mcu)] == sent_h
    assert ch.got[id(ch.host)] == sent_m


def test_retransmission_timer_starts_at_25ms_doubles_and_is_capped() -> None:
    host, _ = _established(ack_delay=0.0)
    host.send(b"lost forever")
    assert len(host.poll(0.0)) == 1
    times = []
    t = 0.0
    while len(times) < 8:
        deadline = host.next_deadline()
        assert deadline is not None
        assert host.poll(deadline - 1e-6) == []
        t = deadline
        assert len(host.poll(t)) == 1
        times.append(round(t, 6))
    gaps = [round(b - a, 6) for a, b in zip([0.0, *times], times, strict=False)]
    assert gaps[:5] == [0.025, 0.05, 0.1, 0.2, 0.4]
    assert max(gaps) == 0.4
    assert host.consecutive_timeouts == 8


def test_nak_on_gap_triggers_immediate_resend() -> None:
    host = LinkEndpoint(initiator=True, first_epoch=1)
    host.start_reset(b"x", 0.0)
    host.poll(0.0)
    host.on_frame(Frame(FrameKind.RESET_ACK, 1, payload=b"x"), 0.0)
    host.send(b"a")
    host.send(b"b")
    first = host.poll(0.0)
    assert len(first) == 2
    # the MCU got b but not a: it NAKs 0, and the host resends both without waiting
    resent = host.poll(0.001)
    assert resent == []
    host.on_frame(Frame(FrameKind.NAK, 1, ack=0), 0.001)
    assert host.poll(0.001) == [
        encode_frame(FrameKind.DATA, 1, 0, 0, b"a"),
        encode_frame(FrameKind.DATA, 1, 1, 0, b"b"),
    ]


def test_frames_of_another_epoch_are_ignored() -> None:
    mcu = LinkEndpoint(initiator=False)
    assert mcu.on_frame(Frame(FrameKind.RESET, 3, payload=b"p"), 0.0) == [Delivery("reset", b"p")]
    assert mcu.on_frame(Frame(FrameKind.DATA, 2, 0, 0, b"old"), 0.0) == []
    assert mcu.stats.stale == 1
    assert [d.payload for d in mcu.on_frame(Frame(FrameKind.DATA, 3, 0, 0, b"new"), 0.0)] == [
        b"new"
    ]
    # a repeated RESET of the same epoch is answered but changes nothing
    assert mcu.on_frame(Frame(FrameKind.RESET, 3, payload=b"p"), 0.0) == []
    out = mcu.poll(0.0)
    assert encode_frame(FrameKind.RESET_ACK, 3, 0, 0, b"p") in out
    assert [d.payload for d in mcu.on_frame(Frame(FrameKind.DATA, 3, 1, 0, b"next"), 0.0)] == [
        b"next"
    ]


def test_unacknowledged_messages_survive_a_new_epoch() -> None:
    ch = Channel(random.Random(5))
    ch.connect()
    ch.drop = 1.0  # the line goes dead
    for i in range(6):
        ch.mcu.send(b"e%d" % i)
        ch.host.send(b"c%d" % i)
    ch.flush()
    ch.run(until=ch.now + 1.0)
    assert ch.got[id(ch.host)] == []
    ch.drop = 0.0
    drained = ch.host.drain()
    assert [p for _, p, _ in drained] == [b"c%d" % i for i in range(6)]
    assert [sent for *_, sent in drained] == [True] * 4 + [False] * 2
    ch.connect()
    for _, payload, _ in drained:
        ch.host.send(payload)
    ch.flush()
    ch.run()
    assert ch.got[id(ch.host)] == [b"e%d" % i for i in range(6)]
    assert ch.got[id(ch.mcu)] == [b"c%d" % i for i in range(6)]


def test_cancel_only_reports_never_sent_messages() -> None:
    host = LinkEndpoint(initiator=True, window=1, first_epoch=1)
    host.start_reset(b"x", 0.0)
    host.poll(0.0)
    host.on_frame(Frame(FrameKind.RESET_ACK, 1, payload=b"x"), 0.0)
    a = host.send(b"a")
    b = host.send(b"b")
    host.poll(0.0)
    assert host.cancel(a) is False  # in flight
    assert host.cancel(b) is True
    assert host.cancel(b) is False
    assert host.pending() == 1


def test_urgent_goes_first() -> None:
    host = LinkEndpoint(initiator=True, window=1, first_epoch=1)
    host.start_reset(b"x", 0.0)
    host.poll(0.0)
    host.on_frame(Frame(FrameKind.RESET_ACK, 1, payload=b"x"), 0.0)
    host.send(b"a")
    host.send(b"b")
    host.send(b"stop", urgent=True)
    (frame,) = host.poll(0.0)
    assert FrameDecoder().feed(frame)[0].payload == b"stop"


def test_window_bounds() -> None:
    with pytest.raises(ValueError, match="window must be 1-16"):
        LinkEndpoint(initiator=True, window=0)


def _established(ack_delay: float) -> tuple[LinkEndpoint, LinkEndpoint]:
    host = LinkEndpoint(initiator=True, ack_delay=ack_delay, first_epoch=1)
    mcu = LinkEndpoint(initiator=False)
    host.start_reset(b"x", 0.0)
    (reset,) = host.poll(0.0)
    mcu.on_frame(FrameDecoder().feed(reset)[0], 0.0)
    (reset_ack,) = mcu.poll(0.0)
    host.on_frame(FrameDecoder().feed(reset_ack)[0], 0.0)
    return host, mcu


def _kinds(frames: list[bytes]) -> list[FrameKind]:
    return [f.kind for f in FrameDecoder().feed(b"".join(frames))]


def test_a_delayed_ack_waits_for_a_frame_to_ride_on() -> None:
    host, mcu = _established(ack_delay=0.005)
    mcu.send(b"answer")
    (answer,) = mcu.poll(0.0)
    host.on_frame(FrameDecoder().feed(answer)[0], 0.001)
    assert host.poll(0.001) == []  # no bare ACK yet
    assert host.next_deadline() == pytest.approx(0.006)
    # the next command carries it
    host.send(b"next")
    (frame,) = FrameDecoder().feed(b"".join(host.poll(0.002)))
    assert (frame.kind, frame.ack) == (FrameKind.DATA, 1)
    assert host.poll(0.01) == []  # nothing owed any more
    # with nothing to carry it, a bare ACK goes when the delay is up
    mcu.on_frame(frame, 0.003)
    mcu.send(b"answer 2")
    host.on_frame(FrameDecoder().feed(b"".join(mcu.poll(0.003)))[0], 0.004)
    assert host.poll(0.0089) == []
    assert _kinds(host.poll(0.0091)) == [FrameKind.ACK]


def test_a_delayed_ack_goes_at_once_for_a_second_frame_or_a_repeat() -> None:
    host, mcu = _established(ack_delay=0.005)
    mcu.send(b"one")
    mcu.send(b"two")
    one, two = (FrameDecoder().feed(raw)[0] for raw in mcu.poll(0.0))
    host.on_frame(one, 0.001)
    assert host.poll(0.001) == []
    host.on_frame(two, 0.001)
    assert _kinds(host.poll(0.001)) == [FrameKind.ACK]
    # the MCU's timer fired: it resent "two", which the host already has
    host.on_frame(two, 0.03)
    assert _kinds(host.poll(0.03)) == [FrameKind.ACK]


def test_ack_delay_must_stay_below_the_minimum_timeout() -> None:
    with pytest.raises(ValueError, match="ack_delay must be at least 0 and below min_rto"):
        LinkEndpoint(initiator=True, ack_delay=0.025)


def test_a_new_host_starts_at_an_epoch_of_its_own() -> None:
    # a late frame of the previous host's must not fall in the new host's epoch: the MCU
    # forgot that host's command ids, so it would run the command again
    firsts = set()
    for _ in range(40):
        host = LinkEndpoint(initiator=True)
        host.start_reset(b"host", 0.0)
        (frame,) = FrameDecoder().feed(host.poll(0.0)[0])
        assert 1 <= frame.epoch <= 255
        firsts.add(frame.epoch)
    assert len(firsts) > 1
    with pytest.raises(ValueError, match="first_epoch"):
        LinkEndpoint(initiator=True, first_epoch=0)


def test_a_late_reset_of_an_earlier_epoch_is_ignored() -> None:
    mcu = LinkEndpoint(initiator=False)
    assert mcu.on_frame(Frame(FrameKind.RESET, 255, payload=b"A"), 0.0)
    assert mcu.on_frame(Frame(FrameKind.RESET, 1, payload=b"A"), 0.0)  # 255 wraps to 1
    assert mcu.on_frame(Frame(FrameKind.RESET, 2, payload=b"A"), 0.0)
    mcu.poll(0.0)
    stale = mcu.stats.stale
    # RESET(1) of the same host, reordered on the line behind RESET(2)
    assert mcu.on_frame(Frame(FrameKind.RESET, 1, payload=b"A"), 0.0) == []
    assert mcu.epoch == 2 and mcu.stats.stale == stale + 1
    answered = [f.kind for out in mcu.poll(0.0) for f in FrameDecoder().feed(out)]
    assert FrameKind.RESET_ACK not in answered
    assert [d.payload for d in mcu.on_frame(Frame(FrameKind.DATA, 2, 0, 0, b"go"), 0.0)] == [b"go"]
    # another host may start at any epoch, behind or not
    assert mcu.on_frame(Frame(FrameKind.RESET, 1, payload=b"B"), 0.0) == [Delivery("reset", b"B")]
    assert mcu.epoch == 1


def test_a_gap_at_the_same_number_a_lap_later_is_asked_for_again() -> None:
    mcu = LinkEndpoint(initiator=False)
    mcu.on_frame(Frame(FrameKind.RESET, 1, payload=b"A"), 0.0)
    mcu.poll(0.0)

    def naks(now: float) -> list[int]:
        return [f.ack for out in mcu.poll(now) for f in FrameDecoder().feed(out)
                if f.kind == FrameKind.NAK]  # fmt: skip

    mcu.on_frame(Frame(FrameKind.DATA, 1, 1, 0, b"b"), 0.0)  # frame 0 is missing
    assert naks(0.0) == [0]
    for seq in range(256):  # frame 0 comes, and the rest of a lap of numbers
        mcu.on_frame(Frame(FrameKind.DATA, 1, seq, 0, b"x"), 0.0)
    mcu.poll(0.1)
    mcu.on_frame(Frame(FrameKind.DATA, 1, 1, 0, b"b"), 0.2)  # frame 0 of the next lap is missing
    assert naks(0.2) == [0]


def test_an_ack_owed_can_be_sent_at_once_and_queued_messages_dropped() -> None:
    ch = Channel(random.Random(5), ack_delay=0.005)
    ch.connect()
    ch.mcu.send(b"answer")
    ch.flush()
    while not ch.got[id(ch.host)]:
        ch.step()
    # the host owes an ACK it would send 5 ms later: closing now, it sends it at once
    (ack,) = ch.host.owed_ack()
    assert ch.host.owed_ack() == []  # owed once
    for frame in FrameDecoder().feed(ack):
        ch.mcu.on_frame(frame, ch.now)
    assert ch.mcu.pending() == 0
    # a peer told of a new host forgets what it still owed the old one
    ch.mcu.send(b"for the old host")
    ch.mcu.send(b"and this")
    ch.flush()
    assert ch.mcu.drop_queued() == 2 and ch.mcu.pending() == 0
