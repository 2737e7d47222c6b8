"""The bots' strategy: how a simulated player picks its discards and claims.

The game (:mod:`hardware_sim.game`) owns the rules: it deals, offers each seat only what the
rules allow, and asks the rules engine whether a win is valid. A strategy only chooses among
what it is offered, through the :class:`Strategy` protocol, so tests can swap in scripted
players and stack a hand move by move.

:class:`Bot`, the default, plays greedily toward the hands Shanghai lets win. It measures its
hand against five targets (a flush in each suit, honours allowed; all pungs; all honours) by a
shanten count (tiles still to exchange before the hand is ready) and keeps the tiles of the
closest target. Ties go to the discard that leaves the most unseen tiles able to improve the
hand. It claims whenever a claim brings it closer and passes some cheap wins on a discard in
the hope of a self-draw, which is how 漏胡 comes up in simulated play.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from controller.rules import Meld, MeldKind, Profile, Tile, Win
from controller.rules.scoring import Score
from controller.rules.tiles import NUM_KINDS, TILES

FLUSH_TARGETS = (0, 1, 2)
"""Targets 0-2: a flush (清一色 / 混一色) in characters, dots or bamboo."""
PUNGS = 3
"""Target 3: 碰碰胡, four pungs or kongs and a pair, any suits."""
HONOURS = 4
"""Target 4: 风一色, every tile an honour, any shape."""
TARGETS = (*FLUSH_TARGETS, PUNGS, HONOURS)
TARGET_NAMES = ("characters flush", "dots flush", "bamboo flush", "all pungs", "all honours")
IMPOSSIBLE = 99
"""The shanten of a target the melds already rule out."""
SWITCH_BIAS = 0.5
"""Added to every target but the current one: a bot changes its plan only for a strictly
closer target, so it does not wander between two equally good suits."""
PASS_CHANCE = 0.2
"""How often a bot passes a cheap win on a discard, early in the hand (see :meth:`Bot.take_win`)."""

_HONOUR_GROUP = 3


@dataclass(frozen=True, slots=True)
class SeatView:
    """What a player knows when asked to choose: its own tiles and what lies face up."""

    seat: int
    counts: tuple[int, ...]
    """The concealed playing tiles as a 34-entry count array."""
    melds: tuple[Meld, ...]
    visible: tuple[int, ...]
    """Tiles everyone can see, as a count array: the discards lying in the ponds and the
    exposed melds of every seat (this seat's included)."""
    wall_left: int
    last_tile: Tile | None = None
    """On this seat's own turn (a discard, a kong): the tile it just drew or claimed (the
    dealer's first turn: the last tile dealt). None when asked about another's discard."""


@dataclass(frozen=True, slots=True)
class ClaimOption:
    """A claim the rules allow on a discard: the meld's kind and the tiles taken from the hand."""

    kind: MeldKind
    used: tuple[Tile, ...]


class Strategy(Protocol):
    """A player's choices. Every method is offered only legal moves."""

    def discard(self, view: SeatView) -> Tile:
        """The tile to discard from ``view.counts``."""
        ...

    def claim(self, view: SeatView, tile: Tile, options: list[ClaimOption]) -> ClaimOption | None:
        """One of ``options`` on the discard ``tile``, or None to let it go."""
        ...

    def concealed_kong(self, view: SeatView, options: list[Tile]) -> Tile | None:
        """A tile held four times to lay as a concealed kong, or None."""
        ...

    def added_kong(self, view: SeatView, tile: Tile) -> bool:
        """Whether to add the drawn ``tile`` to one's own pung of it."""
        ...

    def take_win(self, view: SeatView, win: Win, score: Score) -> bool:
        """Whether to win on a discard (passing makes the tile 漏胡 until the next draw)."""
        ...


# -- shanten ---------------------------------------------------------------------------------------

Block = tuple[int, int, int]
"""(sets, partial sets, head pair) found in one suit."""


def _pareto(options: set[Block]) -> tuple[Block, ...]:
    """Drop every option another option beats or equals in all three counts."""
    kept = [
        o
        for o in options
        if not any(p != o and p[0] >= o[0] and p[1] >= o[1] and p[2] >= o[2] for p in options)
    ]
    return tuple(sorted(kept))


@lru_cache(maxsize=1 << 16)
def suit_blocks(pattern: tuple[int, ...]) -> tuple[Block, ...]:
    """Every useful way to split one suit's nine counts into sets (chows, pungs), partial sets
    (a pair, two neighbours, two with a gap) and at most one head pair. Memoised: suit
    patterns recur constantly."""
    first = next((i for i, c in enumerate(pattern) if c), None)
    if first is None:
        return ((0, 0, 0),)
    out: set[Block] = set()
    i = first
    c = pattern

    def take(removed: tuple[int, ...], add: Block) -> None:
        rest = list(pattern)
        for k in removed:
            rest[k] -= 1
        for m, t, q in suit_blocks(tuple(rest)):
            if q + add[2] <= 1:
                out.add((m + add[0], t + add[1], q + add[2]))

    if c[i] >= 3:
        take((i, i, i), (1, 0, 0))
    if i <= 6 and c[i + 1] and c[i + 2]:
        take((i, i + 1, i + 2), (1, 0, 0))
    if c[i] >= 2:
        take((i, i), (0, 1, 0))
        take((i, i), (0, 0, 1))
    if i <= 7 and c[i + 1]:
        take((i, i + 1), (0, 1, 0))
    if i <= 6 and c[i + 2]:
        take((i, i + 2), (0, 1, 0))
    take((i,), (0, 0, 0))
    return _pareto(out)


@lru_cache(maxsize=1 << 12)
def honour_blocks(pattern: tuple[int, ...]) -> tuple[Block, ...]:
    """The honours' splits: honours make only pungs and pairs."""
    sets = sum(1 for c in pattern if c >= 3)
    pairs = sum(1 for c in pattern if c == 2)
    if not pairs:
        return ((sets, 0, 0),)
    return ((sets, pairs, 0), (sets, pairs - 1, 1))


def _formula(sets: int, partials: int, head: int) -> int:
    """The usual shanten count: -1 complete, 0 ready, n: n more useful tiles to be ready."""
    return 8 - 2 * sets - min(partials, 4 - sets) - head


@dataclass(frozen=True, slots=True)
class MeldSummary:
    """What the laid melds allow: their number, whether one is a chow, and the tile groups
    they use (bit 0-2 the suits, bit 3 the honours)."""

    count: int = 0
    chow: bool = False
    groups: int = 0

    def plus(self, kind: MeldKind, tile: Tile) -> MeldSummary:
        return MeldSummary(
            self.count + 1, self.chow or kind is MeldKind.CHOW, self.groups | 1 << group_of(tile)
        )


def group_of(tile: int) -> int:
    """0-2 for the number suits, 3 for the honours."""
    return tile // 9 if tile < 27 else _HONOUR_GROUP


def summarize(melds: tuple[Meld, ...] | list[Meld]) -> MeldSummary:
    out = MeldSummary()
    for m in melds:
        out = out.plus(m.kind, m.tiles[0])
    return out


def shanten(counts: list[int] | tuple[int, ...], melds: MeldSummary, target: int) -> int:
    """How far the concealed tiles (13 or 14 less 3 per meld) are from a complete hand of
    ``target``: -1 complete, 0 ready; :data:`IMPOSSIBLE` if the melds rule it out.

    For a flush and for all honours, tiles off the target are dead weight, and at least one
    draw is needed for each of them, whatever the sets say.
    """
    if target == PUNGS:
        if melds.chow:
            return IMPOSSIBLE
        sets = melds.count
        pairs = 0
        for c in counts:
            if c >= 3:
                sets += 1
            elif c == 2:
                pairs += 1
        head = 1 if pairs else 0
        return _formula(sets, pairs - head, head)
    floor_at = 13 - 3 * melds.count
    if target == HONOURS:
        if melds.groups & 0b111:
            return IMPOSSIBLE
        return floor_at - sum(counts[27:34])
    if melds.groups & 0b111 & ~(1 << target):
        return IMPOSSIBLE
    start = 9 * target
    suit = tuple(counts[start : start + 9])
    honours = tuple(counts[27:34])
    best = IMPOSSIBLE
    for m1, t1, q1 in suit_blocks(suit):
        for m2, t2, q2 in honour_blocks(honours):
            if q1 + q2 <= 1:
                best = min(best, _formula(melds.count + m1 + m2, t1 + t2, q1 + q2))
    return max(best, floor_at - sum(suit) - sum(honours))


def _relevant(counts: list[int], target: int) -> range | list[int]:
    """The tile kinds whose draw could bring ``target`` closer."""
    if target == HONOURS:
        return range(27, 34)
    if target == PUNGS:
        return [k for k in range(NUM_KINDS) if counts[k]]
    return [*range(9 * target, 9 * target + 9), *range(27, 34)]


def acceptance(counts: list[int], melds: MeldSummary, target: int, unseen: list[int]) -> int:
    """Unseen tiles that would lower the shanten of ``target`` if drawn (its 进张)."""
    base = shanten(counts, melds, target)
    total = 0
    for k in _relevant(counts, target):
        if unseen[k] <= 0:
            continue
        counts[k] += 1
        if shanten(counts, melds, target) < base:
            total += unseen[k]
        counts[k] -= 1
    return total


# -- the default bot -------------------------------------------------------------------------------


class Bot:
    """A greedy Shanghai player (see the module docstring). All its randomness comes from the
    generator it is given, so a hand replays exactly from its seed."""

    def __init__(
        self, seat: int, rng: random.Random, profile: Profile, *, pass_chance: float = PASS_CHANCE
    ) -> None:
        self.seat = seat
        self.rng = rng
        self.profile = profile
        self.pass_chance = pass_chance
        self.target: int | None = None

    # -- measuring ---------------------------------------------------------------------------------
    def _biased(self, counts: list[int], melds: MeldSummary) -> tuple[float, int]:
        """(distance, target): the closest target, the current one favoured by the bias."""
        best = (float(IMPOSSIBLE), PUNGS)
        for t in TARGETS:
            d = shanten(counts, melds, t) + (0.0 if t == self.target else SWITCH_BIAS)
            if d < best[0]:
                best = (d, t)
        return best

    def _best_discard(
        self, counts: list[int], melds: MeldSummary, unseen: list[int]
    ) -> tuple[float, int, Tile]:
        """(distance, target, tile) of the best discard from a hand one tile over."""
        scored: list[tuple[float, int, int]] = []
        for k in range(NUM_KINDS):
            if counts[k]:
                counts[k] -= 1
                d, t = self._biased(counts, melds)
                counts[k] += 1
                scored.append((d, t, k))
        low = min(d for d, _, _ in scored)
        tied = [(t, k) for d, t, k in scored if d == low]
        if len(tied) == 1:
            return low, tied[0][0], TILES[tied[0][1]]
        best_key: tuple[int, int, int] | None = None
        best = tied[0]
        for t, k in tied:
            counts[k] -= 1
            accept = acceptance(counts, melds, t, unseen)
            counts[k] += 1
            # most acceptance; then the tile with fewest copies left to draw; then the lowest
            key = (accept, -unseen[k], -k)
            if best_key is None or key > best_key:
                best_key, best = key, (t, k)
        return low, best[0], TILES[best[1]]

    @staticmethod
    def _unseen(view: SeatView) -> list[int]:
        return [max(0, 4 - v - c) for v, c in zip(view.visible, view.counts, strict=True)]

    # -- the Strategy protocol ---------------------------------------------------------------------
    def discard(self, view: SeatView) -> Tile:
        counts = list(view.counts)
        melds = summarize(view.melds)
        _, self.target, tile = self._best_discard(counts, melds, self._unseen(view))
        return tile

    def claim(self, view: SeatView, tile: Tile, options: list[ClaimOption]) -> ClaimOption | None:
        """Claim when the hand gets strictly closer to a target (a kong: when it keeps it as
        close, for the 花 and the extra draw)."""
        counts = list(view.counts)
        melds = summarize(view.melds)
        now, _ = self._biased(counts, melds)
        unseen = self._unseen(view)
        best: tuple[float, int, ClaimOption] | None = None
        for option in options:
            for t in option.used:
                counts[t] -= 1
            after = melds.plus(option.kind, tile)
            if option.kind is MeldKind.KONG:
                d, target = self._biased(counts, after)
                good = d <= now
            else:
                d, target, _ = self._best_discard(counts, after, unseen)
                good = d < now
            for t in option.used:
                counts[t] += 1
            if good and (best is None or d < best[0]):
                best = (d, target, option)
        if best is None:
            return None
        self.target = best[1]
        return best[2]

    def concealed_kong(self, view: SeatView, options: list[Tile]) -> Tile | None:
        """A kong when the four tiles are worth no more in the hand than as a pung and a
        spare: the kong is then that pung, its spare replaced by a free draw."""
        counts = list(view.counts)
        melds = summarize(view.melds)
        for tile in options:
            counts[tile] -= 1
            spare, _ = self._biased(counts, melds)
            counts[tile] -= 3
            d, _ = self._biased(counts, melds.plus(MeldKind.CONCEALED_KONG, tile))
            counts[tile] += 4
            if d <= spare:
                return tile
        return None

    def added_kong(self, view: SeatView, tile: Tile) -> bool:
        """Always: the fourth tile is of no other use, and the kong brings 花 and a draw."""
        return True

    def take_win(self, view: SeatView, win: Win, score: Score) -> bool:
        """Win, except now and then on a cheap discard win early in the hand, where waiting
        for a self-draw (paid by all three) is worth the risk."""
        cheap = score.value < self.profile.units.lezi
        early = view.wall_left > 40
        return not (cheap and early and self.rng.random() < self.pass_chance)
