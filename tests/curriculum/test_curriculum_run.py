"""The curriculum state machine, in-process, with the scripted fake trainer and evaluator."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fakes.workspace import (
    completed_trainings,
    fake_env,
    make_workspace,
    read_state,
    set_scripts,
    stages_toml,
    trainer_runs,
)
from fakes.workspace import run_in_process as run
from gitutil import git

from cosmic_curriculum.curriculum.reporter import Reporter
from cosmic_curriculum.errors import (
    BlockedError,
    ConfigError,
    EvaluationError,
    GitError,
    LockError,
    StateError,
    TrainerError,
)
from cosmic_curriculum.evaluation.gate import margin_fails
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.workspace.layout import experiment_name, latest_step_checkpoint
from cosmic_curriculum.workspace.lock import WorkspaceLock


class Recorder(Reporter):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def info(self, message: str) -> None:
        self.events.append(("info", message))

    def warning(self, message: str) -> None:
        self.events.append(("warning", message))

    def training_progress(self, attempt: Any, progress: dict[str, Any]) -> None:
        self.events.append(("progress", progress["timesteps"]))

    def attempt_decided(self, entry: Any) -> None:
        self.events.append(("decided", (entry.experiment, entry.decision)))

    def warnings(self) -> list[str]:
        return [m for kind, m in self.events if kind == "warning"]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = make_workspace(tmp_path / "ws")
    for key, value in fake_env(path).items():
        monkeypatch.setenv(key, value)
    return path


def argv_of(ws: Path, exp: str) -> list[str]:
    starts = [r for r in trainer_runs(ws) if r["event"] == "start" and r["experiment"] == exp]
    return list(starts[-1]["argv"])


def evals(ws: Path) -> list[dict[str, str]]:
    return [json.loads(x) for x in (ws / "fake_evals.jsonl").read_text().splitlines()]


def test_names_and_exact_margin_rule() -> None:
    assert experiment_name(0, "score", 0) == "curric-s1-score"
    assert experiment_name(1, "defend", 3) == "curric-s2-defend-retry3"
    # 0.15 exactly at the boundary fails (float subtraction would say 0.1499999...).
    assert margin_fails(30, 45, 100, 0.15)
    assert not margin_fails(31, 45, 100, 0.15)
    assert margin_fails(7, 10, 20, 0.15)
    assert not margin_fails(10, 8, 20, 0.15)


@pytest.mark.slow
def test_full_pass_flow_resume_and_reference_rules(ws: Path) -> None:
    rec = Recorder()
    state = run(ws, rec)
    assert state.status == "done"
    exps = ["curric-s1-score", "curric-s2-defend", "curric-s3-no_draws"]
    assert completed_trainings(ws) == exps
    # argv contract: name, budget, standing args, stage flags, resume by the rules.
    a1 = argv_of(ws, exps[0])
    assert a1[:7] == [exps[0], "--timesteps", "400", "--n-parallel", "2", "--speedup", "4"]
    assert a1[7:] == ["--reset-std", "0.3", "--ent-coef", "0.001", "--stage-flag", "score"]
    assert argv_of(ws, exps[1])[-2:] == ["--resume", f"checkpoints/{exps[0]}/final.zip"]
    assert argv_of(ws, exps[2])[-2:] == ["--resume", f"checkpoints/{exps[1]}/final.zip"]
    refs = [e["reference"] for e in evals(ws)]
    assert refs == ["bots/rookie.json", f"bots/{exps[0]}.json", f"bots/{exps[1]}.json"]
    data = read_state(ws)
    assert [e["experiment"] for e in data["log"]] == exps
    assert all(e["decision"] == "pass" and e["eval"]["episodes"] == 20 for e in data["log"])
    history = json.loads((ws / "eval_history.json").read_text())
    assert [r["id"] for r in history] == [e["eval_id"] for e in data["log"]]
    subjects = git(ws, "log", "--format=%s").splitlines()
    assert subjects[:3] == [f"chore(training): curriculum progress after {e}" for e in exps[::-1]]
    # The final done state is what HEAD holds, and every attempt's bot and log are in it.
    assert json.loads(git(ws, "show", "HEAD:curriculum_state.json"))["status"] == "done"
    tracked = git(ws, "ls-files").splitlines()
    for exp in exps:
        assert f"bots/{exp}.json" in tracked and f"logs/{exp}.log" in tracked
    assert not any(p.startswith("checkpoints/") for p in tracked)
    assert ("progress", 400) in rec.events
    # Running again on a done curriculum does nothing.
    assert run(ws).status == "done"
    assert completed_trainings(ws) == exps


@pytest.mark.slow
def test_retry_then_block_review_and_messages(ws: Path) -> None:
    set_scripts(
        ws,
        eval_script={
            "curric-s2-defend": "fail",
            "curric-s2-defend-retry1": "boundary",
            "curric-s2-defend-retry2": "fail",
        },
    )
    with pytest.raises(BlockedError) as info:
        run(ws)
    msg = str(info.value)
    assert "curric-s2-defend-retry2" in msg and "--force-retry" in msg
    assert "--skip-to-next-stage" in msg and "review-defend.md" in msg
    data = read_state(ws)
    assert data["status"] == "blocked" and data["stage_index"] == 1 and data["attempt"] == 3
    assert [e["decision"] for e in data["log"]] == ["pass", "fail", "fail", "fail"]
    # Retries resume the same stage's previous attempt.
    assert argv_of(ws, "curric-s2-defend-retry1")[-1] == "checkpoints/curric-s2-defend/final.zip"
    assert argv_of(ws, "curric-s2-defend-retry2")[-1] == (
        "checkpoints/curric-s2-defend-retry1/final.zip"
    )
    review = (ws / "logs" / "review-defend.md").read_text()
    assert "curric-s2-defend-retry1" in review and "6-9-5 / 20" in review  # boundary counts
    assert "[curric-s2-defend.log](curric-s2-defend.log)" in review
    assert "--force-retry" in review and "--skip-to-next-stage" in review
    assert "logs/review-defend.md" in git(ws, "ls-files")
    # A plain run of a blocked curriculum refuses (and says how to continue).
    with pytest.raises(BlockedError, match="force-retry"):
        run(ws)
    assert len(completed_trainings(ws)) == 4


def _block_stage_two(ws: Path, **run_options: Any) -> None:
    set_scripts(
        ws,
        eval_script={
            "curric-s2-defend": "fail",
            "curric-s2-defend-retry1": "fail",
            "curric-s2-defend-retry2": "fail",
        },
    )
    with pytest.raises(BlockedError):
        run(ws, **run_options)


@pytest.mark.slow
def test_force_retry_runs_next_attempt_and_blocks_again_on_failure(ws: Path) -> None:
    _block_stage_two(ws)
    set_scripts(ws, eval_script={"*": "fail"})
    with pytest.raises(BlockedError):
        run(ws, force_retry=True, reason="new reward shaping")
    data = read_state(ws)
    last = data["log"][-1]
    assert last["experiment"] == "curric-s2-defend-retry3" and last["decision"] == "fail"
    assert last["reason"] == "new reward shaping" and last["forced_retry"] is True
    assert data["status"] == "blocked" and data["attempt"] == 4
    set_scripts(ws, eval_script={"*": "pass"})
    assert run(ws, force_retry=True).status == "done"
    assert "curric-s2-defend-retry4" in completed_trainings(ws)
    assert argv_of(ws, "curric-s3-no_draws")[-1] == "checkpoints/curric-s2-defend-retry4/final.zip"


@pytest.mark.slow
def test_skip_to_next_stage_records_override_pass(ws: Path) -> None:
    _block_stage_two(ws)
    set_scripts(ws, eval_script={"*": "pass"})
    assert run(ws, skip_to_next_stage=True, reason="good enough").status == "done"
    data = read_state(ws)
    skip = data["log"][4]
    assert skip == {
        "stage_index": 1,
        "experiment": "curric-s2-defend-retry2",
        "attempt": 2,
        "decision": "pass",
        "override": "skip_to_next_stage",
        "reason": "good enough",
        "decided_at": skip["decided_at"],
    }
    # The skipped attempt counts as the stage's passing experiment.
    assert argv_of(ws, "curric-s3-no_draws")[-1] == "checkpoints/curric-s2-defend-retry2/final.zip"
    assert evals(ws)[-1]["reference"] == "bots/curric-s2-defend-retry2.json"
    assert "curric-s2-defend-retry2" in git(ws, "log", "-1", "--skip=1", "--format=%s")


def test_overrides_on_a_curriculum_that_is_not_blocked_are_errors(ws: Path) -> None:
    with pytest.raises(ConfigError, match="only to a blocked curriculum"):
        run(ws, force_retry=True)
    with pytest.raises(ConfigError, match="only to a blocked curriculum"):
        run(ws, skip_to_next_stage=True, reason="x")
    with pytest.raises(ConfigError, match="--reason"):
        run(ws, reason="why")
    assert trainer_runs(ws) == []


@pytest.mark.slow
def test_trainer_failure_is_an_attempt_error_and_rerun_retries_it(ws: Path) -> None:
    set_scripts(ws, trainer_script={"curric-s1-score": {"mode": "fail_once"}})
    with pytest.raises(TrainerError) as info:
        run(ws)
    msg = str(info.value)
    assert "exited with status 3" in msg and "CUDA out of memory" in msg  # quotes the log
    assert "not a gate failure" in msg
    data = read_state(ws)
    assert data["log"] == [] and data["attempt"] == 0
    assert data["in_flight"]["error"] == "training command exited with status 3"
    from cosmic_curriculum.status.facts import status_data

    status = status_data(ws)
    assert status["in_flight"]["error"] and "retries it" in status["next"]
    assert run(ws).status == "done"
    data = read_state(ws)
    assert "last_error" not in data
    assert data["log"][0]["experiment"] == "curric-s1-score"  # same attempt, not a retry
    # The retried training resumed from the failed run's periodic checkpoint.
    assert argv_of(ws, "curric-s1-score")[-2:] == [
        "--resume",
        "checkpoints/curric-s1-score/step_200.zip",
    ]


@pytest.mark.parametrize(
    ("mode", "needle"),
    [
        ("no_artifacts", "without writing checkpoints/curric-s1-score/final.zip"),
        ("corrupt_bot", "invalid bot"),
    ],
)
def test_trainer_contract_violations(ws: Path, mode: str, needle: str) -> None:
    set_scripts(ws, trainer_script={"*": {"mode": mode}})
    with pytest.raises(TrainerError, match=needle):
        run(ws)
    assert read_state(ws)["log"] == []


def test_attempt_timeout_stops_a_hanging_trainer(ws: Path) -> None:
    set_scripts(ws, trainer_script={"*": {"mode": "hang", "step_seconds": 0.05}})
    with pytest.raises(TrainerError, match="attempt-timeout"):
        run(ws, attempt_timeout=1.0)
    pid = trainer_runs(ws)[0]["pid"]
    assert runner.process_start_time(pid) is None  # gone


@pytest.mark.slow
def test_seed_checkpoint_only_for_stage_one_first_attempt(ws: Path, tmp_path: Path) -> None:
    seed = tmp_path / "seed.zip"
    seed.write_bytes(b"PK")
    set_scripts(ws, eval_script={"curric-s1-score": "fail"})
    run(ws, seed_checkpoint=seed, **{})
    # Copied into the workspace's own checkpoints/ (trainers load checkpoints only from there).
    assert argv_of(ws, "curric-s1-score")[-2:] == ["--resume", "checkpoints/seed/seed.zip"]
    assert (ws / "checkpoints" / "seed" / "seed.zip").read_bytes() == b"PK"
    assert argv_of(ws, "curric-s1-score-retry1")[-1] == "checkpoints/curric-s1-score/final.zip"


def test_seed_format_files_load_resume_and_keep_keys(ws: Path) -> None:
    # A seed state mid-curriculum: stage 1 passed under the original script.
    (ws / "bots" / "curric-s1-score.json").write_text('{"kind": "fake"}\n')
    (ws / "checkpoints" / "curric-s1-score").mkdir(parents=True)
    (ws / "checkpoints" / "curric-s1-score" / "final.zip").write_bytes(b"PK")
    seed_entry = {
        "stage_index": 0,
        "experiment": "curric-s1-score",
        "attempt": 0,
        "eval": {"wins_a": 40, "wins_b": 35, "draws": 25, "episodes": 100},
        "decision": "pass",
        "operator_note": "kept",
    }
    seed = {
        "stage_index": 1,
        "attempt": 0,
        "status": "in_progress",
        "log": [seed_entry],
        "custom_key": {"a": 1},
    }
    (ws / "curriculum_state.json").write_text(json.dumps(seed))
    (ws / "eval_history.json").write_text(
        json.dumps([{"wins_a": 40, "wins_b": 35, "draws": 25, "episodes": 100, "note": "seed"}])
    )
    assert run(ws).status == "done"
    data = read_state(ws)
    assert data["custom_key"] == {"a": 1}
    assert data["log"][0] == seed_entry
    history = json.loads((ws / "eval_history.json").read_text())
    assert history[0] == {"wins_a": 40, "wins_b": 35, "draws": 25, "episodes": 100, "note": "seed"}
    assert completed_trainings(ws) == ["curric-s2-defend", "curric-s3-no_draws"]
    assert argv_of(ws, "curric-s2-defend")[-1] == "checkpoints/curric-s1-score/final.zip"


@pytest.mark.parametrize(
    "content",
    [
        "",
        '{"stage_index": 0, "att',
        "[1, 2]",
        '{"stage_index": -1, "attempt": 0, "status": "x", "log": []}',
        '{"schema_version": 99, "log": []}',
    ],
)
def test_corrupt_state_is_refused_and_never_overwritten(ws: Path, content: str) -> None:
    (ws / "curriculum_state.json").write_text(content)
    with pytest.raises(StateError, match=r"curriculum_state\.json"):
        run(ws)
    assert (ws / "curriculum_state.json").read_text() == content
    assert trainer_runs(ws) == []


def test_stage_index_out_of_range_is_refused(ws: Path) -> None:
    (ws / "curriculum_state.json").write_text(
        json.dumps({"stage_index": 7, "attempt": 0, "status": "in_progress", "log": []})
    )
    with pytest.raises(StateError, match="out of range"):
        run(ws)


def test_corrupt_history_is_refused(ws: Path) -> None:
    (ws / "eval_history.json").write_text('[{"wins_a": 1}')
    with pytest.raises(StateError, match=r"eval_history\.json"):
        run(ws)
    assert trainer_runs(ws) == []


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("max_retries = -1\n[[stages]]\nname = 'a'\n", "max_retries"),
        ("bogus = 1\n[[stages]]\nname = 'a'\n", "bogus"),
        ("[[stages]]\nname = '../x'\n", "name"),
        ("not toml [", "stages.toml"),
    ],
)
def test_invalid_configs_are_refused(ws: Path, text: str, needle: str) -> None:
    (ws / "stages.toml").write_text(text)
    with pytest.raises(ConfigError, match=needle):
        run(ws)


def test_preflight_reference_bot_and_training_command(ws: Path) -> None:
    (ws / "bots" / "rookie.json").unlink()
    with pytest.raises(ConfigError, match=r"rookie\.json"):
        run(ws)
    (ws / "bots" / "rookie.json").write_text("{}")
    text = stages_toml().replace(
        "training_command = [", 'training_command = ["scripts/missing.sh", '
    )
    (ws / "stages.toml").write_text(text)
    with pytest.raises(ConfigError, match="training_command"):
        run(ws)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "missing.sh").write_text("#!/bin/sh\n")
    with pytest.raises(ConfigError, match="chmod"):
        run(ws)
    assert trainer_runs(ws) == []


@pytest.mark.slow
def test_config_change_of_a_finished_stage_needs_consent(ws: Path) -> None:
    _block_stage_two(ws)
    text = (ws / "stages.toml").read_text().replace('"--stage-flag", "score"', '"--new"')
    (ws / "stages.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"finished stage 1 score .*flags"):
        run(ws, skip_to_next_stage=True)
    rec = Recorder()
    run(ws, rec, skip_to_next_stage=True, accept_config_change=True)
    assert any("changed since the last run" in w for w in rec.warnings())
    assert read_state(ws)["status"] == "done"


@pytest.mark.slow
def test_config_change_of_an_unfinished_stage_is_a_warning(ws: Path) -> None:
    set_scripts(ws, eval_script={"curric-s2-defend": "error"})
    with pytest.raises(EvaluationError):
        run(ws)
    text = (ws / "stages.toml").read_text().replace('"--stage-flag", "no_draws"', '"--z"')
    (ws / "stages.toml").write_text(text)
    set_scripts(ws, eval_script={})
    rec = Recorder()
    assert run(ws, rec).status == "done"
    assert any("stage 3 no_draws: flags" in w for w in rec.warnings())
    assert argv_of(ws, "curric-s3-no_draws")[-3] == "--z"


@pytest.mark.slow
def test_user_git_work_is_untouched(ws: Path) -> None:
    (ws / "user.py").write_text("staged\n")
    git(ws, "add", "user.py")
    (ws / "stages.toml").write_text((ws / "stages.toml").read_text() + "\n# my edit\n")
    before = git(ws, "status", "--porcelain")
    staged = git(ws, "diff", "--cached")
    run(ws)
    assert git(ws, "diff", "--cached") == staged
    assert "# my edit" in (ws / "stages.toml").read_text()
    after = [ln for ln in git(ws, "status", "--porcelain").splitlines() if "fake_" not in ln]
    assert after == before.splitlines()
    for rev in ("HEAD", "HEAD~1", "HEAD~2"):
        files = git(ws, "show", "--name-only", "--format=", rev).splitlines()
        assert "user.py" not in files and "stages.toml" not in files


@pytest.mark.slow
def test_not_a_git_repo_warns_once_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_workspace(tmp_path / "plain", git_repo=False)
    for key, value in fake_env(path).items():
        monkeypatch.setenv(key, value)
    rec = Recorder()
    assert run(path, rec).status == "done"
    assert sum("not a git repository" in w for w in rec.warnings()) == 1


@pytest.mark.slow
def test_unreachable_remote_sets_push_pending_and_training_goes_on(
    ws: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(ws, "remote", "add", "origin", str(bare))
    _block_stage_two(ws, push=True)
    assert git(bare, "rev-parse", "main") == git(ws, "rev-parse", "HEAD")
    assert read_state(ws)["push_pending"] is False
    import shutil

    shutil.rmtree(bare)
    rec = Recorder()
    set_scripts(ws, eval_script={"*": "pass"})
    assert run(ws, rec, push=True, skip_to_next_stage=True).status == "done"
    assert any("push" in w for w in rec.warnings())
    assert read_state(ws)["push_pending"] is True
    git(tmp_path, "init", "-q", "--bare", str(bare))  # the remote is back
    rec = Recorder()
    run(ws, rec, push=True)  # catch-up commit carries the flag change; the push succeeds
    assert git(bare, "rev-parse", "main") == git(ws, "rev-parse", "HEAD")


def test_detached_head_is_refused_before_training(ws: Path) -> None:
    git(ws, "checkout", "-q", "--detach")
    with pytest.raises(GitError, match="detached"):
        run(ws)
    assert trainer_runs(ws) == []


def test_second_run_is_refused_while_the_lock_is_held(ws: Path) -> None:
    with WorkspaceLock(ws), pytest.raises(LockError, match=f"pid {os.getpid()}"):
        run(ws)


@pytest.mark.slow
def test_crash_after_training_never_retrains(ws: Path) -> None:
    """State left at 'trained' (a kill between training and evaluation): no retraining."""
    set_scripts(ws, eval_script={"*": "error"})
    with pytest.raises(Exception, match="evaluation_command failed"):
        run(ws)
    assert read_state(ws)["in_flight"]["phase"] == "trained"
    set_scripts(ws, eval_script={"*": "pass"})
    assert run(ws).status == "done"
    assert completed_trainings(ws).count("curric-s1-score") == 1


def test_latest_step_checkpoint(tmp_path: Path) -> None:
    assert latest_step_checkpoint(tmp_path / "none") is None
    for n in (5, 100, 20):
        (tmp_path / f"step_{n}.zip").write_bytes(b"")
    (tmp_path / "step_x.zip").write_bytes(b"")
    assert latest_step_checkpoint(tmp_path) == tmp_path / "step_100.zip"


def test_built_in_evaluator_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No evaluation_command: bots are validated by bots.load_bot and evaluated in-process."""
    repo_bots = Path(__file__).resolve().parents[2] / "bots"
    assert (repo_bots / "rookie.json").is_file(), (
        f"{repo_bots / 'rookie.json'}: missing; the rookie bot is committed in bots/"
    )
    ws = make_workspace(
        tmp_path / "ws",
        stages=["score"],
        max_retries=0,
        external_eval=False,
        trainer_script={"*": {"bot_source": str(repo_bots / "rookie.json")}},
    )
    (ws / "bots" / "rookie.json").write_bytes((repo_bots / "rookie.json").read_bytes())
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    try:
        state = run(ws)
    except BlockedError:
        state = None
    data = read_state(ws)
    entry = data["log"][0]
    record = json.loads((ws / "eval_history.json").read_text())[0]
    assert record["id"] == entry["eval_id"] and record["curriculum_experiment"] == "curric-s1-score"
    assert entry["eval"]["episodes"] == record["episodes"] == 20
    assert entry["decision"] == record["gate"]["verdict"]
    assert (state is not None) == (entry["decision"] == "pass")
    # A bot that fails validation is an attempt error, not a gate failure.
    (ws / "bots" / "broken.json").write_text('{"kind": "mlp"}')
    ws2 = make_workspace(
        tmp_path / "ws2",
        stages=["score"],
        external_eval=False,
        trainer_script={"*": {"bot_source": str(ws / "bots" / "broken.json")}},
    )
    (ws2 / "bots" / "rookie.json").write_bytes((repo_bots / "rookie.json").read_bytes())
    for key, value in fake_env(ws2).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(TrainerError, match="invalid bot"):
        run(ws2)


