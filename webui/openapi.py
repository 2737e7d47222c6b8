"""The dashboard's API described as OpenAPI 3.1, as data: what ``/api/openapi.json`` serves.

Written by hand beside the views (:mod:`webui.api`, :mod:`webui.auth`) rather than generated,
so it says what each endpoint means to a client, not only its shape;
``tests/test_openapi.py`` checks that every ``/api`` route of the app is in it with its
methods, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["DOCUMENT", "document"]


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A response with a JSON body of this schema."""
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    """An error response: its body is an ``Error``."""
    return _json(description, {"$ref": "#/components/schemas/Error"})


def _body(schema: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """A request body of JSON with this schema."""
    return {"required": required, "content": {"application/json": {"schema": schema}}}


CSRF: list[dict[str, list[str]]] = [{"csrf": []}]

ACTIONS = (
    "start_hand",
    "retry",
    "declare_win",
    "declare_drawn",
    "answer",
    "correct",
    "confirm",
    "undo",
    "new_session",
    "clear_fault",
)
"""What the dashboard may ask the controller (``controller.table.machine``'s ``_request_*``);
anything else is refused before the controller sees it."""

_NUMBER = {"name": "number", "in": "path", "required": True, "schema": {"type": "integer"}}

_JSON_BODY = _body({"type": "object"}, required=False)

DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "mahjong-table dashboard API",
        "version": "1",
        "description": (
            "The self-scoring mahjong table's state, live events and actions. Reads need "
            "nothing. Every POST needs the header X-CSRF-Token with the token from GET "
            "/api/csrf (kept in the session cookie, so send the cookie too). new_session and "
            'undo also need an admin login. Every error is {"error": "..."} with a 4xx '
            "or 5xx status."
        ),
    },
    "components": {
        "securitySchemes": {
            "csrf": {"type": "apiKey", "in": "header", "name": "X-CSRF-Token"},
        },
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {"error": {"type": "string", "description": "what went wrong"}},
            },
            "State": {
                "type": "object",
                "description": (
                    "The table's whole state (controller.table.state.TableState.snapshot) and "
                    "the server's clock."
                ),
                "properties": {
                    "seq": {"type": "integer", "description": "events applied so far"},
                    "session": {"type": "integer"},
                    "profile": {"type": "string"},
                    "stake": {"type": ["integer", "string"]},
                    "seat_names": {"type": "array", "items": {"type": "string"}},
                    "hand": {"type": "integer"},
                    "dealer": {"type": "integer"},
                    "huangfan": {"type": "integer"},
                    "phase": {
                        "type": "string",
                        "enum": [
                            "idle",
                            "shuffling",
                            "dice",
                            "playing",
                            "win_declared",
                            "reading",
                            "confirming",
                        ],
                    },
                    "phase_reason": {"type": "string", "description": "why, in English"},
                    "phase_key": {
                        "type": "string",
                        "description": (
                            "the reason's key (controller.table.messages.REASONS; the "
                            "dashboard's reason.<key>), empty for an event older than the keys"
                        ),
                    },
                    "phase_args": {"type": "object", "description": "what fills the reason"},
                    "faults": {"type": "object", "additionalProperties": {"type": "string"}},
                    "dice": {"type": ["array", "null"], "items": {"type": "integer"}},
                    "wall": {"type": ["integer", "null"]},
                    "stacks": {"type": ["integer", "null"]},
                    "kaibao": {"type": "boolean"},
                    "seats": {"type": "array", "items": {"type": "object"}},
                    "winners": {"type": "object"},
                    "questions": {"type": "array", "items": {"type": "object"}},
                    "proposal": {"type": ["object", "null"]},
                    "totals": {"type": "array", "items": {"type": ["integer", "string"]}},
                    "hands_settled": {"type": "integer"},
                    "hands_drawn": {"type": "integer"},
                    "can_undo": {"type": "boolean"},
                    "server_time": {"type": "number", "description": "seconds since the epoch"},
                },
            },
            "Session": {
                "type": "object",
                "description": (
                    "A session as controller.table.ledger.export_json writes it, with "
                    "zero_sum (whether every payment and the totals add up to 0) and problem "
                    "(why not, else null)."
                ),
                "properties": {
                    "session": {"type": "integer"},
                    "seats": {"type": "array", "items": {"type": "string"}},
                    "hands": {"type": "array", "items": {"type": "object"}},
                    "totals": {"type": "array", "items": {"type": ["integer", "string"]}},
                    "settle_up": {"type": "array", "items": {"type": "object"}},
                    "zero_sum": {"type": "boolean"},
                    "problem": {"type": ["string", "null"]},
                },
            },
            "Announce": {
                "type": "object",
                "properties": {
                    "language": {"type": "string", "enum": ["cmn", "en", "off"]},
                    "languages": {"type": "array", "items": {"type": "string"}},
                    "available": {
                        "type": "boolean",
                        "description": "whether espeak-ng is installed on the table",
                    },
                },
            },
            "Admin": {
                "type": "object",
                "properties": {
                    "pin_set": {"type": "boolean"},
                    "admin": {"type": "boolean"},
                    "expires_in": {"type": "integer", "description": "seconds, when admin"},
                },
            },
        },
    },
    "paths": {
        "/api/state": {
            "get": {
                "summary": "The table's state now",
                "responses": {
                    "200": _json("the state", {"$ref": "#/components/schemas/State"}),
                    "503": _error("the table controller has stopped or is not answering"),
                },
            }
        },
        "/api/events": {
            "get": {
                "summary": "Live feed (Server-Sent Events)",
                "description": (
                    "First `event: snapshot` (data: the State), then every event the "
                    "controller emits as `event: <type>` (data: the event's JSON, see "
                    "docs/controller.md), and after each burst of events a fresh `snapshot`. "
                    "Each frame has an `id:` (a counter of this server's feed). A comment line "
                    "is sent every 15 s. A page that falls far behind is dropped; its "
                    "EventSource reconnects and starts from a snapshot."
                ),
                "responses": {
                    "200": {
                        "description": "the stream",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    "503": _error("as many live pages are open as the server allows"),
                },
            }
        },
        "/api/actions/{action}": {
            "post": {
                "summary": "Ask the table to do something",
                "description": (
                    "The body is the action's arguments as a JSON object (empty body: none): "
                    "start_hand {}, retry {}, declare_win {seat, how?, discarder?}, "
                    "declare_drawn {}, answer {question, value}, correct {field: 'seat', seat, "
                    "value: {flowers, melds: [{kind, tiles, from}], open_tiles}} or {field: "
                    "'how', how, discarder?}, confirm {}, clear_fault {}; and, with an admin "
                    "login, undo {} and new_session {profile, stake, seats: [4 names], "
                    "dealer}. The optional header X-Table-Device names who acts."
                ),
                "security": CSRF,
                "parameters": [
                    {
                        "name": "action",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "enum": list(ACTIONS)},
                    },
                    {
                        "name": "X-Table-Device",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string", "maxLength": 32},
                        "description": "who acts (default: dashboard)",
                    },
                ],
                "requestBody": _JSON_BODY,
                "responses": {
                    "200": _json(
                        "done: the events it caused and the state after",
                        {
                            "type": "object",
                            "properties": {
                                "events": {"type": "array", "items": {"type": "object"}},
                                "state": {"$ref": "#/components/schemas/State"},
                            },
                        },
                    ),
                    "400": _error("an unknown action, or a body that is not a JSON object"),
                    "403": _error("no CSRF token, or an admin action without an admin login"),
                    "409": _error("the table refused: the message says why; nothing changed"),
                    "413": _error("the body is too large"),
                    "503": _error("the table controller or its log has stopped"),
                    "504": _error("the table did not answer in time"),
                },
            }
        },
        "/api/history": {
            "get": {
                "summary": "Every session in the log",
                "responses": {
                    "200": _json(
                        "the sessions, oldest first",
                        {
                            "type": "object",
                            "properties": {
                                "sessions": {
                                    "type": "array",
                                    "items": {"$ref": "#/components/schemas/Session"},
                                }
                            },
                        },
                    ),
                    "503": _error("the event log cannot be read"),
                },
            }
        },
        "/api/history/{number}.json": {
            "get": {
                "summary": "One session as a JSON download",
                "parameters": [_NUMBER],
                "responses": {
                    "200": _json("the session", {"$ref": "#/components/schemas/Session"}),
                    "404": _error("no such session"),
                },
            }
        },
        "/api/history/{number}.csv": {
            "get": {
                "summary": "One session as a spreadsheet (UTF-8 with a BOM)",
                "parameters": [_NUMBER],
                "responses": {
                    "200": {
                        "description": "one row per hand, then the totals",
                        "content": {"text/csv": {"schema": {"type": "string"}}},
                    },
                    "404": _error("no such session"),
                },
            }
        },
        "/api/profiles": {
            "get": {
                "summary": "The built-in rules profiles and the one in force",
                "responses": {
                    "200": _json(
                        "builtin: [{name, title, description}]; current: {name, title, lezi, "
                        "flower_hand_cap, settings} (or {name, problem})",
                        {
                            "type": "object",
                            "properties": {
                                "builtin": {"type": "array", "items": {"type": "object"}},
                                "current": {"type": "object"},
                            },
                        },
                    )
                },
            }
        },
        "/api/camera.jpg": {
            "get": {
                "summary": "The camera's last frame with the tiles it read drawn over it",
                "responses": {
                    "200": {
                        "description": "a JPEG (not cached)",
                        "content": {"image/jpeg": {"schema": {"type": "string"}}},
                    },
                    "404": _error("no camera, or no frame yet"),
                    "503": _error("the frame cannot be drawn"),
                },
            }
        },
        "/api/announce": {
            "get": {
                "summary": "The spoken announcement's language",
                "responses": {
                    "200": _json("the setting", {"$ref": "#/components/schemas/Announce"})
                },
            },
            "post": {
                "summary": "Switch the announcement's language, or turn it off",
                "security": CSRF,
                "requestBody": _body(
                    {
                        "type": "object",
                        "required": ["language"],
                        "properties": {
                            "language": {"type": "string", "enum": ["cmn", "en", "off"]}
                        },
                    }
                ),
                "responses": {
                    "200": _json("the new setting", {"$ref": "#/components/schemas/Announce"}),
                    "400": _error("an unknown language"),
                    "403": _error("no CSRF token"),
                    "409": _error("this table has no announcer"),
                },
            },
        },
        "/api/csrf": {
            "get": {
                "summary": "The CSRF token to send as X-CSRF-Token (made on first call)",
                "responses": {
                    "200": _json(
                        "the token and the header to send it in",
                        {
                            "type": "object",
                            "properties": {
                                "token": {"type": "string"},
                                "header": {"type": "string", "const": "X-CSRF-Token"},
                            },
                        },
                    )
                },
            }
        },
        "/api/admin": {
            "get": {
                "summary": "Whether an admin PIN is set and this session is logged in",
                "responses": {"200": _json("", {"$ref": "#/components/schemas/Admin"})},
            }
        },
        "/api/admin/pin": {
            "post": {
                "summary": "Set the admin PIN (4-8 digits)",
                "description": (
                    "The first time, anyone may set it (do it when installing the table); "
                    "after that `current` must be the PIN in force. The session that sets it "
                    "is logged in. Wrong PINs count towards the lockout."
                ),
                "security": CSRF,
                "requestBody": _body(
                    {
                        "type": "object",
                        "required": ["pin"],
                        "properties": {
                            "pin": {"type": "string", "pattern": "^[0-9]{4,8}$"},
                            "current": {"type": "string"},
                        },
                    }
                ),
                "responses": {
                    "200": _json("set", {"$ref": "#/components/schemas/Admin"}),
                    "400": _error("not 4-8 digits"),
                    "403": _error("wrong or missing current PIN, or no CSRF token"),
                    "429": _error("too many wrong PINs from this client: wait (Retry-After)"),
                },
            }
        },
        "/api/admin/login": {
            "post": {
                "summary": "Log this session in as admin for 30 minutes",
                "security": CSRF,
                "requestBody": _body(
                    {
                        "type": "object",
                        "required": ["pin"],
                        "properties": {"pin": {"type": "string"}},
                    }
                ),
                "responses": {
                    "200": _json("logged in", {"$ref": "#/components/schemas/Admin"}),
                    "400": _error("not 4-8 digits"),
                    "403": _error("wrong PIN, or no CSRF token"),
                    "409": _error("no PIN is set yet"),
                    "429": _error(
                        "5 wrong PINs within 5 minutes: this client waits 5 minutes (Retry-After)"
                    ),
                },
            }
        },
        "/api/admin/logout": {
            "post": {
                "summary": "End this session's admin login",
                "security": CSRF,
                "responses": {
                    "200": _json("logged out", {"$ref": "#/components/schemas/Admin"}),
                    "403": _error("no CSRF token"),
                },
            }
        },
        "/api/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": _json("OpenAPI 3.1", {"type": "object"})},
            }
        },
    },
}


def document() -> dict[str, Any]:
    """A copy of :data:`DOCUMENT` (callers may change theirs)."""
    return copy.deepcopy(DOCUMENT)
