"""The words the controller writes for people: why the phase changed, and the questions it
asks, each under a stable key with its English template.

A :class:`~controller.table.events.PhaseChanged` carries its ``reason`` in English (for the
log, ``--json``, the command line and readers of old logs) and beside it the ``key`` of the
template here and the ``args`` it was filled with; a
:class:`~controller.table.events.QuestionAsked` carries its ``text`` the same way. The
dashboard says the key in the device's language (``reason.<key>`` and ``question.<key>`` in
webui/static/i18n.js, seats shown by their players' names) and falls back to the English text
where the key is unknown or empty (an event older than the keys).

The English text is always made here from the template and the arguments
(:func:`reason_text`, :func:`question_text`), so the two cannot drift apart. Arguments are
JSON values: seats, dice, counts and hand numbers as ints, the rest as text. An argument named
``seat`` or ``discarder`` is a seat (0-3), which a page shows by the seat's name.
"""

from __future__ import annotations

import string
from typing import Any

__all__ = [
    "EXTRA_ARGS",
    "QUESTIONS",
    "REASONS",
    "SEAT_ARGS",
    "arg_names",
    "question_text",
    "reason_text",
]

SEAT_ARGS = frozenset({"seat", "discarder"})
"""The arguments that name a seat (an int 0-3)."""

REASONS: dict[str, str] = {
    # a session and a hand's start
    "session_started": "a new session",
    "shuffling": "lowering, shuffling and raising the walls",
    "rolling": "the walls are up; rolling the dice",
    "dice_unreadable": "the dice read {read}: roll again (press confirm)",
    "wall_breaks": "dice {die1}+{die2}: seat {seat}'s wall breaks",
    # the hardware
    "hardware_failed": "{message}: fix it, then press confirm",
    "going_on": "going on",
    # a win
    "eight_flowers": "八花齐: seat {seat} holds all eight flowers",
    "tiles_changed": "seat {seat}'s tiles changed: reading again",
    "win_declared": "seat {seat} declares 胡: the discarder presses confirm",
    "wins": "seat {seat} wins: lay the hand open",
    "self_draw_confirmed": "seat {seat} confirmed a self-draw: lay the hand open",
    "discard_confirmed": "seat {seat} confirmed the discard: lay the hand open",
    "robbing_kong_confirmed": "seat {seat} confirmed the robbing kong: lay the hand open",
    "how_declared": "{by} declared how seat {seat} won: lay the hand open",
    "win_withdrawn": "seat {seat} withdrew the win",
    "waiting_hand": "waiting for seat {seat}'s hand laid open ({have} of {want} tiles seen)",
    "one_winner_only": (
        "{seats} seats declared 胡, but only a discard can be won by several at once: the "
        "others take their 胡 back (long-press 胡), or correct how it was won"
    ),
    "corrected": "corrected from the {by}",
    "question_open": "a question is open",
    "check_settlement": "check the settlement, then press confirm",
    # a hand's end, and taking it back
    "settled": "hand {hand} settled (confirmed by {by}): press confirm for the next hand",
    "settled_at_seat": (
        "hand {hand} settled (confirmed by seat {seat}): press confirm for the next hand"
    ),
    "drawn": "hand {hand} drawn (流局): press confirm for the next hand",
    "undone_settled": "undone: correct the hand, then confirm it again",
    "undone_drawn": "the drawn hand was undone: play on",
}
"""Why the phase changed: key → English template."""

QUESTIONS: dict[str, str] = {
    "camera_unsure": "seat {seat}: the camera is unsure ({flags}). Read as: {shown}. Right?",
    "not_a_win_because": (
        "seat {seat}'s tiles as read do not win ({refusal}): check and correct them"
    ),
    "not_a_win": "seat {seat}'s tiles as read do not win: check and correct them",
    "impossible_tiles": "seat {seat}'s tiles as read are not possible ({error}): correct them",
    "winning_tile": "which tile did seat {seat} win on? It changes the score",
    "ready": "承包: was seat {seat} ready (听牌) when discarding? Lay the hand open, or answer",
    "gangkai_kong": "杠开? Did seat {seat} win on the replacement tile of their kong?",
    "gangkai_flower": "杠开? Did seat {seat} win on the replacement tile of their flower?",
}
"""The questions the controller asks: key → English template."""


EXTRA_ARGS: dict[str, frozenset[str]] = {
    # the failure's short word (jam, lid_open, timeout…), which a page says in its language
    # where the English shows the hardware's own message
    "hardware_failed": frozenset({"failure"}),
}
"""Arguments a key carries beyond those its English template shows."""


def arg_names(key: str) -> frozenset[str]:
    """The arguments the message ``key`` (a reason's or a question's) is sent with."""
    template = REASONS.get(key) or QUESTIONS[key]
    shown = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    return frozenset(shown) | EXTRA_ARGS.get(key, frozenset())


def reason_text(key: str, args: dict[str, Any]) -> str:
    """The English reason for ``key`` filled with ``args`` (a KeyError for an unknown key or
    a missing argument: a bug, caught by the tests)."""
    return REASONS[key].format(**args)


def question_text(key: str, args: dict[str, Any]) -> str:
    """The English question for ``key`` filled with ``args``."""
    return QUESTIONS[key].format(**args)
