"""Hand types, 花, raises, doublers and caps, as docs/rules.md fixes them."""

from __future__ import annotations

import pytest

from controller.profiles import load_profile
from controller.rules import Hand, HandType, Profile, is_ready, score_win, winning_tiles
from controller.rules.scoring import Refusal, Score, count_hua


def score(win, profile) -> Score:
    result = score_win(win, profile)
    assert isinstance(result, Score), result
    return result


def custom(**sections) -> Profile:
    """The default profile with some settings changed."""
    return Profile.from_mapping({"name": "custom", **sections}, load_profile("shanghai"))


# -- hand types ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hand", "value"),
    [
        # the tiles read as pungs are worth more than as chows: 清碰, not 清一色
        ("111p 222p 333p 444p 5p +5p", HandType.QINGPENG, 20),
        ("[123p<3] 456p 789p 234p 5p +5p", HandType.QINGYISE, 10),
        ("[111m<1] 222p 333s EEE 5p +5p", HandType.PENGPENG, 3),
        ("[123m<3] 456m 789m EEE 5m +5m", HandType.HUNYISE, 3),
        ("[111m<1] 222m EEE CCC 5m +5m", HandType.HUNPENG, 10),
        ("[111p<2] 222p 333p 444p 5p +5p", HandType.QINGPENG, 20),
        ("EESSWWNNCCFFP +P", HandType.FENGYISE, 20),
        ("[EEE<1] SSWNNCFFPW +W", HandType.FENGYISE, 20),
        ("[EEE<1] SSS WWW CCC F +F", HandType.FENGPENG, 40),
    ],
)
def test_hand_types(make_win, shanghai, text, hand, value):
    s = score(make_win(text), shanghai)
    assert s.hand is hand
    assert s.value == value


def test_issue_example_is_qingpeng_with_its_reading(make_win, shanghai):
    s = score(make_win("111p 222p 333p 444p 5p +5p"), shanghai)
    assert s.reading == ("111p", "222p", "333p", "444p", "55p")


def test_plain_mixed_hand_with_a_chow_is_refused(make_win, shanghai):
    result = score_win(make_win("[123m<3] 456p 789s EEE 5m +5m"), shanghai)
    assert isinstance(result, Refusal)
    assert "平胡" in result.reason


def test_incomplete_hand_is_refused(make_win, shanghai):
    result = score_win(make_win("[123m<3] 456p 789s EEE 5m +6m"), shanghai)
    assert isinstance(result, Refusal)
    assert "four sets and a pair" in result.reason


def test_pinghu_can_be_allowed_by_a_profile(make_win):
    profile = custom(hands={"pinghu": "flowers"})
    s = score(make_win("[123m<3] 456p 789s EEE 5m +5m"), profile)
    assert s.hand is HandType.PINGHU and s.value == 3


def test_fengyise_disabled_refuses_irregular_honours(make_win):
    result = score_win(make_win("EESSWWNNCCFFP +P"), custom(hands={"fengyise": False}))
    assert isinstance(result, Refusal) and "风一色" in result.reason


def test_eight_flowers(make_win, shanghai):
    s = score(make_win("春夏秋冬梅兰竹菊", how="eight_flowers"), shanghai)
    assert s.hand is HandType.BAHUA and s.value == 20
    assert s.hua_total == 8


def test_eight_flowers_valued_by_flowers_count_each_as_the_profile_does(make_win):
    # a flower worth 2 花: eight are 16, as in any other hand
    profile = custom(hua={"flower": 2}, hands={"bahua": "flowers", "flower_hand_cap": 3})
    s = score(make_win("春夏秋冬梅兰竹菊", how="eight_flowers"), profile)
    assert s.hua_total == 16 and [i.hua for i in s.hua] == [16]
    assert s.base == 2 + 16  # 底 2 + 16 花, under the cap of 3 勒子


def test_eight_flowers_needs_eight(make_win, shanghai):
    result = score_win(make_win("春夏秋冬梅兰竹", how="eight_flowers"), shanghai)
    assert isinstance(result, Refusal)


