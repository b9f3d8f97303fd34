"""`init --preset connect4`: vs random, self-play, then a PFSP league, for the built-in
game trainer and evaluator; every stage builds on the real game, each stage's options
are ones `train-env` takes, and a note names the extra when pettingzoo is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cosmic_curriculum.cli import app
from cosmic_curriculum.train.env_run import parse_settings
from cosmic_curriculum.train.league_settings import LeagueOptions, league_settings
from cosmic_curriculum.workspace.config_file import load_config, preset_path
from cosmic_curriculum.workspace.stage_trainer import stage_trainer


def _options(flags: list[str]) -> LeagueOptions:
    """The league options of a stage's flags, as train-env's command line reads them."""
    values: dict[str, list[str]] = {}
    for name, value in zip(flags[::2], flags[1::2], strict=True):
        values.setdefault(name, []).append(value)
    one = {k: v[-1] for k, v in values.items()}
    return LeagueOptions(
        opponent_mode=one.get("--opponent-mode"),
        snapshot_every=int(one["--snapshot-every"]) if "--snapshot-every" in one else None,
        pool_size=int(one["--pool-size"]) if "--pool-size" in one else None,
        sampling=one.get("--sampling"),
        weighting=one.get("--pfsp-weighting"),
        league_bots=tuple(values.get("--league-bot", [])),
        bot_share=float(one["--league-bot-share"]) if "--league-bot-share" in one else None,
        clone_teacher=one.get("--clone-teacher"),
        clone_positions=int(one["--clone-positions"]) if "--clone-positions" in one else None,
    )


def test_init_connect4_is_a_builtin_pettingzoo_workspace(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    ws = tmp_path / "ws"
    result = CliRunner().invoke(app, ["init", "--preset", "connect4", str(ws)])
    assert result.exit_code == 0, result.output
    assert "note:" not in result.output
    assert (ws / "stages.toml").read_text() == preset_path("connect4").read_text()
    config = load_config(ws / "stages.toml")
    assert "training_command" not in config.model_fields_set
    assert all(config.builtin_env_trainer(i) for i in range(3))
    assert {config.stage_env(i).id for i in range(3)} == {"pettingzoo.classic.connect_four_v3"}
    assert config.stage_reference(0) is not None  # random; later: the previous stage's bot
    assert [config.stage_reference(i) for i in (1, 2)] == [None, None]
    assert sum(config.stage_timesteps(i) for i in range(3)) == 200_000
    modes, clones = [], []
    for i, stage in enumerate(config.stages):
        trainer = stage_trainer(config, i, ws).argv()
        assert trainer[:2] == ["--algo", "MaskablePPO"]
        base = parse_settings(
            f"curric-s{i + 1}-{stage.name}",
            timesteps=config.stage_timesteps(i),
            env=config.stage_env(i).to_argument(),
            resume=None,
            seed=0,
            algo="MaskablePPO",
            hyperparams=trainer[trainer.index("--hyperparams") + 1],
            workspace=ws,
        )
        settings = league_settings(base, _options(list(stage.flags)))
        modes.append(settings.mode)
        clones.append(settings.clone)
    assert modes == ["random", "self_play", "pool"]
    assert clones[0] is not None and clones[0].teacher == "search:2"  # stage 1 learns it
    assert clones[1:] == [None, None]  # later stages warm-start from the cloned bot
    assert settings.rule.sampling == "pfsp" and settings.rule.bot_share == 0.6
    # the league mixes in the searches, which the yardstick measures against
    assert settings.rule.bots == ("search:2", "search:1")
    from cosmic_curriculum.envs.check import check_stage_envs

    check_stage_envs(config, 0, False)  # every stage builds, with the same spaces


def test_a_missing_pettingzoo_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pettingzoo", None)  # as if it were not installed
    result = CliRunner().invoke(app, ["init", "--preset", "connect4", str(tmp_path / "ws")])
    assert result.exit_code == 0, result.output
    assert "pip install 'cosmic-curriculum[pettingzoo]'" in result.output


@pytest.mark.slow  # three trainings and evaluations through `run`: about a minute
def test_the_preset_runs_end_to_end_on_a_tiny_budget(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    pytest.importorskip("sb3_contrib")
    from cosmic_curriculum.envs.policy import load_env_bot
    from cosmic_curriculum.workspace import history
    from tests.envs.env_helpers import cli

    ws = tmp_path / "ws"
    made = cli(tmp_path, "init", "--preset", "connect4", str(ws))
    assert made.returncode == 0, made.stdout + made.stderr
    stages = ws / "stages.toml"  # a short lesson too: 40,000 positions take a minute
    taught = '"--clone-teacher", "search:2"'
    assert taught in stages.read_text()
    stages.write_text(stages.read_text().replace(taught, f'{taught}, "--clone-positions", "2000"'))
    done = cli(ws, "run", "--no-push", "--timesteps", "2048", timeout=900)
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    records = history.load(ws / "eval_history.json")
    assert records, out  # stage 1 at least was trained and gated
    for record in records:
        assert record["evaluator"] == "game" and record["episodes"] == 100
        assert len(record["pairs"]) == 50 and record["deterministic"] is False
        assert record["wins_a"] + record["wins_b"] + record["draws"] == 100
    assert records[0]["reference"] == "builtin:random"
    bot = load_env_bot(ws / "bots" / "curric-s1-vs-random.json")
    assert bot.action_mask and bot.env.id == "pettingzoo.classic.connect_four_v3"
    if "curriculum done: every stage passed" in out:
        # the league stage drew from its pool and the searches
        log = (ws / "logs" / "curric-s3-league.log").read_text()
        assert "league:" in log and (ws / "checkpoints" / "curric-s3-league" /
                                     "final.league.json").is_file()  # fmt: skip
        references = {r["reference"] for r in records}
        assert {"bots/curric-s1-vs-random.json", "bots/curric-s2-self-play.json"} <= references
