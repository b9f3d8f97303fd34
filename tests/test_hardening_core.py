"""A careless or hostile workspace against `run` and `status`: one line, never a traceback,
nothing lost, nothing left running. Each test is a class of inputs, not one example."""

from __future__ import annotations

import getpass
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.workspace import (
    cli_env,
    fake_env,
    make_workspace,
    read_state,
    run_cli,
    trainer_runs,
)
from fakes.workspace import run_in_process as run

from cosmic_curriculum.errors import ConfigError, StateError, TrainerError
from cosmic_curriculum.launchers import LaunchSpec, TrainerRecord
from cosmic_curriculum.launchers.local import LocalLauncher
from cosmic_curriculum.launchers.tmux import TMUX_SOCKET_ENV
from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.workspace.state_file import load_state


def status(ws: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", "status", "--workspace", str(ws)]
    return subprocess.run(argv, env=cli_env(ws), capture_output=True, text=True, timeout=60)


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# --------------------------------------------------------------------------- the lock


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_planted_lock_file_never_overwrites_what_it_points_at(tmp_path: Path, kind: str) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me\n")
    lock = ws / ".cosmic-curriculum.lock"
    if kind == "symlink":
        lock.symlink_to(victim)
    else:
        os.link(victim, lock)
    for flags in ((), ("--detach",)):
        one_line_error(run_cli(ws, *flags), str(lock), "rm ")
    assert victim.read_text() == "keep me\n"
    assert trainer_runs(ws) == []


def test_a_held_lock_names_the_process_that_holds_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    code = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(ws / ".cosmic-curriculum.lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        one_line_error(run_cli(ws), f"pid {holder.pid}", "holds this workspace")
    finally:
        holder.kill()
        holder.wait()


# --------------------------------------------------------------------------- lost files


@pytest.mark.slow
@pytest.mark.parametrize("lost", ["curriculum_state.json", "eval_history.json"])
def test_a_vanished_state_or_history_with_progress_is_refused(tmp_path: Path, lost: str) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    assert run(ws).status == "done"
    before = {p.name: p.read_bytes() for p in (ws / "bots").glob("curric-*.json")}
    (ws / lost).unlink()
    one_line_error(run_cli(ws), lost, "missing", "git -C")
    one_line_error(status(ws), lost, "missing")
    assert {p.name: p.read_bytes() for p in (ws / "bots").glob("curric-*.json")} == before
    assert not (ws / lost).exists()


def test_a_fresh_workspace_still_starts(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"], git_repo=False)
    (ws / "eval_history.json").unlink()  # nothing shows progress: a fresh start is fine
    assert run(ws).status == "done"


# --------------------------------------------------------------------------- bad JSON

# Values the JSON parser cannot take safely, each inside an otherwise valid document.
HOSTILE = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "long integer": "9" * 5000,
    "overflowing float": "1" + "0" * 400 + ".5",
    "NaN": "NaN",
}
RECORD = '{"wins_a": 1, "wins_b": 1, "draws": 0, "episodes": 2, "x": '


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("target", ["curriculum_state.json", "eval_history.json"])
def test_json_the_parser_cannot_take_is_one_line(tmp_path: Path, name: str, target: str) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    if target == "eval_history.json":
        text = "[" + RECORD + HOSTILE[name] + "}]"
    else:
        text = '{"stage_index": 0, "attempt": 0, "status": "in_progress", "log": [], '
        text += f'"x": {HOSTILE[name]}}}'
    (ws / target).write_text(text)
    one_line_error(run_cli(ws), target)
    one_line_error(status(ws), target)
    assert (ws / target).read_text() == text  # refused, never overwritten
    assert trainer_runs(ws) == []  # before any training


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_progress_line_is_ignored(name: str) -> None:
    line = '@progress {"timesteps": 1, "total": 5, "fps": ' + HOSTILE[name] + "}"
    assert parse_progress_line(line) is None


@pytest.mark.parametrize(
    ("where", "value"),
    [("log", {"episodes": "ten"}), ("log", {"wins_a": -1}), ("flight", {"timesteps": "x"})],
)
def test_run_and_status_refuse_the_same_bad_state(tmp_path: Path, where: str, value: dict) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    state = json.loads((ws / "curriculum_state.json").read_text())
    if where == "log":
        counts = {"wins_a": 5, "wins_b": 3, "draws": 2, "episodes": 10, **value}
        entry = {"stage_index": 0, "experiment": "curric-s1-score", "attempt": 0}
        state["log"] = [{**entry, "eval": counts, "decision": "pass"}]
        state["stage_index"] = 1
    else:
        flight = {"stage_index": 0, "attempt": 0, "experiment": "curric-s1-score"}
        state["in_flight"] = {**flight, "last_progress": {**value, "total": 9}}
    (ws / "curriculum_state.json").write_text(json.dumps(state))
    from_run, from_status = run_cli(ws), status(ws)
    one_line_error(from_run, "curriculum_state.json")
    one_line_error(from_status, "curriculum_state.json")
    assert from_run.stderr == from_status.stderr


def test_unknown_keys_are_kept_even_when_null(tmp_path: Path) -> None:
    path = tmp_path / "curriculum_state.json"
    entry = {"stage_index": 0, "experiment": "e", "attempt": 0, "decision": "pass", "note": None}
    path.write_text(json.dumps({"stage_index": 1, "log": [entry], "mine": None, "x": 1}))
    data = load_state(path).to_json()
    assert data["mine"] is None and data["x"] == 1 and data["log"][0]["note"] is None


# --------------------------------------------------------------------------- stages.toml


@pytest.mark.parametrize("key", ["flags", "standing_args", "training_command"])
def test_a_nul_byte_in_an_argument_is_refused_with_its_line(tmp_path: Path, key: str) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    toml = (ws / "stages.toml").read_text()
    if key == "flags":
        toml = toml.replace('"--stage-flag", "score"', '"--stage-flag", "sc\\u0000ore"')
    elif key == "standing_args":
        toml = toml.replace('"--ent-coef"', '"--ent\\u0000coef"')
    else:
        toml = toml.replace("training_command = [", 'training_command = ["x\\u0000y", ')
    (ws / "stages.toml").write_text(toml)
    result = run_cli(ws)
    one_line_error(result, "stages.toml:", "NUL")
    assert result.returncode == 2 and trainer_runs(ws) == []


def test_a_byte_order_mark_in_stages_toml_is_accepted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"], git_repo=False)
    config = ws / "stages.toml"
    config.write_bytes(b"\xef\xbb\xbf" + config.read_bytes())
    assert run(ws).status == "done"


# --------------------------------------------------------------------------- the trainer


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("#!/no/such/interpreter\necho hi\n", "'#!/no/such/interpreter'"),
        ("#!/usr/bin/env no-such-program-xyz\n", "'no-such-program-xyz'"),
        ("echo no shebang\n", "no '#!' line"),
        (None, "is a directory"),
    ],
)
def test_a_trainer_that_cannot_start_is_named_for_its_cause(
    tmp_path: Path, content: str | None, fragment: str
) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    script = ws / "train.sh"
    if content is None:
        script.mkdir()
    else:
        script.write_text(content)
        script.chmod(0o755)
    toml = (ws / "stages.toml").read_text()
    start = toml.index("training_command = ")
    end = toml.index("\n", start)
    (ws / "stages.toml").write_text(toml[:start] + 'training_command = ["./train.sh"]' + toml[end:])
    result = run_cli(ws)
    one_line_error(result, "training_command", fragment)
    assert "free space" not in result.stderr


