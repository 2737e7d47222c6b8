"""The table's state (controller/table/state.py): a fold of the controller's own events, so
replaying any prefix of the log gives the state the controller had there."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.table import events as ev
from controller.table.machine import RequestRefused, TableController
from controller.table.messages import QUESTIONS, REASONS
from controller.table.state import TableState, amount, amount_json, replay
from webui.openapi import DOCUMENT

# what lies open at a seat, as the camera could settle it: (flowers, melds, open tiles, notes)
VIEWS: list[tuple[str, list[tuple[str, str, int | None]], str, list[str]]] = [
    ("", [], "", []),
    ("1f", [], "", []),
    ("1f", [("pung", "EEE", 2)], "", []),
    ("1f", [("pung", "EEE", 2)], "1m 2m 3m 4m 5m 6m 7m 8m 9m S S", []),
    ("", [("kong", "7777p", 0)], "", []),
    ("", [], "1m 1m 1m 2m 3m 4m 5m 6m 7m 8m 9m 9m 9m 5m", ["a tile is unsure"]),
    ("", [("chow", "345p", 3)], "", ["meld: turned tile"]),
    ("1f 2f 3f 4f 5f 6f 7f 8f", [], "", []),
]

seats = st.integers(0, 3)
steps = st.one_of(
    st.tuples(st.just("press"), seats, st.sampled_from(["win", "confirm"]), st.booleans()),
    st.tuples(
        st.just("camera"),
        seats,
        st.sampled_from(["flower", "meld", "open_tiles", "removed"]),
        st.integers(0, len(VIEWS) - 1),
    ),
    st.tuples(st.just("done"), st.sampled_from(["prepare_walls", "dice", "clear_faults"])),
    st.tuples(st.just("dice"), st.integers(1, 6), st.integers(1, 6)),
    st.tuples(
        st.just("failed"),
        st.sampled_from(["prepare_walls", "dice"]),
        st.sampled_from(["jam", "timeout", "link_down", "lid_open", "no_device"]),
    ),
    st.tuples(
        st.just("device"),
        st.sampled_from(["fault", "faults_cleared", "lid_open", "lid_closed", "reset", "link"]),
    ),
    st.tuples(st.just("camera_status"), st.booleans()),
    st.tuples(st.just("answer"), st.booleans(), st.sampled_from([True, False, "ok", 1])),
    st.tuples(
        st.just("request"),
        st.sampled_from(
            [
                "start_hand",
                "confirm",
                "undo",
                "declare_drawn",
                "retry",
                "clear_fault",
                "self_draw",
                "discard",
                "new_session",
                "correct_how",
            ]
        ),
        seats,
    ),
    st.tuples(st.just("wait"), st.sampled_from([5.0, 30.0])),
)
# most steps move the hand along (what a table mostly sees); the rest are anything at all
advance = st.tuples(st.just("advance"), seats, st.integers(0, 5))
plans = st.lists(
    st.integers(0, 9).flatmap(lambda n: advance if n < 6 else steps), min_size=20, max_size=80
)

NINE_GATES = "1m 1m 1m 2m 3m 4m 5m 6m 7m 8m 9m 9m 9m 5m"


class Driver:
    """Drives a controller with the inputs the hardware, the camera and the players would
    give, and keeps every output as the log would."""

    def __init__(self) -> None:
        self.c = TableController()
        self.t = 1_000.0
        self.outputs: list[ev.Event] = []
        self.request("new_session", {"stake": "3/2"})

    def feed(self, event: ev.Event) -> None:
        before, count = self.c.state.copy(), len(self.outputs)
        try:
            self.outputs += self.c.handle(event)
        except RequestRefused:
            assert self.c.state == before  # a refused request changes nothing
            assert len(self.outputs) == count

    def request(self, action: str, args: dict[str, Any]) -> None:
        self.t += 1
        self.feed(ev.Request(time=self.t, action=action, args=args, by="test"))

    def advance(self, seat: int, choice: int) -> tuple[Any, ...]:
        """The step that moves the hand along from where it is (``seat`` and ``choice`` pick
        among the ways)."""
        s = self.c.state
        pending = s.pending_command.command if s.pending_command else None
        winners = sorted(s.winners)
        if s.phase == "idle":
            if choice >= 4:
                return ("request", "undo", seat)
            return ("press", s.dealer, "confirm", False)
        if s.phase in ("shuffling", "dice"):
            if pending == "dice":
                return ("dice", 1 + choice, 1 + seat)
            if pending is not None:
                return ("done", pending)
            return ("press", seat, "confirm", False)
        if s.phase == "playing":
            if choice == 0:
                return ("camera", seat, "meld", 2)
            if choice == 1:
                return ("camera", seat, "flower", 1)
            if choice == 5:
                return ("press", seat, "confirm", True)
            return ("press", seat, "win", False)
        if s.phase == "win_declared":
            if choice < 3:
                return ("press", winners[0], "confirm", False)
            return ("press", (winners[0] + 1 + seat % 3) % 4, "confirm", choice == 5)
        if s.phase == "reading" and winners:
            if choice == 4:
                return ("correct", winners[0])
            return ("camera", winners[0], "open_tiles", 5 if choice == 5 else 3)
        if s.open_questions:
            return ("answer", choice < 4, "ok")
        return ("press", seat, "confirm", False)

    def step(self, step: tuple[Any, ...]) -> None:
        if step[0] == "advance":
            step = self.advance(*step[1:])
        kind, *rest = step
        self.t += 1
        t = self.t
        if kind == "press":
            seat, button, long = rest
            self.feed(ev.SeatPressed(time=t, seat=seat, button=button, long=long))
        elif kind == "camera":
            seat, change, view = rest
            flowers, melds, open_tiles, notes = VIEWS[view]
            self.feed(
                ev.CameraChanged(
                    time=t,
                    seat=seat,
                    kind=change,
                    flagged=bool(notes),
                    note=notes[0] if notes else "",
                    view_flowers=flowers,
                    view_melds=[ev.MeldJson(*m) for m in melds],
                    view_open=open_tiles,
                    view_notes=list(notes),
                )
            )
        elif kind == "done":
            self.feed(ev.CommandDone(time=t, command=rest[0], result={"tile_set": 0}))
        elif kind == "dice":
            self.feed(ev.CommandDone(time=t, command="dice", result=list(rest)))
        elif kind == "failed":
            command, reason = rest
            self.feed(ev.CommandFailed(time=t, command=command, reason=reason, message=reason))
        elif kind == "device":
            data = {
                "fault": ("fault", {"fault": "jam", "label": "a jam"}),
                "faults_cleared": ("faults_cleared", {"cleared": ["jam", "tiles_short"]}),
                "lid_open": ("lid", {"open": True}),
                "lid_closed": ("lid", {"open": False}),
                "reset": ("reset", {"boot_id": 2}),
                "link": ("link_lost", {}),
            }[rest[0]]
            self.feed(ev.DeviceEvent(time=t, kind=data[0], data=data[1]))
        elif kind == "camera_status":
            self.feed(ev.CameraStatus(time=t, live=rest[0], message="gone"))
        elif kind == "answer":
            pick, value = rest
            open_questions = self.c.state.open_questions
            if open_questions:
                q = open_questions[0]
                if pick and q.options:
                    value = q.options[0]
                self.request("answer", {"question": q.id, "value": value})
        elif kind == "request":
            action, seat = rest
            if action == "self_draw":
                self.request("declare_win", {"seat": seat, "how": "self_draw"})
            elif action == "discard":
                discarder = (seat + 1) % 4
                self.request(
                    "declare_win", {"seat": seat, "how": "discard", "discarder": discarder}
                )
            elif action == "correct_how":
                self.request("correct", {"field": "how", "how": "self_draw"})
            elif action == "new_session":
                self.request("new_session", {"dealer": seat})
            else:
                self.request(action, {})
        elif kind == "correct":
            value = {"flowers": "", "melds": [], "open_tiles": NINE_GATES}
            self.request("correct", {"field": "seat", "seat": rest[0], "value": value})
        elif kind == "wait":
            self.t += rest[0]


def stored(events: list[ev.Event]) -> list[ev.Event]:
    """The events as the log gives them back: through their JSON text."""
    return [ev.event_from_json(ev.event_to_json_text(e)) for e in events]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(plans)
def test_replaying_any_prefix_is_folding_one_event_at_a_time(plan: list[tuple[Any, ...]]) -> None:
    driver = Driver()
    cuts = [len(driver.outputs)]
    states = [driver.c.state.copy()]
    for step in plan:
        driver.step(step)
        cuts.append(len(driver.outputs))
        states.append(driver.c.state.copy())
    log = stored(driver.outputs)
    assert log == driver.outputs
    # whatever the path, each reason and question says its key, and its English is the
    # key's template filled with its arguments
    for e in log:
        if isinstance(e, ev.PhaseChanged):
            assert REASONS[e.key].format(**e.args) == e.reason
        elif isinstance(e, ev.QuestionAsked):
            assert QUESTIONS[e.key].format(**e.args) == e.text

    folded = TableState()
    by_hand = [folded.copy()]
    for e in log:
        folded.apply(e)
        by_hand.append(folded.copy())
    for n in range(len(log) + 1):
        assert replay(log[:n]) == by_hand[n]
    # after every input the controller's state is the fold of the outputs so far
    for cut, state in zip(cuts, states, strict=True):
        assert by_hand[cut] == state
    assert by_hand[-1].seq == len(log)


def test_the_driver_reaches_settlements_and_undos() -> None:
    """The plan above can reach the whole hand: a settled hand, its undo, and a new one."""
    d = Driver()
    plan: list[tuple[Any, ...]] = [
        ("press", 0, "confirm", False),
        ("done", "prepare_walls"),
        ("dice", 3, 5),
        ("camera", 1, "meld", 2),
        ("press", 1, "win", False),
        ("press", 1, "confirm", False),
        ("camera", 1, "open_tiles", 3),
        ("press", 2, "confirm", False),
    ]
    for step in plan:
        d.step(step)
    assert d.c.state.hands_settled == 1 and d.c.state.phase == "idle"
    assert d.c.state.snapshot()["can_undo"]
    d.step(("request", "undo", 0))
    assert d.c.state.hands_settled == 0 and d.c.state.phase == "confirming"
    assert not d.c.state.snapshot()["can_undo"]
    d.step(("press", 3, "confirm", False))
    assert replay(stored(d.outputs)) == d.c.state
    assert sum(d.c.state.totals) == 0 and any(d.c.state.totals)


def test_apply_refuses_an_input_event() -> None:
    state = TableState()
    for event in (
        ev.SeatPressed(time=1.0, seat=0, button="confirm"),
        ev.CommandDone(time=1.0, command="dice", result=[1, 2]),
        ev.Request(time=1.0, action="start_hand"),
    ):
        with pytest.raises(TypeError, match="input"):
            state.apply(event)
    assert state == TableState()  # nothing counted, nothing changed
    # a replay skips inputs in the stream
    session = ev.SessionStarted(
        time=2.0, session=1, profile="shanghai", stake=1, seats=["A", "B", "C", "D"], dealer=3
    )
    again = replay([ev.SeatPressed(time=1.0, seat=0, button="win"), session])
    assert (again.seq, again.session, again.dealer, again.last_time) == (1, 1, 3, 2.0)


def test_the_snapshot_is_json_with_what_the_dashboard_reads() -> None:
    d = Driver()
    d.request("new_session", {"stake": "0.0625"})
    assert d.c.state.snapshot()["stake"] == "1/16"
    for step in [
        ("press", 0, "confirm", False),
        ("done", "prepare_walls"),
        ("dice", 4, 4),
        ("camera", 1, "meld", 2),
        ("press", 1, "win", False),
        ("press", 1, "confirm", False),
        ("camera", 1, "open_tiles", 3),
    ]:
        d.step(step)
    snap = d.c.state.snapshot()
    assert json.loads(json.dumps(snap)) == snap
    schema = DOCUMENT["components"]["schemas"]["State"]["properties"]
    assert set(snap) == set(schema) - {"server_time"}
    assert snap["phase"] == "confirming" and snap["proposal"] is not None
    assert snap["winners"] == {"1": {"how": "self_draw", "discarder": None}}
    assert snap["dice"] == [4, 4] and snap["kaibao"] is True
    seat = snap["seats"][1]
    assert set(seat) == {"flowers", "melds", "open_tiles", "flags", "last_change"}
    assert seat["melds"] == [{"kind": "pung", "tiles": "EEE", "from": 2}]
    assert seat["last_change"] == "open_tiles"
    # the totals of a fractional stake stay exact, as text
    d.step(("press", 0, "confirm", False))
    totals = d.c.state.snapshot()["totals"]
    assert all(isinstance(x, int | str) for x in totals)
    assert sum(amount(x) for x in totals) == 0 and any(isinstance(x, str) for x in totals)


def test_can_undo_only_in_idle_after_a_closed_hand() -> None:
    d = Driver()
    assert not d.c.state.snapshot()["can_undo"]  # idle, nothing closed
    for step in [("press", 0, "confirm", False), ("done", "prepare_walls"), ("dice", 2, 3)]:
        d.step(step)
    assert not d.c.state.snapshot()["can_undo"]  # playing
    d.step(("press", 2, "confirm", True))  # drawn
    assert d.c.state.phase == "idle" and d.c.state.snapshot()["can_undo"]
    d.step(("press", 0, "confirm", False))
    assert d.c.state.phase == "shuffling" and not d.c.state.snapshot()["can_undo"]
    d.step(("done", "prepare_walls"))
    assert not d.c.state.snapshot()["can_undo"]  # rolling the dice


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (Fraction(3), 3),
        (Fraction(-7), -7),
        (Fraction(0), 0),
        (Fraction(3, 2), "3/2"),
        (Fraction(-1, 3), "-1/3"),
        (5, 5),
    ],
)
def test_amounts_are_written_exactly(value: Fraction | int, written: int | str) -> None:
    assert amount_json(value) == written
    assert type(amount_json(value)) is type(written)
    assert amount(written) == value


@given(st.fractions(max_denominator=10_000))
def test_amounts_round_trip(value: Fraction) -> None:
    assert amount(amount_json(value)) == value
    assert amount(json.loads(json.dumps(amount_json(value)))) == value


def test_the_snapshot_says_the_reason_s_key_beside_its_english() -> None:
    d = Driver()
    snap = d.c.state.snapshot()
    assert (snap["phase_key"], snap["phase_args"]) == ("session_started", {})
    assert snap["phase_reason"] == REASONS["session_started"]
    for step in [("press", 0, "confirm", False), ("done", "prepare_walls"), ("dice", 3, 5)]:
        d.step(step)
    snap = d.c.state.snapshot()
    assert snap["phase_key"] == "wall_breaks"
    assert snap["phase_args"] == {"die1": 3, "die2": 5, "seat": snap["wall"]}
    assert snap["phase_reason"] == f"dice 3+5: seat {snap['wall']}'s wall breaks"
    assert json.loads(json.dumps(snap)) == snap


def test_an_old_log_without_keys_replays_with_its_english() -> None:
    """Events written before the keys existed: no key, no args; the reason and the question's
    text are what a page shows."""
    lines = [
        {
            "type": "session_started",
            "time": 1,
            "session": 1,
            "profile": "shanghai",
            "stake": 1,
            "seats": ["A", "B", "C", "D"],
            "dealer": 0,
            "v": 1,
        },
        {
            "type": "hand_started",
            "time": 2,
            "session": 1,
            "hand": 1,
            "dealer": 0,
            "huangfan": 0,
            "v": 1,
        },
        {
            "type": "phase",
            "time": 3,
            "phase": "reading",
            "reason": "seat 1 wins: lay the hand open",
            "v": 1,
        },
        {
            "type": "question",
            "time": 4,
            "id": 1,
            "kind": "gangkai",
            "text": "杠开? Did seat 1 win on the replacement tile of their kong?",
            "options": [True, False],
            "seat": 1,
            "v": 1,
        },
    ]
    state = replay(ev.event_from_json(json.dumps(line)) for line in lines)
    snap = state.snapshot()
    assert snap["phase_reason"] == "seat 1 wins: lay the hand open"
    assert (snap["phase_key"], snap["phase_args"]) == ("", {})
    [q] = snap["questions"]
    assert (q["key"], q["args"]) == ("", {})
    assert q["text"].startswith("杠开?")
    # and the controller goes on from it, its new events with keys
    drawn = {"type": "phase", "time": 5, "phase": "idle", "reason": "hand 1 drawn", "v": 1}
    state.apply(ev.event_from_json(drawn))
    c = TableController(state)
    out = c.handle(ev.SeatPressed(time=6.0, seat=0, button="confirm"))
    assert [(e.phase, e.key) for e in out if isinstance(e, ev.PhaseChanged)] == [
        ("shuffling", "shuffling")
    ]
