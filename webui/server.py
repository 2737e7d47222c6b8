"""Serving the dashboard with waitress, in a background thread that stops cleanly.

waitress runs each request to its end on a thread of a fixed pool, and a live page's
Server-Sent Events stream is a request that does not end: every open stream holds one
thread. The pool is therefore the stream cap (``SSE_MAX_STREAMS``, 24 by default: the
broker refuses more with a 503) plus :data:`SPARE_THREADS` for everything else (state,
actions, history, the camera view), so that however many pages are live, a button pressed
on one of them is still answered at once. At the default that is 32 threads, mostly asleep
on a queue; on a Pi each costs its stack and nothing else.

:meth:`Server.stop` closes the listening socket and every connection on the server's own
loop thread, ends the live streams (so their threads come back), and waits for the pool.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from waitress import wasyncore
from waitress.server import create_server

__all__ = ["SPARE_THREADS", "Server", "serve", "start_dashboard"]

log = logging.getLogger(__name__)

SPARE_THREADS = 8
"""Threads beyond the stream cap, for the requests that end."""


def _threads_for(app: Any) -> int:
    config = getattr(app, "config", {})
    return int(config.get("SSE_MAX_STREAMS", 24)) + SPARE_THREADS


class Server:
    """The dashboard on ``host``:``port`` (port 0: a free one, read back from :attr:`port`).
    ``threads`` defaults to the app's stream cap plus :data:`SPARE_THREADS`."""

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, threads: int | None = None
    ) -> None:
        self.app = app
        self.host = host
        self.threads = threads if threads is not None else _threads_for(app)
        self._requested_port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1" if host == "0.0.0.0" else "[::1]"
        return f"http://{host}:{self.port}"

    def _listen(self) -> socket.socket:
        """One listening socket (waitress would open one per address a name resolves to)."""
        family, kind, proto, _, address = socket.getaddrinfo(
            self.host, self._requested_port, type=socket.SOCK_STREAM
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
        except OSError:
            sock.close()
            raise
        return sock

    def start(self) -> Server:
        """Bind and serve in a background thread; raises :class:`OSError` when the port is
        taken or the address is not this machine's."""
        if self._server is not None:
            return self
        sock = self._listen()
        self._server = create_server(
            self.app,
            sockets=[sock],
            threads=self.threads,
            ident="mahjong-table",
            asyncore_use_poll=True,  # no select() limit on open connections
            # streams are requests in progress, never idle channels: keep waitress's
            # idle-connection cleanup for everything else
            channel_timeout=120,
        )
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(
            target=self._server.run, name="dashboard-server", daemon=True
        )
        self._thread.start()
        log.info("dashboard on %s (%d threads)", self.url, self.threads)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection, end the live streams, and wait for the
        threads. Safe to call twice."""
        server, self._server = self._server, None
        if server is None:
            return
        socket_map = server._map
        try:
            server.trigger.pull_trigger(lambda: wasyncore.close_all(socket_map))
        except OSError:
            # the trigger's pipe was closed under it (a CI run saw EBADF here, from another
            # part of the process closing a number twice: TableDevice's wake pipe, since
            # mended): a stop must still stop, so close from here, as below for a loop that
            # missed the trigger
            wasyncore.close_all(socket_map)
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():  # the loop missed the trigger: close from here
                wasyncore.close_all(socket_map)
                self._thread.join(timeout)
        dashboard = getattr(self.app, "extensions", {}).get("mahjong_table")
        if dashboard is not None:
            dashboard.close()
        server.task_dispatcher.shutdown(timeout=timeout)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(app: Any, host: str = "127.0.0.1", port: int = 0, threads: int | None = None) -> Server:
    """Serve ``app`` in the background; the started :class:`Server` (``.port``, ``.stop()``)."""
    return Server(app, host, port, threads).start()


def start_dashboard(
    table: Any,
    *,
    camera: Any = None,
    data_dir: Any,
    host: str = "0.0.0.0",
    port: int = 8080,
    speak: bool = True,
) -> Server:
    """The whole dashboard for a running table, served in the background: the app, the
    spoken announcements (silent where espeak-ng is not installed) and the server. Stop it
    with the returned server's :meth:`Server.stop`; raises :class:`OSError` when the port is
    taken."""
    from webui import create_app
    from webui.announce import Announcer

    announcer = None
    if speak:

        def names() -> list[str]:
            return list(table.snapshot()["seat_names"])

        announcer = Announcer(names=names)
    app = create_app(table, camera=camera, data_dir=data_dir, announcer=announcer)
    server = Server(app, host, port)
    try:
        server.start()
    except BaseException:
        dashboard = app.extensions.get("mahjong_table")
        if dashboard is not None:
            dashboard.close()
        raise
    return server