def test_eight_flowers_then_another_hand_counts_the_eight(make_win, shanghai):
    s = score(make_win("[111m<1] 222p 333s EEE 5p 春夏秋冬梅兰竹菊 +5p"), shanghai)
    assert s.hand is HandType.PENGPENG
    assert s.hua_total == 9
    assert s.value == 10  # 2 + 9 = 11, capped at one 勒子


def test_eight_flowers_doubled_by_kaibao_not_menqing(make_win, shanghai):
    assert (
        score(make_win("春夏秋冬梅兰竹菊", how="eight_flowers", dice=(1, 1)), shanghai).value == 40
    )
    assert "门清" not in str(
        score(make_win("春夏秋冬梅兰竹菊", how="eight_flowers"), shanghai).steps
    )


# -- 花 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hua"),
    [
        ("[1111m<1] 222p 333s 444s 5p +5p", 1),  # suit kong, exposed
        ("[1111m] [222p<1] 333s 444s 5p +5p", 2),  # suit kong, concealed
        ("[1111m+<1] 222p 333s 444s 5p +5p", 1),  # added kong counts as exposed
        ("[111m<1] 222p 333s 444s 5p +5p", 0),  # suit pung: nothing
        ("[EEE<1] 222p 333s 444s 5p +5p", 1),  # wind pung
        ("[222p<1] EEE 333s 444s 5p +5p", 1),  # wind pung, concealed
        ("[EEEE<1] 222p 333s 444s 5p +5p", 2),  # wind kong, exposed
        ("[EEEE] [222p<1] 333s 444s 5p +5p", 3),  # wind kong, concealed
        ("[CCC<1] 222p 333s 444s 5p +5p", 2),  # dragon pung
        ("[222p<1] FFF 333s 444s 5p +5p", 2),  # dragon pung, concealed
        ("[PPPP<1] 222p 333s 444s 5p +5p", 3),  # dragon kong, exposed
        ("[CCCC] [222p<1] 333s 444s 5p +5p", 4),  # dragon kong, concealed
        ("[222p<1] 333s 444s 55s CC +C", 2),  # the winning tile completes a dragon pung
        ("[222p<1] 333s 444s 55s EE +C", None),  # not a win: no pair
        ("[222p<1] 333s 444s EEE 春夏 C +C", 3),  # flowers, 1 each
    ],
)
def test_hua_sources(make_win, shanghai, text, hua):
    result = score_win(make_win(text), shanghai)
    if hua is None:
        assert isinstance(result, Refusal)
        return
    assert isinstance(result, Score)
    assert result.hua_total == hua
    assert result.value == 2 + hua


def test_hua_items_name_each_source(make_win, shanghai):
    s = score(make_win("[EEEE] [CCC<1] [1111m<2] 222s 5p 春 +5p"), shanghai)
    sources = {(i.source, i.tiles): i.hua for i in s.hua}
    assert sources == {
        ("flowers", "春"): 1,
        ("wind concealed kong", "EEEE"): 3,
        ("dragon pung", "CCC"): 2,
        ("suit kong", "1111m"): 1,
    }


@pytest.mark.parametrize(
    ("profile", "text", "hua"),
    [
        ("honours-alike", "[EEEE] [222p<1] 333s 444s 5p +5p", 2),
        ("honours-alike", "[CCC<1] 222p 333s 444s 5p +5p", 1),
        ("honours-alike", "[CCCC] [222p<1] 333s 444s 5p +5p", 2),
        ("dragons-by-count", "[222p<1] 333s 444s EEE C +C", 2),  # E x3 = 1, C x2 = 1
        ("dragons-by-count", "[CCCC<1] 222p 333s 444s 5p +5p", 3),
        ("dragons-by-count", "[CCC<1] 222p 333s 444s 5p +5p", 2),
        ("shanghai", "[222p<1] 333s 444s EEE C +C", 1),  # the default: pair of dragons 0
    ],
)
def test_honours_hua_variants(make_win, profile, text, hua):
    assert score(make_win(text), load_profile(profile)).hua_total == hua


def test_count_hua_irregular_honours_counts_triples(make_win, shanghai):
    win = make_win("EEE SS WW NN CC F P +P")
    items = count_hua(win.hand, 0, shanghai)
    assert [(i.source, i.hua) for i in items] == [("wind pung (concealed)", 1)]


