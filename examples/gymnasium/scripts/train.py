"""A training command for a Gymnasium env (docs/ENVIRONMENTS.md): stable-baselines3 PPO.

    python3 scripts/train.py EXPERIMENT --timesteps N --env JSON [--resume CKPT] [--seed K]
        [--learning-rate LR] [--n-steps N]

Run in the workspace. Leaves checkpoints/EXPERIMENT/final.zip and bots/EXPERIMENT.json.
``--timesteps`` is the stage's total: continuing its own crashed attempt (``--resume
checkpoints/EXPERIMENT/step_N.zip``) trains what is left; a warm start from another
experiment's checkpoint trains all of it. SIGTERM/SIGINT: save a step checkpoint, exit
128 + signal. Any argument it does not know is an error (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import gymnasium
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback

CHECKPOINT_EVERY = 10_000  # timesteps between step_<n>.zip
KEEP = 2  # step checkpoints kept


def make_env(spec: dict[str, Any]) -> gymnasium.Env[Any, Any]:
    """The env of an `--env` spec: imports, gymnasium.make(id, **kwargs), the wrappers."""
    for module in spec["imports"]:
        importlib.import_module(module)
    env = gymnasium.make(spec["id"], **spec["kwargs"])
    for wrapper in spec["wrappers"]:
        module, _, name = wrapper["call"].partition(":")
        target: Any = importlib.import_module(module)
        for part in name.split("."):
            target = getattr(target, part)
        env = target(env, **wrapper["kwargs"])
    return env


def write_json(path: Path, data: Any) -> None:
    """Atomically: the curriculum may read the file at any time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


class Periodic(BaseCallback):
    """Step checkpoints, progress lines, and a clean stop on a signal."""

    def __init__(self, directory: Path, total: int) -> None:
        super().__init__()
        self.directory, self.total = directory, total
        self.stop_signal: int | None = None
        self.last_save = 0

    def save_step(self) -> Path:
        path = self.directory / f"step_{self.model.num_timesteps}.zip"
        self.model.save(path)
        steps = sorted(self.directory.glob("step_*.zip"), key=lambda p: int(p.stem[5:]))
        for old in steps[:-KEEP]:
            old.unlink()
        return path

    def _on_step(self) -> bool:
        if self.stop_signal is not None:
            return False
        if self.model.num_timesteps - self.last_save >= CHECKPOINT_EVERY:
            self.last_save = self.model.num_timesteps
            self.save_step()
            line = {"timesteps": int(self.model.num_timesteps), "total": self.total}
            print("@progress " + json.dumps(line), flush=True)
        return True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="train.py")
    parser.add_argument("experiment")
    parser.add_argument("--timesteps", type=int, required=True)
    parser.add_argument("--env", required=True, help="the stage's env spec as JSON")
    parser.add_argument("--resume")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--n-steps", type=int, default=512)
    args = parser.parse_args(argv)  # strict: an unknown argument exits 2

    spec = json.loads(args.env)
    env = make_env(spec)
    directory = Path("checkpoints") / args.experiment
    directory.mkdir(parents=True, exist_ok=True)
    continued = args.resume is not None and Path(args.resume).parent == directory
    if args.resume is not None:
        # Continuation keeps the count (train what is left); a warm start begins a new one.
        model = PPO.load(args.resume, env=env, device="cpu")
        model.set_random_seed(args.seed)
    else:
        model = PPO(
            "MlpPolicy",
            env,
            learning_rate=args.learning_rate,
            n_steps=args.n_steps,
            batch_size=64,
            seed=args.seed,
            device="cpu",
            verbose=0,
        )
    done = int(model.num_timesteps) if continued else 0
    left = max(0, args.timesteps - done)
    print(f"training {args.experiment}: {left} of {args.timesteps} timesteps on {spec['id']}")

    callback = Periodic(directory, args.timesteps)
    callback.last_save = done

    def stop(signum: int, _frame: object) -> None:
        callback.stop_signal = signum

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    model.learn(total_timesteps=left, callback=callback, reset_num_timesteps=not continued)
    if callback.stop_signal is not None:
        print(f"stopped by signal {callback.stop_signal}: saved {callback.save_step()}")
        return 128 + callback.stop_signal

    final = directory / "final.zip"
    model.save(final)
    # What the evaluator needs to play this bot: its checkpoint and the env it learned.
    bot = {
        "format": "sb3-ppo",
        "checkpoint": str(final),
        "env": spec,
        "timesteps": int(model.num_timesteps),
        "resumed_from": args.resume,
    }
    write_json(Path("bots") / f"{args.experiment}.json", bot)
    print(f"trained {args.experiment}: {model.num_timesteps} timesteps, {final}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
