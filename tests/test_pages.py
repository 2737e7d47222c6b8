"""The dashboard's pages (webui/pages.py, webui/templates, webui/static): each page renders
with its title and the files it names, nothing is fetched from outside, every word exists in
both languages, and the pure JavaScript (tile notation, meld layout, amounts, the chart) does
what the pages rely on (run under node)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from controller.table.messages import QUESTIONS, REASONS, arg_names
from webui import create_app
from webui.pages import PAGES

WEBUI = Path(__file__).resolve().parent.parent / "webui"
STATIC = WEBUI / "static"
TEMPLATES = WEBUI / "templates"
ROUTES = {"board": "/", "history": "/history", "settings": "/settings", "camera": "/camera"}


@pytest.fixture
def client(live_table, tmp_path):
    app = create_app(live_table.runtime, camera=None, data_dir=tmp_path)
    app.config["TESTING"] = True
    with app.test_client() as c:
        yield c
    app.extensions["mahjong_table"].close()


class _Refs(HTMLParser):
    """The title, every src/href, and every data-testid and data-i18n key of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self._in_title = False
        self.refs: list[str] = []
        self.testids: set[str] = set()
        self.i18n: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("src", "href"):
                self.refs.append(value)
            elif name == "data-testid":
                self.testids.add(value)
            elif name.startswith("data-i18n"):
                self.i18n.add(value)
        if tag == "title":
            self._in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def _page(client, name: str) -> _Refs:
    response = client.get(ROUTES[name])
    assert response.status_code == 200, name
    assert response.mimetype == "text/html"
    parser = _Refs()
    parser.feed(response.get_data(as_text=True))
    return parser


def _dictionary() -> dict[str, dict[str, str]]:
    """webui/static/i18n.js's object (plain JSON after ``window.I18N =``)."""
    text = (STATIC / "i18n.js").read_text(encoding="utf-8")
    start = text.index("window.I18N =") + len("window.I18N =")
    return json.loads(text[start:].strip().rstrip(";"))


# -- the pages ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_each_page_renders_with_its_title_and_files(client, name):
    page = _page(client, name)
    english, chinese = PAGES[name]
    assert english in page.title and chinese in page.title
    local = [r for r in page.refs if r.startswith("/static/")]
    # the shared files and the page's own script
    names = {Path(urlsplit(r).path).name for r in local}
    assert {"app.css", "i18n.js", "app.js"} <= names
    if name in ("board", "history", "settings", "camera"):
        assert f"{name}.js" in names
    for ref in local:
        path = urlsplit(ref).path
        assert (STATIC / path.removeprefix("/static/")).is_file(), ref
        served = client.get(ref)
        assert served.status_code == 200, ref
        assert served.data == (STATIC / path.removeprefix("/static/")).read_bytes()
    # the pages link to each other
    for other in ROUTES.values():
        assert other in page.refs


def test_static_urls_change_with_the_content(client):
    """A script's URL carries its content's fingerprint: a phone never runs a stale one."""
    page = _page(client, "board")
    app_js = next(r for r in page.refs if urlsplit(r).path == "/static/app.js")
    digest = re.search(r"[?&]v=([0-9a-f]{10})\b", app_js)
    assert digest, app_js
    import hashlib

    assert digest.group(1) == hashlib.sha256((STATIC / "app.js").read_bytes()).hexdigest()[:10]


def test_the_board_carries_the_test_hooks(client):
    """The ids the browser tests use: fixed ones in the page, the rest made by board.js."""
    page = _page(client, "board")
    fixed = {f"seat-{s}" for s in range(4)} | {
        "phase",
        "phase-reason",
        "confirm",
        "correct-seat",
        "correct-how",
        "conn-status",
        "lang-toggle",
        "dice",
        "wall-break",
        "huangfan",
        "kaibao",
        "faults",
        "win-panel",
        "last-update",
        "link-status",
        "camera-status",
        "seat-editor",
        "edit-open",
        "edit-melds",
        "edit-flowers",
        "edit-submit",
        "how-select",
        "discarder-select",
        "how-submit",
    }
    assert fixed <= page.testids
    script = (STATIC / "board.js").read_text(encoding="utf-8")
    for made in (
        '"question-"',
        '"answer-"',
        '"total-"',
        '"start-hand"',
        '"declare-win"',
        '"declare-drawn"',
        '"proposal"',
        '"fault-"',
    ):
        assert made in script, made
    assert '"payment-"' in (STATIC / "app.js").read_text(encoding="utf-8")


