"""The settlement as JSON and as the text players read."""

from __future__ import annotations

import json

from controller.rules import format_settlement, settle, settlement_to_dict


def test_json_has_the_documented_fields(make_win, shanghai):
    s = settle(
        [make_win("[1111m<1] 222p 333s EEE 5p 春 +5p", how="discard", discarder=2, dice=(4, 4))],
        shanghai,
    )
    d = settlement_to_dict(s)
    json.dumps(d)  # serialisable
    assert d["valid"] is True and d["hand"] == "碰碰胡" and d["value"] == 2 * (2 + 3)
    assert d["payments"] == {"0": 10, "1": 0, "2": -10, "3": 0}
    b = d["breakdown"]
    assert {"source": "flowers", "tiles": "春", "hua": 1} in b["hua"]
    assert b["hua_total"] == 3 and b["doublers"] == ["开宝"] and b["cap"] == 20
    assert [st["rule"] for st in b["steps"]] == ["碰碰胡", "开宝"]


def test_json_of_a_refused_win(make_win, shanghai):
    d = settlement_to_dict(settle([make_win("[123m<3] 456p 789s EEE 5m +5m")], shanghai))
    assert d["valid"] is False and "平胡" in d["reason"] and d["value"] == 0


def test_json_of_several_wins(make_win, shanghai):
    a = make_win("[111m<1] 222p 333s EEE 5p +5p", how="discard", discarder=2)
    b = make_win("[111m<0] 222s 333p WWW 5p +5p", winner=1, how="discard", discarder=2)
    d = settlement_to_dict(settle([a, b], shanghai))
    assert len(d["wins"]) == 2 and d["value"] == [3, 3] and d["payments"]["2"] == -6


def test_text_shows_the_working(make_win, shanghai):
    text = format_settlement(
        settle(
            [make_win("[1111m<1] 222p 333s EEE 5p +5p", after_kong=True, bound_pairs=((0, 2),))],
            shanghai,
        )
    )
    for part in (
        "碰碰胡",
        "杠开",
        "raised to 1 勒子",
        "suit kong 1111m",
        "承包",
        "seat 2 pays seat 0 50",
        "Net:",
    ):
        assert part in text, part


def test_fractional_stake(make_win, shanghai):
    from fractions import Fraction

    s = settle(
        [
            make_win(
                "[111m<1] 222p 333s EEE 5p +5p", how="discard", discarder=2, stake=Fraction(1, 2)
            )
        ],
        shanghai,
    )
    assert settlement_to_dict(s)["payments"]["0"] == 1.5
    assert "+1.5" in format_settlement(s)
