"""The table's state machine: one input event in, the controller's own events out.

:meth:`TableController.handle` is called by one thread, with one input at a time (see
:mod:`controller.table.runtime`), and is deterministic given its inputs: it reads no clock
(an event's ``time`` is the only time), no randomness and no hardware. Every decision it makes
is an output event, applied to :class:`~controller.table.state.TableState` as it is made, so
the state is always the fold of the outputs so far and a restart replays them.

A hand runs: idle → shuffling (the walls lowered, a set shuffled, the walls raised) → dice →
playing → win_declared (a seat pressed 胡; the discarder confirms, or the winner for a
self-draw) → reading (the winning hand laid open, read by the camera) → confirming (the
settlement is shown; any seat's confirm settles it) → idle. A long press of a confirm button
while playing declares the hand drawn (流局). Faults (a jam, tiles short, the lid open, the link
lost, the MCU restarted, the camera lost) are shown beside the phase; the hand in play is never
dropped for one, and the hardware step they stopped is retried once they clear.

What the controller does not know for sure it asks (:class:`~controller.table.events.
QuestionAsked`): a flagged camera read, whether a self-draw was on a replacement tile (杠开)
when the timing leaves it open, whether a discarder was ready (承包) when their hand was not
laid open, which tile won when it changes the score, a hand that does not read as a win.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.errors import MahjongTableError
from controller.profiles import load_profile
from controller.rules import (
    Hand,
    HandError,
    HuangfanCounter,
    Meld,
    Profile,
    Settlement,
    Win,
    WinInputError,
    WinType,
    is_ready,
    kaibao,
    parse_tiles,
    settle,
    settlement_to_dict,
    wall_break,
)
from controller.table import events as ev
from controller.table.messages import question_text, reason_text
from controller.table.state import SEATS, SeatState, TableState, amount_json

__all__ = ["ControllerSettings", "RequestRefused", "TableController"]

HARDWARE_RETRIES = 3
"""How often a hardware step that failed for a passing reason (the MCU restarted, the link
dropped, a timeout) is asked again before the table waits for a player."""

PASSING = frozenset({"mcu_reset", "timeout", "link_down", "busy"})
BLOCKING_FAULTS = frozenset({"jam", "tiles_short", "motor_stall", "estop", "watchdog"})


class RequestRefused(MahjongTableError):
    """A player's request that cannot be done now, or names something wrong; the message
    says which. Nothing changed."""


@dataclass(frozen=True)
class ControllerSettings:
    """How the controller judges what it cannot see.

    A self-draw declared within ``gangkai_sure_s`` seconds of the winner's own kong or flower
    (with nothing laid at another seat since) was on its replacement tile (杠开); one declared
    ``gangkai_none_s`` or more after was not; in between the table is asked.
    """

    gangkai_sure_s: float = 4.0
    gangkai_none_s: float = 12.0


@functools.lru_cache(maxsize=16)
def _profile(name: str) -> Profile:
    return load_profile(name)


def _meld(m: ev.MeldJson) -> Meld:
    return Meld.of(m.kind, m.tiles, m.source)


class TableController:
    """The state machine of one table. ``state`` is where to start (a replayed log)."""

    def __init__(
        self, state: TableState | None = None, settings: ControllerSettings | None = None
    ) -> None:
        self.state = state or TableState()
        self.settings = settings or ControllerSettings()
        self._out: list[ev.Event] = []
        self._now = 0.0

    # -- the one entry point ---------------------------------------------------------------------

    def handle(self, event: ev.Event) -> list[ev.Event]:
        """Take one input; return the events it produced (already applied to the state).
        A :class:`RequestRefused` leaves the state as it was."""
        self._out = []
        self._now = event.time
        handler = getattr(self, "_on_" + event.type, None)
        if handler is None:
            raise TypeError(f"{event.type} is not an input of the table controller")
        handler(event)
        return self._out

    def _emit(self, event: ev.Event) -> None:
        self.state.apply(event)
        self._out.append(event)

    def _phase(self, phase: str, key: str, **args: Any) -> None:
        """Move to ``phase``, saying why: the reason ``key``
        (:data:`~controller.table.messages.REASONS`) and its arguments."""
        s = self.state
        reason = reason_text(key, args)
        if s.phase != phase or s.phase_reason != reason:
            self._emit(
                ev.PhaseChanged(time=self._now, phase=phase, reason=reason, key=key, args=args)
            )

    def _fault(self, fault: str, active: bool, message: str = "") -> None:
        s = self.state
        if (active and s.faults.get(fault) != message) or (not active and fault in s.faults):
            self._emit(ev.FaultChanged(time=self._now, fault=fault, active=active, message=message))

    def _ask(
        self,
        kind: str,
        key: str,
        seat: int | None = None,
        options: list[Any] | None = None,
        **args: str | int,
    ) -> None:
        """Put a question to the table, unless the same one is open already: its text is the
        template ``key`` (:data:`~controller.table.messages.QUESTIONS`) filled with ``seat``
        and ``args``."""
        s = self.state
        if any(q.kind == kind and q.seat == seat for q in s.open_questions):
            return
        if seat is not None:
            args = {"seat": seat, **args}
        self._emit(
            ev.QuestionAsked(
                time=self._now,
                id=s.asked + 1,
                kind=kind,
                text=question_text(key, args),
                options=options or [],
                seat=seat,
                key=key,
                args=args,
            )
        )

    def _answer(self, kind: str, seat: int | None) -> Any:
        """The latest answer this hand to a question of ``kind`` about ``seat``; ``...`` when
        none was asked or it is not answered yet."""
        s = self.state
        for qid in sorted(s.questions, reverse=True):
            q = s.questions[qid]
            if q.kind == kind and q.seat == seat:
                return s.answers.get(qid, ...)
        return ...

    # -- the table's MCU -------------------------------------------------------------------------

    def _on_device(self, e: ev.DeviceEvent) -> None:
        kind, data = e.kind, e.data
        if kind == "fault":
            self._fault(str(data.get("fault")), True, str(data.get("label", "")))
        elif kind == "faults_cleared":
            for name in data.get("cleared", []):
                self._fault(str(name), False)
            self._resume_hardware()
        elif kind == "lid":
            self._fault("lid_open", bool(data.get("open")), "the table's lid is open")
            if not data.get("open"):
                self._resume_hardware()
        elif kind == "link_lost":
            self._fault("link_lost", True, "no answer from the table's controller")
        elif kind in ("link_restored", "connected"):
            self._fault("link_lost", False)
        elif kind == "reset":
            self._fault("mcu_reset", True, "the table's controller restarted")

    def _on_command_done(self, e: ev.CommandDone) -> None:
        s = self.state
        pending = s.pending_command
        if pending is None or pending.command != e.command:
            return  # an answer to a command asked before a restart, already dealt with
        self._fault("mcu_reset", False)
        if e.command == "prepare_walls" and s.phase == "shuffling":
            self._phase("dice", "rolling")
            self._emit(ev.CommandRequested(time=self._now, command="dice"))
        elif e.command == "dice" and s.phase == "dice":
            self._dice(e.result)
        elif e.command == "clear_faults":
            for fault in list(s.faults):
                if fault in BLOCKING_FAULTS:
                    self._fault(fault, False)
            self._emit(ev.Learnt(time=self._now, fact="command_over", value=None))
            self._resume_hardware()

    def _dice(self, result: Any) -> None:
        s = self.state
        try:
            dice = (int(result[0]), int(result[1]))
            wb = wall_break(s.dealer, dice)
        except (TypeError, ValueError, LookupError, WinInputError):
            self._emit(ev.Learnt(time=self._now, fact="command_over", value=None))
            self._phase("dice", "dice_unreadable", read=repr(result))
            return
        value = {
            "dice": list(dice),
            "wall": wb.wall,
            "stacks": wb.stacks,
            "kaibao": kaibao(dice, _profile(s.profile)),
        }
        self._emit(ev.Learnt(time=self._now, fact="dice", value=value))
        self._phase("playing", "wall_breaks", die1=dice[0], die2=dice[1], seat=wb.wall)

    def _on_command_failed(self, e: ev.CommandFailed) -> None:
        s = self.state
        pending = s.pending_command
        if pending is None or pending.command != e.command:
            return
        self._emit(ev.Learnt(time=self._now, fact="command_over", value={"reason": e.reason}))
        if e.reason == "mcu_reset":
            self._fault("mcu_reset", True, "the table's controller restarted")
        if e.reason in PASSING and pending.attempt < HARDWARE_RETRIES:
            self._emit(
                ev.CommandRequested(time=self._now, command=e.command, attempt=pending.attempt + 1)
            )
            return
        if e.reason in BLOCKING_FAULTS or e.reason == "lid_open":
            self._fault(e.reason, True, e.message)
        self._phase(s.phase, "hardware_failed", failure=e.reason, message=e.message or e.reason)

    def _resume_hardware(self) -> None:
        """Ask again for the hardware step a fault stopped, once nothing blocks it."""
        s = self.state
        if s.pending_command is not None or s.phase not in ("shuffling", "dice"):
            return
        if s.faults.keys() & (BLOCKING_FAULTS | {"lid_open"}):
            return
        command = "prepare_walls" if s.phase == "shuffling" else "dice"
        self._phase(s.phase, "going_on")
        self._emit(ev.CommandRequested(time=self._now, command=command))

    def _retry_hardware(self) -> None:
        """A player asked to go on after a fault: clear the table's latched faults first."""
        s = self.state
        if s.pending_command is not None:
            return
        if s.faults.keys() & BLOCKING_FAULTS:
            self._emit(ev.CommandRequested(time=self._now, command="clear_faults"))
        else:
            self._resume_hardware()

    # -- the camera ------------------------------------------------------------------------------

    def _on_camera_status(self, e: ev.CameraStatus) -> None:
        self._fault("camera_lost", not e.live, e.message or "the camera is not delivering frames")

    def _on_camera_changed(self, e: ev.CameraChanged) -> None:
        change = e.kind
        if e.meld is not None and e.kind in ("meld", "meld_changed") and _is_kong(e.meld):
            change = "kong"
        flags = list(e.view_notes)
        if e.flagged and e.note and e.note not in flags:
            flags.append(f"{e.kind}: {e.note}")
        self._emit(
            ev.SeatSeen(
                time=self._now,
                seat=e.seat,
                change=change,
                flowers=e.view_flowers,
                melds=list(e.view_melds),
                open_tiles=e.view_open,
                flags=flags,
            )
        )
        s = self.state
        if s.phase == "playing" and len(set(parse_tiles(e.view_flowers))) == 8:
            self._emit(
                ev.WinDeclared(time=self._now, seat=e.seat, how="eight_flowers", source="camera")
            )
            self._phase("reading", "eight_flowers", seat=e.seat)
            self._read()
        elif s.phase == "reading":
            self._read()
        elif s.phase == "confirming" and e.seat in s.winners:
            self._phase("reading", "tiles_changed", seat=e.seat)
            self._read()

    # -- the seat panel --------------------------------------------------------------------------

    def _on_seat_pressed(self, e: ev.SeatPressed) -> None:
        s = self.state
        seat, button, long = e.seat, e.button, e.long
        if s.phase == "idle" and button == "confirm":
            self._start_hand()
        elif s.phase in ("shuffling", "dice") and button == "confirm":
            self._retry_hardware()
        elif s.phase == "playing":
            if button == "win" and not long:
                self._declare(seat, None, None, "panel")
            elif button == "confirm" and long:
                self._drawn(f"declared drawn at seat {seat}")
        elif s.phase == "win_declared":
            self._how_from_panel(seat, button, long)
        elif s.phase in ("reading", "confirming") and button == "win" and long:
            if seat in _standing(s.winners):  # taken back while the hand is read (诈胡)
                self._cancel_win(seat)
        elif s.phase == "confirming" and button == "confirm":
            q = s.open_questions
            if q and q[0].kind in ("gangkai", "ready") and q[0].seat in (seat, None):
                self._answered(q[0].id, not long, f"seat {seat}")
            elif not q and not long:
                self._settle(f"seat {seat}", seat)

    def _how_from_panel(self, seat: int, button: str, long: bool) -> None:
        # a win taken back stays in the state as "withdrawn": it is no longer a winner
        winners = _standing(self.state.winners)
        if button == "win":
            if seat in winners and long:  # the winner takes it back (诈胡 withdrawn)
                self._cancel_win(seat)
            elif seat not in winners and not long:
                self._declare(seat, None, None, "panel")  # a second winner on one discard
            return
        if seat in winners:
            if len(winners) == 1 and not long:
                self._set_how("self_draw", None, "self_draw_confirmed", seat=seat)
        else:
            how = "robbing_kong" if long else "discard"
            self._set_how(how, seat, how + "_confirmed", seat=seat)

    def _declare(self, seat: int, how: str | None, discarder: int | None, source: str) -> None:
        self._emit(
            ev.WinDeclared(time=self._now, seat=seat, how=how, discarder=discarder, source=source)
        )
        if how is None:
            self._phase("win_declared", "win_declared", seat=seat)
        else:
            self._phase("reading", "wins", seat=seat)
            self._read()

    def _set_how(self, how: str, discarder: int | None, key: str, **args: Any) -> None:
        for seat in sorted(_standing(self.state.winners)):
            self._emit(
                ev.WinDeclared(
                    time=self._now, seat=seat, how=how, discarder=discarder, source="panel"
                )
            )
        self._phase("reading", key, **args)
        self._read()

    def _cancel_win(self, seat: int) -> None:
        s = self.state
        self._emit(ev.WinDeclared(time=self._now, seat=seat, how="withdrawn", source="panel"))
        standing = _standing(s.winners)
        if not standing:
            self._phase("playing", "win_withdrawn", seat=seat)
        elif any(w.how is None for w in standing.values()):
            first = min(k for k, w in standing.items() if w.how is None)
            self._phase("win_declared", "win_declared", seat=first)
        else:  # the others' wins stand: read them again without this one
            self._read()

    # -- requests from the dashboard and the command line -------------------------------------

    def _on_request(self, e: ev.Request) -> None:
        action = e.action
        handler = getattr(self, "_request_" + action, None)
        if handler is None:
            raise RequestRefused(f"unknown action {action!r}")
        handler(e.args, e.by or "dashboard")

    def _request_new_session(self, args: dict[str, Any], by: str) -> None:
        s = self.state
        if s.phase not in ("idle",) and s.session:
            raise RequestRefused(f"a hand is in progress ({s.phase}): finish it first")
        profile = str(args.get("profile", s.profile))
        try:
            _profile(profile)
        except MahjongTableError as exc:
            raise RequestRefused(f"profile: {exc}") from None
        stake = _stake(args.get("stake", s.stake))
        seats = args.get("seats", s.seat_names)
        if not (
            isinstance(seats, list)
            and len(seats) == SEATS
            and all(isinstance(n, str) and 0 < len(n) <= 40 and n.isprintable() for n in seats)
        ):
            raise RequestRefused("seats: four names, each 1-40 printable characters")
        dealer = args.get("dealer", 0)
        if isinstance(dealer, bool) or not isinstance(dealer, int) or not 0 <= dealer < SEATS:
            raise RequestRefused(f"dealer: a seat 0-3, not {dealer!r}")
        self._emit(
            ev.SessionStarted(
                time=self._now,
                session=s.session + 1,
                profile=profile,
                stake=amount_json(stake),
                seats=list(seats),
                dealer=dealer,
            )
        )

    def _request_start_hand(self, args: dict[str, Any], by: str) -> None:
        if self.state.phase != "idle":
            raise RequestRefused(f"a hand is already under way ({self.state.phase})")
        self._start_hand()

    def _request_retry(self, args: dict[str, Any], by: str) -> None:
        if self.state.phase not in ("shuffling", "dice"):
            raise RequestRefused("nothing to retry: the table is not shuffling or rolling")
        self._retry_hardware()

    def _request_declare_win(self, args: dict[str, Any], by: str) -> None:
        s = self.state
        if s.phase not in ("playing", "win_declared"):
            raise RequestRefused(f"no hand is being played ({s.phase})")
        seat = _seat(args.get("seat"), "seat")
        how, discarder = _how(args)
        if how is None:
            self._declare(seat, None, None, by)
        else:
            self._emit(
                ev.WinDeclared(time=self._now, seat=seat, how=how, discarder=discarder, source=by)
            )
            self._set_how(how, discarder, "how_declared", by=by, seat=seat)

    def _request_declare_drawn(self, args: dict[str, Any], by: str) -> None:
        if self.state.phase != "playing":
            raise RequestRefused(
                f"only a hand being played can be declared drawn ({self.state.phase})"
            )
        self._drawn(f"declared drawn from the {by}")

    def _request_answer(self, args: dict[str, Any], by: str) -> None:
        qid = args.get("question")
        q = self.state.questions.get(qid) if isinstance(qid, int) else None
        if q is None or qid in self.state.answers:
            raise RequestRefused(f"no open question {qid!r}")
        value = args.get("value")
        _check_answer(q, value)
        self._answered(q.id, value, by)

    def _answered(self, qid: int, value: Any, by: str) -> None:
        q = self.state.questions[qid]
        self._emit(ev.QuestionAnswered(time=self._now, id=qid, value=value, by=by))
        if q.kind == "seat" and q.seat is not None:
            self._correct_seat(q.seat, value, "confirmed" if value == "ok" else "corrected")
        if self.state.phase in ("reading", "confirming"):
            self._read()

    def _request_correct(self, args: dict[str, Any], by: str) -> None:
        s = self.state
        if s.phase not in ("reading", "confirming"):
            raise RequestRefused(f"nothing to correct now ({s.phase})")
        what = args.get("field")
        if what == "seat":
            seat = _seat(args.get("seat"), "seat")
            value = args.get("value")
            _check_seat(value)
            self._correct_seat(seat, value, "corrected")
        elif what == "how":
            how, discarder = _how(args)
            if how is None:
                raise RequestRefused("how: self_draw, discard, robbing_kong or eight_flowers")
            for seat in sorted(s.winners):
                self._emit(
                    ev.WinDeclared(
                        time=self._now, seat=seat, how=how, discarder=discarder, source="correction"
                    )
                )
        else:
            raise RequestRefused("field: 'seat' (its flowers, melds, tiles) or 'how'")
        self._phase("reading", "corrected", by=by)
        self._read()

    def _correct_seat(self, seat: int, value: Any, change: str) -> None:
        view = self.state.seats[seat]
        if isinstance(value, dict):
            melds = [
                ev.MeldJson(m["kind"], m["tiles"], m.get("from")) for m in value.get("melds", [])
            ]
            flowers = value.get("flowers", view.flowers)
            open_tiles = value.get("open_tiles", view.open_tiles)
        else:
            melds, flowers, open_tiles = view.melds, view.flowers, view.open_tiles
        self._emit(
            ev.SeatSeen(
                time=self._now,
                seat=seat,
                change=change,
                flowers=flowers,
                melds=melds,
                open_tiles=open_tiles,
                flags=[],
            )
        )

    def _request_confirm(self, args: dict[str, Any], by: str) -> None:
        s = self.state
        if s.phase != "confirming" or s.proposal is None:
            raise RequestRefused(f"no settlement is waiting to be confirmed ({s.phase})")
        if s.open_questions:
            raise RequestRefused("answer the open questions first")
        self._settle(by)

    def _request_undo(self, args: dict[str, Any], by: str) -> None:
        s = self.state
        if not s.closed or s.phase != "idle":
            raise RequestRefused("only the last hand can be undone, before the next one starts")
        last = s.closed[-1]
        self._emit(
            ev.SettlementUndone(
                time=self._now, session=s.session, hand=last.hand, reason=f"undone from the {by}"
            )
        )
        if last.outcome == "settled":
            self._phase("confirming", "undone_settled")
        else:
            self._phase("playing", "undone_drawn")

    def _request_clear_fault(self, args: dict[str, Any], by: str) -> None:
        self._retry_hardware()

    # -- a hand's start and end -----------------------------------------------------------------

    def _start_hand(self) -> None:
        s = self.state
        if not s.session:
            raise RequestRefused("no session: start one first")
        self._emit(
            ev.HandStarted(
                time=self._now,
                session=s.session,
                hand=s.hand + 1,
                dealer=s.dealer,
                huangfan=s.huangfan,
            )
        )
        self._phase("shuffling", "shuffling")
        self._emit(ev.CommandRequested(time=self._now, command="prepare_walls"))

    def _drawn(self, reason: str) -> None:
        s = self.state
        profile = _profile(s.profile)
        after = HuangfanCounter(s.huangfan).after_hand(s.dice, 0, profile)
        self._emit(
            ev.HandDrawn(
                time=self._now,
                session=s.session,
                hand=s.hand,
                next_dealer=s.dealer,
                huangfan_next=after.value,
                reason=reason,
            )
        )
        self._phase("idle", "drawn", hand=s.hand)

    def _settle(self, by: str, seat: int | None = None) -> None:
        """Settle the proposal, confirmed ``by`` someone (at ``seat``, from its panel)."""
        s = self.state
        p = s.proposal
        assert p is not None
        st = p.settlement
        self._emit(
            ev.HandSettled(
                time=self._now,
                session=s.session,
                hand=s.hand,
                wins=p.wins,
                settlement=st,
                payments={k: amount_json(Fraction(str(v))) for k, v in st["payments"].items()},
                next_dealer=st["next_dealer"] if st["next_dealer"] is not None else s.dealer,
                huangfan_next=st["huangfan_next"],
                corrected=list(s.corrected),
            )
        )
        if seat is None:
            self._phase("idle", "settled", hand=s.hand, by=by)
        else:
            self._phase("idle", "settled_at_seat", hand=s.hand, seat=seat)

    # -- reading the win -------------------------------------------------------------------------

    def _read(self) -> None:
        """Build the wins from what the table shows; ask what is missing; propose."""
        s = self.state
        winners = _standing(s.winners)
        if not winners:
            return
        if len(winners) > 1 and any(w.how not in (None, "discard") for w in winners.values()):
            # only one discard can be won by several seats at once: the table says so and
            # waits for the others to take their 胡 back
            self._phase("reading", "one_winner_only", seats=len(winners))
            return
        waiting = self._missing(winners)
        if waiting is not None:
            self._phase("reading", waiting[0], **waiting[1])
            return
        wins = self._wins(winners)
        if wins is None:
            self._phase("confirming", "question_open")
            return
        settlement = settle(wins, _profile(s.profile))
        if not settlement.valid:
            for r in settlement.results:
                if not r.valid:
                    self._ask("seat", "not_a_win_because", r.win.winner, refusal=str(r.refusal))
            self._phase("confirming", "question_open")
            return
        self._propose(wins, settlement)

    def _missing(self, winners: dict[int, ev.WinDeclared]) -> tuple[str, dict[str, Any]] | None:
        """What the reading waits for (a reason's key and its arguments), if anything."""
        s = self.state
        for seat, w in sorted(winners.items()):
            if w.how is None:
                return "win_declared", {"seat": seat}
            if w.how == "eight_flowers":
                continue
            want = 14 - 3 * len(s.seats[seat].melds)
            have = len(parse_tiles(s.seats[seat].open_tiles))
            if have != want:
                return "waiting_hand", {"seat": seat, "have": have, "want": want}
        return None

    def _wins(self, winners: dict[int, ev.WinDeclared]) -> list[Win] | None:
        """The wins, or None when a question had to be asked first."""
        s = self.state
        pending = False
        for seat in sorted(winners):
            if s.seats[seat].flags:
                flags, shown = _seat_question(s.seats[seat])
                self._ask("seat", "camera_unsure", seat, flags=flags, shown=shown)
                pending = True
        if pending:
            return None
        wins: list[Win] = []
        for seat, w in sorted(winners.items()):
            win = self._win(seat, w)
            if win is None:
                pending = True
            else:
                wins.append(win)
        return None if pending else wins

    def _win(self, seat: int, w: ev.WinDeclared) -> Win | None:
        s = self.state
        view = s.seats[seat]
        try:
            melds = tuple(_meld(m) for m in view.melds)
            flowers = tuple(parse_tiles(view.flowers))
            tiles = parse_tiles(view.open_tiles)
        except HandError as exc:
            self._ask("seat", "impossible_tiles", seat, error=str(exc))
            return None
        assert w.how is not None  # _missing waits for how before anything is read
        how = WinType(w.how)
        pairs = _bound_pairs(s.seats)
        common: dict[str, Any] = {
            "winner": seat,
            "how": how,
            "flowers": len(flowers),
            "discarder": w.discarder,
            "dice": s.dice,
            "huangfan": s.huangfan,
            "bound_pairs": tuple(sorted(pairs)),
            "dealer": s.dealer,
            "stake": Fraction(str(s.stake)),
        }
        if how is WinType.EIGHT_FLOWERS:
            return _build(Hand((), melds, flowers, None), common)
        ready = self._discarder_ready(seat, w, pairs)
        if ready is ...:
            return None
        common["discarder_ready"] = ready
        if how is WinType.SELF_DRAW:
            after = self._gangkai(seat, w)
            if after is ...:
                return None
            common.update(after)
        return self._choose_winning_tile(seat, tiles, melds, flowers, common)

    def _choose_winning_tile(
        self, seat: int, tiles: list, melds: tuple, flowers: tuple, common: dict[str, Any]
    ) -> Win | None:
        """The winning tile is not marked on the table: where the choice changes the
        settlement, ask; else take any."""
        profile = _profile(self.state.profile)
        answer = self._answer("winning_tile", seat)
        options: dict[str, tuple[Win, Any]] = {}
        for t in sorted(set(tiles)):
            rest = list(tiles)
            rest.remove(t)
            win = _build(Hand(tuple(rest), melds, flowers, t), common)
            if win is None:
                continue
            st = settle([win], profile)
            if st.valid:
                options[t.code] = (win, st.totals)
        if isinstance(answer, str) and answer in options:
            return options[answer][0]
        if not options:
            self._ask("seat", "not_a_win", seat)
            return None
        if len({v[1] for v in options.values()}) > 1:
            self._ask("winning_tile", "winning_tile", seat, sorted(options))
            return None
        return next(iter(options.values()))[0]

    def _discarder_ready(self, seat: int, w: ev.WinDeclared, pairs: set[tuple[int, int]]) -> Any:
        """Whether the discarder was ready (听牌), where 承包 needs it: from their hand laid
        open, else asked. ``None`` where it does not matter; ``...`` while asked."""
        s = self.state
        d = w.discarder
        if w.how != "discard" or d is None:
            return None
        partners = {b for a, b in pairs if a == seat} | {a for a, b in pairs if b == seat}
        if not partners or d in partners:
            return None
        answer = self._answer("ready", d)
        if isinstance(answer, bool):
            return answer
        view = s.seats[d]
        try:
            hand = Hand(tuple(parse_tiles(view.open_tiles)), tuple(_meld(m) for m in view.melds))
            hand.check_size(complete=False)
            if not view.flags:
                return is_ready(hand, _profile(s.profile))
        except HandError:
            pass
        self._ask("ready", "ready", d, [True, False])
        return ...

    def _gangkai(self, seat: int, w: ev.WinDeclared) -> Any:
        """杠开 on a self-draw: the winner's own kong or flower just before, and nothing laid
        at another seat since. Returns the Win's after_kong / after_flower, or ``...``."""
        s = self.state
        view = s.seats[seat]
        last, when = view.last_play, view.last_play_time
        if last not in ("kong", "flower") or when is None:
            return {}
        others = [v.last_play_time or 0.0 for k, v in enumerate(s.seats) if k != seat]
        if any(t > when for t in others):
            return {}
        key = "after_kong" if last == "kong" else "after_flower"
        answer = self._answer("gangkai", seat)
        if isinstance(answer, bool):
            return {key: answer}
        gap = w.time - when
        if gap <= self.settings.gangkai_sure_s:
            return {key: True}
        if gap >= self.settings.gangkai_none_s:
            return {}
        what = "kong" if last == "kong" else "flower"
        self._ask("gangkai", "gangkai_" + what, seat, [True, False])
        return ...

    def _propose(self, wins: list[Win], settlement: Settlement) -> None:
        s = self.state
        self._emit(
            ev.SettlementProposed(
                time=self._now,
                hand=s.hand,
                wins=[w.to_json() for w in wins],
                settlement=settlement_to_dict(settlement),
            )
        )
        self._phase("confirming", "check_settlement")


