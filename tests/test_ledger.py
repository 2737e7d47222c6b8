"""The ledger (controller.table.ledger): sessions, hands and totals folded from the events,
exact and zero-sum, the same live, replayed, or read back from the log's file."""

from __future__ import annotations

import csv
import io
import itertools
import re
from datetime import UTC
from fractions import Fraction
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import StorageError
from controller.table import events as ev
from controller.table.ledger import (
    DRAWN,
    OPEN,
    SETTLED,
    UNDONE,
    Ledger,
    amount_csv,
    amount_json,
    build_ledger,
    export_csv,
    export_json,
    parse_amount,
    settle_up,
)
from controller.table.store import EventLog

NAMES = ["东家", "Bo", "Cai", "Dee"]


# -- building events -----------------------------------------------------------------------------


def start(n: int, t: float = 0.0, seats: list[str] | None = None) -> ev.SessionStarted:
    return ev.SessionStarted(
        time=t, session=n, profile="shanghai", stake=2, seats=seats or NAMES, dealer=0
    )


def hand(s: int, h: int, t: float = 0.0, dealer: int = 0, huangfan: int = 0) -> ev.HandStarted:
    return ev.HandStarted(time=t, session=s, hand=h, dealer=dealer, huangfan=huangfan)


def settle(s: int, h: int, pay: list[int | str], t: float = 0.0, winner: int = 0) -> ev.HandSettled:
    return ev.HandSettled(
        time=t,
        session=s,
        hand=h,
        wins=[{"winner": winner, "concealed": "123p"}],
        settlement={"winner": winner, "hand": "平胡", "value": 4, "breakdown": {"base": 2}},
        payments={str(i): x for i, x in enumerate(pay)},
        next_dealer=0,
        huangfan_next=0,
        corrected=["how seat 0 won"],
    )


def draw(s: int, h: int, t: float = 0.0) -> ev.HandDrawn:
    return ev.HandDrawn(time=t, session=s, hand=h, next_dealer=0, huangfan_next=1, reason="wall")


def undo(s: int, h: int, t: float = 0.0) -> ev.SettlementUndone:
    return ev.SettlementUndone(time=t, session=s, hand=h, reason="misread")


F = Fraction

# -- random tables (hypothesis) ------------------------------------------------------------------

amounts = st.fractions(min_value=-40, max_value=40, max_denominator=4)


def written(x: Fraction) -> int | str:
    """An amount as an event writes it: an int, or text."""
    return x.numerator if x.denominator == 1 else str(x)


@st.composite
def tables(draw_: st.DrawFn) -> list[ev.Event]:
    """A plausible log: sessions; hands started one at a time; each settled (zero-sum payments)
    or drawn; undos of the last closed hands (one or several in a row), after which the hand is
    played again; other events between them, which the ledger passes over."""
    events: list[ev.Event] = []
    session = 0
    next_hand = 1
    open_hand: int | None = None
    closed: list[int] = []
    for step in range(draw_(st.integers(0, 40))):
        t = float(step)
        moves = ["session"] if session == 0 else ["session", "noise"]
        if session and open_hand is None:
            moves.append("start")
            if closed:
                moves.append("undo")
        if open_hand is not None:
            moves += ["settle", "settle", "draw"]
        move = draw_(st.sampled_from(moves))
        if move == "session":
            session += 1
            next_hand, open_hand, closed = 1, None, []
            events.append(start(session, t))
        elif move == "noise":
            events.append(ev.PhaseChanged(time=t, phase="idle"))
        elif move == "start":
            open_hand, next_hand = next_hand, next_hand + 1
            events.append(hand(session, open_hand, t, dealer=draw_(st.integers(0, 3))))
        elif move == "undo":
            open_hand = closed.pop()
            events.append(undo(session, open_hand, t))
        else:
            assert open_hand is not None
            if move == "settle":
                pay = draw_(st.lists(amounts, min_size=3, max_size=3))
                pay.append(-sum(pay))
                events.append(settle(session, open_hand, [written(x) for x in pay], t))
            else:
                events.append(draw(session, open_hand, t))
            closed.append(open_hand)
            open_hand = None
    return events


