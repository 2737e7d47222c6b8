"""Who may change what: the admin PIN, CSRF tokens, and the session cookie they live in.

Anyone at the table may look (every GET) and play (start a hand, declare, confirm, answer,
correct). Starting a new session and undoing a settled hand move money, so they need the
admin PIN: a person logs in with it and their browser session is admin for
``ADMIN_MINUTES``. The PIN is kept only as a salted hash (werkzeug's scrypt) in
``<data_dir>/admin.json``; wrong PINs are counted per client, and after
``PIN_MAX_FAILURES`` within ``PIN_WINDOW_S`` that client is refused (429) for
``PIN_LOCKOUT_S``: four to eight digits fall to guessing otherwise.

Every POST, PUT, PATCH and DELETE under ``/api`` must carry the header ``X-CSRF-Token``
with the token kept in the signed session cookie (``GET /api/csrf`` gives it). A page of
another site can make the browser send the cookie, but it cannot read the token, and the
cookie is ``SameSite=Strict`` besides.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, current_app, jsonify, request, session
from werkzeug.security import check_password_hash, generate_password_hash

from controller.errors import ConfigError
from webui.http_errors import ApiError, json_error, parse_body

__all__ = [
    "CSRF_HEADER",
    "PinGuard",
    "PinStore",
    "bp",
    "csrf_token",
    "init_app",
    "is_admin",
    "load_secret_key",
]

bp = Blueprint("auth", __name__, url_prefix="/api")

CSRF_HEADER = "X-CSRF-Token"
CSRF_ERROR = "missing or wrong CSRF token: reload the page"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
PIN_RE = re.compile(r"[0-9]{4,8}")


def _write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner can read, replacing any old one in one step."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_secret_key(data_dir: Path) -> bytes:
    """The key that signs session cookies, from ``<data_dir>/secret.key`` (created, 0600, on
    first use), so a restart does not log everyone out or void their CSRF tokens."""
    path = data_dir / "secret.key"
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = b""
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(key) >= 32:
        return key
    key = secrets.token_bytes(32)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        _write_private(path, key)
    except OSError as exc:
        raise ConfigError(
            f"cannot write {path}: {exc.strerror or exc}: check the data folder"
        ) from None
    return key


# -- the PIN -----------------------------------------------------------------------------------


class PinStore:
    """The admin PIN's hash in ``<data_dir>/admin.json``; never the PIN itself."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "admin.json"
        self._lock = threading.Lock()

    def _hash(self) -> str | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{self.path} cannot be read ({exc}): remove it to set a new admin PIN"
            ) from None
        value = data.get("pin_hash") if isinstance(data, dict) else None
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{self.path} holds no PIN hash: remove it to set a new admin PIN")
        return value

    @property
    def is_set(self) -> bool:
        return self._hash() is not None

    def check(self, pin: str) -> bool:
        stored = self._hash()
        return stored is not None and check_password_hash(stored, pin)

    def set(self, pin: str) -> None:
        data = {"pin_hash": generate_password_hash(pin), "set_at": time.time()}
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _write_private(self.path, json.dumps(data).encode())
            except OSError as exc:
                raise ConfigError(
                    f"cannot write {self.path}: {exc.strerror or exc}: check the data folder"
                ) from None

    def fingerprint(self) -> str | None:
        """A short digest of the stored hash: an admin login is only good for the PIN it was
        made with, so changing the PIN logs every other browser out."""
        stored = self._hash()
        return None if stored is None else hashlib.sha256(stored.encode()).hexdigest()[:16]


class PinGuard:
    """Counts wrong PINs per client (thread-safe, in memory): ``max_failures`` within
    ``window_s`` locks that client out for ``lockout_s``."""

    def __init__(
        self,
        *,
        max_failures: int = 5,
        window_s: float = 300.0,
        lockout_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.lockout_s = lockout_s
        self.clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, list[float]] = {}
        self._locked: dict[str, float] = {}
        self.checking = threading.Lock()
        """Held while a PIN is checked: guesses sent in parallel are counted one by one, so
        none slips in before the lockout."""

    def locked_for(self, who: str) -> float:
        """Seconds ``who`` must still wait; 0 when they may try."""
        now = self.clock()
        with self._lock:
            until = self._locked.get(who, 0.0)
            if until <= now:
                self._locked.pop(who, None)
                return 0.0
            return until - now

    def failed(self, who: str) -> None:
        now = self.clock()
        with self._lock:
            recent = [t for t in self._failures.get(who, []) if t > now - self.window_s]
            recent.append(now)
            if len(recent) >= self.max_failures:
                self._locked[who] = now + self.lockout_s
                self._failures.pop(who, None)
            else:
                self._failures[who] = recent
            if len(self._failures) > 1000:  # forget clients long gone
                cutoff = now - self.window_s
                self._failures = {k: v for k, v in self._failures.items() if v[-1] > cutoff}

    def succeeded(self, who: str) -> None:
        with self._lock:
            self._failures.pop(who, None)


