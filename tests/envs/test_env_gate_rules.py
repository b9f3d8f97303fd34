"""Several rules on a real Gymnasium curriculum (FrozenLake, `train-env`, the built-in env
evaluator): a stage that requires threshold and not-worse-than-previous passes when the
bot still solves the lake, and a slippery stage fails on the threshold rule, sampled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from env_helpers import bare_workspace, cli

STAGES = """\
max_retries = 0
reference_bot = {builtin = "random"}

[env]
kind = "gymnasium"
id = "FrozenLake-v1"
kwargs = {map_name = "4x4", is_slippery = false}

[defaults]
timesteps = 20_000

[[stages]]
name = "dry"
gate = {rule = "threshold", target = 0.9}

[[stages]]
name = "again"
timesteps = 2_000
gate = {rule = ["threshold", "margin"], target = 0.9}

[[stages]]
name = "slippery"
timesteps = 2_000
env = {kwargs = {map_name = "4x4", is_slippery = true}}
gate = {rule = ["threshold", "sprt"], target = 0.9, deterministic = false}
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_threshold_and_not_worse_pass_then_the_slippery_lake_fails(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    pytest.importorskip("stable_baselines3")
    ws = bare_workspace(tmp_path, STAGES)

    blocked = cli(ws, "run")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    state = json.loads((ws / "curriculum_state.json").read_text())
    assert [e["decision"] for e in state["log"]] == ["pass", "pass", "fail"]
    assert state["status"] == "blocked"
    records = {r["id"]: r for r in json.loads((ws / "eval_history.json").read_text())}

    # stage 2: the lake is still solved, and no worse than stage 1's bot (all draws)
    again = state["log"][1]
    assert again["eval"]["rules"] == [
        {"rule": "threshold", "verdict": "pass"},
        {"rule": "margin", "verdict": "pass"},
    ]
    record = records[again["eval_id"]]
    assert record["reference"] == f"bots/{state['log'][0]['experiment']}.json"
    assert record["episodes"] == 100  # margin among the rules: its episodes
    assert record["successes"] == 100 and record["deterministic"] is True

    # stage 3: slippery, sampled: far below 0.9 successes, so threshold fails it early
    slippery = state["log"][2]
    rules = {r["rule"]: r["verdict"] for r in slippery["eval"]["rules"]}
    assert rules["threshold"] == "fail"
    figures = slippery["eval"]["threshold"]
    assert figures["successes"] < 0.9 * figures["episodes"]
    assert figures["success_rate_ci95"][1] < 0.9
    record = records[slippery["eval_id"]]
    assert record["deterministic"] is False and record["episodes"] < 400
    assert record["gate"]["rule"] == "threshold+sprt" and record["gate"]["verdict"] == "fail"
    assert record["gate"]["stats"]["rules"][0]["stats"]["successes"] == figures["successes"]
    assert slippery["summary"].startswith("threshold: ") and "; sprt: " in slippery["summary"]

    review = (ws / "logs" / "review-slippery.md").read_text()
    assert "Gate: every one of 2 rules must pass" in review
    assert "fails (threshold: fail, sprt: " in review

    shown = cli(ws, "status", "--json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    stages = json.loads(shown.stdout)["stages"]
    dry = stages[0]["attempts"][0]
    assert dry["threshold"]["successes"] == dry["threshold"]["episodes"]
    assert stages[2]["attempts"][0]["rules"][0] == {"rule": "threshold", "verdict": "fail"}
    table = cli(ws, "status")
    assert f"{figures['successes']}/{figures['episodes']} successes" in table.stdout
    report = (ws / "REPORT.md").read_text()
    assert "threshold (95%) vs target" in report and "vs target 0.9" in report
