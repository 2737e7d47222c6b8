"""The table's one event seam: everything that happens at a table, as typed, frozen values.

Producers only put events on the controller's bus (:mod:`controller.table.bus`): the table
MCU's listener (:class:`DeviceEvent` kinds, translated from
:class:`firmware_bridge.table_device.McuEvent`), the seat panel (:class:`SeatPressed`), the
camera loop (:class:`CameraChanged`, :class:`CameraStatus`), the results of commands the
controller asked the hardware for (:class:`CommandDone`, :class:`CommandFailed`), and the
players' requests from the dashboard or the command line (:class:`Request`). The controller
takes them one at a time and answers with its own events (everything from
:class:`SessionStarted` on): its transitions, what it learnt, the questions it asks, its
settlements. Those are what the event log stores and what the state is folded from, so the
whole table is rebuilt by replaying them (:func:`controller.table.state.replay`).

Every event converts to JSON and back (:meth:`Event.to_json`, :func:`event_from_json`); the
JSON names the event's ``type`` and carries the schema version ``v``. Tiles are written in
the project's notation (``"5p"``, ``"E"``), melds as a win's JSON writes them, amounts as
exact numbers (an int, or a fraction as text such as ``"3/2"``).

A field added later is optional, with a default an older event reads as (the message
``key`` and ``args`` of :class:`PhaseChanged` and :class:`QuestionAsked`), and unknown fields
are ignored, so such an addition keeps the version: ``v`` changes only when an older reader
would take an event wrongly.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

import msgspec

from controller.errors import StorageError

__all__ = [
    "EVENT_VERSION",
    "INPUT_TYPES",
    "CameraChanged",
    "CameraStatus",
    "CommandDone",
    "CommandFailed",
    "CommandRequested",
    "DeviceEvent",
    "Event",
    "FaultChanged",
    "HandDrawn",
    "HandSettled",
    "HandStarted",
    "Learnt",
    "MeldJson",
    "PhaseChanged",
    "QuestionAnswered",
    "QuestionAsked",
    "Request",
    "SeatPressed",
    "SeatSeen",
    "SessionStarted",
    "SettlementProposed",
    "SettlementUndone",
    "WinDeclared",
    "event_from_json",
    "event_to_json_text",
]

EVENT_VERSION = 1
"""The JSON schema's version: a reader refuses an event of a newer one rather than guess."""


class Event(msgspec.Struct, frozen=True, tag_field="type", kw_only=True):
    """Something that happened at the table at ``time`` (seconds: the table's clock, wall time
    on a real table, the simulator's own clock in a simulation)."""

    time: float
    INPUT: ClassVar[bool] = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        data["v"] = EVENT_VERSION
        return data

    @property
    def type(self) -> str:
        return type(self).__struct_config__.tag  # type: ignore[return-value]