def test_history_and_settings_carry_their_test_hooks(client):
    history = _page(client, "history")
    assert {"undo", "chart", "zero-sum", "export-csv", "export-json", "settle-up"} <= (
        history.testids
    )
    assert '"history-row-"' in (STATIC / "history.js").read_text(encoding="utf-8")
    settings = _page(client, "settings")
    assert {"pin-input", "login", "logout", "pin-new", "set-pin", "new-session"} <= (
        settings.testids
    )
    assert {"profile-select", "stake-input", "dealer-select", "kiosk-toggle", "my-seat"} <= (
        settings.testids
    )
    assert {f"seat-name-{s}" for s in range(4)} <= settings.testids
    camera = _page(client, "camera")
    assert "camera-img" in camera.testids
    assert "conn-status" not in camera.testids  # the camera page follows no event stream


def test_pages_work_beside_the_api(client):
    """The blueprint's routes do not hide the API's, and the API's static-free 404 stays."""
    assert client.get("/api/state").status_code == 200
    assert client.get("/static/no-such-file.js").status_code == 404
    assert client.get("/nowhere").status_code == 404


# -- nothing from outside -----------------------------------------------------------------------


def _front_end_files() -> list[Path]:
    return sorted(p for p in [*STATIC.rglob("*"), *TEMPLATES.rglob("*")] if p.is_file())


def test_nothing_is_fetched_from_outside():
    """No http(s) URL anywhere in the pages or their files: the table has no internet, and a
    CDN or web font would leave the page half drawn."""
    files = _front_end_files()
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        found = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, flags=re.I)
        assert not found, f"{path.name}: {found}"
        assert "@import" not in text and "url(http" not in text, path.name


def test_pages_only_use_their_own_scripts(client):
    for name in ROUTES:
        page = _page(client, name)
        for ref in page.refs:
            parts = urlsplit(ref)
            assert not parts.netloc, ref
            assert parts.scheme in ("", "data"), ref


# -- words --------------------------------------------------------------------------------------


def test_the_dictionary_has_the_same_words_in_both_languages():
    words = _dictionary()
    assert set(words) == {"en", "zh"}
    assert words["en"].keys() == words["zh"].keys()
    for key, english in words["en"].items():
        chinese = words["zh"][key]
        assert english.strip() and chinese.strip(), key
        # the same {placeholders}, so a value filled in never goes missing in one language
        assert set(re.findall(r"\{(\w+)\}", english)) == set(re.findall(r"\{(\w+)\}", chinese)), key


def test_every_word_the_pages_use_is_in_the_dictionary():
    words = _dictionary()["en"]
    prefixes = {k.split(".")[0] for k in words}
    used: set[str] = set()
    for path in TEMPLATES.glob("*.html"):
        parser = _Refs()
        parser.feed(path.read_text(encoding="utf-8"))
        used |= parser.i18n
    for path in STATIC.glob("*.js"):
        if path.name == "i18n.js":
            continue
        for key in re.findall(r'"([a-z]+\.[a-z_0-9]+)"', path.read_text(encoding="utf-8")):
            if key.split(".")[0] in prefixes:
                used.add(key)
    missing = sorted(k for k in used if k not in words)
    assert not missing, missing
    # the words built from the server's names
    for family, names in {
        "phase": ["idle", "shuffling", "dice", "playing", "win_declared", "reading", "confirming"],
        "fault": [
            "jam",
            "tiles_short",
            "lid_open",
            "motor_stall",
            "estop",
            "link_lost",
            "mcu_reset",
            "camera_lost",
            "watchdog",
        ],
        "how": ["self_draw", "discard", "robbing_kong", "eight_flowers", "withdrawn"],
        "meld": ["chow", "pung", "kong", "added_kong", "concealed_kong"],
        "conn": ["connecting", "live", "reconnecting"],
        "wind": ["0", "1", "2", "3"],
        "title": list(ROUTES),
        "camera": ["loading", "live", "none"],
        "q": ["seat", "ready", "gangkai", "winning_tile"],
    }.items():
        for name in names:
            assert f"{family}.{name}" in words, f"{family}.{name}"


