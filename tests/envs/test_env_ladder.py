"""`ladder` of env bots: one env, shared episode seeds, the evaluator's rule per pair."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
sb3 = pytest.importorskip("stable_baselines3")

from typer.testing import CliRunner  # noqa: E402

from cosmic_curriculum.cli import app  # noqa: E402
from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env  # noqa: E402
from cosmic_curriculum.envs.export import env_bot_from_model  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.onnx_twin import write_env_twin  # noqa: E402
from cosmic_curriculum.envs.policy import EnvBot, Layer, save_env_bot  # noqa: E402
from cosmic_curriculum.envs.spaces import Space  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

CARTPOLE = EnvSpec(kind="gymnasium", id="CartPole-v1")
PAIRS = 6


def balancer(path: Path) -> None:
    """Push towards where the pole falls (angle + angular velocity): a real env bot file
    written by hand, which keeps CartPole up far longer than chance."""
    env = make_env(CARTPOLE)
    obs = Space("Box", shape=(4,), low=env.observation_space.low, high=env.observation_space.high)
    lean = np.array([[0.0, 0.0, -1.0, -1.0], [0.0, 0.0, 1.0, 1.0]])
    layer = Layer(lean, np.zeros(2), "linear")
    bot = EnvBot(CARTPOLE, obs, Space("Discrete", n=2), (layer,), head="q")
    save_env_bot(bot, path)


def fresh(path: Path, algo: str = "DQN", spec: EnvSpec = CARTPOLE) -> None:
    model = getattr(sb3, algo)("MlpPolicy", make_env(spec), seed=1, device="cpu")
    save_env_bot(env_bot_from_model(model, spec), path)


@pytest.mark.slow
def test_env_ladder_ranks_by_paired_returns(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    balancer(bots / "balancer.json")
    fresh(bots / "fresh.json")
    write_env_twin(bots / "fresh.json")  # a twin is its bot: not ranked twice
    (bots / "notes.json").write_text('{"format": "something else"}')
    out = tmp_path / "logs"
    args = ["ladder", "--bots-dir", str(bots), "--out-dir", str(out), "--pairs", str(PAIRS)]
    result = CliRunner().invoke(app, [*args, "--bot", "random"])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "ladder.json").read_text())
    assert doc["kind"] == "env" and doc["env"]["id"] == "CartPole-v1"
    assert sorted(doc["bots"]) == ["balancer", "fresh", RANDOM] and doc["anchor"] == RANDOM
    assert doc["ratings"][0]["bot"] == "balancer"
    assert [s["path"] for s in doc["skipped"]] == [str(bots / "notes.json")]
    # Each match is what the env evaluator gives on the same seeds.
    names = doc["bots"]
    a, b = names.index("balancer"), names.index("fresh")
    record = evaluate_env(
        bots / "balancer.json",
        bots / "fresh.json",
        history_path=tmp_path / "h.json",
        episodes=PAIRS,
        seed=0,
    )
    assert doc["points"][a][b] == record["wins_a"] + record["draws"] / 2
    assert doc["games"][a][b] == PAIRS
    assert doc["mean_returns"]["balancer"] == pytest.approx(np.mean(record["returns"]))
    assert (out / "ladder.png").is_file() and "paired episode seeds" in (
        out / "ladder.md"
    ).read_text()


def test_bots_of_another_env_are_refused_in_one_line(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    fresh(bots / "a.json")
    fresh(bots / "b.json", "PPO", EnvSpec(kind="gymnasium", id="Acrobot-v1"))
    args = ["ladder", "--bots-dir", str(bots), "--out-dir", str(tmp_path / "logs")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert "one env spec" in result.stderr and "'Acrobot-v1'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
