"""Training throughput of `cosmic-curriculum train-env` against rl-zoo3's `train.py`.

    .venv/bin/python bench/bench_env_train.py [--rounds 3] [--timesteps 10240]
        [--cases ppo-cartpole,a2c-cartpole] [--seed 0] [--sides ours,rl-zoo3 lean,...]
        [--before DIR]

Needs the ``bench`` extra (rl-zoo3). Side by side in one run, per case: the same env and
rl-zoo3's own tuned hyperparameters, read from the installed rl-zoo3's
``hyperparams/<algo>.yml`` (both sides 8 envs in a DummyVecEnv, MlpPolicy; a linear
schedule ``lin_X`` is passed as the constant X to both, as ``--hyperparams`` JSON cannot
name a schedule), each trained by a fresh process:

* ours: ``python -m cosmic_curriculum train-env EXP --timesteps N --env JSON --algo A
  --hyperparams JSON`` in a fresh workspace (its defaults: 1 torch thread, a step
  checkpoint every 10,000 timesteps, ``@progress`` lines, the final checkpoint and the
  env bot written at the end);
* rl-zoo3 as a user runs it: ``python -m rl_zoo3.train --algo a --env ID -n N --seed S
  -f LOGS -params ...`` (its defaults: torch's default threads, an evaluation of 5
  episodes every 25,000 timesteps, Monitor CSVs, a log table each iteration, the model
  and its config saved at the end);
* rl-zoo3 lean: the same with ``--num-threads 1 --eval-freq -1`` (our thread count, no
  evaluation during training).

Env steps/s are the timesteps each process reports it trained (rollouts round the
budget up alike) over two spans measured by this script from the child's output: the
whole process (start-up included: imports, env and model construction, saving), and the
training phase, from the line each prints once its model is built (ours: ``train-env
EXP: ...``; rl-zoo3: ``Log path: ...``) to the process's exit. ``--rounds`` repeats
every side, in a rotating order, interleaved; the table gives each side's median and
range, and the ratios are medians of the per-round ratios.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CASES = {"ppo-cartpole": ("ppo", "CartPole-v1"), "a2c-cartpole": ("a2c", "CartPole-v1")}
N_ENVS = 8  # train-env's make_vec_env(n_envs=8); the zoo entries used here say the same
NOT_ALGO_ARGS = ("n_envs", "n_timesteps", "policy")
SIDES = ("ours", "rl-zoo3 as run", "rl-zoo3 lean")


@dataclass(frozen=True)
class Run:
    timesteps: int
    total_s: float
    training_s: float
    cpu_s: float

    @property
    def total_rate(self) -> float:
        return self.timesteps / self.total_s

    @property
    def training_rate(self) -> float:
        return self.timesteps / self.training_s

    @property
    def cpu_rate(self) -> float:
        return self.timesteps / self.cpu_s


def zoo_hyperparams(algo: str, env_id: str) -> dict[str, Any]:
    """rl-zoo3's entry for ``env_id`` in its installed ``hyperparams/<algo>.yml``."""
    import rl_zoo3

    path = Path(rl_zoo3.__file__).parent / "hyperparams" / f"{algo}.yml"
    entry = dict(yaml.safe_load(path.read_text())[env_id])
    unsupported = {"normalize", "env_wrapper", "frame_stack", "policy_kwargs"} & set(entry)
    if unsupported or entry.get("n_envs", 1) != N_ENVS or entry.get("policy") != "MlpPolicy":
        sys.exit(
            f"{path}: {env_id} needs {sorted(unsupported) or entry.get('n_envs')}; this "
            f"benchmark compares entries of {N_ENVS} envs, MlpPolicy, without wrappers"
        )
    params = {k: v for k, v in entry.items() if k not in NOT_ALGO_ARGS}
    for key, value in params.items():
        if isinstance(value, str) and value.startswith("lin_"):
            params[key] = float(value[len("lin_") :])
    return params


