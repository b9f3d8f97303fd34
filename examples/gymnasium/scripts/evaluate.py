"""An evaluation command for a Gymnasium env (docs/ENVIRONMENTS.md).

    python3 scripts/evaluate.py CANDIDATE REFERENCE --episodes N [--seed S]

Run in the workspace. Plays N episodes of the candidate's env (the `env` its bot file
records), each policy once per episode seed S, S+1, ...: on each seed the higher episode
return wins (equal: a draw). Appends one record to eval_history.json with the counts
(wins_a: candidate, wins_b: reference, draws, episodes); the curriculum's gate judges
them. A bot file is {"format": "sb3-ppo", "checkpoint": ..., "env": {...}} as
scripts/train.py writes it, or {"format": "random"} (uniformly random actions).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium
from train import make_env

HISTORY = Path("eval_history.json")


def policy(bot: dict[str, Any], env: Any, seed: int) -> Any:
    """observation -> action for ``bot`` in ``env``."""
    if bot["format"] == "random":
        env.action_space.seed(seed)
        return lambda _obs: env.action_space.sample()
    if bot["format"] == "sb3-ppo":
        from stable_baselines3 import PPO

        model = PPO.load(bot["checkpoint"], device="cpu")
        discrete = isinstance(env.action_space, gymnasium.spaces.Discrete)

        def act(obs: Any) -> Any:
            action = model.predict(obs, deterministic=True)[0]
            return int(action) if discrete else action  # a Discrete env wants a plain int

        return act
    raise SystemExit(f"error: unknown bot format {bot['format']!r}")


def episode_return(env: Any, act: Any, seed: int) -> float:
    obs, _ = env.reset(seed=seed)
    total, over = 0.0, False
    while not over:
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        total += float(reward)
        over = terminated or truncated
    return total


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="evaluate.py")
    parser.add_argument("candidate")
    parser.add_argument("reference")
    parser.add_argument("--episodes", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    candidate = json.loads(Path(args.candidate).read_text())
    reference = json.loads(Path(args.reference).read_text())
    env = make_env(candidate["env"])  # the stage being gated is the candidate's
    act_a = policy(candidate, env, args.seed)
    act_b = policy(reference, env, args.seed)
    wins_a = wins_b = draws = 0
    for k in range(args.episodes):
        a = episode_return(env, act_a, args.seed + k)
        b = episode_return(env, act_b, args.seed + k)
        wins_a += a > b
        wins_b += b > a
        draws += a == b
    record = {
        "candidate": args.candidate,
        "reference": args.reference,
        "wins_a": wins_a,
        "wins_b": wins_b,
        "draws": draws,
        "episodes": args.episodes,
        "seed": args.seed,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    records = json.loads(HISTORY.read_text()) if HISTORY.exists() else []
    records.append(record)
    tmp = HISTORY.with_name(f".{HISTORY.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(records, indent=2) + "\n")
    os.replace(tmp, HISTORY)
    print(f"{args.candidate} vs {args.reference}: {wins_a}-{wins_b}, {draws} draws")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
