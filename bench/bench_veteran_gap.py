"""What closes the quick curriculum's gap to the veteran: more of the same, or the veteran.

Usage: python bench/bench_veteran_gap.py WORKSPACE [--timesteps 3000000]
                                         [--modes self_play veteran] [--seeds 0 1]

WORKSPACE is a finished quick curriculum (scripts/demo.sh leaves one). Its product (the
last experiment that passed) is trained on for ``--timesteps`` more, once per opponent
mode, as a fifth stage would be: resumed from its final checkpoint with the preset's
standing args (so ``--reset-std``) and the last stage's settings, only the opponent mode
changed. ``self_play`` is a longer last stage; ``veteran`` trains against the veteran
itself. Each resulting bot, and the product it started from, then plays the rookie and the
veteran (200 seat-swapped episodes for each ``--seeds`` evaluation seed, with the
evaluator scripts/demo.sh scores the final bot with), and each continued bot plays the
product it started from. One table; docs/BENCHMARKS.md records it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

PY = sys.executable
N_PAIRS = 100  # 200 seat-swapped episodes


def product(ws: Path) -> str:
    """The last experiment that passed: the curriculum's final bot."""
    state = json.loads((ws / "curriculum_state.json").read_text())
    passed = [str(e["experiment"]) for e in state["log"] if e["decision"] == "pass"]
    if state.get("status") != "done" or not passed:
        raise SystemExit(f"{ws}: not a finished curriculum (status {state.get('status')})")
    return passed[-1]


def train_on(ws: Path, start: str, mode: str, timesteps: int) -> str:
    """Train ``start``'s final checkpoint ``timesteps`` more against ``mode``; the name."""
    config = tomllib.loads((ws / "stages.toml").read_text())
    defaults = config.get("defaults", {})
    name = f"gap-{mode.replace('_', '-')}-{timesteps}"
    if (ws / "bots" / f"{name}.json").is_file():
        print(f"  {name}: already trained, reused", flush=True)
        return name
    flags = list(config["stages"][-1].get("flags", []))
    if "--opponent-mode" in flags:
        i = flags.index("--opponent-mode")
        del flags[i : i + 2]
    args = [
        "train",
        name,
        "--workspace",
        str(ws),
        "--resume",
        f"checkpoints/{start}/final.zip",
        "--timesteps",
        str(timesteps),
        "--n-parallel",
        str(defaults.get("n_parallel", 256)),
        "--speedup",
        str(defaults.get("speedup", 16)),
        *config.get("standing_args", []),
        *flags,
        "--opponent-mode",
        mode,
    ]
    print(f"  training {name} ({timesteps:,} timesteps against {mode})", flush=True)
    result = subprocess.run(
        [PY, "-m", "cosmic_curriculum", *args], cwd=ws, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"{name}: {result.stderr.strip()[-2000:]}")
    return name


def play(bot: Path, opponent: Path, seed: int, scratch: Path) -> tuple[str, float]:
    """``W–L–D, score`` of ``bot`` in 200 paired episodes, played by the evaluator of
    `cosmic-curriculum evaluate BOT OPPONENT --episodes 200 --seed S` (the game is the
    bot's own, the pairs' kickoffs come from ``seed``)."""
    from cosmic_curriculum.evaluation.evaluate import run_evaluation

    r = run_evaluation(bot, opponent, history_path=scratch, episodes=2 * N_PAIRS, seed=seed)
    wins, losses, draws = r["wins_a"], r["wins_b"], r["draws"]
    return f"{wins}–{losses}–{draws}", float(r["score"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path, help="a finished quick curriculum")
    parser.add_argument("--timesteps", type=int, default=3_000_000, help="more timesteps")
    parser.add_argument("--modes", nargs="+", default=["self_play", "veteran"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="eval seeds")
    args = parser.parse_args()
    from cosmic_curriculum.bots.format import rookie_document, veteran_document

    ws = args.workspace.resolve()
    start = product(ws)
    names = [start] + [train_on(ws, start, mode, args.timesteps) for mode in args.modes]
    paths = {name: ws / "bots" / f"{name}.json" for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "eval_history.json"
        refs = {}  # the shipped references, whatever the workspace holds
        for ref, document in (("rookie", rookie_document()), ("veteran", veteran_document())):
            refs[ref] = Path(tmp) / f"{ref}.json"
            refs[ref].write_text(json.dumps(document))
        columns = [f"vs {ref} (seed {s})" for ref in refs for s in args.seeds]
        columns += [f"vs {start} (seed {s})" for s in args.seeds]
        print("| bot | " + " | ".join(columns) + " |")
        print("|---|" + "---|" * len(columns))
        for name, path in paths.items():
            cells = [play(path, ref, s, scratch) for ref in refs.values() for s in args.seeds]
            if name != start:
                cells += [play(path, paths[start], s, scratch) for s in args.seeds]
            text = [f"{wld}, **{sc:.3f}**" for wld, sc in cells]
            text += [""] * (len(columns) - len(text))
            print(f"| {name} | " + " | ".join(text) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
