"""Validation of profile documents: every bad key is named."""

from __future__ import annotations

import pytest

from controller.profiles import load_profile
from controller.rules import Profile, ProfileError, parse_profile_text


@pytest.fixture
def base():
    return load_profile("shanghai")


def test_round_trip(base):
    assert Profile.from_mapping(base.to_dict()) == base


def test_override_only_what_differs(base):
    p = Profile.from_mapping({"name": "mine", "hands": {"fengpeng": 2}}, base)
    assert p.name == "mine" and p.hands.fengpeng == 2 and p.hands.qingpeng == 2


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"hands": {"qingpeng": "lots"}}, "hands.qingpeng"),
        ({"hands": {"qingpeng": True}}, "hands.qingpeng"),
        ({"hands": {"qingpeng": 0}}, "hands.qingpeng"),
        ({"hands": {"sevenpairs": 1}}, "hands.sevenpairs"),
        ({"hua": {"flower": -1}}, "hua.flower"),
        ({"hua": {"wind_by_count": [0, 1]}}, "hua.wind_by_count"),
        ({"hua": {"wind_by_count": [0, 0, 0, 1, "x"]}}, "hua.wind_by_count[4]"),
        ({"bonuses": {"gangkai": "triple"}}, "bonuses.gangkai"),
        ({"bonuses": {"menqing": 2}}, "bonuses.menqing"),
        ({"huangfan": {"dice": "yes"}}, "huangfan.dice"),
        ({"chengbao": {"min_claims": 9}}, "chengbao.min_claims"),
        ({"chengbao": {"third_ready": [1]}}, "chengbao.third_ready"),
        ({"units": "big"}, "units"),
        ({"colour": "red"}, "colour"),
        ({"name": ""}, "name"),
        ({"name": 3}, "name"),
    ],
)
def test_bad_settings_name_the_key(base, doc, field):
    with pytest.raises(ProfileError) as err:
        Profile.from_mapping(doc, base)
    assert err.value.field == field
    assert field in str(err.value)


def test_a_profile_without_a_base_must_be_complete(base):
    doc = base.to_dict()
    del doc["chengbao"]["robbing_kong"]
    with pytest.raises(ProfileError) as err:
        Profile.from_mapping(doc)
    assert err.value.field == "chengbao.robbing_kong"


def test_parse_text_with_extends(base):
    text = 'extends = "shanghai"\nname = "x"\n[bonuses]\nkaibao = "any_double"\n'
    p = parse_profile_text(text, lambda name: base)
    assert p.bonuses.kaibao == "any_double"


def test_parse_text_errors(base):
    with pytest.raises(ProfileError, match="not valid TOML"):
        parse_profile_text("name = ", lambda name: base)
    with pytest.raises(ProfileError) as err:
        parse_profile_text("extends = 3\nname='x'", lambda name: base)
    assert err.value.field == "extends"
