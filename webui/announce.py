"""Each settlement, spoken: "Bo自摸。杠开！清碰，两勒子。"

Players at a table look at their tiles, not at a screen, so the table says what was won
through ``espeak-ng`` when it is installed (Mandarin ``cmn`` or English ``en``; ``off``
for silence). :func:`announcement` builds the words from a
:class:`~controller.table.events.HandSettled` event's settlement: who won and how, 杠开 or
大吊车 when they raised the hand, the hand type, the doublers (门清, 开宝, 荒番), and the value,
in 勒子 when the working reached a whole number of them by a cap, a fixed hand value or a
raise, else in points.

The :class:`Announcer` never holds the controller up: its subscriber only queues the event,
and one thread of its own builds the words and runs the speech engine, one announcement at
a time. Without ``espeak-ng`` on ``PATH`` it stays silent, and a failing engine is logged,
never raised.

A settlement value that cannot be worded (a ``settled`` event read back from a corrupted or
foreign log, or a bug upstream) is left out of what is said, and the rest is said as usual:
a player at the table would rather hear "Bo自摸。两勒子。" than nothing, and never a Python
repr ("None号位") nor a control character. A win whose winner is not a seat is not said at
all (what it is worth means nothing without who won), and 一炮多响 counts the wins said. Each
announcement that left something out logs one warning naming what. Names and texts are said
without their control and format characters or terminal escapes; whitespace of any kind
becomes one space.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeGuard

from controller.rules.melds import SEATS

__all__ = ["Announcer", "announcement", "chinese_number"]

log = logging.getLogger(__name__)

LANGUAGES = ("cmn", "en", "off")
LEZI_RULES = ("勒子",)
RAISES = ("杠开", "大吊车")
# ASCII digits, and few: \d would take other scripts' digits, which the scorer never writes, and
# int() refuses thousands of them (a corrupted log must not make the announcement raise)
_LEZI_EFFECT = re.compile(r"(?:capped at |raised to )?([0-9]{1,9}) 勒子")
WAYS = ("self_draw", "discard", "robbing_kong", "eight_flowers")
MOST = 99_999_999
"""The largest value said: :func:`chinese_number`'s range, far above any hand's worth (a
larger one is a corrupted value, and a huge int would not even convert to text)."""

_DIGITS = "零一二三四五六七八九"
_ENGLISH_DOUBLERS = {
    "门清": "concealed hand",
    "开宝": "kai bao",
    "荒番": "huang fan",
    "杠开": "gang kai",
    "大吊车": "da diao che",
}
_ENGLISH_RAISES = {"杠开": "Gang kai!", "大吊车": "Da diao che!"}
_ENGLISH_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight"]


def chinese_number(n: int, *, measure: bool = False) -> str:
    """``n`` (0 to 99 999 999) in Chinese numerals, as spoken: 十八, 一百零五, 两千.
    ``measure``: before a measure word, where 2 is said 两 (两勒子)."""
    if n < 0:
        return "负" + chinese_number(-n)
    if n == 2 and measure:
        return "两"
    if n < 10:
        return _DIGITS[n]
    if n < 20:
        return "十" + (_DIGITS[n % 10] if n % 10 else "")
    if n >= 10_000:
        high, low = divmod(n, 10_000)
        text = chinese_number(high) + "万"
        if low:
            text += ("零" if low < 1000 else "") + _below_10000(low)
        return text
    return _below_10000(n)


def _below_10000(n: int) -> str:
    out, zero = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit:
            if zero and out:
                out += "零"
            out += _DIGITS[digit] + unit
            zero = False
        elif out:
            zero = True
    return out or "零"


def _english_count(n: int) -> str:
    return _ENGLISH_NUMBERS[n] if 0 <= n < len(_ENGLISH_NUMBERS) else str(n)


_TERMINAL_ESCAPE = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
"""A terminal's escape sequence (a colour, a cursor move): taken out whole, as leaving out
only its ESC would leave "[31m" to be read out."""


def _clean(text: str) -> str:
    """``text`` as it may reach the speech engine: terminal escapes, control and format
    characters (and lone surrogates, which JSON lets through and UTF-8 cannot encode) left
    out, whitespace of any kind one plain space, none at either end."""
    text = _TERMINAL_ESCAPE.sub("", text)
    # whitespace is kept to split on: a tab or line break between two words must not join them
    kept = "".join(c for c in text if c.isprintable() or c.isspace())
    return " ".join(kept.split())


def _whole(value: Any) -> TypeGuard[int]:
    """Whether ``value`` is a true int: JSON's true and false are ints to Python."""
    return isinstance(value, int) and not isinstance(value, bool)


