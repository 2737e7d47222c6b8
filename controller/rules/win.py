"""The description of one win, as the controller (or a user of ``mahjong-table score``) gives it.

:func:`win_from_json` reads the JSON form documented in ``docs/scoring.md``; every problem
raises :class:`WinInputError` or :class:`HandError` with ``field`` naming the input field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from controller.rules.errors import HandError, MahjongTableError, WinInputError, show, show_key
from controller.rules.hand import Hand
from controller.rules.melds import SEATS, Meld, MeldKind
from controller.rules.stake import MAX_STAKE, STAKE_RULE, parse_stake
from controller.rules.tiles import Tile, format_tiles, parse_tiles


class WinType(StrEnum):
    SELF_DRAW = "self_draw"  # 自摸
    DISCARD = "discard"  # 点炮 / 冲
    ROBBING_KONG = "robbing_kong"  # 抢杠
    EIGHT_FLOWERS = "eight_flowers"  # 八花齐


@dataclass(frozen=True, slots=True)
class Win:
    """Everything the scorer needs to know about one win.

    ``hand`` holds the winner's concealed tiles *without* the winning tile, their melds, their
    flowers by name when known, and the winning tile (None for 八花齐). ``flowers`` is the number
    of flowers (it may be given without names). ``discarder`` is the seat that discarded the
    winning tile or whose added kong was robbed. ``bound_pairs`` lists (a, b): a claimed three
    or more discards from b in this hand (承包). ``discarder_ready`` says whether the discarder
    was ready (听牌); it matters only when the winner is bound to someone.
    """

    winner: int
    hand: Hand
    how: WinType
    flowers: int = 0
    discarder: int | None = None
    after_kong: bool = False
    after_flower: bool = False
    dice: tuple[int, int] | None = None
    huangfan: int = 0
    bound_pairs: tuple[tuple[int, int], ...] = ()
    discarder_ready: bool | None = None
    dealer: int | None = None
    first_turn: bool = False
    declared_ready: bool = False
    missed_tiles: tuple[Tile, ...] = ()
    stake: Fraction | int = 1

    def __post_init__(self) -> None:
        _seat(self.winner, "winner")
        how = self.how
        if type(how) is not WinType:
            # the scorer tests the kind by identity: "self_draw" would pass as no kind at all
            try:
                how = WinType(how)
            except ValueError:
                kinds = ", ".join(k.value for k in WinType)
                raise WinInputError(f"one of {kinds}, not {show(how)}", field="win.type") from None
            object.__setattr__(self, "how", how)
        if how in (WinType.DISCARD, WinType.ROBBING_KONG):
            if self.discarder is None:
                raise WinInputError(
                    f"a {how.value} win needs the seat it came from", field="win.from"
                )
            _seat(self.discarder, "win.from")
            if self.discarder == self.winner:
                raise WinInputError("a player cannot win on their own tile", field="win.from")
        elif self.discarder is not None:
            raise WinInputError(f"a {how.value} win comes from no other seat", field="win.from")
        if self.dealer is not None:
            _seat(self.dealer, "dealer")
        elif self.first_turn:
            raise WinInputError(
                "a win in the first go-round (天胡, 地胡) needs to know the dealer", field="dealer"
            )
        if isinstance(self.flowers, bool) or not isinstance(self.flowers, int):
            raise WinInputError(f"a count of flowers, not {show(self.flowers)}", field="flowers")
        if not 0 <= self.flowers <= 8:
            raise WinInputError(f"there are eight flowers, not {self.flowers}", field="flowers")
        if self.hand.flowers and len(self.hand.flowers) != self.flowers:
            raise WinInputError("the flower count and the flowers named differ", field="flowers")
        if self.dice is not None and not _good_dice(self.dice):
            raise WinInputError(f"two dice, each 1-6, not {show(self.dice)}", field="dice")
        if (
            isinstance(self.huangfan, bool)
            or not isinstance(self.huangfan, int)
            or self.huangfan < 0
        ):
            raise WinInputError(
                f"a count of 0 or more, not {show(self.huangfan)}", field="huangfan"
            )
        self._check_missed()
        for pair in self.bound_pairs:
            if not isinstance(pair, tuple | list) or len(pair) != 2 or pair[0] == pair[1]:
                raise WinInputError(
                    f"[a, b] with two different seats, not {show(pair)}", field="bound_pairs"
                )
            for s in pair:
                _seat(s, "bound_pairs")
        # A whole stake is kept as an int: exact, and much cheaper to multiply than a Fraction.
        if isinstance(self.stake, bool) or not isinstance(self.stake, int | Fraction):
            raise WinInputError(
                f"a whole number or a Fraction, not {show(self.stake)}", field="stake"
            )
        if not 0 < self.stake <= MAX_STAKE:
            raise WinInputError(
                f"above 0 and at most {MAX_STAKE}, not {show(self.stake)}", field="stake"
            )
        stake = Fraction(self.stake)
        object.__setattr__(self, "stake", stake.numerator if stake.denominator == 1 else stake)
        self._check_hand()

    def to_json(self) -> dict[str, Any]:
        """The win as ``docs/scoring.md`` writes it; :func:`win_from_json` reads it back to an
        equal :class:`Win`. Fields at their defaults are left out, so a stored win stays short
        and says only what was known; a stake that is not whole is written as a fraction
        (``"1/2"``), which the reader takes exactly."""
        hand = self.hand
        out: dict[str, Any] = {
            "winner": self.winner,
            "concealed": format_tiles(hand.concealed),
            "win": {"type": self.how.value}
            | ({} if self.discarder is None else {"from": self.discarder}),
        }
        if hand.winning_tile is not None:
            out["winning_tile"] = hand.winning_tile.code
        if hand.melds:
            out["melds"] = [m.to_json() for m in hand.melds]
        if hand.flowers:
            out["flowers"] = [f.code for f in hand.flowers]
        elif self.flowers:
            out["flowers"] = self.flowers
        optional: dict[str, Any] = {
            "after_kong": self.after_kong,
            "after_flower": self.after_flower,
            "dice": list(self.dice) if self.dice is not None else None,
            "huangfan": self.huangfan,
            "bound_pairs": [list(p) for p in self.bound_pairs],
            "discarder_ready": self.discarder_ready,
            "dealer": self.dealer,
            "first_turn": self.first_turn,
            "declared_ready": self.declared_ready,
            "missed_tiles": [t.code for t in self.missed_tiles],
        }
        # left out where at its default (0 is a seat, so each field says its own default)
        defaults = {"huangfan": 0, "dealer": None, "dice": None, "discarder_ready": None}
        out |= {k: v for k, v in optional.items() if v != defaults.get(k, False) and v != []}
        stake = Fraction(self.stake)
        if stake != 1:
            out["stake"] = stake.numerator if stake.denominator == 1 else str(stake)
        return out

    def _check_missed(self) -> None:
        """Each tile exists four times: the copies passed on and those in the winner's hand
        (concealed, melded, the winning tile) are at most four."""
        missed = self.missed_tiles
        if not isinstance(missed, tuple | list) or not all(isinstance(t, Tile) for t in missed):
            raise WinInputError(f"a list of tiles, not {show(missed)}", field="missed_tiles")
        held = self.hand.counts
        for tile in dict.fromkeys(missed):
            if tile.is_flower:
                raise WinInputError(
                    f"a playing tile, not the flower {tile.chinese}", field="missed_tiles"
                )
            passed = missed.count(tile)
            if passed + held[tile] > 4:
                raise WinInputError(
                    f"there are four of each tile: {tile.code} passed on {passed} time(s) "
                    f"with {held[tile]} in the hand",
                    field="missed_tiles",
                )

    def _check_hand(self) -> None:
        hand = self.hand
        prev = (self.winner - 1) % SEATS
        for i, m in enumerate(hand.melds):
            name = f"melds[{i}]"
            if m.source == self.winner:
                raise WinInputError("a meld cannot be claimed from its owner", field=f"{name}.from")
            if m.kind is MeldKind.CHOW and m.source is not None and m.source != prev:
                raise WinInputError(
                    f"only the player before you (seat {prev}) can be chowed from, not seat "
                    f"{m.source}",
                    field=f"{name}.from",
                )
        if self.how is WinType.EIGHT_FLOWERS:
            if hand.winning_tile is not None:
                raise WinInputError("八花齐 has no winning tile", field="winning_tile")
            if hand.concealed:
                size = len(hand.concealed) + 3 * len(hand.melds)
                if size not in (13, 14):
                    raise WinInputError(
                        f"with {len(hand.melds)} meld(s) a hand holds {13 - 3 * len(hand.melds)} "
                        f"or {14 - 3 * len(hand.melds)} concealed tiles, not {len(hand.concealed)}",
                        field="concealed",
                    )
            return
        if hand.winning_tile is None:
            raise WinInputError("missing", field="winning_tile")
        try:
            hand.check_size(complete=True)
        except HandError as exc:
            raise HandError(exc.message, field="concealed") from None
        if self.how is WinType.ROBBING_KONG and hand.counts[hand.winning_tile] > 1:
            raise WinInputError(
                "the robbed tile's other three copies are in the konger's pung, so the winner "
                f"cannot hold a {hand.winning_tile.code}",
                field="winning_tile",
            )
        if (
            self.after_kong
            and self.how is WinType.SELF_DRAW
            and not any(m.is_kong for m in hand.melds)
        ):
            raise WinInputError(
                "a win after a kong needs a kong among the melds", field="after_kong"
            )
        if self.after_flower and self.how is WinType.SELF_DRAW and self.flowers == 0:
            raise WinInputError("a win after a flower needs a flower", field="after_flower")


def _good_dice(dice: Any) -> bool:
    return (
        isinstance(dice, tuple | list)
        and len(dice) == 2
        and all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 6 for d in dice)
    )


def _seat(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEATS:
        raise WinInputError(f"a seat is 0-3, not {show(value)}", field=name)
    return value


# -- JSON ------------------------------------------------------------------------------------

_FIELDS = {
    "profile",
    "stake",
    "winner",
    "concealed",
    "winning_tile",
    "melds",
    "flowers",
    "win",
    "after_kong",
    "after_flower",
    "dice",
    "huangfan",
    "bound_pairs",
    "discarder_ready",
    "discarder_hand",
    "dealer",
    "first_turn",
    "declared_ready",
    "missed_tiles",
}


def win_from_json(data: Any, *, ready_check: Any = None) -> Win:
    """Build a :class:`Win` from its JSON form (a parsed object).

    ``ready_check(hand) -> bool`` decides whether a ``discarder_hand`` is ready; the scorer
    passes its own (it depends on the profile).
    """
    # each step raises on the first mistake it finds, so the order of the steps is the order
    # in which mistakes are reported
    _check_known_fields(data)
    win, how = _win_how(data)
    hand, flower_count = _hand_from_json(data)
    ready = _discarder_ready(data, ready_check)
    dice = _dice(data)
    pairs = _bound_pairs(data)
    missed_tiles = _tile_list(data.get("missed_tiles", []), "missed_tiles", _one_tile)

    return _field(
        None,
        lambda: Win(
            winner=_required(data, "winner"),
            hand=hand,
            how=how,
            flowers=flower_count,
            discarder=win.get("from"),
            after_kong=_flag(data, "after_kong"),
            after_flower=_flag(data, "after_flower"),
            dice=dice,
            huangfan=data.get("huangfan", 0),
            bound_pairs=tuple(tuple(p) for p in pairs),
            discarder_ready=ready,
            dealer=data.get("dealer"),
            first_turn=_flag(data, "first_turn"),
            declared_ready=_flag(data, "declared_ready"),
            missed_tiles=tuple(missed_tiles),
            stake=_stake(data.get("stake", 1)),
        ),
    )


def _check_known_fields(data: Any) -> None:
    """Refuse anything but an object of the fields a win has."""
    if not isinstance(data, Mapping):
        raise WinInputError(f"a win is a JSON object, not {type(data).__name__}")
    unknown = set(data) - _FIELDS
    if unknown:
        raise WinInputError(
            f"unknown field (known: {', '.join(sorted(_FIELDS))})", field=_first(unknown)
        )


def _win_how(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], WinType]:
    """The ``win`` object and its type (its ``from`` is read when the :class:`Win` is built)."""
    win = _required(data, "win")
    if not isinstance(win, Mapping):
        raise WinInputError('an object like {"type": "discard", "from": 3}', field="win")
    try:
        how = WinType(_required(win, "type", "win.type"))
    except ValueError:
        names = ", ".join(w.value for w in WinType)
        raise WinInputError(
            f"one of {names}, not {show(win.get('type'))}", field="win.type"
        ) from None
    extra = set(win) - {"type", "from"}
    if extra:
        raise WinInputError("unknown field (known: type, from)", field=f"win.{_first(extra)}")
    return win, how


def _hand_from_json(data: Mapping[str, Any]) -> tuple[Hand, int]:
    """The winner's hand, and how many flowers they hold (named flowers go into the hand)."""
    melds = _melds(data.get("melds", []), "melds")
    concealed = _tiles(data.get("concealed", ""), "concealed")
    flowers_named, flower_count = _flowers(data.get("flowers", 0))
    winning = data.get("winning_tile")
    winning_tile = None if winning is None else _one_tile(winning, "winning_tile")
    hand = _field(
        "concealed",
        lambda: Hand(tuple(concealed), tuple(melds), tuple(flowers_named), winning_tile),
    )
    return hand, flower_count