# -- helpers ----------------------------------------------------------------------------------


def _build(hand: Hand, fields: dict[str, Any]) -> Win | None:
    try:
        return Win(hand=hand, **fields)
    except (WinInputError, HandError):
        return None


def _standing(winners: dict[int, ev.WinDeclared]) -> dict[int, ev.WinDeclared]:
    """The seats that have declared 胡 and not taken it back."""
    return {k: w for k, w in winners.items() if w.how != "withdrawn"}


def _is_kong(meld: ev.MeldJson) -> bool:
    """A kong by its kind, or by its four tiles (the notation writes "5555p", not four codes)."""
    if "kong" in meld.kind:
        return True
    try:
        return len(parse_tiles(meld.tiles)) == 4
    except HandError:
        return False


def _bound_pairs(seats: list[SeatState]) -> set[tuple[int, int]]:
    """承包: (a, b) where a's melds show three or more claims from b."""
    pairs: set[tuple[int, int]] = set()
    for a, view in enumerate(seats):
        claims = Counter(
            m.source for m in view.melds if m.source is not None and m.kind != "concealed_kong"
        )
        pairs |= {(a, b) for b, n in claims.items() if n >= 3 and b != a}
    return pairs


def _seat_question(view: SeatState) -> tuple[str, str]:
    """The arguments of the question on a seat the camera is unsure of: what it is unsure
    of (the camera's notes, in English) and what it read, in the notation."""
    melds = " ".join(
        f"[{m.tiles}<{m.source}]" if m.source is not None else f"[{m.tiles}]" for m in view.melds
    )
    shown = " ".join(x for x in (view.flowers, melds, view.open_tiles) if x)
    return "; ".join(view.flags), shown


