"""Random complete hands and wins, drawn from a random generator the caller seeds.

Used by the benchmark, the property tests and the simulator's players: each draws hands that
the rules accept (碰碰胡, 混一色, 清一色, 风一色 and their pung forms), with random melds, kongs,
flowers and ways of winning.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

from controller.rules.hand import Hand
from controller.rules.melds import SEATS, Meld, MeldKind
from controller.rules.tiles import FLOWERS, NUM_KINDS, Tile
from controller.rules.win import Win, WinType

SHAPES = ("pengpeng", "hunyise", "qingyise", "fengyise", "any")


def _pool(shape: str, rng: random.Random) -> list[int]:
    suit = rng.randrange(3)
    suit_tiles = list(range(suit * 9, suit * 9 + 9))
    honours = list(range(27, 34))
    if shape == "qingyise":
        return suit_tiles
    if shape == "hunyise":
        return suit_tiles + honours
    if shape == "fengyise":
        return honours
    return list(range(NUM_KINDS))


def random_sets(rng: random.Random, shape: str = "any") -> tuple[list[tuple[str, int]], int] | None:
    """Four sets and a pair of the given shape: ``([(kind, tile)], pair)`` with kind "chow"
    or "pung" (a pung may become a kong later). None when the draw ran out of tiles (rare;
    draw again)."""
    counts = [0] * NUM_KINDS
    pool = _pool(shape, rng)
    pungs_only = shape in ("pengpeng", "fengyise")
    sets: list[tuple[str, int]] = []
    for _ in range(40):
        if len(sets) == 4:
            break
        t = rng.choice(pool)
        chow = not pungs_only and t < 27 and t % 9 <= 6 and rng.random() < 0.5
        if chow:
            if (t + 2) in pool and all(counts[t + i] < 4 for i in range(3)):
                for i in range(3):
                    counts[t + i] += 1
                sets.append(("chow", t))
        elif counts[t] == 0:
            counts[t] += 3
            sets.append(("pung", t))
    if len(sets) < 4:
        return None
    free = [t for t in pool if counts[t] <= 2]
    if not free:
        return None
    pair = rng.choice(free)
    counts[pair] += 2
    if shape == "hunyise" and not (any(counts[27:]) and any(counts[:27])):
        return None
    return sets, pair


def random_win(
    rng: random.Random,
    *,
    shape: str | None = None,
    stake: int = 1,
    allow_bound: bool = True,
) -> Win:
    """A random valid win (by the default profile's hands) with melds, kongs, flowers, a way
    of winning, dice, 荒番 and 承包 pairs drawn at random."""
    while True:
        chosen = shape or rng.choice(SHAPES[:-1])
        if chosen == "fengyise" and rng.random() < 0.5:
            return _irregular_honours(rng, stake)
        drawn = random_sets(rng, chosen)
        if drawn is not None:
            break
    sets, pair = drawn
    winner = rng.randrange(SEATS)
    others = [s for s in range(SEATS) if s != winner]
    melds, concealed = _lay_sets(rng, sets, pair, winner, others)
    # Kongs need a fourth copy; a meld drawn as a kong may have taken the pair's tile.
    held = [0] * NUM_KINDS
    for m in melds:
        for x in m.tiles:
            held[x] += 1
    for x in concealed:
        held[x] += 1
    if max(held) > 4:
        return random_win(rng, shape=shape, stake=stake, allow_bound=allow_bound)
    return _win_on(rng, winner, others, melds, concealed, stake, allow_bound)


def _lay_sets(
    rng: random.Random, sets: list[tuple[str, int]], pair: int, winner: int, others: list[int]
) -> tuple[list[Meld], list[Tile]]:
    """The sets and the pair as ``winner`` holds them: the first few melded (a chow from the
    seat before, a pung or kong from anyone), the rest and the pair concealed."""
    prev = (winner - 1) % SEATS
    melds: list[Meld] = []
    concealed: list[Tile] = []
    n_melds = rng.randrange(5)
    for i, (kind, t) in enumerate(sets):
        tile = Tile(t)
        if i < n_melds:
            if kind == "chow":
                melds.append(Meld(MeldKind.CHOW, (tile, Tile(t + 1), Tile(t + 2)), prev))
            else:
                mk = rng.choice(list(MeldKind)[1:])
                src = None if mk is MeldKind.CONCEALED_KONG else rng.choice(others)
                melds.append(Meld(mk, (tile,) * mk.size, src))
        else:
            concealed.extend(
                (tile, Tile(t + 1), Tile(t + 2)) if kind == "chow" else (tile, tile, tile)
            )
    concealed.extend((Tile(pair), Tile(pair)))
    return melds, concealed


def _win_on(
    rng: random.Random,
    winner: int,
    others: list[int],
    melds: list[Meld],
    concealed: list[Tile],
    stake: int,
    allow_bound: bool,
) -> Win:
    """The win on these tiles, its winning tile taken from ``concealed``, with the way of
    winning, flowers, dice, 荒番 and 承包 pairs drawn at random."""
    winning = concealed.pop(rng.randrange(len(concealed)))
    how = rng.choice([WinType.SELF_DRAW, WinType.DISCARD, WinType.DISCARD])
    flowers = tuple(sorted(rng.sample(FLOWERS, rng.randrange(4))))
    kongs = any(m.is_kong for m in melds)
    after_kong = how is WinType.SELF_DRAW and kongs and rng.random() < 0.2
    after_flower = how is WinType.SELF_DRAW and bool(flowers) and rng.random() < 0.1
    discarder = rng.choice(others) if how is WinType.DISCARD else None
    pairs: tuple[tuple[int, int], ...] = ()
    if allow_bound and rng.random() < 0.3:
        a, b = rng.sample(range(SEATS), 2)
        pairs = ((a, b),)
    return Win(
        winner=winner,
        hand=Hand(tuple(concealed), tuple(melds), flowers, winning),
        how=how,
        flowers=len(flowers),
        discarder=discarder,
        after_kong=after_kong,
        after_flower=after_flower,
        dice=(rng.randint(1, 6), rng.randint(1, 6)),
        huangfan=rng.choice([0, 0, 0, 1, 2]),
        bound_pairs=pairs,
        discarder_ready=rng.random() < 0.5 if discarder is not None else None,
        dealer=rng.randrange(SEATS),
        stake=Fraction(stake),
    )


def _irregular_honours(rng: random.Random, stake: int) -> Win:
    """风一色 in no particular shape (乱风向): 14 honours, self-drawn or on a discard."""
    tiles = [Tile(t) for t in range(27, 34) for _ in range(4)]
    rng.shuffle(tiles)
    concealed, winning = tuple(tiles[:13]), tiles[13]
    winner = rng.randrange(SEATS)
    discarder = rng.choice([None, (winner + rng.randrange(1, SEATS)) % SEATS])
    return Win(
        winner=winner,
        hand=Hand(concealed, (), (), winning),
        how=WinType.SELF_DRAW if discarder is None else WinType.DISCARD,
        discarder=discarder,
        dice=(rng.randint(1, 6), rng.randint(1, 6)),
        discarder_ready=None if discarder is None else rng.random() < 0.5,
        stake=Fraction(stake),
    )


def permute_suits(win: Win, order: Sequence[int]) -> Win:
    """The same win with the number suits relabelled (suit s becomes ``order[s]``)."""

    def move(t: Tile) -> Tile:
        return Tile(order[t // 9] * 9 + t % 9) if t < 27 else t

    hand = win.hand
    melds = tuple(Meld(m.kind, tuple(move(t) for t in m.tiles), m.source) for m in hand.melds)
    new_hand = Hand(
        tuple(move(t) for t in hand.concealed),
        melds,
        hand.flowers,
        None if hand.winning_tile is None else move(hand.winning_tile),
    )
    return replace(win, hand=new_hand, missed_tiles=tuple(move(t) for t in win.missed_tiles))
