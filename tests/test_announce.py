"""The spoken settlement (webui/announce.py): the words, in Mandarin and English, and the
speech engine there or not (a stand-in espeak-ng on PATH), never holding the controller up."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import random
import stat
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules import WinType, settle, settlement_to_dict
from controller.rules.generate import random_win
from controller.rules.win import wins_from_json
from controller.table import events as ev
from webui.announce import MOST, WAYS, Announcer, announcement, chinese_number

NAMES = ["Ann", "Bo", "Cy", "Di"]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def settled(make_win, shanghai):
    """A settlement dict of the wins built from the notation."""

    def build(*wins) -> dict[str, Any]:
        return settlement_to_dict(settle(list(wins), shanghai))

    return build


# -- numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "零"),
        (1, "一"),
        (2, "二"),
        (10, "十"),
        (12, "十二"),
        (20, "二十"),
        (36, "三十六"),
        (100, "一百"),
        (105, "一百零五"),
        (110, "一百一十"),
        (1000, "一千"),
        (1005, "一千零五"),
        (2020, "二千零二十"),
        (10_000, "一万"),
        (10_050, "一万零五十"),
        (123_456, "十二万三千四百五十六"),
        (-8, "负八"),
    ],
)
def test_chinese_numbers(n, text):
    assert chinese_number(n) == text


def test_two_before_a_measure_word_is_liang():
    assert chinese_number(2, measure=True) == "两"
    assert chinese_number(12, measure=True) == "十二"


# -- the words -------------------------------------------------------------------------------------


def test_gangkai_qingpeng_two_lezi(settled, make_win):
    s = settled(make_win("111p 222p 333p [4444p<2] 5p +5p", winner=1, after_kong=True))
    assert announcement(s, names=NAMES, lezi=10) == "Bo自摸。杠开！清碰，两勒子。"
    assert announcement(s, language="en", names=NAMES, lezi=10) == (
        "Bo wins by self-draw. Gang kai! One suit, all pungs, two lezi."
    )


def test_lezi_read_off_the_working_without_the_profile(settled, make_win):
    s = settled(make_win("111p 222p 333p [4444p<2] 5p +5p", winner=1, after_kong=True))
    assert announcement(s, names=NAMES) == "Bo自摸。杠开！清碰，两勒子。"


def test_a_raise_to_one_lezi(settled, make_win):
    s = settled(make_win("123m 456m 789m [EEEE<2] S +S", winner=1, after_kong=True))
    assert announcement(s, names=NAMES, lezi=10) == "Bo自摸。杠开！混一色，一勒子。"


def test_a_flowers_hand_is_said_in_points_with_its_doublers(settled, make_win):
    s = settled(make_win("123m 456m 789m [EEE<2] 春梅 S +S", winner=3, huangfan=1))
    assert announcement(s, names=NAMES, lezi=10) == "Di自摸。混一色，荒番，十分。"
    assert announcement(s, language="en", names=NAMES, lezi=10) == (
        "Di wins by self-draw. One suit and honours, doubled by huang fan, 10 points."
    )


def test_a_flowers_hand_at_its_cap_is_said_in_lezi(settled, make_win):
    s = settled(make_win("123m 456m [EEEE<2] [SSSS<3] 春夏秋冬 C +C", winner=1))
    assert s["value"] == s["breakdown"]["cap"] == 10
    assert announcement(s, names=NAMES, lezi=10) == "Bo自摸。混一色，一勒子。"


def test_on_a_discard_and_robbing_a_kong(settled, make_win):
    s = settled(make_win("111m 999m [EEE<3] 555m 7m +7m", how="discard", discarder=3, winner=0))
    assert announcement(s, names=NAMES, lezi=10).startswith("Di点炮，Ann胡了。")
    assert announcement(s, language="en", names=NAMES).startswith("Ann wins on Di's discard. ")
    s = settled(
        make_win("111m 999m [EEE<3] 55m 67m +8m", how="robbing_kong", discarder=2, winner=0)
    )
    assert announcement(s, names=NAMES).startswith("Ann抢Cy的杠。")
    assert announcement(s, language="en", names=NAMES).startswith("Ann wins robbing Cy's kong.")


def test_several_winners_on_one_discard(shanghai):
    data = json.loads((EXAMPLES / "one-discard-two-winners.json").read_text())
    s = settlement_to_dict(settle(wins_from_json(data), shanghai))
    text = announcement(s, names=NAMES)
    assert text.startswith("一炮双响！Di点炮，Ann胡了。")
    assert "Di点炮，Cy胡了。" in text
    assert announcement(s, language="en", names=NAMES).startswith(
        "Two winners on one discard! Ann wins on Di's discard."
    )


def test_seats_without_names_are_said_by_number(settled, make_win):
    s = settled(make_win("111p 222p 333p [4444p<1] 5p +5p", winner=2, after_kong=True))
    assert announcement(s).startswith("2号位自摸。")
    assert announcement(s, language="en").startswith("Seat 2 wins by self-draw.")
    assert announcement(s, names=["", "", "  ", ""]).startswith("2号位")


def test_off_and_an_invalid_settlement_say_nothing(settled, make_win):
    s = settled(make_win("111p 222p 333p [4444p<2] 5p +5p", winner=1, after_kong=True))
    assert announcement(s, language="off") == ""
    assert announcement({"valid": False, "hand": None, "value": 0}) == ""


def test_eight_flowers(settled, make_win):
    s = settled(make_win("[EEE<2] 春夏秋冬梅兰竹菊", how="eight_flowers", winner=1))
    text = announcement(s, names=NAMES, lezi=10)
    assert text.startswith("Bo胡了。八花齐")


# -- what cannot be worded ------------------------------------------------------------------------


@contextlib.contextmanager
def warnings_logged() -> Iterator[list[str]]:
    """The announcer's warnings while the block runs (caplog is a per-test fixture, which
    Hypothesis's examples cannot share)."""
    got: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record.getMessage())

    handler = Keep(logging.WARNING)
    logger = logging.getLogger("webui.announce")
    logger.addHandler(handler)
    try:
        yield got
    finally:
        logger.removeHandler(handler)


