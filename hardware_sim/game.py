"""Four bots play whole Shanghai hands, by the rules engine and a profile.

This is the truth the whole-table simulator checks the table controller against: each played
hand is (a) a timeline of every public action, in order (:class:`Play`), and (b) the true wins
and their settlement, worked out by :mod:`controller.rules`. The table simulator turns the
timeline into camera frames and seat-button presses and compares what the controller settles
with :attr:`PlayedHand.settlement`.

The game owns the rules; the players (:mod:`hardware_sim.bots`) only choose among the moves it
offers. Everything comes from the ``rng`` given: the same seed plays the same hand.

How this module reads the rules where ``/work/shared/RULES.md`` leaves a choice:

- The wall is 72 stacks of two. ``PlayedHand.wall`` lists its tiles in draw order: index
  ``2i`` is the top and ``2i + 1`` the bottom of the i-th stack after the break.
  :func:`wall_slot` says where each lies on the table. Live draws take the stacks from the
  front; replacement draws (补张) take the last stack, top tile first, then the one before it.
- The deal is shown as ``draw`` plays: three rounds of four tiles per seat from the dealer
  on, one tile each, then the dealer's fourteenth. Then each seat in turn from the dealer lays
  its flowers, each followed by its replacement.
- The hand is drawn when a seat must draw and the wall is empty: the sources keep no tiles
  back, so every tile may be drawn. A kong needs a tile left for its replacement.
- 八花齐: the eighth flower is laid and replaced, then the hand wins (as 八花齐, or as the hand
  the replacement completes when that is worth more): the hand must hold its full size to be
  judged.
- 漏胡: a seat that passes a win on a discard it could have won (a ``pass_win`` play) may not
  win on that tile from a discard or a robbed kong until it next draws or claims; the tiles
  are listed in ``Win.missed_tiles``. A tile that completes the shape but would not be a
  valid win is no win passed, and is not listed.
- ``after_kong`` is set on a self-draw whose tile is a kong's replacement (or a flower's
  replacement in the same chain), and on a discard straight after the discarder's kong (what
  the house rule "winning on another's kong" needs); ``after_flower`` on a self-draw whose
  tile replaced a flower.
- ``first_turn``: no claim or kong yet in the hand, and the winner has not yet discarded.
- 敲麻 profiles: a seat that becomes ready after its discard declares it at once (a
  ``declare_ready`` play), the one play kind beyond the list in :class:`Play`.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from controller.rules import (
    Hand,
    Meld,
    MeldKind,
    Profile,
    Settlement,
    Tile,
    WallBreak,
    Win,
    WinType,
    is_ready,
    score_win,
    settle,
    wall_break,
)
from controller.rules.analysis import is_standard
from controller.rules.scoring import Score
from controller.rules.tiles import FLOWERS, NUM_KINDS, PLAYING_TILES, TILES
from hardware_sim.bots import Bot, ClaimOption, SeatView, Strategy

SEATS = 4
WALL_TILES = 144
STACKS_PER_WALL = 18
ALL_FLOWERS = len(FLOWERS)
PLAY_KINDS = (
    "draw",
    "replacement",
    "discard",
    "flower",
    "claim",
    "concealed_kong",
    "added_kong",
    "pass_win",
    "win",
    "exhausted",
    "declare_ready",
)


@dataclass(frozen=True)
class Play:
    """One public moment of a hand, in order.

    ``kind`` is one of :data:`PLAY_KINDS`: ``draw`` (the deal's tiles too), ``replacement``
    (a 补张 draw after a kong or a flower), ``discard``, ``flower`` (a flower laid face up),
    ``claim`` (chow, pung or kong on a discard: the meld is laid), ``concealed_kong``,
    ``added_kong`` (a drawn tile added to one's own pung), ``pass_win`` (a seat could win on
    a discard but passed: 漏胡 follows), ``win``, ``exhausted`` (the wall ran out: 流局), and
    ``declare_ready`` (敲麻 profiles only).

    A ``win`` right after another seat's ``added_kong`` of its tile robs that kong: the
    konger's meld goes back to the pung it was.
    """

    kind: str
    seat: int
    tile: Tile | None = None
    """The tile drawn / discarded / laid as a flower / claimed / added / won on."""
    meld: Meld | None = None
    """For claim, concealed_kong and added_kong: the meld as it now lies (``source`` the seat
    claimed from; an added kong keeps its pung's source)."""
    source: int | None = None
    """For a claim, a pass_win and a win on a discard or a robbed kong: the seat the tile came
    from."""
    how: WinType | None = None
    """For a win: how it was won."""
    wall_index: int | None = None
    """For a draw or replacement: the tile's index in :attr:`PlayedHand.wall`."""


@dataclass(frozen=True)
class PlayedHand:
    """One hand played to its end: the timeline, and the truth of how it ended."""

    dealer: int
    dice: tuple[int, int]
    wall_break: WallBreak
    plays: tuple[Play, ...]
    wins: tuple[Win, ...]
    """Empty for a drawn hand; several for 一炮多响, in turn order from the discarder."""
    settlement: Settlement | None
    flowers: tuple[tuple[Tile, ...], ...]
    """Each seat's flowers at the end, in the order laid."""
    melds: tuple[tuple[Meld, ...], ...]
    """Each seat's melds at the end, in the order laid (an added kong where its pung lay)."""
    concealed: tuple[tuple[Tile, ...], ...]
    """Each seat's concealed tiles at the end, sorted; a winner's without the winning tile."""
    winning_tile: Tile | None
    wall: tuple[Tile, ...] = ()
    """All 144 tiles in draw order (see the module docstring and :func:`wall_slot`)."""
    discards: tuple[tuple[Tile, ...], ...] = ()
    """Each seat's discards still lying in its pond at the end, in order (claimed ones and a
    winning discard are gone)."""
    wall_left: int = 0
    """Tiles never drawn."""
    huangfan: int = 0
    stake: Fraction | int = 1

    @property
    def drawn(self) -> bool:
        """流局: the wall ran out with no winner."""
        return not self.wins


def full_set() -> list[Tile]:
    """The 144 tiles: four of each playing tile, then the eight flowers."""
    return [t for t in PLAYING_TILES for _ in range(4)] + list(FLOWERS)


def wall_slot(where: WallBreak, index: int) -> tuple[int, int, int]:
    """Where the tile at ``index`` of :attr:`PlayedHand.wall` lies before it is drawn:
    (the seat whose wall it is in, the stack counted clockwise from that wall's right-hand end
    as its owner sees it, 0 for the top tile or 1 for the bottom).

    Drawing starts after the ``where.stacks`` stacks counted on the broken wall and runs
    clockwise, on into the wall of the seat before (seat - 1), so the last stack drawn, where
    replacements come from, is the last one counted.
    """
    if not 0 <= index < WALL_TILES:
        raise ValueError(f"the wall has {WALL_TILES} tiles, not index {index}")
    stack = (where.stacks + index // 2) % (WALL_TILES // 2)
    return (where.wall - stack // STACKS_PER_WALL) % SEATS, stack % STACKS_PER_WALL, index % 2


@dataclass
class _Seat:
    """One player's state during the hand."""

    counts: list[int] = field(default_factory=lambda: [0] * NUM_KINDS)
    flowers: list[Tile] = field(default_factory=list)
    held_flowers: list[Tile] = field(default_factory=list)  # dealt, not yet laid
    melds: list[Meld] = field(default_factory=list)
    pond: list[Tile] = field(default_factory=list)
    missed: list[Tile] = field(default_factory=list)
    claims_from: list[int] = field(default_factory=lambda: [0] * SEATS)
    last_in: Tile | None = None  # the last playing tile drawn or claimed
    discarded: bool = False
    declared: bool = False

    def tiles(self) -> tuple[Tile, ...]:
        return tuple(TILES[k] for k in range(NUM_KINDS) for _ in range(self.counts[k]))


_Step = tuple[Callable[..., Any], tuple[Any, ...]] | None
"""What a hand does next: a method and its arguments, or None when the hand is over."""


class _Game:
    """One hand in progress. :meth:`run` drives it as a chain of steps, each returning the
    next (a draw, a tile received, a discard) or None when the hand is over."""

    def __init__(
        self,
        profile: Profile,
        dealer: int,
        dice: tuple[int, int],
        huangfan: int,
        stake: Fraction | int,
        wall: Sequence[Tile],
        players: Sequence[Strategy],
    ) -> None:
        self.profile = profile
        self.dealer = dealer
        self.dice = dice
        self.huangfan = huangfan
        self.stake = stake
        self.wall = tuple(wall)
        self.order: deque[int] = deque(range(WALL_TILES))
        self.players = players
        self.seats = [_Seat() for _ in range(SEATS)]
        self.visible = [0] * NUM_KINDS
        self.plays: list[Play] = []
        self.wins: list[Win] = []
        self.winning_tile: Tile | None = None
        self.interrupted = False  # a claim or a kong: the first go-round is over

    # -- the wall ----------------------------------------------------------------------------------
    def _take(self, replacement: bool) -> int | None:
        """The next wall index: from the front, or for a replacement from the last stack (its
        top tile first). None when the wall is empty."""
        order = self.order
        if not order:
            return None
        if not replacement:
            return order.popleft()
        last = order.pop()
        if order and last % 2 == 1 and order[-1] == last - 1:
            top = order.pop()
            order.append(last)
            return top
        return last

    def _draw(self, seat: int, kind: str) -> Tile | None:
        """A draw or replacement into ``seat``'s hand (a flower is held until laid); None when
        the wall is empty. Drawing lifts 漏胡."""
        index = self._take(kind == "replacement")
        if index is None:
            return None
        tile = self.wall[index]
        s = self.seats[seat]
        if tile.is_flower:
            s.held_flowers.append(tile)
        else:
            s.counts[tile] += 1
            s.last_in = tile
        s.missed.clear()
        self.plays.append(Play(kind, seat, tile, wall_index=index))
        return tile

    # -- the deal and the first flowers ------------------------------------------------------------
    def _deal(self) -> None:
        turn = [(self.dealer + k) % SEATS for k in range(SEATS)]
        for _ in range(3):
            for seat in turn:
                for _ in range(4):
                    self._draw(seat, "draw")
        for seat in turn:
            self._draw(seat, "draw")
        self._draw(self.dealer, "draw")

    def _initial_flowers(self) -> _Step:
        """补花 in turn order from the dealer; then the dealer's first turn, on the last
        playing tile the dealer received."""
        for k in range(SEATS):
            seat = (self.dealer + k) % SEATS
            s = self.seats[seat]
            while s.held_flowers:
                tile = self._lay_flower(seat, s.held_flowers[0])
                if len(s.flowers) == ALL_FLOWERS:
                    return self._eight_flowers(seat, tile)
        last = self.seats[self.dealer].last_in
        assert last is not None
        return (self._got_tile, (self.dealer, last, False, False))

    def _lay_flower(self, seat: int, flower: Tile) -> Tile | None:
        """Lay a held flower face up and draw its replacement (None: the wall is empty)."""
        s = self.seats[seat]
        s.held_flowers.remove(flower)
        s.flowers.append(flower)
        self.plays.append(Play("flower", seat, flower))
        return self._draw(seat, "replacement")

    # -- a seat's turn -----------------------------------------------------------------------------
    def _draw_turn(self, seat: int) -> _Step:
        tile = self._draw(seat, "draw")
        if tile is None:
            return self._exhausted(seat)
        return (self._got_tile, (seat, tile, False, False))

    def _got_tile(self, seat: int, tile: Tile, after_kong: bool, after_flower: bool) -> _Step:
        """``seat`` has just received ``tile`` (a draw, a replacement, or the dealer's deal):
        flowers, a self-drawn win, kongs, then a discard."""
        s = self.seats[seat]
        while tile.is_flower:
            new = self._lay_flower(seat, tile)
            if len(s.flowers) == ALL_FLOWERS:
                return self._eight_flowers(seat, new)
            if new is None:
                return self._exhausted(seat)
            tile, after_flower = new, True
        win = self._self_draw(seat, tile, after_kong, after_flower)
        if win is not None:
            s.counts[tile] -= 1
            return self._finish([win], tile)
        if self.order:
            step = self._kong(seat, tile)
            if step is not False:
                return step
        return (self._discard, (seat, after_kong))

    def _kong(self, seat: int, tile: Tile) -> _Step | Literal[False]:
        """A concealed or added kong if the player wants one, then its replacement draw (or
        the win that robs it); False when the player lays no kong."""
        s = self.seats[seat]
        player = self.players[seat]
        pung = next(
            (i for i, m in enumerate(s.melds) if m.kind is MeldKind.PUNG and m.tiles[0] == tile),
            None,
        )
        if pung is not None and player.added_kong(self._view(seat, tile), tile):
            source = s.melds[pung].source
            s.counts[tile] -= 1
            s.melds[pung] = Meld(MeldKind.ADDED_KONG, (tile,) * 4, source)
            self.visible[tile] += 1
            self.interrupted = True
            self.plays.append(Play("added_kong", seat, tile, s.melds[pung], source))
            robbed = self._robbing(seat, tile, pung)
            if robbed is not None:
                return self._finish([robbed], tile)
            return self._replace_after_kong(seat)
        fours = [TILES[k] for k in range(NUM_KINDS) if s.counts[k] == 4]
        chosen = player.concealed_kong(self._view(seat, tile), fours) if fours else None
        if chosen is None:
            return False
        if chosen not in fours:
            raise ValueError(f"seat {seat} cannot lay a concealed kong of {chosen!r}")
        s.counts[chosen] -= 4
        meld = Meld(MeldKind.CONCEALED_KONG, (chosen,) * 4)
        s.melds.append(meld)
        self.interrupted = True
        self.plays.append(Play("concealed_kong", seat, chosen, meld))
        return self._replace_after_kong(seat)

    def _replace_after_kong(self, seat: int) -> _Step:
        new = self._draw(seat, "replacement")
        if new is None:  # a kong is only offered with a tile left; kept for safety
            return self._exhausted(seat)
        return (self._got_tile, (seat, new, True, False))

    def _discard(self, seat: int, after_kong: bool) -> _Step:
        s = self.seats[seat]
        tile = self.players[seat].discard(self._view(seat, s.last_in))
        if not 0 <= tile < NUM_KINDS or s.counts[tile] <= 0:
            raise ValueError(f"seat {seat} cannot discard {tile!r}: not in its hand")
        s.counts[tile] -= 1
        s.pond.append(tile)
        s.discarded = True
        self.visible[tile] += 1
        self.plays.append(Play("discard", seat, tile))
        if self.profile.play.ready_declaration and not s.declared and self._ready(seat):
            s.declared = True
            self.plays.append(Play("declare_ready", seat))
        return self._on_discard(seat, tile, after_kong)

    # -- a discard: wins, then pung or kong, then chow ---------------------------------------------
    def _on_discard(self, discarder: int, tile: Tile, after_kong: bool) -> _Step:
        winners = self._discard_wins(discarder, tile, after_kong)
        if winners:
            self.seats[discarder].pond.pop()
            return self._finish(winners, tile)
        claim = self._choose_claim(discarder, tile)
        if claim is None:
            return (self._draw_turn, ((discarder + 1) % SEATS,))
        seat, option = claim
        self._lay_claim(seat, discarder, tile, option)
        if option.kind is MeldKind.KONG:
            return self._replace_after_kong(seat)
        return (self._discard, (seat, False))

    def _choose_claim(self, discarder: int, tile: Tile) -> tuple[int, ClaimOption] | None:
        """Pung and kong beat chow; only the next seat may chow."""
        chow: tuple[int, ClaimOption] | None = None
        for k in range(1, SEATS):
            seat = (discarder + k) % SEATS
            options = self._claim_options(seat, tile, chow_ok=k == 1)
            if not options:
                continue
            chosen = self.players[seat].claim(self._view(seat, None), tile, options)
            if chosen is None:
                continue
            if chosen not in options:
                raise ValueError(f"seat {seat} chose a claim it was not offered: {chosen}")
            if chosen.kind is not MeldKind.CHOW:
                return seat, chosen
            chow = (seat, chosen)
        return chow

    def _claim_options(self, seat: int, tile: Tile, *, chow_ok: bool) -> list[ClaimOption]:
        counts = self.seats[seat].counts
        out = []
        if counts[tile] >= 3 and self.order:
            out.append(ClaimOption(MeldKind.KONG, (tile,) * 3))
        if counts[tile] >= 2:
            out.append(ClaimOption(MeldKind.PUNG, (tile,) * 2))
        if chow_ok and tile.is_number:
            n = tile % 9
            for lo in (n - 2, n - 1, n):
                if 0 <= lo <= 6:
                    used = [tile - n + lo + i for i in range(3) if lo + i != n]
                    if all(counts[u] for u in used):
                        out.append(ClaimOption(MeldKind.CHOW, tuple(TILES[u] for u in used)))
        return out

    def _lay_claim(self, seat: int, discarder: int, tile: Tile, option: ClaimOption) -> None:
        s = self.seats[seat]
        for t in option.used:
            s.counts[t] -= 1
            self.visible[t] += 1
        meld = Meld(option.kind, (*option.used, tile), discarder)
        s.melds.append(meld)
        s.claims_from[discarder] += 1
        s.missed.clear()
        s.last_in = tile
        self.seats[discarder].pond.pop()
        self.interrupted = True
        self.plays.append(Play("claim", seat, tile, meld, discarder))

    # -- wins --------------------------------------------------------------------------------------
    def _self_draw(self, seat: int, tile: Tile, after_kong: bool, after_flower: bool) -> Win | None:
        """A valid self-drawn win on ``tile`` (already in the hand), or None. Always taken."""
        counts = self.seats[seat].counts
        if not self._could_complete(seat, counts):
            return None
        counts[tile] -= 1
        win = self._win(
            seat, tile, WinType.SELF_DRAW, after_kong=after_kong, after_flower=after_flower
        )
        counts[tile] += 1
        return win if self._score(win) is not None else None

    def _discard_wins(self, discarder: int, tile: Tile, after_kong: bool) -> list[Win]:
        """The wins taken on a discard, in turn order from the discarder (one only where the
        profile has no 一炮多响). A seat that passes a valid win records 漏胡."""
        out: list[Win] = []
        ready: bool | None = None
        for k in range(1, SEATS):
            seat = (discarder + k) % SEATS
            if not self._completes(seat, tile):
                continue
            if ready is None:
                ready = self._ready(discarder)
            win = self._win(
                seat,
                tile,
                WinType.DISCARD,
                discarder=discarder,
                discarder_ready=ready,
                after_kong=after_kong,
            )
            score = self._score(win)
            if score is None:
                continue
            if not self.players[seat].take_win(self._view(seat, None), win, score):
                self.seats[seat].missed.append(tile)
                self.plays.append(Play("pass_win", seat, tile, source=discarder))
                continue
            out.append(win)
            if not self.profile.play.multiple_winners:
                break
        return out

    def _robbing(self, konger: int, tile: Tile, pung: int) -> Win | None:
        """抢杠: the first seat after the konger that can win on the added tile takes it; the
        kong goes back to the pung it was."""
        for k in range(1, SEATS):
            seat = (konger + k) % SEATS
            if not self._completes(seat, tile):
                continue
            win = self._win(seat, tile, WinType.ROBBING_KONG, discarder=konger)
            if self._score(win) is not None:
                s = self.seats[konger]
                s.melds[pung] = Meld(MeldKind.PUNG, (tile,) * 3, s.melds[pung].source)
                self.visible[tile] -= 1
                return win
        return None

    def _completes(self, seat: int, tile: Tile) -> bool:
        """Whether another's ``tile`` completes a shape in ``seat``'s hand (whether that is
        a valid win is for the scorer)."""
        counts = self.seats[seat].counts
        counts[tile] += 1
        shaped = self._could_complete(seat, counts)
        counts[tile] -= 1
        return shaped

    def _could_complete(self, seat: int, counts: list[int]) -> bool:
        """A cheap test before the scorer: sets and a pair, or every tile an honour."""
        if is_standard(tuple(counts)):
            return True
        return not any(counts[:27]) and all(m.tiles[0].is_honour for m in self.seats[seat].melds)

    def _win(self, seat: int, tile: Tile | None, how: WinType, **extra: object) -> Win:
        s = self.seats[seat]
        return Win(
            winner=seat,
            hand=Hand(s.tiles(), tuple(s.melds), tuple(s.flowers), tile),
            how=how,
            flowers=len(s.flowers),
            dice=self.dice,
            huangfan=self.huangfan,
            bound_pairs=self._bound_pairs(),
            dealer=self.dealer,
            first_turn=how is not WinType.EIGHT_FLOWERS
            and not self.interrupted
            and not s.discarded,
            declared_ready=s.declared,
            missed_tiles=tuple(s.missed),
            stake=self.stake,
            **extra,  # type: ignore[arg-type]
        )

    def _score(self, win: Win) -> Score | None:
        result = score_win(win, self.profile)
        return result if isinstance(result, Score) else None

    def _eight_flowers(self, seat: int, tile: Tile | None) -> _Step:
        """All eight flowers: win at once, as 八花齐 or as the hand the last replacement
        completes, whichever is worth more."""
        win = self._win(seat, None, WinType.EIGHT_FLOWERS)
        if tile is not None and not tile.is_flower:
            other = self._self_draw(seat, tile, False, True)
            if other is not None:
                scored, eight = self._score(other), self._score(win)
                if scored is not None and (eight is None or scored.value > eight.value):
                    self.seats[seat].counts[tile] -= 1
                    return self._finish([other], tile)
        return self._finish([win], None)

    def _finish(self, wins: list[Win], tile: Tile | None) -> _Step:
        self.wins = wins
        self.winning_tile = tile
        for w in wins:
            self.plays.append(Play("win", w.winner, tile, source=w.discarder, how=w.how))
        return None

    def _exhausted(self, seat: int) -> _Step:
        self.plays.append(Play("exhausted", seat))
        return None

    # -- what the players and the scorer are told --------------------------------------------------
    def _bound_pairs(self) -> tuple[tuple[int, int], ...]:
        """承包: (a, b) for every a that has claimed ``min_claims`` or more discards from b."""
        need = self.profile.chengbao.min_claims
        return tuple(
            (a, b)
            for a in range(SEATS)
            for b in range(SEATS)
            if self.seats[a].claims_from[b] >= need
        )

    def _ready(self, seat: int) -> bool:
        s = self.seats[seat]
        return is_ready(Hand(s.tiles(), tuple(s.melds)), self.profile)

    def _view(self, seat: int, last: Tile | None) -> SeatView:
        s = self.seats[seat]
        return SeatView(
            seat, tuple(s.counts), tuple(s.melds), tuple(self.visible), len(self.order), last
        )

    # -- the whole hand ----------------------------------------------------------------------------
    def run(self) -> PlayedHand:
        self._deal()
        step = self._initial_flowers()
        while step is not None:
            fn, args = step
            step = fn(*args)
        return self._result()

    def _result(self) -> PlayedHand:
        settlement = settle(self.wins, self.profile) if self.wins else None
        if settlement is not None and not settlement.valid:
            raise AssertionError(f"a win the scorer refuses: {settlement.results}")
        return PlayedHand(
            dealer=self.dealer,
            dice=self.dice,
            wall_break=wall_break(self.dealer, self.dice),
            plays=tuple(self.plays),
            wins=tuple(self.wins),
            settlement=settlement,
            flowers=tuple(tuple(s.flowers) for s in self.seats),
            melds=tuple(tuple(s.melds) for s in self.seats),
            concealed=tuple(s.tiles() for s in self.seats),
            winning_tile=self.winning_tile,
            wall=self.wall,
            discards=tuple(tuple(s.pond) for s in self.seats),
            wall_left=len(self.order),
            huangfan=self.huangfan,
            stake=self.stake,
        )


def _check_wall(wall: Sequence[Tile]) -> tuple[Tile, ...]:
    tiles = tuple(Tile(t) for t in wall)
    if sorted(tiles) != sorted(full_set()):
        raise ValueError("a stacked wall must hold the 144 tiles of the set, each once")
    return tiles


def play_hand(
    rng: random.Random,
    *,
    profile: Profile,
    dealer: int,
    dice: tuple[int, int],
    huangfan: int = 0,
    stake: Fraction | int = 1,
    wall: Sequence[Tile] | None = None,
    players: Sequence[Strategy] | None = None,
) -> PlayedHand:
    """Play one hand with four bots and return its timeline and its true outcome.

    ``rng`` shuffles the wall and makes every choice the bots leave to chance: the same
    seed gives the same hand. ``dice`` pick the wall break (in the product they come from the
    table's MCU); ``huangfan`` is the 荒番 counter as the hand starts.

    Test hooks: ``wall`` stacks the wall (the 144 tiles in draw order, see
    :attr:`PlayedHand.wall`) instead of shuffling; ``players`` replaces the four bots with
    scripted strategies.
    """
    if not 0 <= dealer < SEATS:
        raise ValueError(f"a seat is 0-3, not {dealer!r}")
    wall_break(dealer, dice)  # checks the dice
    if wall is None:
        tiles = full_set()
        rng.shuffle(tiles)
    else:
        tiles = list(_check_wall(wall))
    if players is None:
        players = [Bot(seat, rng, profile) for seat in range(SEATS)]
    if len(players) != SEATS:
        raise ValueError(f"four players, not {len(players)}")
    return _Game(profile, dealer, dice, huangfan, stake, tiles, players).run()
