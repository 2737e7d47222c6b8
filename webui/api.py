"""The dashboard's JSON API under ``/api``: the table's state, its live feed, the players'
actions, the history and its downloads, the profiles and the camera's view.

Reads need nothing. Every POST needs the session's CSRF token (:mod:`webui.auth`), and the
two actions that move money after the fact (``new_session``, ``undo``) need an admin login.
Actions go to the controller as :class:`~controller.table.events.Request` events and come
back with what they caused; a refusal (``RequestRefused``) is a 409 with the controller's
own words. The whole API is described in ``/api/openapi.json`` (:mod:`webui.openapi`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request

from controller.errors import MahjongTableError
from controller.profiles import builtin_names, load_profile
from controller.table.ledger import (
    Ledger,
    SessionRecord,
    amount_json,
    build_ledger,
    export_csv,
    export_json,
)
from webui import get_dashboard
from webui.auth import is_admin
from webui.http_errors import ApiError, parse_body
from webui.openapi import ACTIONS, document
from webui.stream import StreamFull

__all__ = ["ACTIONS", "ADMIN_ACTIONS", "BY_HEADER", "bp"]

log = logging.getLogger(__name__)

bp = Blueprint("api", __name__, url_prefix="/api")


ADMIN_ACTIONS = frozenset({"new_session", "undo"})
"""Actions that change what players owe after the table agreed it: admin login only."""

BY_HEADER = "X-Table-Device"
"""Optional header naming who acts (a seat's tablet, a phone); the controller records it."""

NO_STORE = {"Cache-Control": "no-store"}


# -- the table -------------------------------------------------------------------------------


def _table() -> Any:
    """The table, or a 503 when its controller has stopped (every request would wait out its
    timeout otherwise)."""
    table = get_dashboard().table
    fatal = getattr(table, "fatal", None)
    if fatal is not None:
        raise ApiError(503, f"the table controller has stopped ({fatal}): restart the table")
    return table


def _snapshot() -> dict[str, Any]:
    try:
        snapshot: dict[str, Any] = _table().snapshot()
    except TimeoutError:
        raise ApiError(503, "the table controller is not answering: is it running?") from None
    return {**snapshot, "server_time": time.time()}


def _by() -> str:
    """Who acts: the ``X-Table-Device`` header (UTF-8 welcome), else ``dashboard``."""
    raw = request.headers.get(BY_HEADER)
    if raw is None:
        return "dashboard"
    try:
        name = raw.encode("latin-1").decode("utf-8").strip()
    except (UnicodeEncodeError, UnicodeDecodeError):
        name = ""
    if not 1 <= len(name) <= 32 or not name.isprintable():
        raise ApiError(400, f"{BY_HEADER}: a name of 1-32 printable characters")
    return name


def _check_profile(body: dict[str, Any]) -> None:
    """A new session's profile: a built-in one or the one in force. The controller would
    also read any ``.toml`` path it is given, and a client must not point it at files."""
    if "profile" not in body:
        return
    allowed = [*builtin_names()]
    current = _table().snapshot().get("profile")
    if isinstance(current, str) and current not in allowed:
        allowed.append(current)
    profile = body["profile"]
    if not isinstance(profile, str) or profile not in allowed:
        raise ApiError(400, f"profile: one of {', '.join(allowed)}, not {profile!r}")


# -- state and the live feed -------------------------------------------------------------------


@bp.get("/state")
def state() -> Response:
    """The whole state of the table now, and the server's clock (for timers on the page)."""
    response = jsonify(_snapshot())
    response.headers.update(NO_STORE)
    return response


@bp.get("/events")
def events() -> Response:
    """Server-Sent Events: a snapshot, then every event, and a snapshot after each burst."""
    _table()
    broker = get_dashboard().broker
    try:
        client = broker.open()
    except StreamFull as exc:
        raise ApiError(
            503, f"{exc}: close a dashboard tab or try again later", {"Retry-After": "15"}
        ) from None
    except TimeoutError:
        raise ApiError(503, "the table controller is not answering: is it running?") from None
    response = Response(broker.stream(client), mimetype="text/event-stream")
    response.headers.update(NO_STORE)
    response.headers["X-Accel-Buffering"] = "no"  # a proxy in front must not hold frames back
    response.call_on_close(client.close)
    return response


# -- actions -----------------------------------------------------------------------------------


@bp.post("/actions/<action>")
def act(action: str) -> Response:
    """One of :data:`ACTIONS`, its arguments the JSON object sent."""
    if action not in ACTIONS:
        raise ApiError(400, f"unknown action {action[:40]!r} (actions: {', '.join(ACTIONS)})")
    body = parse_body()
    by = _by()
    if action in ADMIN_ACTIONS and not is_admin():
        raise ApiError(403, f"{action} needs the admin PIN: log in first")
    if action == "new_session":
        _check_profile(body)
    table = _table()
    timeout = float(current_app.config["REQUEST_TIMEOUT_S"])
    try:
        out = table.request(action, body, by=by, timeout=timeout)
    except TimeoutError:
        raise ApiError(
            504,
            f"the table did not answer within {timeout:g} s; it may still do it: watch the table",
        ) from None
    return jsonify(events=[e.to_json() for e in out], state=_snapshot())


# -- history -----------------------------------------------------------------------------------


def _ledger() -> Ledger:
    reader = _table().log.reader()
    try:
        return build_ledger(reader.events())
    finally:
        reader.close()


def _session_json(session: SessionRecord) -> dict[str, Any]:
    """A session as :func:`export_json` writes it, with whether its money adds up. One that
    does not is still shown (export_json refuses it: nothing settles up a sum that is not
    zero), with each hand's payments and the totals, so the problem can be found."""
    try:
        Ledger([session]).check_zero_sum()
    except MahjongTableError as exc:
        return {**_unbalanced_json(session), "zero_sum": False, "problem": str(exc)}
    return {**export_json(session), "zero_sum": True, "problem": None}


def _unbalanced_json(session: SessionRecord) -> dict[str, Any]:
    return {
        "session": session.number,
        "time": session.started,
        "profile": session.profile,
        "stake": session.stake,
        "seats": session.seat_names,
        "dealer": session.dealer,
        "hands": [
            {
                "hand": h.number,
                "time": h.started,
                "dealer": h.dealer,
                "huangfan": h.huangfan,
                "outcome": h.outcome,
                "wins": list(h.wins),
                "settlement": h.settlement,
                "payments": None if h.payments is None else [amount_json(x) for x in h.payments],
                "corrected": list(h.corrected),
            }
            for h in session.hands
        ],
        "totals": [amount_json(x) for x in session.totals],
        "settle_up": None,
    }


def _session(number: int) -> SessionRecord:
    try:
        return _ledger().session(number)
    except KeyError:
        raise ApiError(404, f"no session {number} in the log") from None


@bp.get("/history")
def history() -> Response:
    """Every session in the log, oldest first, each with its hands and totals."""
    response = jsonify(sessions=[_session_json(s) for s in _ledger().sessions])
    response.headers.update(NO_STORE)
    return response


def _download(data: bytes, mimetype: str, filename: str) -> Response:
    return Response(
        data,
        mimetype=mimetype,
        headers={"Content-Disposition": f'attachment; filename="{filename}"', **NO_STORE},
    )


@bp.get("/history/<int:number>.json")
def history_json(number: int) -> Response:
    text = json.dumps(_session_json(_session(number)), ensure_ascii=False, indent=2)
    return _download(text.encode("utf-8"), "application/json", f"mahjong-session-{number}.json")


@bp.get("/history/<int:number>.csv")
def history_csv(number: int) -> Response:
    # utf-8 with a BOM: a spreadsheet then reads the players' Chinese names right
    data = export_csv(_session(number)).encode("utf-8-sig")
    return _download(data, "text/csv", f"mahjong-session-{number}.csv")


# -- profiles, camera, announcements, the API itself -------------------------------------------


def _profile_summary(name: str) -> dict[str, Any]:
    profile = load_profile(name)
    return {"name": name, "title": profile.title, "description": profile.description}


@bp.get("/profiles")
def profiles() -> Response:
    """The built-in profiles, and the one in force with its settings (units, caps, hands)."""
    builtin = [_profile_summary(n) for n in builtin_names()]
    name = _table().snapshot().get("profile")
    current: dict[str, Any] = {"name": name}
    try:
        profile = load_profile(str(name))
    except MahjongTableError as exc:
        current["problem"] = str(exc)
    else:
        current.update(
            title=profile.title,
            lezi=profile.units.lezi,
            flower_hand_cap=profile.hands.flower_hand_cap,
            settings=profile.to_dict(),
        )
    return jsonify(builtin=builtin, current=current)


@bp.get("/camera.jpg")
def camera() -> Response:
    """The camera's last frame with the tiles it read drawn over it."""
    feed = get_dashboard().camera
    if feed is None:
        raise ApiError(404, "this table has no camera")
    try:
        jpeg = feed.view_jpeg()
    except Exception as exc:  # a frame that cannot be drawn must not take the page down
        log.warning("the camera view failed: %s", exc)
        raise ApiError(503, f"the camera view cannot be drawn: {exc}") from None
    if jpeg is None:
        raise ApiError(404, "no camera frame yet")
    return Response(jpeg, mimetype="image/jpeg", headers=NO_STORE)


def _announce_json() -> dict[str, Any]:
    announcer = get_dashboard().announcer
    if announcer is None:
        return {"language": "off", "languages": ["off"], "available": False}
    return {
        "language": announcer.language,
        "languages": list(announcer.LANGUAGES),
        "available": announcer.available,
    }


@bp.get("/announce")
def announce_get() -> Response:
    """The spoken announcement's language, and whether the speech engine is installed."""
    return jsonify(_announce_json())


@bp.post("/announce")
def announce_set() -> Response:
    """Switch the announcement's language (``cmn``, ``en``) or turn it ``off``."""
    body = parse_body()
    dashboard = get_dashboard()
    announcer = dashboard.announcer
    if announcer is None:
        raise ApiError(409, "this table has no announcer")
    language = body.get("language")
    if language not in announcer.LANGUAGES:
        choices = ", ".join(announcer.LANGUAGES)
        raise ApiError(400, f"language: one of {choices}, not {language!r}")
    announcer.language = language
    try:
        dashboard.save_setting("announce", language)
    except OSError as exc:
        log.warning("the announcement setting was not saved: %s", exc)
    return jsonify(_announce_json())


@bp.get("/openapi.json")
def openapi() -> Response:
    """This API, described as OpenAPI 3.1."""
    return jsonify(document())