def expected_totals(events: list[ev.Event]) -> dict[int, list[Fraction]]:
    """The totals the plain way: each hand's latest payments, dropped again when undone or
    drawn, summed per session."""
    standing: dict[int, dict[int, list[Fraction]]] = {}
    for e in events:
        if isinstance(e, ev.SessionStarted):
            standing[e.session] = {}
        elif isinstance(e, ev.HandSettled):
            standing[e.session][e.hand] = [F(e.payments[str(i)]) for i in range(4)]
        elif isinstance(e, ev.HandDrawn | ev.SettlementUndone):
            standing[e.session].pop(e.hand, None)
    return {
        s: [sum((p[i] for p in hands.values()), F(0)) for i in range(4)]
        for s, hands in standing.items()
    }


@settings(max_examples=300, deadline=None)
@given(tables())
def test_totals_are_the_sum_of_the_hands_that_stand(events):
    ledger = build_ledger(events)
    ledger.check_zero_sum()
    want = expected_totals(events)
    assert {s.number: s.totals for s in ledger.sessions} == want
    for session in ledger.sessions:
        assert sum(session.totals) == 0
        by_hand = [h.payments for h in session.hands if h.outcome == SETTLED]
        assert session.totals == [sum((p[i] for p in by_hand), F(0)) for i in range(4)]
        for h in session.hands:
            assert h.outcome in (OPEN, SETTLED, DRAWN, UNDONE)
            assert (h.payments is not None) == (h.outcome == SETTLED)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_live_equals_replay_and_an_undo_restores_the_totals_before(events):
    live = Ledger()
    before: dict[int, list[list[Fraction]]] = {}  # per session: totals before each closing
    for e in events:
        if isinstance(e, ev.HandSettled | ev.HandDrawn):
            before.setdefault(e.session, []).append(live.session(e.session).totals)
        live.apply(e)
        if isinstance(e, ev.SettlementUndone):
            assert live.session(e.session).totals == before[e.session].pop()
            assert live.session(e.session).hand(e.hand).outcome == UNDONE
    assert live == build_ledger(events) == build_ledger(enumerate(events, 1))


@settings(max_examples=25, deadline=None)
@given(tables())
def test_a_log_written_to_a_file_replays_to_the_same_ledger(tmp_path_factory, events):
    path = tmp_path_factory.mktemp("log") / "table.db"
    with EventLog(path) as log:
        if events:
            log.append(events[0])
            log.append_many(events[1:])
    with EventLog(path) as log:
        read = list(log.events())
        assert [e for _, e in read] == events
        assert build_ledger(read) == build_ledger(events)
        assert build_ledger(log.reader().events()) == build_ledger(events)


@settings(max_examples=100, deadline=None)
@given(tables())
def test_exports_carry_the_totals_exactly(events):
    for session in build_ledger(events).sessions:
        data = export_json(session, tz=UTC)
        assert [parse_amount(x) for x in data["totals"]] == session.totals
        assert len(data["hands"]) == len(session.hands)
        transfers = [(t["payer"], t["payee"], parse_amount(t["amount"])) for t in data["settle_up"]]
        assert transfers == settle_up(session.totals)
        rows = list(csv.reader(io.StringIO(export_csv(session, tz=UTC))))
        assert len(rows) == len(session.hands) + 2 and rows[-1][0] == "total"
        assert rows[-1][7:] == [amount_csv(x) for x in session.totals]


# -- examples ------------------------------------------------------------------------------------


def test_undo_then_settle_again_keeps_the_history():
    events = [
        start(1, 100.0),
        hand(1, 1, 101.0),
        settle(1, 1, [-1, -1, 3, -1], 102.0),
        hand(1, 2, 103.0, dealer=1),
        settle(1, 2, [4, "-3/2", "-3/2", -1], 104.0),
        undo(1, 2, 105.0),
        settle(1, 2, [2, "-1/2", "-1/2", -1], 106.0),
        hand(1, 3, 107.0, dealer=1),
        draw(1, 3, 108.0),
        undo(1, 3, 109.0),
        undo(1, 2, 110.0),
    ]
    ledger = build_ledger(events)
    s = ledger.session(1)
    assert [h.outcome for h in s.hands] == [SETTLED, UNDONE, UNDONE]
    assert s.totals == [-1, -1, 3, -1]
    h2 = s.hand(2)
    assert h2 is not None and [c.outcome for c in h2.history] == [SETTLED, UNDONE, SETTLED, UNDONE]
    assert h2.payments is None and h2.history[2].payments == (2, F(-1, 2), F(-1, 2), -1)
    ledger.apply(settle(1, 2, [1, 1, 1, -3], 111.0))
    assert s.totals == [0, 0, 4, -4] and s.hand(2).outcome == SETTLED
    assert s.hand(2).corrected == ("how seat 0 won",)
    ledger.check_zero_sum()