def test_a_program_that_breaks_between_preflight_and_launch_is_named(tmp_path: Path) -> None:
    """The launch itself diagnoses too (the script changed after the checks)."""
    ws = make_workspace(tmp_path / "ws", stages=["score"], git_repo=False)
    script = ws / "train.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    toml = (ws / "stages.toml").read_text()
    start = toml.index("training_command = ")
    end = toml.index("\n", start)
    (ws / "stages.toml").write_text(toml[:start] + 'training_command = ["./train.sh"]' + toml[end:])
    from cosmic_curriculum.curriculum import preflight

    real = preflight._preflight_commands

    def then_break(run_: object) -> None:
        real(run_)  # type: ignore[arg-type]
        script.write_text("#!/gone/interpreter\n")

    mp = pytest.MonkeyPatch()
    mp.setattr(preflight, "_preflight_commands", then_break)
    try:
        with pytest.raises(TrainerError, match="could not start: it names an interpreter"):
            run(ws)
    finally:
        mp.undo()
    assert "could not start" in (read_state(ws)["in_flight"]["error"])


def test_processes_of_an_attempt_are_found_by_their_tag(tmp_path: Path) -> None:
    """What a run killed before recording its trainer, or a setsid grandchild, left."""
    launcher = LocalLauncher()
    code = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); "
        'print("grandchild", flush=True); time.sleep(60)\']); time.sleep(60)'
    )
    spec = LaunchSpec(
        argv=[sys.executable, "-c", code], cwd=tmp_path, log_path=tmp_path / "x.log", tag="t:1"
    )
    handle = launcher.start(spec)
    deadline = time.monotonic() + 20
    while "grandchild" not in (tmp_path / "x.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    from cosmic_curriculum.system import processes as runner

    tagged = runner.tagged_processes("COSMIC_CURRICULUM_ATTEMPT", "t:1")
    assert len(tagged) == 2 and handle.pid in tagged
    # No group or pid recorded: the tag alone finds and stops both.
    assert launcher.attach(TrainerRecord(None, None, None, "t:1"), grace=1.0) == "stopped"
    assert runner.tagged_processes("COSMIC_CURRICULUM_ATTEMPT", "t:1") == []
    handle.popen.wait(timeout=5)


def test_a_setsid_grandchild_does_not_outlive_its_attempt(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"], git_repo=False)
    script = ws / "train.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"setsid {sys.executable} -c 'import time; time.sleep(120)' &\n"
        f'exec {sys.executable} {Path(__file__).parent / "fakes" / "fake_trainer.py"} "$@"\n'
    )
    script.chmod(0o755)
    toml = (ws / "stages.toml").read_text()
    start = toml.index("training_command = ")
    end = toml.index("\n", start)
    (ws / "stages.toml").write_text(toml[:start] + 'training_command = ["./train.sh"]' + toml[end:])
    assert run(ws).status == "done"
    from cosmic_curriculum.system import processes as runner
    from cosmic_curriculum.workspace.layout import Layout

    tag = Layout(ws.resolve()).attempt_tag("curric-s1-score")
    assert runner.tagged_processes("COSMIC_CURRICULUM_ATTEMPT", tag) == []


# --------------------------------------------------------------------------- --detach


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize(
    ("setup", "flags", "fragment"),
    [
        ("bad config", (), "stages.toml"),
        ("none", ("--reason", "why"), "--reason"),
        ("none", ("--force-retry",), "applies only to a blocked"),
        ("blocked", (), "curriculum blocked"),
        ("missing workspace", (), "no such directory"),
    ],
)
def test_detach_checks_before_it_says_started(
    tmp_path: Path, setup: str, flags: tuple[str, ...], fragment: str
) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    if setup == "bad config":
        (ws / "stages.toml").write_text("max_retries = -1\n[[stages]]\nname = 'a'\n")
    elif setup == "blocked":
        state = json.loads((ws / "curriculum_state.json").read_text())
        state["status"] = "blocked"
        (ws / "curriculum_state.json").write_text(json.dumps(state))
    elif setup == "missing workspace":
        ws = tmp_path / "nowhere"
    socket = f"cc-test-{os.getpid()}-{secrets.token_hex(3)}"
    argv = [sys.executable, "-m", "cosmic_curriculum", "run", "--detach", "--workspace", str(ws)]
    try:
        result = subprocess.run(
            [*argv, *flags],
            env=cli_env(ws) | {TMUX_SOCKET_ENV: socket},
            capture_output=True,
            text=True,
            timeout=60,
        )
        one_line_error(result, fragment)
        assert "started" not in result.stdout
        probe = subprocess.run(["tmux", "-L", socket, "list-sessions"], capture_output=True)
        assert probe.returncode != 0  # no server, no session: nothing was started
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    assert setup != "missing workspace" or not ws.exists()


# --------------------------------------------------------------------------- overrides


@pytest.mark.slow
def test_an_override_without_a_reason_records_who_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        stages=["score", "defend"],
        max_retries=0,
        eval_script={"curric-s1-score": "fail"},
    )
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(Exception, match="blocked"):
        run(ws)
    run(ws, skip_to_next_stage=True)
    (entry,) = [e for e in read_state(ws)["log"] if e.get("override")]
    assert entry["override"] == "skip_to_next_stage"
    assert (entry["reason"], entry["by"]) == ("no reason given", getpass.getuser())


