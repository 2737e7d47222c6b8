"""Melds laid down on the table: chows, pungs and the three kinds of kong.

A kong is a set of its own, never "three tiles plus one": it counts as one of the four sets of a
hand, and its 花 depend on how it was made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from controller.rules.errors import HandError
from controller.rules.tiles import Tile, format_tiles, parse_tiles

SEATS = 4


class MeldKind(StrEnum):
    """How a meld was made. The values are the names used in JSON and in the notation."""

    CHOW = "chow"  # 吃, only from the player before you
    PUNG = "pung"  # 碰
    KONG = "kong"  # 明杠: three in hand and the fourth claimed from a discard
    ADDED_KONG = "added_kong"  # 上杠 / 加杠: a drawn tile added to one's own exposed pung
    CONCEALED_KONG = "concealed_kong"  # 暗杠: four drawn tiles

    @property
    def is_kong(self) -> bool:
        return self in (MeldKind.KONG, MeldKind.ADDED_KONG, MeldKind.CONCEALED_KONG)

    @property
    def size(self) -> int:
        return 4 if self.is_kong else 3


_MELD_NOTATION = {
    MeldKind.CHOW: "",
    MeldKind.PUNG: "",
    MeldKind.KONG: "",
    MeldKind.ADDED_KONG: "+",
    MeldKind.CONCEALED_KONG: "",
}


_HOW = {
    MeldKind.PUNG: "pung",
    MeldKind.KONG: "kong",
    MeldKind.ADDED_KONG: "added kong",
    MeldKind.CONCEALED_KONG: "concealed kong",
}


def _hua_source(kind: MeldKind, tile: Tile) -> str | None:
    if kind is MeldKind.CHOW or (tile.is_number and kind is MeldKind.PUNG):
        return None
    group = "suit" if tile.is_number else ("wind" if tile.is_wind else "dragon")
    return f"{group} {_HOW[kind]}"


@dataclass(frozen=True, slots=True)
class Meld:
    """One meld. ``source`` is the seat (0-3) whose discard was claimed for it; for an added
    kong, the seat the original pung was claimed from; ``None`` for a concealed kong.

    Construction validates the shape: a chow is three consecutive tiles of one suit, a pung
    three identical tiles, a kong four; anything else raises :class:`HandError`.
    """

    kind: MeldKind
    tiles: tuple[Tile, ...]
    source: int | None = None
    # Derived once, read by scoring for every win: the tiles and the whole meld in the
    # notation, and what the meld is as a source of 花.
    tiles_text: str = field(init=False, repr=False, compare=False)
    text: str = field(init=False, repr=False, compare=False)
    _hua_source: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            kind = MeldKind(self.kind)
            tiles = tuple(sorted(Tile(t) for t in self.tiles))
        except (ValueError, TypeError) as exc:  # from a caller's code, not from parsed text
            raise HandError(f"not a meld: {exc}") from None
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "tiles", tiles)
        shown = format_tiles(tiles)
        if any(t.is_flower for t in tiles):
            raise HandError(f"a {kind.value} cannot contain flowers ({shown})")
        if len(tiles) != kind.size:
            raise HandError(f"a {kind.value} has {kind.size} tiles, not {len(tiles)} ({shown})")
        if kind is MeldKind.CHOW:
            first = tiles[0]
            if not (
                first.is_number
                and tiles[1] == first + 1
                and tiles[2] == first + 2
                and tiles[2].suit is first.suit
            ):
                raise HandError(f"a chow is three consecutive tiles of one suit, not {shown}")
        elif len(set(tiles)) != 1:
            raise HandError(f"a {kind.value} is {kind.size} identical tiles, not {shown}")
        if kind is MeldKind.CONCEALED_KONG:
            if self.source is not None:
                raise HandError(f"a concealed kong is not claimed from anyone ({shown})")
        elif self.source is not None and (
            not isinstance(self.source, int)
            or isinstance(self.source, bool)
            or not 0 <= self.source < SEATS
        ):
            raise HandError(f"the seat a meld was claimed from is 0-3, not {self.source!r}")

        object.__setattr__(self, "tiles_text", shown)
        text = shown + _MELD_NOTATION[kind]
        if self.source is not None:
            text += f"<{self.source}"
        elif kind is not MeldKind.CONCEALED_KONG:
            text += "<?"
        object.__setattr__(self, "text", f"[{text}]")
        object.__setattr__(self, "_hua_source", _hua_source(kind, tiles[0]))

    @classmethod
    def of(
        cls, kind: MeldKind | str, tiles: str | tuple[Tile, ...], source: int | None = None
    ) -> Meld:
        """Build a meld from tiles written in the notation: ``Meld.of("pung", "EEE", 1)``."""
        if isinstance(tiles, str):
            tiles = tuple(parse_tiles(tiles))
        try:
            kind = MeldKind(kind)
        except ValueError:
            names = ", ".join(k.value for k in MeldKind)
            raise HandError(f"unknown meld kind {kind!r} (one of {names})") from None
        return cls(kind, tiles, source)

    @property
    def tile(self) -> Tile:
        """The lowest tile (for a pung or kong, the tile itself)."""
        return self.tiles[0]

    @property
    def is_kong(self) -> bool:
        return self.kind.is_kong

    @property
    def is_pung_or_kong(self) -> bool:
        return self.kind is not MeldKind.CHOW

    @property
    def is_concealed(self) -> bool:
        """Only a concealed kong keeps the hand 门清."""
        return self.kind is MeldKind.CONCEALED_KONG

    @property
    def is_claim(self) -> bool:
        """Made by claiming another player's discard (吃, 碰, 明杠; an added kong's pung was)."""
        return self.kind is not MeldKind.CONCEALED_KONG

    def notation(self) -> str:
        """``[EEE<1]``, ``[123m<3]``, ``[5555p+<2]`` (added kong), ``[FFFF]`` (concealed)."""
        return self.text

    def to_json(self) -> dict[str, Any]:
        """The meld as a win's JSON gives it (``docs/scoring.md``): ``{"kind": "pung",
        "tiles": "EEE", "from": 1}``, without ``from`` where no seat is known. It reads back
        with :func:`controller.rules.meld_from_json`, which refuses an exposed kong with no
        seat unless told the meld is not scored (``scored=False``)."""
        out: dict[str, Any] = {"kind": self.kind.value, "tiles": self.tiles_text}
        if self.source is not None:
            out["from"] = self.source
        return out

    @property
    def hua_source(self) -> str | None:
        """What the meld is as a source of 花 (``"wind pung"``, ``"suit concealed kong"`` …;
        the keys of a profile's 花 table), or None for a chow or a suit pung."""
        return self._hua_source

    def __str__(self) -> str:
        return self.notation()
