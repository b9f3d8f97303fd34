"""`train-env` on real FrozenLake: final.zip and a valid env bot; SIGTERM leaves a step
checkpoint and exits 143; a resume of it trains on to the total; the trained bot beats
random in the env evaluator."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env
from cosmic_curriculum.envs.policy import load_env_bot
from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.workspace.env_config import EnvSpec

LAKE = EnvSpec(
    kind="gymnasium", id="FrozenLake-v1", kwargs={"map_name": "4x4", "is_slippery": False}
)


def train_env(ws: Path, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", "train-env", *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        argv, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_train_env_writes_a_bot_that_beats_random(tmp_path: Path) -> None:
    proc = train_env(tmp_path, "lake", "--timesteps", "40000", "--env", LAKE.to_argument())
    out, _ = proc.communicate(timeout=280)
    assert proc.returncode == 0, out
    assert (tmp_path / "checkpoints" / "lake" / "final.zip").is_file()
    progress = [p for p in map(parse_progress_line, out.splitlines()) if p]
    assert progress and progress[-1]["timesteps"] >= 40000 and progress[-1]["total"] == 40000
    bot = load_env_bot(tmp_path / "bots" / "lake.json")
    assert bot.env == LAKE and bot.provenance is not None
    assert bot.provenance["algo"] == "PPO" and bot.provenance["timesteps"] >= 40000
    assert len(bot.provenance["checkpoint_sha256"]) == 64
    record = evaluate_env(
        tmp_path / "bots" / "lake.json",
        RANDOM,
        history_path=tmp_path / "h.json",
        episodes=50,
        seed=0,
    )
    assert record["successes"] == 50 and record["wins_a"] > record["wins_b"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_saves_a_step_checkpoint_and_resume_reaches_the_total(tmp_path: Path) -> None:
    total = "200000"
    proc = train_env(tmp_path, "lake", "--timesteps", total, "--env", LAKE.to_argument())
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until it is training
        if parse_progress_line(line.strip()):
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 143, out
    steps = sorted((tmp_path / "checkpoints" / "lake").glob("step_*.zip"))
    assert steps and not (tmp_path / "bots" / "lake.json").exists()
    done = max(int(p.stem[5:]) for p in steps)
    assert 0 < done < 200000
    latest = f"checkpoints/lake/step_{done}.zip"
    total = str(done + 4096)  # what is left: two PPO updates
    proc = train_env(
        tmp_path, "lake", "--timesteps", total, "--env", LAKE.to_argument(), "--resume", latest
    )
    out, _ = proc.communicate(timeout=200)
    assert proc.returncode == 0, out
    assert "continuing" in out and f"4096 of {total}" in out
    bot = json.loads((tmp_path / "bots" / "lake.json").read_text())
    assert int(total) <= bot["provenance"]["timesteps"] < int(total) + 2048
    assert bot["provenance"]["resumed_from"] == latest


@pytest.mark.slow
def test_bad_options_are_one_line(tmp_path: Path) -> None:
    for args, needle in (
        (["x", "--timesteps", "10", "--env", "{"], "--env"),
        (["x", "--timesteps", "10", "--env", LAKE.to_argument(), "--algo", "SAC"], "--algo"),
        (
            ["x", "--timesteps", "10", "--env", LAKE.to_argument(), "--hyperparams", '{"nope": 1}'],
            "--hyperparams",
        ),
    ):
        proc = train_env(tmp_path, *args)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 2, out
        assert needle in out and len(out.strip().splitlines()) == 1, out


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"policy_kwargs": {"optimizer_kwargs": {"foreach": True}}}),
        (
            {"n_steps": 32, "policy_kwargs": {"net_arch": [32]}},
            {
                "n_steps": 32,
                "policy_kwargs": {"net_arch": [32], "optimizer_kwargs": {"foreach": True}},
            },
        ),
        (
            {"policy_kwargs": {"optimizer_kwargs": {"eps": 1e-5}}},
            {"policy_kwargs": {"optimizer_kwargs": {"foreach": True, "eps": 1e-5}}},
        ),
        (  # the caller's choice stands
            {"policy_kwargs": {"optimizer_kwargs": {"foreach": False}}},
            {"policy_kwargs": {"optimizer_kwargs": {"foreach": False}}},
        ),
        ({"policy_kwargs": [1]}, {"policy_kwargs": [1]}),  # left for the algorithm to refuse
        ({"policy_kwargs": {"optimizer_kwargs": 3}}, {"policy_kwargs": {"optimizer_kwargs": 3}}),
    ],
)
def test_the_optimizer_steps_all_tensors_at_once_unless_told(
    given: dict[str, object], expected: dict[str, object]
) -> None:
    from cosmic_curriculum.train.env_run import with_foreach_optimizer

    assert with_foreach_optimizer(given) == expected


def test_a_new_model_steps_its_optimizer_with_foreach(
    tmp_path: Path,
) -> None:
    from cosmic_curriculum.train.env_run import _new_model, _vec_env, parse_settings

    settings = parse_settings(
        "lake",
        timesteps=64,
        env=LAKE.to_argument(),
        resume=None,
        seed=0,
        algo="PPO",
        hyperparams='{"n_steps": 8, "batch_size": 16}',
        workspace=tmp_path,
    )
    model = _new_model(settings, _vec_env(settings))
    assert model.policy.optimizer.defaults["foreach"] is True
    assert model.n_steps == 8
