"""`check_nothing_lost`: a missing state or history is refused only when something says it
existed, and the remedy names a copy that exists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import SEED_STATE, make_workspace
from gitutil import git, init_repo

from cosmic_curriculum.errors import StateError
from cosmic_curriculum.workspace.lost_files import check_nothing_lost

TRAINING = {
    **SEED_STATE,
    "in_flight": {
        "stage_index": 0,
        "attempt": 0,
        "experiment": "curric-s1-score",
        "phase": "training",
        "started_at": "2026-01-01T00:00:00+00:00",
    },
}
LOG = "# 2026-01-01T00:00:00+00:00 trainer curric-s1-score\n@progress {}\n"


def _with(state: dict[str, Any], **flight: Any) -> dict[str, Any]:
    return {**state, "in_flight": {**state["in_flight"], **flight}}


# (what the workspace holds besides a state, whether the history counts as lost, the hint)
HISTORY_CASES = {
    "first training, a trainer log": (TRAINING, {"logs/curric-s1-score.log": LOG}, None),
    "first training, log and bot": (
        TRAINING,
        {"logs/curric-s1-score.log": LOG, "bots/curric-s1-score.json": "{}"},
        None,
    ),
    "evaluating with a command, nothing counted": (
        _with(TRAINING, phase="trained", history_before=0),
        {"logs/curric-s1-score.log": LOG},
        None,
    ),
    "a command's evaluation counted records": (
        _with(TRAINING, phase="trained", history_before=3),
        {},
        "counted 3 record",
    ),
    "evaluated: the state names its record": (
        _with(TRAINING, phase="evaluated", eval_id="ev-1"),
        {},
        "ev-1",
    ),
    "a candidate's evaluation": (
        _with(TRAINING, candidates=[{"k": 1, "experiment": "x-c1", "eval_id": "ev-c1"}]),
        {},
        "ev-c1",
    ),
    "a logged decision": (
        {**SEED_STATE, "log": [{"stage_index": 0, "experiment": "e", "eval_id": "ev-9"}]},
        {},
        "ev-9",
    ),
    "a seed state, nothing else": (SEED_STATE, {}, None),
}


def _workspace(tmp_path: Path, state: dict[str, Any], files: dict[str, str]) -> Path:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    (ws / "eval_history.json").unlink()
    (ws / "curriculum_state.json").write_text(json.dumps(state))
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    return ws


@pytest.mark.parametrize("case", list(HISTORY_CASES))
def test_a_missing_history_is_lost_only_when_something_says_it_existed(
    tmp_path: Path, case: str
) -> None:
    state, files, evidence = HISTORY_CASES[case]
    ws = _workspace(tmp_path, state, files)
    init_repo(ws, message="never holds eval_history.json")
    if evidence is None:
        check_nothing_lost(ws)
        return
    with pytest.raises(StateError) as caught:
        check_nothing_lost(ws)
    message = str(caught.value)
    assert "eval_history.json: missing" in message and evidence in message
    # git never had it: a `git checkout` would fail, so none is suggested
    assert "checkout" not in message and "backup" in message


def test_a_history_in_git_head_is_restored_from_head(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")  # commits eval_history.json
    (ws / "eval_history.json").unlink()
    with pytest.raises(StateError, match=r"git HEAD has eval_history.json.*checkout HEAD --"):
        check_nothing_lost(ws)


def test_a_history_deleted_by_a_commit_is_restored_from_the_one_before(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    git(ws, "rm", "-q", "eval_history.json")
    git(ws, "commit", "-q", "-m", "drop the history")
    deleted = git(ws, "rev-parse", "--short=12", "HEAD")
    with pytest.raises(StateError) as caught:
        check_nothing_lost(ws)
    assert f"checkout {deleted}~1 -- eval_history.json" in str(caught.value)
    git(ws, "checkout", f"{deleted}~1", "--", "eval_history.json")  # the remedy works
    check_nothing_lost(ws)


# (files besides the history, whether the state counts as lost)
STATE_CASES = {
    "a trainer log": ({"logs/curric-s1-score.log": LOG}, True),
    "a trained bot": ({"bots/curric-s1-score.json": "{}"}, True),
    "the curriculum's evaluation": (
        {"eval_history.json": json.dumps([{"id": "a", "curriculum_experiment": "e"}])},
        True,
    ),
    "evaluations by hand only": ({"eval_history.json": json.dumps([{"id": "a"}])}, False),
    "nothing": ({}, False),
}


@pytest.mark.parametrize("case", list(STATE_CASES))
def test_a_missing_state_is_lost_only_when_something_says_it_existed(
    tmp_path: Path, case: str
) -> None:
    files, lost = STATE_CASES[case]
    ws = _workspace(tmp_path, SEED_STATE, files)
    (ws / "curriculum_state.json").unlink()
    if not lost:
        check_nothing_lost(ws)
        return
    with pytest.raises(StateError, match=r"curriculum_state\.json: missing.*from a backup"):
        check_nothing_lost(ws)


@pytest.mark.slow
def test_a_lost_evaluation_record_names_a_copy_that_holds_it(tmp_path: Path) -> None:
    from fakes.workspace import run_in_process

    ws = make_workspace(tmp_path / "ws", stages=["score"])  # commits an empty history
    state = _with(TRAINING, phase="evaluated", eval_id="ev-lost", launched=True)
    (ws / "curriculum_state.json").write_text(json.dumps(state))
    with pytest.raises(StateError) as caught:
        run_in_process(ws)
    message = str(caught.value)
    assert "evaluation ev-lost of curric-s1-score is missing" in message
    assert "git" not in message.split("missing; ", 1)[1].replace("git has no", "")  # HEAD lacks it
    record = {"id": "ev-lost", "wins_a": 12, "wins_b": 8, "draws": 0, "episodes": 20}
    (ws / "eval_history.json").write_text(json.dumps([record]))
    git(ws, "commit", "-qam", "the record")
    (ws / "eval_history.json").write_text("[]")
    with pytest.raises(StateError, match=r"git -C .* show [0-9a-f]{12}:\./eval_history\.json >"):
        run_in_process(ws)
    with pytest.raises(StateError) as again:
        run_in_process(ws)
    remedy = str(again.value).split("`")[1]
    subprocess.run(["bash", "-c", remedy], check=True, timeout=60)  # the remedy works
    assert run_in_process(ws).status == "done"


@pytest.mark.slow
@pytest.mark.parametrize("with_git", [True, False], ids=["git", "no git"])
def test_a_lost_stages_toml_of_a_curriculum_that_ran_is_restored_not_inited(
    tmp_path: Path, with_git: bool
) -> None:
    from fakes.workspace import cli_env, run_cli, run_in_process

    ws = make_workspace(tmp_path / "ws", stages=["score"], git_repo=with_git)
    assert run_in_process(ws).status == "done"
    (ws / "stages.toml").unlink()
    remedy = "checkout HEAD -- stages.toml" if with_git else "from a backup"
    argv = [sys.executable, "-m", "cosmic_curriculum"]
    for result in (
        run_cli(ws),
        subprocess.run(
            [*argv, "report", "--workspace", str(ws)],
            env=cli_env(ws),
            capture_output=True,
            text=True,
            timeout=60,
        ),
    ):
        line = result.stderr.strip()
        assert result.returncode == 2 and "\n" not in line, result.stderr
        assert "stages.toml: missing, but" in line and remedy in line and "init" not in line, line
    shown = subprocess.run(
        [*argv, "status", "--json", "--workspace", str(ws)],
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 2
    assert remedy in json.loads(shown.stdout)["next"]
