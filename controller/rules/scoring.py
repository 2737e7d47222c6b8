"""What a win is worth: the hand type, its 花, the raises and doublers, the caps.

:func:`score_win` returns a :class:`Score` that carries its whole working, so the table can show
players how the value was reached. Payments are :mod:`controller.rules.settlement`'s business.

The steps, in order (``docs/rules.md``): the hand's base value (``base + 花`` capped, or a fixed
number of 勒子); 杠开 and 大吊车 raise a value under one 勒子 to one 勒子; 门清 doubles, up to its
own cap; 开宝 and 荒番 each double the value and the cap with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.rules.analysis import (
    Reading,
    is_all_honours,
    is_all_pungs,
    is_standard,
    readings,
)
from controller.rules.hand import Hand
from controller.rules.melds import MeldKind
from controller.rules.profile import FLOWERS, Profile
from controller.rules.table import dice_huangfan, kaibao
from controller.rules.tiles import Tile, format_tiles
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
        return self in (HandType.BAHUA, HandType.TIANHU, HandType.DIHU)


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


@dataclass(frozen=True, slots=True)
class HuaItem:
    """One source of 花: what it is, the tiles, and the 花 it gives."""

    source: str
    tiles: str
    hua: int


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the working: the rule, what it did, and the value after it."""

    rule: str
    effect: str
    value: int


