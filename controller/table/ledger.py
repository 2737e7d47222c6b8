"""Sessions, hands and the money, folded from the table's events.

The ledger is never stored: it is derived from the event log
(:class:`controller.table.store.EventLog`), so what players are owed is exactly what the
settlements the table announced say, and the same code folds a log replayed after a restart
and the events of a table playing now (:meth:`Ledger.apply`, one at a time).

What the events mean here (:mod:`controller.table.events`): ``session_started`` opens a
session, ``hand_started`` a hand; ``settled`` closes the hand with each seat's signed payment,
``drawn`` with none; ``undone`` takes back the last closed hand of its session, whose payments
leave the totals; the hand is open again and may be settled again. A hand keeps its whole
history; the totals count only its latest settlement.

Amounts are exact (:class:`fractions.Fraction`): a ledger a parlour owner checks must add up
to the last fen, and :meth:`Ledger.check_zero_sum` is that check. Events that cannot be
folded into a ledger that makes sense (a hand settled twice without an undo, an undo of a
hand that is not the last closed one, a payment that is not an exact amount) raise
:class:`StorageError` naming the event, rather than being guessed at.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from fractions import Fraction
from typing import Any

from controller.errors import StorageError
from controller.table import events as ev

__all__ = [
    "DRAWN",
    "OPEN",
    "SETTLED",
    "UNDONE",
    "Closing",
    "HandRecord",
    "Ledger",
    "SessionRecord",
    "amount_csv",
    "amount_json",
    "build_ledger",
    "export_csv",
    "export_json",
    "parse_amount",
    "settle_up",
]

OPEN, SETTLED, DRAWN, UNDONE = "open", "settled", "drawn", "undone"
DEFAULT_SEATS = 4

Amounts = tuple[Fraction, ...]


# -- amounts ---------------------------------------------------------------------------------


def parse_amount(value: object) -> Fraction:
    """An amount as the events write it (an int, or text such as ``"3/2"`` or ``"-1.5"``),
    exactly. A float is refused: ``0.1`` is not a tenth, and the ledger must be exact."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            pass
    raise ValueError(f"{value!r} is not an exact amount (an int, or text such as '3/2')")


def amount_json(x: Fraction | int) -> int | str:
    """An amount for JSON, exactly: an int when whole, else ``"a/b"``."""
    x = Fraction(x)
    return x.numerator if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def amount_csv(x: Fraction | int) -> str:
    """An amount for a spreadsheet: an int when whole, else a decimal to 4 places (rounded
    half to even, from the exact value)."""
    x = Fraction(x)
    if x.denominator == 1:
        return str(x.numerator)
    q = round(x * 10_000)
    sign = "-" if q < 0 else ""
    return f"{sign}{abs(q) // 10_000}.{abs(q) % 10_000:04d}"


# -- records ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Closing:
    """One entry of a hand's history: it was ``settled`` (with ``payments`` per seat), ``drawn``
    or ``undone`` (taken back) at ``time``."""

    outcome: str
    time: float
    payments: Amounts | None = None
    wins: tuple[dict[str, Any], ...] = ()
    settlement: dict[str, Any] | None = None
    corrected: tuple[str, ...] = ()
    next_dealer: int | None = None
    huangfan_next: int | None = None
    reason: str = ""


@dataclass
class HandRecord:
    """A hand of a session: when it started, its dealer and 荒番 counter at the start, and
    every closing and undo since (``history``); its outcome is the latest of them."""

    number: int
    started: float
    dealer: int
    huangfan: int
    history: list[Closing] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """``open`` (never closed), ``settled``, ``drawn``, or ``undone`` (taken back and not
        closed again yet)."""
        return self.history[-1].outcome if self.history else OPEN

    @property
    def closed(self) -> bool:
        return self.outcome in (SETTLED, DRAWN)

    @property
    def current(self) -> Closing | None:
        """The closing that stands (settled or drawn), None while open or undone."""
        return self.history[-1] if self.closed else None

    @property
    def payments(self) -> Amounts | None:
        """Each seat's payment of the settlement that stands (None unless settled)."""
        now = self.current
        return now.payments if now is not None and now.outcome == SETTLED else None

    @property
    def wins(self) -> tuple[dict[str, Any], ...]:
        now = self.current
        return now.wins if now is not None else ()

    @property
    def settlement(self) -> dict[str, Any] | None:
        now = self.current
        return now.settlement if now is not None else None

    @property
    def corrected(self) -> tuple[str, ...]:
        now = self.current
        return now.corrected if now is not None else ()


