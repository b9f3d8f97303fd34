"""The curriculum's measured value: the same timesteps and seeds spent three ways.

Usage: python bench/bench_curriculum.py [--seeds 0 1] [--scale 1.0] [--plot PNG]
                                        [--keep DIR]

Arms, each trained on this machine with the real PPO trainer, per seed:

- ``curriculum``: the quick preset's four stages through `cosmic-curriculum run`
  (the trainer's ``--seed`` added to its standing args);
- ``final-stage``: the last stage's settings only (its flags and the standing args),
  from scratch, for the preset's whole budget;
- ``self-play``: the defend stage's opponent mode (self-play) in full 3-D, from scratch,
  for the whole budget. With the quick preset this is the final-stage arm itself (its
  last stage sets no flags, and the trainer's default opponent is self-play), so it is
  trained once and shown under both names.

The budget is the sum of the preset's stage timesteps (times ``--scale``; 1.0 is the real
measurement, about an hour and a quarter of 2 cores for two seeds; a small scale only
checks the script). Every arm keeps a checkpoint every ``budget / 26`` timesteps; each
is turned into a bot and plays the rookie (200 paired 3-D episodes, seed 2026) to find
the timesteps an arm needs to first score 0.9 against it (the curriculum's count spans
its stages, retries included). Each final bot then plays the rookie, the veteran and the
other arms' final bots of the same seed (200 paired episodes each). Prints one table and
draws the curves into ``--plot`` (docs/BENCHMARKS.md records them).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from cosmic_curriculum import DATA_DIR

PY = sys.executable
ARMS = ("curriculum", "final-stage", "self-play")
EVAL_SEED = 2026
N_PAIRS = 100  # 200 seat-swapped episodes
PASS_SCORE = 0.9
CHECKPOINTS = 26


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "cosmic_curriculum", *args], cwd=cwd, capture_output=True, text=True
    )


def preset() -> dict[str, Any]:
    return tomllib.loads((DATA_DIR / "presets" / "quick.toml").read_text())


def budget(scale: float) -> list[int]:
    """Each stage's timesteps, scaled."""
    p = preset()
    default = p["defaults"]["timesteps"]
    return [max(1, int(s.get("timesteps", default) * scale)) for s in p["stages"]]


def init(ws: Path) -> None:
    result = cli("init", str(ws), "--preset", "quick")
    if result.returncode != 0:
        raise SystemExit(f"init {ws}: {result.stderr.strip()}")


def curriculum_arm(ws: Path, seed: int, scale: float, every: int) -> tuple[list[str], str]:
    """Run the preset's curriculum: its experiments in the order they trained, and the
    last one that passed (its product, as scripts/demo.sh takes it; else the last one)."""
    init(ws)
    toml = ws / "stages.toml"
    text = toml.read_text()
    text = re.sub(
        r"^timesteps = ([\d_]+)",
        lambda m: f"timesteps = {max(1, int(int(m[1].replace('_', '')) * scale))}",
        text,
        flags=re.MULTILINE,
    )
    extra = ["--seed", str(seed), "--checkpoint-every", str(every), "--keep-checkpoints", "1000"]
    text = re.sub(
        r"^standing_args = \[(.*)\]",
        lambda m: f"standing_args = [{m[1]}, {', '.join(json.dumps(a) for a in extra)}]",
        text,
        flags=re.MULTILINE,
    )
    toml.write_text(text)
    result = cli("run", "--workspace", str(ws), "--no-push")
    if result.returncode not in (0, 1):  # 1: a stage blocked, which is a result too
        raise SystemExit(f"curriculum in {ws}: {result.stderr.strip()}")
    state = json.loads((ws / "curriculum_state.json").read_text())
    trained = [str(entry["experiment"]) for entry in state["log"]]
    passed = [str(e["experiment"]) for e in state["log"] if e["decision"] == "pass"]
    if state["status"] != "done":
        print(f"  (the curriculum in {ws} ended {state['status']})", flush=True)
    # A curriculum blocked in its first stage has no product: score its last attempt.
    return trained, (passed or trained)[-1]


