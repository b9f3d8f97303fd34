"""examples/gymnasium end to end: `init --bare`, the example copied in, `run` to done with
real Gymnasium and real stable-baselines3, and no arena flag ever given to the trainer."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gymnasium"
ARENA_FLAGS = ("--n-parallel", "--speedup", "--reset-std", "--ent-coef")


def cli(ws: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_gymnasium_example_runs_to_done(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("stable_baselines3")
    # The example's commands are `python3 scripts/...`: this interpreter's.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ws = tmp_path / "ws"
    made = cli(tmp_path, "init", "--bare", str(ws), env=env)
    assert made.returncode == 0, made.stdout + made.stderr
    shutil.copyfile(EXAMPLE / "stages.toml", ws / "stages.toml")
    for sub in ("scripts", "bots"):
        shutil.copytree(EXAMPLE / sub, ws / sub, dirs_exist_ok=True)

    done = cli(ws, "run", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "curriculum done" in done.stdout + done.stderr

    state = json.loads((ws / "curriculum_state.json").read_text())
    assert state["status"] == "done"
    passed = [e["experiment"] for e in state["log"] if e["decision"] == "pass"]
    assert len(passed) == 2
    for experiment in passed:
        assert (ws / "checkpoints" / experiment / "final.zip").is_file()
        bot = json.loads((ws / "bots" / f"{experiment}.json").read_text())
        assert bot["format"] == "sb3-ppo" and bot["env"]["id"] == "FrozenLake-v1"
        # Every launch of the trainer is in its log's headers: no arena flag, the env given.
        log = (ws / "logs" / f"{experiment}.log").read_text()
        launches = [
            shlex.split(line.split(" ", 2)[2])
            for line in log.splitlines()
            if line.startswith("# ") and "scripts/train.py" in line
        ]
        assert launches
        for argv in launches:
            assert not set(ARENA_FLAGS) & set(argv), argv
            assert argv[argv.index("--env") + 1].startswith("{")
    slippery = json.loads((ws / "bots" / f"{passed[1]}.json").read_text())
    assert slippery["env"]["kwargs"] == {"map_name": "4x4", "is_slippery": True}
    # Stage 2 warm-started from stage 1's passing checkpoint.
    assert slippery["resumed_from"] == f"checkpoints/{passed[0]}/final.zip"


@pytest.mark.slow  # the example's scripts import stable-baselines3 (torch): ~10 s a run
def test_the_example_evaluator_streams_its_episodes_and_stops_when_asked(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("stable_baselines3")
    spec = {"kind": "gymnasium", "id": "FrozenLake-v1", "imports": [], "wrappers": []}
    spec["kwargs"] = {"map_name": "4x4", "is_slippery": False}
    (tmp_path / "candidate.json").write_text(json.dumps({"format": "random", "env": spec}))
    (tmp_path / "random.json").write_text('{"format": "random"}')
    stream, stop = tmp_path / "episodes.jsonl", tmp_path / "stop"
    env = {
        **os.environ,
        "COSMIC_CURRICULUM_EVAL_STREAM": str(stream),
        "COSMIC_CURRICULUM_EVAL_STOP": str(stop),
    }
    script = str(EXAMPLE / "scripts" / "evaluate.py")
    argv = [sys.executable, script, "candidate.json", "random.json", "--episodes", "12"]
    subprocess.run(argv, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)
    lines = [json.loads(line) for line in stream.read_text().splitlines()]
    (record,) = json.loads((tmp_path / "eval_history.json").read_text())
    assert len(lines) == record["episodes"] == len(record["returns"]) == 12
    assert record["successes"] == sum(line["success"] for line in lines)
    assert record["wins_a"] == sum(line["result"] == 1 for line in lines)
    assert [line["return"] for line in lines] == record["returns"]
    stop.touch()  # the gate has decided: the evaluator plays no more
    subprocess.run(argv, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)
    assert json.loads((tmp_path / "eval_history.json").read_text())[1]["episodes"] == 0
