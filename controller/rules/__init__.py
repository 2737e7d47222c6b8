"""The Shanghai mahjong rules engine: pure functions and values, no I/O, no clock.

It imports nothing of the project outside this package, so anything may use it. The usual
entry points::

    from controller.rules import Hand, Win, WinType, settle, score_win
    from controller.profiles import load_profile   # reading profile files is the caller's I/O

    profile = load_profile("shanghai")
    hand = Hand.parse("111p 222p 333p 444p 5p +5p")
    result = settle([Win(winner=0, hand=hand, how=WinType.SELF_DRAW)], profile)
"""

from controller.rules.analysis import completing_tiles, is_standard, readings
from controller.rules.errors import (
    HandError,
    MahjongTableError,
    ProfileError,
    RulesError,
    WinInputError,
)
from controller.rules.hand import Hand
from controller.rules.melds import Meld, MeldKind
from controller.rules.profile import Profile, parse_profile_text
from controller.rules.report import format_settlement, settlement_to_dict
from controller.rules.scoring import HandType, Score, is_ready, score_win, winning_tiles
from controller.rules.settlement import Payment, Settlement, settle
from controller.rules.stake import MAX_STAKE, parse_stake
from controller.rules.table import (
    HuangfanCounter,
    WallBreak,
    dice_huangfan,
    kaibao,
    next_dealer,
    wall_break,
)
from controller.rules.tiles import Suit, Tile, format_tiles, parse_tiles
from controller.rules.win import Win, WinType, meld_from_json, win_from_json, wins_from_json

__all__ = [
    "MAX_STAKE",
    "Hand",
    "HandError",
    "HandType",
    "HuangfanCounter",
    "MahjongTableError",
    "Meld",
    "MeldKind",
    "Payment",
    "Profile",
    "ProfileError",
    "RulesError",
    "Score",
    "Settlement",
    "Suit",
    "Tile",
    "WallBreak",
    "Win",
    "WinInputError",
    "WinType",
    "completing_tiles",
    "dice_huangfan",
    "format_settlement",
    "format_tiles",
    "is_ready",
    "is_standard",
    "kaibao",
    "meld_from_json",
    "next_dealer",
    "parse_profile_text",
    "parse_stake",
    "parse_tiles",
    "readings",
    "score_win",
    "settle",
    "settlement_to_dict",
    "wall_break",
    "win_from_json",
    "winning_tiles",
    "wins_from_json",
]
