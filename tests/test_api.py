"""The dashboard's JSON API (webui/api.py): every endpoint, its refusals as 4xx JSON with a
message, and never a 500, whatever a client sends."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.errors import StorageError
from controller.profiles import builtin_names
from controller.table.machine import RequestRefused
from webui import create_app
from webui.api import ACTIONS, BY_HEADER

PIN = "2468"


def client_for(app):
    """A test client that sends the session's CSRF token with every request."""
    client = app.test_client()
    token = client.get("/api/csrf").get_json()["token"]
    client.environ_base["HTTP_X_CSRF_TOKEN"] = token
    return client


@pytest.fixture
def app(live_table, tmp_path: Path):
    return create_app(live_table.runtime, data_dir=tmp_path / "data")


@pytest.fixture
def client(app):
    return client_for(app)


@pytest.fixture
def admin(client):
    assert client.post("/api/admin/pin", json={"pin": PIN}).status_code == 200
    return client


def is_json_error(response, status: int, *words: str) -> str:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    message = response.get_json()["error"]
    assert isinstance(message, str) and message and "\n" not in message
    assert "Traceback" not in message
    for word in words:
        assert word in message, message
    return message


def settle_one(live_table, client) -> dict[str, Any]:
    """Play a hand to a settlement through the API's confirm."""
    live_table.start_hand()
    live_table.self_draw_win(1)
    response = client.post("/api/actions/confirm")
    assert response.status_code == 200, response.get_json()
    return response.get_json()


# -- state ---------------------------------------------------------------------------------------


def test_state_is_the_snapshot_and_the_servers_clock(client, live_table):
    response = client.get("/api/state")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    data = response.get_json()
    snapshot = live_table.runtime.snapshot()
    assert {k: data[k] for k in snapshot} == snapshot
    assert isinstance(data["server_time"], float)


def test_a_stopped_controller_is_503_at_once(client, live_table):
    live_table.runtime.fatal = StorageError("the disk is full")
    try:
        is_json_error(client.get("/api/state"), 503, "stopped", "the disk is full")
        is_json_error(client.post("/api/actions/confirm"), 503, "stopped")
        is_json_error(client.get("/api/events"), 503, "stopped")
    finally:
        live_table.runtime.fatal = None


# -- actions -------------------------------------------------------------------------------------


def test_an_action_answers_with_its_events_and_the_state(client):
    response = client.post("/api/actions/start_hand", json={})
    assert response.status_code == 200
    data = response.get_json()
    assert [e["type"] for e in data["events"]] == ["hand_started", "phase", "command"]
    assert data["state"]["phase"] == "shuffling"


def test_an_empty_body_is_no_arguments(client):
    assert client.post("/api/actions/start_hand").status_code == 200


def test_a_refusal_is_409_with_the_controllers_words(client):
    is_json_error(client.post("/api/actions/confirm"), 409, "no settlement is waiting")


