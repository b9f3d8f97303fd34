"""Connect four: clone `search:2`'s moves into a convolutional MaskablePPO policy, then
train it in the preset's league (a prototype for the connect4 preset's goals, not yet a
trainer option; docs/BENCHMARKS.md, "Cloning search:2 into a convolutional policy").

1. Positions from games between copies of the teacher (`search:N`) that play a random
   legal move with a chance drawn per game from [0, 0.6); each position labelled with
   every move the teacher scores best (``Search.best_moves``), ties spread evenly.
2. A fresh `BoardCNN` MaskablePPO policy (a 16-timestep `train-env` for its checkpoint)
   trained on them by cross-entropy, 90% of the positions; the first choice's share of
   best moves on the held-out 10% with a win to take or a loss to block is printed.
3. `train-env --resume` that checkpoint in the preset's league stage for
   ``--league-timesteps``; the cloned bot and the final bot against `random` and
   `search:2` (seat-swapped pairs, sampled moves, as the gates play).

    python bench/bench_connect4_clone.py [--positions 40000] [--epochs 15]
        [--league-timesteps 100000] [--games 600] [--seed 1] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from bench_connect4_league import match, train

from cosmic_curriculum.envs.game_search import Search
from cosmic_curriculum.envs.pettingzoo import game_info, game_over, make_game, split_observation
from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.train.game_run import game_bot
from cosmic_curriculum.workspace.env_config import EnvSpec

SPEC = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.connect_four_v3")
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


def label(count: int, depth: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(observations, masks, targets) of ``count`` positions, as the policy sees them."""
    info = game_info(SPEC)
    teacher, rng, game = Search(info, depth), np.random.default_rng(seed), make_game(SPEC)
    seen, masks, targets = [], [], []
    while len(seen) < count:
        game.reset(seed=int(rng.integers(2**31)))
        noise = rng.uniform(0.0, 0.6)
        while not game_over(game):
            obs, mask = split_observation(game.observe(game.agent_selection), info)
            best = teacher.best_moves(game)
            target = np.zeros(int(info.action_space.n), np.float32)
            target[best] = 1.0 / len(best)
            seen.append(np.asarray(obs, np.float32))
            masks.append(np.asarray(mask, bool))
            targets.append(target)
            legal = np.flatnonzero(mask)
            game.step(int(rng.choice(legal if rng.random() < noise else best)))
    game.close()
    return np.stack(seen), np.stack(masks), np.stack(targets)


def clone(checkpoint: Path, data: tuple[np.ndarray, ...], epochs: int, seed: int) -> Any:
    """The checkpoint's MaskablePPO with its policy trained on ``data``; prints the held-out
    share of best first choices where not every move is best."""
    import torch
    from sb3_contrib import MaskablePPO

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    obs, mask, target = (torch.as_tensor(a) for a in data)
    model = MaskablePPO.load(checkpoint, device="cpu")
    policy = model.policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    held = len(obs) // 10
    train_rows = torch.arange(held, len(obs))

    def logits(rows: torch.Tensor) -> torch.Tensor:
        dist = policy.get_distribution(obs[rows], action_masks=mask[rows].numpy())
        return dist.distribution.logits

    for _ in range(epochs):
        order = train_rows[torch.randperm(len(train_rows))]
        for i in range(0, len(order), 256):
            rows = order[i : i + 256]
            log_p = torch.log_softmax(logits(rows), -1).clamp(min=-1e4)
            loss = -(target[rows] * log_p).sum(-1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        rows = torch.arange(held)
        first = logits(rows).argmax(-1, keepdim=True)
        right = (target[rows].gather(1, first) > 0)[:, 0]
        critical = (target[rows] > 0).sum(-1) < mask[rows].sum(-1)
    share = float(right[critical].float().mean())
    print(f"cloned: {share:.3f} best first choices on {int(critical.sum())} held-out positions")
    return model


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
    start = time.monotonic()
    data = label(args.positions, args.depth, args.seed + 10)
    print(f"labelled {len(data[0])} positions in {time.monotonic() - start:.0f} s", flush=True)
    trainer = ["--hyperparams", json.dumps(HYPERPARAMS), "--seed", str(args.seed)]
    train(root, "init", 16, [*trainer, "--opponent-mode", "random"], None)
    start = time.monotonic()
    model = clone(root / "checkpoints/init/final.zip", data, args.epochs, args.seed)
    model.save(root / "clone.zip")
    save_env_bot(game_bot(model, SPEC, game_info(SPEC)), root / "bots/clone.json")
    print(f"cloned in {time.monotonic() - start:.0f} s", flush=True)
    train(root, "league", args.league_timesteps, [*trainer, *LEAGUE], "clone.zip")
    for bot in ("bots/clone.json", "bots/league.json"):
        for reference in ("random", "search:2"):
            match(root, bot, reference, args.games)
    print(f"workspace: {root}")


if __name__ == "__main__":
    main()
