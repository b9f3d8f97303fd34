"""numpy's BLAS threads for an env bot's moves: numpy's default (one thread a core) against
the command's setting (``defaults.BLAS_THREADS``, set by the entry point), side by side.

Each arm runs in its own process (the thread count is fixed when numpy loads): a connect-
four bot (random weights in the connect4 preset's network, or ``--bot``) moves
for 8 games at once, as a league opponent does in training, then for 100, as a gate's
batch. ``--load N`` keeps N other processes busy meanwhile (a training beside it, or the
other arm of a side-by-side run): the machine a curriculum runs on.

    python bench/bench_blas_threads.py --load 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cosmic_curriculum.defaults import BLAS_THREADS

ARM = r"""
import json, sys, time
import numpy as np
from cosmic_curriculum.envs.policy import load_env_bot
bot = load_env_bot(sys.argv[1])
rng = np.random.default_rng(0)
out = {}
for batch, repeats in ((8, int(sys.argv[2])), (100, int(sys.argv[2]) // 4)):
    obs = rng.integers(0, 2, (batch, 6, 7, 2)).astype(np.int8)
    mask = np.ones((batch, 7), bool)
    bot.act(obs, False, rng, mask)
    start = time.perf_counter()
    for _ in range(repeats):
        bot.act(obs, False, rng, mask)
    out[batch] = (time.perf_counter() - start) / repeats * 1000
print(json.dumps(out))
"""


def fresh_bot(path: Path, net: str) -> None:
    """A masked connect-four bot of random weights: the connect4 preset's 512x512 MLP, or
    a BoardCNN (two 3x3 layers of 64, 256 features) then 256."""
    from bench_game_eval import random_bot  # this script's folder is on the path

    if net == "board-cnn":
        random_bot(path, (256, 256), "relu", 0.05, planes=(64, 64))
    else:
        random_bot(path, (512, 512), "relu", 0.05)


def burn() -> None:
    while True:
        pass


def arm(bot: Path, threads: str | None, repeats: int) -> dict[str, float]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    if threads is not None:
        env |= {"OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    done = subprocess.run(
        [sys.executable, "-c", ARM, str(bot), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return {k: float(v) for k, v in json.loads(done.stdout).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bot", type=Path, help="an env bot of connect four (default: fresh)")
    parser.add_argument("--net", default="mlp", choices=["mlp", "board-cnn"])
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of both arms")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bot = args.bot
        if bot is None:
            bot = Path(tmp) / "bot.json"
            fresh_bot(bot, args.net)
        burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.load)]
        for p in burners:
            p.start()
        try:
            results: dict[str, list[dict[str, float]]] = {"default": [], "ours": []}
            for _ in range(args.rounds):  # alternating: both arms see the same machine
                results["default"].append(arm(bot, None, args.repeats))
                results["ours"].append(arm(bot, str(BLAS_THREADS), args.repeats))
        finally:
            for p in burners:
                p.kill()
    print(
        f"{bot.name if args.bot else args.net}, {args.load} busy processes, {os.cpu_count()} cores"
    )
    for batch in ("8", "100"):
        base = sorted(r[batch] for r in results["default"])[len(results["default"]) // 2]
        ours = sorted(r[batch] for r in results["ours"])[len(results["ours"]) // 2]
        print(
            f"  batch {batch:>3}: numpy's default {base:8.2f} ms a move, "
            f"{BLAS_THREADS} BLAS thread {ours:8.2f} ms: {base / ours:5.1f}x (median of "
            f"{args.rounds})"
        )


if __name__ == "__main__":
    main()