def _seat(value: Any) -> int | None:
    return value if _whole(value) and 0 <= value < SEATS else None


class _Left(list[str]):
    """The settlement's fields that one announcement could not word, to warn about once."""

    def add(self, field: str) -> None:
        if field not in self:
            self.append(field)


def _text(win: dict[str, Any], key: str, left: _Left) -> str:
    """The win's text field ``key``, cleaned; "" where it is absent or cannot be said (then
    noted in ``left``)."""
    value = win.get(key)
    if value is None:
        return ""
    text = _clean(value) if isinstance(value, str) else ""
    if not text:
        left.add(key)
    return text


def _wins(settlement: dict[str, Any], left: _Left) -> list[dict[str, Any]]:
    """Each win of a settlement: its ``wins`` where several won, else the settlement itself
    (one win's fields are at the top level)."""
    wins = settlement.get("wins")
    if isinstance(wins, list):
        if not all(isinstance(w, dict) for w in wins):
            left.add("wins")
        return [w for w in wins if isinstance(w, dict)]
    if wins is not None:
        left.add("wins")
    return [settlement]


def _breakdown(win: dict[str, Any], key: str) -> list[Any]:
    """A list of the win's working (``steps``, ``doublers``); [] where it is not one."""
    breakdown = win.get("breakdown")
    value = breakdown.get(key) if isinstance(breakdown, dict) else None
    return value if isinstance(value, list) else []


def _lezi_unit(win: dict[str, Any]) -> int | None:
    """The value of one 勒子, read off the working: a cap, a fixed value or a raise says
    "N 勒子" with the value it gave."""
    for step in _breakdown(win, "steps"):
        if not isinstance(step, dict) or not isinstance(step.get("effect"), str):
            continue
        match = _LEZI_EFFECT.fullmatch(step["effect"])
        if match and int(match.group(1)) > 0 and _whole(step.get("value")):
            unit, rest = divmod(step["value"], int(match.group(1)))
            if not rest and unit > 0:
                return unit
    return None


def _in_lezi(win: dict[str, Any], lezi: int | None) -> int | None:
    """The win's value as a number of 勒子, where the working reached whole 勒子 (the
    hand's cap, a fixed value, a raise); None where it is counted in points."""
    value = win.get("value")
    if not _whole(value) or not 0 < value <= MOST:
        return None
    read = _lezi_unit(win)
    unit = lezi if lezi else read
    if not unit or value % unit:
        return None
    breakdown = win.get("breakdown")
    cap = breakdown.get("cap") if isinstance(breakdown, dict) else None
    at_cap = _whole(cap) and value >= cap
    return value // unit if read is not None or at_cap else None


def _name(names: Sequence[Any] | None, seat: int, language: str) -> str:
    """The player in ``seat`` (a seat number already checked), else the seat by number."""
    if names is not None and seat < len(names) and isinstance(names[seat], str):
        name = _clean(names[seat])
        if name:
            return name
    if language == "cmn":
        return f"{seat}号位"
    return f"Seat {seat}"


def _facts(win: dict[str, Any], left: _Left) -> tuple[list[str], list[str]]:
    """(raises said first, doublers) of one win, as the working names them."""
    rules = [s.get("rule") for s in _breakdown(win, "steps") if isinstance(s, dict)]
    raises = [r for r in RAISES if r in rules]
    doublers = []
    for d in _breakdown(win, "doublers"):
        said = _clean(d) if isinstance(d, str) else ""
        if not said:
            left.add("doublers")
        elif said not in raises:
            doublers.append(said)
    return raises, doublers


_OPENINGS = {
    "cmn": {
        "self_draw": "{who}自摸",
        "discard": "{by}点炮，{who}胡了",
        "robbing_kong": "{who}抢{by}的杠",
        "": "{who}胡了",
    },
    "en": {
        "self_draw": "{who} wins by self-draw.",
        "discard": "{who} wins on {by}'s discard.",
        "robbing_kong": "{who} wins robbing {by}'s kong.",
        "": "{who} wins.",
    },
}
"""How a win is opened in each language, by the way it was won (``""``: a way not told, or
a discard or kong with nobody named for it)."""


