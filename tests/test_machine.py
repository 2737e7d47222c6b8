"""The table's state machine, driven by input events alone (no hardware, no clock)."""

from __future__ import annotations

import ast
import json
import string
from fractions import Fraction
from pathlib import Path

import pytest

from controller.profiles import load_profile
from controller.rules import settle, win_from_json
from controller.table import events as ev
from controller.table import machine
from controller.table.machine import RequestRefused, TableController
from controller.table.messages import QUESTIONS, REASONS, SEAT_ARGS, arg_names
from controller.table.state import replay


def check_words(out: list[ev.Event]) -> None:
    """Every reason and question says its key: a template that, filled with its arguments
    (plain JSON; seats as ints), is the English text the event carries."""
    for e in out:
        if isinstance(e, ev.PhaseChanged):
            templates, text = REASONS, e.reason
        elif isinstance(e, ev.QuestionAsked):
            templates, text = QUESTIONS, e.text
            assert e.args.get("seat") == e.seat
        else:
            continue
        assert e.key in templates, e
        assert templates[e.key].format(**e.args) == text
        assert e.args.keys() == arg_names(e.key), e
        assert json.loads(json.dumps(e.args)) == e.args
        for name in SEAT_ARGS & e.args.keys():
            assert type(e.args[name]) is int and 0 <= e.args[name] < 4, e


class Table:
    """A controller fed by hand; every output is kept, as the log would keep it."""

    def __init__(self) -> None:
        self.c = TableController()
        self.log: list[ev.Event] = []
        self.t = 100.0

    def feed(self, event_type: type[ev.Event], dt: float = 1.0, **fields) -> list[ev.Event]:
        self.t += dt
        out = self.c.handle(event_type(time=self.t, **fields))
        check_words(out)
        self.log += out
        return out

    def request(self, action: str, **args) -> list[ev.Event]:
        return self.feed(ev.Request, action=action, args=args, by="test")

    def press(self, seat: int, button: str, long: bool = False, dt: float = 1.0):
        return self.feed(ev.SeatPressed, dt=dt, seat=seat, button=button, long=long)

    def seat(self, seat: int, kind: str, *, flowers="", melds=(), open_tiles="", notes=(), dt=1.0):
        return self.feed(
            ev.CameraChanged,
            dt=dt,
            seat=seat,
            kind=kind,
            view_flowers=flowers,
            view_melds=[ev.MeldJson(*m) for m in melds],
            view_open=open_tiles,
            view_notes=list(notes),
        )

    @property
    def phase(self) -> str:
        return self.c.state.phase

    def start(self, dice=(3, 5), dealer=0) -> None:
        if not self.c.state.session:
            self.request("new_session", dealer=dealer)
        self.press(dealer, "confirm")
        assert self.phase == "shuffling"
        self.feed(ev.CommandDone, command="prepare_walls", result={"tile_set": 0})
        assert self.phase == "dice"
        self.feed(ev.CommandDone, command="dice", result=list(dice))
        assert self.phase == "playing"


def types(out: list[ev.Event]) -> list[str]:
    return [e.type for e in out]