def test_a_winner_that_is_no_seat_is_not_said(caplog):
    # the colleague's finds: these were said "None号位胡了。。" and "Seat [True, 25] wins."
    with caplog.at_level(logging.WARNING, logger="webui.announce"):
        assert announcement({"winner": None, "hand": "清碰", "value": 10}, names=NAMES) == ""
        assert announcement({"winner": [True, 25], "value": 10}, language="en") == ""
        # JSON's true is 1 to Python, and 4 is past the table's last seat
        assert announcement({"winner": True, "value": 10}, names=NAMES) == ""
        assert announcement({"winner": 4, "value": 10}, names=NAMES) == ""
    assert caplog.text.count("winner could not be said") == 4


def test_what_cannot_be_worded_is_left_out_and_the_rest_said(caplog):
    s = {
        "winner": 1,
        "win": {"type": "discard", "from": [3]},
        "hand": ["清碰"],
        "hand_english": None,
        "hand_key": {"k": 1},
        "value": True,
        "breakdown": {"doublers": ["门清", None, 7, "\x00"], "steps": "junk"},
    }
    with caplog.at_level(logging.WARNING, logger="webui.announce"):
        assert announcement(s, names=NAMES) == "Bo胡了。门清。"
        assert announcement(s, language="en", names=NAMES) == (
            "Bo wins. Doubled by concealed hand."
        )
    warnings = [r.getMessage() for r in caplog.records]
    # one warning per announcement, naming every field left out
    assert warnings == [
        "the settlement's win.from, doublers, hand, value could not be said: left out",
        "the settlement's win.from, doublers, hand_key, value could not be said: left out",
    ]


def test_nothing_left_to_say_after_the_opening_leaves_no_empty_sentence():
    assert announcement({"winner": 1, "value": None}, names=NAMES) == "Bo胡了。"
    s = {"winner": 1, "breakdown": {"steps": [{"rule": "杠开"}]}}
    assert announcement(s, names=NAMES) == "Bo胡了。杠开！"


