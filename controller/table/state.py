"""The table's state, folded from the controller's own events.

:class:`TableState` changes only through :meth:`TableState.apply`, one output event at a time,
so the state after any prefix of the event log is the fold of that prefix
(:func:`replay`): a controller that restarts after a power cut reads its log and is where it
was. Inputs (presses, camera changes) never change the state directly; the controller turns
each into the output events that say what it made of it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controller.table import events as ev
from controller.table.ledger import amount_json
from controller.table.ledger import parse_amount as amount
from controller.table.messages import reason_text

SEATS = 4

PHASES = (
    "idle",  # between hands: waiting for a seat's confirm (or the dashboard) to start one
    "shuffling",  # the walls are being lowered, shuffled and raised
    "dice",  # the dice are rolling
    "playing",  # the hand is on: the camera follows flowers and melds
    "win_declared",  # a seat pressed 胡: waiting for how (the discarder confirms)
    "reading",  # waiting for the winning hand to be laid open and read
    "confirming",  # the settlement is shown (or a question is open): waiting for a confirm
)


@dataclass
class SeatState:
    """What lies open at one seat, as the controller took it from the camera."""

    flowers: str = ""
    melds: list[ev.MeldJson] = field(default_factory=list)
    open_tiles: str = ""
    flags: list[str] = field(default_factory=list)
    last_change: str = ""
    last_change_time: float | None = None
    # the last thing laid in play (a flower, a meld, a kong), for 杠开: the hand laid open
    # after a win, a removal or a correction is not one
    last_play: str = ""
    last_play_time: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "flowers": self.flowers,
            "melds": [{"kind": m.kind, "tiles": m.tiles, "from": m.source} for m in self.melds],
            "open_tiles": self.open_tiles,
            "flags": list(self.flags),
            "last_change": self.last_change,
        }


@dataclass
class ClosedHand:
    """What an undo needs to put back: the hand, and the dealer and 荒番 it started with."""

    hand: int
    dealer: int
    huangfan: int
    outcome: str  # "settled" or "drawn"
    payments: dict[str, int | str]
    proposal: ev.SettlementProposed | None
    seats: list[SeatState]
    winners: dict[int, ev.WinDeclared]
    dice: tuple[int, int] | None


@dataclass
class TableState:
    """Everything the controller knows. Read it; change it only through :meth:`apply`."""

    seq: int = 0  # events applied
    session: int = 0
    profile: str = "shanghai"
    stake: int | str = 1
    seat_names: list[str] = field(default_factory=lambda: ["East", "South", "West", "North"])
    hand: int = 0
    dealer: int = 0
    huangfan: int = 0  # the counter as the current (or next) hand starts
    phase: str = "idle"
    phase_reason: str = ""  # in English
    phase_key: str = ""  # the reason's key (controller.table.messages), "" in older logs
    phase_args: dict[str, Any] = field(default_factory=dict)
    phase_since: float = 0.0
    faults: dict[str, str] = field(default_factory=dict)
    pending_command: ev.CommandRequested | None = None
    dice: tuple[int, int] | None = None
    wall: int | None = None
    stacks: int | None = None
    kaibao: bool = False
    seats: list[SeatState] = field(default_factory=lambda: [SeatState() for _ in range(SEATS)])
    winners: dict[int, ev.WinDeclared] = field(default_factory=dict)
    questions: dict[int, ev.QuestionAsked] = field(default_factory=dict)
    answers: dict[int, Any] = field(default_factory=dict)
    asked: int = 0  # questions asked so far (ids)
    proposal: ev.SettlementProposed | None = None
    totals: list[Fraction] = field(default_factory=lambda: [Fraction(0)] * SEATS)
    closed: list[ClosedHand] = field(default_factory=list)
    hands_settled: int = 0
    hands_drawn: int = 0
    questions_this_hand: int = 0
    corrected: list[str] = field(default_factory=list)
    last_time: float = 0.0

    # -- the fold ------------------------------------------------------------------------------

    def apply(self, event: ev.Event) -> None:
        """Take one of the controller's own events into the state."""
        handler = _APPLY.get(type(event))
        if handler is None:
            raise TypeError(f"{event.type} is an input, not a controller event")
        handler(self, event)
        self.seq += 1
        self.last_time = event.time

    # -- views ---------------------------------------------------------------------------------

    @property
    def open_questions(self) -> list[ev.QuestionAsked]:
        return [q for i, q in sorted(self.questions.items()) if i not in self.answers]

    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON, for the dashboard and ``--json``."""
        return {
            "seq": self.seq,
            "session": self.session,
            "profile": self.profile,
            "stake": self.stake,
            "seat_names": list(self.seat_names),
            "hand": self.hand,
            "dealer": self.dealer,
            "huangfan": self.huangfan,
            "phase": self.phase,
            "phase_reason": self.phase_reason,
            "phase_key": self.phase_key,
            "phase_args": dict(self.phase_args),
            "faults": dict(self.faults),
            "dice": list(self.dice) if self.dice else None,
            "wall": self.wall,
            "stacks": self.stacks,
            "kaibao": self.kaibao,
            "seats": [s.to_json() for s in self.seats],
            "winners": {
                str(k): {"how": w.how, "discarder": w.discarder} for k, w in self.winners.items()
            },
            "questions": [q.to_json() for q in self.open_questions],
            "proposal": self.proposal.to_json() if self.proposal else None,
            "totals": [amount_json(t) for t in self.totals],
            "hands_settled": self.hands_settled,
            "hands_drawn": self.hands_drawn,
            "can_undo": bool(self.closed) and self.phase == "idle",
        }

    def copy(self) -> TableState:
        return copy.deepcopy(self)


# -- how each event changes the state --------------------------------------------------------


def _session(s: TableState, e: ev.SessionStarted) -> None:
    s.session, s.profile, s.stake = e.session, e.profile, e.stake
    s.seat_names = list(e.seats)
    s.dealer, s.hand, s.huangfan = e.dealer, 0, 0
    s.totals = [Fraction(0)] * SEATS
    s.closed = []
    s.phase, s.phase_since = "idle", e.time
    s.phase_key, s.phase_args = "session_started", {}
    s.phase_reason = reason_text(s.phase_key, s.phase_args)
    _clear_hand(s)


def _clear_hand(s: TableState) -> None:
    s.dice = s.wall = s.stacks = None
    s.kaibao = False
    s.seats = [SeatState() for _ in range(SEATS)]
    s.winners = {}
    s.questions, s.answers = {}, {}
    s.proposal = None
    s.questions_this_hand = 0
    s.corrected = []


def _phase(s: TableState, e: ev.PhaseChanged) -> None:
    s.phase, s.phase_reason, s.phase_since = e.phase, e.reason, e.time
    # an event older than the keys has none: the page shows its English reason
    s.phase_key, s.phase_args = e.key, dict(e.args)


def _fault(s: TableState, e: ev.FaultChanged) -> None:
    if e.active:
        s.faults[e.fault] = e.message
    else:
        s.faults.pop(e.fault, None)


def _hand_started(s: TableState, e: ev.HandStarted) -> None:
    _clear_hand(s)
    s.hand, s.dealer, s.huangfan = e.hand, e.dealer, e.huangfan


def _command(s: TableState, e: ev.CommandRequested) -> None:
    s.pending_command = e


def _learnt(s: TableState, e: ev.Learnt) -> None:
    if e.fact == "dice":
        v = e.value
        s.dice = (int(v["dice"][0]), int(v["dice"][1]))
        s.wall, s.stacks, s.kaibao = v["wall"], v["stacks"], bool(v["kaibao"])
    if e.fact in ("dice", "command_over"):
        s.pending_command = None


PLAYS = frozenset({"flower", "meld", "kong", "meld_changed", "flower_changed"})


def _seat_seen(s: TableState, e: ev.SeatSeen) -> None:
    if e.change == "corrected":
        s.corrected.append(f"seat {e.seat}")
    old = s.seats[e.seat]
    played = e.change in PLAYS
    s.seats[e.seat] = SeatState(
        flowers=e.flowers,
        melds=list(e.melds),
        open_tiles=e.open_tiles,
        flags=list(e.flags),
        last_change=e.change,
        last_change_time=e.time,
        last_play=e.change if played else old.last_play,
        last_play_time=e.time if played else old.last_play_time,
    )


def _win(s: TableState, e: ev.WinDeclared) -> None:
    if e.source == "correction":
        s.corrected.append(f"how seat {e.seat} won")
    s.winners[e.seat] = e


def _question(s: TableState, e: ev.QuestionAsked) -> None:
    s.questions[e.id] = e
    s.asked = max(s.asked, e.id)
    s.questions_this_hand += 1


def _answer(s: TableState, e: ev.QuestionAnswered) -> None:
    s.answers[e.id] = e.value


def _proposed(s: TableState, e: ev.SettlementProposed) -> None:
    s.proposal = e


def _settled(s: TableState, e: ev.HandSettled) -> None:
    s.closed.append(_closing(s, "settled", e.payments))
    for seat, x in e.payments.items():
        s.totals[int(seat)] += amount(x)
    s.dealer, s.huangfan = e.next_dealer, e.huangfan_next
    s.hands_settled += 1
    s.pending_command = None


def _drawn(s: TableState, e: ev.HandDrawn) -> None:
    s.closed.append(_closing(s, "drawn", {}))
    s.dealer, s.huangfan = e.next_dealer, e.huangfan_next
    s.hands_drawn += 1


def _closing(s: TableState, outcome: str, payments: dict[str, int | str]) -> ClosedHand:
    return ClosedHand(
        hand=s.hand,
        dealer=s.dealer,
        huangfan=s.huangfan,
        outcome=outcome,
        payments=dict(payments),
        proposal=s.proposal,
        seats=copy.deepcopy(s.seats),
        winners=dict(s.winners),
        dice=s.dice,
    )


def _undone(s: TableState, e: ev.SettlementUndone) -> None:
    last = s.closed.pop()
    for seat, x in last.payments.items():
        s.totals[int(seat)] -= amount(x)
    if last.outcome == "settled":
        s.hands_settled -= 1
    else:
        s.hands_drawn -= 1
    s.hand, s.dealer, s.huangfan = last.hand, last.dealer, last.huangfan
    s.seats, s.winners, s.proposal, s.dice = last.seats, last.winners, last.proposal, last.dice
    s.questions, s.answers = {}, {}
    s.pending_command = None


_APPLY: dict[type, Any] = {
    ev.SessionStarted: _session,
    ev.PhaseChanged: _phase,
    ev.FaultChanged: _fault,
    ev.HandStarted: _hand_started,
    ev.CommandRequested: _command,
    ev.Learnt: _learnt,
    ev.SeatSeen: _seat_seen,
    ev.WinDeclared: _win,
    ev.QuestionAsked: _question,
    ev.QuestionAnswered: _answer,
    ev.SettlementProposed: _proposed,
    ev.HandSettled: _settled,
    ev.HandDrawn: _drawn,
    ev.SettlementUndone: _undone,
}


def replay(events: Iterable[ev.Event], state: TableState | None = None) -> TableState:
    """The state after ``events`` (the controller's own; inputs in the stream are skipped)."""
    state = state or TableState()
    for e in events:
        if type(e) in _APPLY:
            state.apply(e)
    return state