def test_a_fresh_attempt_never_resumes_an_earlier_curriculums_checkpoints(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"], git_repo=False)
    stale = ws / "checkpoints" / "curric-s1-score"
    stale.mkdir(parents=True)
    (stale / "step_300.zip").write_bytes(b"old")
    (stale / "final.zip").write_bytes(b"old final")
    assert run(ws).status == "done"
    starts = [r for r in trainer_runs(ws) if r["event"] == "start"]
    assert [r["resume"] for r in starts] == [None]
    kept = ws / "checkpoints" / "curric-s1-score.stale-1"
    assert (kept / "step_300.zip").read_bytes() == b"old"  # set aside, never deleted
    assert (kept / "final.zip").read_bytes() == b"old final"


def test_a_deleted_previous_stage_bot_says_how_to_restore_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(
        tmp_path / "ws",
        stages=["score", "defend"],
        eval_script={"curric-s2-defend": "fail"},
        max_retries=0,
    )
    for key, value in fake_env(ws).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(Exception, match="blocked"):
        run(ws)
    (ws / "bots" / "curric-s1-score.json").unlink()
    with pytest.raises(ConfigError, match=r"stage 1's passing bot.*git -C .* checkout HEAD"):
        run(ws, force_retry=True)


def test_state_errors_are_state_errors(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", git_repo=False)
    (ws / "curriculum_state.json").write_text("[" * 5000)
    with pytest.raises(StateError, match="nested too deeply"):
        run(ws)