def _seat(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEATS:
        raise RequestRefused(f"{name}: a seat 0-3, not {value!r}")
    return value


def _stake(value: Any) -> Fraction:
    """The stake as the config and a win's JSON take it (one rule for all three)."""
    from controller.rules.stake import parse_stake

    try:
        return parse_stake(value, fraction_text=True)
    except ValueError as exc:
        raise RequestRefused(f"stake: {exc}") from None


def _how(args: dict[str, Any]) -> tuple[str | None, int | None]:
    how = args.get("how")
    if how is None:
        return None, None
    if how not in ("self_draw", "discard", "robbing_kong", "eight_flowers"):
        raise RequestRefused(f"how: self_draw, discard, robbing_kong or eight_flowers, not {how!r}")
    if how in ("discard", "robbing_kong"):
        return how, _seat(args.get("discarder"), "discarder")
    return how, None


def _check_answer(q: ev.QuestionAsked, value: Any) -> None:
    # 1 == True in Python: an answer must be one of the options and of its type
    if q.options and not any(value == o and type(value) is type(o) for o in q.options):
        raise RequestRefused(f"answer: one of {q.options}, not {value!r}")
    if q.kind == "seat" and value != "ok":
        _check_seat(value)


def _check_seat(value: Any) -> None:
    """A seat's corrected contents: ``{"flowers": "春梅", "melds": [{"kind", "tiles",
    "from"}], "open_tiles": "123m ..."}``, each part optional."""
    if not isinstance(value, dict) or not set(value) <= {"flowers", "melds", "open_tiles"}:
        raise RequestRefused('a seat is {"flowers": ..., "melds": [...], "open_tiles": ...}')
    try:
        for key in ("flowers", "open_tiles"):
            if key in value:
                if not isinstance(value[key], str):
                    raise RequestRefused(f"{key}: tiles written as text")
                tiles = parse_tiles(value[key])
                if (key == "flowers") != all(t.is_flower for t in tiles) and tiles:
                    raise RequestRefused(f"{key}: {'only' if key == 'flowers' else 'no'} flowers")
        melds = value.get("melds", [])
        if not isinstance(melds, list) or len(melds) > 4:
            raise RequestRefused("melds: a list of at most four melds")
        for m in melds:
            if not isinstance(m, dict) or not set(m) <= {"kind", "tiles", "from"}:
                raise RequestRefused('melds: each {"kind", "tiles", "from"}')
            Meld.of(m.get("kind", ""), str(m.get("tiles", "")), m.get("from"))
    except HandError as exc:
        raise RequestRefused(str(exc)) from None
