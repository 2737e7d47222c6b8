"""Errors as one line of JSON (webui/http_errors.py): the body parser's refusals, werkzeug's own
errors and anything unexpected, under /api; other paths keep their own pages."""

from __future__ import annotations

import pytest
from flask import Flask

from controller.errors import ConfigError
from controller.table.machine import RequestRefused
from webui.http_errors import MAX_DEPTH, ApiError, install_error_handlers, json_error, parse_body


@pytest.fixture
def app() -> Flask:
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = 1024
    install_error_handlers(app)

    @app.post("/api/echo")
    def echo():
        return {"got": parse_body()}

    @app.get("/api/boom")
    def boom():
        raise RuntimeError("secret internals\nline two")

    @app.get("/page/boom")
    def page_boom():
        raise RuntimeError("x")

    @app.get("/api/refused")
    def refused():
        raise RequestRefused("not now: a hand is in progress")

    @app.get("/api/config")
    def config():
        raise ConfigError("admin.json is damaged")

    @app.get("/api/teapot")
    def teapot():
        raise ApiError(418, "short and\nstout", {"X-Why": "tea"})

    return app


def error(response, status: int) -> str:
    assert response.status_code == status
    assert response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    message = response.get_json()["error"]
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("body", "expected"),
    [(b"", {}), (b"  \n", {}), (b'{"a": [1, {"b": null}]}', {"a": [1, {"b": None}]})],
)
def test_a_json_object_or_nothing_is_accepted(app, body, expected):
    response = app.test_client().post("/api/echo", data=body)
    assert response.get_json() == {"got": expected}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{", "not valid JSON"),
        (b"Infinity", "not valid JSON"),
        (b'{"x": -Infinity}', "not valid JSON"),
        (b"null", "JSON object, not NoneType"),
        (b"\xc3\x28", "not UTF-8"),
        (b"[" * 400 + b"]" * 400, "JSON object, not list"),
        (b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1), "nests deeper than"),
    ],
)
def test_anything_else_is_400(app, body, words):
    assert words in error(app.test_client().post("/api/echo", data=body), 400)


def test_too_large_is_413(app):
    response = app.test_client().post("/api/echo", data=b" " * 2000)
    assert error(response, 413) == "the request is too large (at most 1 KB)"


def test_a_deeply_nested_body_never_overflows_the_stack(app):
    depth = 100_000
    app.config["MAX_CONTENT_LENGTH"] = 10 * depth
    body = b'{"a":' * depth + b"1" + b"}" * depth
    assert "nests deeper" in error(app.test_client().post("/api/echo", data=body), 400)


def test_a_bug_is_a_one_line_500_without_its_details(app):
    message = error(app.test_client().get("/api/boom"), 500)
    assert "RuntimeError" in message and "secret internals" not in message


def test_outside_the_api_a_bug_is_plain_text(app):
    response = app.test_client().get("/page/boom")
    assert response.status_code == 500 and response.mimetype == "text/plain"


def test_table_errors(app):
    client = app.test_client()
    assert error(client.get("/api/refused"), 409) == "not now: a hand is in progress"
    assert error(client.get("/api/config"), 503) == "admin.json is damaged"
    response = client.get("/api/teapot")
    assert error(response, 418) == "short and stout" and response.headers["X-Why"] == "tea"


def test_werkzeug_errors_under_the_api_are_json_and_elsewhere_are_not(app):
    client = app.test_client()
    assert "no such endpoint: GET /api/nothing" in error(client.get("/api/nothing"), 404)
    message = error(client.get("/api/echo"), 405)
    assert message == "GET is not allowed on /api/echo (allowed: POST)"
    response = client.get("/elsewhere")
    assert response.status_code == 404 and response.mimetype == "text/html"


def test_json_error_keeps_to_one_line(app):
    with app.test_request_context():
        response = json_error(400, "a\n  b\tc", {"X-A": "1"})
    assert response.get_json() == {"error": "a b c"} and response.headers["X-A"] == "1"
