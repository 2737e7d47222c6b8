"""The simulated players' hands (hardware_sim.game): invariants over many seeds, replayed from
the public timeline alone, and stacked walls for each rule the table has to get right."""

from __future__ import annotations

import ast
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.profiles import load_profile
from controller.rules import (
    Hand,
    Meld,
    MeldKind,
    Profile,
    Tile,
    Win,
    WinType,
    parse_tiles,
    score_win,
    settle,
    wall_break,
)
from controller.rules.scoring import Score
from hardware_sim.bots import ClaimOption, SeatView
from hardware_sim.game import (
    PLAY_KINDS,
    WALL_TILES,
    PlayedHand,
    full_set,
    play_hand,
    wall_slot,
)

SHANGHAI = load_profile("shanghai")
T = Tile


def tiles(text: str) -> list[Tile]:
    return parse_tiles(text)


def random_hand(seed: int, profile: Profile = SHANGHAI) -> PlayedHand:
    rng = random.Random(seed)
    dealer = rng.randrange(4)
    dice = (rng.randint(1, 6), rng.randint(1, 6))
    return play_hand(rng, profile=profile, dealer=dealer, dice=dice, huangfan=seed % 3)


# -- replaying the timeline -----------------------------------------------------------------------


class Replay:
    """The table as the public timeline builds it, checked play by play."""

    def __init__(self, hand: PlayedHand) -> None:
        self.hand = hand
        self.counts = [Counter() for _ in range(4)]
        self.held = [[] for _ in range(4)]
        self.flowers = [[] for _ in range(4)]
        self.melds: list[list[Meld]] = [[] for _ in range(4)]
        self.ponds: list[list[Tile]] = [[] for _ in range(4)]
        self.claims: Counter[tuple[int, int]] = Counter()
        self.untaken = set(range(WALL_TILES))
        self.last_discard: tuple[int, Tile] | None = None  # (seat, tile), until claimed or drawn
        self.pond_taken = False
        for i, play in enumerate(hand.plays):
            assert play.kind in PLAY_KINDS, play
            getattr(self, "_" + play.kind)(i, play)

    def _take(self, play) -> None:
        index = play.wall_index
        assert index in self.untaken, play
        assert self.hand.wall[index] == play.tile
        if play.kind == "draw":
            assert index == min(self.untaken), "live draws come from the front, in order"
        else:  # the last stack left: its top tile first
            hi = max(self.untaken)
            expect = hi - 1 if hi % 2 == 1 and hi - 1 in self.untaken else hi
            assert index == expect, "replacements come from the far end"
        self.untaken.remove(index)
        if play.tile.is_flower:
            self.held[play.seat].append(play.tile)
        else:
            self.counts[play.seat][play.tile] += 1

    def _draw(self, i, play) -> None:
        if i >= 53 and self.last_discard is not None:
            assert play.seat == (self.last_discard[0] + 1) % 4, "turn order"
        self.last_discard = None
        self._take(play)

    def _replacement(self, i, play) -> None:
        self._take(play)

    def _flower(self, i, play) -> None:
        self.held[play.seat].remove(play.tile)
        self.flowers[play.seat].append(play.tile)

    def _discard(self, i, play) -> None:
        self._remove(play.seat, [play.tile])
        self.ponds[play.seat].append(play.tile)
        self.last_discard = (play.seat, play.tile)
        self.pond_taken = False

    def _claim(self, i, play) -> None:
        assert self.last_discard == (play.source, play.tile), "a claim is on the last discard"
        meld = play.meld
        assert meld.source == play.source and play.tile in meld.tiles
        if meld.kind is MeldKind.CHOW:
            assert play.seat == (play.source + 1) % 4, "only the next seat may chow"
        used = list(meld.tiles)
        used.remove(play.tile)
        self._remove(play.seat, used)
        assert self.ponds[play.source].pop() == play.tile
        self.melds[play.seat].append(meld)
        self.claims[(play.seat, play.source)] += 1
        self.last_discard = None

    def _concealed_kong(self, i, play) -> None:
        assert play.meld == Meld(MeldKind.CONCEALED_KONG, (play.tile,) * 4)
        self._remove(play.seat, [play.tile] * 4)
        self.melds[play.seat].append(play.meld)

    def _added_kong(self, i, play) -> None:
        melds = self.melds[play.seat]
        at = melds.index(Meld(MeldKind.PUNG, (play.tile,) * 3, play.meld.source))
        self._remove(play.seat, [play.tile])
        melds[at] = play.meld

    def _pass_win(self, i, play) -> None:
        assert self.last_discard == (play.source, play.tile)

    def _declare_ready(self, i, play) -> None:
        pass

    def _exhausted(self, i, play) -> None:
        assert not self.untaken, "a hand is drawn only when the wall is empty"

    def _win(self, i, play) -> None:
        if play.how is WinType.DISCARD:
            assert self.last_discard == (play.source, play.tile)
            if not self.pond_taken:  # 一炮多响: one tile, taken once
                assert self.ponds[play.source].pop() == play.tile
                self.pond_taken = True
        elif play.how is WinType.ROBBING_KONG:
            before = self.hand.plays[i - 1]
            assert before.kind == "added_kong" and before.seat == play.source
            melds = self.melds[play.source]
            melds[melds.index(before.meld)] = Meld(MeldKind.PUNG, (play.tile,) * 3, before.source)
        elif play.how is WinType.SELF_DRAW:
            self._remove(play.seat, [play.tile])

    def _remove(self, seat: int, removed: list[Tile]) -> None:
        for t in removed:
            assert self.counts[seat][t] > 0, f"seat {seat} does not hold {t}"
            self.counts[seat][t] -= 1


