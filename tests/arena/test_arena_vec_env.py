"""The SB3 VecEnv and the single-game gymnasium env: API, infos, rewards, SB3 training."""

from __future__ import annotations

import numpy as np
import pytest
from arena_helpers import PLANAR

from cosmic_curriculum.arena.duel import Duel
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.bots import InertBot, RandomBot, bot_from_spec

torch = pytest.importorskip("torch")
sb3 = pytest.importorskip("stable_baselines3")

from cosmic_curriculum.arena.gym_env import ArenaEnv  # noqa: E402
from cosmic_curriculum.arena.vec_env import ArenaVecEnv  # noqa: E402

SHORT = GameSettings(allow_vertical=False, allow_pitch_roll=False, time_limit=2.0, decision_ticks=8)


def test_reset_and_step_shapes_and_learner_sides() -> None:
    env = ArenaVecEnv(6, SHORT, InertBot(), seed=1)
    obs = env.reset()
    assert obs.shape == (6, OBS_SIZE) and obs.dtype == np.float32
    np.testing.assert_array_equal(env.learner_side, [0, 1, 0, 1, 0, 1])
    # every learner starts on its own side, facing the goal it attacks
    assert np.all(obs[:, 0] < 0.0) and np.all(obs[:, 6] == 1.0)
    obs, rewards, dones, infos = env.step(np.zeros((6, 6), dtype=np.float32))
    assert obs.shape == (6, OBS_SIZE) and rewards.shape == (6,) and dones.shape == (6,)
    assert rewards.dtype == np.float32 and dones.dtype == bool
    assert infos == [{} for _ in range(6)]


