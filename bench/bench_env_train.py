"""Training throughput of `cosmic-curriculum train-env` against rl-zoo3's `train.py`.

    .venv/bin/python bench/bench_env_train.py [--rounds 3] [--timesteps N]
        [--cases ppo-cartpole,a2c-cartpole,ppo-mountaincar,sac-pendulum] [--seed 0]
        [--sides ours,rl-zoo3 lean,...] [--before DIR]

Needs the ``bench`` extra (rl-zoo3). Per case, one env and one entry of the installed
rl-zoo3's ``hyperparams/<algo>.yml``, trained side by side by fresh processes, both sides
given that entry whole (``lin_`` schedules, ``normalize``, ``n_envs``, ``policy``,
``policy_kwargs``) and each reading it its own way:

* ours, as a curriculum stage runs it: a ``stages.toml`` in a fresh workspace whose
  ``[trainer]`` names the algorithm and ``hyperparams_file = <that yml>`` (the entry: the
  env id), turned into train-env's argv by the project's own code (the stage's trainer,
  read by its zoo reader, and the launch's argv), i.e. ``python -m cosmic_curriculum
  train-env EXP --timesteps N --env JSON --algo A --n-envs E [--policy P]
  [--hyperparams JSON] [--normalize JSON] --seed S`` (an entry without ``n_envs`` is the
  zoo's 1 env there too). train-env's defaults: 1 torch thread, a step checkpoint every
  10,000 timesteps, ``@progress`` lines, the final checkpoint and the env bot written at
  the end;
* rl-zoo3 as a user runs it: ``python -m rl_zoo3.train --algo a --env ID -n N --seed S
  -f LOGS`` (its defaults: its own file's entry, torch's default threads, an evaluation of
  5 episodes every 25,000 timesteps, Monitor CSVs, a log table, the model, its config and
  any VecNormalize statistics saved at the end);
* rl-zoo3 lean: the same with ``--num-threads 1 --eval-freq -1`` (our thread count, no
  evaluation during training).

Env steps/s are the timesteps each process trained (whole rollouts on both sides: SB3's
rule, checked against train-env's own count) over three measures taken by this script:
the whole process (start-up included: imports, env and model construction, saving), the
training phase, from the line each prints once its model is built (ours: ``train-env
EXP: ...``; rl-zoo3: ``Log path: ...``) to the process's exit, and its CPU seconds.
``--rounds`` repeats every side, in a rotating order, interleaved; the table gives each
side's median and range, and the ratios are medians of the per-round ratios.

The cases: CartPole-v1 with PPO (``lin_`` schedules) and A2C, MountainCar-v0 with PPO
(``normalize: true``: VecNormalize, 16 envs) and Pendulum-v1 with SAC (off-policy, 1 env).
The zoo's Pendulum entries for PPO and A2C set ``use_sde``, which an env bot cannot replay:
train-env refuses them (at the export) and they are not cases here.
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

# case: (algo, env id, default --timesteps: a minute or two a side on 2 busy cores)
CASES = {
    "ppo-cartpole": ("ppo", "CartPole-v1", 10_240),
    "a2c-cartpole": ("a2c", "CartPole-v1", 10_240),
    "ppo-mountaincar": ("ppo", "MountainCar-v0", 40_960),  # VecNormalize, 16 envs
    "sac-pendulum": ("sac", "Pendulum-v1", 3_000),  # off-policy, 1 env
}
ON_POLICY = ("ppo", "a2c")
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


def zoo_file(algo: str) -> Path:
    """The installed rl-zoo3's ``hyperparams/<algo>.yml``: the file both sides read."""
    import rl_zoo3

    return Path(rl_zoo3.__file__).parent / "hyperparams" / f"{algo}.yml"


def zoo_raw_entry(algo: str, env_id: str) -> dict[str, Any]:
    return dict(yaml.safe_load(zoo_file(algo).read_text())[env_id])


def stage_workspace(algo: str, env_id: str, timesteps: int, work: Path) -> Path:
    """A workspace whose one stage trains ``env_id`` from rl-zoo3's entry, as a user
    writes it: ``[trainer] algo`` and ``hyperparams_file``, nothing else."""
    root = work / f"ws-{algo}-{env_id}"
    root.mkdir(exist_ok=True)
    zoo = json.dumps(str(zoo_file(algo)))
    (root / "stages.toml").write_text(
        f'[env]\nkind = "gymnasium"\nid = "{env_id}"\n\n[defaults]\ntimesteps = {timesteps}'
        f'\n\n[trainer]\nalgo = "{algo.upper()}"\nhyperparams_file = {zoo}\n'
        '\n[[stages]]\nname = "bench"\n'
    )
    return root


