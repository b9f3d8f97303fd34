"""`init --bare`: a workspace without the arena's defaults, bots or trainer."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.workspace.config_file import load_config, preset_path


def test_init_bare_has_no_arena_defaults(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    result = CliRunner().invoke(app, ["init", "--bare", str(ws)])
    assert result.exit_code == 0, result.output
    assert "fill in training_command" in result.output
    assert (ws / "stages.toml").read_text() == preset_path("bare").read_text()
    assert list((ws / "bots").iterdir()) == []
    assert not (ws / "scripts" / "run_training.sh").exists()
    config = load_config(ws / "stages.toml")
    assert config.standing_args == [] and "standing_args" in config.model_fields_set
    assert config.defaults.model_fields_set == {"timesteps"}  # no n_parallel, no speedup
    assert config.training_command == ["scripts/train.sh"]
    text = (ws / "stages.toml").read_text()
    assert '\n# [env]\n# kind = "gymnasium"' in text


def test_the_commented_env_example_is_valid_once_uncommented(tmp_path: Path) -> None:
    lines = preset_path("bare").read_text().splitlines()
    start = lines.index("# [env]")
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("#"))
    example = "\n".join(line.removeprefix("# ") for line in lines[start:end])
    text = "\n".join(lines[:start]) + "\n" + example + "\n" + "\n".join(lines[end:]) + "\n"
    (tmp_path / "stages.toml").write_text(text)
    spec = load_config(tmp_path / "stages.toml").stage_env(0)
    assert (spec.kind, spec.id, spec.kwargs["is_slippery"]) == ("gymnasium", "FrozenLake-v1", False)


def test_bare_and_another_preset_exclude_each_other(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["init", "--bare", "--preset", "quick", str(tmp_path / "w")])
    assert result.exit_code == 2
    assert "--bare and --preset quick exclude each other" in result.output
    assert not (tmp_path / "w").exists()
