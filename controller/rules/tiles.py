"""The 144-tile Shanghai set: 34 kinds of playing tile (four copies each) and 8 flowers.

A tile kind is a :class:`Tile`, an ``IntEnum`` whose value is its index in the count arrays the
hand analysis works on (the layout the ``mahjong`` package uses for the suits and winds):

====== ============================ =====================
index  tiles                        text codes
====== ============================ =====================
0-8    1-9 万 characters             ``1m`` … ``9m``
9-17   1-9 筒 dots                   ``1p`` … ``9p``
18-26  1-9 条 bamboo                 ``1s`` … ``9s``
27-30  东 南 西 北 winds             ``E S W N``
31-33  中 发 白 dragons              ``C F P``
34-41  春 夏 秋 冬 梅 兰 竹 菊 flowers ``1f`` … ``8f``
====== ============================ =====================

The text notation is documented in ``docs/notation.md``; :func:`parse_tiles` reads it and
:func:`format_tiles` writes it back, so that ``parse_tiles(format_tiles(t)) == t``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from enum import IntEnum
from functools import lru_cache

from controller.rules.errors import HandError

NUM_KINDS = 34
"""Kinds of playing tile (the length of a count array)."""
NUM_FACES = 42
"""Kinds of tile face: the 34 playing kinds and the 8 flowers."""
COPIES = 4
"""Copies of each playing tile in the set; each flower exists once."""


class Suit(IntEnum):
    """The group a tile belongs to. The three number suits come first, in index order."""

    CHARACTERS = 0
    DOTS = 1
    BAMBOO = 2
    WIND = 3
    DRAGON = 4
    FLOWER = 5

    @property
    def is_number(self) -> bool:
        return self <= Suit.BAMBOO

    @property
    def chinese(self) -> str:
        return _SUIT_CHINESE[self]


_SUIT_CHINESE = {
    Suit.CHARACTERS: "万",
    Suit.DOTS: "筒",
    Suit.BAMBOO: "条",
    Suit.WIND: "风",
    Suit.DRAGON: "箭",
    Suit.FLOWER: "花",
}
_SUIT_LETTER = {Suit.CHARACTERS: "m", Suit.DOTS: "p", Suit.BAMBOO: "s", Suit.FLOWER: "f"}


class Tile(IntEnum):
    """One kind of tile face. The value is the tile's index in a count array."""

    M1 = 0
    M2 = 1
    M3 = 2
    M4 = 3
    M5 = 4
    M6 = 5
    M7 = 6
    M8 = 7
    M9 = 8
    P1 = 9
    P2 = 10
    P3 = 11
    P4 = 12
    P5 = 13
    P6 = 14
    P7 = 15
    P8 = 16
    P9 = 17
    S1 = 18
    S2 = 19
    S3 = 20
    S4 = 21
    S5 = 22
    S6 = 23
    S7 = 24
    S8 = 25
    S9 = 26
    EAST = 27
    SOUTH = 28
    WEST = 29
    NORTH = 30
    RED = 31  # 中
    GREEN = 32  # 发
    WHITE = 33  # 白
    SPRING = 34
    SUMMER = 35
    AUTUMN = 36
    WINTER = 37
    PLUM = 38
    ORCHID = 39
    BAMBOO_FLOWER = 40
    CHRYSANTHEMUM = 41

    @property
    def suit(self) -> Suit:
        return _SUITS[self]

    @property
    def number(self) -> int | None:
        """1-9 for number tiles, 1-8 for flowers (春 = 1 … 菊 = 8), None for honours."""
        return _NUMBERS[self]

    @property
    def is_number(self) -> bool:
        return self < 27

    @property
    def is_honour(self) -> bool:
        """Winds and dragons (风字牌)."""
        return 27 <= self < 34

    @property
    def is_wind(self) -> bool:
        return 27 <= self < 31

    @property
    def is_dragon(self) -> bool:
        return 31 <= self < 34

    @property
    def is_flower(self) -> bool:
        return self >= 34

    @property
    def code(self) -> str:
        """The ASCII code: ``5m``, ``E``, ``C``, ``3f``."""
        return _CODES[self]

    @property
    def chinese(self) -> str:
        """The Chinese name: ``五万``, ``东``, ``中``, ``秋``."""
        return _CHINESE[self]

    def __str__(self) -> str:
        return self.code


