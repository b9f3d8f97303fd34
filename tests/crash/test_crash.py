"""SIGKILL `cosmic-curriculum run` at random moments and prove nothing is lost or redone.

The default suite kills 2 x 16 runs (orchestrator only, then everything in the
workspace); `bench/crash_soak.py --iterations N` runs the same harness longer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from crash import harness

KILLS_PER_MODE = 16


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return harness.baseline(tmp_path_factory.mktemp("clean") / "ws")


@pytest.mark.slow
def test_clean_run_covers_every_decision_kind(clean_run: dict[str, Any]) -> None:
    log = clean_run["state"]["log"]
    assert clean_run["state"]["status"] == "done"
    kinds = [(e["decision"], e.get("override"), bool(e.get("forced_retry"))) for e in log]
    assert ("pass", None, False) in kinds  # pass
    assert ("fail", None, False) in kinds  # fail → retry
    assert ("fail", None, True) in kinds  # force-retry after a block (and its failure)
    assert ("pass", "skip_to_next_stage", False) in kinds  # skip
    assert [e["experiment"] for e in log] == [
        "curric-s1-score",
        "curric-s2-defend",
        "curric-s2-defend-retry1",
        "curric-s2-defend-retry2",
        "curric-s2-defend-retry2",  # the override pass of the blocked attempt
        "curric-s3-no_draws",
        "curric-s3-no_draws-retry1",
    ]
    assert clean_run["trained"] == [e["experiment"] for e in log if "override" not in e]
    # The review file of the blocked stage is committed.
    assert "logs/review-defend.md" in clean_run["head"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", harness.MODES)
def test_random_sigkills_lose_and_redo_nothing(
    mode: str, clean_run: dict[str, Any], tmp_path: Path
) -> None:
    report = harness.crash_series(tmp_path, clean_run, seed=6, mode=mode, kills=KILLS_PER_MODE)
    assert report.mismatches == []
    assert report.kills >= KILLS_PER_MODE
    # The kills really landed inside the fault points, not only after random delays.
    assert sum(n for at, n in report.kills_at.items() if at != "random delay") >= 4


def test_normalise_drops_only_volatile_keys() -> None:
    state = {"log": [{"eval_id": "x", "decision": "pass", "decided_at": "t"}], "status": "done"}
    assert harness.normalise(state) == {"log": [{"decision": "pass"}], "status": "done"}


@pytest.mark.slow
def test_final_check_catches_a_duplicated_attempt(
    clean_run: dict[str, Any], tmp_path: Path
) -> None:
    """The comparison can fail: a log with a repeated entry is reported."""
    ws = harness.new_workspace(tmp_path / "ws")
    harness.run_to_end(ws)
    assert harness.final_problems(ws, clean_run) == []
    data = json.loads((ws / "curriculum_state.json").read_text())
    data["log"].append(data["log"][-1])
    (ws / "curriculum_state.json").write_text(json.dumps(data))
    problems = harness.final_problems(ws, clean_run)
    assert any("final state differs" in p for p in problems)
    assert any("uncommitted changes" in p for p in problems)
