"""The admin PIN, its lockout, CSRF and the session cookie (webui/auth.py)."""

from __future__ import annotations

import json
import stat
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webui import auth, create_app
from webui.auth import CSRF_HEADER, PinGuard, load_secret_key


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def app(live_table, data_dir):
    return create_app(live_table.runtime, data_dir=data_dir)


def client_for(app, remote: str = "10.0.0.7"):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = remote
    token = client.get("/api/csrf").get_json()["token"]
    client.environ_base["HTTP_X_CSRF_TOKEN"] = token
    return client


@pytest.fixture
def client(app):
    return client_for(app)


def error(response, status: int) -> str:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()["error"]


def guard(app) -> PinGuard:
    return app.extensions["mahjong_table_auth"][1]


# -- the PIN ---------------------------------------------------------------------------------------


def test_no_pin_at_first(client):
    assert client.get("/api/admin").get_json() == {"pin_set": False, "admin": False}
    assert "set one first" in error(client.post("/api/admin/login", json={"pin": "1234"}), 409)


def test_the_first_pin_is_set_freely_and_logs_that_browser_in(client, data_dir):
    response = client.post("/api/admin/pin", json={"pin": "0042"})
    assert response.get_json() == {"pin_set": True, "admin": True}
    state = client.get("/api/admin").get_json()
    assert state["pin_set"] and state["admin"] and 1790 <= state["expires_in"] <= 1800
    path = data_dir / "admin.json"
    text = path.read_text()
    assert "0042" not in text and json.loads(text)["pin_hash"].startswith(("scrypt:", "pbkdf2:"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("pin", ["123", "123456789", "12a4", "", " 1234", 1234, None, ["1234"]])
def test_a_pin_is_four_to_eight_digits_as_text(client, pin):
    assert "4 to 8 digits" in error(client.post("/api/admin/pin", json={"pin": pin}), 400)


def test_changing_the_pin_needs_the_current_one(app, client):
    client.post("/api/admin/pin", json={"pin": "1111"})
    other = client_for(app, "10.0.0.8")
    assert other.post("/api/admin/login", json={"pin": "1111"}).status_code == 200
    assert "current" in error(client.post("/api/admin/pin", json={"pin": "2222"}), 403)
    response = client.post("/api/admin/pin", json={"pin": "2222", "current": "9999"})
    assert error(response, 403) == "wrong PIN"
    response = client.post("/api/admin/pin", json={"pin": "2222", "current": "1111"})
    assert response.status_code == 200
    assert client.post("/api/admin/login", json={"pin": "1111"}).status_code == 403
    assert client.post("/api/admin/login", json={"pin": "2222"}).status_code == 200
    # a browser logged in with the old PIN is admin no more
    assert other.get("/api/admin").get_json()["admin"] is False


def test_login_logout_and_an_admin_action(client, live_table):
    client.post("/api/admin/pin", json={"pin": "123456"})
    client.post("/api/admin/logout")
    assert client.get("/api/admin").get_json()["admin"] is False
    assert client.post("/api/actions/new_session", json={}).status_code == 403
    assert error(client.post("/api/admin/login", json={"pin": "654321"}), 403) == "wrong PIN"
    response = client.post("/api/admin/login", json={"pin": "123456"})
    assert response.get_json() == {"admin": True, "expires_in": 1800}
    response = client.post("/api/actions/new_session", json={})
    assert response.status_code == 200 and response.get_json()["state"]["session"] == 2


def test_an_admin_login_lasts_thirty_minutes(client, monkeypatch):
    client.post("/api/admin/pin", json={"pin": "1234"})
    now = time.time()
    monkeypatch.setattr(auth.time, "time", lambda: now + 29 * 60)
    assert client.get("/api/admin").get_json()["admin"] is True
    monkeypatch.setattr(auth.time, "time", lambda: now + 31 * 60)
    assert client.get("/api/admin").get_json()["admin"] is False
    assert client.post("/api/actions/undo").status_code == 403


def test_five_wrong_pins_lock_the_client_out_for_five_minutes(app, client):
    client.post("/api/admin/pin", json={"pin": "1234"})
    client.post("/api/admin/logout")
    clock = [1000.0]
    guard(app).clock = lambda: clock[0]
    for _ in range(4):
        assert client.post("/api/admin/login", json={"pin": "0000"}).status_code == 403
    response = client.post("/api/admin/login", json={"pin": "0000"})
    assert "too many wrong PINs" in error(response, 429)
    assert response.headers["Retry-After"] == "301"
    # locked: even the right PIN, and changing the PIN, are refused
    assert client.post("/api/admin/login", json={"pin": "1234"}).status_code == 429
    response = client.post("/api/admin/pin", json={"pin": "5678", "current": "1234"})
    assert response.status_code == 429
    # another client is not locked out
    assert (
        client_for(app, "10.0.0.9").post("/api/admin/login", json={"pin": "1234"}).status_code
        == 200
    )
    clock[0] += 299
    assert client.post("/api/admin/login", json={"pin": "1234"}).status_code == 429
    clock[0] += 2
    assert client.post("/api/admin/login", json={"pin": "1234"}).status_code == 200


def test_wrong_pins_spread_out_do_not_lock(app, client):
    client.post("/api/admin/pin", json={"pin": "1234"})
    clock = [0.0]
    guard(app).clock = lambda: clock[0]
    for _ in range(10):
        assert client.post("/api/admin/login", json={"pin": "0000"}).status_code == 403
        clock[0] += 100  # four within any five minutes
    assert client.post("/api/admin/login", json={"pin": "1234"}).status_code == 200


def test_a_right_pin_clears_the_count():
    g = PinGuard(clock=lambda: 0.0)
    for _ in range(4):
        g.failed("a")
    g.succeeded("a")
    for _ in range(4):
        g.failed("a")
    assert g.locked_for("a") == 0.0
    g.failed("a")
    assert g.locked_for("a") == 300.0


def test_the_guard_counts_exactly_under_threads():
    g = PinGuard(max_failures=1000, clock=lambda: 0.0)

    def fail() -> None:
        for _ in range(100):
            g.failed("a")

    threads = [threading.Thread(target=fail) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert g.locked_for("a") == 0.0  # 800 < 1000
    for _ in range(200):
        g.failed("a")
    assert g.locked_for("a") > 0


def test_a_damaged_pin_file_is_a_clear_503(client, data_dir):
    (data_dir / "admin.json").write_text("{not json")
    response = client.get("/api/admin")
    assert "remove it to set a new admin PIN" in error(response, 503)
    assert "admin.json" in error(client.post("/api/admin/login", json={"pin": "1234"}), 503)


# -- CSRF ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/api/actions/start_hand", "/api/admin/pin", "/api/admin/login", "/api/admin/logout"]
)
def test_a_post_without_the_token_is_403(app, path, live_table):
    seq = live_table.runtime.snapshot()["seq"]
    bare = app.test_client()
    assert error(bare.post(path, json={"pin": "1234"}), 403) == (
        "missing or wrong CSRF token: reload the page"
    )
    client = client_for(app)
    response = client.post(path, json={"pin": "1234"}, headers={CSRF_HEADER: "x" * 43})
    assert "CSRF" in error(response, 403)
    # a token of another session will not do either
    other = client_for(app)
    stolen = other.environ_base["HTTP_X_CSRF_TOKEN"]
    assert bare.post(path, json={}, headers={CSRF_HEADER: stolen}).status_code == 403
    assert live_table.runtime.snapshot()["seq"] == seq
    assert not app.extensions["mahjong_table_auth"][0].is_set


def test_reads_need_no_token(app):
    bare = app.test_client()
    for path in ("/api/state", "/api/admin", "/api/history", "/api/profiles", "/api/openapi.json"):
        assert bare.get(path).status_code == 200, path


def test_the_token_is_stable_within_a_session(app):
    client = app.test_client()
    first = client.get("/api/csrf").get_json()
    assert first["header"] == CSRF_HEADER and len(first["token"]) >= 32
    assert client.get("/api/csrf").get_json()["token"] == first["token"]
    assert app.test_client().get("/api/csrf").get_json()["token"] != first["token"]


def test_the_session_cookie_is_httponly_and_samesite_strict(app):
    response = app.test_client().get("/api/csrf")
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


# -- the secret key --------------------------------------------------------------------------------


def test_the_secret_key_is_made_once_kept_private_and_survives_a_restart(live_table, data_dir):
    first = create_app(live_table.runtime, data_dir=data_dir)
    key = data_dir / "secret.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) >= 32
    client = client_for(first)
    client.post("/api/admin/pin", json={"pin": "1234"})
    second = create_app(live_table.runtime, data_dir=data_dir)
    assert second.secret_key == first.secret_key
    # the browser's cookie (its CSRF token and admin login) is still good after the restart
    cookie = client.get_cookie("mahjong_table")
    again = second.test_client()
    again.set_cookie("mahjong_table", cookie.value)
    again.environ_base.update(client.environ_base)
    assert again.get("/api/admin").get_json()["admin"] is True
    assert again.post("/api/admin/logout").status_code == 200


def test_a_given_secret_key_is_used_and_nothing_is_written(live_table, data_dir):
    app = create_app(live_table.runtime, data_dir=data_dir, secret_key=b"k" * 32)
    assert app.secret_key == b"k" * 32
    assert not (data_dir / "secret.key").exists()


def test_a_short_key_file_is_replaced(tmp_path):
    (tmp_path / "secret.key").write_bytes(b"short")
    key = load_secret_key(tmp_path)
    assert len(key) == 32 and (tmp_path / "secret.key").read_bytes() == key
    assert load_secret_key(tmp_path) == key


def test_guesses_sent_at_once_are_counted_one_by_one(app, client):
    client.post("/api/admin/pin", json={"pin": "1234"})
    clients = [client_for(app) for _ in range(10)]  # one address: one client to the guard
    statuses: list[int] = []

    def guess(c) -> None:
        statuses.append(c.post("/api/admin/login", json={"pin": "0000"}).status_code)

    threads = [threading.Thread(target=guess, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [403] * 4 + [429] * 6


def test_a_token_header_that_is_not_ascii_is_403_not_500(app):
    client = app.test_client()
    client.get("/api/csrf")
    response = client.post("/api/admin/logout", headers={CSRF_HEADER: "é" * 43})
    assert error(response, 403).startswith("missing or wrong CSRF token")


pin_bodies = st.dictionaries(
    st.sampled_from(["pin", "current"]) | st.text(max_size=5),
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.lists(st.integers()),
    max_size=3,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=st.sampled_from(["/api/admin/pin", "/api/admin/login"]), body=pin_bodies)
def test_no_pin_request_is_ever_a_500(app, client, path, body):
    response = client.post(path, data=json.dumps(body), content_type="application/json")
    assert response.status_code < 500
    assert response.get_json()["error" if response.status_code >= 400 else "admin"] is not None
