"""Benchmark: a 100-episode evaluation of an MLP bot against the rookie.

Times the real evaluation path (``evaluate.run_evaluation``: load both bots, play all
seat-swapped pairs in one vectorised batch, write the history record) against playing
the same number of episodes one pair at a time (``play_pairs`` with ``n_pairs=1`` in a
Python loop), in the same run, and prints both with their ratio.

    .venv/bin/python bench/bench_eval.py [--episodes 100] [--repeats 3]

The MLP has random weights (64-64 tanh hidden layers, like SB3's default policy net):
its play is aimless, so most games run to the time limit, the slow case for both sides.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from cosmic_curriculum import bots
from cosmic_curriculum.arena.match import play_pairs
from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.arena.settings import GameSettings
from cosmic_curriculum.evaluation import evaluate


def random_mlp_document(seed: int, hidden: tuple[int, ...] = (64, 64)) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    sizes = [OBS_SIZE, *hidden, ACT_SIZE]
    layers = [
        (
            rng.normal(0.0, 1.0 / np.sqrt(n_in), (n_out, n_in)),
            np.zeros(n_out),
            "linear" if k == len(sizes) - 2 else "tanh",
        )
        for k, (n_in, n_out) in enumerate(itertools.pairwise(sizes))
    ]
    return bots.mlp_bot_document(
        layers,
        obs_mean=None,
        obs_std=None,
        game=GameSettings(),
        decision_ticks=16,
        provenance={"experiment": "bench-random-mlp", "note": "random weights"},
    )


def evaluation_arguments(doc: str) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """``--episodes``, ``--repeats``, ``--seed``: shared with bench_external_bot.py."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    return parser, parser.parse_args()


def main() -> None:
    parser, args = evaluation_arguments(__doc__ or "")
    if args.episodes % 2:
        parser.error("--episodes must be even (seat-swapped pairs)")
    n_pairs = args.episodes // 2

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        mlp, rookie = d / "mlp.json", d / "rookie.json"
        bots.save_bot(mlp, random_mlp_document(args.seed))
        bots.save_bot(rookie, bots.rookie_document())
        bot_a, bot_b = bots.load_bot(mlp), bots.load_bot(rookie)
        game = evaluate.game_for(bot_a)

        batched: list[float] = []
        looped: list[float] = []
        counts: dict[str, tuple[int, int, int]] = {}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            rec = evaluate.run_evaluation(
                mlp, rookie, history_path=d / "h.json", episodes=args.episodes, seed=args.seed
            )
            batched.append(time.perf_counter() - t0)
            counts["batched"] = (rec["wins_a"], rec["wins_b"], rec["draws"])

            t0 = time.perf_counter()
            w = b = dr = 0
            for k in range(n_pairs):
                res = play_pairs(bot_a, bot_b, 1, evaluate.batch_seed(args.seed, k), game)
                w, b, dr = w + res.wins_a, b + res.wins_b, dr + res.draws
            looped.append(time.perf_counter() - t0)
            counts["one pair at a time"] = (w, b, dr)

    best_b, best_l = min(batched), min(looped)
    print(
        f"# 100-episode evaluation benchmark ({platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}, numpy {np.__version__})"
    )
    print(
        f"episodes: {args.episodes} ({n_pairs} seat-swapped pairs), MLP {OBS_SIZE}-64-64-"
        f"{ACT_SIZE} (random weights, decision every 16 ticks) vs rookie, "
        f"time limit {game.time_limit:.0f} s = {game.max_ticks} ticks"
    )
    print(f"{'mode':<28}{'best s':>10}{'median s':>10}{'episodes/s':>12}   W-L-D")
    for name, times in (("batched (run_evaluation)", batched), ("one pair at a time", looped)):
        key = "batched" if name.startswith("batched") else name
        w, b, dr = counts[key]
        print(
            f"{name:<28}{min(times):>10.2f}{statistics.median(times):>10.2f}"
            f"{args.episodes / min(times):>12.1f}   {w}-{b}-{dr}"
        )
    print(f"speed-up of the batched evaluation: {best_l / best_b:.1f}x (best of {args.repeats})")


if __name__ == "__main__":
    main()