@dataclass
class SessionRecord:
    """A session: its players, profile and stake, and its hands in the order they started."""

    number: int
    started: float
    profile: str
    stake: int | str
    seats: list[str]
    dealer: int
    hands: list[HandRecord] = field(default_factory=list)
    closed_order: list[int] = field(default_factory=list)
    """Hand numbers in the order they were closed and still stand: an undo takes the last."""

    @property
    def size(self) -> int:
        """How many seats pay (the names given, or the usual four)."""
        return len(self.seats) or DEFAULT_SEATS

    @property
    def seat_names(self) -> list[str]:
        """The players' names, ``Seat <n>`` for a seat left without one."""
        given = [*self.seats, *[""] * self.size][: self.size]
        return [name.strip() or f"Seat {i}" for i, name in enumerate(given)]

    def hand(self, number: int) -> HandRecord | None:
        return next((h for h in self.hands if h.number == number), None)

    @property
    def totals(self) -> list[Fraction]:
        """Each seat's net: the sum of the payments of the hands settled now (not undone)."""
        out = [Fraction(0)] * self.size
        for hand in self.hands:
            for seat, x in enumerate(hand.payments or ()):
                out[seat] += x
        return out


# -- the fold --------------------------------------------------------------------------------


@dataclass
class Ledger:
    """Every session in the events folded so far. Feed it with :meth:`apply` (live) or build
    it with :func:`build_ledger` (a replay); both give the same ledger."""

    sessions: list[SessionRecord] = field(default_factory=list)

    def session(self, number: int) -> SessionRecord:
        found = next((s for s in self.sessions if s.number == number), None)
        if found is None:
            raise KeyError(f"no session {number}")
        return found

    @property
    def current(self) -> SessionRecord | None:
        """The session started last."""
        return self.sessions[-1] if self.sessions else None

    def apply(self, event: ev.Event, seq: int | None = None) -> None:
        """Fold one event in (events that do not touch the ledger are passed over); ``seq``,
        where known, names the event in an error."""
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(_Fold(self, event, seq))

    def check_zero_sum(self) -> None:
        """Raise :class:`StorageError` unless every payment ever recorded for a hand, and every
        session's totals, sum to zero: money at a table moves between players, so a sum that
        is not zero means the settlement or the log is wrong."""
        for session in self.sessions:
            for hand in session.hands:
                for closing in hand.history:
                    total = sum(closing.payments or (), Fraction(0))
                    if total != 0:
                        raise StorageError(
                            f"session {session.number} hand {hand.number}: the payments of its"
                            f" settlement at {closing.time} sum to {amount_json(total)}, not 0"
                        )
            total = sum(session.totals, Fraction(0))
            if total != 0:
                raise StorageError(
                    f"session {session.number}: the totals sum to {amount_json(total)}, not 0"
                )


def build_ledger(events: Iterable[ev.Event | tuple[int, ev.Event]]) -> Ledger:
    """The ledger of ``events``: events, or ``(seq, event)`` pairs as
    :meth:`EventLog.events <controller.table.store.EventLogReader.events>` yields them."""
    ledger = Ledger()
    for item in events:
        if isinstance(item, tuple):
            ledger.apply(item[1], item[0])
        else:
            ledger.apply(item)
    return ledger


@dataclass
class _Fold:
    """One event being folded into a ledger, with what every handler needs."""

    ledger: Ledger
    event: Any
    seq: int | None

    def fail(self, why: str) -> StorageError:
        where = f"event {self.seq}" if self.seq is not None else "an event"
        return StorageError(f"the ledger cannot take {where} ({self.event.type}): {why}")

    def session(self) -> SessionRecord:
        try:
            return self.ledger.session(self.event.session)
        except KeyError:
            raise self.fail(f"session {self.event.session} was never started") from None

    def hand(self) -> tuple[SessionRecord, HandRecord]:
        session = self.session()
        hand = session.hand(self.event.hand)
        if hand is None:
            raise self.fail(f"hand {self.event.hand} of session {session.number} never started")
        return session, hand

    def closable(self) -> tuple[SessionRecord, HandRecord]:
        session, hand = self.hand()
        if hand.closed:
            raise self.fail(f"hand {hand.number} is already {hand.outcome}; undo it first")
        return session, hand

    def payments(self, session: SessionRecord) -> Amounts:
        out = [Fraction(0)] * session.size
        for key, value in self.event.payments.items():
            try:
                seat = int(key)
                amount = parse_amount(value)
            except ValueError as exc:
                raise self.fail(f"payment {key!r}: {value!r}: {exc}") from None
            if not 0 <= seat < session.size:
                raise self.fail(f"a payment for seat {seat}, at a table of {session.size}")
            out[seat] += amount
        return tuple(out)


