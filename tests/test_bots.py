"""The bots' strategy (hardware_sim.bots): its shanten agrees with the rules engine on what is
complete, and the bot's choices move it toward a hand Shanghai lets win."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.profiles import load_profile
from controller.rules import Hand, Meld, MeldKind, Tile, Win, WinType, parse_tiles, score_win
from controller.rules.generate import random_win
from controller.rules.scoring import Score
from controller.rules.tiles import counts_of
from hardware_sim.bots import (
    HONOURS,
    IMPOSSIBLE,
    PUNGS,
    TARGETS,
    Bot,
    ClaimOption,
    MeldSummary,
    SeatView,
    shanten,
    suit_blocks,
    summarize,
)

SHANGHAI = load_profile("shanghai")
DOTS = 1
MANZU = 0


def counts(text: str) -> list[int]:
    return counts_of(parse_tiles(text))


def view(text: str, melds: tuple[Meld, ...] = (), wall_left: int = 60) -> SeatView:
    return SeatView(0, tuple(counts(text)), melds, (0,) * 34, wall_left)


def test_suit_blocks_find_sets_partials_and_a_head():
    assert (1, 0, 0) in suit_blocks((3, 0, 0, 0, 0, 0, 0, 0, 0))
    assert (0, 0, 1) in suit_blocks((2, 0, 0, 0, 0, 0, 0, 0, 0))
    assert (2, 0, 1) in suit_blocks((1, 1, 1, 1, 1, 1, 2, 0, 0))


def test_shanten_of_each_target():
    assert shanten(counts("111p 234p 567p 789p 55p"), MeldSummary(), DOTS) == -1
    assert shanten(counts("111p 234p 567p 789p 5p"), MeldSummary(), DOTS) == 0
    # four sets, but the odd 5p is off the flush: one draw to swap it, one to pair
    assert shanten(counts("123m 456m 789m 111m 5p"), MeldSummary(), MANZU) == 1
    assert shanten(counts("111m 222p 333s EE 55m"), MeldSummary(), PUNGS) == 0
    assert shanten(counts("EEE SSS WWW NN C F"), MeldSummary(), HONOURS) == 0


def test_melds_rule_targets_out():
    chow = summarize((Meld.of("chow", "123m", 3),))
    assert shanten(counts("111p 222p 333p 4p"), chow, PUNGS) == IMPOSSIBLE
    assert shanten(counts("111p 222p 333p 4p"), chow, DOTS) == IMPOSSIBLE
    assert shanten(counts("111p 222p 333p 4p"), chow, HONOURS) == IMPOSSIBLE
    assert shanten(counts("111m 222m 333m 4m"), chow, MANZU) == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_every_valid_win_the_rules_make_is_complete_for_some_target(seed):
    win = random_win(random.Random(seed))
    if win.how is WinType.EIGHT_FLOWERS:
        return
    concealed = list(win.hand.concealed_counts())
    assert min(shanten(concealed, summarize(win.hand.melds), t) for t in TARGETS) == -1


# dots and honours only, so that complete hands come up often enough to test both ways
_DOTS_AND_HONOURS = [Tile(t) for t in (*range(9, 18), *range(27, 34))]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_DOTS_AND_HONOURS), min_size=14, max_size=14))
def test_complete_for_a_target_exactly_when_the_scorer_accepts(tiles):
    c = counts_of(tiles)
    if max(c) > 4:
        return
    hand = Hand(tuple(tiles[:13]), (), (), tiles[13])
    valid = isinstance(score_win(Win(0, hand, WinType.SELF_DRAW), SHANGHAI), Score)
    assert (min(shanten(c, MeldSummary(), t) for t in TARGETS) == -1) == valid


def test_the_bot_discards_the_tile_off_its_flush():
    bot = Bot(0, random.Random(0), SHANGHAI)
    assert bot.discard(view("123p 456p 789p 11p 5p E 9m")) is Tile.M9
    assert bot.target == DOTS


def test_the_bot_pungs_what_brings_it_closer():
    bot = Bot(0, random.Random(0), SHANGHAI)
    option = ClaimOption(MeldKind.PUNG, (Tile.EAST, Tile.EAST))
    assert bot.claim(view("123p 456p 78p EE 9m 5s N"), Tile.EAST, [option]) == option


def test_the_bot_declines_a_chow_that_breaks_its_flush():
    bot = Bot(0, random.Random(0), SHANGHAI)
    option = ClaimOption(MeldKind.CHOW, (Tile.M4, Tile.M5))
    assert bot.claim(view("123p 456p 789p 11p 4m 5m"), Tile.M6, [option]) is None


def test_the_bot_lays_a_concealed_kong_that_fits_its_hand():
    bot = Bot(0, random.Random(0), SHANGHAI)
    assert bot.concealed_kong(view("EEEE 123p 456p 78p 9p 1s"), [Tile.EAST]) is Tile.EAST


def _scored(text: str, tile: str) -> tuple[Win, Score]:
    hand = Hand(tuple(parse_tiles(text)), (), (), parse_tiles(tile)[0])
    win = Win(0, hand, WinType.DISCARD, discarder=1)
    score = score_win(win, SHANGHAI)
    assert isinstance(score, Score)
    return win, score


def test_the_bot_passes_only_cheap_wins_early():
    always = Bot(0, random.Random(0), SHANGHAI, pass_chance=1.0)
    cheap = _scored("111m 222p 333s 555m E", "E")  # 碰碰胡 with one 花 (a wind pung): 3
    dear = _scored("111p 234p 567p 789p 5p", "5p")  # 清一色: 1 勒子 and more
    assert cheap[1].value < 10 <= dear[1].value
    assert not always.take_win(view("", wall_left=60), *cheap)
    assert always.take_win(view("", wall_left=60), *dear)
    assert always.take_win(view("", wall_left=20), *cheap)
    never = Bot(0, random.Random(0), SHANGHAI, pass_chance=0.0)
    assert never.take_win(view("", wall_left=60), *cheap)