def ours_argv(root: Path, experiment: str, seed: int) -> tuple[list[str], Any]:
    """train-env's argv for the workspace's stage, built by the code `run` launches it
    with (the stage's trainer through the zoo reader), and that trainer."""
    from cosmic_curriculum.curriculum.context import Run as CurriculumRun
    from cosmic_curriculum.curriculum.context import RunOptions
    from cosmic_curriculum.curriculum.launch import training_argv
    from cosmic_curriculum.workspace.config_file import load_config
    from cosmic_curriculum.workspace.stage_trainer import stage_trainer
    from cosmic_curriculum.workspace.state import Attempt

    run = CurriculumRun(RunOptions(workspace=root))
    run.config = load_config(root / "stages.toml")
    flight = Attempt(stage_index=0, attempt=0, experiment=experiment)
    return training_argv(run, flight, None, seed=seed), stage_trainer(run.config, 0, root)


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


def trained_total(algo: str, hyperparams: dict[str, Any], n_envs: int, timesteps: int) -> int:
    """What SB3 trains for ``timesteps``: whole rollouts of ``n_steps`` x n_envs (PPO,
    A2C), or whole vector steps (an off-policy algorithm collecting one step at a time)."""
    import stable_baselines3

    if algo in ON_POLICY:
        default = inspect.signature(getattr(stable_baselines3, algo.upper())).parameters
        rollout = int(hyperparams.get("n_steps", default["n_steps"].default)) * n_envs
    else:
        assert hyperparams.get("train_freq", 1) == 1, hyperparams
        rollout = n_envs
    return -(-timesteps // rollout) * rollout


def run_ours(
    root: Path, experiment: str, seed: int, expected: int, pythonpath: str | None = None
) -> Run:
    argv, _ = ours_argv(root, experiment, seed)
    total, training, cpu, output = timed(argv, f"train-env {experiment}:", root, pythonpath)
    done = re.search(rf"trained {experiment}: (\d+) timesteps", output)
    assert done is not None, output[-2000:]
    assert int(done.group(1)) == expected, (expected, output[-500:])
    return Run(int(done.group(1)), total, training, cpu)


def run_zoo(
    algo: str,
    env_id: str,
    timesteps: int,
    seed: int,
    work: Path,
    k: int,
    lean: bool,
    expected: int,
) -> Run:
    logs = work / f"zoo-{k}"
    argv = [
        sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id,
        "-n", str(timesteps), "--seed", str(seed), "-f", str(logs),
        *(["--num-threads", "1", "--eval-freq", "-1"] if lean else []),
    ]  # fmt: skip
    total, training, cpu, _ = timed(argv, "Log path:", work)
    # Its log table is printed every log_interval iterations, not at the end: the count
    # is SB3's rule, the same as ours (checked against train-env's own line).
    return Run(expected, total, training, cpu)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):>9,.0f} ({min(values):,.0f}–{max(values):,.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--timesteps", type=int, help="the budget of every case (default: each case's own)"
    )
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
        f"{os.getloadavg()[0]:.1f}, {args.rounds} rounds"
    )
    sides = tuple(s for s in args.sides.split(",") if s in SIDES) + (
        ("ours before",) if args.before else ()
    )
    if "ours" not in sides or len(sides) < 2:
        parser.error(f"--sides {args.sides!r}: name ours and at least one of {SIDES[1:]}")
    for case in args.cases.split(","):
        algo, env_id, default_budget = CASES[case]
        timesteps = args.timesteps or default_budget
        runs: dict[str, list[Run]] = {side: [] for side in sides}
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            root = stage_workspace(algo, env_id, timesteps, work)
            argv, trainer = ours_argv(root, "EXP", args.seed)
            expected = trained_total(algo, trainer.hyperparams, trainer.n_envs, timesteps)
            print(
                f"\n{case}: {env_id}, {timesteps} timesteps ({expected} trained), rl-zoo3's "
                f"entry {json.dumps(zoo_raw_entry(algo, env_id))}\n  ours: train-env EXP "
                + " ".join(argv[argv.index("--timesteps") :]),
                flush=True,
            )
            for r in range(args.rounds):
                order = sides[r % len(sides) :] + sides[: r % len(sides)]
                for k, side in enumerate(order, start=len(sides) * r):
                    experiment = f"bench-{algo}-{k}"
                    if side == "ours":
                        run = run_ours(root, experiment, args.seed, expected)
                    elif side == "ours before":
                        run = run_ours(root, experiment, args.seed, expected, args.before)
                    else:
                        lean = side == "rl-zoo3 lean"
                        run = run_zoo(algo, env_id, timesteps, args.seed, work, k, lean, expected)
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