def single_arm(ws: Path, name: str, flags: list[str], seed: int, total: int, every: int) -> None:
    init(ws)
    p = preset()
    args = [
        "train",
        name,
        "--workspace",
        str(ws),
        "--timesteps",
        str(total),
        "--n-parallel",
        str(p["defaults"]["n_parallel"]),
        "--speedup",
        str(p["defaults"]["speedup"]),
        *p["standing_args"],
        *flags,
        "--seed",
        str(seed),
        "--checkpoint-every",
        str(every),
        "--keep-checkpoints",
        "1000",
    ]
    result = cli(*args, cwd=ws)
    if result.returncode != 0:
        raise SystemExit(f"{name} in {ws}: {result.stderr.strip()}")


def checkpoint_bot(path: Path) -> Any:
    """The bot of one SB3 checkpoint, exported as the trainer exports its final one."""
    from stable_baselines3 import PPO

    from cosmic_curriculum import bots
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.train import policy_to_bot as export
    from cosmic_curriculum.train.checkpoints import checkpoint_game

    model = PPO.load(path, device="cpu")
    game = checkpoint_game(path) or GameSettings().model_dump()
    mean, std = export.observation_normalisation(model.policy)
    document = bots.mlp_bot_document(
        export.policy_layers(model.policy), mean, std, game, preset()["defaults"]["speedup"], {}
    )
    return bots.bot_from_document(document, str(path))


def score(bot: Any, opponent: Any) -> float:
    """``bot``'s score against ``opponent`` in 200 paired episodes of the full 3-D game."""
    from cosmic_curriculum import scoring
    from cosmic_curriculum.arena.match import play_pairs
    from cosmic_curriculum.arena.settings import GameSettings

    result = play_pairs(bot, opponent, N_PAIRS, EVAL_SEED, GameSettings())
    return scoring.score(result.wins_a, result.draws, result.episodes, if_none=0.0)


def curve(ws: Path, experiments: list[str], budgets: list[int]) -> list[tuple[int, float]]:
    """(timesteps spent so far, score against the rookie) at every checkpoint."""
    from cosmic_curriculum.bots import bot_from_spec
    from cosmic_curriculum.workspace.layout import step_checkpoints

    rookie = bot_from_spec("rookie")
    points: list[tuple[int, float]] = []
    spent = 0
    for i, experiment in enumerate(experiments):
        directory = ws / "checkpoints" / experiment
        steps = step_checkpoints(directory)
        final = directory / "final.zip"
        trained = budgets[i]
        for n, path in [*steps, (trained, final)]:
            if path.is_file() and n <= trained:
                points.append((spent + n, score(checkpoint_bot(path), rookie)))
        spent += trained
    return points


def stage_of(experiment: str) -> int:
    """The stage index of a curriculum experiment (``curric-s{i+1}-...``)."""
    found = re.match(r"curric-s(\d+)-", experiment)
    if found is None:
        raise SystemExit(f"not a curriculum experiment: {experiment}")
    return int(found[1]) - 1


def self_play_is_final_stage(last_flags: list[str]) -> bool:
    """Whether the self-play arm trains exactly as the final-stage arm: the last stage sets
    nothing but an opponent mode that is (or defaults to) self-play."""
    from cosmic_curriculum.train.settings import TrainSettings

    rest, mode = list(last_flags), TrainSettings.model_fields["opponent_mode"].default
    if "--opponent-mode" in rest:
        i = rest.index("--opponent-mode")
        mode = rest[i + 1] if i + 1 < len(rest) else None
        del rest[i : i + 2]
    return not rest and mode == "self_play"


