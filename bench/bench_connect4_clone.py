"""Connect four: `train-env --clone-teacher search:2` into a convolutional MaskablePPO
policy, then the connect4 preset's league stage, against the same league stage without
the lesson (docs/BENCHMARKS.md, "Cloning search:2 into a convolutional policy").

1. `clone`: a fresh `BoardCNN` policy learns ``--positions`` of `search:N`'s labelled
   positions for ``--epochs`` (the lesson, ``train/game_clone.py``), then trains 16
   timesteps against `random` (its checkpoint); `plain`: the same without the lesson.
2. Each `train-env --resume`s its checkpoint in the preset's league stage for
   ``--league-timesteps``.
3. The cloned bot and both final bots against `random` and `search:2` (seat-swapped
   pairs, sampled moves, as the gates play), with the wall times.

    python bench/bench_connect4_clone.py [--positions 40000] [--epochs 15]
        [--league-timesteps 100000] [--games 600] [--seed 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench_connect4_league import match, train

HYPERPARAMS = {
    "n_steps": 256,
    "batch_size": 512,
    "n_epochs": 5,
    "learning_rate": 0.0003,
    "ent_coef": 0.01,
    "gamma": 0.99,
    "policy_kwargs": {"net_arch": [256], "features_extractor_class": "BoardCNN"},
}
LEAGUE = [
    "--opponent-mode", "pool", "--pool-size", "8", "--snapshot-every", "25000",
    "--sampling", "pfsp", "--pfsp-weighting", "hard", "--league-bot", "search:2",
    "--league-bot", "search:1", "--league-bot-share", "0.6",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=40_000)
    parser.add_argument("--depth", type=int, default=2, help="the teacher's search:N")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--league-timesteps", type=int, default=100_000)
    parser.add_argument("--games", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="clone-"))
    for sub in ("bots", "logs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    trainer = ["--hyperparams", json.dumps(HYPERPARAMS), "--seed", str(args.seed)]
    lesson = [
        "--clone-teacher", f"search:{args.depth}", "--clone-positions", str(args.positions),
        "--clone-epochs", str(args.epochs),
    ]  # fmt: skip
    for arm, extra in (("clone", lesson), ("plain", [])):
        train(root, arm, 16, [*trainer, "--opponent-mode", "random", *extra], None)
        start = f"checkpoints/{arm}/final.zip"
        train(root, f"{arm}-league", args.league_timesteps, [*trainer, *LEAGUE], start)
    told = [
        line
        for line in (root / "logs/clone.log").read_text().splitlines()
        if line.startswith("clone ") and "done in" in line
    ]
    print(*told, sep="\n")
    for bot in ("bots/clone.json", "bots/clone-league.json", "bots/plain-league.json"):
        for reference in ("random", "search:2"):
            match(root, bot, reference, args.games)
    print(f"workspace: {root}")


if __name__ == "__main__":
    main()