class MeldJson(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A meld as it lies: ``kind`` (``chow``, ``pung``, ``kong``, ``added_kong``,
    ``concealed_kong``), ``tiles`` in the notation, and ``source`` the seat it was claimed
    from where known (``from`` in a win's JSON)."""

    kind: str
    tiles: str
    source: int | None = None


# -- inputs: what the producers put on the bus -----------------------------------------------


class DeviceEvent(Event, frozen=True, tag="device"):
    """What the table's MCU (or the host's link to it) reported: ``kind`` as
    :class:`firmware_bridge.table_device.McuEvent` names it (``shuffle_done``, ``walls_up``,
    ``walls_down``, ``dice``, ``fault``, ``faults_cleared``, ``lid``, ``connected``,
    ``link_lost``, ``link_restored``, ``reset``, ``late_result``) and its data."""

    INPUT: ClassVar[bool] = True
    kind: str
    data: dict[str, Any] = {}
    number: int | None = None
    boot_id: int | None = None


class SeatPressed(Event, frozen=True, tag="seat_pressed"):
    """A debounced press of a seat's ``win`` (胡) or ``confirm`` button; ``long`` when held."""

    INPUT: ClassVar[bool] = True
    seat: int
    button: Literal["win", "confirm"]
    long: bool = False


class CameraChanged(Event, frozen=True, tag="camera_changed"):
    """A change the camera settled at ``seat`` (:class:`vision.tracker.TableChange`):
    ``kind`` is ``flower``, ``meld``, ``meld_changed``, ``flower_changed``, ``open_tiles`` or
    ``removed``; ``flagged`` when the camera is unsure, ``note`` why. ``view_*`` is the seat's
    whole settled view after the change (flowers, melds, tiles laid open, and the notes of
    what the camera is still unsure of there), so the controller never rebuilds it from
    changes and cannot drift from what the camera holds."""

    INPUT: ClassVar[bool] = True
    seat: int
    kind: str
    frame: int = 0
    flower: str | None = None
    meld: MeldJson | None = None
    previous: str | MeldJson | None = None
    open_tiles: str = ""
    flagged: bool = False
    note: str = ""
    view_flowers: str = ""
    view_melds: list[MeldJson] = []
    view_open: str = ""
    view_notes: list[str] = []


class CameraStatus(Event, frozen=True, tag="camera_status"):
    """The camera came (``live``) or went, with what it said."""

    INPUT: ClassVar[bool] = True
    live: bool
    message: str = ""


class CommandDone(Event, frozen=True, tag="command_done"):
    """A hardware command the controller asked for finished: ``command`` is ``shuffle``,
    ``lift``, ``lower``, ``dice``, ``clear_faults``; ``result`` what it returned."""

    INPUT: ClassVar[bool] = True
    command: str
    result: Any = None


class CommandFailed(Event, frozen=True, tag="command_failed"):
    """A hardware command failed: ``reason`` a short word (``jam``, ``lid_open``,
    ``mcu_reset``, ``timeout``, ``link_down``, ``busy``, ``not_ready``, ``faulted``), and the
    message a player can act on."""

    INPUT: ClassVar[bool] = True
    command: str
    reason: str
    message: str = ""


class Request(Event, frozen=True, tag="request"):
    """A player's request, from the dashboard or the command line: ``action`` is one of
    ``start_hand``, ``answer`` (``question``, ``value``), ``confirm``, ``correct``
    (``field``, ``value``), ``declare_win`` (``seat``, ``how``, ``discarder``),
    ``declare_drawn``, ``undo``, ``new_session`` (``profile``, ``stake``, ``seats``),
    ``clear_fault``; ``by`` who asked (a seat, ``"dashboard"``, ``"cli"``)."""

    INPUT: ClassVar[bool] = True
    action: str
    args: dict[str, Any] = {}
    by: str = ""


# -- outputs: the controller's own events, which the log stores -------------------------------


class SessionStarted(Event, frozen=True, tag="session_started"):
    """A new session: the players, the profile and the stake for its hands; the ledger
    starts at zero. ``dealer`` deals the first hand."""

    session: int
    profile: str
    stake: int | str
    seats: list[str]
    dealer: int


class PhaseChanged(Event, frozen=True, tag="phase"):
    """The state machine moved: ``phase`` is the new phase, ``reason`` why, in English words.
    ``key`` names the reason's template (:data:`controller.table.messages.REASONS`) and
    ``args`` fill it, so a page can say it in its own language; both are empty in events
    written before they existed, which show the English ``reason``."""

    phase: str
    reason: str = ""
    key: str = ""
    args: dict[str, Any] = {}


class FaultChanged(Event, frozen=True, tag="fault"):
    """A fault the players see came (``active``) or went: ``fault`` is ``jam``,
    ``tiles_short``, ``lid_open``, ``motor_stall``, ``estop``, ``link_lost``, ``mcu_reset``,
    ``camera_lost``, ``watchdog``."""

    fault: str
    active: bool
    message: str = ""


class HandStarted(Event, frozen=True, tag="hand_started"):
    """A hand begins: its number in the session, the dealer, and the 荒番 counter as it
    starts (before any dice-荒番)."""

    session: int
    hand: int
    dealer: int
    huangfan: int


class CommandRequested(Event, frozen=True, tag="command"):
    """The controller asks the hardware to act: ``command`` is ``prepare_walls`` (lower the
    walls if up, shuffle if no set waits, raise the walls), ``dice`` or ``clear_faults``.
    The runtime carries it out and answers with :class:`CommandDone` or
    :class:`CommandFailed`; one that was asked for and never answered when the controller
    stopped is asked again when it restarts."""

    command: str
    attempt: int = 1


class Learnt(Event, frozen=True, tag="learnt"):
    """A fact of the hand the controller learnt: ``fact`` is ``dice`` (``[a, b]``, with
    ``wall``, ``stacks``, ``kaibao``) or ``walls_up``; ``value`` its value."""

    fact: str
    value: Any = None


class SeatSeen(Event, frozen=True, tag="seat_seen"):
    """What lies open at ``seat`` now, as the controller takes it after a camera change:
    flowers, melds and the tiles laid open; ``flags`` what the camera was unsure of;
    ``change`` what changed (``flower``, ``meld``, ``kong``, ``open_tiles``, ``removed``)."""

    seat: int
    change: str
    flowers: str = ""
    melds: list[MeldJson] = []
    open_tiles: str = ""
    flags: list[str] = []


class WinDeclared(Event, frozen=True, tag="win_declared"):
    """``seat`` declared a win (胡). ``how`` and ``discarder`` once known: ``self_draw``,
    ``discard``, ``robbing_kong``, ``eight_flowers``; ``source`` who said so."""

    seat: int
    how: str | None = None
    discarder: int | None = None
    source: str = ""


class QuestionAsked(Event, frozen=True, tag="question"):
    """A question put to the table: ``id`` to answer it by, ``kind`` (``how_won``,
    ``discarder``, ``tile``, ``meld``, ``ready``, ``gangkai``, ``hand``), the ``text`` shown
    (in English), the ``options`` allowed (empty: free text in the notation) and the ``seat``
    it is about. ``key`` and ``args`` name the text's template
    (:data:`controller.table.messages.QUESTIONS`) and fill it, as for :class:`PhaseChanged`;
    empty in older events."""

    id: int
    kind: str
    text: str
    options: list[Any] = []
    seat: int | None = None
    key: str = ""
    args: dict[str, Any] = {}


class QuestionAnswered(Event, frozen=True, tag="answer"):
    """The answer to question ``id``, and who gave it."""

    id: int
    value: Any
    by: str = ""


class SettlementProposed(Event, frozen=True, tag="proposed"):
    """The hand as the controller would settle it, shown for the table to confirm: the wins
    (as :meth:`controller.rules.Win.to_json` writes them) and their settlement
    (:func:`controller.rules.settlement_to_dict`)."""

    hand: int
    wins: list[dict[str, Any]]
    settlement: dict[str, Any]


class HandSettled(Event, frozen=True, tag="settled"):
    """A hand settled: its wins, settlement, and each seat's signed payment (``payments``,
    seat as text to amount, zero-sum), the next dealer and 荒番 counter; ``corrected`` lists
    what the players changed from the camera's reading."""

    session: int
    hand: int
    wins: list[dict[str, Any]]
    settlement: dict[str, Any]
    payments: dict[str, int | str]
    next_dealer: int
    huangfan_next: int
    corrected: list[str] = []


class HandDrawn(Event, frozen=True, tag="drawn"):
    """A hand drawn (流局): nobody pays; the dealer stays and 荒番 moves on."""

    session: int
    hand: int
    next_dealer: int
    huangfan_next: int
    reason: str = ""


class SettlementUndone(Event, frozen=True, tag="undone"):
    """The last settled (or drawn) hand is taken back: its payments leave the ledger and the
    dealer and 荒番 counter return to what they were; the hand waits to be settled again."""

    session: int
    hand: int
    reason: str = ""


AnyEvent = (
    DeviceEvent
    | SeatPressed
    | CameraChanged
    | CameraStatus
    | CommandDone
    | CommandFailed
    | Request
    | SessionStarted
    | PhaseChanged
    | FaultChanged
    | HandStarted
    | CommandRequested
    | Learnt
    | SeatSeen
    | WinDeclared
    | QuestionAsked
    | QuestionAnswered
    | SettlementProposed
    | HandSettled
    | HandDrawn
    | SettlementUndone
)

ALL_TYPES: tuple[type[Event], ...] = AnyEvent.__args__  # type: ignore[attr-defined]
INPUT_TYPES = frozenset(t for t in ALL_TYPES if t.INPUT)


def event_from_json(data: Any) -> Event:
    """An event from its JSON form (a parsed object or the text). Raises
    :class:`~controller.errors.StorageError` naming what is wrong: an unknown type, a newer
    schema version, a missing or mistyped field."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise StorageError(f"an event that is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise StorageError(f"an event is a JSON object, not {type(data).__name__}")
    version = data.get("v", EVENT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version > EVENT_VERSION:
        raise StorageError(
            f"an event of schema version {version!r}; this program reads up to {EVENT_VERSION}"
        )
    fields = {k: v for k, v in data.items() if k != "v"}
    try:
        return msgspec.convert(fields, AnyEvent)  # type: ignore[arg-type]
    except msgspec.ValidationError as exc:
        raise StorageError(f"an event that cannot be read: {exc}") from None


def event_to_json_text(event: Event) -> str:
    """The event as one line of JSON (what the log stores, what ``--json`` prints)."""
    return json.dumps(event.to_json(), ensure_ascii=False, separators=(",", ":"))