def test_the_chinese_words_are_chinese():
    words = _dictionary()["zh"]
    for key in ("phase.playing", "fault.jam", "fault.tiles_short", "nav.board", "action.confirm"):
        assert re.search(r"[\u4e00-\u9fff]", words[key]), key
    assert words["fault.jam"] == "卡牌" and words["fault.tiles_short"] == "少牌"


def test_every_reason_and_question_the_controller_can_say_is_in_both_languages():
    """controller/table/messages.py's keys, each as reason.<key> / question.<key>, using only
    the arguments the controller fills it with."""
    words = _dictionary()
    for prefix, templates in (("reason", REASONS), ("question", QUESTIONS)):
        for key in templates:
            args = arg_names(key)
            for lang in ("en", "zh"):
                said = words[lang].get(f"{prefix}.{key}")
                assert said, f"{lang}: {prefix}.{key}"
                assert set(re.findall(r"\{(\w+)\}", said)) <= args, f"{lang}: {prefix}.{key}"
            assert re.search(r"[\u4e00-\u9fff]", words["zh"][f"{prefix}.{key}"]), key
    # no word for a key the controller no longer says
    for prefix, templates in (("reason", REASONS), ("question", QUESTIONS)):
        stale = {k for k in words["en"] if k.startswith(prefix + ".")} - {
            f"{prefix}.{k}" for k in templates
        }
        assert not stale, stale
    # who acted and the hardware's failures have words of their own
    for key in ("by.dashboard", "failure.jam", "failure.lid_open", "failure.timeout"):
        assert key in words["en"] and key in words["zh"], key


# -- the pure JavaScript, under node ------------------------------------------------------------

NODE = shutil.which("node")


