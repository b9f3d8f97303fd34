"""An env that goes wrong during training (tests/envs/faulty_envs.py, a real Gymnasium env
named in `[env] imports`): `run` ends the attempt with one line naming the env, the step
and the fault, quotes the trainer's one-line error, shows no traceback and writes no
record; the trainer's log ends with that line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

from cosmic_curriculum.workspace.init import init_workspace

HERE = Path(__file__).resolve().parent

STAGES = """\
max_retries = 1
reference_bot = {{builtin = "random"}}

[env]
kind = "gymnasium"
id = "Faulty-v0"
imports = ["faulty_envs"]
kwargs = {{fault = "{fault}", after = 300}}

[defaults]
timesteps = 4096

[[stages]]
name = "walk"
gate = {{rule = "threshold", target = 0.5}}
"""


def cli(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        cwd=ws,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("fault", "what"),
    [
        ("raise", "raised (RuntimeError: the simulator lost its state (core dumped))"),
        ("nan", "returned a non-finite observation (NaN or inf)"),
        ("shape", "returned an observation of shape (3,), not its space's (2,)"),
    ],
)
def test_an_env_fault_in_training_is_a_one_line_attempt_error(
    tmp_path: Path, fault: str, what: str
) -> None:
    ws = init_workspace(tmp_path / "ws", "bare").workspace
    (ws / "stages.toml").write_text(STAGES.format(fault=fault))

    failed = cli(ws, "run", "--no-push")
    output = failed.stdout + failed.stderr
    assert failed.returncode == 1, output
    assert "Traceback" not in output
    errors = [line for line in failed.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, output
    # the copy that fails first has taken 300 good steps: 5-step episodes, so step 1 of one
    expected = f"env 'Faulty-v0' {what} at episode step 1, after "
    assert "curric-s1-walk: training command exited with status 1: " + expected in errors[0]
    assert "(attempt error, not a gate failure)" in errors[0]

    state = json.loads((ws / "curriculum_state.json").read_text())
    assert state["log"] == [] and expected in state["in_flight"]["error"]
    assert json.loads((ws / "eval_history.json").read_text()) == []
    log = (ws / "logs" / "curric-s1-walk.log").read_text()
    assert log.rstrip().splitlines()[-1].startswith(f"error: {expected}")
    assert "Traceback" not in log
    assert not (ws / "bots" / "curric-s1-walk.json").exists()
