"""The stake (底分), the unit every payment is counted in, and the one rule for reading it.

A stake is above 0, at most :data:`MAX_STAKE`, with at most :data:`STAKE_DECIMALS` decimal
places, so that every payment is exact (and a typo such as 10000000 is caught). The table's
config file and a win's JSON read it with :func:`parse_stake`, so both take the same stakes::

    parse_stake(2) == parse_stake("2") == Fraction(2)
    parse_stake(0.5) == parse_stake("0.5") == Fraction(1, 2)   # a float as written
    parse_stake("1/2", fraction_text=True) == Fraction(1, 2)  # as the project writes amounts

Text is matched against a short pattern of ASCII digits before any number is made from it:
no string can make a huge Fraction (``"1e100000000"`` would take forever), and ``"1_000"``,
``"1e3"``, ``" 1"``, ``"+1"`` or Arabic-Indic digits (which Python's own parsers take) are
refused rather than read as something the user did not write.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

__all__ = ["MAX_STAKE", "STAKE_DECIMALS", "STAKE_RULE", "parse_stake"]

MAX_STAKE = 10_000
"""The largest stake a table may play for; anything larger is a typo."""

STAKE_DECIMALS = 4
"""A stake has at most this many decimal places, so that every payment is exact in the log."""

STAKE_RULE = f"a stake above 0 and at most {MAX_STAKE} with at most {STAKE_DECIMALS} decimal places"
"""The rule in words, for messages: ``f"expected {STAKE_RULE}, got ..."``."""

_DECIMAL = re.compile(r"[0-9]{1,5}(?:\.[0-9]{1,4})?")
"""A decimal stake as text: ASCII digits only, and short."""

_FRACTION = re.compile(r"([0-9]{1,9})/([0-9]{1,9})")
"""A stake as a fraction ``"a/b"``, as :class:`~controller.rules.win.Win` writes one."""


def parse_stake(value: object, *, fraction_text: bool = False) -> Fraction:
    """``value`` as an exact stake, or ``ValueError`` (saying :data:`STAKE_RULE`).

    Taken: an int; a Fraction; a float as written (``0.1`` is one tenth, not its binary
    value); a plain decimal string (``"0.5"``, ``"007"``); with ``fraction_text``, also
    ``"a/b"``. Refused: bool, anything else, and any value outside the rule.
    """
    exact: Fraction | None = None
    if isinstance(value, bool):
        exact = None
    elif isinstance(value, int | Fraction):
        exact = Fraction(value)
    elif isinstance(value, float):
        text = repr(value) if math.isfinite(value) else ""
        if _DECIMAL.fullmatch(text):
            exact = Fraction(text)
    elif isinstance(value, str):
        if _DECIMAL.fullmatch(value):
            exact = Fraction(value)
        elif fraction_text and (m := _FRACTION.fullmatch(value)) and int(m[2]):
            exact = Fraction(int(m[1]), int(m[2]))
    if exact is None or not 0 < exact <= MAX_STAKE or (exact * 10**STAKE_DECIMALS).denominator != 1:
        raise ValueError(STAKE_RULE)
    return exact
