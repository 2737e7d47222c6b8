"""The stake's one rule (controller/rules/stake.py), shared by the config file and a win's JSON."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.config import ConfigFileError, config_from_mapping
from controller.rules import WinInputError, win_from_json
from controller.rules.stake import MAX_STAKE, STAKE_RULE, parse_stake

WIN = {"winner": 0, "concealed": "111p 222p 333p 444p 5p", "winning_tile": "5p"}
WIN |= {"win": {"type": "self_draw"}}


@pytest.mark.parametrize(
    ("given", "stake"),
    [
        (1, Fraction(1)),
        ("1", Fraction(1)),
        ("007", Fraction(7)),
        (0.5, Fraction(1, 2)),
        ("0.5", Fraction(1, 2)),
        (0.1, Fraction(1, 10)),  # a float as written, not its binary value
        ("0.0001", Fraction(1, 10_000)),
        (10_000, Fraction(10_000)),
        ("10000.0", Fraction(10_000)),
        (Fraction(5, 2), Fraction(5, 2)),
    ],
)
def test_the_forms_a_stake_takes(given: object, stake: Fraction) -> None:
    assert parse_stake(given) == stake
    assert parse_stake(given, fraction_text=True) == stake


BAD = [
    "1_000", "١", "١٢", "1e3", "1e100000000", "1e4400", "1e-4400", 1e-4400, "-1", -1, 0, "0",
    0.0, -0.0, "0.00001", 1e-5, 10_001, "10000.5", 2**20000, True, False, "", " 1", "1 ", "+1",
    "1.", ".5", "1\n", float("inf"), float("nan"), Fraction(1, 3), None, [1], {"a": 1},
    "9" * 100_000,
]  # fmt: skip


@pytest.mark.parametrize("bad", BAD, ids=range(len(BAD)))
def test_what_is_not_a_plain_stake_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match=STAKE_RULE):
        parse_stake(bad, fraction_text=True)


def test_fraction_text_is_taken_only_when_asked() -> None:
    # Win.to_json writes a stake that is not whole as "1/2": a win's JSON reads it back
    assert parse_stake("1/2", fraction_text=True) == Fraction(1, 2)
    assert parse_stake("5000/10000", fraction_text=True) == Fraction(1, 2)
    for bad in ("1/2", "1/3", "1/0", "0/1", "1/2/3", "-1/2", "1e3/1", "١/٢", "1 / 2"):
        with pytest.raises(ValueError):
            parse_stake(bad)
        if bad != "1/2":
            with pytest.raises(ValueError):
                parse_stake(bad, fraction_text=True)


def test_no_text_makes_a_huge_number() -> None:
    start = time.perf_counter()
    for text in ("1e100000000", "9" * 100_000, "0." + "1" * 100_000, "1/" + "3" * 100_000):
        with pytest.raises(ValueError):
            parse_stake(text, fraction_text=True)
    assert time.perf_counter() - start < 0.05


def _parsed(value: object, *, fraction_text: bool = False) -> Fraction | None:
    try:
        return parse_stake(value, fraction_text=fraction_text)
    except ValueError:
        return None


fraction_texts = st.tuples(st.integers(0, 20_000), st.integers(0, 20_000)).map(
    "{0[0]}/{0[1]}".format
)


@given(st.one_of(st.integers(), st.floats(), st.text(max_size=12), st.fractions(), fraction_texts))
def test_the_config_and_a_win_agree_on_every_stake(value: object) -> None:
    """The same rule; a win's JSON also reads "a/b", as Win.to_json writes a stake."""
    expected = _parsed(value)
    try:
        config = config_from_mapping({"table": {"stake": value}}).table.stake
    except ConfigFileError as exc:
        assert exc.field == "table.stake" and expected is None
    else:
        assert config == expected
    if isinstance(value, Fraction):
        return  # not a JSON value
    expected = _parsed(value, fraction_text=True)
    try:
        win = win_from_json({**WIN, "stake": value}).stake
    except WinInputError as exc:
        assert exc.field == "stake" and expected is None
        assert STAKE_RULE in str(exc)
    else:
        assert win == expected
        assert 0 < win <= MAX_STAKE