def _store() -> PinStore:
    return current_app.extensions["mahjong_table_auth"][0]


def _guard() -> PinGuard:
    return current_app.extensions["mahjong_table_auth"][1]


def _client() -> str:
    return request.remote_addr or "unknown"


def is_admin() -> bool:
    """Whether this browser session logged in with the admin PIN in force, and not too long
    ago."""
    until = session.get("admin_until")
    if not isinstance(until, int | float) or until <= time.time():
        return False
    return session.get("admin_pin") == _store().fingerprint()


def csrf_token() -> str:
    """This session's CSRF token, made on first use (also a template global for pages)."""
    token = session.get("csrf")
    if not isinstance(token, str) or len(token) < 32:
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return token


def _check_csrf() -> Any:
    """Refuse a state-changing /api request without the session's token."""
    if request.method not in UNSAFE_METHODS or not request.path.startswith("/api/"):
        return None
    sent = request.headers.get(CSRF_HEADER, "")
    token = session.get("csrf")
    if (
        not isinstance(token, str)
        or not sent
        or not hmac.compare_digest(sent.encode("utf-8", "replace"), token.encode())
    ):
        return json_error(403, CSRF_ERROR)
    return None


def _pin(value: Any) -> str:
    if not isinstance(value, str) or not PIN_RE.fullmatch(value):
        raise ApiError(400, "pin: 4 to 8 digits, as text")
    return value


def _check_not_locked() -> None:
    """Refuse (429) a client locked out for wrong PINs."""
    wait = _guard().locked_for(_client())
    if wait > 0:
        seconds = int(wait) + 1
        raise ApiError(
            429, f"too many wrong PINs: try again in {seconds} s", {"Retry-After": str(seconds)}
        )


def _wrong_pin() -> ApiError:
    """Count a wrong PIN; the error to raise (429 when that one locked the client out)."""
    _guard().failed(_client())
    try:
        _check_not_locked()
    except ApiError as exc:
        return exc
    return ApiError(403, "wrong PIN")


def _login() -> None:
    minutes = current_app.config["ADMIN_MINUTES"]
    session["admin_until"] = time.time() + 60 * minutes
    session["admin_pin"] = _store().fingerprint()


# -- routes ------------------------------------------------------------------------------------


@bp.get("/csrf")
def get_csrf() -> Any:
    """The token to send back as ``X-CSRF-Token`` with every POST."""
    response = jsonify(token=csrf_token(), header=CSRF_HEADER)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/admin")
def get_admin() -> Any:
    admin = is_admin()
    out: dict[str, Any] = {"pin_set": _store().is_set, "admin": admin}
    if admin:
        out["expires_in"] = int(session["admin_until"] - time.time())
    response = jsonify(out)
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/admin/pin")
def set_pin() -> Any:
    """Set the PIN: freely the first time (set it when the table is installed), else with the
    current one. The browser that sets it is logged in with it."""
    body = parse_body()
    pin = _pin(body.get("pin"))
    store = _store()
    with _guard().checking:
        _check_not_locked()
        if store.is_set:
            current = body.get("current")
            if not isinstance(current, str) or not current:
                raise ApiError(403, "current: the PIN in force is needed to change it")
            if not store.check(current):
                raise _wrong_pin()
            _guard().succeeded(_client())
        store.set(pin)
    _login()
    return jsonify(pin_set=True, admin=True)


@bp.post("/admin/login")
def login() -> Any:
    body = parse_body()
    pin = _pin(body.get("pin"))
    store = _store()
    with _guard().checking:
        _check_not_locked()
        if not store.is_set:
            raise ApiError(409, "no admin PIN is set yet: set one first (POST /api/admin/pin)")
        if not store.check(pin):
            raise _wrong_pin()
        _guard().succeeded(_client())
    _login()
    return jsonify(admin=True, expires_in=60 * current_app.config["ADMIN_MINUTES"])


@bp.post("/admin/logout")
def logout() -> Any:
    session.pop("admin_until", None)
    session.pop("admin_pin", None)
    return jsonify(admin=False)


def init_app(app: Flask, data_dir: Path, secret_key: bytes | None) -> None:
    """Session cookie settings, the secret key, the PIN store and guard, the CSRF check."""
    app.secret_key = secret_key if secret_key is not None else load_secret_key(data_dir)
    app.config.update(SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Strict")
    guard = PinGuard(
        max_failures=app.config["PIN_MAX_FAILURES"],
        window_s=app.config["PIN_WINDOW_S"],
        lockout_s=app.config["PIN_LOCKOUT_S"],
    )
    app.extensions["mahjong_table_auth"] = (PinStore(data_dir), guard)
    app.before_request(_check_csrf)
    app.add_template_global(csrf_token, "csrf_token")
    app.register_blueprint(bp)
