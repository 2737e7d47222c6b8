"""Rules engine throughput, side by side with the ``mahjong`` package (riichi rules).

    pip install -e '.[bench]'
    python -m bench.rules_bench [--hands 20000] [--seed 1]

1. Full settlement: our ``settle`` (hand division, hand type, 花, raises, doublers, caps, 承包
   and payments) on random valid Shanghai wins, against ``HandCalculator.estimate_hand_value``
   on the same complete hands written as riichi hands (same tiles, same melds, same winning
   tile; self-draw or ron as drawn). Target: ours at least 3x faster per hand.
2. Win check: our ``is_standard`` against ``Agari.is_agari`` on the same count arrays (half
   complete concealed parts, half with one tile swapped). Target: ours at least as fast.

Both sides run in this one process on identical inputs; each figure is the best of several
rounds, after a warm-up round (both libraries keep caches).
"""

from __future__ import annotations

import argparse
import platform
import random
import time
from collections.abc import Callable, Sequence

from controller.exit_codes import ExitCode
from controller.profiles import load_profile
from controller.rules import MeldKind, Profile, Win, WinType, settle
from controller.rules.analysis import is_standard
from controller.rules.generate import random_win

# Ours: 31 中, 32 发, 33 白. Riichi's 34-index: 31 haku (白), 32 hatsu (发), 33 chun (中).
_TO_RIICHI = {31: 33, 32: 32, 33: 31}


def riichi_index(t: int) -> int:
    return _TO_RIICHI.get(t, t)


def to_riichi(win: Win):  # type: ignore[no-untyped-def]
    """The win as arguments for HandCalculator.estimate_hand_value."""
    from mahjong.hand_calculating.hand_config import HandConfig
    from mahjong.meld import Meld as RMeld

    used = [0] * 34

    def take(t: int) -> int:
        r = riichi_index(t)
        tile136 = r * 4 + used[r]
        used[r] += 1
        return tile136

    tiles: list[int] = []
    melds = []
    for m in win.hand.melds:
        ids = [take(t) for t in m.tiles]
        tiles.extend(ids)
        if m.kind is MeldKind.CHOW:
            melds.append(RMeld(RMeld.CHI, ids, opened=True))
        elif m.kind is MeldKind.PUNG:
            melds.append(RMeld(RMeld.PON, ids, opened=True))
        elif m.kind is MeldKind.CONCEALED_KONG:
            melds.append(RMeld(RMeld.KAN, ids, opened=False))
        else:
            melds.append(RMeld(RMeld.KAN, ids, opened=True))
    tiles.extend(take(t) for t in win.hand.concealed)
    assert win.hand.winning_tile is not None
    win_tile = take(win.hand.winning_tile)
    tiles.append(win_tile)
    config = HandConfig(is_tsumo=win.how is WinType.SELF_DRAW)
    return tiles, win_tile, melds, config


def best_rate(fn: Callable[[int], int], rounds: int) -> float:
    """Seconds per item of the fastest round. ``fn(k)`` runs batch ``k`` and returns how many
    items it did; batch 0 is the warm-up, and every round gets a batch of its own, so no
    round replays hands a cache has already seen whole."""
    fn(0)
    best = float("inf")
    for k in range(1, rounds + 1):
        t0 = time.process_time()
        n = fn(k)
        best = min(best, (time.process_time() - t0) / n)
    return best


def near_misses(counts: Sequence[list[int]], rng: random.Random) -> list[list[int]]:
    out = []
    for i, c in enumerate(counts):
        c = list(c)
        if i % 2:
            held = [t for t in range(34) if c[t]]
            c[rng.choice(held)] -= 1
            u = rng.randrange(34)
            while c[u] >= 4:
                u = rng.randrange(34)
            c[u] += 1
        out.append(c)
    return out


def _riichi_counts(counts: Sequence[int]) -> list[int]:
    out = [0] * 34
    for t, n in enumerate(counts):
        out[riichi_index(t)] += n
    return out


