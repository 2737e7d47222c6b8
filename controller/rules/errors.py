"""The project's exception root and the errors the rules engine raises.

The root lives here, inside the pure rules package, so that the rules import nothing else of
ours while every other area can still derive from the same root (see ``controller.errors``).
"""

from __future__ import annotations


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
        if self.field:
            return f"{self.field}: {self.message}"
        return self.message


class RulesError(MahjongTableError):
    """Something the rules engine was given cannot be scored."""


class HandError(RulesError):
    """A malformed hand: unknown tile, a fifth copy, wrong tile count, an impossible meld."""


class WinInputError(RulesError):
    """A win description that is incomplete or contradicts itself (missing or bad field)."""


class ProfileError(RulesError):
    """A rules profile that cannot be loaded: unknown key, wrong type, value out of range."""