def test_a_hand_from_shuffle_to_settled_score():
    t = Table()
    t.start(dice=(4, 4))
    assert t.c.state.kaibao
    t.seat(0, "meld", melds=[("pung", "EEE", 1)])
    t.seat(0, "meld", melds=[("pung", "EEE", 1), ("concealed_kong", "FFFF", None)])
    t.seat(
        0, "flower", flowers="1f 5f", melds=[("pung", "EEE", 1), ("concealed_kong", "FFFF", None)]
    )
    for s in (1, 2):
        t.seat(s, "meld", melds=[("pung", "111s", 0), ("pung", "222s", 0), ("pung", "333s", 0)])
    t.seat(2, "meld", melds=[("pung", "111s", 0), ("pung", "222s", 0), ("pung", "333s", 0)])
    t.press(0, "win", dt=30)
    assert t.phase == "win_declared"
    t.press(3, "confirm")
    assert t.phase == "reading"
    t.seat(
        0,
        "open_tiles",
        flowers="1f 5f",
        melds=[("pung", "EEE", 1), ("concealed_kong", "FFFF", None)],
        open_tiles="1m 2m 3m 4m 5m 6m C C",
    )
    # seats 1 and 2 each claimed three of seat 0's discards (承包), and seat 3 discarded:
    # whether seat 3 was ready decides who pays, and seat 3 did not lay the hand open
    [q] = t.c.state.open_questions
    assert (q.kind, q.seat) == ("ready", 3)
    assert t.c.state.proposal is None
    t.press(3, "confirm", long=True)  # not ready
    assert t.phase == "confirming", t.c.state.phase_reason
    assert t.c.state.proposal is not None
    out = t.press(2, "confirm")
    assert "settled" in types(out)
    settled = next(e for e in out if isinstance(e, ev.HandSettled))
    # the same win scored directly
    win = win_from_json(settled.wins[0])
    assert win.discarder == 3 and win.dice == (4, 4) and win.discarder_ready is False
    assert set(win.bound_pairs) == {(1, 0), (2, 0)}
    truth = settle([win], load_profile("shanghai"))
    assert [Fraction(settled.payments[str(s)]) for s in range(4)] == list(truth.totals)
    assert sum(t.c.state.totals) == 0
    assert t.phase == "idle"


def test_replaying_the_log_rebuilds_the_state():
    t = Table()
    t.start()
    t.seat(1, "flower", flowers="2f")
    t.press(1, "confirm", long=True)  # drawn hand
    assert t.phase == "idle" and t.c.state.hands_drawn == 1
    again = replay(ev.event_from_json(e.to_json()) for e in t.log)
    assert again.snapshot() == t.c.state.snapshot()


def test_requests_that_cannot_be_done_change_nothing():
    t = Table()
    with pytest.raises(RequestRefused):
        t.request("start_hand")
    t.request("new_session")
    with pytest.raises(RequestRefused):
        t.request("new_session", stake="1e100000000")
    with pytest.raises(RequestRefused):
        t.request("answer", question=7, value=True)
    with pytest.raises(RequestRefused):
        t.request("fly")
    assert t.c.state.session == 1


def _gangkai_question(t: Table) -> ev.QuestionAsked:
    """Seat 1 lays a flower, then declares a self-draw 6 s later: the timing leaves 杠开 open."""
    t.start()
    t.seat(1, "flower", flowers="1f")
    t.press(1, "win", dt=5)
    t.press(1, "confirm")
    t.seat(1, "open_tiles", flowers="1f", open_tiles="1m 2m 3m 4m 5m 6m 7m 8m 9m E E E S S")
    [q] = t.c.state.open_questions
    assert (q.kind, q.options) == ("gangkai", [True, False])
    return q


def test_an_answer_must_be_one_of_the_options_and_of_its_type():
    t = Table()
    q = _gangkai_question(t)
    before = t.c.state.copy()
    for value in (1, 0, "True", None):  # 1 == True in Python, but 1 is not an option
        with pytest.raises(RequestRefused, match="answer"):
            t.request("answer", question=q.id, value=value)
    assert t.c.state == before
    out = t.request("answer", question=q.id, value=True)
    assert "answer" in types(out) and "proposed" in types(out)
    [win] = t.c.state.proposal.wins
    assert win_from_json(win).after_flower is True


def test_can_undo_is_false_once_the_next_hand_is_shuffling():
    t = Table()
    t.start()
    t.request("declare_win", seat=2, how="self_draw")
    t.seat(2, "open_tiles", open_tiles="1m 1m 1m 2m 3m 4m 5m 6m 7m 8m 9m 9m 9m 5m")
    assert t.phase == "confirming", t.c.state.phase_reason
    t.press(0, "confirm")
    assert t.phase == "idle" and t.c.state.hands_settled == 1
    assert t.c.state.snapshot()["can_undo"] is True
    t.press(0, "confirm")  # the dealer starts the next hand
    assert t.phase == "shuffling"
    assert t.c.state.snapshot()["can_undo"] is False
    with pytest.raises(RequestRefused, match="undone"):
        t.request("undo")