@dataclass(frozen=True, slots=True)
class Score:
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


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a claimed win is not a win."""

    reason: str


# -- 花 -----------------------------------------------------------------------------------------


def count_hua(hand: Hand, flowers: int, profile: Profile, reading: Reading | None) -> list[HuaItem]:
    """Every source of 花 in a hand, per the profile's table.

    Concealed honour pungs are read from ``reading``; without one (the irregular all-honours
    shape), any three or four alike among the concealed tiles count as a pung.
    """
    hua = profile.hua
    items: list[HuaItem] = []
    if flowers:
        named = "".join(f.chinese for f in hand.flowers) or f"{flowers} flower(s)"
        items.append(HuaItem("flowers", named, flowers * hua.flower))
    for m in hand.melds:
        t = m.tile
        if not m.is_kong and (t.is_number or hua.honours_by_count):
            continue
        if m.kind is MeldKind.CHOW:
            continue
        concealed = m.is_concealed
        how = (
            "concealed kong"
            if concealed
            else ("added kong" if m.kind is MeldKind.ADDED_KONG else "kong")
        )
        if t.is_number:
            value = hua.suit_kong_concealed if concealed else hua.suit_kong_exposed
            items.append(HuaItem(f"suit {how}", format_tiles(m.tiles), value))
        elif hua.honours_by_count:
            continue
        elif t.is_wind:
            if m.is_kong:
                value = hua.wind_kong_concealed if concealed else hua.wind_kong_exposed
                items.append(HuaItem(f"wind {how}", format_tiles(m.tiles), value))
            else:
                items.append(HuaItem("wind pung", format_tiles(m.tiles), hua.wind_pung))
        else:
            if m.is_kong:
                value = hua.dragon_kong_concealed if concealed else hua.dragon_kong_exposed
                items.append(HuaItem(f"dragon {how}", format_tiles(m.tiles), value))
            else:
                items.append(HuaItem("dragon pung", format_tiles(m.tiles), hua.dragon_pung))
    if hua.honours_by_count:
        for t in range(27, 34):
            held = hand.counts[t]
            if not held:
                continue
            tile = Tile(t)
            table = hua.wind_by_count if tile.is_wind else hua.dragon_by_count
            if table[held]:
                kind = "wind" if tile.is_wind else "dragon"
                items.append(HuaItem(f"{kind} x{held} held", tile.code * held, table[held]))
        return items
    concealed = hand.concealed_counts()
    if reading is not None:
        pungs = [s.tile for s in reading.sets if s.tile.is_honour and s.tiles[0] == s.tiles[1]]
    else:
        pungs = [Tile(t) for t in range(27, 34) if concealed[t] >= 3]
    for t in pungs:
        if t.is_wind:
            items.append(HuaItem("wind pung (concealed)", t.code * 3, hua.wind_pung))
        else:
            items.append(HuaItem("dragon pung (concealed)", t.code * 3, hua.dragon_pung))
    return [i for i in items if i.hua]


# -- hand types --------------------------------------------------------------------------------


def _shape_candidates(hand: Hand) -> list[tuple[HandType, Reading | None]]:
    """Every hand type the tiles qualify for by their shape alone (before the profile says
    what may win), each with the reading that makes it."""
    concealed = hand.concealed_counts()
    standard = is_standard(concealed)
    pungs = standard and is_all_pungs(concealed) and all(m.is_pung_or_kong for m in hand.melds)
    all_counts = hand.counts
    suits = {s for s in range(3) if any(all_counts[s * 9 : s * 9 + 9])}
    honours = any(all_counts[27:34])
    out: list[tuple[HandType, Reading | None]] = []
    every = readings(concealed) if standard else []
    pung_reading = next((r for r in every if r.all_pungs), None)
    any_reading = every[0] if every else None
    if standard:
        out.append((HandType.PINGHU, any_reading))
    if pungs:
        out.append((HandType.PENGPENG, pung_reading))
    if len(suits) == 1:
        if standard:
            out.append((HandType.QINGYISE if not honours else HandType.HUNYISE, any_reading))
        if pungs:
            out.append((HandType.QINGPENG if not honours else HandType.HUNPENG, pung_reading))
    if not suits:
        out.append((HandType.FENGYISE, any_reading))
        if pungs:
            out.append((HandType.FENGPENG, pung_reading))
    return out


def _candidates(win: Win) -> list[tuple[HandType, Reading | None]]:
    """The shape candidates, and 天胡 / 地胡 when the win came in the first go-round."""
    out = _shape_candidates(win.hand)
    if win.first_turn and out and win.dealer is not None:
        reading = out[0][1]
        if win.winner == win.dealer and win.how is WinType.SELF_DRAW:
            out.append((HandType.TIANHU, reading))
        elif win.winner != win.dealer:
            out.append((HandType.DIHU, reading))
    return out


def _is_gangkai(win: Win, profile: Profile) -> bool:
    b = profile.bonuses
    if win.how is WinType.SELF_DRAW:
        return win.after_kong or (win.after_flower and b.gangkai_after_flower)
    if b.gangkai_on_others_kong:
        return win.how is WinType.ROBBING_KONG or (win.how is WinType.DISCARD and win.after_kong)
    return False


def is_dadiaoche(hand: Hand) -> bool:
    """大吊车: every other tile laid down in four melds, winning on the single one left."""
    return len(hand.melds) == 4 and len(hand.concealed) == 1


def huangfan_in_effect(win: Win, profile: Profile) -> int:
    """The 荒番 counter during this hand (the dice may raise it under dice-荒番)."""
    if not profile.huangfan.enabled:
        return 0
    h = win.huangfan
    if profile.huangfan.dice:
        h += dice_huangfan(win.dice)
    return h


def _value(
    hand_type: HandType, win: Win, profile: Profile, hua_total: int
) -> tuple[int, int, int, list[Step], list[str]]:
    """(base, cap, value, steps, doublers) of one candidate hand type."""
    units = profile.units
    lezi = units.lezi
    setting = getattr(profile.hands, hand_type.value)
    steps: list[Step] = []
    if setting == FLOWERS:
        raw = units.base + units.flower * hua_total
        cap = profile.hands.flower_hand_cap * lezi
        v = min(raw, cap)
        steps.append(Step(hand_type.chinese, f"底 {units.base} + {hua_total} 花 = {raw}", raw))
        if raw > cap:
            steps.append(Step("勒子", f"capped at {cap // lezi} 勒子", v))
    else:
        v = cap = int(setting) * lezi
        steps.append(Step(hand_type.chinese, f"{setting} 勒子", v))
    base = v
    multiplier = 1
    doublers: list[str] = []
    b = profile.bonuses
    if not hand_type.is_special:
        raises = []
        if _is_gangkai(win, profile):
            raises.append(("杠开", b.gangkai))
        if is_dadiaoche(win.hand):
            raises.append(("大吊车", b.dadiaoche))
        for name, mode in raises:
            if mode == "raise":
                floor = b.raise_to * lezi
                if v < floor:
                    v = floor
                    cap = max(cap, floor)
                    steps.append(Step(name, f"raised to {b.raise_to} 勒子", v))
                else:
                    steps.append(Step(name, f"already {b.raise_to} 勒子 or more: no change", v))
            elif mode == "double":
                multiplier *= 2
                doublers.append(name)
        if win.hand.is_concealed and b.menqing != "none":
            if b.menqing == "double":
                multiplier *= 2
                doublers.append("门清")
            else:
                top = b.menqing_cap * lezi
                if v < top:
                    v = min(2 * v, top)
                    cap = max(cap, top)
                    steps.append(Step("门清", f"x2, up to {b.menqing_cap} 勒子", v))
                else:
                    steps.append(
                        Step("门清", f"already {b.menqing_cap} 勒子 or more: no change", v)
                    )
    if kaibao(win.dice, profile):
        multiplier *= 2
        doublers.append("开宝")
    if huangfan_in_effect(win, profile) > 0:
        multiplier *= 2
        doublers.append("荒番")
    if multiplier > 1:
        value = v * multiplier
        steps.append(Step(" ".join(doublers), f"x{multiplier}, cap with it", value))
        cap *= multiplier
    else:
        value = v
    return base, cap, value, steps, doublers


def score_win(win: Win, profile: Profile) -> Score | Refusal:
    """Score one win under a profile: its :class:`Score`, or the :class:`Refusal` saying why
    it is not a win."""
    play = profile.play
    if win.how is WinType.EIGHT_FLOWERS:
        if not play.eight_flowers or profile.hands.bahua is None:
            return Refusal(f"八花齐 does not win in the {profile.name} profile")
        if win.flowers != 8:
            return Refusal(f"八花齐 needs all eight flowers, not {win.flowers}")
        hua = count_hua(win.hand, win.flowers, profile, None)[:1]
        base, cap, value, steps, doublers = _value(HandType.BAHUA, win, profile, 8)
        return Score(
            HandType.BAHUA, (), tuple(hua), 8, base, cap, tuple(steps), value, tuple(doublers)
        )
    if play.ready_declaration and not win.declared_ready:
        return Refusal("敲麻: a player must declare ready before winning")
    if (
        play.missed_win
        and win.how is not WinType.SELF_DRAW
        and win.hand.winning_tile in win.missed_tiles
    ):
        tile = win.hand.winning_tile.code
        return Refusal(f"漏胡: {tile} was passed on since the winner's last draw or claim")
    best: tuple[tuple[int, int], Score] | None = None
    for rank, (hand_type, reading) in enumerate(_candidates(win)):
        if getattr(profile.hands, hand_type.value) is None:
            continue
        items = count_hua(win.hand, win.flowers, profile, reading)
        total = sum(i.hua for i in items)
        base, cap, value, steps, doublers = _value(hand_type, win, profile, total)
        shown = _reading_text(win.hand, reading)
        score = Score(
            hand_type, shown, tuple(items), total, base, cap, tuple(steps), value, tuple(doublers)
        )
        key = (value, rank)
        if best is None or key > best[0]:
            best = (key, score)
    if best is None:
        return Refusal(_why_not(win, profile))
    return best[1]


def _reading_text(hand: Hand, reading: Reading | None) -> tuple[str, ...]:
    melds = tuple(m.notation() for m in hand.melds)
    if reading is None:
        tiles = [*hand.concealed, *([] if hand.winning_tile is None else [hand.winning_tile])]
        return (format_tiles(sorted(tiles)), *melds)
    return (*reading.describe(), *melds)


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
        if any(getattr(profile.hands, ht.value) is not None for ht, _ in _shape_candidates(trial)):
            out.append(tile)
    return out


def is_ready(hand: Hand, profile: Profile) -> bool:
    """Whether a 13-tile hand is ready (听牌) to win under the profile."""
    return bool(winning_tiles(hand, profile))
