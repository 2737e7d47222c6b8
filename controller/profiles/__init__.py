"""The built-in rules profiles (the TOML files beside this module) and loading a user's own.

``load_profile("shanghai")`` gives a built-in profile by name; ``load_profile("my.toml")`` (any
path ending in ``.toml``, or an existing file) reads a user's profile, which may ``extends`` a
built-in one or another file in the same folder.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from controller.rules.errors import ProfileError
from controller.rules.profile import Profile, parse_profile_text

DEFAULT_PROFILE = "shanghai"


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
    entry = resources.files(__package__) / f"{name}.toml"
    if not entry.is_file():
        raise ProfileError(
            f"no built-in profile {name!r} (built-in: {', '.join(builtin_names())})",
            field="profile",
        )
    return _parse(entry.read_text(encoding="utf-8"), f"profile {name!r}", Path())


def load_profile(name_or_path: str | Path) -> Profile:
    """A built-in profile by name, or a profile file by path."""
    text = str(name_or_path)
    path = Path(text)
    if text.endswith(".toml") or path.is_file():
        return _load_file(path, ())
    return builtin_profile(text)


def _load_file(path: Path, chain: tuple[Path, ...]) -> Profile:
    path = path.resolve()
    if path in chain:
        raise ProfileError(f"profile {path} extends itself", field="extends")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(f"profile file {path} not found", field="profile") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"profile file {path} cannot be read: {exc}", field="profile") from None
    return _parse(text, f"profile file {path}", path.parent, (*chain, path))


def _parse(text: str, source: str, folder: Path, chain: tuple[Path, ...] = ()) -> Profile:
    def resolve(parent: str) -> Profile:
        if parent.endswith(".toml"):
            return _load_file(folder / parent, chain)
        return builtin_profile(parent)

    return parse_profile_text(text, resolve, source=source)
