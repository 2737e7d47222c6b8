"""The project's error root and how a message echoes what a user gave (controller/rules/errors.py,
re-exported by controller/errors.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.errors import ConfigError, DeviceError, MahjongTableError, WinInputError
from controller.rules.errors import SHOWN_CHARS, escape, show, show_key


def test_escape_keeps_printable_text_and_escapes_the_rest() -> None:
    assert escape("五饼 5p") == "五饼 5p"
    assert escape("a\nb") == "a\\nb"
    assert escape("\x1b[31mred") == "\\x1b[31mred"
    assert escape("\u202eevil") == "\\u202eevil"  # a bidi override turns the line around


def test_show_quotes_cuts_short_and_never_fails() -> None:
    assert show("x") == "'x'"
    assert show("a\nb") == "'a\\nb'"
    assert show("x" * 1000) == repr("x" * SHOWN_CHARS) + "..."
    assert show(7) == "7" and show(True) == "True" and show(None) == "None"
    assert show(10**5000) == "an integer of 16610 bits"  # str() of it would raise
    assert len(show(list(range(10_000)))) <= SHOWN_CHARS + 3
    assert show([10**5000]) == "a list"  # its repr raises
    looped: list[object] = []
    looped.append(looped)
    assert show(looped) == "[[...]]"


def test_show_key_leaves_a_plain_name_bare() -> None:
    assert show_key("stake") == "stake"
    assert show_key("a b") == "'a b'"
    assert show_key("\x1b[2J") == "'\\x1b[2J'"
    assert show_key(3) == "3"


@given(st.text(), st.one_of(st.none(), st.text()))
def test_every_error_is_one_printable_line(message: str, field: str | None) -> None:
    for cls in (MahjongTableError, WinInputError, ConfigError, DeviceError):
        text = str(cls(message, field=field))
        assert text.isprintable(), text
        assert "\n" not in text and "\x1b" not in text