def test_timeouts_end_as_draws_with_episode_infos() -> None:
    env = ArenaVecEnv(4, SHORT.model_copy(update={"draw_penalty": 0.5}), InertBot(), seed=0)
    env.reset()
    decisions = -(-SHORT.max_ticks // SHORT.decision_ticks)
    total = np.zeros(4)
    for k in range(decisions):
        _, rewards, dones, infos = env.step(np.zeros((4, 6), dtype=np.float32))
        total += rewards
        assert dones.all() == (k == decisions - 1)
    for info in infos:
        assert info["outcome"] == 0
        assert info["episode"]["l"] == decisions
        assert info["episode"]["r"] == pytest.approx(-0.5)
        assert info["terminal_observation"].shape == (OBS_SIZE,)
        assert info["terminal_observation"][42] == pytest.approx(-1.0)  # no time left
        assert "TimeLimit.truncated" not in info
    np.testing.assert_allclose(total, -0.5)


def test_goal_rewards_and_outcomes_follow_the_learners_side() -> None:
    settings = PLANAR.model_copy(update={"goal_reward": 2.0, "decision_ticks": 4})
    duel = Duel(2, settings, InertBot(), seed=0)
    duel.reset()
    # put the orb at orange's goal line (+x) moving in: blue (game 0's learner) scores,
    # which is a loss for game 1's learner (who plays orange)
    duel.state.orb_pos[:] = (settings.arena_half_length - 1.0, 0.0, 0.0)
    duel.state.orb_vel[:] = (20.0, 0.0, 0.0)
    result = duel.decide(np.zeros((2, 6)))
    np.testing.assert_array_equal(result.ended, [0, 1])
    np.testing.assert_array_equal(result.outcomes, [1, -1])
    np.testing.assert_allclose(result.rewards, [2.0, -2.0])
    assert np.all(duel.state.ticks == 0)  # both restarted from a kickoff
    # terminal observations show the goal moment: the orb past the goal line, from each side
    np.testing.assert_allclose(result.terminal_obs[:, 12], [1.0, -1.0])
    assert np.all(result.terminal_obs[:, 42] > 0.99)  # hardly any time had passed
    np.testing.assert_array_equal(result.lengths, [1, 1])


def test_shaping_rewards_orb_progress_and_telescopes() -> None:
    settings = PLANAR.model_copy(update={"attack_goal_bias": 1.0, "decision_ticks": 4})
    duel = Duel(2, settings, InertBot(), seed=0)
    duel.reset()
    duel.state.orb_vel[:] = (6.0, 0.0, 0.0)  # the orb drifts toward +x (orange's goal)
    x0 = duel.state.orb_pos[:, 0].copy()
    total = np.zeros(2)
    for _ in range(5):
        total += duel.decide(np.zeros((2, 6))).rewards
    moved = duel.state.orb_pos[:, 0] - x0
    # blue (game 0) gains exactly the progress over the arena length; orange loses it
    np.testing.assert_allclose(total, [moved[0] / 40.0, -moved[1] / 40.0], rtol=1e-5)
    assert total[0] > 0.0 > total[1]


def test_approach_shaping_rewards_closing_in_on_the_orb_and_telescopes() -> None:
    settings = PLANAR.model_copy(update={"orb_approach_bias": 1.0, "decision_ticks": 4})
    duel = Duel(2, settings, InertBot(), seed=0)
    duel.reset()
    me = duel.state.ship_pos[[0, 1], [0, 1]]
    gap0 = np.linalg.norm(me - duel.state.orb_pos, axis=1)
    forward, still = np.zeros((2, 6)), np.zeros((2, 6))
    forward[0, 0] = 1.0  # game 0's learner flies at the orb (it starts facing it)
    total = np.zeros(2)
    for _ in range(3):
        total += duel.decide(np.where([[True], [False]], forward, still)).rewards
    me = duel.state.ship_pos[[0, 1], [0, 1]]
    gap = np.linalg.norm(me - duel.state.orb_pos, axis=1)
    np.testing.assert_allclose(total, (gap0 - gap) / settings.arena_diagonal, atol=1e-6)
    assert total[0] > 0.01 and total[1] == pytest.approx(0.0, abs=1e-6)


def test_random_play_episode_returns_match_summed_rewards() -> None:
    settings = SHORT.model_copy(update={"attack_goal_bias": 1.0, "time_limit": 4.0})
    env = ArenaVecEnv(32, settings, RandomBot(8), seed=3)
    env.reset()
    rng = np.random.default_rng(0)
    running = np.zeros(32)
    checked = 0
    for _ in range(200):
        _, rewards, dones, infos = env.step(rng.uniform(-1, 1, (32, 6)).astype(np.float32))
        running += rewards
        for i in np.flatnonzero(dones):
            assert infos[i]["episode"]["r"] == pytest.approx(running[i], abs=1e-4)
            assert abs(infos[i]["episode"]["r"]) <= 1.0 + 1.0 + 1e-6  # goal + shaping
            running[i] = 0.0
            checked += 1
    assert checked > 32


def test_set_opponent_swaps_the_opponent_and_env_methods() -> None:
    env = ArenaVecEnv(4, SHORT, InertBot(), seed=0)
    env.reset()
    env.set_opponent(bot_from_spec("rookie"))
    assert env.opponent.kind == "scripted"
    env.env_method("set_opponent", RandomBot())
    assert env.get_attr("opponent")[0].kind == "random"
    assert env.env_is_wrapped(object) == [False] * 4
    env.set_attr("foo", 3)
    assert env.get_attr("foo", indices=[1, 2]) == [3, 3]
    env.step(np.zeros((4, 6), dtype=np.float32))


def test_seeding_makes_rollouts_reproducible() -> None:
    def rollout(seed: int) -> np.ndarray:
        env = ArenaVecEnv(8, SHORT, RandomBot(8), seed=0)
        env.seed(seed)
        obs = [env.reset()]
        for _ in range(10):
            obs.append(env.step(np.ones((8, 6), dtype=np.float32))[0])
        return np.stack(obs)

    np.testing.assert_array_equal(rollout(5), rollout(5))
    assert not np.array_equal(rollout(5), rollout(6))


def test_set_settings_changes_the_game() -> None:
    env = ArenaVecEnv(2, SHORT, InertBot(), seed=0)
    env.set_settings(GameSettings())
    assert env.settings.allow_vertical
    env.reset()


def test_sb3_ppo_learns_a_few_hundred_steps() -> None:
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    env = ArenaVecEnv(16, SHORT.model_copy(update={"attack_goal_bias": 1.0}), InertBot(), seed=0)
    from stable_baselines3.common.logger import Logger

    model = PPO("MlpPolicy", env, n_steps=32, batch_size=256, n_epochs=1, seed=0, verbose=0)
    model.set_logger(Logger(folder=None, output_formats=[]))  # no log folder in /tmp
    model.learn(16 * 32 * 2)
    assert model.num_timesteps == 1024
    assert len(model.ep_info_buffer) > 0  # episode infos reached SB3 without a Monitor


def test_gym_env_passes_the_sb3_env_checker() -> None:
    import warnings

    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(ArenaEnv(GameSettings()), warn=True)


def test_gym_env_episodes_alternate_sides_and_end() -> None:
    env = ArenaEnv(SHORT, RandomBot(8), side="alternate", seed=0)
    sides = []
    for episode in range(2):
        obs, _ = env.reset(seed=episode)
        sides.append(int(env.duel.learner_side[0]))
        assert env.observation_space.contains(obs)
        terminated = False
        steps = 0
        while not terminated:
            obs, _, terminated, truncated, info = env.step(env.action_space.sample())
            assert not truncated
            steps += 1
        assert info["outcome"] in (-1, 0, 1) and steps <= 30
    assert sides == [0, 1]
    with pytest.raises(ValueError, match="side"):
        ArenaEnv(SHORT, side=2)  # type: ignore[arg-type]


@pytest.mark.parametrize("opp_ticks", [8, 3])
def test_the_opponent_sees_the_current_state_from_its_side(opp_ticks: int) -> None:
    from cosmic_curriculum.arena.observations import observe

    class Spy:
        kind = "spy"
        decision_ticks = opp_ticks

        def __init__(self) -> None:
            self.duel: Duel | None = None
            self.calls = 0

        def act(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
            assert self.duel is not None
            fresh = observe(self.duel.state, self.duel.settings)
            them = 1 - self.duel.learner_side
            np.testing.assert_array_equal(obs, fresh[np.arange(obs.shape[0]), them])
            self.calls += 1
            return np.tile(np.array([1.0, 0, 0, 0.3, 0, 0], dtype=np.float32), (obs.shape[0], 1))

        def reset(self, mask: np.ndarray) -> None:
            return None

    spy = Spy()
    duel = Duel(4, SHORT, spy, seed=0)
    spy.duel = duel
    rng = np.random.default_rng(0)
    for _ in range(40):
        duel.decide(rng.uniform(-1, 1, (4, 6)))
    assert spy.calls == -(-40 * SHORT.decision_ticks // opp_ticks)
