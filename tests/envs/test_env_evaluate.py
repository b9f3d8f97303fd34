"""The built-in env evaluator on real Gymnasium envs: counts, successes, seeds, faults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from cosmic_curriculum.envs.evaluate import RANDOM, evaluate_env  # noqa: E402
from cosmic_curriculum.envs.export import space_of  # noqa: E402
from cosmic_curriculum.envs.gymnasium import make_env  # noqa: E402
from cosmic_curriculum.envs.policy import EnvBot, Layer, Space, save_env_bot  # noqa: E402
from cosmic_curriculum.errors import EvaluationError  # noqa: E402
from cosmic_curriculum.workspace import history  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

LAKE = EnvSpec(
    kind="gymnasium", id="FrozenLake-v1", kwargs={"map_name": "4x4", "is_slippery": False}
)
# The optimal route of the 4x4 map: down, down, right, down, right, right (0 left,
# 1 down, 2 right, 3 up); states off the route keep "down".
ROUTE = {0: 1, 1: 0, 3: 0, 4: 1, 8: 2, 9: 1, 13: 2, 14: 2}


def table_bot(spec: EnvSpec, table: dict[int, int]) -> EnvBot:
    weights = np.zeros((4, 16))
    for state in range(16):
        weights[table.get(state, 1), state] = 1.0
    return EnvBot(
        spec,
        Space("Discrete", n=16),
        Space("Discrete", n=4),
        (Layer(weights, np.zeros(4), "linear"),),
    )


def uniform_cartpole_bot() -> EnvBot:
    # Zero logits: sampled, it is the uniform random policy.
    spec = EnvSpec(kind="gymnasium", id="CartPole-v1")
    env = make_env(spec)
    box = space_of(env.observation_space, "observation")
    layer = Layer(np.zeros((2, 4)), np.zeros(2), "linear")
    return EnvBot(spec, box, Space("Discrete", n=2), (layer,))


def test_the_optimal_lake_bot_beats_random(tmp_path: Path) -> None:
    bot = tmp_path / "bots" / "lake.json"
    save_env_bot(table_bot(LAKE, ROUTE), bot)
    hist = tmp_path / "eval_history.json"
    record = evaluate_env(bot, RANDOM, history_path=hist, episodes=40, seed=7, extra={"tag": 1})
    assert record["successes"] == 40 and record["returns"] == [1.0] * 40
    assert record["wins_a"] >= 35 and record["wins_b"] == 0
    assert record["wins_a"] + record["wins_b"] + record["draws"] == record["episodes"] == 40
    assert len(record["seeds"]) == 40 and record["tag"] == 1 and record["max_steps"] == 100
    assert record["reference"] == RANDOM and record["evaluator"] == "env"
    assert history.load(hist) == [record]
    # Fresh seeds per evaluation seed, the same on a replay of it.
    again = evaluate_env(bot, RANDOM, history_path=hist, episodes=40, seed=7)
    other = evaluate_env(bot, RANDOM, history_path=hist, episodes=40, seed=8)
    assert again["seeds"] == record["seeds"] != other["seeds"]
    # A bot file as the reference: itself, every pair a draw.
    mirror = evaluate_env(bot, bot, history_path=hist, episodes=10, seed=1)
    assert mirror["draws"] == 10 and "reference_sha256" in mirror


def test_a_bot_that_walks_into_a_hole_never_succeeds(tmp_path: Path) -> None:
    bot = tmp_path / "hole.json"
    save_env_bot(table_bot(LAKE, {0: 2, 1: 1}), bot)  # right, then down into hole 5
    record = evaluate_env(bot, RANDOM, history_path=tmp_path / "h.json", episodes=20, seed=0)
    assert record["successes"] == 0 and record["wins_a"] == 0


def test_random_against_random_is_about_even(tmp_path: Path) -> None:
    bot = tmp_path / "uniform.json"
    save_env_bot(uniform_cartpole_bot(), bot)
    record = evaluate_env(
        bot, RANDOM, history_path=tmp_path / "h.json", episodes=200, seed=3, deterministic=False
    )
    decided = record["wins_a"] + record["wins_b"]
    assert decided > 150 and 0.38 < record["wins_a"] / decided < 0.62
    # CartPole pays 1 a step: every episode "succeeds" by return > 0, unless a bar is set.
    assert record["successes"] == 200
    strict = evaluate_env(
        bot,
        RANDOM,
        history_path=tmp_path / "h.json",
        episodes=50,
        seed=3,
        deterministic=False,
        success_return=100.0,
    )
    assert strict["successes"] == sum(r >= 100 for r in strict["returns"]) < 50


def test_stop_ends_the_evaluation_early(tmp_path: Path) -> None:
    bot = tmp_path / "lake.json"
    save_env_bot(table_bot(LAKE, ROUTE), bot)
    record = evaluate_env(
        bot,
        RANDOM,
        history_path=tmp_path / "h.json",
        episodes=400,
        seed=1,
        stop=lambda counts: counts["successes"] >= 30,
    )
    assert record["episodes"] == 32 and len(record["returns"]) == 32


class NanEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> Any:
        return np.array([np.nan, 0.0], np.float32), 0.0, False, False, {}


class EndlessEnv(NanEnv):
    def step(self, action: Any) -> Any:
        return np.zeros(2, np.float32), 1.0, False, False, {}


class ShapeEnv(NanEnv):
    def step(self, action: Any) -> Any:
        return np.zeros(3, np.float32), 0.0, False, False, {}


class BrokenEnv(NanEnv):
    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        raise RuntimeError("the simulator\nfell over")


@pytest.fixture(scope="module", autouse=True)
def registered() -> None:
    envs = (("NanEnv", NanEnv), ("EndlessEnv", EndlessEnv), ("BrokenEnv", BrokenEnv))
    for name, cls in (*envs, ("ShapeEnv", ShapeEnv)):
        if f"{name}-v0" not in gymnasium.registry:
            gymnasium.register(id=f"{name}-v0", entry_point=cls)


def box_bot(env_id: str) -> EnvBot:
    box = Space("Box", shape=(2,), low=np.full(2, -1.0), high=np.full(2, 1.0))
    spec = EnvSpec(kind="gymnasium", id=env_id)
    return EnvBot(
        spec, box, Space("Discrete", n=2), (Layer(np.zeros((2, 2)), np.zeros(2), "linear"),)
    )


@pytest.mark.parametrize(
    ("env_id", "fault"),
    [
        ("NanEnv-v0", "non-finite"),
        ("BrokenEnv-v0", "during reset"),
        ("ShapeEnv-v0", "observation of shape (3,), not its space's (2,)"),
    ],
)
def test_a_faulty_env_is_one_line_and_no_record(env_id: str, fault: str, tmp_path: Path) -> None:
    bot = tmp_path / "bot.json"
    save_env_bot(box_bot(env_id), bot)
    hist = tmp_path / "h.json"
    with pytest.raises(EvaluationError) as caught:
        evaluate_env(bot, RANDOM, history_path=hist, episodes=4, seed=0)
    assert fault in str(caught.value) and "\n" not in str(caught.value)
    assert env_id in str(caught.value) and not hist.exists()


def test_an_env_that_never_ends_is_cut_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cosmic_curriculum.envs.evaluate as ev

    monkeypatch.setattr(ev, "ENV_MAX_EPISODE_STEPS", 25)
    bot = tmp_path / "bot.json"
    save_env_bot(box_bot("EndlessEnv-v0"), bot)
    record = evaluate_env(bot, RANDOM, history_path=tmp_path / "h.json", episodes=4, seed=0)
    assert record["cut_episodes"] == 4 and record["successes"] == 0
    assert record["returns"] == [25.0] * 4 and record["max_steps"] == 25
    assert json.loads((tmp_path / "h.json").read_text())[0]["draws"] == 4


def test_evaluate_plays_env_bots_greedy_or_sampled(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cosmic_curriculum.cli import app

    bot = tmp_path / "bots" / "pole.json"
    save_env_bot(uniform_cartpole_bot(), bot)  # greedy: always push left; sampled: random
    hist = tmp_path / "eval_history.json"
    for flag in ("--deterministic", "--sample"):
        argv = ["evaluate", str(bot), "random", "-n", "10", "--history", str(hist), flag]
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 0, result.output
    greedy, sampled = history.load(hist)
    assert greedy["deterministic"] is True and sampled["deterministic"] is False
    assert greedy["seeds"] == sampled["seeds"]
    assert max(greedy["returns"]) <= 12  # pushed left every step, the pole falls at once
    assert sum(sampled["returns"]) > sum(greedy["returns"])
