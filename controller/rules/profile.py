"""Rules profiles: every variant the scorer knows, selected by data.

A profile is a TOML document (the built-in ones are in ``controller/profiles/``; the default,
``shanghai.toml``, lists and explains every key). A profile may ``extends`` another and set only
what differs. This module validates a parsed document into a :class:`Profile`; it does no I/O:
reading files and resolving ``extends`` by name is the job of ``controller.profiles``.

A bad document raises :class:`ProfileError` whose ``field`` names the key (``hands.qingpeng``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from controller.rules.errors import ProfileError

FLOWERS = "flowers"


# -- value checkers ----------------------------------------------------------------------
# Each takes (value, field name) and returns the value to store or raises ProfileError.


def _int(lo: int = 0, hi: int = 10_000) -> Callable[[Any, str], int]:
    def check(v: Any, name: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ProfileError(f"must be a whole number, not {v!r}", field=name)
        if not lo <= v <= hi:
            raise ProfileError(f"must be between {lo} and {hi}, not {v}", field=name)
        return v

    return check


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise ProfileError(f"must be true or false, not {v!r}", field=name)
    return v


def _text(v: Any, name: str) -> str:
    if not isinstance(v, str):
        raise ProfileError(f"must be text, not {v!r}", field=name)
    return v


def _choice(*options: str) -> Callable[[Any, str], str]:
    def check(v: Any, name: str) -> str:
        if v not in options:
            raise ProfileError(f"must be one of {', '.join(options)}; not {v!r}", field=name)
        return v

    return check


def _ints(length: int, lo: int = 0, hi: int = 100) -> Callable[[Any, str], tuple[int, ...]]:
    item = _int(lo, hi)

    def check(v: Any, name: str) -> tuple[int, ...]:
        if not isinstance(v, list | tuple) or len(v) != length:
            raise ProfileError(f"must be a list of {length} whole numbers, not {v!r}", field=name)
        return tuple(item(x, f"{name}[{i}]") for i, x in enumerate(v))

    return check


def _hand_value(v: Any, name: str) -> str | int | None:
    """ "flowers", a number of 勒子, or false (not a winning hand)."""
    if v is False:
        return None
    if v == FLOWERS:
        return FLOWERS
    if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 100:
        return v
    raise ProfileError(
        f'must be "flowers", a number of 勒子 (1-100), or false; not {v!r}', field=name
    )


# -- the profile ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Units:
    base: int
    flower: int
    lezi: int


@dataclass(frozen=True, slots=True)
class Hands:
    """Value of each winning hand: ``"flowers"``, a number of 勒子, or None (cannot win)."""

    pengpeng: str | int | None
    hunyise: str | int | None
    qingyise: str | int | None
    hunpeng: str | int | None
    qingpeng: str | int | None
    fengyise: str | int | None
    fengpeng: str | int | None
    bahua: str | int | None
    tianhu: str | int | None
    dihu: str | int | None
    pinghu: str | int | None
    flower_hand_cap: int
    values: dict[str, str | int | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Scoring looks every candidate hand type up by name: one dict, built once.
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        values.pop("flower_hand_cap")
        object.__setattr__(self, "values", values)


@dataclass(frozen=True, slots=True)
class Hua:
    flower: int
    suit_kong_exposed: int
    suit_kong_concealed: int
    wind_pung: int
    wind_kong_exposed: int
    wind_kong_concealed: int
    dragon_pung: int
    dragon_kong_exposed: int
    dragon_kong_concealed: int
    honours_by_count: bool
    wind_by_count: tuple[int, ...]
    dragon_by_count: tuple[int, ...]
    table: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # 花 by meld source, as ``Meld.hua_source`` names them: scoring looks melds up here.
        table = {
            "suit kong": self.suit_kong_exposed,
            "suit added kong": self.suit_kong_exposed,
            "suit concealed kong": self.suit_kong_concealed,
        }
        for group in ("wind", "dragon"):
            table[f"{group} pung"] = getattr(self, f"{group}_pung")
            table[f"{group} kong"] = getattr(self, f"{group}_kong_exposed")
            table[f"{group} added kong"] = getattr(self, f"{group}_kong_exposed")
            table[f"{group} concealed kong"] = getattr(self, f"{group}_kong_concealed")
        object.__setattr__(self, "table", table)


@dataclass(frozen=True, slots=True)
class Bonuses:
    gangkai: str
    gangkai_after_flower: bool
    gangkai_on_others_kong: bool
    dadiaoche: str
    raise_to: int
    menqing: str
    menqing_cap: int
    kaibao: str


@dataclass(frozen=True, slots=True)
class Huangfan:
    enabled: bool
    accumulate: bool
    decrement: str
    dice: bool


@dataclass(frozen=True, slots=True)
class Payments:
    robbing_kong_shares: int
    payer_cap: int


@dataclass(frozen=True, slots=True)
class Chengbao:
    enabled: bool
    min_claims: int
    self_draw: int
    partner_discard: int
    third_unready: tuple[int, ...]
    third_ready: tuple[int, ...]
    robbing_kong: int
    both_win_unready: int
    both_win_ready: int
    mutual_multiplier: int


@dataclass(frozen=True, slots=True)
class Play:
    ready_declaration: bool
    missed_win: bool
    multiple_winners: bool
    eight_flowers: bool


_SECTIONS: dict[str, tuple[type, dict[str, Callable[[Any, str], Any]]]] = {
    "units": (Units, {"base": _int(0), "flower": _int(0), "lezi": _int(1)}),
    "hands": (
        Hands,
        {
            **{
                k: _hand_value
                for k in (
                    "pengpeng",
                    "hunyise",
                    "qingyise",
                    "hunpeng",
                    "qingpeng",
                    "fengyise",
                    "fengpeng",
                    "bahua",
                    "tianhu",
                    "dihu",
                    "pinghu",
                )
            },
            "flower_hand_cap": _int(1, 100),
        },
    ),
    "hua": (
        Hua,
        {
            **{
                k: _int(0, 100)
                for k in (
                    "flower",
                    "suit_kong_exposed",
                    "suit_kong_concealed",
                    "wind_pung",
                    "wind_kong_exposed",
                    "wind_kong_concealed",
                    "dragon_pung",
                    "dragon_kong_exposed",
                    "dragon_kong_concealed",
                )
            },
            "honours_by_count": _bool,
            "wind_by_count": _ints(5),
            "dragon_by_count": _ints(5),
        },
    ),
    "bonuses": (
        Bonuses,
        {
            "gangkai": _choice("raise", "double", "none"),
            "gangkai_after_flower": _bool,
            "gangkai_on_others_kong": _bool,
            "dadiaoche": _choice("raise", "double", "none"),
            "raise_to": _int(1, 100),
            "menqing": _choice("double_to_cap", "double", "none"),
            "menqing_cap": _int(1, 100),
            "kaibao": _choice("ones_and_fours", "any_double", "none"),
        },
    ),
    "huangfan": (
        Huangfan,
        {
            "enabled": _bool,
            "accumulate": _bool,
            "decrement": _choice("per_hand", "per_winner"),
            "dice": _bool,
        },
    ),
    "payments": (Payments, {"robbing_kong_shares": _int(1, 100), "payer_cap": _int(0, 1000)}),
    "chengbao": (
        Chengbao,
        {
            "enabled": _bool,
            "min_claims": _int(1, 4),
            "self_draw": _int(0, 100),
            "partner_discard": _int(0, 100),
            "third_unready": _ints(2),
            "third_ready": _ints(2),
            "robbing_kong": _int(0, 100),
            "both_win_unready": _int(0, 100),
            "both_win_ready": _int(0, 100),
            "mutual_multiplier": _int(1, 10),
        },
    ),
    "play": (
        Play,
        {
            "ready_declaration": _bool,
            "missed_win": _bool,
            "multiple_winners": _bool,
            "eight_flowers": _bool,
        },
    ),
}
_TOP: dict[str, Callable[[Any, str], Any]] = {"name": _text, "title": _text, "description": _text}


@dataclass(frozen=True, slots=True)
class Profile:
    """A complete, validated set of rules."""

    name: str
    title: str
    description: str
    units: Units
    hands: Hands
    hua: Hua
    bonuses: Bonuses
    huangfan: Huangfan
    payments: Payments
    chengbao: Chengbao
    play: Play

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base: Profile | None = None) -> Profile:
        """Validate a parsed profile document. With ``base``, keys not given are taken from
        it; without, every key must be present. ``extends`` is ignored here (the caller
        resolves it into ``base``)."""
        if not isinstance(data, Mapping):
            raise ProfileError("a profile is a table of settings")
        merged: dict[str, Any] = base.to_dict() if base is not None else {}
        for key, value in data.items():
            if key == "extends":
                continue
            if key in _TOP:
                merged[key] = value
            elif key in _SECTIONS:
                if not isinstance(value, Mapping):
                    raise ProfileError("must be a table of settings", field=key)
                section = dict(merged.get(key, {}))
                known = _SECTIONS[key][1]
                for k, v in value.items():
                    if k not in known:
                        raise ProfileError(
                            f"unknown setting (known: {', '.join(known)})", field=f"{key}.{k}"
                        )
                    section[k] = v
                merged[key] = section
            else:
                names = [*_TOP, *_SECTIONS]
                raise ProfileError(f"unknown setting (known: {', '.join(names)})", field=key)
        values: dict[str, Any] = {}
        for key, check in _TOP.items():
            if key not in merged:
                raise ProfileError("missing", field=key)
            values[key] = check(merged[key], key)
        if not values["name"].strip():
            raise ProfileError("must not be empty", field="name")
        for name, (klass, checks) in _SECTIONS.items():
            given = merged.get(name)
            if given is None:
                raise ProfileError("missing section", field=name)
            args: dict[str, Any] = {}
            for k, check in checks.items():
                if k not in given:
                    raise ProfileError("missing", field=f"{name}.{k}")
                args[k] = check(given[k], f"{name}.{k}")
            values[name] = klass(**args)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The profile as a document (what ``from_mapping`` reads)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in _TOP}
        for section in _SECTIONS:
            obj = getattr(self, section)
            sec = {}
            for f in fields(obj):
                if not f.init:
                    continue
                v = getattr(obj, f.name)
                if section == "hands" and v is None:
                    v = False
                sec[f.name] = list(v) if isinstance(v, tuple) else v
            out[section] = sec
        return out


def parse_profile_text(
    text: str, resolve: Callable[[str], Profile], *, source: str = "profile"
) -> Profile:
    """Parse a TOML profile. ``resolve`` maps a name given in ``extends`` to its profile."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{source} is not valid TOML: {exc}") from None
    except RecursionError:  # arrays nested thousands deep
        raise ProfileError(f"{source} is nested too deep to be a profile") from None
    parent = data.get("extends")
    base = None
    if parent is not None:
        if not isinstance(parent, str) or not parent:
            raise ProfileError("must name a profile", field="extends")
        base = resolve(parent)
    return Profile.from_mapping(data, base)
