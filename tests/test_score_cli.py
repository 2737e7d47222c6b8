"""``mahjong-table score`` and ``mahjong-table rules`` end to end, in a real process."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# the example the README and docs/scoring.md show
GOOD = json.loads((Path(__file__).parent.parent / "examples" / "win.json").read_text("utf-8"))


def run(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_score_json_from_stdin():
    r = run("score", "--json", stdin=json.dumps(GOOD))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["valid"] and d["hand"] == "混一色" and d["value"] == 18
    assert d["payments"] == {"0": 36, "1": 0, "2": 0, "3": -36}
    assert d["breakdown"]["hua_total"] == 7


def test_score_text_from_a_file(tmp_path):
    f = tmp_path / "win.json"
    f.write_text(json.dumps(GOOD), encoding="utf-8")
    r = run("score", str(f))
    assert r.returncode == 0 and "混一色" in r.stdout and "Net:" in r.stdout


def test_invalid_win_exits_1():
    bad = dict(GOOD, concealed="123m 456p C", winning_tile="C")
    bad["melds"] = [{"kind": "chow", "tiles": "789s", "from": 3}, GOOD["melds"][1]]
    r = run("score", "--json", stdin=json.dumps(bad))
    assert r.returncode == 1
    assert json.loads(r.stdout)["valid"] is False


def test_malformed_input_exits_2_naming_the_field():
    for data, field in [
        (dict(GOOD, winning_tile="Q"), "winning_tile"),
        (dict(GOOD, concealed="123m 456m C C"), "concealed"),
        ({k: v for k, v in GOOD.items() if k != "winner"}, "winner"),
        (dict(GOOD, profile="nonesuch"), "profile"),
    ]:
        r = run("score", stdin=json.dumps(data))
        assert r.returncode == 2, r.stdout
        assert field in r.stderr and "Traceback" not in r.stderr
    r = run("score", stdin="{not json")
    assert r.returncode == 2 and "not valid JSON" in r.stderr
    r = run("score", "/nonexistent/win.json")
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_input_nested_too_deep_or_too_long_exits_2(tmp_path):
    for text in ("[" * 100_000, '{"winner": ' + "1" * 5001 + "}"):
        r = run("score", "-", stdin=text)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000)
    r = run("rules", str(deep))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


def test_a_refused_co_winner_leaves_the_other_win_paid_exit_0():
    base = {
        "concealed": "123m 456m 789m EEE 5m",  # 混一色
        "winning_tile": "5m",
        "win": {"type": "discard", "from": 3},
    }
    refused = {
        "winner": 1,
        "concealed": "123m 456p 789s 123s 5m",
        "winning_tile": "5m",
        "win": {"type": "discard", "from": 3},
    }  # fmt: skip  (平胡: refused)
    r = run("score", "--json", stdin=json.dumps([{"winner": 0, **base}, refused]))
    assert r.returncode == 0, r.stderr
    r = run("score", "--json", stdin=json.dumps([refused]))
    assert r.returncode == 1


def test_profile_override(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('extends = "shanghai"\nname = "p"\n[bonuses]\nkaibao = "none"\n')
    r = run("score", "--json", "--profile", str(f), stdin=json.dumps(GOOD))
    assert json.loads(r.stdout)["value"] == 9


def test_rules_lists_profiles_and_options():
    r = run("rules")
    assert r.returncode == 0 and "shanghai" in r.stdout and "lazi" in r.stdout
    r = run("rules", "lazi")
    assert "tianhu = 10" in r.stdout
    r = run("rules", "--json")
    assert {p["name"] for p in json.loads(r.stdout)} >= {"shanghai", "qiaoma"}


# -- bad input: each ends in one line and exit 2, at once ---------------------------------------


def _with_stake(text: str) -> str:
    return json.dumps(GOOD).replace('"stake": 1', f'"stake": {text}')


@pytest.mark.parametrize(
    "stake",
    ['"1e100000000"', '"1e4400"', '"1e7"', "9" * 4300, '"1_000"', '"١"', "1e-4400", "true"],
)
def test_a_stake_that_is_no_stake_exits_2_at_once(stake):
    """``"1e100000000"`` never ended (an exact fraction of a hundred million digits); 1e4400
    and a 4300-digit number ended in a traceback; "1_000", "١" and 1e-4400 were taken."""
    start = time.monotonic()
    r = run("score", "--json", stdin=_with_stake(stake))
    assert time.monotonic() - start < 10
    assert r.returncode == 2, r.stdout
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("mahjong-table score: stake: ")


def test_a_profile_name_too_long_for_a_file_exits_2(tmp_path):
    long = "x" * 251
    for argv, stdin in [
        (["rules", long], None),
        (["rules", long + ".toml"], None),
        (["score", "--profile", long], json.dumps(GOOD)),
        (["score"], json.dumps(dict(GOOD, profile=long))),
        (["score"], json.dumps(dict(GOOD, profile=long + ".toml"))),
    ]:
        r = run(*argv, stdin=stdin)
        assert r.returncode == 2, (argv, r.stdout)
        assert r.stderr.count("\n") == 1 and "profile" in r.stderr, r.stderr


def test_what_the_input_holds_is_echoed_escaped():
    for data in (
        dict(GOOD, **{"a\nb": 1}),
        dict(GOOD, **{"\x1b[31mred": 1}),
        dict(GOOD, profile="\x1b]0;title\x07"),
        dict(GOOD, concealed="123m\x1b456m C"),
    ):
        r = run("score", stdin=json.dumps(data))
        assert r.returncode == 2
        assert r.stderr.count("\n") == 1 and "\x1b" not in r.stderr, repr(r.stderr)
    r = run("score", "bad\nname.json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "bad\\nname" in r.stderr


def test_input_that_never_ends_is_refused(tmp_path):
    r = run("score", "/dev/zero")
    assert r.returncode == 2 and "not a win" in r.stderr


def test_six_copies_of_a_tile_passed_on_exit_2():
    r = run("score", stdin=json.dumps(dict(GOOD, missed_tiles=["C"] * 6)))
    assert r.returncode == 2 and "missed_tiles: there are four of each tile" in r.stderr


# -- fuzz: thousands of mutated versions of the example, in this process -------------------------

LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10),
    st.integers(),
    st.sampled_from([10**4299, -(10**4299), 2**63, 1e308, -1e-308, 0.5, 1e-7]),
    st.sampled_from(
        ["1e100000000", "1e4400", "1e-4400", "1_000", "١٢", "0.5", "1/2", "1/0", "9" * 400]
    ),
    st.sampled_from(["123m", "C", "5p", "EEE", "FFFF", "春", "discard", "self_draw", "kong"]),
    st.sampled_from(["pung", "chow", "shanghai", "x" * 300, "x" * 300 + ".toml", "a\nb"]),
    st.text(max_size=12),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
KEYS = st.one_of(
    st.sampled_from(sorted({*GOOD, "type", "from", "kind", "tiles", "missed_tiles", "wins"})),
    st.text(max_size=8),
)


def _paths(value: object, here: tuple = ()) -> list[tuple]:
    """Every place in a JSON value: keys of objects, indices of lists."""
    out = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*here, i))
    return out


@st.composite
def mutated_wins(draw: st.DrawFn) -> str:
    """The example win with a few random changes: a value replaced, a key removed or added,
    the whole wrapped in a list; then, now and then, its text cut or spliced."""
    data: object = copy.deepcopy(GOOD)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(data)))
        what = draw(st.sampled_from(["replace", "remove", "add", "wrap"]))
        if not path:
            if what == "wrap":
                data = draw(st.sampled_from([[data], {"wins": [data, data]}, [data, data]]))
            elif what == "replace":
                data = draw(VALUES)
            continue
        parent = data
        for step in path[:-1]:
            parent = parent[step]  # type: ignore[index]
        last = path[-1]
        if what == "remove":
            del parent[last]  # type: ignore[union-attr,arg-type]
        elif what == "add" and isinstance(parent, dict):
            parent[draw(KEYS)] = draw(VALUES)
        else:
            parent[last] = draw(VALUES)  # type: ignore[index]
    text = json.dumps(data, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:  # text that is not JSON, or JSON of another shape
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=4)) + text[at + draw(st.integers(0, 3)) :]
    return text


@pytest.mark.long(25)
@given(mutated_wins())
@settings(
    max_examples=2000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_mutated_wins_end_in_0_1_or_2_with_one_line_never_a_traceback(fuzz_dir, text):
    from controller.cli import main

    start = time.monotonic()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["score", "--json", _fuzz_file(fuzz_dir, text)])
    assert time.monotonic() - start < 2, text[:300]
    assert code in (0, 1, 2), (code, err.getvalue())
    if code == 2:
        assert err.getvalue().count("\n") == 1, err.getvalue()
        assert err.getvalue().startswith("mahjong-table score: ")
        assert err.getvalue()[:-1].isprintable(), err.getvalue()
    else:
        assert err.getvalue() == "" and json.loads(out.getvalue())


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # (module-scoped: hypothesis runs every example in one call of the test; pytest removes
    # the folder with its other temporary folders, where mkdtemp left one behind every run)
    return tmp_path_factory.mktemp("win-fuzz")


def _fuzz_file(folder: Path, text: str) -> str:
    path = os.path.join(folder, "win.json")
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(text)
    return path
