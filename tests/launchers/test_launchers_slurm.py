"""The Slurm launcher against a real one-node Slurm cluster the tests start
(tests/slurm_cluster.py: munged, slurmctld and slurmd in a temp dir, 4 fake GPUs, a
partition ``short`` with a one-minute limit, one ``broken`` whose node is down), one
cluster for the session; the fake trainer stands in for training. Marked slow: each job
takes a second or two, and the continuation test waits for Slurm's time-limit signal
(about a minute); the whole file about 2.5 min on 2 busy cores.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.workspace import cli_env, make_workspace, read_state, run_argv, run_cli, trainer_runs
from slurm_cluster import DOWN, NODE, SHORT, SlurmCluster, slurm_cluster, slurm_workspace

from cosmic_curriculum.launchers import LaunchSpec
from cosmic_curriculum.launchers.slurm import SlurmJob, SlurmLauncher
from cosmic_curriculum.launchers.slurm_check import COMMANDS
from cosmic_curriculum.workspace.config import LauncherConfig

pytestmark = pytest.mark.slow
EXP = "curric-s1-score"
__all__ = ["slurm_cluster"]  # the session's cluster fixture


@pytest.fixture(autouse=True)
def slurm_conf(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    """Every Slurm command of the test (and of the `run`s it starts) talks to the cluster."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    return slurm_cluster


def comparable(state: dict) -> list[tuple[object, ...]]:
    return [(e["experiment"], e["decision"], e.get("eval")) for e in state["log"]]


def jobs_of(ws: Path, experiment: str, cluster: SlurmCluster) -> list[str]:
    """The names of the jobs submitted for ``experiment`` (the launcher's "submitted as"
    lines in its log; the session's cluster runs other tests' same-named experiments),
    each checked to name exactly one job of the cluster: nothing submitted twice."""
    log = (ws / "logs" / f"{experiment}.log").read_text()
    names = re.findall(r"^# slurm job \d+: submitted as (\S+)$", log, flags=re.MULTILINE)
    everything = cluster.job_names()
    for name in names:
        assert everything.count(name) == 1, (name, everything)
    assert len(set(names)) == len(names), names
    return names