def _js(expr: str):
    """Evaluate ``expr`` with app.js's pure functions in scope; its JSON value."""
    if NODE is None:
        pytest.skip("node is not installed")
    program = (
        f"const A = require({json.dumps(str(STATIC / 'app.js'))});\n"
        f"process.stdout.write(JSON.stringify((() => {{ with (A) {{ return {expr}; }} }})()));\n"
    )
    out = subprocess.run(
        [NODE, "-e", program], capture_output=True, text=True, timeout=30, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_js_expands_the_notation():
    assert _js('expandTiles("123m EE 5p")') == ["1m", "2m", "3m", "E", "E", "5p"]
    assert _js('expandTiles("1f 5f")') == ["1f", "5f"]
    assert _js('expandTiles("春梅 中发白")') == ["1f", "5f", "C", "F", "P"]
    assert _js('expandTiles("1z 5z 7z")') == ["E", "P", "C"]
    assert _js('expandTiles("19s,19p")') == ["1s", "9s", "1p", "9p"]
    assert _js('expandTiles("")') == []
    for bad in ("123", "m", "0m", "9f", "x", "e"):
        assert _js(f"parseTiles({json.dumps(bad)}).error !== null"), bad
    assert _js('parseTiles("12 3m").error.key') == "notation.no_suit"


def test_js_writes_the_notation_back_as_the_server_does():
    from controller.rules import format_tiles, parse_tiles

    for text in ("123m EE 5p", "1m 2m 3m 4m 5m 6m 7m 8m 9m S S", "EEE SSS 1p", "15f", "CFP"):
        ours = _js(f"compressTiles(expandTiles({json.dumps(text)}))")
        assert ours == format_tiles(parse_tiles(text)), text


def test_js_reads_melds():
    assert _js('parseMelds("[EEE<2] [123m<3] [FFFF] [5555p+<1]")') == [
        {"kind": "pung", "tiles": "EEE", "from": 2},
        {"kind": "chow", "tiles": "123m", "from": 3},
        {"kind": "concealed_kong", "tiles": "FFFF", "from": None},
        {"kind": "added_kong", "tiles": "5555p", "from": 1},
    ]
    assert _js('parseMelds("[SSSS<0],[WWWW<?]")') == [
        {"kind": "kong", "tiles": "SSSS", "from": 0},
        {"kind": "kong", "tiles": "WWWW", "from": None},
    ]
    assert _js('parseMelds("  ")') == []
    bad_melds = ("[124m<3]", "[EES<1]", "EEE", "[EEE<4]", "[1f2f3f]", "[EE]", "[5555p+]")
    for bad in (*bad_melds, "[EEE] [SSS] [WWW] [NNN] [CCC]"):
        assert _js(
            f"(() => {{ try {{ parseMelds({json.dumps(bad)}); return false; }} "
            "catch (e) { return e.key; } })()"
        ), bad
    # what formatMeld writes, parseMelds reads back
    melds = [
        {"kind": "pung", "tiles": "EEE", "from": 2},
        {"kind": "added_kong", "tiles": "5555p", "from": 1},
        {"kind": "concealed_kong", "tiles": "FFFF", "from": None},
        {"kind": "chow", "tiles": "123m", "from": 3},
    ]
    assert _js(f"parseMelds({json.dumps(melds)}.map(formatMeld).join(' '))") == melds


def test_js_melds_the_server_accepts():
    """Every meld parseMelds makes, the rules build (Meld.of) unchanged."""
    from controller.rules import Meld

    for meld in _js('parseMelds("[EEE<2] [123m<3] [FFFF] [5555p+<1]")') + _js(
        'parseMelds("[SSSS<0] [789s<?]")'
    ):
        built = Meld.of(meld["kind"], meld["tiles"], meld["from"])
        assert built.to_json().get("from") == meld["from"]


def test_js_turns_the_claimed_tile_sideways():
    def layout(kind, tiles, source, seat):
        meld = json.dumps({"kind": kind, "tiles": tiles, "from": source})
        items = _js(f"meldLayout({meld}, {seat})")
        return [
            ("S" if i["sideways"] else "")
            + ("B" if i["back"] else "")
            + ("+" if i["stacked"] else "")
            or "."
            for i in items
        ]

    assert layout("pung", "EEE", 0, 1) == ["S", ".", "."]  # from the left (the previous seat)
    assert layout("pung", "EEE", 3, 1) == [".", "S", "."]  # from across
    assert layout("pung", "EEE", 2, 1) == [".", ".", "S"]  # from the right (the next seat)
    assert layout("kong", "EEEE", 2, 1) == [".", ".", ".", "S"]
    assert layout("chow", "123m", 0, 1) == ["S", ".", "."]
    assert layout("concealed_kong", "FFFF", None, 1) == ["B", ".", ".", "B"]
    assert layout("added_kong", "5555p", 3, 1) == [".", "S+", "."]  # the fourth lies across
    assert layout("pung", "EEE", None, 1) == [".", ".", "."]  # source unknown: none turned


def test_js_seats_amounts_and_settlements():
    assert _js("[0,1,2,3].map(s => seatWind(s, 2))") == [2, 3, 0, 1]
    assert _js("[0,1,2,3].map(s => seatPosition(s, 1))") == ["left", "bottom", "right", "top"]
    assert _js('[toNumber("3/2"), toNumber(4), toNumber("-1/4"), toNumber(null)]') == [
        1.5,
        4,
        -0.25,
        0,
    ]
    assert _js(
        '[fmtAmount(12, true), fmtAmount(-4, true), fmtAmount(0, true), fmtAmount("1/3")]'
    ) == [
        "+12",
        "-4",
        "0",
        "0.33",
    ]
    assert _js('seatPayments({"0": -4, "1": 12, "2": -4, "3": -4})') == [-4, 12, -4, -4]
    assert _js("seatPayments([1, -1, 0, 0])") == [1, -1, 0, 0]
    assert _js("seatPayments(null)") == [0, 0, 0, 0]
    hands = '[{payments: [1, -1, 0, 0]}, {payments: null}, {payments: ["1/2", 0, 0, "-1/2"]}]'
    assert _js(f"cumulative({hands})") == [
        [0, 0, 0, 0],
        [1, -1, 0, 0],
        [1, -1, 0, 0],
        [1.5, -1, 0, -0.5],
    ]
    assert _js('[isZeroSum([1, -1, "1/3", "-1/3"]), isZeroSum([1, 0, 0, 0])]') == [True, False]
    assert _js('[...unsureCodes(["seat 1: unsure of an open tile, 5m (0.41, or 6m 0.33)"])]') == [
        "5m"
    ]


def test_js_reads_a_real_settlement(live_table):
    """winsOf() finds the one win of a real proposal, with its transfers and breakdown."""
    live_table.start_hand()
    live_table.self_draw_win(1)
    settlement = live_table.runtime.snapshot()["proposal"]["settlement"]
    wins = _js(f"winsOf({json.dumps(settlement, ensure_ascii=False)})")
    assert len(wins) == 1
    assert wins[0]["winner"] == 1
    assert len(wins[0]["transfers"]) == 3
    assert wins[0]["breakdown"]["hua_total"] == settlement["breakdown"]["hua_total"]
    several = {"wins": [{"winner": 0, "payments": [{"payer": 1}]}, {"winner": 2}]}
    assert _js(f"winsOf({json.dumps(several)}).map(w => w.transfers.length)") == [1, 0]


def test_js_draws_the_chart_as_inline_svg():
    svg = _js('chartSvg(cumulative([{payments: [3, -1, -1, -1]}]), ["Ann", "<b>", "Cy", "Di"])')
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<polyline") == 4
    assert "&lt;b&gt;" in svg and "<b>" not in svg  # a player's name never becomes markup
    assert "http" not in svg  # inline SVG in HTML needs no namespace URL


def _say(lang: str, prefix: str, key: str, args, english: str, names=("Ann", "Bo", "", "Di")):
    """What the board shows for a server message in ``lang``: serverText with the page's
    dictionary (English where ``lang`` has no word) and seat names."""
    words = _dictionary()
    table = {**words["en"], **words[lang]}
    seat_n = table["seat.n"]
    table = {
        k: v for k, v in table.items() if k.split(".")[0] in ("reason", "question", "by", "failure")
    }
    expr = (
        f"serverText((k) => ({json.dumps(table, ensure_ascii=False)})[k], {json.dumps(prefix)}, "
        f"{json.dumps(key)}, {json.dumps(args, ensure_ascii=False)}, "
        f"{json.dumps(english, ensure_ascii=False)}, "
        f"(s) => {json.dumps(list(names), ensure_ascii=False)}[s] || "
        f"{json.dumps(seat_n, ensure_ascii=False)}.replace('{{n}}', s))"
    )
    return _js(expr)


def test_js_says_the_server_s_reasons_in_the_page_s_language():
    english = "hand 1 settled (confirmed by seat 1): press confirm for the next hand"
    args = {"hand": 1, "seat": 1}
    assert _say("zh", "reason", "settled_at_seat", args, english) == (
        "第 1 局已结算（Bo 确认）：按确认开始下一局"
    )
    assert _say("en", "reason", "settled_at_seat", args, english) == (
        "Hand 1 settled (confirmed by Bo): press confirm for the next hand"
    )
    # a seat without a name is said by its number, in the page's words
    assert _say("zh", "reason", "wins", {"seat": 2}, "seat 2 wins") == "2 号位 胡了：请摊牌"
    # who acted, and a hardware failure, are words of their own
    assert _say("zh", "reason", "corrected", {"by": "dashboard"}, "x") == "已由网页端更正"
    assert _say("zh", "reason", "corrected", {"by": "厨房平板"}, "x") == "已由厨房平板更正"
    failed = {"failure": "jam", "message": "jam at wall 2"}
    assert _say("zh", "reason", "hardware_failed", failed, "x") == "卡牌：排除后按确认"
    # a failure without a word is said as the hardware said it
    odd = {"failure": "bad_args", "message": "lights: mask and level must be 0-255"}
    assert _say("en", "reason", "hardware_failed", odd, "x") == (
        "lights: mask and level must be 0-255: fix it, then press confirm"
    )
    assert _say("zh", "reason", "wall_breaks", {"die1": 3, "die2": 5, "seat": 0}, "x") == (
        "骰子 3+5：从 Ann 门前开牌"
    )


def test_js_says_the_server_s_questions_in_the_page_s_language():
    english = "杠开? Did seat 3 win on the replacement tile of their kong?"
    assert _say("zh", "question", "gangkai_kong", {"seat": 3}, english) == (
        "杠开？Di 是否胡在开杠后补的牌上？"
    )
    assert _say("en", "question", "ready", {"seat": 0}, "x") == (
        "承包: was Ann ready (听牌) when discarding? Lay the hand open, or answer"
    )


def test_js_falls_back_to_the_server_s_english():
    english = "seat 1 wins: lay the hand open"
    # an old log: no key
    assert _say("zh", "reason", "", {}, english) == english
    # a key this page does not know (a newer server)
    assert _say("zh", "reason", "brand_new", {"seat": 1}, english) == english
    assert _say("zh", "question", "brand_new", None, "which tile?") == "which tile?"
    # an argument missing: never a half-filled {seat}
    assert _say("zh", "reason", "wins", {}, english) == english
    assert _js('serverText(() => undefined, "reason", "", null, null, String)') == ""
