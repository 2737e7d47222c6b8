"""What a win is worth: the hand type, its 花, the raises and doublers, the caps.

:func:`score_win` returns a :class:`Score` that carries its whole working, so the table can show
players how the value was reached. Payments are :mod:`controller.rules.settlement`'s business.

The steps, in order (``docs/rules.md``): the hand's base value (``base + 花`` capped, or a fixed
number of 勒子); 杠开 and 大吊车 raise a value under one 勒子 to one 勒子; 门清 doubles, up to its
own cap; 开宝 and 荒番 each double the value and the cap with it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple, cast, final

from controller.rules.analysis import (
    is_all_honours,
    is_all_pungs,
    is_standard,
    reading_text,
)
from controller.rules.hand import Hand
from controller.rules.melds import MeldKind
from controller.rules.profile import FLOWERS, Bonuses, Profile
from controller.rules.table import dice_huangfan, kaibao
from controller.rules.tiles import HONOURS, Tile, format_tiles, tiles_of
from controller.rules.win import Win, WinType


class HandType(StrEnum):
    """The winning hands. Values are the profile keys under ``[hands]``."""

    PENGPENG = "pengpeng"
    HUNYISE = "hunyise"
    QINGYISE = "qingyise"
    HUNPENG = "hunpeng"
    QINGPENG = "qingpeng"
    FENGYISE = "fengyise"
    FENGPENG = "fengpeng"
    BAHUA = "bahua"
    TIANHU = "tianhu"
    DIHU = "dihu"
    PINGHU = "pinghu"

    @property
    def chinese(self) -> str:
        return _HAND_NAMES[self][0]

    @property
    def english(self) -> str:
        return _HAND_NAMES[self][1]

    @property
    def is_special(self) -> bool:
        """Whole-hand wins (八花齐, 天胡, 地胡) that take no 门清, 杠开 or 大吊车."""
        return self in _SPECIAL


_SPECIAL = frozenset({HandType.BAHUA, HandType.TIANHU, HandType.DIHU})
_HAND_NAMES = {
    HandType.PENGPENG: ("碰碰胡", "all pungs"),
    HandType.HUNYISE: ("混一色", "one suit and honours"),
    HandType.QINGYISE: ("清一色", "one suit"),
    HandType.HUNPENG: ("混碰", "one suit and honours, all pungs"),
    HandType.QINGPENG: ("清碰", "one suit, all pungs"),
    HandType.FENGYISE: ("风一色", "all honours"),
    HandType.FENGPENG: ("风碰", "all honours, all pungs"),
    HandType.BAHUA: ("八花齐", "all eight flowers"),
    HandType.TIANHU: ("天胡", "dealer complete on the deal"),
    HandType.DIHU: ("地胡", "won in the first go-round"),
    HandType.PINGHU: ("平胡", "plain mixed hand"),
}


class HuaItem(NamedTuple):
    """One source of 花: what it is, the tiles, and the 花 it gives."""

    source: str
    tiles: str
    hua: int


class Step(NamedTuple):
    """One step of the working: the rule, what it did, and the value after it."""

    rule: str
    effect: str
    value: int


class Score(NamedTuple):
    """The value of a valid win, with its working. ``value`` is what one normal payer owes, in
    stake units; ``cap`` is the most the hand could have reached after the steps."""

    hand: HandType
    reading: tuple[str, ...]
    hua: tuple[HuaItem, ...]
    hua_total: int
    base: int
    cap: int
    steps: tuple[Step, ...]
    value: int
    doublers: tuple[str, ...]


@final  # settlement tells a refusal by ``type(o) is Refusal``: no subclass may slip past it
class Refusal(NamedTuple):
    """Why a claimed win is not a win."""

    reason: str


# -- 花 -----------------------------------------------------------------------------------------


_CONCEALED_HONOUR_PUNGS = tuple(
    (t, "wind pung (concealed)" if t.is_wind else "dragon pung (concealed)", t.code * 3)
    for t in HONOURS
)


def count_hua(hand: Hand, flowers: int, profile: Profile) -> list[HuaItem]:
    """Every source of 花 in a hand, per the profile's table.

    Three alike among the concealed tiles (the winning tile included) count as a pung: in a
    hand of sets and a pair an honour held three times can only be a pung, and the irregular
    all-honours shape is read the same way.
    """
    hua = profile.hua
    items: list[HuaItem] = []
    if flowers:
        named = "".join([f.chinese for f in hand.flowers]) or f"{flowers} flower(s)"
        items.append(HuaItem("flowers", named, flowers * hua.flower))
    by_count = hua.honours_by_count
    table = hua.table
    for m in hand.melds:
        source = m.hua_source
        if source is None or (by_count and m.tiles[0] >= 27):
            continue
        items.append(HuaItem(source, m.tiles_text, table[source]))
    if by_count:
        counts = hand.counts
        for t in HONOURS:
            held = counts[t]
            by = hua.wind_by_count if t < 31 else hua.dragon_by_count
            if held and by[held]:
                kind = "wind" if t < 31 else "dragon"
                items.append(HuaItem(f"{kind} x{held} held", t.code * held, by[held]))
        return [i for i in items if i.hua]
    honours = hand.concealed_counts()[27:34]
    if 3 in honours or 4 in honours:
        for t, source, tiles in _CONCEALED_HONOUR_PUNGS:
            if honours[t - 27] >= 3:
                items.append(HuaItem(source, tiles, hua.wind_pung if t < 31 else hua.dragon_pung))
    return [i for i in items if i.hua]


# -- hand types --------------------------------------------------------------------------------


_C = {
    t: (t, t in (HandType.PENGPENG, HandType.HUNPENG, HandType.QINGPENG, HandType.FENGPENG))
    for t in HandType
}


# Enum members are looked up through the class on every access (60 ns each on 3.11); the hot
# paths below use these module constants instead.
_SELF_DRAW, _DISCARD, _ROBBING = WinType.SELF_DRAW, WinType.DISCARD, WinType.ROBBING_KONG
_EIGHT_FLOWERS = WinType.EIGHT_FLOWERS
_CHOW = MeldKind.CHOW
(
    _PINGHU,
    _PENGPENG,
    _QINGYISE,
    _HUNYISE,
    _QINGPENG,
    _HUNPENG,
    _FENGYISE,
    _FENGPENG,
    _TIANHU,
    _DIHU,
) = (
    _C[t]
    for t in (
        HandType.PINGHU,
        HandType.PENGPENG,
        HandType.QINGYISE,
        HandType.HUNYISE,
        HandType.QINGPENG,
        HandType.HUNPENG,
        HandType.FENGYISE,
        HandType.FENGPENG,
        HandType.TIANHU,
        HandType.DIHU,
    )
)


def _shape_candidates(hand: Hand) -> list[tuple[HandType, bool]]:
    """Every hand type the tiles qualify for by their shape alone (before the profile says
    what may win), each with whether it is read as all pungs."""
    concealed = hand.concealed_counts()
    counts = hand.counts
    suits = bool(any(counts[0:9])) + bool(any(counts[9:18])) + bool(any(counts[18:27]))
    honours = any(counts[27:34])
    out: list[tuple[HandType, bool]] = []
    pungs = False
    if is_standard(concealed):
        pungs = is_all_pungs(concealed)
        if pungs:
            for m in hand.melds:
                if m.kind is _CHOW:
                    pungs = False
                    break
        out.append(_PINGHU)
        if pungs:
            out.append(_PENGPENG)
        if suits == 1:
            out.append(_HUNYISE if honours else _QINGYISE)
            if pungs:
                out.append(_HUNPENG if honours else _QINGPENG)
    if not suits:
        out.append(_FENGYISE)
        if pungs:
            out.append(_FENGPENG)
    return out


def _candidates(win: Win) -> list[tuple[HandType, bool]]:
    """The shape candidates, and 天胡 / 地胡 when the win came in the first go-round."""
    out = _shape_candidates(win.hand)
    if win.first_turn and out and win.dealer is not None:
        if win.winner == win.dealer and win.how is _SELF_DRAW:
            out.append(_TIANHU)
        elif win.winner != win.dealer:
            out.append(_DIHU)
    return out


def _is_gangkai(win: Win, b: Bonuses) -> bool:
    how = win.how
    if how is _SELF_DRAW:
        return win.after_kong or (win.after_flower and b.gangkai_after_flower)
    if b.gangkai_on_others_kong:
        return how is _ROBBING or (how is _DISCARD and win.after_kong)
    return False


def is_dadiaoche(hand: Hand) -> bool:
    """大吊车: every other tile laid down in four melds, winning on the single one left: the
    winning tile pairs it. (An all-honours hand may also win with two honours that differ,
    乱风向; that win was never a single wait.)"""
    return (
        len(hand.melds) == 4 and len(hand.concealed) == 1 and hand.concealed[0] == hand.winning_tile
    )


def huangfan_in_effect(win: Win, profile: Profile) -> int:
    """The 荒番 counter during this hand (the dice may raise it under dice-荒番)."""
    if not profile.huangfan.enabled:
        return 0
    h = win.huangfan
    if profile.huangfan.dice:
        h += dice_huangfan(win.dice)
    return h


# A value is worked out as a list of events, cheap to build for every candidate hand type;
# only the winning candidate's events are written out as Steps.
_Event = tuple[str, str, int, int]  # (kind, rule name, parameter, value after)


def _value(
    hand_type: HandType, win: Win, profile: Profile, hua_total: int
) -> tuple[int, int, int, list[_Event], list[str]]:
    """(base, cap, value, events, doublers) of one candidate hand type."""
    v, cap, events = _base_step(hand_type, profile, hua_total)
    base = v
    multiplier = 1
    doublers: list[str] = []  # every rule that doubled, for the result
    late: list[str] = []  # those that double the value and cap at the end (step 4)
    if hand_type not in _SPECIAL:
        v, cap = _raises(win, profile, v, cap, events, doublers)
        v, cap, multiplier = _menqing(win.hand, profile, v, cap, events, doublers, late)
    if win.dice is not None and kaibao(win.dice, profile):
        multiplier *= 2
        doublers.append("开宝")
        late.append("开宝")
    if huangfan_in_effect(win, profile) > 0:
        multiplier *= 2
        doublers.append("荒番")
        late.append("荒番")
    value = v * multiplier
    if multiplier > 1:
        events.append(("double", " ".join(late), multiplier, value))
        cap *= multiplier
    return base, cap, value, events, doublers


def _base_step(
    hand_type: HandType, profile: Profile, hua_total: int
) -> tuple[int, int, list[_Event]]:
    """Step 1: (value, cap, events) of the hand type itself, by its 花 or fixed in 勒子."""
    units = profile.units
    lezi = units.lezi
    setting = profile.hands.values[hand_type]
    name = _HAND_NAMES[hand_type][0]
    if setting == FLOWERS:
        raw = units.base + units.flower * hua_total
        cap = profile.hands.flower_hand_cap * lezi
        v = min(raw, cap)
        events: list[_Event] = [("flowers", name, hua_total, raw)]
        if raw > cap:
            events.append(("cap", "勒子", cap // lezi, v))
    else:
        # not None: a hand type the profile cannot win with is never a candidate (score_win)
        lezi_count = cast(int, setting)
        v = cap = lezi_count * lezi
        events = [("fixed", name, lezi_count, v)]
    return v, cap, events


def _raises(
    win: Win, profile: Profile, v: int, cap: int, events: list[_Event], doublers: list[str]
) -> tuple[int, int]:
    """Step 2: (value, cap) after 杠开 and 大吊车, each raising the value to its floor or
    doubling it, as the profile says."""
    b = profile.bonuses
    lezi = profile.units.lezi
    raises = []
    if _is_gangkai(win, b):
        raises.append(("杠开", b.gangkai))
    if is_dadiaoche(win.hand):
        raises.append(("大吊车", b.dadiaoche))
    for rule, mode in raises:
        if mode == "raise":
            floor = b.raise_to * lezi
            if v < floor:
                v = floor
                cap = max(cap, floor)
                events.append(("raise", rule, b.raise_to, v))
            else:
                events.append(("raise_noop", rule, b.raise_to, v))
        elif mode == "double":
            # in step 2, where the rule stands: 门清 then sees the doubled value, and does
            # not double a hand that has reached 2 勒子 by it (docs/rules.md step 2)
            v *= 2
            cap *= 2
            doublers.append(rule)
            events.append(("double_step", rule, 2, v))
    return v, cap


def _menqing(
    hand: Hand,
    profile: Profile,
    v: int,
    cap: int,
    events: list[_Event],
    doublers: list[str],
    late: list[str],
) -> tuple[int, int, int]:
    """Step 3: (value, cap, multiplier) after 门清, which doubles up to its cap here, or
    doubles value and cap at the end with 开宝 and 荒番 (``late``), as the profile says."""
    b = profile.bonuses
    menqing = b.menqing
    if menqing != "none" and hand.is_concealed:
        if menqing == "double":
            doublers.append("门清")
            late.append("门清")
            return v, cap, 2
        top = b.menqing_cap * profile.units.lezi
        if v < top:
            v = min(2 * v, top)
            cap = max(cap, top)
            events.append(("menqing", "门清", b.menqing_cap, v))
        else:
            events.append(("menqing_noop", "门清", b.menqing_cap, v))
    return v, cap, 1


_STEP_TEXT = {
    "flowers": "底 {base} + {p} 花 = {raw}",
    "cap": "capped at {p} 勒子",
    "fixed": "{p} 勒子",
    "raise": "raised to {p} 勒子",
    "raise_noop": "already {p} 勒子 or more: no change",
    "menqing": "x2, up to {p} 勒子",
    "menqing_noop": "already {p} 勒子 or more: no change",
    "double": "x{p}, cap with it",
    "double_step": "x{p}, cap with it",
}


def _steps(events: list[_Event], profile: Profile) -> tuple[Step, ...]:
    base = profile.units.base
    out = []
    for event in events:
        step = _STEPS.get((event, base))
        if step is None:
            kind, rule, p, value = event
            step = Step(rule, _STEP_TEXT[kind].format(p=p, base=base, raw=value), value)
            if len(_STEPS) < 4096:  # the same few steps recur in every game
                _STEPS[(event, base)] = step
        out.append(step)
    return tuple(out)


_STEPS: dict[tuple[_Event, int], Step] = {}


def _base_value(setting: str | int | None, profile: Profile, hua_total: int) -> int:
    """A hand type's value before raises and doublers (step 1 of the working), from its
    profile setting."""
    units = profile.units
    if setting == FLOWERS:
        return min(
            units.base + units.flower * hua_total, profile.hands.flower_hand_cap * units.lezi
        )
    # not None: a hand type the profile cannot win with is never a candidate (score_win)
    return cast(int, setting) * units.lezi


def score_win(win: Win, profile: Profile) -> Score | Refusal:
    """Score one win under a profile: its :class:`Score`, or the :class:`Refusal` saying why
    it is not a win.

    Where the tiles qualify for several hand types, the one worth most counts. The later
    steps (raises, 门清, doublers) are the same rising function of the base value for every
    ordinary hand type, so the best of those is the one with the highest base value (the more
    specific on a tie); whole-hand wins (天胡, 地胡) are worked out in full and compared.
    """
    play = profile.play
    if win.how is _EIGHT_FLOWERS:
        if not play.eight_flowers or profile.hands.bahua is None:
            return Refusal(f"八花齐 does not win in the {profile.name} profile")
        if win.flowers != 8:
            return Refusal(f"八花齐 needs all eight flowers, not {win.flowers}")
        hua = count_hua(win.hand, win.flowers, profile)[:1]
        # the eight flowers' 花 as the profile counts a flower (hua.flower each), not 8
        total = sum(i.hua for i in hua)
        base, cap, value, events, doublers = _value(HandType.BAHUA, win, profile, total)
        steps = _steps(events, profile)
        return Score(
            HandType.BAHUA, (), tuple(hua), total, base, cap, steps, value, tuple(doublers)
        )
    if play.ready_declaration and not win.declared_ready:
        return Refusal("敲麻: a player must declare ready before winning")
    if play.missed_win and win.how is not _SELF_DRAW and win.hand.winning_tile in win.missed_tiles:
        tile = win.hand.winning_tile.code
        return Refusal(f"漏胡: {tile} was passed on since the winner's last draw or claim")
    values = profile.hands.values
    allowed = [c for c in _candidates(win) if values[c[0]] is not None]
    if not allowed:
        return Refusal(_why_not(win, profile))
    items = count_hua(win.hand, win.flowers, profile)
    total = 0
    for item in items:
        total += item.hua
    # The best ordinary type by base value (a later candidate is more specific: it wins ties),
    # then the whole-hand wins, each worked out in full.
    finalists = []
    top = -1
    best_ordinary = None
    for c in allowed:
        if c[0] in _SPECIAL:
            finalists.append(c)
        else:
            base = _base_value(values[c[0]], profile, total)
            if base >= top:
                top, best_ordinary = base, c
    if best_ordinary is not None:
        finalists.append(best_ordinary)
    best = None
    for hand_type, pungs in finalists:
        worked = _value(hand_type, win, profile, total)
        rank = allowed.index((hand_type, pungs))
        if best is None or (worked[2], rank) > (best[0][2], best[2]):
            best = (worked, hand_type, rank, pungs)
    assert best is not None
    (base, cap, value, events, doublers), hand_type, _, pungs = best
    return Score(
        hand_type,
        _reading_text(win.hand, pungs),
        tuple(items),
        total,
        base,
        cap,
        _steps(events, profile),
        value,
        tuple(doublers),
    )


def _reading_text(hand: Hand, pungs: bool) -> tuple[str, ...]:
    """The reading scored: its sets and pair (all pungs when the hand type needs them), then
    the melds; an irregular all-honours hand is shown as its tiles."""
    melds = tuple([m.text for m in hand.melds])
    counts = hand.concealed_counts()
    shown = reading_text(counts, all_pungs=pungs)
    if shown is None:
        return (format_tiles(tiles_of(counts)), *melds)
    return (*shown, *melds)


def _why_not(win: Win, profile: Profile) -> str:
    hand = win.hand
    concealed = hand.concealed_counts()
    counts = hand.counts
    if not is_standard(concealed):
        if is_all_honours(counts):
            return f"all honours, but 风一色 does not win in the {profile.name} profile"
        return "the tiles do not make four sets and a pair"
    suits = {s for s in range(3) if any(counts[s * 9 : s * 9 + 9])}
    if len(suits) > 1:
        return (
            "a mixed-suit hand with a chow (平胡) does not win: "
            "only 碰碰胡, 混一色, 清一色 and better"
        )
    return f"this hand does not win in the {profile.name} profile"


def winning_tiles(hand: Hand, profile: Profile) -> list[Tile]:
    """The tiles a 13-tile hand (concealed part and melds) can win on under the profile: its
    waits that make a hand the profile accepts. Empty if the hand is not ready."""
    out = []
    counts = hand.counts
    for t in range(34):
        if counts[t] >= 4:
            continue
        tile = Tile(t)
        trial = Hand(hand.concealed, hand.melds, (), tile)
        if any(profile.hands.values[ht] is not None for ht, _ in _shape_candidates(trial)):
            out.append(tile)
    return out


def is_ready(hand: Hand, profile: Profile) -> bool:
    """Whether a 13-tile hand is ready (听牌) to win under the profile."""
    return bool(winning_tiles(hand, profile))
