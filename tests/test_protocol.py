"""Messages: every type round-trips; anything else is a MessageError, never a crash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmware_bridge import protocol as p
from firmware_bridge.errors import MessageError

u32 = st.integers(0, 2**32 - 1)
u16 = st.integers(0, 2**16 - 1)
u8 = st.integers(0, 255)

messages = st.one_of(
    *[st.builds(c, cmd_id=u32) for c in p.COMMANDS.values() if c not in (p.Configure, p.Lights)],
    st.builds(p.Configure, u32, u16, u16, u16),
    st.builds(p.Lights, u32, u8, u8),
    st.builds(p.Keepalive),
    st.builds(p.Reply, u32, u8, u16),
    st.builds(p.Identity, u32, u8, u8, u8, u32, u8, u16, st.text(max_size=20)),
    st.builds(p.StatusReport, u32, u32, u32, u8, u16, u32, u8, u8, u8, u8, u32, u32, u32, u8, u8),
    st.builds(p.ShuffleDone, u32, u32, u8, u16),
    st.builds(p.WallsUp, u32, u32, u8),
    st.builds(p.WallsDown, u32, u32, u8),
    st.builds(p.DiceRolled, u32, u32, u8, u8),
    st.builds(p.FaultRaised, u32, u32, u8, u16),
    st.builds(p.LidChanged, u32, u32, u8),
    st.builds(p.McuReset, u32, u32, u32, u8),
    st.builds(p.FaultsCleared, u32, u32, u16),
)


@given(messages)
def test_round_trip(msg: p.Message) -> None:
    raw = msg.encode()
    assert raw[0] == msg.TYPE
    assert p.decode_message(raw) == msg


@given(st.binary(max_size=80))
def test_arbitrary_payloads_decode_or_raise_message_error(raw: bytes) -> None:
    try:
        msg = p.decode_message(raw)
    except MessageError:
        return
    assert msg.encode()[0] == raw[0]


def test_type_codes_are_distinct_and_commands_named() -> None:
    assert set(p.COMMANDS) == {
        "identify",
        "status",
        "configure",
        "shuffle",
        "lift",
        "lower",
        "dice",
        "lights",
        "clear",
        "stop",
    }
    long_ones = {n for n, c in p.COMMANDS.items() if c.LONG}
    assert long_ones == {"shuffle", "lift", "lower", "dice"}


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"", "empty"),
        (b"\xee", "unknown message type 0xee"),
        (b"\x01\x00\x00", "should be 4 bytes"),
        (bytes([p.Identity.TYPE]) + bytes(13) + b"\x05ab", "malformed trailing string"),
    ],
)
def test_bad_payloads_say_what_is_wrong(raw: bytes, words: str) -> None:
    with pytest.raises(MessageError, match=words):
        p.decode_message(raw)


def test_out_of_range_field_is_a_message_error() -> None:
    with pytest.raises(MessageError, match="Lights"):
        p.Lights(1, mask=300).encode()


def test_fault_bits_and_names() -> None:
    bits = p.Fault.JAM.bit | p.Fault.LID_OPEN.bit
    assert p.fault_names(bits) == ["jam", "lid_open"]
    assert "卡牌" in p.Fault.JAM.label
    assert "少牌" in p.Fault.TILES_SHORT.label


def test_long_identity_name_is_cut_not_refused() -> None:
    msg = p.Identity(name="x" * 100)
    assert p.decode_message(msg.encode()).name == "x" * 64
