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
    PhaseChanged,
    QuestionAsked,
    SeatPressed,
    event_from_json,
    event_to_json_text,
)
from controller.table.messages import QUESTIONS, REASONS

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

# a message's arguments as the controller writes them: seats, dice and counts as ints, the
# rest as text
message_args = st.dictionaries(
    st.sampled_from(["seat", "discarder", "die1", "hand", "have", "by", "failure", "message"]),
    st.integers(0, 3) | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    max_size=4,
)
phase_events = st.builds(
    PhaseChanged,
    time=st.floats(allow_nan=False, allow_infinity=False),
    phase=st.text(max_size=12),
    reason=st.text(max_size=40),
    key=st.sampled_from(["", *REASONS]),
    args=message_args,
)
question_events = st.builds(
    QuestionAsked,
    time=st.floats(allow_nan=False, allow_infinity=False),
    id=st.integers(0, 2**40),
    kind=st.text(max_size=12),
    text=st.text(max_size=40),
    options=st.lists(json_values, max_size=3),
    seat=st.none() | st.integers(0, 3),
    key=st.sampled_from(["", *QUESTIONS]),
    args=message_args,
)


@given(any_event)
def test_every_kind_round_trips_through_json(event: Any) -> None:
    data = event.to_json()
    assert data["v"] == EVENT_VERSION and data["type"] == event.type
    assert event_from_json(data) == event
    assert event_from_json(event_to_json_text(event)) == event


@given(phase_events | question_events)
def test_a_message_s_key_and_arguments_round_trip(event: Any) -> None:
    data = json.loads(event_to_json_text(event))
    assert data["key"] == event.key and data["args"] == event.args
    assert event_from_json(data) == event


def test_an_event_older_than_the_message_keys_still_reads() -> None:
    """The key and arguments were added without a new version: an older event reads with
    none (the page shows its English), and the version stays what it was."""
    old_phase = {"type": "phase", "time": 1.0, "phase": "idle", "reason": "going on", "v": 1}
    phase = event_from_json(json.dumps(old_phase))
    assert isinstance(phase, PhaseChanged)
    assert (phase.reason, phase.key, phase.args) == ("going on", "", {})
    old_question = {
        "type": "question",
        "time": 2.0,
        "id": 3,
        "kind": "ready",
        "text": "承包: was seat 2 ready?",
        "options": [True, False],
        "seat": 2,
    }
    question = event_from_json(old_question)
    assert isinstance(question, QuestionAsked)
    assert (question.text, question.key, question.args) == (old_question["text"], "", {})
    assert EVENT_VERSION == 1
    # and a reader that does not know a field yet passes over it
    newer = {**old_phase, "key": "going_on", "args": {}, "spoken": "继续"}
    assert event_from_json(newer) == PhaseChanged(
        time=1.0, phase="idle", reason="going on", key="going_on"
    )


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
