"""The Flask dashboard. It reads the controller's state and sends it commands; it never
touches hardware directly.

:func:`create_app` builds it around a running
:class:`~controller.table.runtime.TableRuntime`: the JSON API and its live feed
(:mod:`webui.api`, :mod:`webui.stream`), the admin PIN and CSRF checks (:mod:`webui.auth`),
and the pages (:mod:`webui.pages`, where present). :mod:`webui.server` serves it with
waitress; :mod:`webui.announce` speaks each settlement.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import Flask, current_app

__all__ = ["DEFAULTS", "Dashboard", "create_app", "get_dashboard"]

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {
    # requests larger than this are refused (413): the largest the table reads is a seat's
    # correction, well under 1 KB
    "MAX_CONTENT_LENGTH": 64 * 1024,
    # live pages at once: each holds one of the web server's threads (webui.server)
    "SSE_MAX_STREAMS": 24,
    "SSE_HEARTBEAT_S": 15.0,
    # frames a page may fall behind by before it is dropped (it reconnects)
    "SSE_QUEUE_FRAMES": 256,
    # how long the broker waits for more events of one burst before sending a snapshot
    "SSE_COALESCE_S": 0.02,
    # how long an action waits for the controller's answer
    "REQUEST_TIMEOUT_S": 10.0,
    "ADMIN_MINUTES": 30,
    # the session cookie (its CSRF token, its admin login); HttpOnly and SameSite=Strict
    "SESSION_COOKIE_NAME": "mahjong_table",
    "PIN_MAX_FAILURES": 5,
    "PIN_WINDOW_S": 300.0,
    "PIN_LOCKOUT_S": 300.0,
}


@dataclass
class Dashboard:
    """What the views share: the table, the camera, the data folder, the live feed's broker
    and the announcer. Pages reach it with :func:`get_dashboard`."""

    table: Any
    camera: Any
    data_dir: Path
    broker: Any
    announcer: Any = None
    _unsubscribe: list[Any] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def settings_path(self) -> Path:
        return self.data_dir / "dashboard.json"

    def settings(self) -> dict[str, Any]:
        """The dashboard's own settings (the announcement language), kept across restarts."""
        try:
            data = json.loads(self.settings_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def save_setting(self, key: str, value: Any) -> None:
        with self._lock:
            data = {**self.settings(), key: value}
            tmp = self.settings_path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            tmp.replace(self.settings_path)

    def close(self) -> None:
        """End the live streams and stop listening to the table (the server is stopping)."""
        self.broker.close()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        if self.announcer is not None:
            self.announcer.close()


def get_dashboard() -> Dashboard:
    """The :class:`Dashboard` of the app handling this request."""
    return current_app.extensions["mahjong_table"]


def create_app(
    table: Any,
    *,
    camera: Any = None,
    data_dir: Path,
    secret_key: bytes | None = None,
    announcer: Any = None,
    config: Mapping[str, Any] | None = None,
) -> Flask:
    """The dashboard's Flask app for ``table`` (a running
    :class:`~controller.table.runtime.TableRuntime`).

    ``camera`` is the :class:`~controller.table.sources.CameraFeed` whose view
    ``/api/camera.jpg`` shows (None: no camera). ``data_dir`` holds the admin PIN's hash, the
    session key and the dashboard's settings. ``secret_key`` signs the session cookie (None:
    read from, or created in, ``<data_dir>/secret.key``). ``announcer`` is a
    :class:`~webui.announce.Announcer` to speak each settlement (None: silent). ``config``
    overrides :data:`DEFAULTS` and Flask's settings.

    The front end's blueprint joins when ``webui/pages.py`` exists and defines ``bp``, so the
    two halves are built side by side without editing each other.
    """
    from webui import api, auth
    from webui.http_errors import install_error_handlers
    from webui.stream import Broker

    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    if config:
        app.config.update(config)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.json.ensure_ascii = False  # type: ignore[attr-defined]
    broker = Broker(
        table,
        max_clients=int(app.config["SSE_MAX_STREAMS"]),
        queue_frames=int(app.config["SSE_QUEUE_FRAMES"]),
        heartbeat_s=float(app.config["SSE_HEARTBEAT_S"]),
        coalesce_s=float(app.config["SSE_COALESCE_S"]),
    )
    dashboard = Dashboard(table, camera, data_dir, broker, announcer)
    app.extensions["mahjong_table"] = dashboard
    if announcer is not None:
        language = dashboard.settings().get("announce")
        if isinstance(language, str) and language in announcer.LANGUAGES:
            announcer.language = language
        dashboard._unsubscribe.append(announcer.attach(table))

    install_error_handlers(app)
    auth.init_app(app, data_dir, secret_key)
    app.register_blueprint(api.bp)
    try:
        from webui.pages import bp as pages_bp  # the front end, where it is built
    except ImportError as exc:
        if exc.name != "webui.pages":  # pages.py is there but fails inside: say so
            raise
        log.debug("no webui.pages blueprint: serving the API only")
    else:
        app.register_blueprint(pages_bp)
    return app
