"""A real compare on a tiny Gymnasium curriculum (FrozenLake, two stages): two arms x two
seeds through `run`, killed with SIGKILL mid-compare, resumed without retraining what was
trained, then a finished compare that only prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash.harness import kill_everything

from tests.envs.env_helpers import cli

STAGES = """\
max_retries = 0
reference_bot = {builtin = "random"}

[env]
kind = "gymnasium"
id = "FrozenLake-v1"
kwargs = {map_name = "4x4", is_slippery = false}

[trainer]
algo = "PPO"
n_envs = 2
vec_env = "dummy"
hyperparams = {n_steps = 64, batch_size = 64, n_epochs = 2}

[launcher]
max_parallel = 2

[gate]
rule = "threshold"
target = 0.9
max_episodes = 20

[[stages]]
name = "one"
timesteps = 128

[[stages]]
name = "two"
timesteps = 128
"""
FINISHED = ("done", "blocked")
ARGS = ("compare", "--seeds", "0", "1", "--points", "2", "--checkpoint-episodes", "4")
ARGS += ("--final-episodes", "8")


def _status(sub: Path) -> str | None:
    try:
        return str(json.loads((sub / "curriculum_state.json").read_text())["status"])
    except (OSError, ValueError, KeyError):
        return None


def _logs(sub: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted((sub / "logs").glob("*.log"))}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compare_trains_measures_and_resumes_after_kill(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("stable_baselines3")
    ws = tmp_path / "ws"
    made = cli(tmp_path, "init", "--bare", str(ws))
    assert made.returncode == 0, made.stderr
    (ws / "stages.toml").write_text(STAGES)

    first = subprocess.Popen(
        [sys.executable, "-m", "cosmic_curriculum", *ARGS],
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    done = ws / "compare" / "curriculum-s0"
    deadline = time.monotonic() + 300
    # A finished arm is done, or blocked when its gate failed (max_retries = 0).
    while _status(done) not in FINISHED and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _status(done) in FINISHED, "the first arm never finished"
    kill_everything(ws)  # compare, the arms' runs and their trainers: SIGKILL
    first.wait()
    statuses = [_status(p) for p in sorted((ws / "compare").glob("*-s[01]"))]
    assert (
        sum(s in FINISHED for s in statuses) < 4 and not (ws / "compare" / "compare.json").exists()
    )
    trained = _logs(done)

    out = tmp_path / "study.json"
    resumed = cli(ws, *ARGS, "--json", str(out), "--plot", str(tmp_path / "study.png"))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"curriculum-s0: trained ({_status(done)})" in resumed.stdout
    assert _logs(done) == trained  # nothing of the finished arm trained again

    doc = json.loads(out.read_text())
    assert json.loads((ws / "compare" / "compare.json").read_text()) == doc
    rows = {(r["arm"], r["seed"]): r for r in doc["arms"]}
    assert set(rows) == {("curriculum", 0), ("curriculum", 1), ("last-stage", 0), ("last-stage", 1)}
    for row in rows.values():
        assert {"arm", "seed", "timesteps", "final", "first_target_at"} <= set(row)
        assert row["final"]["episodes"] == 8 and len(row["points"]) >= 1
        lo, hi = row["final"]["success_interval"]
        assert lo <= row["final"]["success_rate"] <= hi
    assert rows[("last-stage", 0)]["timesteps"] == 256  # the curriculum's total, alone
    assert rows[("last-stage", 0)]["stages"] == ["curric-s1-two"]
    assert doc["target"] == 0.9 and len(doc["verdict"]) >= 3
    assert any("2 against 2 seeds cannot show a difference" in v for v in doc["verdict"])
    assert (tmp_path / "study.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (ws / "compare" / "REPORT.md").read_text()
    assert "**Verdict**" in report and "compare.png" in report
    assert "verdict:" in resumed.stdout

    measures = {p.name: p.read_bytes() for p in (ws / "compare" / "measures").iterdir()}
    again = cli(ws, *ARGS)
    assert again.returncode == 0, again.stderr
    assert "training (log" not in again.stdout and again.stdout.count("trained (") == 4
    assert {p.name: p.read_bytes() for p in (ws / "compare" / "measures").iterdir()} == measures
    assert os.listdir(ws / "compare").count(".gitignore") == 1
    # The study is the workspace's (committed once); the arms are their own repositories.
    tracked = subprocess.run(
        ["git", "ls-files", "compare"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout.split()
    assert sorted(tracked) == [
        f"compare/{n}" for n in (".gitignore", "REPORT.md", "compare.json", "compare.png")
    ]
    assert "committed compare/" in resumed.stdout and "committed" not in again.stdout
