"""The built-in profiles and loading a user's profile file."""

from __future__ import annotations

import pytest

from controller.profiles import builtin_names, load_profile
from controller.rules import ProfileError


def test_builtins_load_and_default_first():
    names = builtin_names()
    assert names[0] == "shanghai"
    assert {
        "lazi",
        "qiaoma",
        "honours-alike",
        "dragons-by-count",
        "house",
        "chengbao-light",
    } <= set(names)
    for n in names:
        assert load_profile(n).name == n


def test_builtins_select_their_variants():
    assert load_profile("qiaoma").play.ready_declaration
    lazi = load_profile("lazi")
    assert lazi.hands.tianhu == 10 and lazi.huangfan.dice and lazi.bonuses.kaibao == "none"
    assert load_profile("dragons-by-count").hua.dragon_by_count == (0, 1, 1, 2, 3)


def test_user_profile_file(tmp_path):
    f = tmp_path / "club.toml"
    f.write_text('extends = "lazi"\nname = "club"\n[payments]\npayer_cap = 5\n', encoding="utf-8")
    p = load_profile(str(f))
    assert p.name == "club" and p.payments.payer_cap == 5 and p.hands.tianhu == 10


def test_user_profile_extends_a_sibling_file(tmp_path):
    (tmp_path / "a.toml").write_text('extends = "shanghai"\nname = "a"\n[hands]\nfengpeng = 3\n')
    (tmp_path / "b.toml").write_text('extends = "a.toml"\nname = "b"\n')
    assert load_profile(tmp_path / "b.toml").hands.fengpeng == 3


def test_bad_user_profile_names_the_key(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('extends = "shanghai"\nname = "bad"\n[bonuses]\nkaibao = "sometimes"\n')
    with pytest.raises(ProfileError) as err:
        load_profile(f)
    assert err.value.field == "bonuses.kaibao"


def test_missing_and_looping_profiles(tmp_path):
    with pytest.raises(ProfileError, match="no built-in profile"):
        load_profile("nonesuch")
    with pytest.raises(ProfileError, match="not found"):
        load_profile(tmp_path / "absent.toml")
    (tmp_path / "loop.toml").write_text('extends = "loop.toml"\nname = "loop"\n')
    with pytest.raises(ProfileError, match="extends itself"):
        load_profile(tmp_path / "loop.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ProfileError, match="cannot be read"):
        load_profile(tmp_path / "bin.toml")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("x" * 251, "no built-in profile 'xxxx"),  # was OSError: file name too long
        ("x" * 251 + ".toml", "cannot be read: File name too long"),
        ("a\x00b", "a profile name or a .toml file"),
        ("", "a profile name or a .toml file"),
        ("../profiles/shanghai", "no built-in profile"),  # a built-in is named, never a path
        ("\x1b[31mred", "no built-in profile '\\x1b[31mred'"),
    ],
)
def test_a_name_that_cannot_be_a_profile_is_a_profile_error(name, words):
    with pytest.raises(ProfileError) as err:
        load_profile(name)
    text = str(err.value)
    assert words in text and text.isprintable() and len(text) < 400, text


def test_a_profile_file_that_is_a_folder_too_large_or_named_oddly(tmp_path):
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(ProfileError, match="is a folder"):
        load_profile(tmp_path / "dir.toml")
    (tmp_path / "big.toml").write_text("# " + "x" * (2 << 20))
    with pytest.raises(ProfileError, match="larger than 1024 KiB"):
        load_profile(tmp_path / "big.toml")
    odd = tmp_path / "a\nb.toml"
    with pytest.raises(ProfileError) as err:
        load_profile(odd)
    assert "a\\nb.toml not found" in str(err.value)
    (tmp_path / "child.toml").write_text(f'extends = "{"y" * 300}.toml"\nname = "c"\n')
    with pytest.raises(ProfileError, match="File name too long"):
        load_profile(tmp_path / "child.toml")
