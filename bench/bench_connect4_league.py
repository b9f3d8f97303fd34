"""Connect four: the preset's three stages trained with `train-env` as the curriculum
launches them, the final bot against random and search:N; and a PFSP league against
plain self-play at the same timesteps and seed, head to head and against search:N.

    nice python bench/bench_connect4_league.py [--out DIR] [--part preset|league|both]
        [--versus-timesteps N] [--games N] [--seeds 0,1,2]

Prints each training's wall time and steps/s and each match's W/D/L and score (the
candidate's (W + D/2)/N, sampled moves as the gates play, seat-swapped pairs); with
several seeds, the league comparison's scores of every seed and their mean.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cosmic_curriculum.envs.game_evaluate import evaluate_game
from cosmic_curriculum.workspace.config_file import load_config
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.init import init_workspace
from cosmic_curriculum.workspace.stage_trainer import stage_trainer

GAME = EnvSpec(kind="pettingzoo", id="pettingzoo.classic.connect_four_v3").to_argument()


def train(ws: Path, experiment: str, timesteps: int, args: list[str], resume: str | None) -> float:
    argv = [
        sys.executable,
        "-m",
        "cosmic_curriculum",
        "train-env",
        experiment,
        "--timesteps",
        str(timesteps),
        "--env",
        GAME,
        *args,
    ]
    if resume:
        argv += ["--resume", resume]
    start = time.monotonic()
    with open(ws / "logs" / f"{experiment}.log", "w") as log:
        subprocess.run(argv, cwd=ws, check=True, stdout=log, stderr=subprocess.STDOUT, timeout=7200)
    wall = time.monotonic() - start
    print(
        f"trained {experiment}: {timesteps} timesteps in {wall:.0f} s "
        f"({timesteps / wall:.0f} steps/s)",
        flush=True,
    )
    return wall


def match(ws: Path, bot: str, reference: str, games: int) -> float:
    start = time.monotonic()
    record = evaluate_game(
        ws / bot,
        reference if ":" in reference or reference == "random" else ws / reference,
        history_path=ws / "bench_history.json",
        episodes=games,
        seed=11,
        deterministic=False,  # two greedy bots replay one game per seat order
    )
    w, lo, d = record["wins_a"], record["wins_b"], record["draws"]
    score = (w + d / 2) / record["episodes"]
    print(
        f"  {bot} vs {reference}: W {w} D {d} L {lo} of {record['episodes']}, score {score:.3f} "
        f"({time.monotonic() - start:.0f} s)",
        flush=True,
    )
    return score


def preset(root: Path, games: int) -> None:
    ws = init_workspace(root / "preset", "connect4").workspace
    cfg = load_config(ws / "stages.toml")
    total, resume = 0.0, None
    names = []
    for i, stage in enumerate(cfg.stages):
        name = f"curric-s{i + 1}-{stage.name}"
        args = [*stage_trainer(cfg, i, ws).argv(), *stage.flags]
        total += train(ws, name, cfg.stage_timesteps(i, None), args, resume)
        resume = f"checkpoints/{name}/final.zip"
        names.append(name)
    print(f"preset: three stages trained in {total:.0f} s", flush=True)
    final = f"bots/{names[-1]}.json"
    for ref in ("random", "search:1", "search:2", "search:4"):
        match(ws, final, ref, games if ref != "search:4" else max(20, games // 2))


def versus(root: Path, timesteps: int, games: int, seed: int) -> dict[str, float]:
    """Both arms from scratch with ``seed``: each match's score (the first bot's)."""
    ws = init_workspace(root / f"versus-{seed}", "connect4").workspace
    cfg = load_config(ws / "stages.toml")
    trainer = [*stage_trainer(cfg, 0, ws).argv(), "--seed", str(seed)]
    plain = ["--opponent-mode", "self_play", "--snapshot-every", "10000"]
    league = [
        "--opponent-mode",
        "pool",
        "--pool-size",
        "8",
        "--snapshot-every",
        "10000",
        "--sampling",
        "pfsp",
        "--league-bot",
        "random",
        "--league-bot-share",
        "0.1",
    ]
    train(ws, "self-play", timesteps, [*trainer, *plain], None)
    train(ws, "league", timesteps, [*trainer, *league], None)
    scores = {"league vs self-play": match(ws, "bots/league.json", "bots/self-play.json", games)}
    for bot in ("league", "self-play"):
        for ref in ("random", "search:1", "search:2"):
            scores[f"{bot} vs {ref}"] = match(ws, f"bots/{bot}.json", ref, games)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--part", choices=("preset", "league", "both"), default="both")
    parser.add_argument("--versus-timesteps", type=int, default=60_000)
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seeds", default="0", help="the league comparison's seeds, e.g. 0,1,2")
    opts = parser.parse_args()
    root = opts.out or Path(tempfile.mkdtemp(prefix="connect4-bench-"))
    print(f"workspaces under {root}", flush=True)
    if opts.part in ("preset", "both"):
        preset(root, opts.games)
    if opts.part in ("league", "both"):
        seeds = [int(s) for s in opts.seeds.split(",")]
        runs = [versus(root, opts.versus_timesteps, opts.games, seed) for seed in seeds]
        print(f"league comparison, seeds {seeds}:", flush=True)
        for key in runs[0]:
            values = [run[key] for run in runs]
            shown = " ".join(f"{v:.3f}" for v in values)
            print(f"  {key}: {shown}  mean {sum(values) / len(values):.3f}", flush=True)


if __name__ == "__main__":
    main()
