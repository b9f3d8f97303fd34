"""Bad input and faults (issue 6, list 1-8) that other test files do not already cover.

Every case runs the real CLI (or the orchestrator in-process where a fault must be
injected) and checks the same three things: a one-line error naming the file or setting
and the fix, a non-zero exit, and nothing overwritten or lost (state, history and git
HEAD unchanged, no training started). docs/RELIABILITY.md maps each case of the issue to
the test that covers it, here or elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakes.workspace import (
    cli_env,
    completed_trainings,
    fake_env,
    make_workspace,
    read_state,
    run_in_process,
    set_scripts,
    stages_toml,
    trainer_runs,
)
from gitutil import git

from cosmic_curriculum.curriculum.reporter import Reporter
from cosmic_curriculum.errors import (
    BlockedError,
    EvaluationError,
    LockError,
    StateError,
    TrainerError,
)
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system import processes as runner

REPO_BOTS = Path(__file__).resolve().parent.parent / "bots"
EXPS = ["curric-s1-score", "curric-s2-defend", "curric-s3-no_draws"]


class Recorder(Reporter):
    def __init__(self) -> None:
        self.warned: list[str] = []

    def warning(self, message: str) -> None:
        self.warned.append(message)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


@pytest.fixture
def env_ws(ws: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    return ws


def cli(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", *args],
        env=env or cli_env(ws),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ws,
    )


def run_cli(ws: Path, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return cli(ws, "run", "--workspace", str(ws), "--no-push", *args, **kw)


def snapshot(ws: Path) -> dict[str, Any]:
    """What must not change when a run is refused."""
    return {
        name: (ws / name).read_bytes() if (ws / name).exists() else None
        for name in ("curriculum_state.json", "eval_history.json", "stages.toml")
    } | {"HEAD": git(ws, "rev-parse", "HEAD"), "runs": trainer_runs(ws)}


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper that is not us counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exactly one `error: ...` line on stderr, naming every needle."""
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: "), line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


# --------------------------------------------------------------------------- 1. stages.toml

ONE = '[[stages]]\nname = "a"\n'


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        # git has it: restored from there, not created with `init` (test_lost_files covers
        # a workspace without git; test_config a file that never existed)
        (None, ["stages.toml", "missing, but git HEAD has", "checkout HEAD -- stages.toml"]),
        ("stages = [", ["stages.toml", "TOML"]),
        ("colour = 1\n" + ONE, ["stages.toml", "colour"]),
        ("max_retries = 'two'\n" + ONE, ["stages.toml", "max_retries"]),
        (ONE + ONE, ["stages.toml", "used twice"]),
        ('[[stages]]\nname = "a/b"\n', ["stages.toml", "stages[0].name"]),
        ('[[stages]]\nname = ".."\n', ["stages.toml", "stages[0].name"]),
        ("stages = []\n", ["stages.toml", "no stages"]),
        ("max_retries = -1\n" + ONE, ["stages.toml", "max_retries"]),
        ("eval_episodes = -4\n" + ONE, ["stages.toml", "eval_episodes"]),
        ("regression_margin = 0\n" + ONE, ["stages.toml", "regression_margin"]),
        ("regression_margin = 1.0\n" + ONE, ["stages.toml", "regression_margin"]),
    ],
    ids=[
        "missing",
        "not-toml",
        "unknown-key",
        "wrong-type",
        "duplicate-names",
        "slash-in-name",
        "dotdot-name",
        "no-stages",
        "negative-retries",
        "negative-episodes",
        "margin-0",
        "margin-1",
    ],
)
def test_bad_stages_toml_is_refused_by_run(ws: Path, text: str | None, needles: list[str]) -> None:
    if text is None:
        (ws / "stages.toml").unlink()
    else:
        (ws / "stages.toml").write_text(text)
    before = snapshot(ws)
    assert_one_line_error(run_cli(ws), *needles)
    assert snapshot(ws) == before


# --------------------------------------------------------------------------- 2-3. state files


