"""The messages of the table protocol: what the host asks, what the MCU answers and reports.

Each message is a frozen dataclass with a one-byte type code and a fixed little-endian layout
(plus, for :class:`Identity`, a trailing UTF-8 name). :func:`decode_message` turns a frame's
payload back into its message and raises :class:`~firmware_bridge.errors.MessageError` for
anything that is not one. The layouts and meanings are documented in ``docs/protocol.md``;
the host side and the simulated MCU both use this module, so they cannot drift apart.
"""

from __future__ import annotations

import enum
import operator
import struct
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from firmware_bridge.errors import MessageError

__all__ = [
    "COMMANDS",
    "NO_SET",
    "PROTOCOL_VERSION",
    "ClearFaults",
    "Command",
    "Configure",
    "DiceRolled",
    "EmergencyStop",
    "Event",
    "Fault",
    "FaultRaised",
    "FaultsCleared",
    "GetStatus",
    "Identify",
    "Identity",
    "Keepalive",
    "LidChanged",
    "LiftWalls",
    "Lights",
    "LowerWalls",
    "McuReset",
    "Message",
    "NotReady",
    "Reply",
    "Result",
    "RollDice",
    "Shuffle",
    "ShuffleDone",
    "State",
    "StatusReport",
    "WallsDown",
    "WallsUp",
    "decode_message",
    "fault_names",
]

PROTOCOL_VERSION = 1
#: the value of a tile-set field when there is no such set (no walls up, nothing shuffled)
NO_SET = 0xFF


class State(enum.IntEnum):
    """What the table is doing."""

    IDLE = 0
    SHUFFLING = 1
    LIFTING = 2
    LOWERING = 3
    ROLLING = 4


class Fault(enum.IntEnum):
    """A fault code; bit ``code - 1`` of a status's ``faults`` field is the same fault."""

    JAM = 1
    TILES_SHORT = 2
    LID_OPEN = 3
    MOTOR_STALL = 4
    WATCHDOG = 5
    ESTOP = 6

    @property
    def bit(self) -> int:
        return 1 << (self.value - 1)

    @property
    def label(self) -> str:
        return _FAULT_LABELS[self]


_FAULT_LABELS = {
    Fault.JAM: "tile jam (卡牌)",
    Fault.TILES_SHORT: "tiles short (少牌)",
    Fault.LID_OPEN: "lid open (开盖)",
    Fault.MOTOR_STALL: "motor stall",
    Fault.WATCHDOG: "stopped by the watchdog: the host went silent",
    Fault.ESTOP: "emergency stop",
}


def fault_names(bits: int) -> list[str]:
    """The lower-case names of the faults set in a status's ``faults`` bit field."""
    return [f.name.lower() for f in Fault if bits & f.bit]


class Result(enum.IntEnum):
    """The outcome code of a :class:`Reply`."""

    OK = 0  #: done
    STARTED = 1  #: under way; an event with this command's id will say how it ended
    BUSY = 2  #: another operation is running
    FAULTED = 3  #: a latched fault must be cleared first (``detail`` = fault bits)
    LID_OPEN = 4  #: refused: the lid is open
    NOT_READY = 5  #: refused: the tiles are not where this needs them (``detail``: NotReady)
    BAD_ARGS = 6  #: a field out of range
    UNKNOWN = 7  #: a command this firmware does not know (``detail`` = its type code)


class NotReady(enum.IntEnum):
    """The ``detail`` of a NOT_READY reply."""

    NO_SHUFFLED_SET = 1
    WALLS_UP = 2
    WALLS_DOWN = 3
    SET_WAITING = 4
    NOTHING_TO_SHUFFLE = 5


_REGISTRY: dict[int, type[Message]] = {}


