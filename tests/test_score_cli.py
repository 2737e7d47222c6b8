"""``mahjong-table score`` and ``mahjong-table rules`` end to end, in a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
