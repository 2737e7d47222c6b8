"""``mahjong-table score`` and ``mahjong-table rules``: the rules engine from the shell.

``score`` reads one win (or several on one discard) as JSON from a file or stdin and prints the
settlement; the input format is documented in ``docs/scoring.md``. Exit status: 0 a valid win
(with several on one discard, at least one), 1 no valid win (the reason is printed; nobody
pays), 2 malformed input (the message names the field).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from controller.errors import WinInputError
from controller.exit_codes import ExitCode
from controller.rules.errors import escape, show

MAX_INPUT_CHARS = 1 << 20
"""A win's JSON is a few hundred characters; several on one discard, a few thousand."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "score",
        help="settle a win given as JSON (file or stdin)",
        description="Score one win, or several on one discard, and print who pays whom.",
    )
    p.add_argument("file", nargs="?", default="-", help="JSON file (default: stdin)")
    p.add_argument("--json", action="store_true", help="print the settlement as JSON")
    p.add_argument("--profile", help="profile name or .toml file (overrides the input's)")
    p.set_defaults(func=run_score)

    r = sub.add_parser(
        "rules",
        help="list the rules profiles and their options",
        description="List the built-in rules profiles, or show one profile's every option.",
    )
    r.add_argument("profile", nargs="?", help="a profile name or .toml file to show in full")
    r.add_argument("--json", action="store_true", help="print as JSON")
    r.set_defaults(func=run_rules)


def _read_json(path: str) -> Any:
    try:
        if path == "-":
            text = sys.stdin.read(MAX_INPUT_CHARS + 1)
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read(MAX_INPUT_CHARS + 1)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise WinInputError(f"cannot read {escape(path)}: {why}", field="file") from None
    except UnicodeDecodeError:
        raise WinInputError(f"{escape(path)} is not UTF-8 text", field="file") from None
    except ValueError:  # a NUL in the name (only a caller in this process can pass one)
        raise WinInputError(f"no file is named {show(path)}", field="file") from None
    if len(text) > MAX_INPUT_CHARS:  # /dev/zero, a log, a photo: not a win
        raise WinInputError(
            f"longer than {MAX_INPUT_CHARS // 1024}K characters: not a win's JSON", field="input"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise WinInputError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", field="input"
        ) from None
    except (RecursionError, ValueError) as exc:  # nested too deep; an integer of 5,000 digits
        raise WinInputError(f"not a win's JSON: {exc}", field="input") from None


def _profile_name(data: Any, override: str | None) -> str:
    from controller.profiles import DEFAULT_PROFILE

    if override:
        return override
    items = data.get("wins", data) if isinstance(data, dict) else data
    if isinstance(items, dict):
        items = [items]
    names = set()
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                name = item.get("profile", DEFAULT_PROFILE)
                if not isinstance(name, str):
                    raise WinInputError(f"a profile name, not {show(name)}", field="profile")
                names.add(name)
    if len(names) > 1:
        raise WinInputError("every win on one discard uses the same profile", field="profile")
    return names.pop() if names else DEFAULT_PROFILE


def run_score(args: argparse.Namespace) -> int:
    from controller.profiles import load_profile
    from controller.rules import format_settlement, is_ready, settle, settlement_to_dict
    from controller.rules.win import wins_from_json

    data = _read_json(args.file)
    profile = load_profile(_profile_name(data, args.profile))
    wins = wins_from_json(data, ready_check=lambda hand: is_ready(hand, profile))
    result = settle(wins, profile)
    if args.json:
        print(json.dumps(settlement_to_dict(result), ensure_ascii=False, indent=2))
    else:
        print(format_settlement(result))
    # money moved when any win is valid: a co-winner's refused claim does not undo it
    return ExitCode.OK if any(r.valid for r in result.results) else ExitCode.NO


def run_rules(args: argparse.Namespace) -> int:
    from controller.profiles import builtin_names, load_profile

    if args.profile:
        profile = load_profile(args.profile)
        doc = profile.to_dict()
        if args.json:
            print(json.dumps(doc, ensure_ascii=False, indent=2))
            return ExitCode.OK
        # a profile file's own text: a control character in it must not reach the terminal
        print(escape(f"{profile.name}: {profile.title}"))
        print(escape(f"  {profile.description}"))
        for section, values in doc.items():
            if isinstance(values, dict):
                print(f"[{section}]")
                for k, v in values.items():
                    print(f"  {k} = {json.dumps(v, ensure_ascii=False)}")
        return ExitCode.OK
    profiles = [load_profile(n) for n in builtin_names()]
    if args.json:
        print(json.dumps([p.to_dict() for p in profiles], ensure_ascii=False, indent=2))
        return ExitCode.OK
    print("Built-in profiles (the first is the default):")
    for p in profiles:
        print(f"  {p.name:<18} {p.title}")
        print(f"  {'':<18} {p.description}")
    print("\nShow every option of one: mahjong-table rules NAME")
    print('Write your own: a .toml file with extends = "shanghai" and the keys to change.')
    return ExitCode.OK
