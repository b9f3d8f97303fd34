"""Benchmark: one bot in-process against the same bot as an external program.

Times a 100-episode evaluation (``evaluate.run_evaluation``) of an MLP bot (random
weights, 43-64-64-6) against the rookie, once with the MLP loaded in-process and once
served by this very script as an ``exec:`` program speaking cosmic-bot/1 (it loads the
same bot file with ``bots.load_bot`` and answers with its actions), in the same run, and
prints both times, their ratio and both results. The external time includes starting the
program (Python, numpy and the bot package) and its handshake.

    .venv/bin/python bench/bench_external_bot.py [--episodes 100] [--repeats 3]
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path


def serve(path: str) -> None:
    """Answer cosmic-bot/1 requests with the bot file's actions (the external side)."""
    import numpy as np

    from cosmic_curriculum.bots import load_bot

    bot = load_bot(path)
    rng = np.random.default_rng(0)
    hello = {"protocol": "cosmic-bot/1", "observation_size": 43, "action_size": 6}
    out = sys.stdout
    out.write(json.dumps({**hello, "decision_ticks": bot.decision_ticks, "name": "served"}) + "\n")
    out.flush()
    for line in sys.stdin:
        obs = np.asarray(json.loads(line)["obs"], dtype=np.float32)
        actions = bot.act(obs, rng).astype(np.float64).tolist()
        out.write(json.dumps({"actions": actions}, separators=(",", ":")) + "\n")
        out.flush()


def main() -> None:
    import numpy as np
    from bench_eval import evaluation_arguments, random_mlp_document

    from cosmic_curriculum import bots
    from cosmic_curriculum.evaluation import evaluate

    _, args = evaluation_arguments(__doc__ or "")

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        mlp, rookie = d / "mlp.json", d / "rookie.json"
        bots.save_bot(mlp, random_mlp_document(args.seed))
        bots.save_bot(rookie, bots.rookie_document())
        served = bots.ExecSpec((sys.executable, str(Path(__file__).resolve()), "--serve", str(mlp)))
        sides = {"in-process": mlp, "external program": served}
        times: dict[str, list[float]] = {name: [] for name in sides}
        counts: dict[str, str] = {}
        for _ in range(args.repeats):
            for name, candidate in sides.items():
                t0 = time.perf_counter()
                rec = evaluate.run_evaluation(
                    candidate,
                    rookie,
                    history_path=d / "h.json",
                    episodes=args.episodes,
                    seed=args.seed,
                )
                times[name].append(time.perf_counter() - t0)
                counts[name] = f"{rec['wins_a']}-{rec['wins_b']}-{rec['draws']}"

    print(
        f"# external bot benchmark ({platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}, numpy {np.__version__})"
    )
    print(
        f"{args.episodes} episodes in one batch, MLP 43-64-64-6 (random weights, decision "
        "every 16 ticks) vs rookie"
    )
    print(f"{'candidate':<20}{'best s':>10}{'median s':>10}   W-L-D")
    for name, values in times.items():
        print(f"{name:<20}{min(values):>10.2f}{statistics.median(values):>10.2f}   {counts[name]}")
    ratio = min(times["external program"]) / min(times["in-process"])
    print(f"external / in-process: {ratio:.2f}x (best of {args.repeats})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    else:
        main()
