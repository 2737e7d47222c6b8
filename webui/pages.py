"""The dashboard's pages: the board, the history, the settings and the camera view.

Each page is one template (``webui/templates``) over plain JavaScript and CSS
(``webui/static``), with nothing fetched from outside: the table's network has no internet.
The pages hold no state of their own; their scripts read ``/api/state`` and the event stream
and send the players' actions to ``/api/actions``. :func:`webui.create_app` registers
:data:`bp` when this module defines it.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from flask import Blueprint, render_template, url_for

__all__ = ["PAGES", "bp"]

STATIC = Path(__file__).resolve().parent / "static"

bp = Blueprint(
    "pages",
    __name__,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

PAGES: dict[str, tuple[str, str]] = {
    # endpoint: (English title, Chinese title); the scripts retitle the page in the device's
    # language, the server's title carries both so either reads before they run
    "board": ("Board", "牌桌"),
    "history": ("History", "战绩"),
    "settings": ("Settings", "设置"),
    "camera": ("Camera", "摄像头"),
}


@lru_cache(maxsize=64)
def _fingerprint(name: str, mtime_ns: int) -> str:
    data = (STATIC / name).read_bytes()
    return hashlib.sha256(data).hexdigest()[:10]


def asset(name: str) -> str:
    """A static file's URL with its content's fingerprint, so a phone that cached an older
    script after an update fetches the new one."""
    path = STATIC / name
    try:
        version = _fingerprint(name, path.stat().st_mtime_ns)
    except OSError:
        version = "0"
    return url_for("pages.static", filename=name, v=version)


def _page(page: str, live: bool = True) -> str:
    english, chinese = PAGES[page]
    return render_template(
        f"{page}.html",
        page=page,
        title=f"{chinese} {english} · 麻将桌 Mahjong table",
        live=live,
        asset=asset,
    )


@bp.get("/")
def board() -> str:
    return _page("board")


@bp.get("/history")
def history() -> str:
    return _page("history")


@bp.get("/settings")
def settings() -> str:
    return _page("settings")


@bp.get("/camera")
def camera() -> str:
    # the camera page follows the picture, not the table: no event stream
    return _page("camera", live=False)