@pytest.mark.parametrize(
    ("name", "content", "needles"),
    [
        ("curriculum_state.json", "", ["curriculum_state.json", "empty", "git show HEAD"]),
        ("curriculum_state.json", '{"stage_index": 0, "att', ["curriculum_state.json", "JSON"]),
        ("curriculum_state.json", "[1]", ["curriculum_state.json", "JSON object"]),
        (
            "curriculum_state.json",
            '{"stage_index": 0, "attempt": 0, "status": "paused", "log": []}',
            ["curriculum_state.json", "status", "git show HEAD"],
        ),
        (
            "curriculum_state.json",
            '{"schema_version": 99, "stage_index": 0, "attempt": 0, "log": []}',
            ["curriculum_state.json", "schema_version 99", "upgrade"],
        ),
        (
            "curriculum_state.json",
            '{"stage_index": 5, "attempt": 0, "status": "in_progress", "log": []}',
            ["curriculum_state.json", "stage_index 5", "stages.toml"],
        ),
        ("eval_history.json", '[{"wins_a": 1', ["eval_history.json", "JSON", "git show HEAD"]),
        ("eval_history.json", '{"wins_a": 1}', ["eval_history.json"]),
    ],
    ids=[
        "state-empty",
        "state-truncated",
        "state-wrong-schema",
        "state-bad-status",
        "state-future-version",
        "state-stage-out-of-range",
        "history-truncated",
        "history-not-a-list",
    ],
)
def test_bad_state_files_are_refused_and_kept(
    ws: Path, name: str, content: str, needles: list[str]
) -> None:
    (ws / name).write_text(content)
    before = snapshot(ws)
    result = run_cli(ws)
    assert_one_line_error(result, *needles)
    assert snapshot(ws) == before
    # status must refuse the same files instead of showing a fresh curriculum.
    status = cli(ws, "status", "--workspace", str(ws))
    if "stage_index 5" in needles:  # a readable state: status shows it and says what is wrong
        assert status.returncode == 0 and "out of range" in status.stdout
    else:
        assert status.returncode != 0 and name in status.stderr


def test_a_state_whose_experiment_escapes_the_workspace_is_refused(ws: Path) -> None:
    state = {
        "stage_index": 0,
        "attempt": 0,
        "status": "in_progress",
        "log": [],
        "in_flight": {
            "stage_index": 0,
            "attempt": 0,
            "experiment": "../../outside",
            "phase": "training",
        },
    }
    (ws / "curriculum_state.json").write_text(json.dumps(state))
    before = snapshot(ws)
    assert_one_line_error(run_cli(ws), "curriculum_state.json", "in_flight.experiment")
    assert snapshot(ws) == before
    assert not (ws.parent.parent / "outside.json").exists()


# --------------------------------------------------------------------------- 3. bots


def mlp_document(**changes: Any) -> dict[str, Any]:
    """A valid MLP bot document (43 → 8 → 6), then ``changes`` applied."""
    from cosmic_curriculum.arena import ACT_SIZE, OBS_SIZE
    from cosmic_curriculum.arena.settings import GameSettings
    from cosmic_curriculum.bots import mlp_bot_document

    rng = np.random.default_rng(0)
    layers = [
        (rng.normal(size=(8, OBS_SIZE)) * 0.1, np.zeros(8), "tanh"),
        (rng.normal(size=(ACT_SIZE, 8)) * 0.1, np.zeros(ACT_SIZE), "linear"),
    ]
    doc = mlp_bot_document(layers, None, None, GameSettings(), 16, {"test": True})
    for key, value in changes.items():
        if key == "layer0_weights":
            doc["network"]["layers"][0]["weights"] = value
        else:
            doc[key] = value
    return doc


def bad_bots() -> dict[str, str]:
    good = mlp_document()
    nan = json.loads(json.dumps(good))
    nan["network"]["layers"][1]["bias"][0] = "NaN"
    text_nan = json.dumps(nan).replace('"NaN"', "NaN")
    shapes = mlp_document(layer0_weights=[[0.0] * 40] * 8)
    obs = mlp_document(observation_size=30, layer0_weights=[[0.0] * 30] * 8)
    return {
        "not-json": "{not json",
        "wrong-shapes": json.dumps(shapes),
        "nan-weights": text_nan,
        "wrong-observation-size": json.dumps(obs),
        "pickle": "\x80\x04\x95 pickled",
    }


