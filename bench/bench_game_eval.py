"""200 seat-swapped games of connect four: the built-in game evaluator against the loop
PettingZoo's docs show, one game at a time.

    .venv/bin/python bench/bench_game_eval.py [--bot bots/X.json] [--games 200]
        [--rounds 3] [--seed 0] [--checkpoint checkpoints/X/final.zip]

One masked env bot (``--bot``, e.g. the connect4 preset's final bot; default: a bot of
random weights with SB3's default 64x64 tanh MLP) plays ``--games`` games against
``random`` (uniform over the legal moves), sampled moves, half the games in each seat:

* PettingZoo's loop: one ``connect_four_v3.env()``; per game ``reset(seed)``, then
  ``for agent in env.agent_iter(): env.last()`` and ``env.step(move)``, the bot's move
  from ``act`` on that one observation and mask (numpy, batch 1), random's a uniform
  legal move;
* PettingZoo's loop + SB3 (``--checkpoint``): the same loop, the bot's move from its
  MaskablePPO's own ``model.predict(obs, action_masks=mask)`` (torch, one thread), as
  PettingZoo's SB3 tutorial evaluates its agent;
* ours: ``envs.game_evaluate.evaluate_game(bot, "random", episodes=N)``, as a gate runs
  it: ``GAME_EVAL_BATCH`` games in lockstep, one batched call per player per move, the
  record appended to a history file.

Wall time of each side per round (interleaved), the median and range, each side's score
(the same bot against the same opponent: they should agree within noise) and the median
of the per-round ratios.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pettingzoo
from pettingzoo.classic import connect_four_v3

from cosmic_curriculum.defaults import GAME_EVAL_BATCH
from cosmic_curriculum.envs.export import space_of
from cosmic_curriculum.envs.game_evaluate import evaluate_game
from cosmic_curriculum.envs.layers import Layer
from cosmic_curriculum.envs.pettingzoo import game_info
from cosmic_curriculum.envs.policy import EnvBot, load_env_bot, save_env_bot
from cosmic_curriculum.workspace.env_config import EnvSpec

GAME = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.connect_four_v3")


def default_bot(path: Path) -> Path:
    """A masked bot of random weights, SB3's default MLP (64, 64, tanh)."""
    return random_bot(path)


def random_bot(
    path: Path,
    widths: tuple[int, ...] = (64, 64),
    activation: str = "tanh",
    scale: float = 0.3,
    planes: tuple[int, ...] = (),
) -> Path:
    """A masked connect-four bot of random weights (its moves cost as a trained one's):
    ``planes`` 3x3 convolutions over the board (planes last, as BoardCNN's), then dense
    layers of ``widths``."""
    from cosmic_curriculum.envs.conv import ConvLayer

    info = game_info(GAME)
    obs = space_of(info.observation_space, "observation")
    action = space_of(info.action_space, "action")
    rng = np.random.default_rng(0)
    conv = tuple(
        ConvLayer(rng.normal(0, 0.2, (b, a, 3, 3)), np.zeros(b), (1, 1), (1, 1), "relu")
        for a, b in itertools.pairwise([obs.shape[2], *planes])
    )
    inputs = planes[-1] * obs.shape[0] * obs.shape[1] if planes else obs.size
    sizes = [inputs, *widths]
    layers = [
        Layer(rng.normal(0, scale, (b, a)), np.zeros(b), activation)
        for a, b in itertools.pairwise(sizes)
    ]
    layers.append(Layer(rng.normal(0, scale, (action.n, sizes[-1])), np.zeros(action.n), "linear"))
    bot = EnvBot(GAME, obs, action, tuple(layers), conv=conv, action_mask=True)
    save_env_bot(replace(bot, channels_last=bool(conv)), path)
    return path


# The bot's move from its observation and legal-move mask.
Move = Callable[[dict[str, Any], np.ndarray, np.random.Generator], int]


def pettingzoo_loop(bot: EnvBot, games: int, seed: int) -> float:
    """The bot's score over ``games`` games played one at a time with PettingZoo's API."""

    def move(obs: dict[str, Any], mask: np.ndarray, rng: np.random.Generator) -> int:
        return int(bot.act(obs["observation"][None], False, rng, mask=mask[None])[0])

    return _one_at_a_time(move, games, seed)


