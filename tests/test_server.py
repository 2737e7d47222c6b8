"""Serving the dashboard with waitress (webui/server.py): a free port, a thread pool sized for
the live streams, and a stop that ends open streams and frees the port."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from pathlib import Path

import pytest

from webui import create_app
from webui.server import SPARE_THREADS, Server, serve


@pytest.fixture
def app(live_table, tmp_path: Path):
    return create_app(live_table.runtime, data_dir=tmp_path)


def get(port: int, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_port_zero_picks_a_free_port_and_serves(app):
    server = serve(app)
    try:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"
        status, data = get(server.port, "/api/state")
        assert status == 200 and data["seat_names"] == ["Ann", "Bo", "Cy", "Di"]
        status, data = get(server.port, "/api/nope")
        assert status == 404 and "no such endpoint" in data["error"]
    finally:
        server.stop()


def test_the_pool_is_the_stream_cap_plus_spares(live_table, tmp_path):
    app = create_app(live_table.runtime, data_dir=tmp_path, config={"SSE_MAX_STREAMS": 5})
    assert Server(app).threads == 5 + SPARE_THREADS
    assert Server(app, threads=3).threads == 3
    assert Server(create_app(live_table.runtime, data_dir=tmp_path)).threads == 24 + SPARE_THREADS


def test_stop_frees_the_port_and_is_safe_twice(app):
    with Server(app) as server:
        port = server.port
        assert get(port, "/api/state")[0] == 200
    with pytest.raises(OSError):
        get(port, "/api/state")
    server.stop()
    with socket.socket() as s:  # the port can be taken again at once
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


def test_stop_works_when_its_trigger_can_no_longer_be_pulled(app, monkeypatch):
    # (a CI run found the trigger's pipe closed under it, EBADF: stop raised and left the
    # server running)
    server = serve(app)
    port = server.port
    assert get(port, "/api/state")[0] == 200

    def gone(self, thunk=None):
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(type(server._server.trigger), "pull_trigger", gone)
    server.stop()
    assert server._thread is not None and not server._thread.is_alive()
    with pytest.raises(OSError):
        get(port, "/api/state")


def test_stop_ends_open_streams_promptly(app):
    server = Server(app).start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/api/events")
    response = conn.getresponse()
    assert response.status == 200
    assert response.readline().startswith(b"retry:")
    broker = app.extensions["mahjong_table"].broker
    assert broker.clients == 1
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 3  # not the 15 s heartbeat, not the 5 s pool timeout
    assert broker.clients == 0
    conn.close()
    names = {t.name for t in threading.enumerate()}
    assert "dashboard-server" not in names and "dashboard-stream" not in names


def test_requests_are_answered_while_every_stream_is_open(live_table, tmp_path):
    app = create_app(live_table.runtime, data_dir=tmp_path, config={"SSE_MAX_STREAMS": 3})
    with Server(app) as server:
        streams = []
        for _ in range(3):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
            conn.request("GET", "/api/events")
            # a stream's response owns the socket (the server says "Connection: close"): a
            # response let go of closes it, and under load the server saw that page leave
            response = conn.getresponse()
            assert response.status == 200 and response.readline().startswith(b"retry:")
            streams.append(response)
        for _ in range(SPARE_THREADS + 2):  # more requests than spare threads, one by one
            assert get(server.port, "/api/state")[0] == 200
        status, data = get(server.port, "/api/events")
        assert status == 503 and "3 live pages" in data["error"]
        assert app.extensions["mahjong_table"].broker.clients == 3
        for response in streams:
            response.close()


def test_a_port_in_use_is_an_oserror(app):
    with Server(app) as first:
        second = Server(app, port=first.port)
        with pytest.raises(OSError):
            second.start()
        second.stop()  # nothing started: nothing to stop
        assert get(first.port, "/api/state")[0] == 200
