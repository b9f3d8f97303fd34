"""The gate against forgetting on a Gymnasium curriculum (FrozenLake, the built-in env
evaluator, paired returns): a stage-2 bot no worse than the random reference but that
no longer solves the lake fails against stage 1's bot, which did."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from fakes.workspace import TRAINER, fake_env, make_workspace, set_scripts  # noqa: E402
from fakes.workspace import run_in_process as run  # noqa: E402

from cosmic_curriculum.envs.policy import EnvBot, Layer, Space, save_env_bot  # noqa: E402
from cosmic_curriculum.errors import BlockedError  # noqa: E402
from cosmic_curriculum.workspace.env_config import EnvSpec  # noqa: E402

LAKE = EnvSpec(
    kind="gymnasium", id="FrozenLake-v1", kwargs={"map_name": "4x4", "is_slippery": False}
)
# The 4x4 map's optimal route (0 left, 1 down, 2 right); states off it keep "down".
ROUTE = {0: 1, 1: 0, 3: 0, 4: 1, 8: 2, 9: 1, 13: 2, 14: 2}
STAGES = f"""\
max_retries = 0
eval_episodes = 10
reference_bot = {{builtin = "random"}}
training_command = {json.dumps([sys.executable, str(TRAINER)])}

[env]
kind = "gymnasium"
id = "FrozenLake-v1"
kwargs = {{map_name = "4x4", is_slippery = false}}

[gate]
against = "all"

[defaults]
timesteps = 400

[[stages]]
name = "solve"

[[stages]]
name = "lazy"
reference_bot = {{builtin = "random"}}
"""


def _table_bot(path: Path, table: dict[int, int], default: int) -> Path:
    weights = np.zeros((4, 16))
    for state in range(16):
        weights[table.get(state, default), state] = 1.0
    layers = (Layer(weights, np.zeros(4), "linear"),)
    save_env_bot(EnvBot(LAKE, Space("Discrete", n=16), Space("Discrete", n=4), layers), path)
    return path


def test_a_bot_that_forgot_the_lake_fails_against_stage_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["solve"], external_eval=False)
    (ws / "stages.toml").write_text(STAGES)
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    solver = _table_bot(tmp_path / "solver.json", ROUTE, 1)
    lazy = _table_bot(tmp_path / "lazy.json", {}, 0)  # always left: never reaches the goal
    set_scripts(
        ws,
        trainer_script={
            "curric-s1-solve": {"bot_source": str(solver)},
            "curric-s2-lazy": {"bot_source": str(lazy)},
        },
    )
    with pytest.raises(BlockedError):
        run(ws)
    state = json.loads((ws / "curriculum_state.json").read_text())
    assert [e["decision"] for e in state["log"]] == ["pass", "fail"]
    lazy_entry = state["log"][1]
    assert "→ pass; against earlier stages" in lazy_entry["summary"]  # random: no worse
    [c] = lazy_entry["comparisons"]
    assert c["against_stage"] == 0 and c["bot"] == "bots/curric-s1-solve.json"
    assert (c["wins_a"], c["wins_b"], c["episodes"]) == (0, 10, 10)
    assert c["rule"] == "sign" and c["verdict"] == "fail" and c["m"] == 1
    records = json.loads((ws / "eval_history.json").read_text())
    record = next(r for r in records if r["id"] == c["eval_id"])
    assert record["evaluator"] == "env" and record["successes"] == 0
    assert record["against_stage"] == 0 and record["comparison"] == "forgetting"