def status_text(ws: Path) -> str:
    argv = [sys.executable, "-m", "cosmic_curriculum", "status", "--workspace", str(ws)]
    done = subprocess.run(argv, env=cli_env(ws), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for(
    condition: Callable[[], bool], run: subprocess.Popen[str] | subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.2)


def live_jobs_of(ws: Path, cluster: SlurmCluster) -> list[str]:
    """The ids of the live jobs run from ``ws`` (their working directory): the session's
    cluster runs other tests' same-named experiments."""
    lines = cluster.run("squeue", "-h", "-o", "%i|%Z").splitlines()
    return [
        job
        for job, _, where in (line.partition("|") for line in lines)
        if Path(where).resolve() == ws.resolve()
    ]


def test_a_curriculum_through_slurm_jobs_equals_the_local_run(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    local = make_workspace(tmp_path / "local", stages=["score", "defend"])
    remote = slurm_workspace(tmp_path / "remote", slurm_cluster)
    for ws in (local, remote):
        result = run_cli(ws)
        assert result.returncode == 0, result.stderr
    assert comparable(read_state(remote)) == comparable(read_state(local))
    assert read_state(remote)["status"] == "done"
    log = (remote / "logs" / "curric-s1-score.log").read_text()
    assert "fake trainer: curric-s1-score" in log  # the job's output reached the log
    assert "# slurm job " in log  # and its state lines, which status shows
    for stage in ("curric-s1-score", "curric-s2-defend"):
        assert len(jobs_of(remote, stage, slurm_cluster)) == 1
    assert not list(remote.glob(".cosmic-probe-*"))  # the probe left nothing behind


def all_running(shown: str) -> bool:
    return all(
        re.search(
            rf"c{k} curric-s1-score-c{k}: training.*, Slurm job \d+: RUNNING on {NODE}", shown
        )
        for k in (1, 2, 3)
    )


def test_k3_candidates_on_4_gpus_kill_9_then_resume_submits_nothing_twice(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    """`candidates = 3`, one fake GPU each, all three side by side: kill -9 of `run` while
    they train, then `run` again follows each candidate's job by its name."""
    ws = slurm_workspace(
        tmp_path / "ws", slurm_cluster, **{"*": {"steps": 20, "step_seconds": 0.5}}
    )
    (ws / "stages.toml").write_text("candidates = 3\n" + (ws / "stages.toml").read_text())
    run = subprocess.Popen(run_argv(ws), env=cli_env(ws), start_new_session=True)
    try:
        started = lambda: {r["experiment"] for r in trainer_runs(ws) if r["event"] == "start"}  # noqa: E731
        wait_for(lambda: len(started()) == 3, run)
        assert not [r for r in trainer_runs(ws) if r["event"] == "done"]  # side by side
        # Each candidate's job, from its log (status asks Slurm nothing): a job's state line
        # is written at the run's next poll of it, up to SLURM_POLL_SECONDS after it starts.
        wait_for(lambda: all_running(status_text(ws)), run)
        os.killpg(run.pid, signal.SIGKILL)  # the run dies; its three jobs live on
        run.wait()
        result = run_cli(ws)
    finally:  # a failing test's run and jobs leave with it, not into the next test
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        for job in live_jobs_of(ws, slurm_cluster):
            slurm_cluster.run("scancel", job)
    assert result.returncode == 0, result.stderr
    for k in (1, 2, 3):
        assert f"curric-s1-score-c{k}: following its training" in result.stdout
    state = read_state(ws)
    assert state["status"] == "done"
    for stage in ("curric-s1-score", "curric-s2-defend"):
        for k in (1, 2, 3):
            name = f"{stage}-c{k}"
            assert len(jobs_of(ws, name, slurm_cluster)) == 1  # never a second job
            assert (ws / "bots" / f"{name}.json").is_file()
    starts = [r["experiment"] for r in trainer_runs(ws) if r["event"] == "start"]
    assert len(starts) == 6 == len(set(starts))  # each candidate trained once


def test_scancel_from_outside_is_a_named_attempt_error(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    ws = slurm_workspace(tmp_path / "ws", slurm_cluster, **{"*": {"mode": "hang"}})
    run = subprocess.Popen(
        run_argv(ws), env=cli_env(ws), start_new_session=True, stderr=subprocess.PIPE, text=True
    )
    wait_for(lambda: any(r["event"] == "start" for r in trainer_runs(ws)), run)
    [job] = live_jobs_of(ws, slurm_cluster)
    slurm_cluster.run("scancel", job)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 1
    first = err.strip().splitlines()[0]
    assert "curric-s1-score: training command exited with status" in first, err
    assert f"Slurm job {job} was cancelled from outside this run (scancel)" in first
    assert "error" in read_state(ws)["in_flight"]


@pytest.mark.parametrize(
    ("launcher", "fragments"),
    [
        ('partition = "nosuch"\n', ["[launcher] partition 'nosuch'", "broken, debug, short"]),
        ('gres = "fpga:1"\n', ["[launcher] gres 'fpga:1'", "gpu:4"]),
        (
            'gres = "gpu:1"\nconstraint = "nosuch"\n',
            ["sbatch refused", "Invalid feature", "constraint"],
        ),
        (  # the partition's one node is down: Slurm refuses the job (sbatch --test-only)
            f'partition = "{DOWN}"\n',
            [
                "sbatch refused the job",
                "Requested node configuration is not available",
                "[launcher] partition, sbatch_args",
            ],
        ),
    ],
    ids=["unknown-partition", "unknown-gres", "rejected-job", "node-down"],
)
def test_bad_cluster_settings_are_one_line_before_any_training(
    tmp_path: Path, slurm_cluster: SlurmCluster, launcher: str, fragments: list[str]
) -> None:
    ws = slurm_workspace(tmp_path / "ws", slurm_cluster, launcher)
    result = run_cli(ws)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert trainer_runs(ws) == []
    assert not list(ws.glob(".cosmic-probe-*"))


def test_no_sbatch_on_path_and_an_unreachable_controller_are_one_line(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    ws = slurm_workspace(tmp_path / "ws", slurm_cluster)
    # A PATH with everything of this machine's but Slurm's client commands.
    bare = tmp_path / "bin"
    bare.mkdir()
    for program in Path("/usr/bin").iterdir():
        if program.name not in COMMANDS:
            (bare / program.name).symlink_to(program)
    env = {**cli_env(ws), "PATH": f"{Path(sys.executable).parent}:{bare}"}
    done = subprocess.run(run_argv(ws), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert 'kind = "slurm" needs sbatch' in done.stderr and "PATH" in done.stderr
    dead = tmp_path / "dead.conf"
    text = slurm_cluster.conf.read_text()
    dead.write_text("\n".join(
        "SlurmctldPort=1" if ln.startswith("SlurmctldPort=") else ln for ln in text.splitlines()
    ))  # fmt: skip
    env = {**cli_env(ws), "SLURM_CONF": str(dead)}
    done = subprocess.run(run_argv(ws), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "the Slurm controller does not answer" in done.stderr and "DOWN" in done.stderr
    assert trainer_runs(ws) == []


def test_a_job_pending_for_a_reason_that_never_clears_is_a_named_attempt_error(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    """The partition's limit is a minute: a job asking for five waits forever."""
    launcher = f'partition = "{SHORT}"\ntime = "5:00"\n'
    ws = slurm_workspace(tmp_path / "ws", slurm_cluster, launcher)
    result = run_cli(ws)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    first = result.stderr.strip().splitlines()[0]
    assert "curric-s1-score: training command exited with status 1: Slurm job" in first
    assert "stayed PENDING" in first and "PartitionTimeLimit" in first
    assert "[launcher] time" in first
    assert trainer_runs(ws) == []  # it never ran
    assert not [
        ln for ln in slurm_cluster.run("squeue", "-h", "-o", "%j").split() if "curric" in ln
    ]


def _launcher(**settings: object) -> SlurmLauncher:
    return SlurmLauncher(LauncherConfig.model_validate({"kind": "slurm", **settings}))


def _submit(launcher: SlurmLauncher, tmp_path: Path, script: str, name: str) -> SlurmJob:
    log = tmp_path / f"{name}.log"
    spec = LaunchSpec(["sh", "-c", script], tmp_path, log, launch_id=f"cosmic-test-{name}")
    return launcher.start(spec)


def _until_done(launcher: SlurmLauncher, job: SlurmJob, seconds: float = 60) -> int:
    deadline = time.monotonic() + seconds
    while (code := launcher.result(job)) is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return code


def test_a_requeued_job_ends_by_the_cluster_and_is_not_run_again(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    """`scontrol requeue` (what a preemption in REQUEUE mode does): `ended_by` says so, and
    the job is cancelled rather than trained again from its start (the curriculum
    continues it from its checkpoint in a new job)."""
    launcher = _launcher()
    job = _submit(launcher, tmp_path, "echo started; sleep 60", "requeue")
    log = tmp_path / "requeue.log"
    deadline = time.monotonic() + 60
    while "started" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline and launcher.result(job) is None
        time.sleep(0.2)
    slurm_cluster.run("scontrol", "requeue", job.job_id)
    assert _until_done(launcher, job) == 143
    assert launcher.ended_by(job) == "REQUEUED"
    again = launcher.attach(job.record())
    assert isinstance(again, SlurmJob) and again.job_id == job.job_id  # found by its name
    # The requeue kills the first run (COMPLETING until it is gone), then the job waits
    # to start again: cancelled, it never does.
    deadline = time.monotonic() + 30
    while (state := slurm_cluster.run("squeue", "-h", "-t", "all", "-j", job.job_id, "-o", "%T")
           .strip()) == "COMPLETING" and time.monotonic() < deadline:  # fmt: skip
        time.sleep(0.2)
    assert state == "CANCELLED"  # not run a second time from its start
    assert log.read_text().count("started") == 1


def test_a_training_longer_than_its_jobs_limit_finishes_through_continuations(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    """45 s of training in jobs of a minute told to checkpoint 50 s before it (Slurm checks
    limits about every 30 s, so the signal comes 10 to 40 s in, never late enough for one
    job to finish): each job's trainer saves a step checkpoint on SIGUSR1 and exits 138,
    and the next job resumes it."""
    launcher = f'partition = "{SHORT}"\ntime = "1"\nsignal_grace = 50\ngres = "gpu:1"\n'
    script = {"curric-s1-score": {"steps": 45, "step_seconds": 1.0}}
    ws = slurm_workspace(tmp_path / "ws", slurm_cluster, launcher, **script)
    result = subprocess.run(
        run_argv(ws), env=cli_env(ws), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    state = read_state(ws)
    assert state["status"] == "done"
    first = state["log"][0]
    assert (first["experiment"], first["attempt"], first["decision"]) == (EXP, 0, "pass")
    reasons = [c["reason"] for c in first["continuations"]]
    assert reasons and set(reasons) == {"SIGUSR1 before the time limit"}, reasons
    starts = [r for r in trainer_runs(ws) if r["event"] == "start" and r["experiment"] == EXP]
    assert len(starts) == len(reasons) + 1  # one job each, never a retry
    resumes = [s["resume"] for s in starts[1:]]
    assert [c.get("checkpoint") for c in first["continuations"]] == resumes
    # A job signalled before its trainer's first step checkpoint (a slow start on a busy
    # machine) is continued from the attempt's own start, without --resume.
    assert all(r is None or r.startswith(f"checkpoints/{EXP}/step_") for r in resumes)
    steps = [int(r.rsplit("_", 1)[1].split(".")[0]) for r in resumes if r is not None]
    assert steps and steps == sorted(steps), resumes  # the count goes on
    assert len(jobs_of(ws, EXP, slurm_cluster)) == len(starts)  # a new job (and name) each
    shown = status_text(ws)
    assert f"continued {len(reasons)}x: SIGUSR1 before the time limit" in shown


def test_evaluate_remote_runs_the_evaluation_command_as_a_job_with_the_local_result(
    tmp_path: Path, slurm_cluster: SlurmCluster
) -> None:
    local = make_workspace(tmp_path / "local", stages=["score", "defend"])
    remote = slurm_workspace(tmp_path / "remote", slurm_cluster, "evaluate_remote = true\n")
    for ws in (local, remote):
        result = run_cli(ws)
        assert result.returncode == 0, result.stderr
    assert comparable(read_state(remote)) == comparable(read_state(local))
    runs = (remote / "fake_evals.jsonl").read_text().splitlines()
    assert [Path(json.loads(line)["candidate"]).stem for line in runs] == [
        "curric-s1-score",
        "curric-s2-defend",
    ]
    for stage in ("curric-s1-score", "curric-s2-defend"):
        training, evaluation = jobs_of(remote, stage, slurm_cluster)  # one job each
        assert f"cosmic-{stage}-evaluate-" in evaluation and "-evaluate-" not in training
