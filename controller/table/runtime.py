"""The running table: one bus, one controller thread, the log, the hardware's effects.

Producers (the table MCU's listener, the seat panel, the camera loop, the dashboard and the
command line) only :meth:`TableRuntime.put` events on one queue. One thread takes them in
order and hands each to the :class:`~controller.table.machine.TableController`; what it
answers is appended to the :class:`~controller.table.store.EventLog` in one transaction
*before* anyone is told (a settlement the players saw is on disk), then published to the
subscribers (the dashboard, ``--json`` output, the simulator's players), and then acted on:
hardware commands go to a worker thread that answers with
:class:`~controller.table.events.CommandDone` or :class:`~controller.table.events.
CommandFailed` on the same bus, so the controller never waits on a motor.

On start the log is replayed into the state, and a hardware step that was asked for and never
answered (the power went mid-shuffle) is asked for again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from controller.errors import DeviceError, MahjongTableError, StorageError
from controller.table import events as ev
from controller.table.machine import ControllerSettings, RequestRefused, TableController
from controller.table.state import TableState, replay

__all__ = ["Hardware", "TableRuntime", "TableStopped"]

log = logging.getLogger(__name__)


class Hardware(Protocol):
    """What the runtime needs of the table's MCU (:class:`firmware_bridge.table_device.
    TableDevice` has it)."""

    def status(self, timeout: float | None = None) -> Any: ...
    def shuffle(self, timeout: float | None = None) -> Any: ...
    def lift_walls(self, timeout: float | None = None) -> Any: ...
    def lower_walls(self, timeout: float | None = None) -> Any: ...
    def roll_dice(self, timeout: float | None = None) -> Any: ...
    def clear_faults(self, timeout: float | None = None) -> Any: ...
    def set_hand_in_progress(self, in_progress: bool) -> None: ...


class TableStopped(MahjongTableError):
    """The table's controller is not running: stopped, or stopped by the event log failing
    (then ``__cause__`` is that :class:`StorageError`). Nothing was asked of it."""


@dataclass
class _Call:
    """A function to run on the controller thread (to read the state consistently)."""

    fn: Callable[[], Any]
    future: Future[Any]


@dataclass
class _Ask:
    """A request waiting for the controller's answer."""

    event: ev.Request
    future: Future[list[ev.Event]]


def prepare_walls(device: Hardware) -> dict[str, Any]:
    """Bring a freshly shuffled set up as the walls: lower the walls if up, shuffle if no set
    waits below, raise. Each step is skipped when the table says it is done already, so
    asking again after a restart does not shuffle twice."""
    st = device.status()
    if st.table_set is not None:
        device.lower_walls()
        st = device.status()
    if st.ready_set is None:
        device.shuffle()
    device.lift_walls()
    st = device.status()
    return {"tile_set": st.table_set}


def _failure(exc: BaseException) -> tuple[str, str]:
    """A hardware exception as (reason, message) for :class:`CommandFailed`."""
    from firmware_bridge.errors import CommandFailed, CommandTimeout, LinkDown

    if isinstance(exc, CommandFailed):
        return (exc.fault or exc.reason), str(exc)
    if isinstance(exc, CommandTimeout):
        return "timeout", str(exc)
    if isinstance(exc, LinkDown):
        return "link_down", str(exc)
    return "error", str(exc)


class TableRuntime:
    """Runs one table. ``log`` is the event log (opened); ``device`` the table's MCU (or
    None: hardware commands then fail, and the table waits); ``clock`` stamps events (wall
    time on a real table; the simulator passes its own); ``on_input`` sees every input as
    the controller takes it, in order (a journal of them replays the controller exactly)."""

    def __init__(
        self,
        log: Any,
        *,
        device: Hardware | None = None,
        clock: Callable[[], float] = time.time,
        settings: ControllerSettings | None = None,
        on_hand_start: Callable[[], None] | None = None,
        on_show: Callable[[TableState], None] | None = None,
        on_input: Callable[[ev.Event], None] | None = None,
        run_commands: bool = True,
    ) -> None:
        self.log = log
        self.device = device
        self.clock = clock
        self.on_hand_start = on_hand_start
        self.on_show = on_show
        self.on_input = on_input
        self.run_commands = run_commands
        state = replay(e for _, e in log.events())
        self.controller = TableController(state, settings)
        self._inbox: queue.Queue[ev.Event | _Ask | _Call | None] = queue.Queue()
        self._commands: queue.Queue[ev.CommandRequested | None] = queue.Queue()
        self._subscribers: list[Callable[[ev.Event], None]] = []
        self._sub_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._worker: threading.Thread | None = None
        self._stopped = threading.Event()
        # taken to queue work that waits for an answer and to stop: nothing is queued once the
        # controller thread has stopped taking work, so no caller waits out its timeout
        self._gate = threading.Lock()
        self.fatal: BaseException | None = None
        self.inputs = 0

    @property
    def state(self) -> TableState:
        """The controller's state. Read it from the controller thread, or take
        :meth:`snapshot` from any other."""
        return self.controller.state

    def snapshot(self) -> dict[str, Any]:
        """The state as JSON, consistent (taken on the controller thread)."""
        return self.call(lambda: self.state.snapshot())

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="table-controller", daemon=True)
        self._worker = threading.Thread(target=self._work, name="table-hardware", daemon=True)
        self._thread.start()
        self._worker.start()
        pending = self.state.pending_command
        if pending is not None and self.run_commands:  # asked before a stop: ask again
            self._commands.put(pending)
        self._apply_hand_flag()

    def stop(self, timeout: float = 5.0) -> None:
        with self._gate:
            self._stopped.set()
            self._inbox.put(None)
        self._commands.put(None)
        for t in (self._thread, self._worker):
            if t is not None and t is not threading.current_thread():
                t.join(timeout)

    def __enter__(self) -> TableRuntime:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- producers -------------------------------------------------------------------------------

    def put(self, event: ev.Event) -> None:
        """Queue an input event (any thread)."""
        if not self._stopped.is_set():
            self._inbox.put(event)

    def request(
        self,
        action: str,
        args: dict[str, Any] | None = None,
        *,
        by: str = "dashboard",
        timeout: float = 10.0,
    ) -> list[ev.Event]:
        """A player's request, answered with the events it produced; raises
        :class:`RequestRefused` (nothing changed) or :class:`StorageError`."""
        event = ev.Request(time=self.clock(), action=action, args=dict(args or {}), by=by)
        future: Future[list[ev.Event]] = Future()
        self._enqueue(_Ask(event, future))
        return future.result(timeout)

    def call(self, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Run ``fn`` on the controller thread (to read the state consistently); raises
        :class:`TableStopped` at once when the controller is not running."""
        future: Future[Any] = Future()
        self._enqueue(_Call(fn, future))
        return future.result(timeout)

    def _enqueue(self, item: _Ask | _Call) -> None:
        with self._gate:
            if self._stopped.is_set():
                raise self._stopped_error()
            self._inbox.put(item)

    def _stopped_error(self) -> TableStopped:
        if self.fatal is not None:
            err = TableStopped(f"the table controller stopped: {self.fatal}")
            err.__cause__ = self.fatal
            return err
        return TableStopped("the table controller is not running")

    def subscribe(self, callback: Callable[[ev.Event], None]) -> Callable[[], None]:
        """Call ``callback`` with every event the controller emits (on its thread: keep it
        quick). Returns a function that unsubscribes."""
        with self._sub_lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._sub_lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    # -- the controller thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._inbox.get()
            if item is None:
                return
            try:
                self._take(item)
            except StorageError as exc:
                # the log cannot be written: nothing more may be decided, or a settlement
                # could be shown that a restart would not know
                log.error("the event log failed: %s", exc)
                self.fatal = exc
                if isinstance(item, _Ask):
                    item.future.set_exception(exc)
                self._shut_inbox()
                return
            except Exception as exc:  # a bug: keep the table alive, say what happened
                log.exception("the controller failed on %r", item)
                # what it decided before failing was applied to the state but not logged:
                # the log is the truth, so the state is rebuilt from it
                self.controller.state = replay(e for _, e in self.log.events())
                if isinstance(item, _Ask | _Call) and not item.future.done():
                    item.future.set_exception(exc)

    def _shut_inbox(self) -> None:
        """Stop taking work, and answer what waits in the queue: nobody waits out a timeout
        on a controller that will not answer."""
        with self._gate:
            self._stopped.set()
        err = self._stopped_error()
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Ask | _Call) and not item.future.done():
                item.future.set_exception(err)

    def _take(self, item: ev.Event | _Ask | _Call) -> None:
        if isinstance(item, _Call):
            try:
                item.future.set_result(item.fn())
            except Exception as exc:
                item.future.set_exception(exc)
            return
        if isinstance(item, _Ask):
            try:
                out = self._handle(item.event)
            except RequestRefused as exc:
                item.future.set_exception(exc)
                return
            item.future.set_result(out)
        else:
            self._handle(item)

    def _handle(self, event: ev.Event) -> list[ev.Event]:
        self.inputs += 1
        if self.on_input is not None:
            self.on_input(event)
        out = self.controller.handle(event)
        if out:
            try:
                self.log.append_many(out)
            except StorageError:
                # what was decided is not on disk: rebuild the state from what is
                self.controller.state = replay(e for _, e in self.log.events())
                raise
            self._publish(out)
            self._act(out)
        return out

    def _publish(self, out: list[ev.Event]) -> None:
        with self._sub_lock:
            subscribers = list(self._subscribers)
        for e in out:
            for cb in subscribers:
                try:
                    cb(e)
                except Exception:
                    log.exception("a subscriber failed on %s", e.type)

    def _act(self, out: list[ev.Event]) -> None:
        for e in out:
            if isinstance(e, ev.CommandRequested):
                if self.run_commands:
                    self._commands.put(e)
            elif isinstance(e, ev.HandStarted) and self.on_hand_start is not None:
                self.on_hand_start()
            elif isinstance(e, ev.PhaseChanged):
                self._apply_hand_flag()
        if self.on_show is not None:
            self.on_show(self.state)

    def _apply_hand_flag(self) -> None:
        """The MCU refuses to move the walls while a hand is in play."""
        if self.device is not None:
            self.device.set_hand_in_progress(
                self.state.phase in ("playing", "win_declared", "reading", "confirming")
            )

    # -- the hardware worker ---------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            cmd = self._commands.get()
            if cmd is None:
                return
            try:
                answer = self._execute(cmd)
            except Exception as exc:  # a bug in a driver: the step fails, the worker goes on
                log.exception("the hardware step %s failed", cmd.command)
                answer = ev.CommandFailed(
                    time=self.clock(),
                    command=cmd.command,
                    reason="error",
                    message=f"{type(exc).__name__}: {exc}",
                )
            self.put(answer)

    def _execute(self, cmd: ev.CommandRequested) -> ev.Event:
        if self.device is None:
            return ev.CommandFailed(
                time=self.clock(),
                command=cmd.command,
                reason="no_device",
                message="no table hardware is connected",
            )
        try:
            if cmd.command == "prepare_walls":
                result: Any = prepare_walls(self.device)
            elif cmd.command == "dice":
                roll = self.device.roll_dice()
                result = [int(roll[0]), int(roll[1])]
            elif cmd.command == "clear_faults":
                self.device.clear_faults()
                result = None
            else:
                return ev.CommandFailed(
                    time=self.clock(),
                    command=cmd.command,
                    reason="unknown",
                    message=f"unknown command {cmd.command!r}",
                )
        except DeviceError as exc:
            reason, message = _failure(exc)
            return ev.CommandFailed(
                time=self.clock(), command=cmd.command, reason=reason, message=message
            )
        return ev.CommandDone(time=self.clock(), command=cmd.command, result=result)