BAD_BOTS = ["not-json", "wrong-shapes", "nan-weights", "wrong-observation-size", "pickle"]
BOT_NEEDLE = {
    "not-json": "JSON",
    "wrong-shapes": "weights",
    "nan-weights": "NaN",
    "wrong-observation-size": "observation_size",
    "pickle": "",
}


def builtin_eval_ws(tmp_path: Path, **kw: Any) -> Path:
    assert (REPO_BOTS / "rookie.json").is_file(), (
        f"{REPO_BOTS / 'rookie.json'}: missing; the rookie bot is committed in bots/"
    )
    ws = make_workspace(tmp_path / "ws", stages=["score"], external_eval=False, **kw)
    (ws / "bots" / "rookie.json").write_bytes((REPO_BOTS / "rookie.json").read_bytes())
    git(ws, "commit", "-qam", "real rookie")
    return ws


@pytest.mark.parametrize("fault", BAD_BOTS)
def test_bad_reference_bot_is_refused_before_training(tmp_path: Path, fault: str) -> None:
    ws = builtin_eval_ws(tmp_path)
    (ws / "bots" / "rookie.json").write_text(bad_bots()[fault])
    before = snapshot(ws)
    assert_one_line_error(run_cli(ws), "bots/rookie.json", BOT_NEEDLE[fault])
    assert snapshot(ws) == before


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["wrong-shapes", "nan-weights", "wrong-observation-size"])
def test_bad_trained_bot_is_an_attempt_error_and_rerun_retrains(tmp_path: Path, fault: str) -> None:
    ws = builtin_eval_ws(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(bad_bots()[fault])
    set_scripts(ws, trainer_script={"*": {"bot_source": str(bad)}})
    history = (ws / "eval_history.json").read_bytes()
    result = run_cli(ws)
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: curric-s1-score: training command wrote an invalid bot")
    assert BOT_NEEDLE[fault] in first and "retry this attempt" in first
    data = read_state(ws)
    assert data["log"] == [] and data["in_flight"]["phase"] == "training"
    assert (ws / "eval_history.json").read_bytes() == history  # no evaluation of a bad bot
    # The bot file is kept for inspection (committed with the log), not deleted.
    assert (ws / "bots" / "curric-s1-score.json").read_text() == bad.read_text()


# --------------------------------------------------------------------------- 4. trainer


@pytest.mark.slow
def test_trainer_killed_by_a_signal_is_an_attempt_error(ws: Path) -> None:
    set_scripts(ws, trainer_script={"curric-s1-score": {"mode": "killed"}})
    result = run_cli(ws)
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert "curric-s1-score: training command was killed by signal 9" in first
    assert "retry this attempt" in first
    assert "  | " in result.stderr  # the log's last lines are quoted below it
    data = read_state(ws)
    assert data["in_flight"]["error"] == "training command was killed by signal 9"
    assert data["log"] == []
    set_scripts(ws, trainer_script={})
    assert run_cli(ws).returncode == 0
    assert completed_trainings(ws) == EXPS


@pytest.mark.slow
def test_attempt_timeout_option_stops_a_hanging_trainer(ws: Path) -> None:
    set_scripts(ws, trainer_script={"*": {"mode": "hang", "step_seconds": 0.05}})
    t0 = time.monotonic()
    result = run_cli(ws, "--attempt-timeout", "1")
    assert time.monotonic() - t0 < 30
    assert result.returncode == 1
    assert "--attempt-timeout 1s" in result.stderr.splitlines()[0]
    pid = trainer_runs(ws)[0]["pid"]
    assert runner.process_start_time(pid) is None


# --------------------------------------------------------------------------- 5. git


def test_rebase_in_progress_is_refused_before_training(ws: Path) -> None:
    (ws / ".git" / "rebase-merge").mkdir()
    before = snapshot(ws)
    assert_one_line_error(run_cli(ws), "rebase is in progress", "git rebase --abort")
    assert snapshot(ws) == before


def test_detached_head_is_refused_by_the_cli(ws: Path) -> None:
    git(ws, "checkout", "-q", "--detach")
    before = snapshot(ws)
    assert_one_line_error(run_cli(ws), "HEAD is detached", "git switch")
    assert snapshot(ws) == before


@pytest.mark.slow
def test_users_staged_unstaged_and_untracked_work_is_kept_exactly(ws: Path) -> None:
    # One file with a staged change and a further unstaged change on top of it.
    (ws / "notes.txt").write_text("v1\n")
    git(ws, "add", "notes.txt")
    git(ws, "commit", "-qm", "notes")
    (ws / "notes.txt").write_text("v2 staged\n")
    git(ws, "add", "notes.txt")
    (ws / "notes.txt").write_text("v3 unstaged\n")
    # A staged new file, a staged edit of a file the tool reads, and an untracked file.
    (ws / "new.py").write_text("print('staged')\n")
    git(ws, "add", "new.py")
    (ws / "bots" / "mine.json").write_text('{"kind": "fake"}\n')
    git(ws, "add", "bots/mine.json")
    (ws / "scratch.txt").write_text("untracked\n")
    before = {
        "cached": git(ws, "diff", "--cached"),
        "worktree": git(ws, "diff"),
        "status": git(ws, "status", "--porcelain"),
        "notes": (ws / "notes.txt").read_text(),
    }
    assert run_cli(ws).returncode == 0
    after = {
        "cached": git(ws, "diff", "--cached"),
        "worktree": git(ws, "diff"),
        "status": git(ws, "status", "--porcelain"),
        "notes": (ws / "notes.txt").read_text(),
    }
    assert after == before
    committed = git(ws, "log", "--format=", "--name-only", "HEAD~3..HEAD").split()
    assert not {"notes.txt", "new.py", "bots/mine.json", "scratch.txt"} & set(committed)


def test_stale_index_lock_is_removed_unless_a_git_runs_in_this_repository(
    ws: Path, tmp_path: Path
) -> None:
    """A git process elsewhere (an editor polling another repository) must not keep a
    stale lock here forever; one working in this repository must."""
    from cosmic_curriculum.vcs import repo as vcs

    fake_git = tmp_path / "bin" / "git"
    fake_git.parent.mkdir()
    fake_git.symlink_to(Path("/bin/sleep") if Path("/bin/sleep").exists() else "/usr/bin/sleep")
    lock = ws / ".git" / "index.lock"
    for cwd, removed in ((tmp_path, True), (ws, False)):
        lock.write_text("")
        proc = subprocess.Popen([str(fake_git), "30"], cwd=cwd)
        try:
            deadline = time.monotonic() + 5
            while Path(f"/proc/{proc.pid}/comm").read_text().strip() != "git":
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert (vcs.remove_stale_index_locks(ws) == [lock]) is removed
            assert lock.exists() is not removed
        finally:
            proc.kill()
            proc.wait()
    lock.unlink()


@pytest.fixture
def hanging_ssh(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """An ssh that never answers (a dead network): records its pid, sleeps."""
    pids = tmp_path / "ssh.pids"
    script = tmp_path / "hanging-ssh"
    script.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 60\n")
    script.chmod(0o755)
    yield {"GIT_SSH": str(script), "GIT_SSH_COMMAND": str(script)}, pids
    if pids.exists():
        for line in pids.read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line), signal.SIGKILL)


