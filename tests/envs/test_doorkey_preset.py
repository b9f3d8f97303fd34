"""`init --preset doorkey`: MiniGrid DoorKey 5x5 -> 6x6 -> 8x8 -> 16x16 for the built-in
trainer and evaluator; a workspace without the arena's bots or trainer script whose every
stage builds on real MiniGrid, and a note naming the extra when minigrid is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.workspace.config_file import load_config, preset_path

SIZES = (5, 6, 8, 16)


def test_init_doorkey_is_a_builtin_gymnasium_workspace(tmp_path: Path) -> None:
    pytest.importorskip("minigrid")
    ws = tmp_path / "ws"
    result = CliRunner().invoke(app, ["init", "--preset", "doorkey", str(ws)])
    assert result.exit_code == 0, result.output
    assert "note:" not in result.output  # minigrid is installed: nothing to say
    assert (ws / "stages.toml").read_text() == preset_path("doorkey").read_text()
    assert list((ws / "bots").iterdir()) == []
    assert not (ws / "scripts" / "run_training.sh").exists()
    config = load_config(ws / "stages.toml")
    assert config.training_command == ["scripts/run_training.sh"]  # the default: unused
    assert "training_command" not in config.model_fields_set
    assert all(config.builtin_env_trainer(i) for i in range(len(SIZES)))
    assert config.evaluation_command is None
    ids = [config.stage_env(i).id for i in range(len(SIZES))]
    assert ids == [f"MiniGrid-DoorKey-{n}x{n}-v0" for n in SIZES]
    assert config.stage_reference(0) is not None  # random; later: the previous stage's bot
    assert [config.stage_reference(i) for i in range(1, len(SIZES))] == [None] * 3
    for i in range(len(SIZES)):
        gate = config.stage_gate(i)
        assert gate.rule == "threshold" and gate.measure == "success" and gate.target
        assert config.stage_timesteps(i) > 0
    from cosmic_curriculum.envs.check import check_stage_envs

    check_stage_envs(config, 0, False)  # every stage builds, with the same spaces


def test_a_missing_minigrid_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "minigrid", None)  # as if it were not installed
    result = CliRunner().invoke(app, ["init", "--preset", "doorkey", str(tmp_path / "ws")])
    assert result.exit_code == 0, result.output
    assert (
        "note: the doorkey preset needs minigrid: pip install 'cosmic-curriculum[minigrid]'"
        in result.output
    )


def test_init_help_lists_every_preset() -> None:
    result = CliRunner().invoke(app, ["init", "--help"])
    assert result.exit_code == 0
    for name in ("default", "quick", "bare", "doorkey"):
        assert name in result.output
