"""Raw Cosmic Clash simulation rate: the batched rules vs one game at a time.

Runs the same rules (``arena.rules.step``) two ways in the same process, on one core:

- batched: one call steps all N games (N = 1, 64, 1024, 4096);
- loop: the same rules stepped one game at a time in a Python loop (one ``n = 1`` state
  per game), the way a single-game environment would run them.

It prints game-ticks per second for both and their ratio, for planar-level play (stages
1-2) and full 3-D play, then the SB3 ``ArenaVecEnv`` rate (decisions per second including
observations, rewards and the opponent bot) at the default ``decision_ticks``.

Usage: ``.venv/bin/python bench/bench_arena.py [--seconds 1.0]``
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from cosmic_curriculum.arena.rules import ACT_SIZE, new_state, reset_games, step
from cosmic_curriculum.arena.settings import GameSettings

MODES = {
    "planar": GameSettings(allow_vertical=False, allow_pitch_roll=False),
    "3-D": GameSettings(),
}


def batched_rate(n: int, settings: GameSettings, seconds: float) -> float:
    """Game-ticks per second with all ``n`` games in one batch."""
    rng = np.random.default_rng(0)
    state = new_state(n, settings, rng)
    actions = rng.uniform(-1.0, 1.0, size=(16, n, 2, ACT_SIZE))
    ticks = 0
    start = time.perf_counter()
    while True:
        for k in range(64):
            state, events = step(state, actions[(ticks + k) // 8 % 16], settings, rng)
            if events.done.any():
                reset_games(state, events.done, settings, rng)
        ticks += 64
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n * ticks / elapsed


def loop_rate(n: int, settings: GameSettings, seconds: float) -> float:
    """Game-ticks per second stepping ``n`` single-game states one after the other."""
    rng = np.random.default_rng(0)
    games = [new_state(1, settings, rng) for _ in range(n)]
    actions = rng.uniform(-1.0, 1.0, size=(16, n, 1, 2, ACT_SIZE))
    done = 0
    tick = 0
    start = time.perf_counter()
    while True:
        act = actions[tick // 8 % 16]
        for i, game in enumerate(games):
            _, events = step(game, act[i], settings, rng)
            if events.done[0]:
                reset_games(game, events.done, settings, rng)
            done += 1
        tick += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def vec_env_rate(n: int, opponent: str, seconds: float) -> float:
    """Decisions per second of ``ArenaVecEnv`` (observations, rewards, opponent included)."""
    from cosmic_curriculum.arena.vec_env import ArenaVecEnv
    from cosmic_curriculum.bots import bot_from_spec

    settings = GameSettings(allow_vertical=False, allow_pitch_roll=False, attack_goal_bias=1.0)
    env = ArenaVecEnv(n, settings, bot_from_spec(opponent, settings.decision_ticks), seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1.0, 1.0, size=(8, n, ACT_SIZE)).astype(np.float32)
    steps = 0
    start = time.perf_counter()
    while True:
        env.step(actions[steps % 8])
        steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n * steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    sec = args.seconds

    for settings in MODES.values():  # load (or compile) the physics before any clock runs
        rng = np.random.default_rng(0)
        step(new_state(1, settings, rng), np.zeros((1, 2, ACT_SIZE)), settings, rng)
    print("Raw simulation rate, one core (game-ticks/s = games x physics ticks per second)")
    print(f"{'mode':<8}{'games':>7}{'batched':>14}{'python loop':>14}{'ratio':>9}")
    for mode, settings in MODES.items():
        # the loop's per-game cost does not depend on how many games it walks through;
        # cap its batch so the 4096 row does not take minutes
        for n in (1, 64, 1024, 4096):
            fast = batched_rate(n, settings, sec)
            slow = loop_rate(min(n, 64), settings, sec)
            print(f"{mode:<8}{n:>7}{fast:>14,.0f}{slow:>14,.0f}{fast / slow:>8.1f}x")

    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    ticks = GameSettings().decision_ticks
    print()
    print(f"ArenaVecEnv, planar, decision_ticks={ticks} (decisions/s, all games together)")
    print(f"{'opponent':<10}{'games':>7}{'decisions/s':>14}{'game-ticks/s':>15}")
    for opponent in ("inert", "rookie"):
        for n in (256, 1024):
            rate = vec_env_rate(n, opponent, sec)
            print(f"{opponent:<10}{n:>7}{rate:>14,.0f}{rate * ticks:>15,.0f}")


if __name__ == "__main__":
    main()