def test_a_hand_that_is_not_zero_sum_is_caught():
    ledger = build_ledger([start(1), hand(1, 1), settle(1, 1, [1, 1, 1, -2])])
    with pytest.raises(StorageError, match=r"session 1 hand 1: .* sum to 1, not 0"):
        ledger.check_zero_sum()
    # an undone settlement that did not add up is still caught: the history is checked too
    ledger.apply(undo(1, 1))
    assert ledger.session(1).totals == [0, 0, 0, 0]
    with pytest.raises(StorageError, match="sum to 1"):
        ledger.check_zero_sum()


@pytest.mark.parametrize(
    "events, words",
    [
        ([hand(1, 1)], "session 1 was never started"),
        ([start(1), start(1)], "session 1 was started before"),
        ([start(1), settle(1, 1, [0, 0, 0, 0])], "hand 1 of session 1 never started"),
        ([start(1), hand(1, 1), draw(1, 1), draw(1, 1)], "already drawn; undo it first"),
        ([start(1), hand(1, 1), draw(1, 1), hand(1, 1)], "started again while drawn"),
        ([start(1), hand(1, 1), undo(1, 1)], "last closed hand of session 1 is none"),
        (
            [start(1), hand(1, 1), draw(1, 1), hand(1, 2), draw(1, 2), undo(1, 1)],
            "undo of hand 1, but the last closed hand of session 1 is 2",
        ),
        ([start(1), hand(1, 1), settle(1, 1, [0, 0, 0, 0, 0])], "seat 4, at a table of 4"),
        ([start(1), hand(1, 1), settle(1, 1, [0.5, -0.5, 0, 0])], "not an exact amount"),
        ([start(1), hand(1, 1), settle(1, 1, ["1/0", 0, 0, 0])], "not an exact amount"),
    ],
)
def test_events_that_do_not_add_up_are_refused(events, words):
    with pytest.raises(StorageError, match=re.escape(words)):
        build_ledger(events)
    with pytest.raises(StorageError, match=rf"event {len(events)} \("):
        build_ledger(enumerate(events, 1))


def test_amounts_are_written_exactly():
    assert [parse_amount(x) for x in (3, "-3/2", " 1.25 ", F(1, 3))] == [
        3,
        F(-3, 2),
        F(5, 4),
        F(1, 3),
    ]
    for bad in (True, 0.5, None, "three"):
        with pytest.raises(ValueError):
            parse_amount(bad)
    assert [amount_json(x) for x in (F(4), F(-3, 2), 0)] == [4, "-3/2", 0]
    assert [amount_csv(x) for x in (F(4), F(-3, 2), F(1, 3), F(-2, 3), F(1, 20000))] == [
        "4",
        "-1.5000",
        "0.3333",
        "-0.6667",
        "0.0000",
    ]


