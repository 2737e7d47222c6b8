"""The built-in rules profiles (the TOML files beside this module) and loading a user's own.

``load_profile("shanghai")`` gives a built-in profile by name; ``load_profile("my.toml")`` (any
path ending in ``.toml``, or an existing file) reads a user's profile, which may ``extends`` a
built-in one or another file in the same folder.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import resources
from pathlib import Path

from controller.rules.errors import ProfileError, escape, show
from controller.rules.profile import Profile, parse_profile_text

DEFAULT_PROFILE = "shanghai"

MAX_PROFILE_BYTES = 1 << 20
"""A profile is a few kilobytes; a larger file is the wrong one (a log, a photo)."""


def builtin_names() -> list[str]:
    """Names of the built-in profiles, the default first."""
    names = sorted(
        p.name.removesuffix(".toml")
        for p in resources.files(__package__).iterdir()
        if p.name.endswith(".toml")
    )
    names.remove(DEFAULT_PROFILE)
    return [DEFAULT_PROFILE, *names]


@cache
def builtin_profile(name: str) -> Profile:
    """A built-in profile by name."""
    if name not in builtin_names():  # never a path: "../x" is no built-in profile
        raise ProfileError(
            f"no built-in profile {show(name)} (built-in: {', '.join(builtin_names())}; "
            "a profile file's name ends in .toml)",
            field="profile",
        )
    entry = resources.files(__package__) / f"{name}.toml"
    return _parse(entry.read_text(encoding="utf-8"), f"profile {name!r}", Path())


def load_profile(name_or_path: str | Path) -> Profile:
    """A built-in profile by name, or a profile file by path."""
    text = str(name_or_path)
    if not text or "\x00" in text:
        raise ProfileError(f"a profile name or a .toml file, not {show(text)}", field="profile")
    path = Path(text)
    if text.endswith(".toml") or _is_file(path):
        return _load_file(path, ())
    return builtin_profile(text)


def _is_file(path: Path) -> bool:
    # os.path.isfile answers False, where Path.is_file raises, for a name too long
    return os.path.isfile(path)


def _load_file(path: Path, chain: tuple[Path, ...]) -> Profile:
    try:
        path = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ProfileError(
            f"profile file {_shown(path)} cannot be read: {exc}", field="profile"
        ) from None
    if path in chain:
        raise ProfileError(f"profile {_shown(path)} extends itself", field="extends")
    try:
        with path.open("rb") as f:
            data = f.read(MAX_PROFILE_BYTES + 1)
    except FileNotFoundError:
        raise ProfileError(f"profile file {_shown(path)} not found", field="profile") from None
    except IsADirectoryError:
        raise ProfileError(
            f"profile file {_shown(path)} is a folder, not a file", field="profile"
        ) from None
    except OSError as exc:  # a name too long, no permission
        why = exc.strerror or type(exc).__name__
        raise ProfileError(
            f"profile file {_shown(path)} cannot be read: {why}", field="profile"
        ) from None
    if len(data) > MAX_PROFILE_BYTES:
        raise ProfileError(
            f"profile file {_shown(path)} is larger than {MAX_PROFILE_BYTES // 1024} KiB: "
            "not a profile",
            field="profile",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProfileError(
            f"profile file {_shown(path)} cannot be read: not UTF-8 text", field="profile"
        ) from None
    return _parse(text, f"profile file {_shown(path)}", path.parent, (*chain, path))


def _shown(path: Path) -> str:
    """A path as a message echoes it: control characters escaped, a long one cut short."""
    text = escape(str(path))
    return text if len(text) <= 200 else f"{text[:100]}...{text[-60:]}"


def _parse(text: str, source: str, folder: Path, chain: tuple[Path, ...] = ()) -> Profile:
    def resolve(parent: str) -> Profile:
        if parent.endswith(".toml"):
            return _load_file(folder / parent, chain)
        return builtin_profile(parent)

    return parse_profile_text(text, resolve, source=source)