def _discarder_ready(data: Mapping[str, Any], ready_check: Any) -> bool | None:
    """Whether the discarder was ready: given outright, or judged by ``ready_check`` from the
    discarder's hand; None where neither is given."""
    ready = data.get("discarder_ready")
    if ready is not None and not isinstance(ready, bool):
        raise WinInputError(f"true or false, not {show(ready)}", field="discarder_ready")
    if "discarder_hand" not in data:
        return ready
    if ready is not None:
        raise WinInputError(
            "give discarder_ready or discarder_hand, not both", field="discarder_hand"
        )
    dh = data["discarder_hand"]
    if not isinstance(dh, Mapping):
        raise WinInputError(
            'an object like {"concealed": "...", "melds": [...]}', field="discarder_hand"
        )
    extra = set(dh) - {"concealed", "melds"}
    if extra:
        raise WinInputError(
            "unknown field (known: concealed, melds)",
            field=f"discarder_hand.{_first(extra)}",
        )
    # the discarder's hand says only whether they were ready: its kongs' kinds do not count
    d_melds = _melds(dh.get("melds", []), "discarder_hand.melds", scored=False)
    d_tiles = _tiles(dh.get("concealed", ""), "discarder_hand.concealed")
    d_hand = _field("discarder_hand", lambda: Hand(tuple(d_tiles), tuple(d_melds)))
    _field("discarder_hand.concealed", lambda: d_hand.check_size(complete=False))
    if ready_check is None:
        raise WinInputError("cannot judge readiness here", field="discarder_hand")
    return bool(ready_check(d_hand))