def check_hand(hand: PlayedHand, profile: Profile = SHANGHAI) -> Replay:
    """Every invariant a played hand must keep."""
    replay = Replay(hand)
    assert sorted(hand.wall) == sorted(full_set())
    assert hand.wall_break == wall_break(hand.dealer, hand.dice)
    assert hand.wall_left == len(replay.untaken)
    for seat in range(4):
        assert list(hand.flowers[seat]) == replay.flowers[seat]
        assert list(hand.melds[seat]) == replay.melds[seat]
        assert list(hand.discards[seat]) == replay.ponds[seat]
        assert Counter(hand.concealed[seat]) == +replay.counts[seat]
        assert not replay.held[seat], "every flower is laid"
    # the 144 tiles are all somewhere
    placed = (
        hand.wall_left
        + sum(len(c) for c in hand.concealed)
        + sum(len(p) for p in hand.discards)
        + sum(len(m.tiles) for ms in hand.melds for m in ms)
        + sum(len(f) for f in hand.flowers)
        + (hand.winning_tile is not None)
    )
    assert placed == WALL_TILES
    if not hand.wins:
        assert hand.plays[-1].kind == "exhausted" and hand.settlement is None
        assert hand.winning_tile is None and hand.wall_left == 0
        return replay
    check_wins(hand, replay, profile)
    return replay


def check_wins(hand: PlayedHand, replay: Replay, profile: Profile) -> None:
    wins = hand.wins
    win_plays = [p for p in hand.plays if p.kind == "win"]
    assert hand.plays[-len(wins) :] == tuple(win_plays)
    need = profile.chengbao.min_claims
    bound = tuple(sorted(pair for pair, n in replay.claims.items() if n >= need))
    for win, play in zip(wins, win_plays, strict=True):
        assert (play.seat, play.how, play.source) == (win.winner, win.how, win.discarder)
        assert play.tile == hand.winning_tile == win.hand.winning_tile
        assert isinstance(score_win(win, profile), Score), "only valid wins are declared"
        assert (win.dice, win.huangfan, win.dealer, win.stake) == (
            hand.dice,
            hand.huangfan,
            hand.dealer,
            hand.stake,
        )
        assert tuple(sorted(win.bound_pairs)) == bound
        seat = win.winner
        assert win.hand.concealed == tuple(sorted(hand.concealed[seat]))
        assert win.hand.melds == hand.melds[seat]
        assert win.flowers == len(hand.flowers[seat])
        size = len(hand.concealed[seat]) + 3 * len(hand.melds[seat])
        if win.how is WinType.EIGHT_FLOWERS:
            assert size in (13, 14)
        else:
            assert size == 13
        if win.how is WinType.DISCARD:
            assert win.discarder_ready is not None
    assert hand.settlement == settle(list(wins), profile)
    assert hand.settlement.valid
    assert sum(hand.settlement.totals) == 0


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_random_hands_keep_every_invariant(seed):
    check_hand(random_hand(seed))


