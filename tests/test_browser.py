"""The dashboard in a real browser: Playwright driving Debian's headless Chromium against
``mahjong-table sim`` (the whole simulated table in its own process, the bots leaving each
settlement to the dashboard: ``--confirm dashboard``).

The tests run in order on one table: the board loads, live events reach the page, a tile is
corrected and the score changes, the win is confirmed, the admin PIN, a POST without the CSRF
token, the page through a server restart. Screenshots of the board in each language are
written to ``build/test-artifacts/`` (``MAHJONG_ARTIFACTS`` overrides it)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.table.state import PHASES
from tests.conftest import REPO, SimProcess

playwright_api = pytest.importorskip("playwright.sync_api")

HAND_S = 240.0  # a hand played flat out on a loaded 2-core machine takes well under this
LIVE_MS = 1000  # a simulated event shows on the page within a second
ARTIFACTS = Path(os.environ.get("MAHJONG_ARTIFACTS", REPO / "build" / "test-artifacts"))


def _chromium() -> str:
    path = os.environ.get("MAHJONG_CHROMIUM") or shutil.which("chromium")
    path = path or shutil.which("chromium-browser")
    if not path:
        msg = "Chromium not found (Debian: apt-get install chromium); set MAHJONG_CHROMIUM"
        if os.environ.get("MAHJONG_CI") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="module")
def sim(sim_process: Any) -> SimProcess:
    return sim_process("--seed", "3", "--speed", "0", "--confirm", "dashboard")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(browser: Any, sim: SimProcess) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, locale="en-GB")
    pg = context.new_page()
    pg.set_default_timeout(HAND_S * 1000)
    pg.goto(sim.url + "/?lang=en")
    yield pg
    context.close()


def state(sim: SimProcess) -> dict[str, Any]:
    with urllib.request.urlopen(sim.url + "/api/state", timeout=10) as r:
        return json.load(r)


def by_id(page: Any, testid: str) -> Any:
    return page.get_by_test_id(testid)


def wait_confirming(page: Any) -> None:
    """Until the table shows a proposal with nothing left to answer."""
    page.wait_for_selector('[data-testid=phase][data-phase="confirming"]')
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=confirm]').disabled", timeout=HAND_S * 1000
    )


class EventReader:
    """The live feed read beside the page, as another client: when each event arrived."""

    def __init__(self, sim: SimProcess) -> None:
        self.seen: list[tuple[float, str, Any]] = []
        self._conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=HAND_S)
        self._conn.request("GET", "/api/events")
        self._resp = self._conn.getresponse()
        assert self._resp.status == 200
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        kind = ""
        try:
            for raw in self._resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    self.seen.append((time.time() * 1000, kind, json.loads(line[6:])))
        except (OSError, ValueError, http.client.HTTPException):
            return

    def wait_live(self, timeout: float = HAND_S) -> None:
        """Wait for the feed's first frame (the snapshot the server sends a new stream):
        from then on every event the table sends reaches this reader too."""
        deadline = time.monotonic() + timeout
        while not self.seen:
            assert time.monotonic() < deadline, "the live feed sent nothing"
            time.sleep(0.01)

    def close(self) -> None:
        self._conn.close()


# -- the board -----------------------------------------------------------------------------------


def test_the_board_loads_with_every_seat_and_no_concealed_hand(page: Any, sim: SimProcess) -> None:
    by_id(page, "conn-status").and_(page.locator('[data-state="live"]')).wait_for()
    snap = state(sim)
    for seat in range(4):
        box = by_id(page, f"seat-{seat}")
        box.wait_for()
        assert snap["seat_names"][seat] in box.inner_text()
    assert by_id(page, "phase").get_attribute("data-phase") in PHASES
    assert "Stake" in by_id(page, "stake").inner_text()
    # only what lies open is drawn: a seat shows no more tiles than it laid
    page.wait_for_selector('[data-testid=phase][data-phase="playing"]')
    snap = state(sim)
    for seat in range(4):
        view = snap["seats"][seat]
        laid = len(view.get("flowers", "").split()) + sum(
            len(m["tiles"]) for m in view.get("melds", [])
        )
        drawn = by_id(page, f"seat-{seat}").locator(".tile").count()
        assert drawn <= laid + 4 * len(view.get("melds", [])), (seat, view, drawn)


def test_a_simulated_event_shows_within_a_second(page: Any, sim: SimProcess) -> None:
    # the feed is live before the page is watched: a phase the page shows after that was sent
    # after it too (opened after, a change in between reached the page but not the feed)
    feed = EventReader(sim)
    try:
        feed.wait_live()
        page.evaluate(
            """() => {
                const el = document.querySelector('[data-testid=phase]');
                window.__phases = [[0, el.dataset.phase]];  // where it stands: not a change
                new MutationObserver(() => {
                    const p = el.dataset.phase;
                    const last = window.__phases[window.__phases.length - 1];
                    if (!last || last[1] !== p) window.__phases.push([Date.now(), p]);
                }).observe(el, {attributes: true, childList: true, subtree: true});
            }"""
        )
        # the bots play on: the hand's phases change (playing -> win declared -> reading ...)
        page.wait_for_function("() => window.__phases.length >= 3")
        shown: list[list[Any]] = page.evaluate("() => window.__phases")[1:]
    finally:
        feed.close()
    delays = []
    for shown_at, phase in shown:
        sent = [t for t, kind, data in feed.seen if kind == "phase" and data["phase"] == phase]
        assert sent, f"the page shows {phase!r}, which the stream never sent"
        delays.append(shown_at - max(t for t in sent if t <= shown_at + 50))
    assert max(delays) < LIVE_MS, delays


# -- a win: correct a tile, then confirm ---------------------------------------------------------


def _payments(snap: dict[str, Any]) -> dict[str, Any]:
    return snap["proposal"]["settlement"]["payments"]


def test_a_tile_corrected_changes_the_score(page: Any, sim: SimProcess) -> None:
    wait_confirming(page)
    before = state(sim)
    winner = before["proposal"]["wins"][0]["winner"]
    held = {f for s in before["seats"] for f in s.get("flowers", "").split()}
    mine = before["seats"][winner].get("flowers", "").split()
    # one flower more or less at the winner is one 花 more or less
    spare = [f"{n}f" for n in range(1, 9) if f"{n}f" not in held]
    flowers = mine[:-1] if mine else spare[:1]
    by_id(page, "correct-seat").click()
    editor = by_id(page, "seat-editor")
    editor.wait_for()
    assert by_id(page, "edit-seat").input_value() == str(winner)
    by_id(page, "edit-flowers").fill(" ".join(flowers))
    assert by_id(page, "edit-error").inner_text() == ""
    old_text = by_id(page, "proposal").inner_text()
    by_id(page, "edit-submit").click()
    by_id(page, "recomputed").wait_for()
    wait_confirming(page)
    after = state(sim)
    assert after["seats"][winner].get("flowers", "").split() == flowers
    assert _payments(after) != _payments(before)
    assert by_id(page, "proposal").inner_text() != old_text
    for seat, amount in _payments(after).items():
        assert str(abs(int(float(amount)))) in by_id(page, "proposal").inner_text(), seat


def test_a_win_is_confirmed_and_settles(page: Any, sim: SimProcess) -> None:
    wait_confirming(page)
    proposed = _payments(state(sim))
    by_id(page, "confirm").click()
    page.wait_for_selector('[data-testid=proposal][data-settled="true"]')
    snap = state(sim)
    assert snap["phase"] not in ("confirming", "reading")
    want = [float(proposed.get(str(seat), 0)) for seat in range(4)]
    assert [float(x) for x in snap["totals"]] == want
    page.goto(sim.url + "/history?lang=en")
    row = by_id(page, "history-row-1")
    row.wait_for()
    for seat in range(4):
        shown = by_id(page, f"history-pay-1-{seat}").inner_text().replace("\u2212", "-")
        assert float(shown or 0) == want[seat], (seat, shown)
    assert by_id(page, "zero-sum").is_visible()
    page.goto(sim.url + "/?lang=en")


# -- who may do what -----------------------------------------------------------------------------


def test_a_post_without_the_csrf_token_is_refused(page: Any, sim: SimProcess) -> None:
    before = state(sim)
    answer = page.request.post(sim.url + "/api/actions/declare_drawn", data={})
    assert answer.status == 403
    assert "CSRF" in answer.json()["error"] or "csrf" in answer.json()["error"].lower()
    after = state(sim)
    assert (after["hand"], after["session"]) == (before["hand"], before["session"])
    # with the token the same request reaches the table (which may refuse it: 409, not 403)
    token = page.request.get(sim.url + "/api/csrf").json()["token"]
    answer = page.request.post(
        sim.url + "/api/actions/undo", data={}, headers={"X-CSRF-Token": token}
    )
    assert answer.status == 403 and "PIN" in answer.json()["error"]


def admin_state(page: Any, want: str) -> None:
    page.wait_for_function(
        "s => document.querySelector('[data-testid=admin-status]').dataset.state === s",
        arg=want,
    )


def test_the_admin_pin_flow(page: Any, sim: SimProcess) -> None:
    page.goto(sim.url + "/settings?lang=en")
    admin_state(page, "no-pin")
    by_id(page, "pin-new").fill("2468")
    by_id(page, "pin-again").fill("2468")
    by_id(page, "set-pin").click()
    admin_state(page, "admin")
    assert by_id(page, "new-session").is_enabled()
    by_id(page, "logout").click()
    admin_state(page, "locked")
    assert by_id(page, "new-session").is_disabled()
    # a wrong PIN: refused, said so, still locked
    by_id(page, "pin-input").fill("1357")
    by_id(page, "login").click()
    toast = page.locator('[data-testid=toast][data-kind="error"]', has_text="PIN")
    toast.first.wait_for(timeout=10_000)
    admin_state(page, "locked")
    by_id(page, "pin-input").fill("2468")
    by_id(page, "login").click()
    admin_state(page, "admin")
    assert by_id(page, "new-session").is_enabled()
    page.goto(sim.url + "/?lang=en")


# -- languages -----------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_screenshot_of_the_board_in_each_language(page: Any, sim: SimProcess, lang: str) -> None:
    page.goto(f"{sim.url}/?lang={lang}")
    by_id(page, "conn-status").and_(page.locator('[data-state="live"]')).wait_for()
    assert by_id(page, "nav-board").inner_text() == ("牌桌" if lang == "zh" else "Board")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"board-{lang}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


# -- the server goes away and comes back ----------------------------------------------------------


def test_the_page_survives_the_server_restarting(page: Any, sim: SimProcess) -> None:
    page.goto(sim.url + "/?lang=en")
    conn = by_id(page, "conn-status")
    page.locator('[data-testid=conn-status][data-state="live"]').wait_for()
    hand = state(sim)["hand"]
    assert sim.stop() == 0, sim.errors()  # it was still running, and Ctrl-C ends it cleanly
    page.locator('[data-testid=conn-status]:not([data-state="live"])').wait_for(timeout=15_000)
    sim.start()
    # the same page, not reloaded: it reconnects by itself and shows the table's state
    page.locator('[data-testid=conn-status][data-state="live"]').wait_for(timeout=30_000)
    assert conn.get_attribute("data-state") == "live"
    snap = state(sim)
    assert snap["hand"] >= hand
    page.wait_for_function(
        "n => document.querySelector('[data-testid=hand-no]').innerText.includes(String(n))",
        arg=snap["hand"],
        timeout=10_000,
    )