# -- the value: seed 001's stake example, caps, raises, doublers -------------------------------


@pytest.mark.parametrize(("flowers", "value"), [(1, 3), (2, 4), (7, 9), (8, 10)])
def test_seed_001_stake_example(make_win, shanghai, flowers, value):
    names = "春夏秋冬梅兰竹菊"[:flowers]
    win = make_win(f"[111m<1] 222p 333s 444s 5p {names} +5p", how="discard", discarder=2)
    assert score(win, shanghai).value == value
    assert score(win, load_profile("lazi")).value == value


def test_flower_hand_is_capped_at_one_lezi(make_win, shanghai):
    s = score(make_win("[CCCC] [PPPP<1] 333s 444s 5p 春夏 +5p"), shanghai)
    assert s.hua_total == 2 + 4 + 3
    assert s.base == 10 and s.value == 10
    assert any(st.rule == "勒子" for st in s.steps)


def test_gangkai_raises_to_one_lezi(make_win, shanghai):
    s = score(make_win("[1111m<1] 222p 333s 444s 5p +5p", after_kong=True), shanghai)
    assert s.value == 10
    assert [st.rule for st in s.steps] == ["碰碰胡", "杠开"]


def test_gangkai_leaves_a_bigger_hand_alone(make_win, shanghai):
    s = score(make_win("[1111p<1] 222p 333p 444p 5p +5p", after_kong=True), shanghai)
    assert s.hand is HandType.QINGPENG and s.value == 20


def test_gangkai_on_a_flower_replacement(make_win, shanghai):
    text = "[111m<1] 222p 333s 444s 5p 春 +5p"
    assert score(make_win(text, after_flower=True), shanghai).value == 10
    no = custom(bonuses={"gangkai_after_flower": False})
    assert score(make_win(text, after_flower=True), no).value == 3


def test_gangkai_only_on_self_draw_by_default(make_win, shanghai):
    win = make_win("[1111m<1] 222p 333s 444s 5p +5p", how="discard", discarder=1, after_kong=True)
    assert score(win, shanghai).value == 3


def test_house_gangkai_doubles_and_counts_another_players_kong(make_win):
    house = load_profile("house")
    assert score(make_win("[1111m<1] 222p 333s 444s 5p +5p", after_kong=True), house).value == 6
    on_discard = make_win(
        "[1111m<1] 222p 333s 444s 5p +5p", how="discard", discarder=1, after_kong=True
    )
    assert score(on_discard, house).value == 6


def test_house_gangkai_doubles_in_step_two_before_menqing(make_win):
    # 杠开 doubling "instead of raising" stands in step 2: 门清 then doubles up to 2 勒子 and
    # leaves a hand already at 2 勒子 alone. The doubling was applied after 门清, with 开宝
    # and 荒番: 门清 碰碰胡 with 5 花 on a flower's replacement scored 28, not 20
    house = load_profile("house")
    pungs = score(make_win("111m 222p 333s 999s 4m +4m", flowers=5, after_flower=True), house)
    assert pungs.value == 20
    assert [(st.rule, st.value) for st in pungs.steps][-2:] == [("杠开", 14), ("门清", 20)]
    assert "杠开" in pungs.doublers
    kong = score(make_win("123p 345p 678p 5p [9999p] +5p", after_kong=True), house)
    assert kong.value == 20 and [st.rule for st in kong.steps][-1] == "门清"
    # 开宝 and 荒番 still double the result after every step
    both = score(
        make_win("111m 222p 333s 999s 4m +4m", flowers=5, after_flower=True, huangfan=1), house
    )
    assert both.value == 40 and both.steps[-1].rule == "荒番"


def test_dadiaoche_raises_to_one_lezi(make_win, shanghai):
    s = score(make_win("[111m<1] [222p<1] [333s<2] [EEE<3] 5p +5p"), shanghai)
    assert s.value == 10
    assert "大吊车" in [st.rule for st in s.steps]