_HONOUR_CODES = "ESWNCFP"
_HONOUR_CHINESE = "东南西北中发白"
_FLOWER_CHINESE = "春夏秋冬梅兰竹菊"
_NUMERALS = "一二三四五六七八九"

_SUITS: dict[Tile, Suit] = {}
_NUMBERS: dict[Tile, int | None] = {}
_CODES: dict[Tile, str] = {}
_CHINESE: dict[Tile, str] = {}
for _t in Tile:
    if _t < 27:
        _s = Suit(_t // 9)
        _SUITS[_t], _NUMBERS[_t] = _s, _t % 9 + 1
        _CODES[_t] = f"{_t % 9 + 1}{_SUIT_LETTER[_s]}"
        _CHINESE[_t] = _NUMERALS[_t % 9] + _s.chinese
    elif _t < 34:
        _SUITS[_t] = Suit.WIND if _t < 31 else Suit.DRAGON
        _NUMBERS[_t] = None
        _CODES[_t] = _HONOUR_CODES[_t - 27]
        _CHINESE[_t] = _HONOUR_CHINESE[_t - 27]
    else:
        _SUITS[_t], _NUMBERS[_t] = Suit.FLOWER, _t - 33
        _CODES[_t] = f"{_t - 33}f"
        _CHINESE[_t] = _FLOWER_CHINESE[_t - 34]

TILES: tuple[Tile, ...] = tuple(Tile)
"""Every tile face by index: ``TILES[i]`` is ``Tile(i)``, without the enum call's cost."""
FLOWERS: tuple[Tile, ...] = TILES[34:42]
HONOURS: tuple[Tile, ...] = tuple(Tile(i) for i in range(27, 34))
WINDS: tuple[Tile, ...] = HONOURS[:4]
DRAGONS: tuple[Tile, ...] = HONOURS[4:]
PLAYING_TILES: tuple[Tile, ...] = tuple(Tile(i) for i in range(34))

# Every single-character name a tile has, Chinese (simplified and traditional) and ASCII.
_CHAR_TILES: dict[str, Tile] = {}
for _i, _c in enumerate(_HONOUR_CODES):
    _CHAR_TILES[_c] = Tile(27 + _i)
for _i, _c in enumerate(_HONOUR_CHINESE):
    _CHAR_TILES[_c] = Tile(27 + _i)
for _i, _c in enumerate(_FLOWER_CHINESE):
    _CHAR_TILES[_c] = Tile(34 + _i)
_CHAR_TILES.update({"東": Tile.EAST, "發": Tile.GREEN, "蘭": Tile.ORCHID, "紅": Tile.RED})

_SUIT_WORDS: dict[str, Suit] = {
    "m": Suit.CHARACTERS,
    "万": Suit.CHARACTERS,
    "萬": Suit.CHARACTERS,
    "p": Suit.DOTS,
    "筒": Suit.DOTS,
    "饼": Suit.DOTS,
    "餅": Suit.DOTS,
    "s": Suit.BAMBOO,
    "条": Suit.BAMBOO,
    "條": Suit.BAMBOO,
    "索": Suit.BAMBOO,
    "f": Suit.FLOWER,
    "z": Suit.WIND,  # tenhou-style honours: 1z-4z winds, 5z 白, 6z 发, 7z 中
}
_Z_HONOURS = (Tile.EAST, Tile.SOUTH, Tile.WEST, Tile.NORTH, Tile.WHITE, Tile.GREEN, Tile.RED)
_DIGITS = {str(i): i for i in range(10)} | {c: i + 1 for i, c in enumerate(_NUMERALS)}
_DIGITS["两"] = 2
_DIGITS["兩"] = 2
_DIGITS["幺"] = 1
_DIGITS["〇"] = 0
_GROUP = re.compile(r"([0-9一二两兩三四五六七八九幺〇]+)\s*([mpsfz万萬筒饼餅条條索])")
_SEPARATORS = " \t\n\r,;、，"


def tile_from_code(code: str) -> Tile:
    """One tile from any of its names (``5p``, ``五筒``, ``E``, ``东``, ``春``, ``1f``)."""
    tiles = parse_tiles(code)
    if len(tiles) != 1:
        raise HandError(f"expected one tile, got {len(tiles)} in {code!r}")
    return tiles[0]


def parse_tiles(text: str) -> list[Tile]:
    """Read tiles written in the project's notation, in the order written.

    Accepts number groups with a suit (``123m``, ``一二三万``, ``5筒``), single letters for honours
    (``E S W N C F P``), Chinese honour and flower characters, flower codes (``1f``-``8f``) and
    tenhou-style ``z`` honours. Whitespace and commas are ignored. Raises :class:`HandError`
    naming the first character that is not a tile.
    """
    if not isinstance(text, str):
        raise HandError(f"tiles must be written as text, got {type(text).__name__}")
    out: list[Tile] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _SEPARATORS:
            i += 1
            continue
        m = _GROUP.match(text, i)
        if m:
            suit = _SUIT_WORDS[m.group(2)]
            for d in m.group(1):
                out.append(_numbered(_DIGITS[d], suit, m.group(0)))
            i = m.end()
            continue
        tile = _CHAR_TILES.get(ch)
        if tile is None and ch in _DIGITS:
            # numbers with no suit after them: the fault is where the suit should be
            j = i
            while j < n and text[j] in _DIGITS:
                j += 1
            after = "the end" if j == n else "a space" if text[j].isspace() else repr(text[j])
            raise HandError(
                f"the numbers {text[i:j]!r} at position {i} of {text!r} have no suit after "
                f"them (m, p, s, f, 万, 筒, 条 …), but {after}"
            )
        if tile is None:
            raise HandError(f"{ch!r} at position {i} of {text!r} is not a tile")
        out.append(tile)
        i += 1
    return out


def _numbered(number: int, suit: Suit, group: str) -> Tile:
    if suit is Suit.FLOWER:
        if not 1 <= number <= 8:
            raise HandError(f"flowers are numbered 1-8, not {number} (in {group!r})")
        return Tile(33 + number)
    if suit is Suit.WIND:  # the z notation
        if not 1 <= number <= 7:
            raise HandError(f"honours are numbered 1z-7z, not {number}z (in {group!r})")
        return _Z_HONOURS[number - 1]
    if not 1 <= number <= 9:
        raise HandError(f"suit tiles are numbered 1-9, not {number} (in {group!r})")
    return Tile(suit * 9 + number - 1)


def format_tiles(tiles: Iterable[Tile], *, chinese: bool = False) -> str:
    """Write tiles in the compact notation: runs of one suit share their letter.

    ``format_tiles([M1, M2, M3, EAST, EAST])`` is ``"123m EE"``. The order is kept, so the
    result parses back to the same list. ``chinese=True`` writes Chinese names instead.
    """
    key = tuple(tiles)
    if chinese:
        return " ".join(TILES[t].chinese for t in key)
    return _format(key)


@lru_cache(maxsize=4096)
def _format(tiles: tuple[int, ...]) -> str:
    # Scoring writes the same melds and sets over and over: the cache makes that free.
    parts: list[str] = []
    run: list[str] = []
    run_suit = -1
    last_honour = -1
    for t in tiles:
        t = int(t)
        if not 0 <= t < NUM_FACES:
            raise HandError(f"{t} is not a tile")
        if 27 <= t < 34:
            if run:
                parts.append("".join(run) + _SUIT_LETTER[Suit(run_suit)])
                run = []
            if t == last_honour:
                parts[-1] += _CODES[TILES[t]]
            else:
                parts.append(_CODES[TILES[t]])
            last_honour = t
            run_suit = -1
            continue
        last_honour = -1
        suit = t // 9 if t < 27 else Suit.FLOWER
        if suit != run_suit and run:
            parts.append("".join(run) + _SUIT_LETTER[Suit(run_suit)])
            run = []
        run_suit = suit
        run.append(str(t % 9 + 1 if t < 27 else t - 33))
    if run:
        parts.append("".join(run) + _SUIT_LETTER[Suit(run_suit)])
    return " ".join(parts)


def counts_of(tiles: Iterable[Tile]) -> list[int]:
    """The 34-entry count array of the playing tiles given (flowers are not counted)."""
    counts = [0] * NUM_KINDS
    for t in tiles:
        if t < NUM_KINDS:
            counts[t] += 1
    return counts


def tiles_of(counts: Sequence[int]) -> list[Tile]:
    """The tiles of a count array, in index order."""
    return [Tile(i) for i, c in enumerate(counts) for _ in range(c)]
