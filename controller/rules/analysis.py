"""Hand division: the ways concealed tiles split into sets and a pair, and the waits of a
ready hand. Scoring is separate (``controller.rules.scoring``) and picks among the readings.

Everything works on 34-entry count arrays. Each number suit is divided on its own, with the
results memoised per suit pattern, so a complete-hand check costs three dictionary lookups
and a pass over the honours.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from controller.rules.tiles import NUM_KINDS, TILES, Tile, format_tiles


class SetKind(Enum):
    CHOW = "chow"
    PUNG = "pung"


@dataclass(frozen=True, slots=True)
class ConcealedSet:
    """A set read from concealed tiles: a chow starting at ``tile`` or a pung of ``tile``."""

    kind: SetKind
    tile: Tile

    @property
    def tiles(self) -> tuple[Tile, Tile, Tile]:
        t = self.tile
        if self.kind is SetKind.CHOW:
            return (t, Tile(t + 1), Tile(t + 2))
        return (t, t, t)

    def __str__(self) -> str:
        return format_tiles(self.tiles)


@dataclass(frozen=True, slots=True)
class Reading:
    """One way to read concealed tiles as sets and a pair (``pair`` is None for a reading
    that has no pair, which only the irregular all-honours shape uses)."""

    pair: Tile | None
    sets: tuple[ConcealedSet, ...]

    @property
    def all_pungs(self) -> bool:
        return all(s.kind is SetKind.PUNG for s in self.sets)

    def describe(self) -> list[str]:
        out = [str(s) for s in self.sets]
        if self.pair is not None:
            out.append(format_tiles((self.pair, self.pair)))
        return out


# -- one suit -----------------------------------------------------------------------------
# A suit pattern is the tuple of its nine counts. Each memoised function answers for one
# pattern; patterns recur constantly across hands, so the caches stay hot.


@lru_cache(maxsize=1 << 16)
def _suit_sets(pattern: tuple[int, ...]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Every division of a suit pattern into sets only: each as (kind, offset) pairs, with
    kind 0 for a chow and 1 for a pung. Empty tuple if there is none."""
    first = next((i for i, c in enumerate(pattern) if c), None)
    if first is None:
        return ((),)
    out: list[tuple[tuple[int, int], ...]] = []
    counts = list(pattern)
    if counts[first] >= 3:
        counts[first] -= 3
        for rest in _suit_sets(tuple(counts)):
            out.append(((1, first), *rest))
        counts[first] += 3
    if first <= 6 and counts[first + 1] and counts[first + 2]:
        counts[first] -= 1
        counts[first + 1] -= 1
        counts[first + 2] -= 1
        for rest in _suit_sets(tuple(counts)):
            out.append(((0, first), *rest))
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def _suit_pair_sets(
    pattern: tuple[int, ...],
) -> tuple[tuple[int, tuple[tuple[int, int], ...]], ...]:
    """Every division of a suit pattern into sets and exactly one pair: (pair offset, sets)."""
    out = []
    counts = list(pattern)
    for i, c in enumerate(pattern):
        if c >= 2:
            counts[i] -= 2
            for sets in _suit_sets(tuple(counts)):
                out.append((i, sets))
            counts[i] += 2
    return tuple(out)


_BAD = -100  # a group that cannot be divided: no sum of the others can reach 5


class _GroupTable(dict):
    """Suit pattern (nine counts) -> 1 if it divides into sets, 2 if into sets and one pair,
    ``_BAD`` otherwise. Filled on first sight of each pattern."""

    def __missing__(self, pattern: tuple[int, ...]) -> int:
        found = _suit_division(pattern, False)
        value = _BAD if found is None else (1 if found[1] is None else 2)
        self[pattern] = value
        return value