def test_an_all_honours_win_on_two_honours_is_no_single_wait(make_win):
    # 乱风向: E held, S wins; any honour would have won, so this is no 大吊车
    doubling = custom(bonuses={"dadiaoche": "double"})
    s = score(
        make_win("[WWW<2] [NNN<2] [CCC<3] [FFF<3] E +S", how="discard", discarder=0, winner=1),
        doubling,
    )
    assert s.hand is HandType.FENGYISE and "大吊车" not in [st.rule for st in s.steps]
    assert "大吊车" not in s.doublers and s.value == 20
    pair = score(
        make_win("[WWW<2] [NNN<2] [CCC<3] [FFF<3] E +E", how="discard", discarder=0, winner=1),
        doubling,
    )
    assert "大吊车" in pair.doublers


def test_dadiaoche_with_concealed_kongs_is_menqing_too(make_win, shanghai):
    s = score(make_win("[1111m] [2222p] [3333s] [EEEE] 5p +5p"), shanghai)
    assert s.hua_total == 2 + 2 + 2 + 3
    assert s.value == 20


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("123p 456p 789p 234p 5p +5p", 20),  # 门清 清一色 = 2 勒子
        ("111p 222p 333p 444p 5p +5p", 20),  # 门清 清碰 stays 2 勒子
        ("EEE SSS 111m 222p 3s 春夏秋 +3s", 14),  # 门清 + 5 花 = 14
        ("EEE SSS 111m 222p 3s 春夏秋冬梅兰竹 +3s", 20),  # 2 + 9 = 11 -> 10 -> 20
    ],
)
def test_menqing(make_win, shanghai, text, value):
    assert score(make_win(text), shanghai).value == value


def test_menqing_with_a_concealed_kong(make_win, shanghai):
    s = score(make_win("[1111m] 222p 333s EEE 5p +5p"), shanghai)
    assert s.value == 2 * (2 + 2 + 1)


def test_menqing_on_a_discard(make_win, shanghai):
    win = make_win("EEE SSS 111m 222p 3s +3s", how="discard", discarder=1)
    assert score(win, shanghai).value == 8


def test_menqing_variant_doubles_like_kaibao(make_win):
    assert score(make_win("111p 222p 333p 444p 5p +5p"), load_profile("lazi")).value == 40
    assert (
        score(make_win("111p 222p 333p 444p 5p +5p"), custom(bonuses={"menqing": "none"})).value
        == 20
    )


@pytest.mark.parametrize(
    ("dice", "value"), [((4, 4), 40), ((1, 1), 40), ((2, 2), 20), ((3, 5), 20), (None, 20)]
)
def test_kaibao_qingpeng_is_four_lezi(make_win, shanghai, dice, value):
    win = make_win("[111p<1] 222p 333p 444p 5p +5p", dice=dice)
    assert score(win, shanghai).value == value


def test_kaibao_variants(make_win):
    win = make_win("[111p<1] 222p 333p 444p 5p +5p", dice=(2, 2))
    assert score(win, custom(bonuses={"kaibao": "any_double"})).value == 40
    win = make_win("[111p<1] 222p 333p 444p 5p +5p", dice=(4, 4))
    assert score(win, custom(bonuses={"kaibao": "none"})).value == 20


def test_fengpeng_with_huangfan_is_eight_lezi(make_win, shanghai):
    s = score(make_win("[EEE<1] SSS WWW CCC F +F", huangfan=1), shanghai)
    assert s.value == 80 and s.cap == 80
    assert s.doublers == ("荒番",)


def test_kaibao_and_huangfan_together_quadruple(make_win, shanghai):
    s = score(make_win("[111p<1] 222p 333p 444p 5p +5p", dice=(1, 1), huangfan=3), shanghai)
    assert s.value == 80
    assert s.doublers == ("开宝", "荒番")


def test_huangfan_doubles_once_whatever_the_count(make_win, shanghai):
    assert score(make_win("[111m<1] 222p 333s EEE 5p +5p", huangfan=5), shanghai).value == 6


def test_huangfan_disabled(make_win):
    profile = custom(huangfan={"enabled": False})
    assert score(make_win("[111m<1] 222p 333s EEE 5p +5p", huangfan=5), profile).value == 3


def test_dice_huangfan_starts_at_once(make_win):
    lazi = load_profile("lazi")
    assert score(make_win("[111m<1] 222p 333s EEE 5p +5p", dice=(1, 3)), lazi).value == 6
    assert score(make_win("[111m<1] 222p 333s EEE 5p +5p", dice=(2, 3)), lazi).value == 3
    # and 1-1 is not 开宝 at the 辣子 table
    assert score(make_win("[111m<1] 222p 333s EEE 5p +5p", dice=(1, 1)), lazi).value == 6