@pytest.mark.parametrize("result", [{"die1": 3}, None, [7, 1], "x", [3]])
def test_dice_that_cannot_be_read_are_rolled_again(result):
    t = Table()
    t.request("new_session")
    t.press(0, "confirm")
    t.feed(ev.CommandDone, command="prepare_walls", result={"tile_set": 0})
    t.feed(ev.CommandDone, command="dice", result=result)
    assert t.phase == "dice" and "roll again" in t.c.state.phase_reason
    assert t.c.state.pending_command is None
    out = t.press(2, "confirm")
    assert [e.command for e in out if isinstance(e, ev.CommandRequested)] == ["dice"]


def test_a_pung_laid_is_not_taken_for_a_kong():
    t = Table()
    t.start()
    pung = ev.MeldJson("pung", "555p", 0)
    t.feed(ev.CameraChanged, seat=1, kind="meld", meld=pung, view_melds=[pung])
    assert t.c.state.seats[1].last_play == "meld"
    kong = ev.MeldJson("concealed_kong", "EEEE", None)
    t.feed(ev.CameraChanged, seat=1, kind="meld", meld=kong, view_melds=[pung, kong])
    assert t.c.state.seats[1].last_play == "kong"


# -- the words: keys and their English templates -----------------------------------------------


def _keys_in(call: str, position: int = 1) -> set[str]:
    """The keys machine.py passes to ``self._phase``/``self._ask`` (their second argument,
    ``self._set_how``'s third) where it is written out."""
    tree = ast.parse(Path(machine.__file__).read_text(encoding="utf-8"))
    keys = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == call
            and len(node.args) > position
            and isinstance(node.args[position], ast.Constant)
        ):
            keys.add(node.args[position].value)
    return keys


def test_every_key_the_machine_uses_has_a_template_and_every_template_is_used():
    reasons = _keys_in("_phase") | _keys_in("_set_how", 2)
    questions = _keys_in("_ask")
    assert reasons and reasons <= REASONS.keys(), reasons - REASONS.keys()
    assert questions and questions <= QUESTIONS.keys(), questions - QUESTIONS.keys()
    # the keys built in code: "gangkai_" + what, how + "_confirmed", what _missing returns,
    # and the new session's reason (set by the state, not by an event)
    built = {
        "gangkai_kong",
        "gangkai_flower",
        "discard_confirmed",
        "robbing_kong_confirmed",
        "waiting_hand",
        "session_started",
    }
    assert REASONS.keys() | QUESTIONS.keys() <= reasons | questions | built
    for template in (*REASONS.values(), *QUESTIONS.values()):
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        assert all(f.isidentifier() for f in fields), template  # plain {name}s, no format specs


def test_reasons_carry_their_key_and_arguments():
    t = Table()
    t.start(dice=(2, 5))
    phase = [e for e in t.log if isinstance(e, ev.PhaseChanged)][-1]
    assert (phase.key, phase.args) == ("wall_breaks", {"die1": 2, "die2": 5, "seat": 2})
    assert phase.reason == "dice 2+5: seat 2's wall breaks"  # the English as it always was
    t.press(1, "win")
    assert (t.c.state.phase_key, t.c.state.phase_args) == ("win_declared", {"seat": 1})
    out = t.press(3, "confirm")
    confirmed, waiting = [e for e in out if isinstance(e, ev.PhaseChanged)]
    assert (confirmed.key, confirmed.args) == ("discard_confirmed", {"seat": 3})
    assert confirmed.reason == "seat 3 confirmed the discard: lay the hand open"
    assert (waiting.key, waiting.args) == ("waiting_hand", {"seat": 1, "have": 0, "want": 14})
    t.seat(1, "open_tiles", open_tiles="1m 2m 3m")
    assert t.c.state.phase_key == "waiting_hand"
    assert t.c.state.phase_args == {"seat": 1, "have": 3, "want": 14}
    t.seat(1, "open_tiles", open_tiles="1m 1m 1m 2m 3m 4m 5m 6m 7m 8m 9m 9m 9m 5m")
    assert t.c.state.phase_key == "check_settlement"
    t.press(2, "confirm")  # settled from seat 2's panel: a seat, said by its name on a page
    assert t.c.state.phase_key == "settled_at_seat"
    assert t.c.state.phase_args == {"hand": 1, "seat": 2}
    assert t.c.state.phase_reason == (
        "hand 1 settled (confirmed by seat 2): press confirm for the next hand"
    )
    t.request("undo")
    assert t.c.state.phase_key == "undone_settled"
    t.request("confirm")  # from the dashboard: who confirmed is a word
    assert (t.c.state.phase_key, t.c.state.phase_args) == ("settled", {"hand": 1, "by": "test"})