@pytest.mark.slow
def test_hanging_remote_times_out_training_goes_on_and_push_is_retried(
    env_ws: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    hanging_ssh: tuple[dict[str, str], Path],
) -> None:
    ws = env_ws
    env, pids = hanging_ssh
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    git(ws, "remote", "add", "origin", "ssh://git@unreachable.invalid/curriculum.git")
    rec = Recorder()
    t0 = time.monotonic()
    assert run_in_process(ws, rec, push=True, push_timeout=1.0).status == "done"
    # Every stage was trained while every push timed out after 1 s.
    assert completed_trainings(ws) == EXPS
    assert sum("timed out after 1s" in w for w in rec.warned) >= 3
    assert time.monotonic() - t0 < 60
    assert read_state(ws)["push_pending"] is True
    assert json.loads(git(ws, "show", "HEAD:curriculum_state.json"))["status"] == "done"
    for line in pids.read_text().split():  # no ssh left hanging
        assert not alive(int(line))
    # The network is back: the next commit pushes everything.
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(ws, "remote", "set-url", "origin", str(bare))
    run_in_process(ws, Recorder(), push=True)
    assert git(bare, "rev-parse", "main") == git(ws, "rev-parse", "HEAD")
    assert read_state(ws)["push_pending"] is False


@pytest.mark.slow
def test_git_missing_from_path_the_cli_warns_and_runs_without_commits(
    ws: Path, tmp_path: Path
) -> None:
    """Policy: no git is not an error; the run warns once and carries on uncommitted."""
    bin_dir = tmp_path / "bin-without-git"
    bin_dir.mkdir()
    for tool in ("sh", "sleep"):
        for where in ("/bin", "/usr/bin"):
            if Path(where, tool).exists():
                (bin_dir / tool).symlink_to(Path(where, tool))
                break
    env = cli_env(ws)
    env["PATH"] = str(bin_dir)
    head = git(ws, "rev-parse", "HEAD")
    result = run_cli(ws, env=env)
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert output.count("git is not installed") == 1
    assert "Traceback" not in output
    assert git(ws, "rev-parse", "HEAD") == head
    status = cli(ws, "status", "--workspace", str(ws), env=env)
    assert status.returncode == 0 and "Traceback" not in status.stderr