def _greedy_sets(counts: list[int]) -> list[tuple[int, int]] | None:
    """One division of a suit pattern into sets, or None if there is none.

    From the lowest tile up, the number of chows starting at a tile can be taken as its count
    mod 3 (three equal chows are three pungs), and the rest are pungs; so one pass decides.
    Each set is (kind, offset): kind 0 a chow, 1 a pung.
    """
    c = list(counts)
    out: list[tuple[int, int]] = []
    for i in range(9):
        n = c[i]
        if not n:
            continue
        chows = n % 3
        if chows:
            if i > 6 or c[i + 1] < chows or c[i + 2] < chows:
                return None
            c[i + 1] -= chows
            c[i + 2] -= chows
            out.extend([(0, i)] * chows)
        out.extend([(1, i)] * (n // 3))
    return out


def _suit_division(
    pattern: tuple[int, ...], pungs_only: bool
) -> tuple[list[tuple[int, int]], int | None] | None:
    """One division of a suit pattern into sets and, if its size is 2 mod 3, one pair:
    (sets, pair offset or None); with ``pungs_only``, one without chows. None if none."""
    size = sum(pattern)
    if size % 3 == 0:
        sets = _greedy_sets(list(pattern))
        if sets is not None and not (pungs_only and any(k == 0 for k, _ in sets)):
            return sets, None
        return None
    if size % 3 == 2:
        counts = list(pattern)
        for p in range(9):
            if counts[p] >= 2:
                counts[p] -= 2
                sets = _greedy_sets(counts)
                counts[p] += 2
                if sets is not None and not (pungs_only and any(k == 0 for k, _ in sets)):
                    return sets, p
    return None


class _HonourTable(dict):
    """Honour counts (seven) -> 1 if all pungs, 2 if pungs and one pair, ``_BAD`` otherwise."""

    def __missing__(self, pattern: tuple[int, ...]) -> int:
        pairs = sum(1 for c in pattern if c == 2)
        ok = all(c in (0, 2, 3) for c in pattern) and pairs <= 1
        value = (2 if pairs else 1) if ok else _BAD
        self[pattern] = value
        return value


_SUIT_TABLE = _GroupTable()
_HONOUR_TABLE = _HonourTable()


# -- whole hands ---------------------------------------------------------------------------


def is_standard(counts: Sequence[int]) -> bool:
    """Whether concealed tiles divide into sets and exactly one pair.

    ``counts`` is a 34-entry count array (the concealed part of a complete hand: 14, 11, 8, 5
    or 2 tiles; the melds are sets already). Each group (three suits, the honours) is looked
    up in a table: 1 for sets only, 2 for sets and a pair; exactly one pair makes the sum 5.
    """
    c = counts if type(counts) is tuple else tuple(counts)
    return (
        _SUIT_TABLE[c[0:9]] + _SUIT_TABLE[c[9:18]] + _SUIT_TABLE[c[18:27]] + _HONOUR_TABLE[c[27:34]]
        == 5
    )


def is_all_pungs(counts: Sequence[int]) -> bool:
    """Whether concealed tiles are all pungs and one pair (the shape of 碰碰胡)."""
    c = counts if type(counts) is tuple else tuple(counts)
    return c.count(2) == 1 and not c.count(1) and not c.count(4)


def is_all_honours(counts: Sequence[int]) -> bool:
    """Whether every tile counted is a wind or a dragon."""
    return not any(counts[:27])


def readings(counts: Sequence[int]) -> list[Reading]:
    """Every division of concealed tiles into sets and one pair (empty if there is none)."""
    return list(iter_readings(counts))


def reading_text(counts: Sequence[int], *, all_pungs: bool = False) -> tuple[str, ...] | None:
    """One division of concealed tiles into sets and a pair (all pungs if asked), written in
    the notation, or None if there is none. Built from memoised per-suit texts, as scoring
    shows the reading of every win."""
    c = counts if type(counts) is tuple else tuple(counts)
    sets: list[str] = []
    pair: str | None = None
    for start in (0, 9, 18, 27):
        pattern = c[start : start + 9] if start < 27 else c[27:34]
        if not any(pattern):
            continue
        found = _suit_text(pattern, start, all_pungs) if start < 27 else _honour_text(pattern)
        if found is None:
            return None
        group_sets, group_pair = found
        sets.extend(group_sets)
        if group_pair is not None:
            if pair is not None:
                return None
            pair = group_pair
    if pair is None:
        return None
    return (*sets, pair)


@lru_cache(maxsize=1 << 12)
def _honour_text(pattern: tuple[int, ...]) -> tuple[tuple[str, ...], str | None] | None:
    sets = []
    pair = None
    for i, n in enumerate(pattern):
        t = TILES[27 + i]
        if n == 3:
            sets.append(format_tiles((t, t, t)))
        elif n == 2 and pair is None:
            pair = format_tiles((t, t))
        elif n:
            return None
    return tuple(sets), pair


@lru_cache(maxsize=1 << 14)
def _suit_text(
    pattern: tuple[int, ...], start: int, all_pungs: bool
) -> tuple[tuple[str, ...], str | None] | None:
    found = _suit_division(pattern, all_pungs)
    if found is None:
        return None
    sets, pair = found
    # a miss comes with every new suit pattern, so the texts are looked up, not formatted
    names = _SET_TEXTS[start]
    texts = tuple(names[kind][off] for kind, off in sets)
    return texts, None if pair is None else format_tiles((TILES[start + pair],) * 2)


# The notation of every concealed set in a suit: [suit start][0 chow, 1 pung][offset].
_SET_TEXTS = {
    start: (
        tuple(format_tiles(TILES[start + i : start + i + 3]) if i < 7 else "" for i in range(9)),
        tuple(format_tiles((TILES[start + i],) * 3) for i in range(9)),
    )
    for start in (0, 9, 18)
}


def iter_readings(counts: Sequence[int]) -> Iterator[Reading]:
    """The divisions of concealed tiles into sets and one pair, one at a time."""
    if len(counts) != NUM_KINDS:
        raise ValueError("a count array has 34 entries")
    honour_sets: list[ConcealedSet] = []
    honour_pair: Tile | None = None
    for i in range(27, 34):
        c = counts[i]
        if c == 3:
            honour_sets.append(ConcealedSet(SetKind.PUNG, TILES[i]))
        elif c == 2:
            if honour_pair is not None:
                return
            honour_pair = TILES[i]
        elif c:
            return
    # Per suit: the options as (pair or None, sets).
    options: list[list[tuple[Tile | None, tuple[ConcealedSet, ...]]]] = []
    for start in (0, 9, 18):
        pattern = tuple(counts[start : start + 9])
        size = sum(pattern)
        if not size:
            continue
        opts: list[tuple[Tile | None, tuple[ConcealedSet, ...]]]
        if size % 3 == 0:
            opts = [(None, _sets(start, s)) for s in _suit_sets(pattern)]
        elif size % 3 == 2:
            opts = [(TILES[start + p], _sets(start, s)) for p, s in _suit_pair_sets(pattern)]
        else:
            return
        if not opts:
            return
        options.append(opts)
    honours = tuple(honour_sets)

    def combine(k: int, pair: Tile | None, sets: tuple[ConcealedSet, ...]) -> Iterator[Reading]:
        if k == len(options):
            if pair is not None:
                yield Reading(pair, sets + honours)
            return
        for p, s in options[k]:
            if p is not None and pair is not None:
                continue
            yield from combine(k + 1, pair if p is None else p, sets + s)

    yield from combine(0, honour_pair, ())


def _sets(start: int, sets: tuple[tuple[int, int], ...]) -> tuple[ConcealedSet, ...]:
    return tuple(
        ConcealedSet(SetKind.PUNG if kind else SetKind.CHOW, TILES[start + off])
        for kind, off in sets
    )


def completing_tiles(counts: Sequence[int], *, honours_any_shape: bool = False) -> list[Tile]:
    """The waits (听牌) of concealed tiles one short of complete: every tile that, added,
    makes sets and a pair (or, with ``honours_any_shape``, an all-honour hand of any shape).

    A tile the hand already holds four of is not a wait.
    """
    counts = list(counts)
    out = []
    for t in range(NUM_KINDS):
        if counts[t] >= 4:
            continue
        counts[t] += 1
        if is_standard(counts) or (honours_any_shape and is_all_honours(counts)):
            out.append(Tile(t))
        counts[t] -= 1
    return out
