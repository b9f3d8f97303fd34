"""What an `[env]` id names when it is given under the other kind: a PettingZoo game module
as a Gymnasium id, a Gymnasium id as a game module, or a game's bare name
(``connect_four_v3``) for its module. Only the errors of `envs/gymnasium.py` and
`envs/pettingzoo.py` ask, once a spec has failed; nothing here builds an env.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

# PettingZoo's families of games (pettingzoo.<family>.<game>), searched for a bare name.
PETTINGZOO_FAMILIES = ("classic", "butterfly", "sisl", "mpe", "atari")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def is_module_name(name: str) -> bool:
    """Whether ``name`` can name a Python module (dotted identifiers)."""
    return _DOTTED.fullmatch(name) is not None


def module_found(module: str) -> bool:
    """Whether importlib finds ``module`` (it imports the parents only)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent is missing, or not a package
        return False


def pettingzoo_game(name: str) -> str | None:
    """The game module ``name`` stands for: itself when it is a module with env() or
    parallel_env(), PettingZoo's module of that bare game name, else None."""
    if not is_module_name(name):
        return None
    if "." not in name:
        return _family_game(name)
    if name.startswith("pettingzoo."):
        return name if module_found(name) else None
    if not module_found(name):
        return None
    try:
        module = importlib.import_module(name)
    except Exception:  # the module fails on its own: its own error says so elsewhere
        return None
    has = callable(getattr(module, "env", None)) or callable(getattr(module, "parallel_env", None))
    return name if has else None


def _family_game(name: str) -> str | None:
    # The files of PettingZoo's package, not its families' imports (atari's need ROMs).
    try:
        spec = importlib.util.find_spec("pettingzoo")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        for family in PETTINGZOO_FAMILIES:
            folder = Path(root) / family
            if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file():
                return f"pettingzoo.{family}.{name}"
    return None


def gymnasium_id(name: str) -> bool:
    """Whether ``name`` is a registered Gymnasium id (False without Gymnasium)."""
    try:
        gymnasium = importlib.import_module("gymnasium")
    except ImportError:
        return False
    return name in gymnasium.envs.registration.registry