def test_values_beyond_any_hand_are_left_out():
    assert announcement({"winner": 0, "value": -3}, names=NAMES) == "Ann胡了。"
    assert announcement({"winner": 0, "value": MOST + 1}, names=NAMES) == "Ann胡了。"
    assert announcement({"winner": 0, "value": 10**5000}, language="en", names=NAMES) == "Ann wins."
    # a working that says thousands of 勒子 digits is not read as a 勒子 (int() would refuse)
    step = {"rule": "x", "effect": "9" * 5000 + " 勒子", "value": 20}
    assert announcement({"winner": 0, "value": 20, "breakdown": {"steps": [step]}}) == (
        "0号位胡了。二十分。"
    )


def test_of_several_wins_those_worded_are_said_and_counted():
    s = {
        "wins": [
            {"winner": 0, "win": {"type": "discard", "from": 3}, "hand": "碰碰胡", "value": 3},
            {"winner": "Bo", "win": {"type": "discard", "from": 3}, "value": 3},
            {"winner": 2, "win": {"type": "discard", "from": 3}, "hand": "混一色", "value": 5},
            "junk",
        ]
    }
    assert announcement(s, names=NAMES) == (
        "一炮双响！Di点炮，Ann胡了。碰碰胡，三分。Di点炮，Cy胡了。混一色，五分。"
    )


def test_control_characters_and_terminal_escapes_are_never_said():
    s = {
        "winner": 1,
        "win": {"type": "self_draw"},
        "hand": "清\x1b[31m碰\x1b[0m\n",
        "hand_english": "one\tsuit,\u202eall\x07 pungs",
        "value": 10,
        "breakdown": {"doublers": ["门\u200b清"]},
    }
    names = ["Ann", "B\to\x00b\r\n", "Cy", "Di"]
    assert announcement(s, names=names) == "B ob自摸。清碰，门清，十分。"
    assert announcement(s, language="en", names=names) == (
        "B ob wins by self-draw. One suit,all pungs, doubled by concealed hand, 10 points."
    )


def test_names_that_are_not_text_are_said_by_seat():
    s = {"winner": 2, "value": 10}
    assert announcement(s, names=[None, True, ["Cy"], {"n": 1}]) == "2号位胡了。十分。"
    # a string is a sequence of letters, not of players
    assert announcement(s, language="en", names="ABCD") == "Seat 2 wins. 10 points."
    # a lone surrogate gets through JSON, and would make the UTF-8 encoding for the engine fail
    assert announcement(s, names=["", "", "\ud800Cy", ""]) == "Cy胡了。十分。"


ARTEFACTS = ("None", "True", "False", "[", "{", "'")
# the words' own apostrophes: the English opening's "Di's discard", "Cy's kong"
OWN_APOSTROPHES = ("'s discard", "'s kong")

# Texts whose pieces can never spell a repr artefact, however they are put together (no
# N, T, F, brackets, quotes), with the characters that must never reach the engine:
# control and format characters, odd whitespace, a lone surrogate, a terminal escape.
said_text = st.sampled_from(["清碰", "混一色", "门清", "开宝", "荒番", "pengpeng", "one suit", "3"])
unsayable = st.sampled_from(["\x00", "\x07", "\t", "\n", "\x1b[31m", "\x9b2J", "\ud800"])
text_like = st.lists(
    said_text
    | unsayable
    | st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"])
    | st.characters(categories=["Lo"]),
    max_size=6,
).map("".join)

junk = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | text_like,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["winner", "win", "type", "from", "hand", "hand_english", "value", "breakdown"]
            )
            | st.sampled_from(["steps", "doublers", "cap", "rule", "effect", "wins", "valid"]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=15,
)
"""Any JSON-shaped value, the settlement's own keys among its dicts' keys."""