@dataclass(frozen=True)
class Message:
    """Base of every message. Subclasses set ``TYPE`` and ``FORMAT`` (the struct layout of
    their fields, in declaration order, after the type byte)."""

    TYPE: ClassVar[int] = -1
    FORMAT: ClassVar[str] = ""
    #: name of a trailing length-prefixed UTF-8 string field, if any
    TAIL: ClassVar[str | None] = None
    _struct: ClassVar[struct.Struct]
    _names: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.TYPE >= 0:
            if cls.TYPE in _REGISTRY:
                raise TypeError(f"message type 0x{cls.TYPE:02x} defined twice")
            _REGISTRY[cls.TYPE] = cls
            cls._struct = struct.Struct("<" + cls.FORMAT)

    def encode(self) -> bytes:
        cls = type(self)
        layout = _layout(cls)
        try:
            raw = layout.packer.pack(cls.TYPE, *layout.values(self))
        except struct.error as exc:
            raise MessageError(f"cannot encode {cls.__name__}: {exc}") from None
        if cls.TAIL:
            text = getattr(self, cls.TAIL).encode("utf-8")[:64]
            raw += bytes((len(text),)) + text
        return raw

    @classmethod
    def _decode(cls, payload: bytes) -> Message:
        """The message in ``payload`` (its type byte included), known to be of this class."""
        size = cls._struct.size
        if cls.TAIL is None:
            if len(payload) != size + 1:
                raise MessageError(
                    f"{cls.__name__} should be {size} bytes after its type, got {len(payload) - 1}"
                )
            values = cls._struct.unpack_from(payload, 1)
            kwargs = None
        else:
            if len(payload) < size + 2 or len(payload) != size + 2 + payload[size + 1]:
                raise MessageError(f"{cls.__name__} has a malformed trailing string")
            values = ()
            kwargs = dict(zip(_layout(cls).names, cls._struct.unpack_from(payload, 1), strict=True))
            kwargs[cls.TAIL] = payload[size + 2 :].decode("utf-8", errors="replace")
        try:
            # without a trailing string the fields in declaration order are the layout's
            # order, so positional is exact
            return cls(*values) if kwargs is None else cls(**kwargs)
        except ValueError as exc:
            raise MessageError(f"{cls.__name__}: {exc}") from None


class _Layout:
    """How a message class packs: its fixed fields' names (in ``FORMAT`` order: declaration
    order, less the trailing string), a getter of their values, and a packer that writes the
    type byte too. Built on first use (a dataclass's fields exist only after decoration)."""

    __slots__ = ("names", "packer", "values")

    def __init__(self, cls: type[Message]) -> None:
        self.names = tuple(f.name for f in fields(cls) if f.name != cls.TAIL)
        self.packer = struct.Struct("<B" + cls.FORMAT)
        get = operator.attrgetter(*self.names) if self.names else None
        self.values: Callable[[Message], tuple[Any, ...]]
        if get is None:
            self.values = lambda m: ()
        elif len(self.names) == 1:
            self.values = lambda m: (get(m),)  # attrgetter of one name returns the value
        else:
            self.values = get


_LAYOUTS: dict[type, _Layout] = {}


def _layout(cls: type[Message]) -> _Layout:
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = _Layout(cls)
    return layout


def is_known(type_code: int) -> bool:
    """Whether this side knows the message type ``type_code``."""
    return type_code in _REGISTRY


def decode_message(payload: bytes) -> Message:
    """The message in a frame's payload. Raises :class:`MessageError` if it is not one."""
    if not payload:
        raise MessageError("empty message")
    cls = _REGISTRY.get(payload[0])
    if cls is None:
        raise MessageError(f"unknown message type 0x{payload[0]:02x}")
    return cls._decode(payload)


# --- host -> MCU: commands (reliable) -------------------------------------------------------


@dataclass(frozen=True)
class Command(Message):
    """A command. ``cmd_id`` (never 0) is chosen by the host; the MCU remembers the ids it ran
    and answers a repeated id with its first answer instead of running it again."""

    cmd_id: int = 0
    #: the name used by the host API, the CLI and in messages
    NAME: ClassVar[str] = ""
    #: True for commands that start motion and finish with an event
    LONG: ClassVar[bool] = False


@dataclass(frozen=True)
class Identify(Command):
    TYPE = 0x01
    FORMAT = "I"
    NAME = "identify"


@dataclass(frozen=True)
class GetStatus(Command):
    TYPE = 0x02
    FORMAT = "I"
    NAME = "status"


@dataclass(frozen=True)
class Configure(Command):
    """The table configuration the host pushes at every handshake."""

    TYPE = 0x03
    FORMAT = "IHHH"
    NAME = "configure"
    tiles_per_set: int = 144
    status_interval_ms: int = 250
    watchdog_ms: int = 1000


@dataclass(frozen=True)
class Shuffle(Command):
    TYPE = 0x10
    FORMAT = "I"
    NAME = "shuffle"
    LONG = True


@dataclass(frozen=True)
class LiftWalls(Command):
    TYPE = 0x11
    FORMAT = "I"
    NAME = "lift"
    LONG = True


@dataclass(frozen=True)
class LowerWalls(Command):
    TYPE = 0x12
    FORMAT = "I"
    NAME = "lower"
    LONG = True


@dataclass(frozen=True)
class RollDice(Command):
    TYPE = 0x13
    FORMAT = "I"
    NAME = "dice"
    LONG = True


@dataclass(frozen=True)
class Lights(Command):
    """Table lights: bit i of ``mask`` is light i (0-3 the four sides, 4 the centre)."""

    TYPE = 0x14
    FORMAT = "IBB"
    NAME = "lights"
    mask: int = 0
    level: int = 255