@pytest.mark.parametrize("name", ["lazi", "qiaoma", "house", "chengbao-light"])
def test_other_profiles_keep_the_invariants(name):
    profile = load_profile(name)
    for seed in range(6):
        hand = random_hand(seed, profile)
        check_hand(hand, profile)
        if name == "qiaoma":  # 敲麻: only a seat that declared may win
            declared = {p.seat for p in hand.plays if p.kind == "declare_ready"}
            assert all(w.winner in declared and w.declared_ready for w in hand.wins)


def test_the_same_seed_plays_the_same_hand_whatever_the_global_state():
    random.seed(1)
    first = random_hand(7)
    random.seed(2)
    again = random_hand(7)
    assert first == again
    assert random_hand(8) != first


def test_the_simulator_reads_no_clock_and_no_global_random():
    for name in ("game.py", "bots.py"):
        source = (Path(__file__).parent.parent / "hardware_sim" / name).read_text("utf-8")
        names = {
            a.name.split(".")[0]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Import | ast.ImportFrom)
            for a in node.names
        } | {
            node.module.split(".")[0]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.module
        }
        assert not names & {"time", "datetime", "os", "secrets", "numpy"}, name
        for call in ("random.random(", "random.choice(", "random.shuffle(", "random.randint("):
            assert call not in source, f"{name} uses the global generator: {call}"


def test_most_hands_are_won():
    won = sum(bool(random_hand(seed).wins) for seed in range(40))
    assert won >= 24, f"only {won} of 40 hands won"


def test_wall_slot_follows_the_dice():
    where = wall_break(0, (2, 5))  # seed 000's example: the opposite wall, after 7 stacks
    assert (where.wall, where.stacks) == (2, 7)
    assert wall_slot(where, 0) == (2, 7, 0)
    assert wall_slot(where, 1) == (2, 7, 1)
    assert wall_slot(where, 2 * 11) == (1, 0, 0)  # on into the wall of the seat before
    assert wall_slot(where, WALL_TILES - 2) == (2, 6, 0)  # replacements: the last counted stack
    assert len({wall_slot(where, i) for i in range(WALL_TILES)}) == WALL_TILES
    with pytest.raises(ValueError):
        wall_slot(where, WALL_TILES)


def test_a_stacked_wall_must_be_the_whole_set():
    with pytest.raises(ValueError, match="144 tiles"):
        play_hand(random.Random(0), profile=SHANGHAI, dealer=0, dice=(2, 3), wall=full_set()[1:])


# -- stacked walls ---------------------------------------------------------------------------------


class Scripted:
    """A player that does what the test says: discards its queue, then what it just drew;
    claims only the tiles named (kong before pung before chow); wins unless told to pass."""

    def __init__(
        self, discards: str = "", claim_on: str = "", wins: tuple[bool, ...] = (), kongs=False
    ):
        self.queue = tiles(discards)
        self.claim_on = set(tiles(claim_on))
        self.wins = list(wins)
        self.kongs = kongs

    def discard(self, view: SeatView) -> Tile:
        if self.queue:
            tile = self.queue.pop(0)
            assert view.counts[tile], f"seat {view.seat} was scripted to discard {tile}"
            return tile
        if view.last_tile is not None and view.counts[view.last_tile]:
            return view.last_tile
        return Tile(max(k for k in range(34) if view.counts[k]))

    def claim(self, view: SeatView, tile: Tile, options: list[ClaimOption]):
        if tile not in self.claim_on:
            return None
        rank = {MeldKind.KONG: 0, MeldKind.PUNG: 1, MeldKind.CHOW: 2}
        return min(options, key=lambda o: rank[o.kind])

    def concealed_kong(self, view, options):
        return options[0] if self.kongs else None

    def added_kong(self, view, tile):
        return self.kongs

    def take_win(self, view, win, score):
        return self.wins.pop(0) if self.wins else True


