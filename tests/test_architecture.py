"""The import graph stays one-way (docs: ARCHITECTURE): read from the source, not by running it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "vision", "firmware_bridge", "webui", "hardware_sim")


def imports_of(path: Path) -> set[str]:
    """Every module a source file imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{alias.name}" for alias in node.names)
    return out


def modules(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


def ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


@pytest.mark.parametrize("path", modules("controller/rules"), ids=lambda p: p.name)
def test_rules_are_pure(path):
    allowed_stdlib = {
        "__future__",
        "collections",
        "dataclasses",
        "enum",
        "fractions",
        "functools",
        "itertools",
        "math",
        "re",
        "typing",
        "tomllib",
        "random",
    }
    for name in imports_of(path):
        top = name.split(".")[0]
        if ours(name):
            assert name.startswith("controller.rules"), f"{path.name} imports {name}"
        else:
            assert top in allowed_stdlib, f"{path.name} imports {name}: no I/O, clock or state"
    if path.name == "generate.py":
        # randomness only from a generator the caller seeds
        text = path.read_text(encoding="utf-8")
        assert "random.random(" not in text and "random.choice(" not in text


@pytest.mark.parametrize("path", modules("firmware_bridge"), ids=lambda p: p.name)
def test_bridge_knows_only_bytes_and_pins(path):
    for name in imports_of(path):
        if ours(name):
            assert name.startswith(
                ("firmware_bridge", "controller.errors", "controller.exit_codes")
            ), name


@pytest.mark.parametrize("path", modules("vision"), ids=lambda p: p.name)
def test_vision_knows_the_tiles_not_the_scoring(path):
    allowed = (
        "vision",
        "controller.rules.tiles",
        "controller.rules.melds",
        "controller.errors",
        "controller.rules.errors",
        "controller.exit_codes",
    )
    for name in imports_of(path):
        if ours(name):
            assert name.startswith(allowed), f"{path.name} imports {name}"


RUNTIME = sorted((REPO / "vision").glob("*.py"))
"""The run-time vision modules (what the table on a Pi needs, and its commands): the top of
``vision/``, outside its ``rendering`` and ``training`` subpackages."""
TRAINING_COMMANDS = {
    ("cli.py", "train_command"),
    ("cli.py", "_retune"),
    ("cli.py", "_fit_flower_look"),
}
"""The functions of run-time modules that may import training when they run: the train command."""


def load_time_imports(path: Path) -> set[str]:
    """The modules a source file imports when it is loaded (not inside a function)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.add(child.module or "")
                found.update(f"{child.module}.{a.name}" for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_the_run_time_modules_are_the_top_of_vision():
    names = {p.stem for p in RUNTIME}
    assert {"recognizer", "pipeline", "camera", "model_manifest", "cli"} <= names
    assert not names & {"faces", "render", "table_scene", "train", "training", "dataset", "synth"}


@pytest.mark.parametrize("path", RUNTIME, ids=lambda p: p.name)
def test_the_run_time_loads_nothing_of_rendering_or_training(path):
    """A Pi runs the top of vision/ alone: nothing of it loads the renderer or the training
    code (the train command imports training when it runs, and only it)."""
    for name in load_time_imports(path):
        assert not name.startswith(("vision.rendering", "vision.training")), f"{path}: {name}"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                ("vision.rendering", "vision.training")
            ):
                assert (path.name, fn.name) in TRAINING_COMMANDS, f"{path}:{fn.name} imports it"


@pytest.mark.parametrize("path", modules("vision/rendering"), ids=lambda p: p.name)
def test_rendering_imports_nothing_of_training(path):
    for name in imports_of(path):
        assert not name.startswith("vision.training"), f"{path} imports {name}"


@pytest.mark.parametrize("path", modules("webui"), ids=lambda p: p.name)
def test_webui_never_touches_hardware(path):
    for name in imports_of(path):
        assert not name.startswith(("firmware_bridge", "hardware_sim")), name


@pytest.mark.parametrize(
    "path", [p for pkg in PACKAGES for p in modules(pkg)], ids=lambda p: str(p.relative_to(REPO))
)
def test_product_never_imports_peers_or_training_at_load(path):
    for name in imports_of(path):
        assert name.split(".")[0] not in ("mahjong", "mahjong_detector"), name
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # torch only inside functions of the training code, so the product runs without it
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = {a.name for a in node.names} | {getattr(node, "module", None) or ""}
            assert not any(n.split(".")[0] == "torch" for n in names), path


def test_nothing_imports_the_simulator_but_the_cli_and_tests():
    for pkg in ("controller", "vision", "firmware_bridge", "webui"):
        for path in modules(pkg):
            if path.name == "cli.py" and pkg == "controller":
                continue
            for name in imports_of(path):
                assert not name.startswith("hardware_sim"), f"{path} imports {name}"


def test_the_exit_codes_import_nothing_of_ours():
    """Every command, the bridge's and the vision package's too, imports the one table of exit
    codes: it stays a leaf, so importing it can never pull a layer in."""
    assert {n for n in imports_of(REPO / "controller" / "exit_codes.py") if ours(n)} == set()
