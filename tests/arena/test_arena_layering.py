"""The game is a layer below the bots: nothing in arena/ imports cosmic_curriculum.bots."""

from __future__ import annotations

import ast
from pathlib import Path

import cosmic_curriculum.arena

ARENA = Path(cosmic_curriculum.arena.__file__).parent
ABOVE = ("cosmic_curriculum.bots",)


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, at any depth (function-local imports included)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_no_arena_module_imports_the_bots() -> None:
    modules = sorted(ARENA.glob("*.py"))
    assert any(m.name == "duel.py" for m in modules)
    offending = {
        m.name: name
        for m in modules
        for name in imported_modules(m)
        if any(name == up or name.startswith(up + ".") for up in ABOVE)
    }
    assert offending == {}


def test_the_scan_sees_imports() -> None:
    # guard against a scan that finds nothing: the rules import the settings
    assert "cosmic_curriculum.arena.settings" in imported_modules(ARENA / "rules.py")