def _dice(data: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The two dice thrown, if given (their values are checked when the :class:`Win` is built)."""
    dice = data.get("dice")
    if dice is None:
        return None
    if not isinstance(dice, list | tuple) or len(dice) != 2:
        raise WinInputError(f"two dice like [2, 5], not {show(dice)}", field="dice")
    return tuple(dice)


def _bound_pairs(data: Mapping[str, Any]) -> list[Any] | tuple[Any, ...]:
    """The ``bound_pairs`` list, each an ``[a, b]`` pair (its seats checked by :class:`Win`)."""
    pairs = data.get("bound_pairs", [])
    if not isinstance(pairs, list | tuple) or not all(
        isinstance(p, list | tuple) and len(p) == 2 for p in pairs
    ):
        raise WinInputError(f"a list of [a, b] seat pairs, not {show(pairs)}", field="bound_pairs")
    return pairs


def _field(name: str | None, build: Any) -> Any:
    """Run ``build``; a hand error without a field is given ``name``."""
    try:
        return build()
    except MahjongTableError as exc:
        if exc.field is None and name is not None:
            exc.field = name
        raise


def _required(data: Mapping[str, Any], key: str, name: str | None = None) -> Any:
    if key not in data or data[key] is None:
        raise WinInputError("missing", field=name or key)
    return data[key]


def _flag(data: Mapping[str, Any], key: str) -> bool:
    v = data.get(key, False)
    if not isinstance(v, bool):
        raise WinInputError(f"true or false, not {show(v)}", field=key)
    return v


def _stake(v: Any) -> Fraction:
    # the table's config reads a stake by the same rule; "1/2" is how Win.to_json writes one
    try:
        return parse_stake(v, fraction_text=True)
    except ValueError:
        raise WinInputError(
            f'{STAKE_RULE}, such as 1, 0.5 or "0.5", not {show(v)}', field="stake"
        ) from None


def _first(keys: Any) -> str:
    """The first of some unknown keys (a Python caller's may be of any type), as a message
    may name it: quoted, control characters escaped, unless a plain name."""
    return min(show_key(k) for k in keys)


def _tiles(v: Any, name: str) -> list[Tile]:
    if not isinstance(v, str):
        raise WinInputError(f"tiles written as text, not {show(v)}", field=name)
    return _field(name, lambda: parse_tiles(v))


def _one_tile(v: Any, name: str) -> Tile:
    tiles = _tiles(v, name)
    if len(tiles) != 1:
        raise WinInputError(f"one tile, not {show(v)}", field=name)
    if tiles[0].is_flower:
        raise WinInputError(f"a playing tile, not the flower {tiles[0].chinese}", field=name)
    return tiles[0]


def _flowers(v: Any) -> tuple[list[Tile], int]:
    if isinstance(v, bool):
        raise WinInputError(f"a count or a list of flowers, not {show(v)}", field="flowers")
    if isinstance(v, int):
        if not 0 <= v <= 8:
            raise WinInputError(f"there are eight flowers, not {v}", field="flowers")
        return [], v
    tiles = _tile_list(v, "flowers", _one_tile_any)
    for t in tiles:
        if not t.is_flower:
            raise WinInputError(f"{t.code} is not a flower", field="flowers")
    if len(set(tiles)) != len(tiles):
        raise WinInputError("each flower exists once", field="flowers")
    return tiles, len(tiles)


def _tile_list(v: Any, name: str, one: Any) -> list[Tile]:
    """Tiles given as one string (``"春梅"``) or as a list of single tiles (``["春", "5f"]``)."""
    if isinstance(v, str):
        return _tiles(v, name)
    if isinstance(v, list | tuple):
        return [one(t, f"{name}[{i}]") for i, t in enumerate(v)]
    raise WinInputError(f"tiles as text or a list, not {show(v)}", field=name)


def _one_tile_any(v: Any, name: str) -> Tile:
    tiles = _tiles(v, name)
    if len(tiles) != 1:
        raise WinInputError(f"one flower, not {show(v)}", field=name)
    return tiles[0]


def _melds(v: Any, name: str, *, scored: bool = True) -> list[Meld]:
    if not isinstance(v, list | tuple):
        raise WinInputError("a list of melds", field=name)
    return [_meld(m, f"{name}[{i}]", scored=scored) for i, m in enumerate(v)]


def _meld(m: Any, here: str, *, scored: bool) -> Meld:
    if not isinstance(m, Mapping):
        raise WinInputError(
            'an object like {"kind": "pung", "tiles": "EEE", "from": 1}', field=here
        )
    extra = set(m) - {"kind", "tiles", "from", "concealed", "added"}
    if extra:
        raise WinInputError(
            "unknown field (known: kind, tiles, from, concealed, added)",
            field=f"{here}.{_first(extra)}",
        )
    kind_text = _required(m, "kind", f"{here}.kind")
    concealed = m.get("concealed", False)
    added = m.get("added", False)
    if not isinstance(concealed, bool) or not isinstance(added, bool):
        raise WinInputError("concealed and added are true or false", field=here)
    if not isinstance(kind_text, str):
        raise WinInputError(f"a meld kind as text, not {show(kind_text)}", field=f"{here}.kind")
    kind_name = kind_text
    if concealed or added:
        if kind_name != "kong" or (concealed and added):
            raise WinInputError(
                f"only a kong is concealed or added (and not both), not {show(kind_name)}",
                field=here,
            )
        kind_name = (MeldKind.CONCEALED_KONG if concealed else MeldKind.ADDED_KONG).value
    tiles = _tiles(_required(m, "tiles", f"{here}.tiles"), f"{here}.tiles")
    source = m.get("from")
    if source is not None:
        _seat(source, f"{here}.from")
    elif scored and kind_name == MeldKind.KONG.value:
        # scored as an exposed kong, a 暗杠 left without "concealed" loses its 花 and 门清
        raise WinInputError(
            'an exposed kong needs "from" (the seat it was claimed from); a concealed '
            'kong says "concealed": true',
            field=here,
        )
    return _field(here, lambda: Meld.of(kind_name, tuple(tiles), source))


def meld_from_json(data: Any, *, scored: bool = True) -> Meld:
    """One meld from its JSON form, as a win's ``melds`` give it: ``{"kind": "pung",
    "tiles": "EEE", "from": 1}`` (see :meth:`Meld.to_json`). ``scored`` refuses an exposed
    kong that does not say whom it was claimed from, as a winner's melds must."""
    return _meld(data, "meld", scored=scored)


def wins_from_json(data: Any, *, ready_check: Any = None) -> list[Win]:
    """One win (an object), or several on one discard (a list, or ``{"wins": [...]}``)."""
    if isinstance(data, Mapping) and "wins" in data:
        if set(data) != {"wins"}:
            raise WinInputError(
                "an object with only a wins list", field=_first(set(data) - {"wins"})
            )
        data = data["wins"]
    if isinstance(data, Mapping):
        return [win_from_json(data, ready_check=ready_check)]
    if not isinstance(data, Sequence) or isinstance(data, str) or not data:
        raise WinInputError("a win object or a non-empty list of wins")
    out = []
    for i, item in enumerate(data):
        try:
            out.append(win_from_json(item, ready_check=ready_check))
        except MahjongTableError as exc:
            exc.field = f"wins[{i}].{exc.field}" if exc.field else f"wins[{i}]"
            raise
    return out