def test_a_failure_says_its_reason_and_the_hardware_message():
    t = Table()
    t.request("new_session")
    t.press(0, "confirm")
    t.feed(ev.CommandFailed, command="prepare_walls", reason="jam", message="jam at wall 2")
    assert t.c.state.phase_key == "hardware_failed"
    assert t.c.state.phase_args == {"failure": "jam", "message": "jam at wall 2"}
    assert t.c.state.phase_reason == "jam at wall 2: fix it, then press confirm"


def test_questions_carry_their_key_and_arguments():
    t = Table()
    q = _gangkai_question(t)
    assert (q.key, q.args) == ("gangkai_flower", {"seat": 1})
    assert q.text == "杠开? Did seat 1 win on the replacement tile of their flower?"
    assert t.c.state.snapshot()["questions"][0]["key"] == "gangkai_flower"


def test_a_win_taken_back_is_not_declared_again_by_the_next_confirm():
    # found by the replay property: seat 0's withdrawn 胡 came back with seat 3's when the
    # discarder confirmed
    t = Table()
    t.start()
    t.press(0, "win")
    t.press(0, "win", long=True)  # taken back
    assert t.phase == "playing"
    t.press(3, "win")
    t.press(1, "confirm")  # seat 1 discarded
    assert t.phase == "reading"
    standing = {k: w.how for k, w in t.c.state.winners.items()}
    assert standing == {0: "withdrawn", 3: "discard"}
    t.seat(3, "open_tiles", open_tiles="1m 2m 3m 4m 5m 6m 7m 8m 9m E E E S S")  # 混一色
    assert t.phase == "confirming" and t.c.state.proposal is not None
    assert [w["winner"] for w in t.c.state.proposal.wins] == [3]


def test_several_winners_off_a_kong_are_told_only_a_discard_has_several():
    t = Table()
    t.start()
    t.seat(1, "meld", melds=[("pung", "333p", 0)])
    t.press(2, "win")
    t.press(3, "win")  # a second winner
    out = t.press(1, "confirm", long=True)  # but on seat 1's robbed kong
    assert t.phase == "reading"
    [why] = [e for e in out if isinstance(e, ev.PhaseChanged)][-1:]
    assert (why.key, why.args) == ("one_winner_only", {"seats": 2})
    t.seat(2, "open_tiles", open_tiles="1p 1p 2p 2p 3p 4p 5p 6p 7p 8p 9p C C C")  # 清一色-ish
    t.seat(3, "open_tiles", open_tiles="1s 2s 3s 4s 5s 6s 7s 8s 9s E E E S S")
    assert t.c.state.proposal is None  # nothing settles two robbed kongs
    assert t.c.state.phase_key == "one_winner_only"
    t.press(3, "win", long=True)  # seat 3 takes it back: seat 2's win is read
    assert {k: w.how for k, w in t.c.state.winners.items()} == {
        2: "robbing_kong",
        3: "withdrawn",
    }
    assert t.c.state.phase_key != "one_winner_only"
    assert t.phase in ("reading", "confirming")
    if t.c.state.proposal is not None:
        assert [w["winner"] for w in t.c.state.proposal.wins] == [2]


def test_a_win_taken_back_while_the_hand_is_read_goes_back_to_play():
    t = Table()
    t.start()
    t.press(2, "win")
    t.press(2, "confirm")  # self-draw
    assert t.phase == "reading"
    t.press(2, "win", long=True)
    assert t.phase == "playing"
    assert t.c.state.winners[2].how == "withdrawn"
