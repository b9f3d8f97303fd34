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
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

from env_helpers import PIXELS

from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env
from cosmic_curriculum.envs.onnx_twin import load_env_twin
from cosmic_curriculum.envs.policy import load_env_bot
from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.workspace.env_config import EnvSpec

LAKE = EnvSpec(
    kind="gymnasium", id="FrozenLake-v1", kwargs={"map_name": "4x4", "is_slippery": False}
)

MINIGRID = EnvSpec(kind="gymnasium", id="MiniGrid-Empty-5x5-v0", imports=["minigrid"])


def train_env(ws: Path, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", "train-env", *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        argv, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_train_env_writes_a_bot_that_beats_random(tmp_path: Path) -> None:
    proc = train_env(tmp_path, "lake", "--timesteps", "20000", "--env", LAKE.to_argument())
    out, _ = proc.communicate(timeout=280)
    assert proc.returncode == 0, out
    assert (tmp_path / "checkpoints" / "lake" / "final.zip").is_file()
    progress = [p for p in map(parse_progress_line, out.splitlines()) if p]
    assert progress and progress[-1]["timesteps"] >= 20000 and progress[-1]["total"] == 20000
    bot = load_env_bot(tmp_path / "bots" / "lake.json")
    assert bot.env == LAKE and bot.provenance is not None
    assert bot.provenance["algo"] == "PPO" and bot.provenance["timesteps"] >= 20000
    assert len(bot.provenance["checkpoint_sha256"]) == 64
    twin = load_env_twin(tmp_path / "bots" / "lake.onnx")  # written next to the bot
    states = np.arange(16)
    assert np.array_equal(twin.act(states), bot.act(states))
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
        (
            ["x", "--timesteps", "10", "--env", LAKE.to_argument(), "--checkpoint-every", "0"],
            "--checkpoint-every 0: must be >= 1",
        ),
        (
            ["x", "--timesteps", "10", "--env", LAKE.to_argument(), "--keep-checkpoints", "0"],
            "--keep-checkpoints 0: must be >= 1",
        ),
        (  # MiniGrid's observations hold a mission string: refused before SB3 builds envs
            ["x", "--timesteps", "10", "--env", MINIGRID.to_argument()],
            "env: the observation space's part 'mission' is MissionSpace",
        ),
    ):
        proc = train_env(tmp_path, *args)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 2, out
        assert needle in out and len(out.strip().splitlines()) == 1, out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_step_checkpoints_every_and_kept_as_asked(tmp_path: Path) -> None:
    # compare's curves read these: a step checkpoint every N timesteps, the newest K kept.
    small = json.dumps({"n_steps": 16, "batch_size": 32, "n_epochs": 1})
    args = ["x", "--timesteps", "512", "--env", LAKE.to_argument(), "--n-envs", "2"]
    args += ["--hyperparams", small, "--checkpoint-every", "64", "--keep-checkpoints", "3"]
    proc = train_env(tmp_path, *args)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    steps = sorted(
        int(p.stem.split("_")[1]) for p in (tmp_path / "checkpoints" / "x").glob("step_*.zip")
    )
    assert len(steps) == 3 and all(b - a >= 64 for a, b in pairwise(steps))
    assert steps[-1] >= 512 - 64 and (tmp_path / "checkpoints" / "x" / "final.zip").is_file()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_train_env_on_images_writes_a_cnn_bot_and_twin_that_play(tmp_path: Path) -> None:
    pytest.importorskip("minigrid")
    small = '{"n_steps": 64, "batch_size": 64, "n_epochs": 1}'
    proc = train_env(
        tmp_path, "pixels", "--timesteps", "256", "--env", PIXELS.to_argument(),
        "--hyperparams", small, "--n-envs", "2",
    )  # fmt: skip
    out, _ = proc.communicate(timeout=280)
    assert proc.returncode == 0, out
    bot = load_env_bot(tmp_path / "bots" / "pixels.json")
    assert bot.provenance is not None and bot.provenance["timesteps"] >= 256
    assert len(bot.conv) == 3 and bot.observation_space.shape == (3, 56, 56)
    twin = load_env_twin(tmp_path / "bots" / "pixels.onnx")
    images = np.random.default_rng(0).integers(0, 256, (64, 56, 56, 3), dtype=np.uint8)
    assert np.array_equal(twin.act(images), bot.act(images))  # the env's channel-last images
    for candidate in ("bots/pixels.json", "bots/pixels.onnx"):
        argv = [sys.executable, "-m", "cosmic_curriculum", "evaluate", candidate, "random"]
        done = subprocess.run(
            [*argv, "-n", "4"], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
    history = json.loads((tmp_path / "eval_history.json").read_text())
    records = history if isinstance(history, list) else history["records"]
    assert len(records) == 2 and all(r["episodes"] == 4 for r in records)
