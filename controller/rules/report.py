"""A settlement as JSON-ready data and as the readable breakdown players check."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from controller.rules.settlement import Settlement, WinResult


def money(x: Fraction | int) -> int | float:
    """An amount for JSON: a whole number when it is one."""
    return int(x) if x.denominator == 1 else float(x)


def _win_dict(r: WinResult) -> dict[str, Any]:
    w = r.win
    out: dict[str, Any] = {
        "winner": w.winner,
        "valid": r.valid,
        "win": {"type": w.how.value, "from": w.discarder},
        "hand_notation": w.hand.notation(),
    }
    if not r.valid:
        out["reason"] = r.refusal
        return out
    s = r.score
    assert s is not None
    out.update(
        {
            "hand": s.hand.chinese,
            "hand_key": s.hand.value,
            "hand_english": s.hand.english,
            "value": s.value,
            "breakdown": {
                "reading": list(s.reading),
                "hua": [{"source": i.source, "tiles": i.tiles, "hua": i.hua} for i in s.hua],
                "hua_total": s.hua_total,
                "base": s.base,
                "steps": [
                    {"rule": st.rule, "effect": st.effect, "value": st.value} for st in s.steps
                ],
                "doublers": list(s.doublers),
                "cap": s.cap,
                "partners": list(r.partners),
            },
            "payments": [
                {
                    "payer": p.payer,
                    "payee": p.payee,
                    "shares": p.shares,
                    "amount": money(p.amount),
                    "reason": p.reason,
                }
                for p in r.payments
            ],
        }
    )
    return out


def settlement_to_dict(s: Settlement) -> dict[str, Any]:
    """The settlement as the JSON document ``mahjong-table score --json`` prints.

    With one win its fields (``hand``, ``value``, ``breakdown`` …) are also at the top level.
    """
    wins = [_win_dict(r) for r in s.results]
    out: dict[str, Any] = {
        "valid": s.valid,
        "profile": s.profile,
        "payments": {str(seat): money(x) for seat, x in enumerate(s.totals)},
        "next_dealer": s.next_dealer,
        "huangfan_next": s.huangfan_next,
    }
    if s.cap_note:
        out["payer_cap"] = s.cap_note
    if len(wins) == 1:
        single = dict(wins[0])
        single.pop("payments", None)
        out = {**single, **out, "transfers": wins[0].get("payments", [])}
        if not s.valid:
            out["hand"] = None
            out["value"] = 0
            out["breakdown"] = None
    else:
        out["wins"] = wins
        out["hand"] = [w.get("hand") for w in wins]
        out["value"] = [w.get("value", 0) for w in wins]
        out["breakdown"] = [w.get("breakdown") for w in wins]
    return out


def format_settlement(s: Settlement) -> str:
    """The settlement as text, the way the table's display shows it."""
    lines: list[str] = []
    for r in s.results:
        w = r.win
        how = {
            "self_draw": "self-draw",
            "discard": f"on seat {w.discarder}'s discard",
            "robbing_kong": f"robbing seat {w.discarder}'s kong",
            "eight_flowers": "eight flowers",
        }[w.how.value]
        lines.append(f"Seat {w.winner} wins {how}: {w.hand.notation()}")
        if not r.valid:
            lines.append(f"  NOT A WIN: {r.refusal}")
            continue
        sc = r.score
        assert sc is not None
        lines.append(f"  Hand: {sc.hand.chinese} ({sc.hand.english})")
        if sc.reading:
            lines.append(f"  Reading: {'  '.join(sc.reading)}")
        if sc.hua:
            lines.append(f"  花 {sc.hua_total}:")
            for item in sc.hua:
                lines.append(f"    {item.hua:>2}  {item.source} {item.tiles}")
        else:
            lines.append("  花 0")
        lines.append("  Working:")
        for st in sc.steps:
            lines.append(f"    {st.rule}: {st.effect} -> {st.value}")
        lines.append(f"  Value: {sc.value} per normal payer (cap {sc.cap})")
        if r.partners:
            lines.append(f"  承包 with seat(s) {', '.join(map(str, r.partners))}")
        for p in r.payments:
            lines.append(
                f"    seat {p.payer} pays seat {p.payee} {_fmt(p.amount)}"
                f" ({p.shares} share{'s' if p.shares != 1 else ''}: {p.reason})"
            )
    if s.cap_note:
        lines.append(f"Cap: {s.cap_note}")
    lines.append(
        "Net: "
        + "  ".join(f"seat {i} {'+' if x > 0 else ''}{_fmt(x)}" for i, x in enumerate(s.totals))
    )
    if s.next_dealer is not None:
        lines.append(f"Next dealer: seat {s.next_dealer}")
    lines.append(f"荒番 next hand: {s.huangfan_next}")
    return "\n".join(lines)


def _fmt(x: Fraction | int) -> str:
    v = money(x)
    return f"{v:g}" if isinstance(v, float) else str(v)


__all__ = ["format_settlement", "money", "settlement_to_dict"]