def first_pass(points: list[tuple[int, float]]) -> int | None:
    return next((n for n, s in points if s >= PASS_SCORE), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--scale", type=float, default=1.0, help="timesteps x this")
    parser.add_argument("--plot", type=Path, help="draw the curves into this PNG")
    parser.add_argument("--keep", type=Path, help="leave the workspaces in this dir")
    args = parser.parse_args()
    stages = budget(args.scale)
    total = sum(stages)
    every = max(1, total // CHECKPOINTS)
    p = preset()
    last_flags = list(p["stages"][-1].get("flags", []))
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-curriculum-"))
    root.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, int], dict[str, Any]] = {}
    same = self_play_is_final_stage(last_flags)
    if same:
        print(
            "the preset's last stage is self-play in full 3-D with default settings: the "
            "self-play arm is the final-stage arm, trained once and shown under both names",
            flush=True,
        )
    for seed in args.seeds:
        for arm in ARMS:
            if same and arm == "self-play":
                results[arm, seed] = results["final-stage", seed]
                continue
            ws = root / f"{arm}-s{seed}"
            start = time.monotonic()
            if arm == "curriculum":
                names, final_exp = curriculum_arm(ws, seed, args.scale, every)
                entry_budgets = [stages[stage_of(e)] for e in names]
            else:
                flags = last_flags if arm == "final-stage" else ["--opponent-mode", "self_play"]
                single_arm(ws, arm, flags, seed, total, every)
                names, entry_budgets, final_exp = [arm], [total], arm
            seconds = time.monotonic() - start
            points = curve(ws, names, entry_budgets)
            results[arm, seed] = {
                "ws": ws,
                "bot": ws / "bots" / f"{final_exp}.json",
                "seconds": seconds,
                "points": points,
                "spent": sum(entry_budgets),
                "first_pass": first_pass(points),
            }
            print(
                f"seed {seed} {arm:<12} {seconds:7.0f} s, {sum(entry_budgets)} timesteps, "
                f"first 0.9 vs rookie at {first_pass(points)}",
                flush=True,
            )
    report(results, args, total)
    if args.plot is not None:
        plot(results, args.plot)
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def report(results: dict[tuple[str, int], dict[str, Any]], args: Any, total: int) -> None:
    from cosmic_curriculum.bots import bot_from_spec, load_bot

    rookie, veteran = bot_from_spec("rookie"), bot_from_spec("veteran")
    print(f"\nbudget {total} timesteps per arm (quick preset x {args.scale:g}), seeds {args.seeds}")
    header = ["arm", "vs rookie", "vs veteran", *[f"vs {a}" for a in ARMS]]
    header += ["first 0.9 vs rookie (timesteps)", "wall time"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for arm in ARMS:
        cells: dict[str, list[float]] = {}
        for seed in args.seeds:
            bot = load_bot(results[arm, seed]["bot"])
            cells.setdefault("rookie", []).append(score(bot, rookie))
            cells.setdefault("veteran", []).append(score(bot, veteran))
            for other in ARMS:
                if other != arm:
                    cells.setdefault(other, []).append(
                        score(bot, load_bot(results[other, seed]["bot"]))
                    )
        passes = [results[arm, s]["first_pass"] for s in args.seeds]
        walls = [results[arm, s]["seconds"] for s in args.seeds]
        row = [arm, *(_mean(cells[k]) for k in ("rookie", "veteran"))]
        row += ["—" if other == arm else _mean(cells[other]) for other in ARMS]
        row += [", ".join("never" if n is None else f"{n:,}" for n in passes)]
        row += [f"{statistics.mean(walls):.0f} s"]
        print("| " + " | ".join(row) + " |")


def _mean(values: list[float]) -> str:
    return f"{statistics.mean(values):.3f} ({', '.join(f'{v:.3f}' for v in values)})"


def plot(results: dict[tuple[str, int], dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=90)
    colours = dict(zip(ARMS, ("tab:blue", "tab:orange", "tab:green"), strict=True))
    for (arm, seed), r in sorted(results.items()):
        xs = [n / 1e6 for n, _ in r["points"]]
        ys = [s for _, s in r["points"]]
        style = "-" if seed == min(s for _, s in results) else "--"
        ax.plot(xs, ys, style, color=colours[arm], label=f"{arm}, seed {seed}")
    ax.axhline(PASS_SCORE, color="grey", linewidth=0.8)
    ax.set_xlabel("timesteps spent (millions)")
    ax.set_ylabel("score vs rookie (200 3-D games)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
