"""The gate against forgetting (`against = "all"`) on real arena curricula: the built-in
evaluator plays every earlier stage's passing bot, a regression against stage 1's bot
fails the gate naming it, and a kill -9 between two comparisons replays none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes.waiting import wait_until
from fakes.workspace import cli_env, make_workspace, run_argv, set_scripts
from fakes.workspace import run_in_process as run

from cosmic_curriculum.errors import BlockedError
from cosmic_curriculum.status.facts import status_data
from cosmic_curriculum.system.fsio import FAULT_LOG_ENV, PAUSE_ENV

REPO = Path(__file__).resolve().parents[2]
STAGE_1 = "curric-s1-one"
STAGE_2 = "curric-s2-two"
STAGE_3 = "curric-s3-three"


def _workspace(tmp_path: Path, third_bot: str) -> Path:
    """Three stages gated `against = "all"` (margin, 10 episodes): the veteran passes
    stages 1 and 2 (against the rookie: stage 2's reference is configured, so stage 1's
    bot is a forgetting comparison there), stage 3 plays the rookie as its reference and
    trains ``third_bot``."""
    ws = make_workspace(
        tmp_path / "ws",
        stages=["one", "two", "three"],
        external_eval=False,
        max_retries=0,
        episodes=10,
    )
    for name in ("rookie", "veteran"):
        (ws / "bots" / f"{name}.json").write_bytes((REPO / "bots" / f"{name}.json").read_bytes())
    text = (
        (ws / "stages.toml")
        .read_text()
        .replace("[defaults]", '[gate]\nagainst = "all"\n\n[defaults]')
    )
    for stage in ("two", "three"):
        text = text.replace(
            f'name = "{stage}"\n', f'name = "{stage}"\nreference_bot = "bots/rookie.json"\n'
        )
    (ws / "stages.toml").write_text(text)
    veteran = str(REPO / "bots" / "veteran.json")
    set_scripts(
        ws,
        trainer_script={
            STAGE_1: {"bot_source": veteran},
            STAGE_2: {"bot_source": veteran},
            STAGE_3: {"bot_source": str(REPO / "bots" / f"{third_bot}.json")},
        },
    )
    return ws


@pytest.fixture
def fakes_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script_dir = tmp_path / "ws-scripts"
    monkeypatch.setenv("FAKE_TRAINER_SCRIPT", str(script_dir / "trainer.json"))
    monkeypatch.setenv("FAKE_EVAL_SCRIPT", str(script_dir / "eval.json"))


def _history(ws: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((ws / "eval_history.json").read_text())
    return records


@pytest.mark.slow
def test_a_regression_against_stage_1_fails_the_gate_naming_it(
    tmp_path: Path, fakes_env: None
) -> None:
    ws = _workspace(tmp_path, third_bot="rookie")
    with pytest.raises(BlockedError):
        run(ws)
    state = json.loads((ws / "curriculum_state.json").read_text())
    assert [e["decision"] for e in state["log"]] == ["pass", "pass", "fail"]
    one, two, three = state["log"]
    assert "comparisons" not in one  # stage 1 has no earlier stage
    # stage 2: the veteran against stage 1's veteran, one comparison at beta/1
    [c2] = two["comparisons"]
    assert c2["against_stage"] == 0 and c2["bot"] == f"bots/{STAGE_1}.json"
    assert c2["verdict"] == "pass" and c2["beta"] == 0.05 and c2["rule"] == "sign"
    # stage 3: the rookie passes its reference (itself) but loses to stage 1's veteran;
    # two comparisons planned (stages 1 and 2), stopped at the first regression
    [c3] = three["comparisons"]
    assert c3["against_stage"] == 0 and c3["verdict"] == "fail"
    assert c3["m"] == 2 and c3["beta"] == 0.025 and c3["p_value"] <= 0.025
    assert c3["wins_a"] == 0 and c3["wins_b"] >= 6  # p = 2^-6 at most
    assert "→ pass; against earlier stages: stage 1 " in three["summary"]  # its reference: pass
    assert "a clear regression against stage 1" in three["summary"]
    assert "clear regression against stage 1" in state["blocked_reason"]
    # each comparison is its own tagged record
    tagged = [r for r in _history(ws) if r.get("comparison") == "forgetting"]
    assert [(r["curriculum_experiment"], r["against_stage"]) for r in tagged] == [
        (STAGE_2, 0),
        (STAGE_3, 0),
    ]
    assert tagged[1]["gate"]["rule"] == "sign" and tagged[1]["gate"]["verdict"] == "fail"
    assert tagged[1]["id"] == c3["eval_id"]
    # status --json and REPORT.md show them
    attempts = status_data(ws)["stages"][2]["attempts"]
    assert attempts[0]["comparisons"][0]["against_stage"] == 0
    report = (ws / "REPORT.md").read_text()
    assert "Against earlier stages" in report and f"bots/{STAGE_1}.json" in report


@pytest.mark.slow
def test_kill_between_two_comparisons_then_resume_plays_each_once(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, third_bot="veteran")  # no regression: both comparisons pass
    fault_log = tmp_path / "faults.log"
    pause = f"forgetting:compared:{STAGE_3}:60"  # after stage 3's first comparison
    env = cli_env(ws) | {PAUSE_ENV: pause, FAULT_LOG_ENV: str(fault_log)}
    proc = subprocess.Popen(
        run_argv(ws), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_until(fault_log.exists, 120, "stage 3's first comparison")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    before = [r for r in _history(ws) if r.get("curriculum_experiment") == STAGE_3]
    assert [r.get("against_stage") for r in before] == [None, 0]

    for key, value in cli_env(ws).items():
        if key.startswith("FAKE_"):
            os.environ[key] = value
    run(ws)
    state = json.loads((ws / "curriculum_state.json").read_text())
    assert state["status"] == "done"
    three = state["log"][2]
    assert [(c["against_stage"], c["verdict"]) for c in three["comparisons"]] == [
        (0, "pass"),
        (1, "pass"),
    ]
    after = [r for r in _history(ws) if r.get("curriculum_experiment") == STAGE_3]
    assert [r.get("against_stage") for r in after] == [None, 0, 1]  # nothing twice
    assert after[1]["id"] == before[1]["id"] == three["comparisons"][0]["eval_id"]