def _opening(
    win: dict[str, Any], winner: int, names: Sequence[Any] | None, language: str, left: _Left
) -> str:
    """Who won, and how (on whose discard or kong)."""
    forms = _OPENINGS[language]
    who = _name(names, winner, language)
    played = win.get("win")
    if played is None:
        return forms[""].format(who=who)
    if not isinstance(played, dict):
        left.add("win")
        return forms[""].format(who=who)
    how = played.get("type")
    if how is not None and how not in WAYS:
        left.add("win.type")
    if how == "self_draw":
        return forms["self_draw"].format(who=who)
    if how in ("discard", "robbing_kong") and played.get("from") is not None:
        by = _seat(played["from"])
        if by is not None:
            return forms[how].format(who=who, by=_name(names, by, language))
        left.add("win.from")
    return forms[""].format(who=who)


def _worth(win: dict[str, Any], lezi: int | None, language: str, left: _Left) -> str | None:
    """What the win is worth: in 勒子 where the working reached whole ones, else in points;
    None where the settlement does not say (or says it in a way that cannot be said)."""
    count = _in_lezi(win, lezi)
    value = win.get("value")
    if count is not None:
        if language == "cmn":
            return f"{chinese_number(count, measure=True)}勒子"
        return f"{_english_count(count)} lezi"
    if value is None:
        return None
    # a win is never worth less than nothing: a negative value is as corrupt as a string
    if not _whole(value) or not 0 <= value <= MOST:
        left.add("value")
        return None
    if language == "cmn":
        return f"{chinese_number(value)}分"
    return f"{value} point{'s' if value != 1 else ''}"


def _chinese(
    win: dict[str, Any], winner: int, names: Sequence[Any] | None, lezi: int | None, left: _Left
) -> str:
    opening = _opening(win, winner, names, "cmn", left)
    raises, doublers = _facts(win, left)
    hand = _text(win, "hand", left)
    parts = [hand] if hand else []
    parts += doublers
    worth = _worth(win, lezi, "cmn", left)
    if worth is not None:
        parts.append(worth)
    exclaim = "".join(f"{r}！" for r in raises)
    # with nothing to tell after the opening, no empty sentence: "Bo胡了。。" reads as a glitch
    said = f"{'，'.join(parts)}。" if parts else ""
    return f"{opening}。{exclaim}{said}"


def _english(
    win: dict[str, Any], winner: int, names: Sequence[Any] | None, lezi: int | None, left: _Left
) -> str:
    opening = _opening(win, winner, names, "en", left)
    raises, doublers = _facts(win, left)
    hand = _text(win, "hand_english", left) or _text(win, "hand_key", left)
    parts = [hand.capitalize()] if hand else []
    if doublers:
        parts.append("doubled by " + " and ".join(_ENGLISH_DOUBLERS.get(d, d) for d in doublers))
    worth = _worth(win, lezi, "en", left)
    if worth is not None:
        parts.append(worth)
    exclaim = " ".join(_ENGLISH_RAISES.get(r, r + "!") for r in raises)
    said = ", ".join(parts)
    # the hand, capitalised, starts the sentence; without one, "doubled by" would
    said = said[:1].upper() + said[1:] + "." if said else ""
    return " ".join(x for x in (opening, exclaim, said) if x)


def announcement(
    settlement: dict[str, Any],
    *,
    language: str = "cmn",
    names: Sequence[str] | None = None,
    lezi: int | None = None,
) -> str:
    """What to say for a settlement (:func:`controller.rules.settlement_to_dict`'s dict, as a
    ``settled`` event carries it): one sentence or two per win. ``names`` are the seats'
    players (else "seat 2" / "2号位"); ``lezi`` the value of one 勒子 in the profile (else
    read off the working). ``off`` or an invalid settlement: ``""``. What cannot be worded
    is left out, with one warning (the module's docstring says how)."""
    if language == "off" or not isinstance(settlement, dict):
        return ""
    if isinstance(names, str) or not isinstance(names, Sequence):
        names = None  # a string is a sequence too, but of letters, not players
    left = _Left()
    say = _chinese if language == "cmn" else _english
    texts = []
    for win in _wins(settlement, left):
        if win.get("valid") is False:
            continue
        winner = _seat(win.get("winner"))
        if winner is None:
            left.add("winner")
            continue
        texts.append(say(win, winner, names, lezi, left))
    if left:
        log.warning("the settlement's %s could not be said: left out", ", ".join(left))
    if len(texts) > 1:  # 一炮多响: several won on one discard
        count = len(texts)
        if language == "cmn":
            texts.insert(0, f"一炮{chinese_number(count, measure=True).replace('两', '双')}响！")
        else:
            texts.insert(0, f"{_english_count(count).capitalize()} winners on one discard!")
    return ("" if language == "cmn" else " ").join(texts)


