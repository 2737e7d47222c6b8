"""The project's exception root and the errors the rules engine raises.

The root lives here, inside the pure rules package, so that the rules import nothing else of
ours while every other area can still derive from the same root (see ``controller.errors``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "HandError",
    "MahjongTableError",
    "ProfileError",
    "RulesError",
    "WinInputError",
    "escape",
    "show",
    "show_key",
]

SHOWN_CHARS = 60
"""How much of a string or a value's text a message echoes before cutting it short."""

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")


def escape(text: str) -> str:
    """``text`` with every character that is not printable (a line break, ESC and the rest of
    the control characters, bidi overrides) escaped as ``repr`` would, so that a message
    echoing it stays one honest line that cannot recolour a terminal; printable non-ASCII
    (tiles in Chinese) is kept."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def show(value: Any) -> str:
    """A value a user gave, as a message may echo it: ``repr`` (quoted, control characters
    escaped), cut short after :data:`SHOWN_CHARS` characters; a huge integer by its size
    (``str`` of one is slow, and refused past 4300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, str):
        text = repr(value[:SHOWN_CHARS])
        return text + ("..." if len(value) > SHOWN_CHARS else "")
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a huge int inside a list; a list inside itself
        return f"a {type(value).__name__}"
    text = escape(text)  # a caller's object may repr itself with anything
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def show_key(key: Any) -> str:
    """A key a user gave (a JSON field, a profile setting), as a message names it: a plain
    name as it is, anything else quoted by :func:`show`."""
    if isinstance(key, str) and _BARE_KEY.fullmatch(key):
        return key
    return show(key)


class MahjongTableError(Exception):
    """Root of every error the project raises on purpose.

    ``message`` is written for a player or installer to act on; ``field`` names the input
    field, profile key or setting at fault when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def __str__(self) -> str:
        # escaped: whatever a message or a field name echoes, it stays one line
        if self.field:
            return escape(f"{self.field}: {self.message}")
        return escape(self.message)


class RulesError(MahjongTableError):
    """Something the rules engine was given cannot be scored."""


class HandError(RulesError):
    """A malformed hand: unknown tile, a fifth copy, wrong tile count, an impossible meld."""


class WinInputError(RulesError):
    """A win description that is incomplete or contradicts itself (missing or bad field)."""


class ProfileError(RulesError):
    """A rules profile that cannot be loaded: unknown key, wrong type, value out of range."""