def test_recorded_group_is_stopped_only_when_it_is_really_ours(ws: Path) -> None:
    import subprocess
    import sys

    def sleeper() -> subprocess.Popen[bytes]:
        code = "import time; time.sleep(60)"
        return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    def record(proc: subprocess.Popen[bytes], start_time: int | None) -> None:
        data = read_state(ws)
        data["in_flight"] = {
            "stage_index": 0,
            "attempt": 0,
            "experiment": "curric-s1-score",
            "phase": "training",
            "started_at": "2026-01-01T00:00:00+00:00",
            "pgid": proc.pid,
            "pid": proc.pid,
            "pid_start_time": start_time,
        }
        (ws / "curriculum_state.json").write_text(json.dumps(data))

    stranger, ours = sleeper(), sleeper()
    try:
        # The recorded pid now belongs to an unrelated process (start time differs).
        record(stranger, (runner.process_start_time(stranger.pid) or 0) - 5)
        set_scripts(ws, eval_script={"*": "error"})
        with pytest.raises(EvaluationError):
            run(ws)
        assert stranger.poll() is None  # left alone
        record(ours, runner.process_start_time(ours.pid))
        rec = Recorder()
        with pytest.raises(EvaluationError):
            run(ws, rec)
        assert ours.wait(timeout=10) is not None
        assert any(f"process group {ours.pid}" in w for w in rec.warnings())
    finally:
        for proc in (stranger, ours):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_stale_index_lock_is_removed_at_start(ws: Path) -> None:
    (ws / ".git" / "index.lock").write_text("")
    rec = Recorder()
    assert run(ws, rec).status == "done"
    assert any("index.lock" in w for w in rec.warnings())
    assert "curric-s3-no_draws" in git(ws, "log", "-1", "--format=%s")


