"""The game is a layer below the bots: nothing in arena/ imports cosmic_curriculum.bots; and
numba, which only stepping a game needs, is imported by the first step."""

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


def test_numba_is_imported_by_the_first_step_only() -> None:
    # numba takes a third of a second to import: the bots, the bot format and every
    # command that reads ACT_SIZE from the rules must not pay for it
    import subprocess
    import sys

    probe = (
        "import sys, numpy as np; import cosmic_curriculum.bots.format; "
        "from cosmic_curriculum.arena import rules, GameSettings; "
        "before = 'numba' in sys.modules; s = GameSettings(); r = np.random.default_rng(0); "
        "rules.step(rules.new_state(1, s, r), np.zeros((1, 2, 6)), s, r); "
        "print(before, 'numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