def timed(
    argv: list[str], marker: str, cwd: Path, pythonpath: str | None = None
) -> tuple[float, float, float, str]:
    """Run ``argv``: wall seconds of the whole process, seconds from the first line
    holding ``marker`` to the exit, its CPU seconds (all threads, user + system) and
    the output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    seen: float | None = None
    lines: list[str] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if seen is None and marker in line:
                seen = time.perf_counter()
            lines.append(line)
    end = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    output = "".join(lines)
    if proc.returncode != 0 or seen is None:
        sys.exit(f"{' '.join(argv[:6])} ... exited {proc.returncode}:\n{output[-2000:]}")
    return end - start, end - seen, cpu, output


def rollout_total(algo: str, params: dict[str, Any], timesteps: int) -> int:
    """What both sides train for ``timesteps``: whole rollouts of ``n_steps`` x 8 envs."""
    import stable_baselines3

    default = inspect.signature(getattr(stable_baselines3, algo.upper())).parameters["n_steps"]
    rollout = int(params.get("n_steps", default.default)) * N_ENVS
    return -(-timesteps // rollout) * rollout


def run_ours(
    algo: str,
    env_id: str,
    params: dict[str, Any],
    args: Any,
    work: Path,
    k: int,
    pythonpath: str | None = None,
) -> Run:
    experiment = f"bench-{algo}-{k}"
    argv = [
        sys.executable, "-m", "cosmic_curriculum", "train-env", experiment,
        "--timesteps", str(args.timesteps), "--seed", str(args.seed),
        "--env", json.dumps({"kind": "gymnasium", "id": env_id}),
        "--algo", algo.upper(), "--hyperparams", json.dumps(params),
        "--workspace", str(work),
    ]  # fmt: skip
    total, training, cpu, output = timed(argv, f"train-env {experiment}:", work, pythonpath)
    done = re.search(rf"trained {experiment}: (\d+) timesteps", output)
    assert done is not None, output[-2000:]
    assert int(done.group(1)) == rollout_total(algo, params, args.timesteps), output[-500:]
    return Run(int(done.group(1)), total, training, cpu)


def run_zoo(
    algo: str, env_id: str, params: dict[str, Any], args: Any, work: Path, k: int, lean: bool
) -> Run:
    logs = work / f"zoo-{k}"
    overrides = [f"{k}:{v!r}" for k, v in params.items()]
    argv = [
        sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id,
        "-n", str(args.timesteps), "--seed", str(args.seed), "-f", str(logs),
        *(["--num-threads", "1", "--eval-freq", "-1"] if lean else []),
        "-params", *overrides,
    ]  # fmt: skip
    total, training, cpu, _ = timed(argv, "Log path:", work)
    # Its log table is printed every log_interval iterations, not at the end: the count
    # is SB3's rule, the same as ours (checked above against train-env's own line).
    return Run(rollout_total(algo, params, args.timesteps), total, training, cpu)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):>9,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timesteps", type=int, default=10_240)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sides",
        default=",".join(SIDES),
        help="which of the sides to run, comma-separated (rl-zoo3 as run is the slow one "
        "on a busy machine)",
    )
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="also run train-env from another checkout of the project (e.g. a `git "
        "archive` of an earlier commit), as the side 'ours before'",
    )
    args = parser.parse_args()
    import rl_zoo3
    import stable_baselines3
    import torch

    print(
        f"# train-env vs rl-zoo3 {rl_zoo3.__version__} ({platform.machine()}, {os.cpu_count()} "
        f"cores, python {platform.python_version()}, torch {torch.__version__}, "
        f"stable-baselines3 {stable_baselines3.__version__}), load average "
        f"{os.getloadavg()[0]:.1f}, {args.timesteps} timesteps, {args.rounds} rounds"
    )
    sides = tuple(s for s in args.sides.split(",") if s in SIDES) + (
        ("ours before",) if args.before else ()
    )
    if "ours" not in sides or len(sides) < 2:
        parser.error(f"--sides {args.sides!r}: name ours and at least one of {SIDES[1:]}")
    for case in args.cases.split(","):
        algo, env_id = CASES[case]
        params = zoo_hyperparams(algo, env_id)
        print(f"\n{case}: {env_id}, {algo.upper()} {json.dumps(params)}")
        runs: dict[str, list[Run]] = {side: [] for side in sides}
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            for r in range(args.rounds):
                order = sides[r % len(sides) :] + sides[: r % len(sides)]
                for k, side in enumerate(order, start=len(sides) * r):
                    if side == "ours":
                        run = run_ours(algo, env_id, params, args, work, k)
                    elif side == "ours before":
                        run = run_ours(algo, env_id, params, args, work, k, args.before)
                    else:
                        lean = side == "rl-zoo3 lean"
                        run = run_zoo(algo, env_id, params, args, work, k, lean)
                    runs[side].append(run)
                    print(
                        f"  round {r + 1} {side:<15} {run.timesteps} timesteps  "
                        f"{run.total_s:6.1f} s whole ({run.total_rate:7,.0f}/s)  "
                        f"{run.training_s:6.1f} s training ({run.training_rate:7,.0f}/s)  "
                        f"{run.cpu_s:6.1f} CPU s ({run.cpu_rate:7,.0f}/s)",
                        flush=True,
                    )
        spans = {
            "total_rate": "whole process",
            "training_rate": "training phase",
            "cpu_rate": "per CPU second",
        }
        print(f"  {'side':<16}" + "".join(f"{'steps/s, ' + v:>30}" for v in spans.values()))
        for side in sides:
            cells = [spread([getattr(x, what) for x in runs[side]]) for what in spans]
            print(f"  {side:<16}" + "".join(f"{c:>30}" for c in cells))
        for side in sides[1:]:
            for what, label in spans.items():
                ratios = [
                    getattr(a, what) / getattr(b, what)
                    for a, b in zip(runs["ours"], runs[side], strict=True)
                ]
                goal = "; goal >= 1.0x" if side.startswith("rl-zoo3") else ""
                print(
                    f"  ours / {side}, {label}: {statistics.median(ratios):.2f}x "
                    f"(rounds {min(ratios):.2f}–{max(ratios):.2f}{goal})"
                )


if __name__ == "__main__":
    main()