def test_flags_travel_as_argv_never_through_a_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    nasty = ["--note", "a; touch pwned", "--x", "$(touch pwned2)", "--y", "two words `id`"]
    text = (
        (ws / "stages.toml")
        .read_text()
        .replace('flags = ["--stage-flag", "score"]', f"flags = {json.dumps(nasty)}")
    )
    (ws / "stages.toml").write_text(text)
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    run(ws)
    assert argv_of(ws, "curric-s1-score")[-len(nasty) :] == nasty
    assert not list(ws.rglob("pwned*"))


def test_git_missing_from_path_runs_without_commits(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import sys

    bin_dir = ws.parent / "bin-without-git"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    head = subprocess_git_head(ws)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert shutil.which("git") is None
    rec = Recorder()
    assert run(ws, rec).status == "done"
    assert sum("git is not installed" in w for w in rec.warnings()) == 1
    monkeypatch.undo()
    assert subprocess_git_head(ws) == head


def subprocess_git_head(ws: Path) -> str:
    return git(ws, "rev-parse", "HEAD")


@pytest.mark.slow
def test_disk_full_during_a_state_write_keeps_the_old_state(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from cosmic_curriculum.system import fsio

    real = fsio.atomic_write_bytes
    calls = {"n": 0}

    def flaky(path: Path, data: bytes) -> None:
        if Path(path).name == "curriculum_state.json":
            calls["n"] += 1
            if calls["n"] == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(fsio, "atomic_write_bytes", flaky)
    before = (ws / "curriculum_state.json").read_text()
    with pytest.raises(StateError, match=r"No space left on device.*previous state is intact"):
        run(ws)
    after = (ws / "curriculum_state.json").read_text()
    json.loads(after)  # still a valid state (the last successful write)
    assert after != "" and before
    assert not list(ws.glob(".*.tmp-*"))
    monkeypatch.setattr(fsio, "atomic_write_bytes", real)
    assert run(ws).status == "done"
    assert completed_trainings(ws).count("curric-s1-score") == 1


def test_odd_episode_count_is_refused_before_training_with_the_built_in_evaluator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("cosmic_curriculum.evaluation.evaluate")
    ws = make_workspace(tmp_path / "ws", episodes=21, external_eval=False)
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr("cosmic_curriculum.curriculum.preflight.validate_bot", lambda *a, **k: None)
    with pytest.raises(ConfigError, match=r"stage 1 score.*21"):
        run(ws)
    assert trainer_runs(ws) == []


def test_console_reporter_survives_a_vanished_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """After `tmux kill-session` writes fail; the reporter must not stop the run's cleanup."""
    import sys
    import threading

    from rich.console import Console

    from cosmic_curriculum.curriculum.reporter import ConsoleReporter
    from cosmic_curriculum.launchers.tmux import PLAIN_OUTPUT_ENV
    from cosmic_curriculum.workspace.state import Attempt, Candidate, CurriculumState, LogEntry

    monkeypatch.delenv(PLAIN_OUTPUT_ENV, raising=False)
    handle = open(tmp_path / "tty", "w")  # noqa: SIM115
    reporter = ConsoleReporter(Console(file=handle, force_terminal=True))
    assert not reporter.plain  # a terminal: the progress bars are what must survive
    threads, streams = set(threading.enumerate()), (sys.stdout, sys.stderr)
    handle.close()
    attempt = Attempt(stage_index=0, attempt=0, experiment="curric-s1-score", timesteps=10)
    candidate = Candidate(k=1, experiment="curric-s1-score-c1", seed=1, phase="trained")
    reporter.warning("still fine")
    reporter.attempt_started(attempt, ["t", "curric-s1-score"], tmp_path / "x.log")
    reporter.training_progress(attempt, {"timesteps": 5, "total": 10, "fps": 1.0})
    reporter.candidate_started(attempt, candidate, ["t"], tmp_path / "c1.log")
    reporter.candidate_progress(attempt, candidate, {"timesteps": 5, "total": 10})
    reporter.candidate_finished(attempt, candidate)
    reporter.training_finished(attempt)
    reporter.evaluation_progress(attempt, {"episodes": 2, "planned": 4})
    reporter.attempt_decided(
        LogEntry(stage_index=0, experiment="curric-s1-score", attempt=0, decision="pass")
    )
    reporter.finished(CurriculumState(status="done"))
    # Every call returned; no bar was left running (no refresh thread writing to the dead
    # terminal, sys.stdout/stderr not redirected to it) and nothing went anywhere else.
    assert reporter._progress is None
    assert set(threading.enumerate()) <= threads
    assert (sys.stdout, sys.stderr) == streams
    assert (tmp_path / "tty").read_text() == "" and capfd.readouterr() == ("", "")


@pytest.mark.slow
def test_records_of_a_curriculum_started_over_are_not_adopted(ws: Path) -> None:
    old = {
        "wins_a": 0,
        "wins_b": 20,
        "draws": 0,
        "episodes": 20,
        "id": "ev-old",
        "created_at": "2020-01-01T00:00:00+00:00",
        "curriculum_experiment": "curric-s1-score",
    }
    (ws / "eval_history.json").write_text(json.dumps([old]))
    assert run(ws).status == "done"  # the old failing record was not taken for this attempt
    assert read_state(ws)["log"][0]["eval_id"] != "ev-old"
    assert len(evals(ws)) == 3


def test_a_run_removes_stale_temps_wherever_the_workspace_writes(ws: Path) -> None:
    """A kill -9 mid-write can leave a temp in any directory written atomically: the
    trackers' outbox, the report's pictures, an experiment's checkpoints and league."""
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()  # a writer that no longer lives
    stale = [
        ws / "logs" / "tracking" / f".tensorboard.json.tmp-{dead.pid}-ab12",
        ws / "logs" / "report" / f".curves.png.tmp-{dead.pid}-ab12",
        ws / "checkpoints" / "curric-s1-x" / f".final.league.json.tmp-{dead.pid}-ab12",
        ws / "checkpoints" / "curric-s1-x" / "league" / f".snap-1.json.tmp-{dead.pid}-ab12",
    ]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("torn")
    alive = ws / "logs" / "tracking" / f".wandb.json.tmp-{os.getpid()}-cd34"
    alive.write_text("being written")  # its writer (this process) still lives: kept
    assert run(ws).status == "done"
    assert [p for p in stale if p.exists()] == []
    assert alive.exists()
