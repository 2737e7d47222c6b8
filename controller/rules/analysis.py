"""Hand division: the ways concealed tiles split into sets and a pair, and the waits of a
ready hand. Scoring is separate (``controller.rules.scoring``) and picks among the readings.

Everything works on 34-entry count arrays. Each number suit is divided on its own, with the
results memoised per suit pattern, so a complete-hand check costs three dictionary lookups
and a pass over the honours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from controller.rules.tiles import NUM_KINDS, Tile, format_tiles


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


@lru_cache(maxsize=1 << 16)
def _suit_ok(pattern: tuple[int, ...]) -> bool:
    """Whether the pattern divides into sets, plus one pair when its size is 2 mod 3."""
    size = sum(pattern)
    if size % 3 == 0:
        return bool(_suit_sets(pattern))
    if size % 3 == 2:
        return bool(_suit_pair_sets(pattern))
    return False


# -- whole hands ---------------------------------------------------------------------------


def is_standard(counts: Sequence[int]) -> bool:
    """Whether concealed tiles divide into sets and exactly one pair.

    ``counts`` is a 34-entry count array whose total is 2 mod 3 (14, 11, 8, 5 or 2 tiles: the
    concealed part of a complete hand, the melds being sets already).
    """
    pairs = 0
    for start in (0, 9, 18):
        pattern = tuple(counts[start : start + 9])
        size = sum(pattern)
        if size:
            rem = size % 3
            if rem == 1 or not _suit_ok(pattern):
                return False
            if rem == 2:
                pairs += 1
    for i in range(27, 34):
        c = counts[i]
        if c == 2:
            pairs += 1
        elif c and c != 3:
            return False
    return pairs == 1


def is_all_pungs(counts: Sequence[int]) -> bool:
    """Whether concealed tiles are all pungs and one pair (the shape of 碰碰胡)."""
    pairs = 0
    for c in counts:
        if c == 2:
            pairs += 1
        elif c and c != 3:
            return False
    return pairs == 1


def is_all_honours(counts: Sequence[int]) -> bool:
    """Whether every tile counted is a wind or a dragon."""
    return not any(counts[:27])


def readings(counts: Sequence[int]) -> list[Reading]:
    """Every division of concealed tiles into sets and one pair (empty if there is none)."""
    if len(counts) != NUM_KINDS:
        raise ValueError("a count array has 34 entries")
    honour_sets: list[ConcealedSet] = []
    honour_pair: Tile | None = None
    for i in range(27, 34):
        c = counts[i]
        if c == 3:
            honour_sets.append(ConcealedSet(SetKind.PUNG, Tile(i)))
        elif c == 2:
            if honour_pair is not None:
                return []
            honour_pair = Tile(i)
        elif c:
            return []
    # Per suit: the options as (pair or None, sets).
    options: list[list[tuple[Tile | None, tuple[ConcealedSet, ...]]]] = []
    for start in (0, 9, 18):
        pattern = tuple(counts[start : start + 9])
        size = sum(pattern)
        if not size:
            continue
        if size % 3 == 0:
            opts = [(None, _sets(start, s)) for s in _suit_sets(pattern)]
        elif size % 3 == 2:
            opts = [(Tile(start + p), _sets(start, s)) for p, s in _suit_pair_sets(pattern)]
        else:
            return []
        if not opts:
            return []
        options.append(opts)
    out: list[Reading] = []

    def combine(k: int, pair: Tile | None, sets: tuple[ConcealedSet, ...]) -> None:
        if k == len(options):
            if pair is not None:
                out.append(Reading(pair, sets + tuple(honour_sets)))
            return
        for p, s in options[k]:
            if p is not None and pair is not None:
                continue
            combine(k + 1, pair if p is None else p, sets + s)

    combine(0, honour_pair, ())
    return out


def _sets(start: int, sets: tuple[tuple[int, int], ...]) -> tuple[ConcealedSet, ...]:
    return tuple(
        ConcealedSet(SetKind.PUNG if kind else SetKind.CHOW, Tile(start + off))
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
