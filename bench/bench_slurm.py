"""Overhead of the Slurm launcher: the quick curriculum through local processes and
through Slurm batch jobs on a private one-node cluster of this machine, side by side in
one run.

Usage: python bench/bench_slurm.py [--scale 0.05] [--repeats 1] [--keep DIR]
       python bench/bench_slurm.py --per-job 10   # each launcher's fixed cost of a job

Two fresh workspaces made by `cosmic-curriculum init --preset quick`, the real PPO
trainer and evaluations, every stage's ``timesteps`` multiplied by ``--scale`` (1 is the
preset itself, about 20 minutes an arm here; the default's tiny trainings make the fixed
cost per job weigh far more than it would). The local run goes first, then the Slurm one
(the cluster of tests/slurm_cluster.py: needs root and Debian's Slurm packages,
scripts/install_slurm.sh); with ``--repeats N`` the pair runs N times, the order swapped
every other time (a machine whose load drifts then favours neither), each in fresh
workspaces. Prints every wall time, the decisions and the ratio of the medians
(target <= 1.10).

``--per-job N`` measures instead what a job costs beyond its work, which a loaded
machine's noise hides in whole curricula: N times, a job that sleeps 2 s is started and
followed to its end (``watch``, as the curriculum does) by the local launcher and by the
Slurm launcher, alternately; prints each one's median seconds beyond the 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from slurm_cluster import PARTITION, cluster_problem, local_slurm_cluster  # noqa: E402


def scaled(text: str, scale: float) -> str:
    """stages.toml with every ``timesteps = N`` multiplied by ``scale``."""

    def one(m: re.Match[str]) -> str:
        return f"{m[1]}{max(1000, round(int(m[2].replace('_', '')) * scale))}"

    return re.sub(r"^(timesteps\s*=\s*)([\d_]+)", one, text, flags=re.MULTILINE)


def decisions(ws: Path) -> list[tuple[str, str]]:
    log = json.loads((ws / "curriculum_state.json").read_text())["log"]
    return [(entry["experiment"], entry["decision"]) for entry in log]


def arm(root: Path, name: str, scale: float, launcher: str, env: dict[str, str]) -> float:
    ws = root / name
    root.mkdir(parents=True, exist_ok=True)
    init = [sys.executable, "-m", "cosmic_curriculum", "init", str(ws), "--preset", "quick"]
    subprocess.run(init, check=True, capture_output=True)
    toml = ws / "stages.toml"
    toml.write_text(scaled(toml.read_text(), scale) + launcher)
    subprocess.run(["git", "-C", str(ws), "commit", "-qam", "bench settings"], check=True)
    start = time.monotonic()
    argv = [sys.executable, "-m", "cosmic_curriculum", "run", "--workspace", str(ws), "--no-push"]
    result = subprocess.run(argv, env=env, capture_output=True, text=True)
    took = time.monotonic() - start
    if result.returncode not in (0, 1):  # 1: a stage blocked, which is a result too
        raise SystemExit(f"{name} run failed: {result.stderr.strip()}")
    print(f"{name:>5}: {took:7.1f} s  {decisions(ws)}", flush=True)
    return took


SLEEP = 2.0  # the work of each --per-job job


def per_job(root: Path, repeats: int, cluster_env: dict[str, str]) -> None:
    from cosmic_curriculum.launchers import LaunchSpec, watch
    from cosmic_curriculum.launchers.local import LocalLauncher
    from cosmic_curriculum.launchers.slurm import SlurmLauncher
    from cosmic_curriculum.workspace.config import LauncherConfig

    os.environ["SLURM_CONF"] = cluster_env["SLURM_CONF"]
    slurm = SlurmLauncher(LauncherConfig.model_validate({"kind": "slurm", "partition": PARTITION}))
    launchers = {"local": LocalLauncher(), "slurm": slurm}
    extra: dict[str, list[float]] = {"local": [], "slurm": []}
    argv = [sys.executable, "-c", f"import time; time.sleep({SLEEP})"]
    for n in range(repeats):
        for name, launcher in launchers.items():
            spec = LaunchSpec(argv, root, root / f"{name}.log", launch_id=f"bench-{n}-{name}")
            start = time.monotonic()
            outcome = watch(launcher, launcher.start(spec))
            if outcome.returncode != 0:
                raise SystemExit(f"{name} job {n} ended {outcome.returncode}")
            extra[name].append(time.monotonic() - start - SLEEP)
    for name, seconds in extra.items():
        each = ", ".join(f"{t:.2f}" for t in seconds)
        print(f"{name}: {statistics.median(seconds):.2f} s beyond the {SLEEP:g} s job ({each})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.05, help="of every stage's timesteps")
    parser.add_argument("--repeats", type=int, default=1, help="pairs of runs")
    parser.add_argument("--per-job", type=int, metavar="N", help="each job's fixed cost, N times")
    parser.add_argument("--keep", type=Path, help="leave the workspaces in this dir")
    args = parser.parse_args()
    problem = cluster_problem()
    if problem:
        raise SystemExit(f"bench_slurm: the test cluster cannot start: {problem}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    root.mkdir(parents=True, exist_ok=True)
    if args.per_job:
        with local_slurm_cluster() as cluster:
            per_job(root, args.per_job, cluster.env())
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
        return 0
    times: dict[str, list[float]] = {"local": [], "slurm": []}
    same = True
    with local_slurm_cluster() as cluster:
        table = f'\n[launcher]\nkind = "slurm"\npartition = "{PARTITION}"\ngres = "gpu:1"\n'
        arms = {"local": ("", dict(os.environ)), "slurm": (table, cluster.env())}
        for n in range(args.repeats):
            order = ["local", "slurm"] if n % 2 == 0 else ["slurm", "local"]
            for name in order:
                launcher, env = arms[name]
                times[name].append(arm(root / str(n), name, args.scale, launcher, env))
            same = same and decisions(root / str(n) / "local") == decisions(root / str(n) / "slurm")
    attempts = len(decisions(root / "0" / "local"))
    t_local, t_slurm = statistics.median(times["local"]), statistics.median(times["slurm"])
    print(f"quick preset x {args.scale:g} timesteps, real PPO trainer, {attempts} attempts")
    for name, median in (("local", t_local), ("slurm", t_slurm)):
        each = ", ".join(f"{t:.1f}" for t in times[name])
        print(f"{name} launcher: {median:7.1f} s  (median of {each})")
    print(f"same decisions: {same}")
    print(f"ratio slurm/local: {t_slurm / t_local:.3f}")
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
