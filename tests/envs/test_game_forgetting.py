"""The gate against forgetting on a PettingZoo curriculum (tic-tac-toe, the built-in game
evaluator, seat-swapped pairs): a stage-2 bot that beats its reference, but loses every
game to stage 1's bot, fails against it and the stage blocks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

from fakes.workspace import TRAINER, fake_env, make_workspace, set_scripts
from fakes.workspace import run_in_process as run
from game_helpers import TICTACTOE, random_game_bot

from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.errors import BlockedError

STAGES = f"""\
max_retries = 0
eval_episodes = 20
reference_bot = "bots/weak.json"
training_command = {json.dumps([sys.executable, str(TRAINER)])}

[env]
kind = "pettingzoo"
id = "{TICTACTOE.id}"

[gate]
against = "all"
deterministic = true

[defaults]
timesteps = 400

[[stages]]
name = "first"

[[stages]]
name = "second"
reference_bot = "bots/weak.json"
"""


def test_a_game_bot_that_lost_to_stage_1_fails_the_gate_against_forgetting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["first"], external_eval=False)
    (ws / "stages.toml").write_text(STAGES)
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    # Random weights played greedily, so every pair is the same two games
    # (tests/envs/game_helpers.py): seed 4's bot beats seed 10's in both seats, and both
    # beat seed 6's, the reference of both stages.
    bots = {}
    for seed in (4, 10):
        bots[seed] = tmp_path / f"seed{seed}.json"
        save_env_bot(random_game_bot(TICTACTOE, seed=seed), bots[seed])
    save_env_bot(random_game_bot(TICTACTOE, seed=6), ws / "bots" / "weak.json")
    set_scripts(
        ws,
        trainer_script={
            "curric-s1-first": {"bot_source": str(bots[4])},
            "curric-s2-second": {"bot_source": str(bots[10])},
        },
    )
    with pytest.raises(BlockedError):
        run(ws)
    state = json.loads((ws / "curriculum_state.json").read_text())
    assert [e["decision"] for e in state["log"]] == ["pass", "fail"]
    entry = state["log"][1]
    assert "→ pass; against earlier stages" in entry["summary"]  # its reference: beaten
    [c] = entry["comparisons"]
    assert c["against_stage"] == 0 and c["bot"] == "bots/curric-s1-first.json"
    assert (c["wins_a"], c["wins_b"], c["episodes"]) == (0, 20, 20)
    assert c["rule"] == "sign" and c["verdict"] == "fail" and c["m"] == 1
    records = json.loads((ws / "eval_history.json").read_text())
    record = next(r for r in records if r["id"] == c["eval_id"])
    assert record["evaluator"] == "game" and record["deterministic"] is True
    assert record["against_stage"] == 0 and record["comparison"] == "forgetting"
    assert "curric-s1-first" in (ws / "REPORT.md").read_text()
