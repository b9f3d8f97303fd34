"""Training throughput: our trainer's defaults on the batched arena vs SB3's usual setup.

    .venv/bin/python bench/bench_train.py [--timesteps 262144] [--baseline-timesteps 16384]
        [--modes planar,3d]

Side by side in one run, per game mode (planar: the first stages' level, z = 0 game;
3d: the full game, with free rotation about three axes), same game settings
(the defaults with decision_ticks = --speedup), same opponent (inert), same machine load:

* ours: PPO with ``cosmic_curriculum.train``'s default hyperparameters (rollout, minibatch,
  epochs, net) on ONE ``ArenaVecEnv`` simulating ``--n-parallel`` games in numpy;
* baseline: what an SB3 user writes first, ``make_vec_env(ArenaEnv, n_envs=8)`` (a
  ``DummyVecEnv`` of single-game gymnasium envs) with SB3's default PPO hyperparameters
  (n_steps 2048, batch 64, 10 epochs, [64, 64] tanh).

Both use ``torch.set_num_threads(--torch-threads)`` (1 by default: see docs/BENCHMARKS.md;
the baseline would be slower still with torch's default threads on a busy machine).
Prints env steps per second of ``model.learn`` (rollouts + updates) and the ratio; for
ours also the game rules' share of that time (timers around every ``rules.step`` and
``observe`` call the duel makes: the rest is PPO, the opponent and bookkeeping), and at
the end the 3-D rate as a share of the planar one. ``--rounds`` repeats ours in every mode,
alternating, and reports each mode's fastest round (machine load comes and goes); the
ratio to the baseline uses the mean of the rounds.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from cosmic_curriculum import bots, train
from cosmic_curriculum.arena import GameSettings, duel
from cosmic_curriculum.arena.gym_env import ArenaEnv
from cosmic_curriculum.arena.vec_env import ArenaVecEnv


def steps_per_second(model: PPO, timesteps: int) -> tuple[float, int]:
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps, progress_bar=False)
    elapsed = time.perf_counter() - start
    return model.num_timesteps / elapsed, int(model.num_timesteps)


class RulesClock:
    """Seconds spent in the game rules while installed: ``rules.step`` and ``observe``
    as the duel (the engine of ``ArenaVecEnv``) calls them. Two clock reads a call, about
    a microsecond against hundreds for a step of 256 games."""

    def __init__(self) -> None:
        self.step = 0.0
        self.observe = 0.0

    def _timed(self, fn: Callable[..., Any], field: str) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                setattr(self, field, getattr(self, field) + time.perf_counter() - start)

        return timed

    @contextmanager
    def installed(self) -> Iterator[RulesClock]:
        step, observe = duel.step, duel.observe
        duel.step, duel.observe = self._timed(step, "step"), self._timed(observe, "observe")
        try:
            yield self
        finally:
            duel.step, duel.observe = step, observe


def ours(settings: train.TrainSettings, game: GameSettings) -> PPO:
    env = ArenaVecEnv(settings.n_parallel, game, bots.InertBot(game.decision_ticks), seed=0)
    return PPO(
        "MlpPolicy",
        env,
        policy_kwargs=train.policy_kwargs(settings),
        seed=0,
        device="cpu",
        verbose=0,
        **train.ppo_kwargs(settings),
    )


def baseline(game: GameSettings, n_envs: int) -> PPO:
    def make() -> Any:
        return ArenaEnv(game, bots.InertBot(game.decision_ticks))

    env = make_vec_env(make, n_envs=n_envs, seed=0)
    return PPO("MlpPolicy", env, seed=0, device="cpu", verbose=0)


MODES = {"planar": {"allow_vertical": False, "allow_pitch_roll": False}, "3d": {}}


def main() -> None:
    defaults = train.TrainSettings(experiment="bench")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=262_144)
    parser.add_argument("--baseline-timesteps", type=int, default=16_384)
    parser.add_argument("--modes", default="planar,3d", help="comma-separated: planar, 3d")
    parser.add_argument("--n-parallel", type=int, default=defaults.n_parallel)
    parser.add_argument("--speedup", type=int, default=defaults.speedup)
    parser.add_argument("--baseline-envs", type=int, default=8)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="runs of ours per mode (best)")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        parser.error(f"--modes {args.modes!r}: choose from {', '.join(MODES)}")

    torch.set_num_threads(args.torch_threads)
    settings = defaults.model_copy(update={"n_parallel": args.n_parallel, "speedup": args.speedup})
    n_steps, batch = train.ppo_layout(settings)
    print(
        f"ours: ArenaVecEnv({settings.n_parallel} games), n_steps {n_steps}, batch {batch}, "
        f"epochs {settings.n_epochs}, net {list(settings.net_arch)} {settings.activation}"
    )
    print(
        f"baseline: make_vec_env(ArenaEnv, n_envs={args.baseline_envs}), SB3 PPO defaults "
        "(n_steps 2048, batch 64, epochs 10, net [64, 64] tanh)"
    )
    print(f"speedup {args.speedup} ticks/decision, torch threads {args.torch_threads}")

    # ours first, alternating modes round by round: the fastest round of each mode gives
    # its rate, rules share and the 3-D/planar ratio; their mean is compared with the
    # baseline (one run), so extra rounds do not flatter ours against it
    runs: dict[str, list[tuple[float, int, RulesClock, float]]] = {m: [] for m in modes}
    for _ in range(max(1, args.rounds)):
        for mode in modes:
            game = GameSettings(decision_ticks=args.speedup, **MODES[mode])
            model = ours(settings, game)
            with RulesClock().installed() as clock:
                start = time.perf_counter()
                sps, steps = steps_per_second(model, args.timesteps)
                elapsed = time.perf_counter() - start
            runs[mode].append((sps, steps, clock, elapsed))
    best = {mode: max(runs[mode], key=lambda run: run[0]) for mode in modes}
    for mode in modes:
        sps, steps, clock, elapsed = best[mode]
        print(
            f"{mode:6s} ours:     {sps:10,.0f} env steps/s  ({steps:,} steps; rules "
            f"{(clock.step + clock.observe) / elapsed:.0%} of the time: step "
            f"{clock.step / elapsed:.0%}, observe {clock.observe / elapsed:.0%})",
            flush=True,
        )
    if "planar" in best and "3d" in best:
        print(f"3d/planar ours:  {best['3d'][0] / best['planar'][0]:10.2f}", flush=True)
    for mode in modes:
        game = GameSettings(decision_ticks=args.speedup, **MODES[mode])
        base_sps, base_steps = steps_per_second(
            baseline(game, args.baseline_envs), args.baseline_timesteps
        )
        print(
            f"{mode:6s} baseline: {base_sps:10,.0f} env steps/s  ({base_steps:,} steps)", flush=True
        )
        mean = sum(run[0] for run in runs[mode]) / len(runs[mode])
        print(f"{mode:6s} ratio:    {mean / base_sps:10.1f}x", flush=True)


if __name__ == "__main__":
    main()