def test_working_shows_every_step(make_win, shanghai):
    s = score(make_win("[1111m<1] 222p 333s EEE 5p +5p", after_kong=True, dice=(4, 4)), shanghai)
    assert [(st.rule, st.value) for st in s.steps] == [("碰碰胡", 4), ("杠开", 10), ("开宝", 20)]
    assert s.base == 4


# -- special hands of the 辣子 table ------------------------------------------------------------


def test_lazi_table_values(make_win):
    lazi = load_profile("lazi")
    assert score(make_win("春夏秋冬梅兰竹菊", how="eight_flowers"), lazi).value == 40
    assert score(make_win("[EEE<1] SSS WWW CCC F +F"), lazi).value == 40  # 字一色
    assert score(make_win("[EEE<1] SSWNNCFFPW +W"), lazi).value == 20  # 乱风向


def test_tianhu_and_dihu(make_win):
    lazi = load_profile("lazi")
    tianhu = make_win("123m 456p 789s 234m 5s +5s", dealer=0, first_turn=True)
    s = score(tianhu, lazi)
    assert s.hand is HandType.TIANHU and s.value == 100
    dihu = make_win(
        "123m 456p 789s 234m 5s +5s",
        winner=1,
        how="discard",
        discarder=0,
        dealer=0,
        first_turn=True,
    )
    assert score(dihu, lazi).hand is HandType.DIHU
    assert score(dihu, lazi).value == 80
    # not in the first go-round: a plain hand, refused
    assert isinstance(score_win(make_win("123m 456p 789s 234m 5s +5s", dealer=0), lazi), Refusal)
    # the default profile has no 天胡
    assert isinstance(score_win(tianhu, load_profile("shanghai")), Refusal)


# -- what may win: 敲麻 and 漏胡 -----------------------------------------------------------------


def test_qiaoma_needs_a_ready_declaration(make_win):
    qiaoma = load_profile("qiaoma")
    text = "[111m<1] 222p 333s EEE 5p +5p"
    refused = score_win(make_win(text), qiaoma)
    assert isinstance(refused, Refusal) and "敲麻" in refused.reason
    assert score(make_win(text, declared_ready=True), qiaoma).value == 3


def test_missed_win_blocks_that_tile_on_a_discard(make_win, shanghai):
    from controller.rules import Tile

    text = "[111m<1] 222p 333s EEE 5p +5p"
    win = make_win(text, how="discard", discarder=2, missed_tiles=(Tile.P5,))
    refused = score_win(win, shanghai)
    assert isinstance(refused, Refusal) and "漏胡" in refused.reason
    # only that tile, and a self-draw is always allowed
    assert score(make_win(text, missed_tiles=(Tile.P5,)), shanghai).value == 3
    other = make_win(text, how="discard", discarder=2, missed_tiles=(Tile.P6,))
    assert score(other, shanghai).value == 3


# -- readiness -------------------------------------------------------------------------------


def test_waits_of_a_ready_hand(shanghai):
    assert [t.code for t in winning_tiles(Hand.parse("EEE SSS 111m 222p 3s"), shanghai)] == ["3s"]
    assert is_ready(Hand.parse("111p 222p 333p 444p 5p"), shanghai)


def test_a_plain_hand_is_not_ready(shanghai):
    # it waits on N by shape, but 平胡 cannot win: not ready under Shanghai rules
    assert not is_ready(Hand.parse("123m 456p 789s EEE N"), shanghai)
    assert is_ready(Hand.parse("123m 456p 789s EEE N"), custom(hands={"pinghu": "flowers"}))


def test_seven_pairs_is_not_a_shape_of_its_own(make_win, shanghai):
    refused = score_win(make_win("11m 55m 99p 22p 44s 88s E +E"), shanghai)
    assert isinstance(refused, Refusal)


def test_house_fengpeng_is_two_lezi(make_win):
    assert score(make_win("[EEE<1] SSS WWW CCC F +F"), load_profile("house")).value == 20