def _session_started(f: _Fold) -> None:
    e: ev.SessionStarted = f.event
    if any(s.number == e.session for s in f.ledger.sessions):
        raise f.fail(f"session {e.session} was started before")
    f.ledger.sessions.append(
        SessionRecord(e.session, e.time, e.profile, e.stake, list(e.seats), e.dealer)
    )


def _hand_started(f: _Fold) -> None:
    e: ev.HandStarted = f.event
    session = f.session()
    hand = session.hand(e.hand)
    if hand is None:
        session.hands.append(HandRecord(e.hand, e.time, e.dealer, e.huangfan))
    elif hand.closed:
        raise f.fail(f"hand {e.hand} started again while {hand.outcome}; undo it first")
    else:  # an open or undone hand dealt again: it keeps its number and its history
        hand.dealer, hand.huangfan = e.dealer, e.huangfan


def _settled(f: _Fold) -> None:
    e: ev.HandSettled = f.event
    session, hand = f.closable()
    hand.history.append(
        Closing(
            SETTLED,
            e.time,
            payments=f.payments(session),
            wins=tuple(e.wins),
            settlement=e.settlement,
            corrected=tuple(e.corrected),
            next_dealer=e.next_dealer,
            huangfan_next=e.huangfan_next,
        )
    )
    session.closed_order.append(hand.number)


def _drawn(f: _Fold) -> None:
    e: ev.HandDrawn = f.event
    session, hand = f.closable()
    hand.history.append(
        Closing(
            DRAWN,
            e.time,
            next_dealer=e.next_dealer,
            huangfan_next=e.huangfan_next,
            reason=e.reason,
        )
    )
    session.closed_order.append(hand.number)


def _undone(f: _Fold) -> None:
    e: ev.SettlementUndone = f.event
    session, hand = f.hand()
    last = session.closed_order[-1] if session.closed_order else None
    if last != e.hand:
        raise f.fail(
            f"an undo of hand {e.hand}, but the last closed hand of session {session.number}"
            f" is {'none' if last is None else last}"
        )
    session.closed_order.pop()
    hand.history.append(Closing(UNDONE, e.time, reason=e.reason))


_HANDLERS: dict[type, Any] = {
    ev.SessionStarted: _session_started,
    ev.HandStarted: _hand_started,
    ev.HandSettled: _settled,
    ev.HandDrawn: _drawn,
    ev.SettlementUndone: _undone,
}


# -- settling up -----------------------------------------------------------------------------


def settle_up(totals: Iterable[Fraction | int]) -> list[tuple[int, int, Fraction]]:
    """Who pays whom at the end of a session: ``(payer, payee, amount)`` transfers that bring
    every seat's total to zero.

    Greedy: the largest debtor pays the largest creditor as much as settles one of them, until
    all are square (ties go to the lower seat, so the answer is the same every time). That is
    at most one transfer fewer than the seats that are not square, and for four seats it is
    always the fewest possible: the only way to do better than three is two pairs that cancel
    (+a, -a, +b, -b), and the largest debtor and creditor are then one such pair. From five
    seats it can miss a pair that cancels: for (+4, +3, -2, -2, -3) it has -3 pay +4 first and
    makes four transfers, where three do (-3 pays +3; both -2 pay +4).
    """
    balance = [Fraction(x) for x in totals]
    if sum(balance, Fraction(0)) != 0:
        raise StorageError(
            f"totals that do not sum to zero cannot be settled: {[amount_json(x) for x in balance]}"
        )
    seats = range(len(balance))
    transfers: list[tuple[int, int, Fraction]] = []
    while True:
        debtor = min(seats, key=lambda i: (balance[i], i), default=None)
        creditor = max(seats, key=lambda i: (balance[i], -i), default=None)
        if debtor is None or creditor is None or balance[debtor] >= 0:
            return transfers
        amount = min(-balance[debtor], balance[creditor])
        transfers.append((debtor, creditor, amount))
        balance[debtor] += amount
        balance[creditor] -= amount


