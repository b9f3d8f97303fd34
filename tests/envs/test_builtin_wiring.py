"""Which Gymnasium stages use the built-in trainer, and `{builtin = "random"}` references."""

from __future__ import annotations

from pathlib import Path

import pytest

from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.config import BuiltinReference
from cosmic_curriculum.workspace.config_file import load_config

LAKE = """
[env]
kind = "gymnasium"
id = "FrozenLake-v1"

[[stages]]
name = "one"
"""


def test_a_gymnasium_stage_without_a_training_command_uses_train_env(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, LAKE))
    assert cfg.builtin_env_trainer(0)
    own = load_config(_write(tmp_path, 'training_command = ["scripts/run_training.sh"]\n' + LAKE))
    assert not own.builtin_env_trainer(0)  # written in the file, even as the default
    arena = load_config(_write(tmp_path, '[[stages]]\nname = "one"\n'))
    assert not arena.builtin_env_trainer(0)


def test_builtin_random_is_a_reference(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, 'reference_bot = {builtin = "random"}\n' + LAKE))
    assert cfg.stage_reference(0) == BuiltinReference(builtin="random")
    assert cfg.stage_definitions()[0]["reference_bot"] == {"builtin": "random"}
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, 'reference_bot = {builtin = "rookie"}\n' + LAKE))
    assert "reference_bot" in str(caught.value) and "\n" not in str(caught.value)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stages.toml"
    path.write_text(text)
    return path