class Announcer:
    """Speaks each ``settled`` event through ``executable`` (espeak-ng). ``names`` gives the
    seats' players when it is called (on the announcer's thread); :meth:`attach` sets it from
    the table."""

    LANGUAGES = LANGUAGES
    VOICES: ClassVar[dict[str, str]] = {"cmn": "cmn", "en": "en"}

    def __init__(
        self,
        language: str = "cmn",
        *,
        executable: str = "espeak-ng",
        names: Callable[[], Sequence[str]] | None = None,
        lezi: Callable[[str], int | None] | None = None,
        timeout_s: float = 60.0,
        backlog: int = 4,
    ) -> None:
        self._language = ""
        self.language = language
        self.executable = executable
        self.names = names
        self.lezi = lezi or _profile_lezi
        self.timeout_s = timeout_s
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=backlog)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # announcements queued or being said; its own count rather than the queue's, so that
        # those close() drops are counted done as well
        self._pending = 0
        self._idle = threading.Condition()
        self.spoken: list[str] = []
        """The last 20 announcements made, newest last (kept whether or not espeak-ng is
        there to say them)."""

    @property
    def language(self) -> str:
        return self._language

    @language.setter
    def language(self, value: str) -> None:
        if value not in LANGUAGES:
            raise ValueError(f"language: one of {', '.join(LANGUAGES)}, not {value!r}")
        self._language = value

    @property
    def available(self) -> bool:
        """Whether the speech engine is on ``PATH`` (looked up each time: it may be
        installed while the table runs)."""
        return shutil.which(self.executable) is not None

    def attach(self, table: Any) -> Callable[[], None]:
        """Listen to ``table``'s events; the seats' names come from its snapshot. Returns the
        function that stops listening."""
        if self.names is None:
            self.names = lambda: list(table.snapshot().get("seat_names", []))
        return table.subscribe(self.handle)

    def handle(self, event: Any) -> None:
        """The subscriber (on the controller's thread): queue a settlement, nothing more."""
        if getattr(event, "type", None) == "settled" and self.language != "off":
            self._put(("settled", getattr(event, "settlement", None)))

    def say(self, text: str) -> None:
        """Speak ``text`` (queued behind what is being said; its control characters left
        out)."""
        self._put(("text", text))

    def _put(self, item: tuple[str, Any]) -> None:
        self._ensure_thread()
        # counted before it is queued: the thread may be done with it before put_nowait returns
        with self._idle:
            self._pending += 1
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._done()
            log.info("announcements are backing up: one skipped")

    def _done(self) -> None:
        with self._idle:
            self._pending -= 1
            if not self._pending:
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every announcement queued so far has been said, found silent, failed or
        been skipped. False if that took longer than ``timeout`` seconds."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="dashboard-announce", daemon=True
                )
                self._thread.start()

    def text_for(self, settlement: dict[str, Any]) -> str:
        """The words for a settlement in the current language, with the players' names."""
        names: Sequence[str] | None = None
        if self.names is not None:
            try:
                names = self.names()
            except Exception as exc:  # no names: seats are said by number
                log.debug("no seat names for the announcement: %s", exc)
        profile = settlement.get("profile") if isinstance(settlement, dict) else None
        lezi = self.lezi(profile) if isinstance(profile, str) else None
        return announcement(settlement, language=self.language, names=names, lezi=lezi)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            kind, value = item
            try:
                if kind == "settled":
                    text = self.text_for(value)
                elif isinstance(value, str):
                    text = _clean(value)
                else:  # say() was handed something else: its repr is not for the table
                    log.warning("not said: %s is not text", type(value).__name__)
                    text = ""
                if text:
                    self._speak(text)
            except Exception:
                log.exception("the announcement failed")
            finally:
                self._done()

    def _speak(self, text: str) -> None:
        language = self.language
        if language == "off":
            return
        exe = shutil.which(self.executable)
        self.spoken = [*self.spoken[-19:], text]
        if exe is None:
            return
        # the text goes in on stdin, never as an argument: a player's name starting with "-"
        # must not be read as an option
        try:
            subprocess.run(
                [exe, "-v", self.VOICES[language], "-b", "1", "--stdin"],
                input=text.encode("utf-8"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=self.timeout_s,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("espeak-ng failed: %s", exc)

    def close(self, timeout: float = 2.0) -> None:
        """Stop after the announcement being spoken (the ones waiting are dropped)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        while True:
            try:
                dropped = self._queue.get_nowait()
            except queue.Empty:
                break
            if dropped is not None:
                self._done()
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        thread.join(timeout)


def _profile_lezi(name: str) -> int | None:
    """The value of one 勒子 in profile ``name``; None when it cannot be loaded."""
    from controller.profiles import load_profile

    try:
        return load_profile(name).units.lezi
    except Exception:
        return None