def test_export_json_and_csv_of_a_session():
    events = [
        start(3, 0.0, seats=["Li", "Li", "王", ""]),
        hand(3, 1, 60.0, dealer=1, huangfan=1),
        settle(3, 1, [-2, "9/2", "-3/2", -1], 120.0, winner=1),
        hand(3, 2, 180.0, dealer=1),
        draw(3, 2, 240.0),
        hand(3, 3, 300.0, dealer=1),
    ]
    session = build_ledger(events).session(3)
    data = export_json(session, tz=UTC)
    assert (
        data["session"] == 3
        and data["stake"] == 2
        and data["started"] == "1970-01-01T00:00:00+00:00"
    )
    assert data["seats"] == ["Li", "Li", "王", "Seat 3"]
    first, second, third = data["hands"]
    assert first["payments"] == [-2, "9/2", "-3/2", -1] and first["outcome"] == "settled"
    assert first["settlement"]["breakdown"] == {"base": 2} and first["huangfan"] == 1
    assert first["history"][0]["at"] == "1970-01-01T00:02:00+00:00"
    assert second["outcome"] == "drawn" and second["payments"] is None
    assert third["outcome"] == "open" and third["history"] == []
    assert data["totals"] == [-2, "9/2", "-3/2", -1]
    assert data["settle_up"] == [
        {"payer": 0, "payee": 1, "amount": 2},
        {"payer": 2, "payee": 1, "amount": "3/2"},
        {"payer": 3, "payee": 1, "amount": 1},
    ]
    rows = list(csv.reader(io.StringIO(export_csv(session, tz=UTC))))
    assert rows[0] == [
        *("hand", "time", "dealer", "outcome", "winner", "hand_type", "value"),
        *("Li (seat 0)", "Li (seat 1)", "王", "Seat 3"),
    ]
    assert rows[1] == [
        "1",
        "1970-01-01T00:01:00+00:00",
        "Li",
        "settled",
        "Li",
        "平胡",
        "4",
        "-2",
        "4.5000",
        "-1.5000",
        "-1",
    ]
    assert rows[2][3] == "drawn" and rows[2][4:] == [""] * 7
    assert rows[3][3] == "open"
    assert rows[4] == ["total", "", "", "", "", "", "", "-2", "4.5000", "-1.5000", "-1"]


def test_csv_lists_every_winner_of_a_multiple_win():
    multi = ev.HandSettled(
        time=5.0,
        session=1,
        hand=1,
        wins=[{"winner": 1}, {"winner": 3}],
        settlement={
            "wins": [{"winner": 1}, {"winner": 3}],
            "hand": ["平胡", "对对胡"],
            "value": [2, 8],
        },
        payments={"0": -10, "1": 2, "3": 8},
        next_dealer=0,
        huangfan_next=0,
    )
    session = build_ledger([start(1), hand(1, 1), multi]).session(1)
    row = list(csv.reader(io.StringIO(export_csv(session, tz=UTC))))[1]
    assert row[4:] == ["Bo; Dee", "平胡; 对对胡", "2; 8", "-10", "2", "0", "8"]


# -- settling up ---------------------------------------------------------------------------------


def fewest_transfers(balances: tuple[Fraction, ...]) -> int:
    """By brute force: the seats not square, less the most groups they split into that each
    sum to zero (each group settles among itself in one transfer fewer than its size)."""
    owing = tuple(x for x in balances if x)

    @cache
    def groups(left: frozenset[int]) -> int:
        if not left:
            return 0
        first = min(left)
        rest = left - {first}
        best = -1
        for size in range(len(rest) + 1):
            for others in itertools.combinations(sorted(rest), size):
                group = {first, *others}
                if sum(owing[i] for i in group) == 0:
                    more = groups(left - group)
                    if more >= 0:
                        best = max(best, more + 1)
        return best

    return len(owing) - groups(frozenset(range(len(owing))))


def check_transfers(totals: list[Fraction], transfers: list[tuple[int, int, Fraction]]) -> None:
    balance = list(totals)
    for payer, payee, x in transfers:
        assert x > 0 and totals[payer] < 0 < totals[payee]
        balance[payer] += x
        balance[payee] -= x
    assert balance == [0] * len(totals)


def test_settle_up_is_fewest_for_every_four_seat_table():
    values = range(-4, 5)
    for a, b, c in itertools.product(values, repeat=3):
        totals = [F(a), F(b), F(c), F(-(a + b + c))]
        transfers = settle_up(totals)
        check_transfers(totals, transfers)
        assert len(transfers) == fewest_transfers(tuple(totals)), totals


@settings(max_examples=300, deadline=None)
@given(st.lists(amounts, min_size=3, max_size=3))
def test_settle_up_is_fewest_for_four_seats_with_fractions(three):
    totals = [*three, -sum(three)]
    transfers = settle_up(totals)
    check_transfers(totals, transfers)
    assert len(transfers) == fewest_transfers(tuple(totals))


def test_settle_up_from_five_seats_can_miss_a_pair():
    totals = [F(x) for x in (4, 3, -2, -2, -3)]
    transfers = settle_up(totals)
    check_transfers(totals, transfers)
    assert len(transfers) == 4 and fewest_transfers(tuple(totals)) == 3
    assert settle_up([0, 0, 0, 0]) == []
    with pytest.raises(StorageError, match="do not sum to zero"):
        settle_up([1, 0, 0, 0])