def sb3_loop(model: Any, games: int, seed: int) -> float:
    """PettingZoo's loop with the trained MaskablePPO's own ``predict`` (torch, batch 1),
    as PettingZoo's SB3 tutorial evaluates its connect-four agent."""

    def move(obs: dict[str, Any], mask: np.ndarray, rng: np.random.Generator) -> int:
        chosen, _ = model.predict(obs["observation"], action_masks=mask, deterministic=False)
        return int(chosen)

    return _one_at_a_time(move, games, seed)


def _one_at_a_time(move: Move, games: int, seed: int) -> float:
    """The score of ``move`` (the bot's choice from an observation and its mask) over
    ``games`` games against uniform legal moves, the bot's seat alternating."""
    env = connect_four_v3.env()
    rng = np.random.default_rng(seed)
    score = 0.0
    for g in range(games):
        env.reset(seed=seed + g)
        seat = env.agents[g % 2]
        totals = {a: 0.0 for a in env.agents}
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, _ = env.last()
            totals[agent] += float(reward)
            if terminated or truncated:
                env.step(None)
                continue
            mask = obs["action_mask"].astype(bool)
            if agent == seat:
                env.step(move(obs, mask, rng))
            else:
                env.step(int(rng.choice(np.flatnonzero(mask))))
        other = next(a for a in totals if a != seat)
        lead = totals[seat] - totals[other]
        score += 1.0 if lead > 0 else 0.5 if lead == 0 else 0.0
    env.close()
    return score / games


def ours(bot: Path, games: int, seed: int, history: Path) -> float:
    record = evaluate_game(
        bot, "random", history_path=history, episodes=games, seed=seed, deterministic=False
    )
    return (record["wins_a"] + record["draws"] / 2) / record["episodes"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bot", type=Path, default=None)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--checkpoint", type=Path, default=None, help="the bot's MaskablePPO .zip: a third side"
    )
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="game-eval-bench-") as folder:
        run_rounds(opts, Path(folder))


def run_rounds(opts: argparse.Namespace, tmp: Path) -> None:
    """Each side's games, the sides' order alternating by round; medians and ratios."""
    path = opts.bot or default_bot(tmp / "bot.json")
    bot = load_env_bot(path)
    print(
        f"python {platform.python_version()}, pettingzoo {pettingzoo.__version__}, "
        f"{os.cpu_count()} cpus; bot {path}; {opts.games} games a side a round, "
        f"GAME_EVAL_BATCH {GAME_EVAL_BATCH}"
    )
    model = None
    if opts.checkpoint is not None:
        import torch
        from sb3_contrib import MaskablePPO

        torch.set_num_threads(1)
        model = MaskablePPO.load(opts.checkpoint, device="cpu")
    walls: dict[str, list[float]] = {"pettingzoo loop": [], "ours (record)": []}
    if model is not None:
        walls["pz loop + SB3"] = []
    scores: dict[str, list[float]] = {k: [] for k in walls}
    for r in range(opts.rounds):
        seed = opts.seed + 1000 * r
        sides = [
            ("pettingzoo loop", lambda s=seed: pettingzoo_loop(bot, opts.games, s)),
            ("ours (record)", lambda s=seed: ours(path, opts.games, s, tmp / "h.json")),
        ]
        if model is not None:
            sides.append(("pz loop + SB3", lambda s=seed: sb3_loop(model, opts.games, s)))
        for name, run in sides if r % 2 == 0 else sides[::-1]:
            start = time.perf_counter()
            scores[name].append(run())
            walls[name].append(time.perf_counter() - start)
    for name, times in walls.items():
        print(
            f"{name:16s} median {statistics.median(times):6.2f} s "
            f"(range {min(times):.2f}-{max(times):.2f}), score vs random "
            f"{statistics.mean(scores[name]):.3f}"
        )
    for name in walls:
        if name != "ours (record)":
            ratios = [a / b for a, b in zip(walls[name], walls["ours (record)"], strict=True)]
            print(f"ratio ({name} / ours), median of rounds: {statistics.median(ratios):.1f}x")


if __name__ == "__main__":
    main()