@dataclass(frozen=True)
class ClearFaults(Command):
    TYPE = 0x15
    FORMAT = "I"
    NAME = "clear"


@dataclass(frozen=True)
class EmergencyStop(Command):
    TYPE = 0x1E
    FORMAT = "I"
    NAME = "stop"


#: command name -> class, for the CLI and messages
COMMANDS: dict[str, type[Command]] = {
    c.NAME: c
    for c in (
        Identify,
        GetStatus,
        Configure,
        Shuffle,
        LiftWalls,
        LowerWalls,
        RollDice,
        Lights,
        ClearFaults,
        EmergencyStop,
    )
}


@dataclass(frozen=True)
class Keepalive(Message):
    """Host -> MCU datagram that feeds the MCU's watchdog when the host has nothing to say."""

    TYPE = 0x20
    FORMAT = ""


# --- MCU -> host: answers -------------------------------------------------------------------


@dataclass(frozen=True)
class Reply(Message):
    """The answer to a command (other than identify and status, which have their own)."""

    TYPE = 0x40
    FORMAT = "IBH"
    cmd_id: int = 0
    result: int = Result.OK
    detail: int = 0


@dataclass(frozen=True)
class Identity(Message):
    """The answer to :class:`Identify`."""

    TYPE = 0x41
    FORMAT = "IBBBIBH"
    TAIL = "name"
    cmd_id: int = 0
    protocol: int = PROTOCOL_VERSION
    fw_major: int = 0
    fw_minor: int = 0
    boot_id: int = 0
    tile_sets: int = 2
    tiles_per_set: int = 144
    name: str = ""


@dataclass(frozen=True)
class StatusReport(Message):
    """The table's state. Sent as a datagram every 200-500 ms (``cmd_id`` 0) and as the
    answer to :class:`GetStatus`.

    ``executed`` counts commands run, ``duplicates`` runs of a command id that had already
    run (0 unless something is wrong), ``replayed`` repeats answered from memory.
    """

    TYPE = 0x42
    FORMAT = "IIIBHIBBBBIIIBB"
    cmd_id: int = 0
    boot_id: int = 0
    uptime_ms: int = 0
    state: int = State.IDLE
    faults: int = 0
    events: int = 0
    table_set: int = NO_SET
    ready_set: int = NO_SET
    lights_mask: int = 0
    lights_level: int = 0
    executed: int = 0
    duplicates: int = 0
    replayed: int = 0
    die1: int = 0
    die2: int = 0


# --- MCU -> host: events (reliable, numbered per boot) ---------------------------------------


@dataclass(frozen=True)
class Event(Message):
    """An event. ``number`` counts events since the MCU booted (the first is 1); ``cmd_id`` is
    the command whose operation it ends, or 0."""

    number: int = 0
    cmd_id: int = 0
    #: the name listeners see (:class:`~firmware_bridge.table_device.McuEvent` ``kind``)
    KIND: ClassVar[str] = ""


@dataclass(frozen=True)
class ShuffleDone(Event):
    TYPE = 0x50
    FORMAT = "IIBH"
    KIND = "shuffle_done"
    tile_set: int = 0
    tiles: int = 0


@dataclass(frozen=True)
class WallsUp(Event):
    TYPE = 0x51
    FORMAT = "IIB"
    KIND = "walls_up"
    tile_set: int = 0


@dataclass(frozen=True)
class WallsDown(Event):
    TYPE = 0x52
    FORMAT = "IIB"
    KIND = "walls_down"
    tile_set: int = 0


@dataclass(frozen=True)
class DiceRolled(Event):
    TYPE = 0x53
    FORMAT = "IIBB"
    KIND = "dice"
    die1: int = 1
    die2: int = 1


@dataclass(frozen=True)
class FaultRaised(Event):
    """A fault; ``cmd_id`` is the operation it stopped (0 if none was running)."""

    TYPE = 0x54
    FORMAT = "IIBH"
    KIND = "fault"
    fault: int = Fault.JAM
    detail: int = 0


@dataclass(frozen=True)
class LidChanged(Event):
    TYPE = 0x55
    FORMAT = "IIB"
    KIND = "lid"
    open: int = 0


@dataclass(frozen=True)
class McuReset(Event):
    """The first event after every boot. ``reason``: 0 power on, 1 watchdog, 2 software."""

    TYPE = 0x56
    FORMAT = "IIIB"
    KIND = "mcu_boot"
    boot_id: int = 0
    reason: int = 0


@dataclass(frozen=True)
class FaultsCleared(Event):
    TYPE = 0x57
    FORMAT = "IIH"
    KIND = "faults_cleared"
    cleared: int = 0