seat = st.integers(0, 3)
WELL_FORMED = ("清碰", "混一色", "门清", "pengpeng", "one suit")
well_formed_text = st.sampled_from(WELL_FORMED)
step_like = st.fixed_dictionaries(
    {},
    optional={
        "rule": st.sampled_from(["杠开", "大吊车", "勒子", "cap"]) | junk,
        "effect": st.sampled_from(["2 勒子", "capped at 1 勒子", "raised to 3 勒子"]) | junk,
        "value": st.integers(0, 100) | junk,
    },
)
win_like = st.fixed_dictionaries(
    # the winner always there, and a seat more often than not: a win without one is not said,
    # and a property seeing mostly silence would check little of what is said
    {"winner": st.one_of(seat, seat, junk)},
    optional={
        "valid": st.booleans() | junk,
        "win": st.fixed_dictionaries(
            {}, optional={"type": st.sampled_from(WAYS) | junk, "from": seat | junk}
        )
        | junk,
        "hand": well_formed_text | junk,
        "hand_english": well_formed_text | junk,
        "hand_key": well_formed_text | junk,
        "value": st.integers(0, 10**6) | junk,
        "breakdown": st.fixed_dictionaries(
            {},
            optional={
                "steps": st.lists(step_like | junk, max_size=3) | junk,
                "doublers": st.lists(well_formed_text | junk, max_size=3) | junk,
                "cap": st.integers(0, 100) | junk,
            },
        )
        | junk,
    },
)
settlement_like = (
    win_like
    | st.fixed_dictionaries(
        {"wins": st.lists(win_like | junk, max_size=3) | junk},
        optional={"valid": st.booleans() | junk},
    )
    | junk
)
"""A settlement as the controller writes it, each part either well formed or anything at
all, the settlement itself included."""


def said_parts(s: Any, language: str) -> list[str]:
    """What must be heard of ``s``: the parts of each win (that is not marked invalid and has
    a seat for its winner) that are well formed as they are."""
    if not isinstance(s, dict):
        return []
    wins = s["wins"] if isinstance(s.get("wins"), list) else [s]
    parts: list[str | tuple[str, str]] = []
    for win in wins:
        if not isinstance(win, dict) or win.get("valid") is False:
            continue
        winner = win.get("winner")
        if type(winner) is not int or not 0 <= winner < 4:
            continue
        parts.append(NAMES[winner])
        hand = win.get("hand" if language == "cmn" else "hand_english")
        if isinstance(hand, str) and hand.isprintable() and " ".join(hand.split()) == hand != "":
            parts.append(hand if language == "cmn" else hand.capitalize())
        breakdown = win.get("breakdown")
        doublers = breakdown.get("doublers") if isinstance(breakdown, dict) else None
        if language == "cmn" and isinstance(doublers, list):
            parts += [d for d in doublers if isinstance(d, str) and d in WELL_FORMED]
        value = win.get("value")
        if type(value) is int and 0 <= value <= MOST:
            parts.append(("分", "勒子") if language == "cmn" else ("point", "lezi"))
        played = win.get("win")
        if isinstance(played, dict) and played.get("type") in ("discard", "robbing_kong"):
            by = played.get("from")
            if type(by) is int and 0 <= by < 4:
                parts.append(NAMES[by])
    return parts


@settings(max_examples=400, deadline=None)
@given(
    s=settlement_like, language=st.sampled_from(["cmn", "en"]), lezi=st.none() | st.integers(0, 20)
)
def test_any_settlement_shaped_value_gives_text_and_never_raises(s, language, lezi):
    with warnings_logged() as warnings:
        text = announcement(s, language=language, names=NAMES, lezi=lezi)
    assert isinstance(text, str)
    assert len(warnings) <= 1  # one warning per announcement, however much was left out
    bare = text
    for own in OWN_APOSTROPHES:
        bare = bare.replace(own, "")
    assert not [a for a in ARTEFACTS if a in bare], text
    # ASCII space is the one printable whitespace: every other kind was made one
    assert text.isprintable(), text
    assert text == text.strip() and "  " not in text
    for part in said_parts(s, language):
        if isinstance(part, tuple):  # the worth, in points or in 勒子
            assert any(word in text for word in part), (part, text)
        else:
            assert part in text, (part, text)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32), language=st.sampled_from(["cmn", "en"]))
def test_a_well_formed_settlement_is_said_whole(seed, language, shanghai):
    """The settlements the controller writes (random wins, as the settlement tests draw them)
    have nothing left out: no warning, the winner, the hand and the worth said."""
    win = random_win(random.Random(seed))
    if win.how is WinType.DISCARD and win.discarder_ready is None:
        win = replace(win, discarder_ready=False)
    s = json.loads(json.dumps(settlement_to_dict(settle([win], shanghai))))
    with warnings_logged() as warnings:
        text = announcement(s, language=language, names=NAMES, lezi=10)
    assert warnings == []
    if not s["valid"]:
        assert text == ""
        return
    assert NAMES[win.winner] in text
    if win.discarder is not None:
        assert NAMES[win.discarder] in text
    assert (s["hand"] if language == "cmn" else s["hand_english"].capitalize()) in text
    assert any(w in text for w in (("分", "勒子") if language == "cmn" else ("point", "lezi")))