def test_unknown_actions_are_400_before_the_controller_sees_them(client, live_table):
    seq = live_table.runtime.snapshot()["seq"]
    for name in ("nope", "__call__", "_request_confirm", "x" * 300):
        is_json_error(client.post(f"/api/actions/{name}"), 400, "unknown action")
    assert live_table.runtime.snapshot()["seq"] == seq


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{", "not valid JSON"),
        (b"[1, 2]", "JSON object, not list"),
        (b'"confirm"', "JSON object, not str"),
        (b"NaN", "not valid JSON"),
        (b'{"seat": NaN}', "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"a":' * 20 + b"1" + b"}" * 20, "nests deeper"),
        (b"[" * 100_000 + b"]" * 100_000, "too large"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_400(client, body, words):
    response = client.post("/api/actions/declare_win", data=body, content_type="application/json")
    status = 413 if words == "too large" else 400
    is_json_error(response, status, words)


def test_the_body_is_passed_as_the_arguments(client, live_table):
    live_table.start_hand()
    response = client.post("/api/actions/declare_win", json={"seat": 2, "how": "self_draw"})
    assert response.status_code == 200
    declared = [e for e in response.get_json()["events"] if e["type"] == "win_declared"]
    assert declared[0]["seat"] == 2 and declared[0]["how"] == "self_draw"


def test_who_acts_comes_from_the_header(client, live_table):
    live_table.start_hand()
    response = client.post(
        "/api/actions/declare_win", json={"seat": 1}, headers={BY_HEADER: "Bo's phone"}
    )
    assert response.get_json()["events"][0]["source"] == "Bo's phone"
    name = "东家平板".encode().decode("latin-1")  # a UTF-8 header as WSGI hands it over
    response = client.post("/api/actions/declare_win", json={"seat": 2}, headers={BY_HEADER: name})
    assert response.get_json()["events"][0]["source"] == "东家平板"
    response = client.post("/api/actions/declare_win", json={"seat": 1})
    assert response.status_code == 200  # without it: "dashboard"


@pytest.mark.parametrize("by", ["", " ", "x" * 33, "a\tb"])
def test_a_bad_device_name_is_400(client, by):
    is_json_error(client.post("/api/actions/confirm", headers={BY_HEADER: by}), 400, BY_HEADER)


def test_a_whole_hand_through_the_api(client, live_table):
    data = settle_one(live_table, client)
    settled = [e for e in data["events"] if e["type"] == "settled"]
    assert settled and settled[0]["settlement"]["hand"] == "混一色"
    assert data["state"]["phase"] == "idle" and data["state"]["hands_settled"] == 1


# -- admin actions --------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["undo", "new_session"])
def test_admin_actions_need_the_admin_login(client, action, live_table):
    seq = live_table.runtime.snapshot()["seq"]
    is_json_error(client.post(f"/api/actions/{action}", json={}), 403, "admin PIN", action)
    assert live_table.runtime.snapshot()["seq"] == seq


def test_an_admin_may_undo_and_start_a_session(admin, live_table):
    settle_one(live_table, admin)
    response = admin.post("/api/actions/undo")
    assert response.status_code == 200
    assert response.get_json()["state"]["phase"] == "confirming"
    assert admin.post("/api/actions/confirm").status_code == 200
    response = admin.post(
        "/api/actions/new_session",
        json={"profile": "lazi", "stake": 2, "seats": ["东", "南", "西", "北"], "dealer": 1},
    )
    assert response.status_code == 200, response.get_json()
    state = response.get_json()["state"]
    assert state["session"] == 2 and state["profile"] == "lazi"
    assert state["seat_names"] == ["东", "南", "西", "北"]


@pytest.mark.parametrize("profile", ["/etc/passwd", "../x.toml", 7, None, "nope"])
def test_a_new_session_takes_only_a_known_profile(admin, profile):
    response = admin.post("/api/actions/new_session", json={"profile": profile})
    is_json_error(response, 400, "profile: one of", builtin_names()[0])


def test_a_new_session_refused_by_the_controller_is_409(admin, live_table):
    live_table.start_hand()
    is_json_error(admin.post("/api/actions/new_session", json={}), 409, "in progress")


# -- the controller failing -------------------------------------------------------------------


class FakeTable:
    """A table whose request raises what it is given."""

    fatal = None

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def snapshot(self) -> dict[str, Any]:
        return {"seq": 0, "profile": "shanghai"}

    def subscribe(self, callback):
        return lambda: None

    def request(self, action, args, *, by, timeout):
        raise self.error


@pytest.mark.parametrize(
    ("error", "status", "words"),
    [
        (TimeoutError(), 504, "did not answer within 10 s"),
        (StorageError("the event log: the disk is full"), 503, "the disk is full"),
        (RequestRefused("not now"), 409, "not now"),
    ],
)
def test_what_the_controller_raises_becomes_json(tmp_path, error, status, words):
    client = client_for(create_app(FakeTable(error), data_dir=tmp_path))
    is_json_error(client.post("/api/actions/confirm"), status, words)


def test_a_bug_in_the_controller_is_a_one_line_500_not_a_traceback(tmp_path):
    client = client_for(create_app(FakeTable(KeyError("fn")), data_dir=tmp_path))
    is_json_error(client.post("/api/actions/confirm"), 500, "KeyError")


def test_a_table_that_does_not_answer_is_503(tmp_path):
    class Stuck(FakeTable):
        def snapshot(self):
            raise TimeoutError

    client = client_for(create_app(Stuck(TimeoutError()), data_dir=tmp_path))
    is_json_error(client.get("/api/state"), 503, "not answering")
    is_json_error(client.get("/api/events"), 503, "not answering")


# -- history ---------------------------------------------------------------------------------------


def test_history_lists_every_session_with_its_zero_sum(client, live_table):
    settle_one(live_table, client)
    data = client.get("/api/history").get_json()
    (session,) = data["sessions"]
    assert session["session"] == 1 and session["seats"] == ["Ann", "Bo", "Cy", "Di"]
    assert session["zero_sum"] is True and session["problem"] is None
    assert session["hands"][0]["outcome"] == "settled"
    assert sum(int(x) for x in session["totals"]) == 0


def test_history_downloads(client, live_table):
    settle_one(live_table, client)
    response = client.get("/api/history/1.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="mahjong-session-1.csv"'
    )
    assert response.data.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(io.StringIO(response.data.decode("utf-8-sig"))))
    assert rows[0][-4:] == ["Ann", "Bo", "Cy", "Di"] and rows[-1][0] == "total"
    response = client.get("/api/history/1.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert "mahjong-session-1.json" in response.headers["Content-Disposition"]
    data = json.loads(response.data)
    assert data["session"] == 1 and data["zero_sum"] is True


@pytest.mark.parametrize("path", ["/api/history/2.csv", "/api/history/0.json"])
def test_a_missing_session_is_404_json(client, path):
    is_json_error(client.get(path), 404, "no session")


@pytest.mark.parametrize(
    "path", ["/api/history/-1.csv", "/api/history/x.json", "/api/history/1.xml"]
)
def test_a_malformed_session_path_is_404_json(client, path):
    is_json_error(client.get(path), 404, "no such endpoint")


def test_a_ledger_that_does_not_add_up_is_flagged(tmp_path):
    from controller.table import events as ev
    from controller.table.store import EventLog

    log = EventLog(":memory:")
    log.append(
        ev.SessionStarted(
            time=1.0, session=1, profile="shanghai", stake=1, seats=["a", "b", "c", "d"], dealer=0
        )
    )
    log.append(ev.HandStarted(time=2.0, session=1, hand=1, dealer=0, huangfan=0))
    log.append(
        ev.HandSettled(
            time=3.0,
            session=1,
            hand=1,
            wins=[],
            settlement={},
            payments={"0": 5, "1": -4},
            next_dealer=0,
            huangfan_next=0,
        )
    )

    class Logged(FakeTable):
        def __init__(self) -> None:
            self.log = log

    client = client_for(create_app(Logged(), data_dir=tmp_path))
    (session,) = client.get("/api/history").get_json()["sessions"]
    assert session["zero_sum"] is False and "sum to 1, not 0" in session["problem"]
    assert session["totals"] == [5, -4, 0, 0] and session["settle_up"] is None
    assert session["hands"][0]["payments"] == [5, -4, 0, 0]
    # the CSV needs no settling up: it downloads
    assert client.get("/api/history/1.csv").status_code == 200
    response = client.get("/api/history/1.json")
    assert response.status_code == 200 and json.loads(response.data)["zero_sum"] is False
    log.close()


def test_an_unreadable_log_is_503(tmp_path):
    class Reader:
        def events(self):
            raise StorageError("event log x is damaged: restore it from a backup")

        def close(self):
            pass

    class Broken(FakeTable):
        class log:  # stands in for an EventLog
            @staticmethod
            def reader():
                return Reader()

    client = client_for(create_app(Broken(TimeoutError()), data_dir=tmp_path))
    is_json_error(client.get("/api/history"), 503, "damaged")
    is_json_error(client.get("/api/history/1.csv"), 503, "damaged")


# -- profiles, camera, announcements, errors -----------------------------------------------------


def test_profiles_lists_the_builtin_ones_and_the_one_in_force(client):
    data = client.get("/api/profiles").get_json()
    assert [p["name"] for p in data["builtin"]] == builtin_names()
    assert all(p["title"] for p in data["builtin"])
    current = data["current"]
    assert current["name"] == "shanghai" and current["lezi"] == 10
    assert current["flower_hand_cap"] == 1
    assert current["settings"]["hands"]["qingpeng"] == 2


class Camera:
    def __init__(self, result: Any) -> None:
        self.result = result

    def view_jpeg(self):
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def test_the_camera_view(live_table, tmp_path):
    def get(result):
        app = create_app(live_table.runtime, camera=Camera(result), data_dir=tmp_path)
        return app.test_client().get("/api/camera.jpg")

    response = get(b"\xff\xd8jpeg")
    assert response.status_code == 200 and response.mimetype == "image/jpeg"
    assert response.data == b"\xff\xd8jpeg" and response.headers["Cache-Control"] == "no-store"
    is_json_error(get(None), 404, "no camera frame yet")
    is_json_error(get(ValueError("cv2 says no")), 503, "cv2 says no")


def test_no_camera_is_404(client):
    is_json_error(client.get("/api/camera.jpg"), 404, "no camera")


def test_announce_without_an_announcer(client):
    assert client.get("/api/announce").get_json() == {
        "language": "off",
        "languages": ["off"],
        "available": False,
    }
    is_json_error(client.post("/api/announce", json={"language": "en"}), 409, "no announcer")


def test_announce_switches_the_language_and_keeps_it(live_table, tmp_path, monkeypatch):
    from webui.announce import Announcer

    monkeypatch.setenv("PATH", str(tmp_path))  # no espeak-ng
    announcer = Announcer("cmn")
    app = create_app(live_table.runtime, data_dir=tmp_path, announcer=announcer)
    client = client_for(app)
    assert client.get("/api/announce").get_json()["available"] is False
    is_json_error(client.post("/api/announce", json={"language": "fr"}), 400, "cmn, en, off")
    response = client.post("/api/announce", json={"language": "en"})
    assert response.get_json()["language"] == "en" and announcer.language == "en"
    again = Announcer("cmn")  # a restart keeps the setting
    create_app(live_table.runtime, data_dir=tmp_path, announcer=again)
    assert again.language == "en"
    announcer.close()
    again.close()


def test_unknown_api_paths_and_methods_are_json(client):
    is_json_error(client.get("/api/nope"), 404, "no such endpoint: GET /api/nope")
    response = client.delete("/api/state")
    is_json_error(response, 405, "DELETE is not allowed", "GET")
    assert "GET" in response.headers["Allow"]
    is_json_error(client.get("/api/actions/confirm"), 405, "allowed: POST")


# -- no request makes a 500 ------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["pung", "EEE", "1m 2m 3m", "self_draw", "discard", "ok", "1f", "seat"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["kind", "tiles", "from", "flowers", "melds", "open_tiles"])
            | st.text(max_size=5),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
bodies = st.dictionaries(
    st.sampled_from(["seat", "how", "discarder", "field", "value", "question", "profile", "stake"])
    | st.sampled_from(["seats", "dealer"])
    | st.text(max_size=6),
    json_values,
    max_size=5,
)
raw_bodies = st.one_of(
    bodies.map(json.dumps),
    json_values.map(json.dumps),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)
names = st.sampled_from(ACTIONS) | st.text(
    alphabet=st.characters(codec="ascii", exclude_characters="/?#%\\"), min_size=1, max_size=12
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(action=names, body=raw_bodies)
def test_no_action_request_is_ever_a_500(admin, live_table, action, body):
    if live_table.runtime.snapshot()["phase"] == "idle" and action != "new_session":
        live_table.start_hand()  # play on, so more of the controller is reached
    response = admin.post(
        f"/api/actions/{action}", data=body.encode("utf-8"), content_type="application/json"
    )
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        is_json_error(response, response.status_code)
    else:
        assert set(response.get_json()) == {"events", "state"}
