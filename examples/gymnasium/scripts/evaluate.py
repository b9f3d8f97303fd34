"""An evaluation command for a Gymnasium env (docs/ENVIRONMENTS.md).

    python3 scripts/evaluate.py CANDIDATE REFERENCE --episodes N [--seed S]

Run in the workspace. Plays N episodes of the candidate's env (the `env` its bot file
records), each policy once per episode seed S, S+1, ...: on each seed the higher episode
return wins (equal: a draw). Appends one record to eval_history.json with the counts
(wins_a: candidate, wins_b: reference, draws, episodes) and the candidate's
`successes` (the last info["is_success"], else a return > 0) and `returns`; the
curriculum's gate judges them. It follows the contract's optional parts too: a policy
acts greedily unless COSMIC_CURRICULUM_EVAL_DETERMINISTIC=0 (then it samples), and for a
sequential gate each episode is streamed to COSMIC_CURRICULUM_EVAL_STREAM and the
evaluation stops early once COSMIC_CURRICULUM_EVAL_STOP exists. A bot file is
{"format": "sb3-ppo", "checkpoint": ..., "env": {...}} as scripts/train.py writes it,
or {"format": "random"} (uniformly random actions).
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


def policy(bot: dict[str, Any], env: Any, seed: int, deterministic: bool) -> Any:
    """observation -> action for ``bot`` in ``env``."""
    if bot["format"] == "random":
        env.action_space.seed(seed)
        return lambda _obs: env.action_space.sample()
    if bot["format"] == "sb3-ppo":
        from stable_baselines3 import PPO

        model = PPO.load(bot["checkpoint"], device="cpu")
        discrete = isinstance(env.action_space, gymnasium.spaces.Discrete)

        def act(obs: Any) -> Any:
            action = model.predict(obs, deterministic=deterministic)[0]
            return int(action) if discrete else action  # a Discrete env wants a plain int

        return act
    raise SystemExit(f"error: unknown bot format {bot['format']!r}")


def episode(env: Any, act: Any, seed: int) -> tuple[float, bool]:
    """The episode's return, and whether it succeeded."""
    obs, _ = env.reset(seed=seed)
    total, over, success = 0.0, False, None
    while not over:
        obs, reward, terminated, truncated, info = env.step(act(obs))
        total += float(reward)
        over = terminated or truncated
        if "is_success" in info:
            success = bool(info["is_success"])
    return total, total > 0.0 if success is None else success


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
    deterministic = os.environ.get("COSMIC_CURRICULUM_EVAL_DETERMINISTIC", "1") != "0"
    act_a = policy(candidate, env, args.seed, deterministic)
    act_b = policy(reference, env, args.seed, deterministic)
    stream = os.environ.get("COSMIC_CURRICULUM_EVAL_STREAM")
    stop = os.environ.get("COSMIC_CURRICULUM_EVAL_STOP")
    wins_a = wins_b = draws = successes = 0
    returns: list[float] = []
    for k in range(args.episodes):
        if stop and Path(stop).exists():  # the gate has decided on the episodes streamed
            break
        a, succeeded = episode(env, act_a, args.seed + k)
        b, _ = episode(env, act_b, args.seed + k)
        wins_a += a > b
        wins_b += b > a
        draws += a == b
        successes += succeeded
        returns.append(a)
        if stream:
            line = {"result": (a > b) - (b > a), "success": succeeded, "return": a}
            with open(stream, "a") as fh:
                fh.write(json.dumps(line) + "\n")
    record = {
        "candidate": args.candidate,
        "reference": args.reference,
        "wins_a": wins_a,
        "wins_b": wins_b,
        "draws": draws,
        "episodes": len(returns),
        "successes": successes,
        "returns": returns,
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
