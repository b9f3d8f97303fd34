"""100 evaluation episodes: the built-in env evaluator against SB3's `evaluate_policy`.

    .venv/bin/python bench/bench_env_eval.py [--rounds 5] [--episodes 100]
        [--train-timesteps 20480] [--seed 0]

One policy, trained first in this process (SB3 PPO on CartPole-v1 with rl-zoo3's tuned
hyperparameters, schedules as constants, 8 envs, one torch thread), plays ``--episodes``
episodes, deterministic, on every side, side by side and interleaved in a rotating order:

* SB3, one env: ``evaluate_policy(model, Monitor(env), n_eval_episodes=N)`` (what its
  docs show: one env, the torch policy's ``predict`` per step);
* SB3, 16 envs: the same with ``make_vec_env(..., n_envs=16)`` (SB3's batched form);
* ours, record: ``envs.evaluate.evaluate_env(bot, "random", episodes=N)``, the
  built-in evaluator as a gate runs it: the same policy as an env bot (numpy), N seeded
  episodes of it AND N of the random reference, a record appended to a history file;
* ours, candidate only: the evaluator's runner playing the bot's N seeded episodes, the
  same count of episodes as SB3's sides.

Wall time of each call; the table gives each side's median and range over the rounds,
the mean return each side saw (the same policy: it should agree), and the ratios as the
median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import stable_baselines3
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

from cosmic_curriculum.defaults import ENV_EVAL_BATCH
from cosmic_curriculum.envs.evaluate import RANDOM, EnvRunner, episode_seeds, evaluate_env
from cosmic_curriculum.envs.export import env_bot_from_model
from cosmic_curriculum.envs.gymnasium import make_env
from cosmic_curriculum.envs.policy import load_env_bot, save_env_bot
from cosmic_curriculum.workspace.env_config import EnvSpec

SPEC = EnvSpec(kind="gymnasium", id="CartPole-v1")
# rl-zoo3's hyperparams/ppo.yml entry for CartPole-v1 (lin_0.001 and lin_0.2 as constants)
PPO_CARTPOLE: dict[str, Any] = {
    "n_steps": 32,
    "batch_size": 256,
    "gae_lambda": 0.8,
    "gamma": 0.98,
    "n_epochs": 20,
    "ent_coef": 0.0,
    "learning_rate": 0.001,
    "clip_range": 0.2,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--train-timesteps", type=int, default=20_480)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"# env evaluator vs SB3 evaluate_policy ({platform.machine()}, {os.cpu_count()} "
        f"cores, python {platform.python_version()}, numpy {np.__version__}, torch "
        f"{torch.__version__}, stable-baselines3 {stable_baselines3.__version__}), load "
        f"average {os.getloadavg()[0]:.1f}"
    )
    venv = make_vec_env(lambda: make_env(SPEC), n_envs=8, seed=args.seed)
    model = PPO("MlpPolicy", venv, seed=args.seed, device="cpu", verbose=0, **PPO_CARTPOLE)
    started = time.perf_counter()
    model.learn(args.train_timesteps)
    print(
        f"trained PPO on {SPEC.id} for {model.num_timesteps} timesteps in "
        f"{time.perf_counter() - started:.0f} s; {args.episodes} episodes a side, "
        f"deterministic, {args.rounds} rounds"
    )
    with tempfile.TemporaryDirectory() as tmp:
        bot_path = Path(tmp) / "bot.json"
        save_env_bot(env_bot_from_model(model, SPEC), bot_path)
        bot = load_env_bot(bot_path)

        def sb3(n_envs: int) -> Callable[[int], float]:
            def run(r: int) -> float:
                env = (
                    Monitor(make_env(SPEC))
                    if n_envs == 1
                    else make_vec_env(lambda: make_env(SPEC), n_envs=n_envs, seed=r)
                )
                rewards, _ = evaluate_policy(
                    model, env, n_eval_episodes=args.episodes, return_episode_rewards=True
                )
                env.close()
                return float(np.mean(rewards))

            return run

        def ours_record(r: int) -> float:
            history = Path(tmp) / f"history-{r}.json"
            record = evaluate_env(
                bot_path, RANDOM, history_path=history, episodes=args.episodes, seed=r
            )
            return float(np.mean(record["returns"]))

        def ours_candidate(r: int) -> float:
            runner = EnvRunner(bot, min(ENV_EVAL_BATCH, args.episodes), None)
            try:
                seeds = episode_seeds(r, args.episodes)
                episodes = runner.play(bot, seeds, True, np.random.default_rng([r, 1]))
            finally:
                runner.close()
            return float(np.mean([e.total for e in episodes]))

        sides: dict[str, Callable[[int], float]] = {
            "SB3 evaluate_policy, 1 env": sb3(1),
            "SB3 evaluate_policy, 16 envs": sb3(16),
            "ours, record (+ reference)": ours_record,
            "ours, candidate only": ours_candidate,
        }
        names = list(sides)
        times: dict[str, list[float]] = {name: [] for name in names}
        means: dict[str, list[float]] = {name: [] for name in names}
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                start = time.perf_counter()
                means[name].append(sides[name](args.seed + r))
                times[name].append(time.perf_counter() - start)
                print(
                    f"  round {r + 1} {name:<30}{times[name][-1]:7.2f} s  "
                    f"mean return {means[name][-1]:.1f}",
                    flush=True,
                )
    print(f"  {'side':<30}{'median s (range)':>22}{'episodes/s':>12}{'mean return':>13}")
    for name in names:
        median = statistics.median(times[name])
        print(
            f"  {name:<30}{median:>9.2f} ({min(times[name]):.2f}–{max(times[name]):.2f})"
            f"{args.episodes / median:>12.1f}{statistics.mean(means[name]):>13.1f}"
        )
    for ours in names[2:]:
        for base in names[:2]:
            ratios = [b / a for a, b in zip(times[ours], times[base], strict=True)]
            print(
                f"  {ours} vs {base}: {statistics.median(ratios):.1f}x faster "
                f"(rounds {min(ratios):.1f}–{max(ratios):.1f}; goal >= 5x)"
            )


if __name__ == "__main__":
    main()