def _standard_wins(rng: random.Random, batches: int, hands: int) -> list[list[Win]]:
    """``batches`` batches of ``hands`` random wins each, all of them complete hands in the
    sets-and-a-pair shape both rule sets know (not 乱风向)."""
    out: list[list[Win]] = []
    for _ in range(batches):
        batch: list[Win] = []
        while len(batch) < hands:
            w = random_win(rng)
            if is_standard(w.hand.concealed_counts()):
                batch.append(w)
        out.append(batch)
    return out


def _settle_rates(batches: list[list[Win]], profile: Profile, rounds: int) -> tuple[float, float]:
    """Seconds per hand of our ``settle`` and of ``estimate_hand_value``, on the same wins."""
    from mahjong.hand_calculating.hand import HandCalculator

    peer_batches = [[to_riichi(w) for w in batch] for batch in batches]
    calc = HandCalculator()

    def ours_settle(k: int) -> int:
        for w in batches[k]:
            settle([w], profile)
        return len(batches[k])

    def peer_estimate(k: int) -> int:
        for tiles, win_tile, melds, config in peer_batches[k]:
            calc.estimate_hand_value(tiles, win_tile, melds=melds, config=config)
        return len(peer_batches[k])

    return best_rate(ours_settle, rounds), best_rate(peer_estimate, rounds)


def _check_rates(
    count_batches: list[list[list[int]]], peer_count_batches: list[list[list[int]]], rounds: int
) -> tuple[float, float]:
    """Seconds per check of our ``is_standard`` and of ``Agari.is_agari``, on the same counts."""
    from mahjong.agari import Agari

    def ours_check(k: int) -> int:
        for c in count_batches[k]:
            is_standard(c)
        return len(count_batches[k])

    def peer_check(k: int) -> int:
        for c in peer_count_batches[k]:
            Agari.is_agari(c)
        return len(peer_count_batches[k])

    return best_rate(ours_check, rounds), best_rate(peer_check, rounds)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hands", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)

    from mahjong.agari import Agari

    rng = random.Random(args.seed)
    profile = load_profile("shanghai")
    batches = _standard_wins(rng, args.rounds + 1, args.hands)
    count_batches = [near_misses([w.hand.concealed_counts() for w in b], rng) for b in batches]
    peer_count_batches = [[_riichi_counts(c) for c in b] for b in count_batches]

    wins = batches[1]
    counts = [c for b in count_batches[1:] for c in b]
    peer_counts = [c for b in peer_count_batches[1:] for c in b]
    valid = sum(settle([w], profile).valid for w in wins[:2000])
    agree = sum(
        is_standard(a) == Agari.is_agari(b) for a, b in zip(counts, peer_counts, strict=True)
    )
    complete = sum(is_standard(c) for c in counts)

    s_ours, s_peer = _settle_rates(batches, profile, args.rounds)
    c_ours, c_peer = _check_rates(count_batches, peer_count_batches, args.rounds)

    from importlib.metadata import version

    print(
        f"python {platform.python_version()} on {platform.machine()}, mahjong {version('mahjong')}"
    )
    print(
        f"{args.rounds} rounds of {len(wins)} fresh random Shanghai wins (seed {args.seed});"
        f" {valid}/2000 checked valid"
    )
    print()
    print("full settlement            us/hand     hands/s")
    print(f"  ours settle()           {s_ours * 1e6:8.1f}  {1 / s_ours:10.0f}")
    print(f"  mahjong estimate_hand   {s_peer * 1e6:8.1f}  {1 / s_peer:10.0f}")
    print(f"  ratio (peer / ours)     {s_peer / s_ours:8.1f}x   target >= 3x")
    print()
    print(f"win check on {len(counts)} concealed parts ({complete} complete)")
    print(f"  ours is_standard        {c_ours * 1e6:8.2f}  {1 / c_ours:10.0f}")
    print(f"  mahjong Agari.is_agari  {c_peer * 1e6:8.2f}  {1 / c_peer:10.0f}")
    print(f"  ratio (peer / ours)     {c_peer / c_ours:8.2f}x   target >= 1x")
    print(
        f"  same answer on {agree}/{len(counts)}"
        " (is_agari also accepts 七对, which Shanghai does not)"
    )
    return ExitCode.OK


if __name__ == "__main__":
    raise SystemExit(main())
