"""Every error of the dashboard's API as one line of JSON with the right status.

A client (the dashboard's page, a phone, a script) gets ``{"error": "..."}`` with a 4xx
that says what to change, or a 5xx that says what is wrong at the table: never an HTML page
or a traceback. :class:`ApiError` is raised by the API's views and turned into that reply
here; werkzeug's own errors (404, 405, 413 …) and anything unexpected under ``/api`` are
turned into the same shape.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, RequestEntityTooLarge

from controller.errors import MahjongTableError

__all__ = ["MAX_DEPTH", "ApiError", "install_error_handlers", "json_error", "parse_body"]

log = logging.getLogger(__name__)

MAX_DEPTH = 12
"""How deeply a request's JSON may nest: the deepest the table reads is a seat's melds (4)."""


class ApiError(Exception):
    """An error reply: ``status`` and a message for the person who sent the request."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def json_error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """``{"error": message}`` with ``status``; the message kept to one line."""
    response = jsonify(error=" ".join(str(message).split()))
    response.status_code = status
    response.headers.update(headers or {})
    response.headers["Cache-Control"] = "no-store"
    return response


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (iteratively: the input is untrusted)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        if isinstance(item, dict):
            todo.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            todo.extend((v, level + 1) for v in item)
    return deepest


def parse_body() -> dict[str, Any]:
    """The request's body as a JSON object; an empty body is ``{}``. Raises
    :class:`ApiError` (400) naming what is wrong, or (413) when it is too large."""
    try:
        raw = request.get_data(cache=True)
    except RequestEntityTooLarge:
        raise ApiError(413, _too_large()) from None
    if not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise ApiError(400, "the body is not UTF-8 text") from None
    except RecursionError:
        raise ApiError(400, f"the body nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ApiError(400, f"the body must be a JSON object, not {type(value).__name__}")
    if _depth(value) > MAX_DEPTH:
        raise ApiError(400, f"the body nests deeper than {MAX_DEPTH} levels")
    return value


def _too_large() -> str:
    from flask import current_app

    limit = current_app.config.get("MAX_CONTENT_LENGTH") or 0
    return f"the request is too large (at most {limit // 1024} KB)"


def _is_api() -> bool:
    return request.path == "/api" or request.path.startswith("/api/")


def install_error_handlers(app: Flask) -> None:
    """JSON errors for every ``/api`` path; other paths keep Flask's own pages (the front
    end's to restyle)."""

    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> Response:
        return json_error(exc.status, exc.message, exc.headers)

    @app.errorhandler(MahjongTableError)
    def _table_error(exc: MahjongTableError) -> Response:
        # a request the table refused (nothing changed), or a part of the table that failed
        # (the event log, a damaged file in the data folder): the message says what to do
        from controller.table.machine import RequestRefused

        status = 409 if isinstance(exc, RequestRefused) else 503
        return json_error(status, str(exc))

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Any:
        if not _is_api():
            return exc
        status = exc.code or 500
        # every 405 werkzeug raises (abort(405) too) is a MethodNotAllowed
        valid_methods = exc.valid_methods if isinstance(exc, MethodNotAllowed) else None
        if status == 404:
            message = f"no such endpoint: {request.method} {request.path} (see /api/openapi.json)"
        elif status == 405:
            allowed = ", ".join(sorted(m for m in valid_methods or [] if m != "OPTIONS"))
            message = f"{request.method} is not allowed on {request.path} (allowed: {allowed})"
        elif status == 413:
            message = _too_large()
        else:
            message = exc.description or exc.name
        headers = {}
        if status == 405 and valid_methods:
            headers["Allow"] = ", ".join(valid_methods)
        return json_error(status, message, headers)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Any:
        log.exception("the dashboard failed on %s %s", request.method, request.path)
        message = f"the dashboard failed ({type(exc).__name__}): the table's log has the details"
        if not _is_api():
            return message, 500, {"Content-Type": "text/plain; charset=utf-8"}
        return json_error(500, message)
