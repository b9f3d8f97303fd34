"""Scaling with K candidates per attempt: wall time on a 4-"GPU" Ray cluster, and the
blocking rate, when each candidate passes with probability p.

Usage: python bench/bench_scaling.py [--p 0.5] [--seeds 2] [--blocking-runs 40]
                                     [--steps 10] [--step-seconds 0.5]

Two parts, both with the fake trainer and evaluator of tests/ and the real
`cosmic-curriculum run`:

1. Wall time. A one-node Ray cluster on this machine declares 4 fake GPUs; each training
   asks for one (and no CPU, so the 2 real cores do not cap the fake GPUs). A 4-stage
   curriculum (max_retries = 2) runs with K = 1, 2 and 4 candidates; every training
   sleeps ``steps x step-seconds`` like a real one. Whether a candidate is good is drawn
   once per (seed, stage, attempt, k) with probability p, the same draws for every K
   (K = 2 sees candidates 1-2 of K = 4's), so the arms differ only in K. A good candidate
   passes its evaluations, a bad one fails them. A stage that blocks is counted and then
   skipped (`--skip-to-next-stage`), so every curriculum reaches its end.
2. Blocking rate. One-stage curricula with the local launcher (max_parallel = K) and
   near-instant trainings, ``--blocking-runs`` of them per K: the share that blocked,
   next to the exact value (1 - p) ** (K * (max_retries + 1)).

Prints both tables (docs/SCALING.md records them).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes.workspace import cli_env, fake_env, make_workspace, run_argv  # noqa: E402
from raycluster import local_ray_cluster  # noqa: E402

STAGES = ["score", "defend", "no_draws", "mechanics"]
MAX_RETRIES = 2
KS = (1, 2, 4)


def experiment(i: int, stage: str, attempt: int, k: int, K: int) -> str:
    name = f"curric-s{i + 1}-{stage}" + (f"-retry{attempt}" if attempt else "")
    return f"{name}-c{k}" if K > 1 else name


def outcomes(stages: list[str], K: int, p: float, seed: int) -> dict[str, str]:
    """The evaluator's script: every experiment the curriculum may train, pass or fail."""
    rng = random.Random(seed)
    draws = {
        (i, a, k): rng.random() < p
        for i in range(len(stages))
        for a in range(MAX_RETRIES + 1)
        for k in range(1, max(KS) + 1)
    }
    return {
        experiment(i, stage, a, k, K): "pass" if draws[i, a, k] else "fail"
        for i, stage in enumerate(stages)
        for a in range(MAX_RETRIES + 1)
        for k in range(1, K + 1)
    }


def workspace(
    path: Path, stages: list[str], K: int, script: dict[str, object], evals: dict[str, str]
) -> Path:
    ws = make_workspace(
        path, stages=stages, max_retries=MAX_RETRIES, trainer_script=script, eval_script=evals
    )
    with open(ws / "stages.toml", "r+") as fh:
        text = fh.read()
        fh.seek(0)
        fh.write(f"candidates = {K}\n{text}")
    return ws


def add_ray(ws: Path, address: str) -> None:
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in fake_env(ws).items())
    with open(ws / "stages.toml", "a") as fh:
        fh.write(
            f'\n[launcher]\nkind = "ray"\naddress = "{address}"\nnum_gpus = 1\nnum_cpus = 0\n'
            f"\n[launcher.env]\n{table}\n"
        )


def run_through(ws: Path) -> tuple[float, int]:
    """Run the curriculum to its end, skipping each blocked stage: (seconds, blocks)."""
    blocks = 0
    start = time.monotonic()
    flags: tuple[str, ...] = ()
    while True:
        result = subprocess.run(run_argv(ws, *flags), env=cli_env(ws), capture_output=True)
        if result.returncode == 0:
            return time.monotonic() - start, blocks
        state = json.loads((ws / "curriculum_state.json").read_text())
        if result.returncode != 1 or state["status"] != "blocked":
            raise SystemExit(f"run failed in {ws}: {result.stderr.decode().strip()}")
        blocks += 1
        flags = ("--skip-to-next-stage", "--reason", "bench: counted as a block")


def trainings(ws: Path) -> int:
    runs = ws / "fake_runs.jsonl"
    lines = runs.read_text().splitlines() if runs.exists() else []
    return sum(json.loads(line)["event"] == "start" for line in lines)


def wall_time_table(root: Path, args: argparse.Namespace) -> None:
    script = {"*": {"steps": args.steps, "step_seconds": args.step_seconds}}
    rows: dict[int, list[tuple[float, int, int]]] = {K: [] for K in KS}
    with local_ray_cluster() as address:
        for seed in range(args.seeds):
            for K in KS:
                evals = outcomes(STAGES, K, args.p, seed)
                ws = workspace(root / f"ray-s{seed}-k{K}", STAGES, K, script, evals)
                add_ray(ws, address)
                seconds, blocks = run_through(ws)
                rows[K].append((seconds, blocks, trainings(ws)))
                print(f"  seed {seed} K={K}: {seconds:6.1f} s, {blocks} blocked", flush=True)
    training = args.steps * args.step_seconds
    print(
        f"\n4 stages, max_retries {MAX_RETRIES}, p = {args.p}, trainings of {training:g} s, "
        f"Ray with 4 fake GPUs, {args.seeds} seeds (same draws for every K)"
    )
    print("| K | wall time (mean) | vs K = 1 | stages blocked | trainings run |")
    print("|---|---|---|---|---|")
    base = statistics.mean(r[0] for r in rows[1])
    for K in KS:
        wall = statistics.mean(r[0] for r in rows[K])
        blocked = sum(r[1] for r in rows[K])
        trained = sum(r[2] for r in rows[K])
        stages = len(STAGES) * args.seeds
        print(f"| {K} | {wall:.1f} s | {wall / base:.2f}x | {blocked}/{stages} | {trained} |")


def blocking_table(root: Path, args: argparse.Namespace) -> None:
    script = {"*": {"steps": 1, "step_seconds": 0.0}}
    print(
        f"\nblocking rate: one-stage curricula, max_retries {MAX_RETRIES}, p = {args.p}, "
        f"{args.blocking_runs} runs per K, local launcher"
    )
    print("| K | blocked (measured) | exact (1 - p)^(K (R + 1)) |")
    print("|---|---|---|")
    for K in KS:
        blocked = 0
        for n in range(args.blocking_runs):
            evals = outcomes(["only"], K, args.p, 1000 + n)
            ws = workspace(root / f"block-k{K}-{n}", ["only"], K, script, evals)
            result = subprocess.run(run_argv(ws), env=cli_env(ws), capture_output=True)
            if result.returncode not in (0, 1):
                raise SystemExit(f"run failed in {ws}: {result.stderr.decode().strip()}")
            blocked += result.returncode == 1
            shutil.rmtree(ws, ignore_errors=True)
        exact = (1 - args.p) ** (K * (MAX_RETRIES + 1))
        share = blocked / args.blocking_runs
        print(f"| {K} | {blocked}/{args.blocking_runs} = {share:.3f} | {exact:.4f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=float, default=0.5, help="a candidate's pass probability")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--blocking-runs", type=int, default=40)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--step-seconds", type=float, default=0.5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    try:
        wall_time_table(root, args)
        blocking_table(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
