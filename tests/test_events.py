"""Every event kind survives JSON and back, and bad JSON is refused by name."""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import StorageError
from controller.table.events import (
    ALL_TYPES,
    EVENT_VERSION,
    INPUT_TYPES,
    MeldJson,
    SeatPressed,
    event_from_json,
    event_to_json_text,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
melds = st.builds(
    MeldJson,
    kind=st.sampled_from(["chow", "pung", "kong", "added_kong", "concealed_kong"]),
    tiles=st.text(max_size=12),
    source=st.none() | st.integers(0, 3),
)


def strategy_for(hint: Any) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(hint)
    if hint is Any:
        return json_values
    if hint is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.integers(-(2**40), 2**40)
    if hint is str:
        return st.text(max_size=12)
    if hint is MeldJson:
        return melds
    if origin is Literal:
        return st.sampled_from(typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return st.one_of([strategy_for(arg) for arg in typing.get_args(hint)])
    if hint is type(None):
        return st.none()
    if origin is list:
        (item,) = typing.get_args(hint)
        return st.lists(strategy_for(item), max_size=3)
    if origin is dict:
        key, value = typing.get_args(hint)
        return st.dictionaries(strategy_for(key), strategy_for(value), max_size=3)
    raise AssertionError(f"no strategy for {hint!r}")


def events_of(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {f.name: strategy_for(hints[f.name]) for f in msgspec.structs.fields(cls)}
    return st.builds(cls, **fields)


any_event = st.one_of([events_of(cls) for cls in ALL_TYPES])


@given(any_event)
def test_every_kind_round_trips_through_json(event: Any) -> None:
    data = event.to_json()
    assert data["v"] == EVENT_VERSION and data["type"] == event.type
    assert event_from_json(data) == event
    assert event_from_json(event_to_json_text(event)) == event


def test_every_kind_has_its_own_tag_and_inputs_are_marked() -> None:
    tags = [cls.__struct_config__.tag for cls in ALL_TYPES]
    assert len(set(tags)) == len(tags)
    assert SeatPressed in INPUT_TYPES
    assert all(cls.INPUT for cls in INPUT_TYPES)


def test_events_are_frozen() -> None:
    press = SeatPressed(time=1.0, seat=2, button="win")
    with pytest.raises(AttributeError):
        press.seat = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ({"type": "nonsense", "time": 1.0}, "cannot be read"),
        ({"type": "seat_pressed", "time": 1.0, "seat": 1, "button": "lid"}, "cannot be read"),
        ({"type": "seat_pressed", "time": 1.0}, "cannot be read"),
        ({"type": "seat_pressed", "time": 1.0, "seat": 1, "button": "win", "v": 99}, "version"),
    ],
)
def test_bad_json_is_refused_saying_why(data: Any, words: str) -> None:
    with pytest.raises(StorageError, match=words):
        event_from_json(data if isinstance(data, str) else json.dumps(data))
