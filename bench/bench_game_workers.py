"""A game's seats stepped in this process (``--vec-env dummy``) against worker processes
(``--vec-env subproc``, one a usable core), side by side: whole ``train-env`` trainings of
connect four (the connect4 preset's MaskablePPO and network, 8 seats), alternating arms
each round so both see the same machine; the opponents of one of the ``--case`` rows:

- ``league``: the preset's league stage (a PFSP pool of snapshots, search:2 and search:1
  60% of the games);
- ``random``: uniform legal moves (cheap opponents);
- ``search4``: ``bot:search:4`` (an opponent of tens of milliseconds a move).

Prints each arm's steps a second (the trainer's own, from its last ``@progress`` line:
the workers' start-up is not in it) and wall seconds, medians over the rounds, and the
ratio.

    python bench/bench_game_workers.py --case league --case random --case search4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.init import init_workspace
from cosmic_curriculum.workspace.stage_trainer import stage_trainer

CASES = {
    "league": [
        "--opponent-mode", "pool", "--pool-size", "8", "--snapshot-every", "4000",
        "--sampling", "pfsp", "--league-bot", "search:2", "--league-bot", "search:1",
        "--league-bot-share", "0.6",
    ],
    "random": ["--opponent-mode", "random"],
    "search4": ["--opponent-mode", "bot:search:4"],
}  # fmt: skip
GAME = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.connect_four_v3").to_argument()


def preset_trainer(root: Path) -> list[str]:
    """The connect4 preset's trainer options (algo, seats, hyperparams), as `run` passes
    them to its league stage."""
    ws = init_workspace(root / "preset", "connect4").workspace
    cfg = load_config(ws / "stages.toml")
    return stage_trainer(cfg, len(cfg.stages) - 1, ws).argv()


def train(
    folder: Path, trainer: list[str], case: str, vec_env: str, timesteps: int
) -> tuple[float, float]:
    """(steps a second, wall seconds) of one training in a fresh folder."""
    argv = [
        sys.executable, "-m", "cosmic_curriculum", "train-env", "bench",
        "--timesteps", str(timesteps), "--env", GAME, *trainer, "--seed", "1",
        "--vec-env", vec_env, *CASES[case],
    ]  # fmt: skip
    folder.mkdir(parents=True)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    rates = [
        json.loads(line.split(" ", 1)[1]).get("fps")
        for line in done.stdout.splitlines()
        if line.startswith("@progress ")
    ]
    return float([r for r in rates if r][-1]), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--timesteps", type=int, default=16384)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, {args.timesteps} timesteps a training, {args.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="game-workers-bench-") as tmp:
        trainer = preset_trainer(Path(tmp))
        for case in args.case or ["league"]:
            runs: dict[str, list[tuple[float, float]]] = {"dummy": [], "subproc": []}
            for r in range(args.rounds):
                arms = ["dummy", "subproc"] if r % 2 == 0 else ["subproc", "dummy"]
                for arm in arms:
                    folder = Path(tmp) / f"{case}-{arm}-{r}"
                    runs[arm].append(train(folder, trainer, case, arm, args.timesteps))
            fps = {arm: statistics.median(f for f, _ in got) for arm, got in runs.items()}
            wall = {arm: statistics.median(w for _, w in got) for arm, got in runs.items()}
            print(
                f"{case:8s} in-process {fps['dummy']:6.0f} steps/s ({wall['dummy']:5.1f} s), "
                f"workers {fps['subproc']:6.0f} steps/s ({wall['subproc']:5.1f} s): "
                f"{fps['subproc'] / fps['dummy']:4.2f}x steps/s, "
                f"{wall['dummy'] / wall['subproc']:4.2f}x wall"
            )


if __name__ == "__main__":
    main()