# --------------------------------------------------------------------------- 6. disk full


@pytest.mark.slow
def test_disk_full_while_storing_an_evaluation_keeps_history_and_training(
    env_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = env_ws
    real = fsio.atomic_write_bytes

    def full(path: Path, data: bytes) -> None:
        if Path(path).name == "eval_history.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(fsio, "atomic_write_bytes", full)
    with pytest.raises(EvaluationError, match="No space left on device") as info:
        run_in_process(ws)
    message = str(info.value)
    assert "eval_history.json" in message and "training is kept" in message
    assert "\n" not in message
    json.loads((ws / "eval_history.json").read_text())
    assert not list(ws.glob(".*.tmp-*"))
    monkeypatch.setattr(fsio, "atomic_write_bytes", real)
    assert run_in_process(ws).status == "done"
    assert completed_trainings(ws) == EXPS  # nothing retrained
    history = json.loads((ws / "eval_history.json").read_text())
    assert [r["id"] for r in history] == [e["eval_id"] for e in read_state(ws)["log"]]


@pytest.mark.slow
def test_disk_full_while_writing_the_review_is_a_one_line_error_and_resumes(
    env_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by sweeping ENOSPC over every write of a curriculum: the review file's write
    escaped as a raw OSError (a traceback)."""
    ws = env_ws
    fails = {f"curric-s2-defend{s}": "fail" for s in ("", "-retry1", "-retry2")}
    set_scripts(ws, eval_script=fails)
    real = fsio.atomic_write_bytes

    def full(path: Path, data: bytes) -> None:
        if Path(path).name.startswith("review-"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(fsio, "atomic_write_bytes", full)
    with pytest.raises(StateError) as info:
        run_in_process(ws)
    message = str(info.value)
    assert "\n" not in message and "review-defend.md: No space left on device" in message
    assert "re-run `cosmic-curriculum run" in message
    assert read_state(ws)["in_flight"]["phase"] == "decided"
    monkeypatch.setattr(fsio, "atomic_write_bytes", real)
    with pytest.raises(BlockedError):
        run_in_process(ws)
    assert "review-defend.md" in git(ws, "show", "--name-only", "--format=", "HEAD")
    assert len(read_state(ws)["log"]) == 4  # the decided attempt was not logged twice


@pytest.mark.slow
def test_kill_after_a_blocking_decision_then_skip_still_writes_and_commits_the_review(
    ws: Path,
) -> None:
    """Found by the crash soak: a run killed at 'decided' on the attempt that blocks the
    stage; the next run (with --skip-to-next-stage) never wrote the review of that block."""
    fails = {f"curric-s2-defend{s}": "fail" for s in ("", "-retry1", "-retry2")}
    set_scripts(ws, eval_script=fails)
    env = cli_env(ws) | {fsio.PAUSE_ENV: "decided:1.5"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cosmic_curriculum", "run", "--workspace", str(ws), "--no-push"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(ValueError, OSError):
                flight = read_state(ws).get("in_flight") or {}
                if flight.get("experiment") == "curric-s2-defend-retry2" and (
                    flight.get("phase") == "decided"
                ):
                    break
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    assert read_state(ws)["status"] == "blocked"
    assert run_cli(ws, "--skip-to-next-stage", "--reason", "good enough").returncode == 0
    review = git(ws, "show", "HEAD:logs/review-defend.md")
    assert "curric-s2-defend-retry2" in review and "failed 3 attempts" in review


def test_atomic_write_errors_name_the_target_not_the_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    target.write_text("{}")

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsio.os, "fsync", no_space)
    with pytest.raises(OSError) as info:
        fsio.atomic_write_json(target, {"a": 1})
    assert info.value.filename == str(target) and info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert target.read_text() == "{}" and list(tmp_path.iterdir()) == [target]


def test_workspace_lock_that_cannot_be_created_is_a_one_line_error(
    env_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cosmic_curriculum.workspace import lock as lock_module

    real_open = os.open

    def read_only(path: Any, flags: int, *args: Any) -> int:
        if str(path).endswith(".cosmic-curriculum.lock"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(lock_module.os, "open", read_only)
    before = snapshot(env_ws)
    with pytest.raises(LockError) as info:
        run_in_process(env_ws)
    message = str(info.value)
    assert "\n" not in message and ".cosmic-curriculum.lock" in message
    assert "Read-only file system" in message and "writable" in message
    assert snapshot(env_ws) == before


# --------------------------------------------------------------------------- 7. second run


@pytest.mark.slow
def test_second_run_is_refused_while_an_orphaned_evaluator_runs(ws: Path) -> None:
    # The orphaned evaluator holds until the test releases it: a fixed sleep ran out
    # before the second run had started on a loaded machine.
    release = ws.parent / "release-evaluator"
    set_scripts(ws, eval_script={"until": str(release)})
    env = cli_env(ws)
    out = open(ws.parent / "run.out", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "cosmic_curriculum", "run", "--workspace", str(ws), "--no-push"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    out.close()
    try:
        deadline = time.monotonic() + 30
        log = ws / "logs" / "curric-s1-score.log"
        while "fake_evaluator.py" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        time.sleep(0.5)  # the evaluator is started and sleeping
        proc.kill()  # the run dies while its evaluation command runs
        proc.wait()
        history = (ws / "eval_history.json").read_bytes()
        second = run_cli(ws)
        line = assert_one_line_error(second, "evaluation of curric-s1-score", "wait for it")
        assert "holds this workspace" in line
        release.touch()
        deadline = time.monotonic() + 30
        while (ws / "eval_history.json").read_bytes() == history:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)  # let it exit and drop the inherited lock
        set_scripts(ws, eval_script={})
        assert run_cli(ws).returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    evals = (ws / "fake_evals.jsonl").read_text().splitlines()
    assert len(evals) == 3  # the orphan's record was adopted, not evaluated again
    history_records = json.loads((ws / "eval_history.json").read_text())
    assert len(history_records) == 3


@pytest.mark.slow
def test_status_and_run_error_path_for_config_change_is_one_line(ws: Path) -> None:
    """A finished stage's definition changed: refused in one line, state kept."""
    set_scripts(ws, eval_script={})
    assert run_cli(ws).returncode == 0
    (ws / "stages.toml").write_text(stages_toml().replace('"--stage-flag", "score"', '"--x"'))
    before = snapshot(ws)
    line = assert_one_line_error(run_cli(ws), "stages.toml", "--accept-config-change")
    assert "stage 1 score" in line
    assert snapshot(ws) == before


def test_trainer_error_message_first_line_names_log_and_fix(env_ws: Path) -> None:
    set_scripts(env_ws, trainer_script={"*": {"mode": "fail"}})
    with pytest.raises(TrainerError) as info:
        run_in_process(env_ws)
    first, *quoted = str(info.value).splitlines()
    assert "exited with status 3" in first and "logs/curric-s1-score.log" in first
    assert "retry this attempt" in first
    assert any("CUDA out of memory" in q for q in quoted)
    assert all(q.startswith("  | ") for q in quoted)
