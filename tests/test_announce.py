"""The spoken settlement (webui/announce.py): the words, in Mandarin and English, and the
speech engine there or not (a stand-in espeak-ng on PATH), never holding the controller up."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules import settle, settlement_to_dict
from controller.rules.win import wins_from_json
from controller.table import events as ev
from webui.announce import Announcer, announcement, chinese_number

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


settlement_like = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=6),
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


@settings(max_examples=300, deadline=None)
@given(
    s=settlement_like, language=st.sampled_from(["cmn", "en"]), lezi=st.none() | st.integers(0, 20)
)
def test_any_settlement_shaped_value_gives_text_and_never_raises(s, language, lezi):
    assert isinstance(announcement(s, language=language, names=NAMES, lezi=lezi), str)


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


def finished(announcer: Announcer) -> threading.Semaphore:
    """Released each time ``announcer`` is done with one announcement (said, silent for want
    of an engine, or failed): a test waits on it instead of polling for the words. It wraps
    the announcer's speaking step, the one place every announcement goes through."""
    done = threading.Semaphore(0)
    speak = announcer._speak

    def speak_and_tell(text: str) -> None:
        try:
            speak(text)
        finally:
            done.release()

    announcer._speak = speak_and_tell
    return done


def wait_finished(done: threading.Semaphore, n: int = 1, timeout: float = 20.0) -> None:
    for i in range(n):
        assert done.acquire(timeout=timeout), f"announcement {i + 1} of {n} never finished"


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
    done = finished(announcer)
    try:
        assert announcer.available is False
        announcer.handle(settled_event(gangkai))
        wait_finished(done)
        assert announcer.spoken == ["Bo自摸。杠开！清碰，两勒子。"]
    finally:
        announcer.close()


@pytest.mark.parametrize(("language", "voice"), [("cmn", "cmn"), ("en", "en")])
def test_with_espeak_the_text_goes_in_on_stdin(tmp_path, path_to, gangkai, language, voice):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    announcer = Announcer(language, names=lambda: ["-w/tmp/x", "Bo", "Cy", "Di"])
    done = finished(announcer)
    try:
        assert announcer.available is True
        announcer.handle(settled_event(gangkai))
        wait_finished(done)
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
    done = finished(announcer)
    try:
        announcer.handle(settled_event(s))
        wait_finished(done)
        (call,) = said(log)
        assert call["args"] == ["-v", "en", "-b", "1", "--stdin"]
        assert call["text"].startswith("-w/tmp/evil.wav wins by self-draw.")
    finally:
        announcer.close()


def test_off_and_other_events_say_nothing(tmp_path, path_to, gangkai):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    announcer = Announcer("off")
    done = finished(announcer)
    try:
        announcer.handle(settled_event(gangkai))
        announcer.handle(ev.PhaseChanged(time=1.0, phase="idle"))
        announcer.language = "en"
        announcer.handle(ev.PhaseChanged(time=1.0, phase="idle"))
        # one announcement after them, on the same queue: once it is said, anything they
        # had queued would have been said before it
        announcer.say("the end")
        wait_finished(done)
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
    done = finished(announcer)
    with open(gate) as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the engine cannot finish anything until let go
        try:
            with caplog.at_level(logging.INFO, logger="webui.announce"):
                started = time.perf_counter()
                for _ in range(10):  # more than the backlog: the extra are skipped
                    announcer.handle(settled_event(gangkai))
                assert time.perf_counter() - started < 0.1
            assert said(log) == []  # all ten were handled while the engine was held up
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    try:
        skipped = caplog.text.count("announcements are backing up: one skipped")
        # the backlog's two kept, and the one being said if the engine had started on it
        # before the rest came: all the others skipped, none lost in between
        assert skipped in (7, 8)
        wait_finished(done, 10 - skipped)
        assert len(said(log)) == 10 - skipped
    finally:
        announcer.close()


def test_a_failing_engine_is_logged_not_raised(tmp_path, path_to, gangkai, caplog):
    script = tmp_path / "espeak-ng"
    script.write_text("#!/bin/sh\nexit 3\n")
    script.chmod(0o755)
    path_to(tmp_path)
    announcer = Announcer("cmn", timeout_s=5)
    done = finished(announcer)
    try:
        announcer.handle(settled_event(gangkai))
        announcer.say("你好")
        wait_finished(done, 2)  # the failure did not stop the next one
        assert len(announcer.spoken) == 2 and announcer.spoken[-1] == "你好"
    finally:
        announcer.close()


def test_attached_to_the_live_table_it_says_each_settlement(live_table, tmp_path, path_to):
    log = fake_espeak(tmp_path)
    path_to(tmp_path)
    announcer = Announcer("cmn")
    done = finished(announcer)
    unsubscribe = announcer.attach(live_table.runtime)
    try:
        live_table.start_hand()
        live_table.self_draw_win(1)
        live_table.runtime.request("confirm", by="test")
        wait_finished(done)
        (call,) = said(log)
        assert call["text"].startswith("Bo自摸。混一色")
    finally:
        unsubscribe()
        announcer.close()