# -- exports ---------------------------------------------------------------------------------


def _iso(t: float, tz: tzinfo | None) -> str:
    """``t`` (seconds since the epoch) as ISO-8601 with its offset: the machine's local time
    unless ``tz`` is given, as the parlour reads its clock."""
    try:
        moment = datetime.fromtimestamp(t, tz) if tz is not None else datetime.fromtimestamp(t)
        return moment.astimezone(tz).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return str(t)


def _closing_json(c: Closing, tz: tzinfo | None) -> dict[str, Any]:
    out: dict[str, Any] = {"outcome": c.outcome, "time": c.time, "at": _iso(c.time, tz)}
    if c.payments is not None:
        out["payments"] = [amount_json(x) for x in c.payments]
    if c.next_dealer is not None:
        out["next_dealer"] = c.next_dealer
        out["huangfan_next"] = c.huangfan_next
    if c.reason:
        out["reason"] = c.reason
    return out


def _hand_json(h: HandRecord, tz: tzinfo | None) -> dict[str, Any]:
    payments = h.payments
    return {
        "hand": h.number,
        "time": h.started,
        "started": _iso(h.started, tz),
        "dealer": h.dealer,
        "huangfan": h.huangfan,
        "outcome": h.outcome,
        "wins": list(h.wins),
        "settlement": h.settlement,
        "payments": None if payments is None else [amount_json(x) for x in payments],
        "corrected": list(h.corrected),
        "history": [_closing_json(c, tz) for c in h.history],
    }


def export_json(session: SessionRecord, tz: tzinfo | None = None) -> dict[str, Any]:
    """The session as JSON: its players, every hand with its wins, settlement (and so its
    breakdown) and history, each seat's total and the transfers that settle up. Amounts are
    exact (an int, or ``"a/b"``); seats are listed by number, in the order of ``seats``."""
    totals = session.totals
    return {
        "session": session.number,
        "time": session.started,
        "started": _iso(session.started, tz),
        "profile": session.profile,
        "stake": session.stake,
        "seats": session.seat_names,
        "dealer": session.dealer,
        "hands": [_hand_json(h, tz) for h in session.hands],
        "totals": [amount_json(x) for x in totals],
        "settle_up": [
            {"payer": a, "payee": b, "amount": amount_json(x)} for a, b, x in settle_up(totals)
        ],
    }


def _columns(session: SessionRecord) -> list[str]:
    """One column per seat, named by the player; a name used twice gets its seat number, so no
    two columns read alike."""
    names = session.seat_names
    return [
        name if names.count(name) == 1 else f"{name} (seat {i})" for i, name in enumerate(names)
    ]


def _listed(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return "; ".join("" if v is None else str(v) for v in value)
    return str(value)


def _winners(h: HandRecord) -> list[int]:
    s = h.settlement or {}
    if "wins" in s:
        found = [w.get("winner") for w in s["wins"]]
    elif "winner" in s:
        found = [s["winner"]]
    else:
        found = [w.get("winner") for w in h.wins]
    return [w for w in found if isinstance(w, int)]


def _hand_row(session: SessionRecord, h: HandRecord, tz: tzinfo | None) -> list[str]:
    names = session.seat_names

    def name(seat: int) -> str:
        return names[seat] if 0 <= seat < len(names) else str(seat)

    s = h.settlement or {}
    payments = h.payments
    return [
        str(h.number),
        _iso(h.started, tz),
        name(h.dealer),
        h.outcome,
        "; ".join(name(w) for w in _winners(h)),
        _listed(s.get("hand")),
        _listed(s.get("value")),
        *(["" for _ in names] if payments is None else [amount_csv(x) for x in payments]),
    ]


def export_csv(session: SessionRecord, tz: tzinfo | None = None) -> str:
    """The session as a spreadsheet: one row per hand (number, start time, dealer, outcome,
    winners, hand types and values from the settlement, each seat's payment in a column named
    by the player; blank where the hand is not settled), then a ``total`` row. Write it with
    ``encoding="utf-8-sig"`` so a spreadsheet reads the Chinese names right."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["hand", "time", "dealer", "outcome", "winner", "hand_type", "value", *_columns(session)]
    )
    for h in session.hands:
        writer.writerow(_hand_row(session, h, tz))
    writer.writerow(["total", "", "", "", "", "", "", *map(amount_csv, session.totals)])
    return out.getvalue()