# -- the speech engine -----------------------------------------------------------------------------


def fake_espeak(folder: Path, *, gate: Path | None = None) -> Path:
    """A stand-in espeak-ng that writes its arguments and what it was given to read. With a
    ``gate`` it is a slow engine: it waits for a shared lock on that file, which the test
    holds until it lets the engine go on."""
    log = folder / "spoken.jsonl"
    script = folder / "espeak-ng"
    wait = f"import fcntl\nfcntl.flock(open({str(gate)!r}), fcntl.LOCK_SH)\n" if gate else ""
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        f"{wait}"
        "text = sys.stdin.buffer.read().decode('utf-8')\n"
        f"with open({str(log)!r}, 'a', encoding='utf-8') as f:\n"
        "    f.write(json.dumps({'args': sys.argv[1:], 'text': text}) + '\\n')\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return log


def said(log: Path) -> list[dict[str, Any]]:
    """What the stand-in engine has been given so far, in order."""
    return (
        [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
        if log.exists()
        else []
    )


IDLE_S = 20.0
"""How long a test waits for the announcer to be done: far longer than a stand-in engine
takes, short enough that a hang fails the test rather than the run."""


def settled_event(settlement: dict[str, Any]) -> ev.HandSettled:
    return ev.HandSettled(
        time=1.0,
        session=1,
        hand=1,
        wins=[],
        settlement=settlement,
        payments={},
        next_dealer=0,
        huangfan_next=0,
    )


@pytest.fixture
def gangkai(settled, make_win) -> dict[str, Any]:
    return settled(make_win("111p 222p 333p [4444p<2] 5p +5p", winner=1, after_kong=True))


@pytest.fixture
def path_to(monkeypatch):
    def use(folder: Path) -> None:
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")

    return use


def test_without_espeak_it_is_silent_and_fine(tmp_path, monkeypatch, gangkai):
    # a PATH with nothing on it: the machine running the tests may have espeak-ng installed
    monkeypatch.setenv("PATH", str(tmp_path))
    announcer = Announcer("cmn", names=lambda: NAMES)
    try:
        assert announcer.available is False
        announcer.handle(settled_event(gangkai))
        assert announcer.wait_idle(IDLE_S)
        assert announcer.spoken == ["Bo自摸。杠开！清碰，两勒子。"]
    finally:
        announcer.close()


@pytest.mark.parametrize(("language", "voice"), [("cmn", "cmn"), ("en", "en")])
def test_with_espeak_the_text_goes_in_on_stdin(tmp_path, path_to, gangkai, language, voice):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    announcer = Announcer(language, names=lambda: ["-w/tmp/x", "Bo", "Cy", "Di"])
    try:
        assert announcer.available is True
        announcer.handle(settled_event(gangkai))
        assert announcer.wait_idle(IDLE_S)
        (call,) = said(log)
        assert call["args"] == ["-v", voice, "-b", "1", "--stdin"]
        assert call["text"] == announcement(gangkai, language=language, names=NAMES, lezi=10)
    finally:
        announcer.close()


def test_a_name_that_looks_like_an_option_is_only_read(tmp_path, path_to, settled, make_win):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    s = settled(make_win("111p 222p 333p [4444p<2] 5p +5p", winner=0, after_kong=True))
    announcer = Announcer("en", names=lambda: ["-w/tmp/evil.wav", "Bo", "Cy", "Di"])
    try:
        announcer.handle(settled_event(s))
        assert announcer.wait_idle(IDLE_S)
        (call,) = said(log)
        assert call["args"] == ["-v", "en", "-b", "1", "--stdin"]
        assert call["text"].startswith("-w/tmp/evil.wav wins by self-draw.")
    finally:
        announcer.close()


def test_off_and_other_events_say_nothing(tmp_path, path_to, gangkai):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    announcer = Announcer("off")
    try:
        announcer.handle(settled_event(gangkai))
        announcer.handle(ev.PhaseChanged(time=1.0, phase="idle"))
        announcer.language = "en"
        announcer.handle(ev.PhaseChanged(time=1.0, phase="idle"))
        # one announcement after them, on the same queue: once it is said, anything they
        # had queued would have been said before it
        announcer.say("the end")
        assert announcer.wait_idle(IDLE_S)
        assert [call["text"] for call in said(log)] == ["the end"]
        assert announcer.spoken == ["the end"]
    finally:
        announcer.close()
    with pytest.raises(ValueError, match="cmn, en, off"):
        announcer.language = "fr"


def test_a_slow_engine_never_holds_the_caller(tmp_path, path_to, gangkai, caplog):
    gate = tmp_path / "gate"
    gate.touch()
    log = fake_espeak(tmp_path, gate=gate)
    path_to(tmp_path)
    announcer = Announcer("cmn", backlog=2)
    with open(gate) as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the engine cannot finish anything until let go
        try:
            with caplog.at_level(logging.INFO, logger="webui.announce"):
                started = time.perf_counter()
                for _ in range(10):  # more than the backlog: the extra are skipped
                    announcer.handle(settled_event(gangkai))
                assert time.perf_counter() - started < 0.1
            assert said(log) == []  # all ten were handled while the engine was held up
            assert announcer.wait_idle(0.05) is False
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    try:
        skipped = caplog.text.count("announcements are backing up: one skipped")
        # the backlog's two kept, and the one being said if the engine had started on it
        # before the rest came: all the others skipped, none lost in between
        assert skipped in (7, 8)
        assert announcer.wait_idle(IDLE_S)
        assert len(said(log)) == 10 - skipped
    finally:
        announcer.close()


def test_with_nothing_queued_it_is_idle_at_once():
    assert Announcer("cmn").wait_idle(0) is True


def test_what_close_drops_is_done_with(tmp_path, path_to, gangkai):
    gate = tmp_path / "gate"
    gate.touch()
    log = fake_espeak(tmp_path, gate=gate)
    path_to(tmp_path)
    announcer = Announcer("cmn", backlog=4)
    with open(gate) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            for _ in range(3):
                announcer.handle(settled_event(gangkai))
            announcer.close(timeout=0.05)  # the engine is held: close cannot wait for it
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    # the one the engine had started on is said; the dropped ones never will be, and must
    # not keep a waiter waiting
    assert announcer.wait_idle(IDLE_S)
    assert len(said(log)) <= 1


def test_said_text_is_cleaned_and_only_text_is_said(tmp_path, path_to, caplog):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    announcer = Announcer("cmn")
    try:
        with caplog.at_level(logging.WARNING, logger="webui.announce"):
            announcer.say("你好\x00\x1b[2J，\n再见")
            announcer.say(["not", "text"])  # type: ignore[arg-type]
            announcer.say("\x07\t")
            assert announcer.wait_idle(IDLE_S)
        assert [call["text"] for call in said(log)] == ["你好， 再见"]
        assert "not said: list is not text" in caplog.text
    finally:
        announcer.close()


def test_a_failing_engine_is_logged_not_raised(tmp_path, path_to, gangkai, caplog):
    script = tmp_path / "espeak-ng"
    script.write_text("#!/bin/sh\nexit 3\n")
    script.chmod(0o755)
    path_to(tmp_path)
    announcer = Announcer("cmn", timeout_s=5)
    try:
        announcer.handle(settled_event(gangkai))
        announcer.say("你好")
        assert announcer.wait_idle(IDLE_S)  # the failure did not stop the next one
        assert len(announcer.spoken) == 2 and announcer.spoken[-1] == "你好"
    finally:
        announcer.close()


def test_attached_to_the_live_table_it_says_each_settlement(live_table, tmp_path, path_to):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    announcer = Announcer("cmn")
    unsubscribe = announcer.attach(live_table.runtime)
    try:
        live_table.start_hand()
        live_table.self_draw_win(1)
        live_table.runtime.request("confirm", by="test")
        assert announcer.wait_idle(IDLE_S)
        (call,) = said(log)
        assert call["text"].startswith("Bo自摸。混一色")
    finally:
        unsubscribe()
        announcer.close()
