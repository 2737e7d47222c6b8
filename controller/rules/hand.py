"""A player's hand: concealed tiles, melds, flowers, and the winning tile when there is one.

The hand notation (``docs/notation.md``) writes a whole hand on one line::

    123m 456m 789m C [EEE<1] [FFFF] 春夏 +C

concealed tiles first, each meld in brackets (``<n`` the seat it was claimed from, ``+`` an added
kong, no seat for a concealed kong), flowers anywhere (they are never part of the hand), and
``+X`` the winning tile. :meth:`Hand.parse` reads it and :meth:`Hand.notation` writes it back.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from controller.rules.errors import HandError
from controller.rules.melds import Meld, MeldKind
from controller.rules.tiles import COPIES, NUM_KINDS, Tile, format_tiles, parse_tiles

_MELD = re.compile(r"\[([^\]<+]*)(\+?)(?:<(\d|\?))?\]")


def concealed_size(melds: int) -> int:
    """Tiles a player holds concealed before their 14th: 13, less 3 for each meld."""
    return 13 - 3 * melds


@dataclass(frozen=True, slots=True)
class Hand:
    """What one player holds. Validated on construction: no more than four of a tile across
    the concealed tiles, the melds and the winning tile; at most four melds; each flower at
    most once. The tile count is checked by :meth:`check_size` (a hand being built up, say
    by the vision pipeline, may be short).
    """

    concealed: tuple[Tile, ...]
    melds: tuple[Meld, ...] = ()
    flowers: tuple[Tile, ...] = ()
    winning_tile: Tile | None = None
    _counts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _concealed: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _no_claims: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            concealed = tuple(sorted(Tile(t) for t in self.concealed))
            flowers = tuple(sorted(Tile(t) for t in self.flowers))
            winning = None if self.winning_tile is None else Tile(self.winning_tile)
        except (ValueError, TypeError) as exc:  # a number that is no tile, from a caller's code
            raise HandError(f"not a tile: {exc}") from None
        melds = tuple(self.melds)
        object.__setattr__(self, "concealed", concealed)
        object.__setattr__(self, "flowers", flowers)
        object.__setattr__(self, "melds", melds)
        object.__setattr__(self, "winning_tile", winning)
        for t in concealed:
            if t.is_flower:
                raise HandError(
                    f"flower {t.chinese} among the concealed tiles: list it as a flower"
                )
        if winning is not None and winning.is_flower:
            raise HandError(f"a flower ({winning.chinese}) cannot be the winning tile")
        for f in flowers:
            if not f.is_flower:
                raise HandError(f"{f.code} is not a flower")
        doubled = [f.chinese for f, n in Counter(flowers).items() if n > 1]
        if doubled:
            raise HandError(f"each flower exists once, but {''.join(doubled)} appears twice")
        if len(melds) > 4:
            raise HandError(f"a hand has at most four melds, not {len(melds)}")
        for m in melds:
            if not isinstance(m, Meld):
                raise HandError(f"not a meld: {m!r}")
        counts = [0] * NUM_KINDS
        for t in self.all_tiles_iter():
            counts[t] += 1
        too_many = [Tile(i) for i, c in enumerate(counts) if c > COPIES]
        if too_many:
            t = too_many[0]
            raise HandError(
                f"there are only four {t.code} ({t.chinese}) in the set, this hand has {counts[t]}"
            )
        object.__setattr__(self, "_counts", tuple(counts))
        hidden = [0] * NUM_KINDS
        for t in concealed:
            hidden[t] += 1
        if winning is not None:
            hidden[winning] += 1
        object.__setattr__(self, "_concealed", tuple(hidden))
        object.__setattr__(self, "_no_claims", all(m.is_concealed for m in melds))

    # -- construction ---------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Hand:
        """Read a hand in the notation (see the module docstring)."""
        if not isinstance(text, str):
            raise HandError(f"a hand must be written as text, not {type(text).__name__}")
        melds: list[Meld] = []

        def take_meld(m: re.Match[str]) -> str:
            tiles = tuple(parse_tiles(m.group(1)))
            added = m.group(2) == "+"
            source_text = m.group(3)
            source = None if source_text in (None, "?") else int(source_text)
            if added:
                kind = MeldKind.ADDED_KONG
            elif len(tiles) == 4:
                kind = MeldKind.CONCEALED_KONG if source_text is None else MeldKind.KONG
            elif len(tiles) == 3 and len(set(tiles)) == 1:
                kind = MeldKind.PUNG
            else:
                kind = MeldKind.CHOW
            melds.append(Meld(kind, tiles, source))
            return " "

        rest = _MELD.sub(take_meld, text)
        if "[" in rest or "]" in rest:
            raise HandError(f"unbalanced or malformed meld brackets in {text!r}")
        winning: Tile | None = None
        if "+" in rest:
            rest, _, win_text = rest.partition("+")
            if "+" in win_text:
                raise HandError(f"more than one winning tile (+) in {text!r}")
            win_tiles = parse_tiles(win_text)
            if len(win_tiles) != 1:
                raise HandError(f"'+' must be followed by exactly one winning tile in {text!r}")
            winning = win_tiles[0]
        tiles = parse_tiles(rest)
        return cls(
            concealed=tuple(t for t in tiles if not t.is_flower),
            melds=tuple(melds),
            flowers=tuple(t for t in tiles if t.is_flower),
            winning_tile=winning,
        )

    # -- views ------------------------------------------------------------------------
    def all_tiles_iter(self):  # type: ignore[no-untyped-def]
        yield from self.concealed
        for m in self.melds:
            yield from m.tiles
        if self.winning_tile is not None:
            yield self.winning_tile

    @property
    def counts(self) -> tuple[int, ...]:
        """Count array of every playing tile: concealed, melds and the winning tile."""
        return self._counts

    def concealed_counts(self, *, with_winning_tile: bool = True) -> tuple[int, ...]:
        """Count array of the concealed tiles (and the winning tile unless told not to)."""
        if with_winning_tile or self.winning_tile is None:
            return self._concealed
        counts = list(self._concealed)
        counts[self.winning_tile] -= 1
        return tuple(counts)

    @property
    def is_concealed(self) -> bool:
        """No 吃, 碰 or exposed kong: the condition of 门清 (concealed kongs allowed)."""
        return self._no_claims

    def check_size(self, *, complete: bool) -> None:
        """Check the number of concealed tiles: ``13 - 3 x melds`` without the winning tile
        (and with it one more when ``complete``). Raises :class:`HandError` otherwise."""
        expected = concealed_size(len(self.melds))
        have = len(self.concealed)
        if have != expected:
            raise HandError(
                f"with {len(self.melds)} meld(s) a hand holds {expected} concealed tiles "
                f"before the winning tile, this one holds {have}"
            )
        if complete and self.winning_tile is None:
            raise HandError("the winning tile is missing")

    def notation(self) -> str:
        """The hand in the notation; ``Hand.parse(h.notation()) == h``."""
        parts = []
        if self.concealed:
            parts.append(format_tiles(self.concealed))
        parts.extend(m.notation() for m in self.melds)
        if self.flowers:
            parts.append("".join(f.chinese for f in self.flowers))
        if self.winning_tile is not None:
            parts.append("+" + self.winning_tile.code)
        return " ".join(parts)

    def __str__(self) -> str:
        return self.notation()
