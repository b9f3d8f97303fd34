"""SIGTERM to a compare in the middle of its trainings: the arms' runs are stopped (each
stops its trainer and saves), compare says so in one line and exits 143, and nothing of
it is left running in the workspace."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crash.harness import workspace_processes

STAGES = """\
max_retries = 0
reference_bot = {builtin = "random"}

[env]
kind = "gymnasium"
id = "FrozenLake-v1"
kwargs = {map_name = "4x4", is_slippery = false}

[trainer]
n_envs = 2
vec_env = "dummy"
hyperparams = {n_steps = 64, batch_size = 64, n_epochs = 2}

[launcher]
max_parallel = 2

[[stages]]
name = "one"
timesteps = 200_000

[[stages]]
name = "two"
timesteps = 200_000
"""


def _phase(sub: Path) -> str | None:
    try:
        state = json.loads((sub / "curriculum_state.json").read_text())
    except (OSError, ValueError):
        return None
    return (state.get("in_flight") or {}).get("phase")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_stops_every_arm_and_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("stable_baselines3")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "stages.toml").write_text(STAGES)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cosmic_curriculum", "compare", "--seeds", "0"],
        cwd=ws,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    arms = [ws / "compare" / "curriculum-s0", ws / "compare" / "last-stage-s0"]
    deadline = time.monotonic() + 120
    while any(_phase(a) != "training" for a in arms) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert all(_phase(a) == "training" for a in arms), "the arms never started training"
    time.sleep(2)  # the trainers are running
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "compare: stopped by SIGTERM" in lines[0], err
    assert "run compare again to resume" in lines[0]
    deadline = time.monotonic() + 30
    while workspace_processes(ws) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workspace_processes(ws) == []  # no run, trainer or measure outlived it
    for arm in arms:  # each run recorded its stop: resumable, not finished
        state = json.loads((arm / "curriculum_state.json").read_text())
        assert state["status"] not in ("done", "blocked")