def deal_slots(dealer: int) -> dict[int, list[int]]:
    """The wall indices each seat is dealt, as the game deals."""
    slots: dict[int, list[int]] = {s: [] for s in range(4)}
    for r in range(3):
        for k in range(4):
            slots[(dealer + k) % 4] += range(16 * r + 4 * k, 16 * r + 4 * k + 4)
    for k in range(4):
        slots[(dealer + k) % 4].append(48 + k)
    slots[dealer].append(52)
    return slots


def stack(hands: dict[int, str], live: str = "", back: str = "", dealer: int = 0) -> list[Tile]:
    """A wall dealing ``hands``, then drawing ``live`` from the front and ``back`` as the
    replacements; the rest of the set fills the gaps (flowers from index 90 on)."""
    wall: list[Tile | None] = [None] * WALL_TILES
    for seat, slots in deal_slots(dealer).items():
        dealt = tiles(hands[seat])
        assert len(dealt) == len(slots), f"seat {seat} is dealt {len(slots)} tiles"
        for i, t in zip(slots, dealt, strict=True):
            wall[i] = t
    for i, t in enumerate(tiles(live)):
        wall[53 + i] = t
    for r, t in enumerate(tiles(back)):
        wall[2 * (71 - r // 2) + r % 2] = t
    rest = Counter(full_set())
    rest.subtract(t for t in wall if t is not None)
    assert all(n >= 0 for n in rest.values()), {t: n for t, n in rest.items() if n < 0}
    spare = sorted(rest.elements())
    flowers = [t for t in spare if t.is_flower]
    others = [t for t in spare if not t.is_flower]
    empty = [i for i in range(WALL_TILES) if wall[i] is None]
    for i in [i for i in empty if i >= 90][: len(flowers)]:
        wall[i] = flowers.pop(0)
    for i in range(WALL_TILES):
        if wall[i] is None:
            wall[i] = others.pop(0)
    return wall


def stacked(wall, players, profile: Profile = SHANGHAI, dealer: int = 0) -> PlayedHand:
    hand = play_hand(
        random.Random(0),
        profile=profile,
        dealer=dealer,
        dice=(2, 3),
        wall=wall,
        players=players,
    )
    check_hand(hand, profile)
    return hand


def kinds(hand: PlayedHand, start: int = 53) -> list[tuple[str, int]]:
    return [(p.kind, p.seat) for p in hand.plays[start:]]


JUNK = {
    "a": "147m 147p 147s ESWN",
    "b": "258m 258p 258s CFPE",
    "c": "369m 369p 369s SWNC",
    "d": "147m 258p 369s FPES",
}
"""Hands that no fourteenth tile completes."""


def test_gangkai_on_a_concealed_kongs_replacement():
    wall = stack(
        {0: "1111m 234m 567m 88m 99m", 1: JUNK["b"], 2: JUNK["c"], 3: "369m 258p 147s NWCF"},
        back="8m",
    )
    hand = stacked(wall, [Scripted(kongs=True), Scripted(), Scripted(), Scripted()])
    assert kinds(hand) == [("concealed_kong", 0), ("replacement", 0), ("win", 0)]
    assert hand.plays[54].wall_index == 142  # the top of the last stack
    (win,) = hand.wins
    assert win.how is WinType.SELF_DRAW and win.after_kong and not win.first_turn
    assert hand.winning_tile is T.M8
    assert hand.melds[0] == (Meld(MeldKind.CONCEALED_KONG, (T.M1,) * 4),)
    # 清一色 1 勒子, 门清 (a concealed kong keeps it) doubles: 20 from each
    assert hand.settlement.totals == (60, -20, -20, -20)


def test_eight_flowers_win_at_once():
    wall = stack(
        {
            0: "147m 147p 147s ESWNC",
            1: "春夏秋冬梅兰竹 258m 258s",
            2: JUNK["c"],
            3: "369m 369s FPES 258p",
        },
        live="菊",
        back="3m 6m 9m 3s 6s 9s 2p 5p",
    )
    hand = stacked(wall, [Scripted() for _ in range(4)])
    flowers_laid = [p for p in hand.plays if p.kind == "flower"]
    assert len(flowers_laid) == 8 and {p.seat for p in flowers_laid} == {1}
    assert [p.wall_index for p in hand.plays if p.kind == "replacement"] == [
        142,
        143,
        140,
        141,
        138,
        139,
        136,
        137,
    ]
    assert kinds(hand)[-5:] == [
        ("discard", 0),
        ("draw", 1),
        ("flower", 1),
        ("replacement", 1),
        ("win", 1),
    ]
    (win,) = hand.wins
    assert win.how is WinType.EIGHT_FLOWERS and win.flowers == 8
    assert hand.winning_tile is None and len(hand.concealed[1]) == 14
    assert hand.settlement.totals == (-20, 60, -20, -20)  # 2 勒子, paid as a self-draw


def test_robbing_an_added_kong():
    wall = stack(
        {
            0: "147m 147s ESWNCFP 5p",
            1: "55p 258m 258s SWNCF",
            2: "34p 678p 999p 111p 2p E",
            3: "369m 369s ESWNCFP",
        },
        live="2p 4m 3s 5p",
    )
    players = [
        Scripted(discards="5p"),
        Scripted(discards="N", claim_on="5p", kongs=True),
        Scripted(discards="E"),
        Scripted(),
    ]
    hand = stacked(wall, players)
    assert kinds(hand)[-3:] == [("draw", 1), ("added_kong", 1), ("win", 2)]
    (win,) = hand.wins
    assert win.how is WinType.ROBBING_KONG and win.discarder == 1
    assert hand.winning_tile is T.P5
    # the pung stays a pung
    assert hand.melds[1] == (Meld(MeldKind.PUNG, (T.P5,) * 3, 0),)
    # 清一色 1 勒子, 门清 x2 = 20; the konger pays three shares
    assert hand.settlement.totals == (0, -60, 60, 0)


def multiple_winners_wall() -> list[Tile]:
    return stack(
        {
            0: "147p 147s SWNCFP E 5p",
            1: "111m 222m 333m 555m E",
            2: "111s 222s 333s 555s E",
            3: "369p 369s 69m SWNCF",
        }
    )


def test_one_discard_wins_for_two_players():
    hand = stacked(multiple_winners_wall(), [Scripted(discards="E"), *(Scripted() for _ in "abc")])
    assert kinds(hand) == [("discard", 0), ("win", 1), ("win", 2)]
    assert [w.winner for w in hand.wins] == [1, 2]
    assert all(w.how is WinType.DISCARD and w.discarder == 0 for w in hand.wins)
    assert all(w.first_turn for w in hand.wins)  # no claim yet, neither winner has discarded
    # 混碰 1 勒子, 门清 x2: the discarder pays each winner
    assert hand.settlement.totals == (-40, 20, 20, 0)
    assert hand.settlement.next_dealer == 1
    assert hand.discards[0] == ()


def test_without_multiple_winners_the_nearest_wins():
    profile = Profile.from_mapping({"play": {"multiple_winners": False}}, SHANGHAI)
    players = [Scripted(discards="E"), *(Scripted() for _ in "abc")]
    hand = stacked(multiple_winners_wall(), players, profile)
    assert [w.winner for w in hand.wins] == [1]


def test_a_passed_win_is_missed_until_the_next_draw():
    wall = stack(
        {
            0: "147p 147s ESWNCFP 5m",
            1: "111m 222m 333m 55m 99m",
            2: "9m 258p 258s SWNCFP",
            3: "9m 369p 369s SWNCFP",
        },
        live="4s 7m 8s 6s",
    )
    players = [
        Scripted(discards="E 5m"),
        Scripted(wins=(False, True)),
        Scripted(discards="9m"),
        Scripted(discards="9m"),
    ]
    hand = stacked(wall, players)
    passes = [p for p in hand.plays if p.kind == "pass_win"]
    assert [(p.seat, p.tile, p.source) for p in passes] == [(1, T.M9, 2)]
    # seat 3's 9m completes the same shape, but it is 漏胡: no win, no second pass
    assert kinds(hand)[-4:] == [("discard", 3), ("draw", 0), ("discard", 0), ("win", 1)]
    (win,) = hand.wins
    assert win.hand.winning_tile is T.M5 and win.missed_tiles == (T.M9,)
    # the scorer would refuse the 9m it passed
    missed = Hand(win.hand.concealed, (), (), T.M9)
    refused = score_win(
        Win(winner=1, hand=missed, how=WinType.DISCARD, discarder=3, missed_tiles=(T.M9,)),
        SHANGHAI,
    )
    assert not isinstance(refused, Score)


def test_three_claims_from_one_seat_bind_the_pair():
    wall = stack(
        {
            0: "1m 2m 3m 4p 147s ESWNCFP",
            1: "11m 22m 333m 44p 77s NW",
            2: "258p 258s ESWNCFP",
            3: "369p 369s ESWCFPN",
        },
        live="6m 7m 8m 6s 8s 9s 5s 3s 2s",
        back="5m",
    )
    players = [
        Scripted(discards="1m 2m 3m 4p"),
        Scripted(discards="N W", claim_on="1m 2m 3m"),
        Scripted(),
        Scripted(),
    ]
    hand = stacked(wall, players)
    claims = [p for p in hand.plays if p.kind == "claim"]
    assert [(p.seat, p.source, p.meld.kind) for p in claims] == [
        (1, 0, MeldKind.PUNG),
        (1, 0, MeldKind.PUNG),
        (1, 0, MeldKind.KONG),
    ]
    (win,) = hand.wins
    assert win.how is WinType.DISCARD and win.discarder == 0
    assert win.bound_pairs == ((1, 0),)
    # 碰碰胡: 2 + 1 花 (the exposed suit kong) = 3; the partner's own discard: 2 shares
    (result,) = hand.settlement.results
    assert [(p.payer, p.shares, p.amount) for p in result.payments] == [(0, 2, 6)]
    assert "承包" in result.payments[0].reason


def test_an_exhausted_wall_is_a_drawn_hand():
    wall = stack({0: JUNK["a"] + " 9m", 1: JUNK["b"], 2: JUNK["c"], 3: JUNK["d"]})
    hand = stacked(wall, [Scripted() for _ in range(4)])
    assert hand.drawn and hand.wins == () and hand.settlement is None
    assert hand.plays[-1].kind == "exhausted" and hand.wall_left == 0
    assert len([p for p in hand.plays if p.kind == "flower"]) == 8
    assert hand.concealed[1] == tuple(sorted(tiles(JUNK["b"])))


def test_a_first_turn_win_counts_only_where_the_profile_has_it():
    hands = {0: "123m 456m 789m 123p 55s", 1: JUNK["b"], 2: JUNK["c"], 3: "147s 369p 258m NWCF"}
    wall = stack(hands)
    # 平胡 on the deal: no win in the default profile, 天胡 in the 辣子 one
    plain = stacked(wall, [Scripted() for _ in range(4)])
    assert plain.plays[53].kind == "discard"
    lazi = load_profile("lazi")
    hand = stacked(wall, [Scripted() for _ in range(4)], lazi)
    assert kinds(hand) == [("win", 0)]
    (win,) = hand.wins
    assert win.first_turn and win.how is WinType.SELF_DRAW
    assert hand.settlement.results[0].score.hand.value == "tianhu"
