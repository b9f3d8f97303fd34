"""Overhead of the Ray launcher: one curriculum through local processes and through Ray
Jobs on a one-node cluster of this machine, side by side in one run.

Usage: python bench/bench_ray.py [--stages 4] [--steps 20] [--step-seconds 0.5]
       python bench/bench_ray.py --quick   # the real quick curriculum, about 30 minutes

The fake trainer of tests/ sleeps like a real one (steps x step-seconds per attempt), so
what differs is only how a training is started, followed and finished. ``--quick`` runs
the quick preset's four stages with the real PPO trainer instead, in two fresh workspaces
made by `cosmic-curriculum init --preset quick`, one after the other (the target is
<= 1.10 there; with short fake trainings the fixed cost per job weighs more). Prints
both wall times and the ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes.workspace import cli_env, fake_env, make_workspace, run_argv  # noqa: E402
from raycluster import local_ray_cluster  # noqa: E402


def timed_run(ws: Path) -> float:
    start = time.monotonic()
    result = subprocess.run(run_argv(ws), env=cli_env(ws), capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"run failed in {ws}: {result.stderr.strip()}")
    return time.monotonic() - start


def ray_table(address: str, env: dict[str, str]) -> str:
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    return f'\n[launcher]\nkind = "ray"\naddress = "{address}"\n\n[launcher.env]\n{table}\n'


def quick(root: Path, address: str) -> tuple[float, float, bool]:
    """The quick preset through the local launcher, then through Ray: (local s, ray s,
    same decisions)."""
    times = {}
    for arm in ("local", "ray"):
        ws = root / arm
        subprocess.run(
            [sys.executable, "-m", "cosmic_curriculum", "init", str(ws), "--preset", "quick"],
            check=True,
            capture_output=True,
        )
        if arm == "ray":
            with open(ws / "stages.toml", "a") as fh:
                fh.write(ray_table(address, {}))
        start = time.monotonic()
        result = subprocess.run(run_argv(ws), capture_output=True, text=True)
        times[arm] = time.monotonic() - start
        if result.returncode not in (0, 1):  # 1: a stage blocked, which is a result too
            raise SystemExit(f"{arm} run failed: {result.stderr.strip()}")
        print(f"{arm:>5}: {times[arm]:7.1f} s  {decisions(ws)}", flush=True)
    return times["local"], times["ray"], decisions(root / "local") == decisions(root / "ray")


def decisions(ws: Path) -> list[tuple[str, str]]:
    log = json.loads((ws / "curriculum_state.json").read_text())["log"]
    return [(entry["experiment"], entry["decision"]) for entry in log]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--step-seconds", type=float, default=0.5)
    parser.add_argument("--quick", action="store_true", help="the real quick curriculum")
    parser.add_argument("--keep", type=Path, help="--quick: leave the workspaces in this dir")
    args = parser.parse_args()
    if args.quick:
        root = args.keep or Path(tempfile.mkdtemp(prefix="bench-ray-quick-"))
        with local_ray_cluster() as address:
            t_local, t_ray, same = quick(root, address)
        print("quick preset, real PPO trainer, 4 stages")
        print(f"local launcher: {t_local:7.1f} s")
        print(f"ray launcher:   {t_ray:7.1f} s   (same decisions: {same})")
        print(f"ratio ray/local: {t_ray / t_local:.3f}")
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
        return 0
    names = [f"s{i}" for i in range(args.stages)]
    script = {"*": {"steps": args.steps, "step_seconds": args.step_seconds}}
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    with local_ray_cluster() as address:
        local = make_workspace(root / "local", stages=names, trainer_script=script)
        remote = make_workspace(root / "ray", stages=names, trainer_script=script)
        with open(remote / "stages.toml", "a") as fh:
            fh.write(ray_table(address, fake_env(remote)))
        t_local = timed_run(local)
        t_ray = timed_run(remote)
        same = decisions(local) == decisions(remote)
        print(f"stages {args.stages}, {args.steps} x {args.step_seconds:g} s of training each")
        print(f"local launcher: {t_local:7.1f} s")
        print(f"ray launcher:   {t_ray:7.1f} s   (same decisions: {same})")
        print(f"ratio ray/local: {t_ray / t_local:.3f}")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
