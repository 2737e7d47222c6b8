"""Who pays whom: self-draw, discard, robbing a kong, 一炮多响, and every 承包 case."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.profiles import builtin_names, load_profile
from controller.rules import Meld, Profile, WinInputError, WinType, settle
from controller.rules.generate import permute_suits, random_win
from controller.rules.settlement import bound_pairs

PENGPENG = "[111m<1] 222p 333s EEE 5p +5p"  # worth 3 to seat 0, not 门清
PENGPENG_2 = "[111m<2] 222p 333s EEE 5p +5p"  # the same hand claimed from seat 2


def nets(settlement) -> list[int]:
    return [int(x) for x in settlement.totals]


def shares(settlement, win=0) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in settlement.results[win].payments:
        out[p.payer] = out.get(p.payer, 0) + p.shares
    return out


def test_self_draw_each_other_seat_pays(make_win, shanghai):
    s = settle([make_win(PENGPENG)], shanghai)
    assert nets(s) == [9, -3, -3, -3]


def test_discard_only_the_discarder_pays(make_win, shanghai):
    s = settle([make_win(PENGPENG, how="discard", discarder=2)], shanghai)
    assert nets(s) == [3, 0, -3, 0]


def test_stake_multiplies(make_win, shanghai):
    s = settle([make_win(PENGPENG, how="discard", discarder=2, stake=Fraction(5, 2))], shanghai)
    assert s.totals[0] == Fraction(15, 2)


def test_robbing_a_kong_konger_pays_three_shares(make_win, shanghai):
    # seat 1 adds a 3m to their pung; seat 0 robs it for 123m
    win = make_win("12m 456m 789m EEE 55m +3m", how="robbing_kong", discarder=1)
    s = settle([win], shanghai)
    assert s.results[0].score.hand.chinese == "混一色"
    value = s.results[0].score.value
    assert nets(s) == [3 * value, -3 * value, 0, 0]


def test_robbing_a_kong_needs_the_tile_not_held(make_win):
    with pytest.raises(WinInputError) as err:
        make_win("123m 456m 789m EEE 3m +3m", how="robbing_kong", discarder=1)
    assert err.value.field == "winning_tile"


def test_eight_flowers_paid_as_self_draw_without_chengbao(make_win, shanghai):
    s = settle([make_win("春夏秋冬梅兰竹菊", how="eight_flowers", bound_pairs=((0, 1),))], shanghai)
    assert nets(s) == [60, -20, -20, -20]


# -- 承包 -------------------------------------------------------------------------------------


def test_chengbao_self_draw_partner_pays_five(make_win, shanghai):
    s = settle([make_win(PENGPENG, bound_pairs=((0, 2),))], shanghai)
    assert shares(s) == {1: 1, 2: 5, 3: 1}
    assert nets(s) == [21, -3, -15, -3]


def test_chengbao_binds_both_ways(make_win, shanghai):
    # seat 2 claimed three from seat 0: seat 0 winning still makes seat 2 pay 5
    s = settle([make_win(PENGPENG, bound_pairs=((2, 0),))], shanghai)
    assert shares(s) == {1: 1, 2: 5, 3: 1}


def test_chengbao_several_partners_each_pay_five(make_win, shanghai):
    s = settle([make_win(PENGPENG, bound_pairs=((0, 1), (0, 3)))], shanghai)
    assert shares(s) == {1: 5, 2: 1, 3: 5}


def test_chengbao_mutual_counts_twice(make_win, shanghai):
    s = settle([make_win(PENGPENG, bound_pairs=((0, 2), (2, 0)))], shanghai)
    assert shares(s) == {1: 1, 2: 10, 3: 1}
    d = settle(
        [make_win(PENGPENG, how="discard", discarder=2, bound_pairs=((0, 2), (2, 0)))], shanghai
    )
    assert shares(d) == {2: 4}


def test_chengbao_partner_discards_pays_two(make_win, shanghai):
    s = settle([make_win(PENGPENG, how="discard", discarder=2, bound_pairs=((0, 2),))], shanghai)
    assert shares(s) == {2: 2}


@pytest.mark.parametrize(("ready", "expected"), [(False, {3: 2}), (True, {3: 1, 2: 1})])
def test_chengbao_third_player_discards(make_win, shanghai, ready, expected):
    win = make_win(
        PENGPENG, how="discard", discarder=3, bound_pairs=((0, 2),), discarder_ready=ready
    )
    assert shares(settle([win], shanghai)) == expected


def test_chengbao_third_player_needs_readiness(make_win, shanghai):
    win = make_win(PENGPENG, how="discard", discarder=3, bound_pairs=((0, 2),))
    with pytest.raises(WinInputError) as err:
        settle([win], shanghai)
    assert err.value.field == "discarder_ready"


def test_chengbao_robbing_a_kong(make_win, shanghai):
    text = "12m 456m 789m EEE 55m +3m"
    s = settle([make_win(text, how="robbing_kong", discarder=1, bound_pairs=((0, 2),))], shanghai)
    assert shares(s) == {1: 3, 2: 3}
    # the konger is also the partner: 3 + 3
    s = settle([make_win(text, how="robbing_kong", discarder=1, bound_pairs=((0, 1),))], shanghai)
    assert shares(s) == {1: 6}


@pytest.mark.parametrize(("ready", "each"), [(True, 1), (False, 2)])
def test_chengbao_one_discard_wins_for_both_partners(make_win, shanghai, ready, each):
    pairs = ((0, 2),)
    a = make_win(PENGPENG, how="discard", discarder=3, bound_pairs=pairs, discarder_ready=ready)
    b = make_win(
        "[111m<1] 222s 333p WWW 5p +5p".replace("<1", "<0"),
        winner=2,
        how="discard",
        discarder=3,
        bound_pairs=pairs,
        discarder_ready=ready,
    )
    s = settle([a, b], shanghai)
    assert shares(s, 0) == {3: each}
    assert shares(s, 1) == {3: each}
    assert s.totals[1] == 0


def test_a_refused_co_winner_is_no_partner_winning_too(make_win, shanghai):
    # seat 1's claim on seat 3's discard is a 平胡 and is refused: seat 0 (bound to seat 1)
    # is paid as a third player's discard, exactly as if it had won alone
    pairs = ((0, 1),)
    a = make_win(PENGPENG_2, how="discard", discarder=3, bound_pairs=pairs, discarder_ready=True)
    b = make_win(
        "123m 456p 789s 123s 5p +5p", winner=1, how="discard", discarder=3, discarder_ready=True
    )
    both = settle([a, b], shanghai)
    assert not both.results[1].valid and both.results[1].payments == ()
    alone = settle([a], shanghai)
    assert shares(both, 0) == shares(alone) == {3: 1, 1: 1}
    assert both.totals == alone.totals


def test_one_discard_settles_every_win_with_the_same_bindings(make_win, shanghai):
    # the pair (0, 2) is given with seat 0's win only: it binds seat 2 to seat 0 for both
    a = make_win(PENGPENG, how="discard", discarder=3, bound_pairs=((0, 2),), discarder_ready=False)
    b = make_win(
        "[111m<0] 222s 333p WWW 5p +5p", winner=2, how="discard", discarder=3, discarder_ready=False
    )
    s = settle([a, b], shanghai)
    assert shares(s, 0) == shares(s, 1) == {3: 2}  # one discard wins for both partners


def test_chengbao_derived_from_the_winners_melds(make_win, shanghai):
    win = make_win("[111m<2] [222p<2] [333s<2] EEE 5p +5p")
    assert bound_pairs(win, shanghai) == {(0, 2)}
    assert shares(settle([win], shanghai)) == {1: 1, 2: 5, 3: 1}
    # an added kong is the same claim as its pung, and a concealed kong no claim at all
    two = make_win("[1111m+<2] [222p<2] [3333s] EEE 5p +5p")
    assert bound_pairs(two, shanghai) == set()


def test_chengbao_light_variant(make_win):
    light = load_profile("chengbao-light")
    assert shares(settle([make_win(PENGPENG, bound_pairs=((0, 2),))], light)) == {1: 1, 2: 3, 3: 1}
    win = make_win(
        PENGPENG, how="discard", discarder=3, bound_pairs=((0, 2),), discarder_ready=False
    )
    assert shares(settle([win], light)) == {3: 1, 2: 1}
    win = make_win(PENGPENG, how="discard", discarder=2, bound_pairs=((0, 2),))
    assert shares(settle([win], light)) == {2: 1}


def test_chengbao_disabled(make_win):
    profile = Profile.from_mapping({"chengbao": {"enabled": False}}, load_profile("shanghai"))
    assert shares(settle([make_win(PENGPENG, bound_pairs=((0, 2),))], profile)) == {
        1: 1,
        2: 1,
        3: 1,
    }


# -- 一炮多响 and the next dealer --------------------------------------------------------------


def test_one_discard_several_winners(make_win, shanghai):
    a = make_win(PENGPENG, winner=0, how="discard", discarder=2, dealer=1)
    b = make_win("[111m<0] 222s 333p WWW 5p +5p", winner=1, how="discard", discarder=2, dealer=1)
    s = settle([a, b], shanghai)
    assert nets(s) == [3, 3, -6, 0]
    assert s.next_dealer == 0  # nearest the discarder (seat 2) in turn order: 3, 0, 1
    c = make_win("[111m<2] 222s 333p WWW 5p +5p", winner=3, how="discard", discarder=2, dealer=1)
    assert settle([a, c], shanghai).next_dealer == 3


def test_several_winners_must_share_the_discard(make_win, shanghai):
    a = make_win(PENGPENG, winner=0, how="discard", discarder=2)
    b = make_win("[111m<0] 222s 333p WWW 5p +5p", winner=1, how="discard", discarder=3)
    with pytest.raises(WinInputError) as err:
        settle([a, b], shanghai)
    assert err.value.field == "wins[1].win.from"
    with pytest.raises(WinInputError):
        settle([a, a], shanghai)
    single = Profile.from_mapping({"play": {"multiple_winners": False}}, shanghai)
    with pytest.raises(WinInputError):
        settle(
            [a, make_win("[111m<0] 222s 333p WWW 5p +5p", winner=1, how="discard", discarder=2)],
            single,
        )


def test_invalid_win_pays_nothing(make_win, shanghai):
    s = settle(
        [make_win("[123m<3] 456p 789s EEE 5m +5m", how="discard", discarder=1, dealer=2)], shanghai
    )
    assert not s.valid
    assert nets(s) == [0, 0, 0, 0]
    assert s.next_dealer == 2


def test_next_dealer_and_huangfan_after_a_win(make_win, shanghai):
    s = settle([make_win(PENGPENG, how="discard", discarder=2, dealer=3, huangfan=3)], shanghai)
    assert s.next_dealer == 0
    assert s.huangfan_next == 2


def test_payer_cap(make_win):
    capped = Profile.from_mapping({"payments": {"payer_cap": 5}}, load_profile("shanghai"))
    # 风碰 + 开宝 + 荒番 = 16 勒子; each payer pays at most 5
    s = settle([make_win("[EEE<1] SSS WWW CCC F +F", dice=(4, 4), huangfan=1)], capped)
    assert nets(s) == [150, -50, -50, -50]
    assert s.cap_note
    # with 承包 the partner's 5 shares are capped too
    s = settle([make_win(PENGPENG, bound_pairs=((0, 2),), huangfan=1)], capped)
    assert nets(s) == [6 + 30 + 6, -6, -30, -6]
    s = settle(
        [make_win("[111p<2] 222p 333p 444p 5p +5p", bound_pairs=((0, 2),), huangfan=1)], capped
    )
    assert nets(s)[2] == -50


# -- properties ----------------------------------------------------------------------------------


def co_winners(win, count: int, rng) -> list:
    """``count`` wins on one discard, each holding ``win``'s tiles (melds unclaimed, so any
    seat may hold them)."""
    melds = tuple(Meld(m.kind, m.tiles, None) for m in win.hand.melds)
    hand = replace(win.hand, melds=melds)
    discarder = rng.randrange(4)
    seats = rng.sample([s for s in range(4) if s != discarder], count)
    ready = rng.random() < 0.5
    return [
        replace(
            win,
            winner=seat,
            hand=hand,
            how=WinType.DISCARD,
            discarder=discarder,
            discarder_ready=ready,
            after_kong=False,
            after_flower=False,
        )
        for seat in seats
    ]


@given(st.integers(0, 2**32), st.sampled_from(builtin_names()), st.integers(1, 3))
@settings(max_examples=300, deadline=None)
def test_settlements_sum_to_zero(seed, name, winners):
    rng = random.Random(seed)
    profile = load_profile(name)
    win = random_win(rng)
    wins = [win] if winners == 1 else co_winners(win, winners, rng)
    if win.discarder_ready is None and win.how is WinType.DISCARD:
        wins = [replace(w, discarder_ready=False) for w in wins]
    s = settle(wins, profile)
    assert sum(s.totals) == 0
    for r in s.results:
        for p in r.payments:
            assert p.amount > 0 and p.payer != p.payee


@given(seed=st.integers(0, 2**32), order=st.permutations([0, 1, 2]))
@settings(max_examples=300, deadline=None)
def test_valid_win_stays_valid_when_suits_are_permuted(seed, order, shanghai):
    rng = random.Random(seed)
    win = random_win(rng)
    a = settle([win], shanghai)
    b = settle([permute_suits(win, order)], shanghai)
    assert a.valid and b.valid
    assert a.totals == b.totals
    assert a.results[0].score.hand == b.results[0].score.hand


def test_random_wins_are_mostly_valid_and_varied(shanghai):
    rng = random.Random(7)
    kinds = {settle([random_win(rng)], shanghai).results[0].score.hand for _ in range(400)}
    assert len(kinds) >= 6


def test_house_partner_joins_any_discard(make_win):
    house = load_profile("house")
    win = make_win(
        PENGPENG, how="discard", discarder=3, bound_pairs=((0, 2),), discarder_ready=False
    )
    assert shares(settle([win], house)) == {3: 1, 2: 1}
    assert shares(settle([make_win(PENGPENG, bound_pairs=((0, 2),))], house)) == {1: 1, 2: 3, 3: 1}


def test_seed_001_three_partners_each_pay_five(make_win, shanghai):
    """001: A bound with B, C and D; A self-draws: B, C and D each pay 5 shares."""
    win = make_win(PENGPENG, bound_pairs=((0, 1), (0, 2), (0, 3)))
    assert shares(settle([win], load_profile("lazi"))) == {1: 5, 2: 5, 3: 5}
