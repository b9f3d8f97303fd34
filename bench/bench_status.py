"""Benchmark: start-up time of `cosmic-curriculum status` against `python -c pass`.

Both run as fresh processes, interleaved in the same loop (so a busy machine slows both
alike), on a workspace with a realistic state: four stages, eleven decided attempts, an
evaluation history of eleven records. Prints the medians side by side and their ratio:
`status` as a user meets it from the second call on (its cache of the validated files
hit), and with the cache off (every call validates stages.toml and the state with
pydantic, as the first call after a change does). Plus, for scale, what importing
pydantic and building one model costs (the least that validating the state and config
with pydantic costs) and what `python -c "import torch"` would have cost.

    .venv/bin/python bench/bench_status.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAGES = ["score", "defend", "no_draws", "mechanics"]


def build_workspace(ws: Path) -> None:
    shutil.copyfile(
        REPO / "cosmic_curriculum" / "data" / "presets" / "default.toml", ws / "stages.toml"
    )
    log, history = [], []
    for i, name in enumerate(STAGES[:3]):
        for attempt in range(3 if i == 1 else 1):
            exp = f"curric-s{i + 1}-{name}" + (f"-retry{attempt}" if attempt else "")
            rid = f"ev-bench-{len(history)}"
            decision = "pass" if (i != 1 or attempt == 2) else "fail"
            wins = (45, 40) if decision == "pass" else (20, 50)
            counts = {"wins_a": wins[0], "wins_b": wins[1], "episodes": 100}
            counts["draws"] = 100 - counts["wins_a"] - counts["wins_b"]
            history.append({"id": rid, **counts})
            log.append(
                {
                    "stage_index": i,
                    "experiment": exp,
                    "attempt": attempt,
                    "eval": counts,
                    "decision": decision,
                    "eval_id": rid,
                }
            )
    state = {
        "stage_index": 3,
        "attempt": 0,
        "status": "in_progress",
        "log": log,
        "schema_version": 2,
        "in_flight": {
            "stage_index": 3,
            "attempt": 0,
            "experiment": "curric-s4-mechanics",
            "phase": "training",
            "started_at": "2026-01-01T00:00:00+00:00",
        },
    }
    (ws / "curriculum_state.json").write_text(json.dumps(state, indent=2))
    (ws / "eval_history.json").write_text(json.dumps(history, indent=2))


# What validating with pydantic costs at the least: importing it and building one model.
PYDANTIC_FLOOR = "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int\nM(x=1)"


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        build_workspace(ws)
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # status's cache: ours
        no_cache = {**os.environ, "COSMIC_CURRICULUM_NO_STATUS_CACHE": "1"}
        # The installed command, as a user types it (`python -m` where there is none).
        script = Path(py).with_name("cosmic-curriculum")
        command = [str(script)] if script.is_file() else [py, "-m", "cosmic_curriculum"]
        status = [*command, "status", "--workspace", str(ws)]
        status_json = [*status, "--json"]
        baseline = [py, "-c", "pass"]
        # Warm the caches, bytecode included: an installed package has its .pyc files, but
        # PYTHONDONTWRITEBYTECODE (set on some machines) would make every run compile ours.
        warm_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(status, check=True, stdout=subprocess.DEVNULL, env=warm_env)
        base_t, table_t, json_t, cold_t, floor_t = [], [], [], [], []
        for _ in range(args.repeats):
            base_t.append(timed(baseline))
            table_t.append(timed(status))
            json_t.append(timed(status_json))
            cold_t.append(timed(status, no_cache))
            floor_t.append(timed([py, "-c", PYDANTIC_FLOOR]))
        torch_t = [timed([py, "-c", "import torch"]) for _ in range(3)]
    base = statistics.median(base_t)
    print(
        f"python {platform.python_version()} on {platform.machine()}, "
        f"{args.repeats} runs each (median)"
    )
    print(f"{'python -c pass':<34}{base * 1000:8.1f} ms   1.0x")
    for label, series in (
        ("cosmic-curriculum status", table_t),
        ("cosmic-curriculum status --json", json_t),
        ("status, cache off (validating)", cold_t),
    ):
        med = statistics.median(series)
        print(f"{label:<34}{med * 1000:8.1f} ms {med / base:5.1f}x")
    floor = statistics.median(floor_t)
    print(f"{'(floor) pydantic + one model':<34}{floor * 1000:8.1f} ms {floor / base:5.1f}x")
    med_torch = statistics.median(torch_t)
    print(
        f"{'(for scale) python -c import torch':<34}"
        f"{med_torch * 1000:8.1f} ms {med_torch / base:5.1f}x"
    )


if __name__ == "__main__":
    main()
