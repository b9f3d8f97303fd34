"""The Ray launcher against a real one-node Ray cluster that this module starts (and stops).

The cluster serves its Jobs API on 127.0.0.1 (free ports), with its own temp dir, 2 CPUs and 4
fake GPUs; the fake trainer stands in for training. Its processes see one directory of the
test's empty (a tmpfs over it in their own mount namespace), as a node without the
submitter's filesystem would: a workspace there makes the shared-filesystem probe fail.
Marked slow: a cluster takes seconds to start and every job a second or two.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fakes.workspace import (
    cli_env,
    make_workspace,
    read_state,
    run_argv,
    run_cli,
    trainer_runs,
)
from raycluster import (
    can_hide,
    free_port,
    list_jobs,
    local_ray_cluster,
    ray_workspace,
    submission_ids,
)

if TYPE_CHECKING:
    from ray.job_submission import JobDetails

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path | None]]:
    """One cluster for the module, and a directory its processes see empty (None without
    ``unshare``): a workspace there is one the cluster's nodes cannot see."""
    hidden = tmp_path_factory.mktemp("hidden") if can_hide() else None
    with local_ray_cluster(hidden=hidden) as address:
        yield address, hidden


@pytest.fixture(scope="module")
def ray_address(ray_cluster: tuple[str, Path | None]) -> str:
    return ray_cluster[0]


def jobs(address: str) -> list[JobDetails]:
    return [j for j in list_jobs(address) if j.submission_id]


def comparable(state: dict) -> list[tuple[object, ...]]:
    return [(e["experiment"], e["decision"], e.get("eval")) for e in state["log"]]


def test_a_curriculum_through_ray_jobs_equals_the_local_run(
    tmp_path: Path, ray_address: str
) -> None:
    local = make_workspace(tmp_path / "local", stages=["score", "defend"])
    remote = ray_workspace(tmp_path / "remote", ray_address)
    for ws in (local, remote):
        result = run_cli(ws)
        assert result.returncode == 0, result.stderr
    assert comparable(read_state(remote)) == comparable(read_state(local))
    assert read_state(remote)["status"] == "done"
    log = (remote / "logs" / "curric-s1-score.log").read_text()
    assert "fake trainer: curric-s1-score" in log  # the job's output reached the log
    mine = [j for j in jobs(ray_address) if "curric-s" in str(j.submission_id)]
    assert len([j for j in mine if str(j.submission_id).startswith("cosmic-curric-s1")]) >= 1


def test_kill_9_then_resume_reattaches_to_the_same_job(tmp_path: Path, ray_address: str) -> None:
    ws = ray_workspace(tmp_path / "ws", ray_address, **{"*": {"steps": 12, "step_seconds": 0.5}})
    run = subprocess.Popen(run_argv(ws), env=cli_env(ws), start_new_session=True)
    deadline = time.monotonic() + 120
    while not any(r["event"] == "start" for r in trainer_runs(ws)):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the run dies; its job lives on in the cluster
    run.wait()
    result = run_cli(ws)
    assert result.returncode == 0, result.stderr
    assert "following its training" in result.stdout
    starts = [r for r in trainer_runs(ws) if r["event"] == "start"]
    assert [r["experiment"] for r in starts] == ["curric-s1-score", "curric-s2-defend"]


def test_sigint_stops_the_job_and_the_run_resumes(tmp_path: Path, ray_address: str) -> None:
    ws = ray_workspace(tmp_path / "ws", ray_address, **{"*": {"mode": "hang"}})
    run = subprocess.Popen(run_argv(ws), env=cli_env(ws), start_new_session=True)
    deadline = time.monotonic() + 120
    while not any(r["event"] == "start" for r in trainer_runs(ws)):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.2)
    run.send_signal(signal.SIGINT)
    assert run.wait(timeout=90) == 130
    flight = read_state(ws)["in_flight"]
    assert flight["interrupted"] is True
    mine = [  # this test's training jobs (not its workspace probe, not other tests' jobs)
        j
        for j in list_jobs(ray_address)
        if str(j.submission_id).startswith("cosmic-curric-") and str(ws) in str(j.entrypoint)
    ]
    assert mine and {str(getattr(j.status, "value", j.status)) for j in mine} == {"STOPPED"}
    # Resuming trains the attempt again (the job we stopped is not an attempt error).
    (ws.parent / f"{ws.name}-scripts" / "trainer.json").write_text("{}")
    result = run_cli(ws)
    assert result.returncode == 0, result.stderr
    assert read_state(ws)["status"] == "done"
    starts = [r["experiment"] for r in trainer_runs(ws) if r["event"] == "start"]
    assert starts == ["curric-s1-score", "curric-s1-score", "curric-s2-defend"]


def test_a_failing_job_is_an_attempt_error(tmp_path: Path, ray_address: str) -> None:
    ws = ray_workspace(tmp_path / "ws", ray_address, **{"*": {"mode": "fail"}})
    result = run_cli(ws)
    assert result.returncode == 1
    first = result.stderr.strip().splitlines()[0]
    assert "curric-s1-score: training command exited with status 3" in first
    assert read_state(ws)["in_flight"]["error"].startswith("training command exited")


def test_an_unreachable_cluster_is_one_line_before_training(tmp_path: Path) -> None:
    ws = ray_workspace(tmp_path / "ws", f"http://127.0.0.1:{free_port()}")
    result = run_cli(ws)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Ray at" in result.stderr
    assert trainer_runs(ws) == []


def test_k3_candidates_on_4_gpus_kill_9_then_resume_follows_every_job(
    tmp_path: Path, ray_address: str
) -> None:
    """`candidates = 3` on the cluster's 4 fake GPUs (one each, no CPU asked, so all three
    run at once): kill -9 of `run` while they train, then `run` again follows each
    candidate's job; none is trained twice, none lost, no second job for any."""
    ws = ray_workspace(tmp_path / "ws", ray_address, **{"*": {"steps": 10, "step_seconds": 0.5}})
    toml = ws / "stages.toml"
    toml.write_text(
        "candidates = 3\n"
        + toml.read_text().replace("num_gpus = 1\n", "num_gpus = 1\nnum_cpus = 0\n")
    )
    run = subprocess.Popen(run_argv(ws), env=cli_env(ws), start_new_session=True)
    deadline = time.monotonic() + 120
    while len({r["experiment"] for r in trainer_runs(ws) if r["event"] == "start"}) < 3:
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.2)
    assert not [r for r in trainer_runs(ws) if r["event"] == "done"]  # side by side
    os.killpg(run.pid, signal.SIGKILL)  # the run dies; its three jobs live on
    run.wait()
    flight = read_state(ws)["in_flight"]
    assert [c["phase"] for c in flight["candidates"]] == ["training"] * 3
    result = run_cli(ws)
    assert result.returncode == 0, result.stderr
    for k in (1, 2, 3):
        assert f"curric-s1-score-c{k}: following its training" in result.stdout
    starts = [r["experiment"] for r in trainer_runs(ws) if r["event"] == "start"]
    s1 = [f"curric-s1-score-c{k}" for k in (1, 2, 3)]
    s2 = [f"curric-s2-defend-c{k}" for k in (1, 2, 3)]
    assert sorted(starts) == sorted(s1 + s2)  # each candidate trained once
    state = read_state(ws)
    assert state["status"] == "done"
    for name in s1 + s2:
        ids = [
            str(j.submission_id)
            for j in jobs(ray_address)
            if str(j.submission_id).startswith(f"cosmic-{name}-") and str(ws) in str(j.entrypoint)
        ]
        assert len(ids) == 1, (name, ids)  # one job per candidate: never a second
        assert (ws / "bots" / f"{name}.json").is_file()
        assert "fake trainer: " + name in (ws / "logs" / f"{name}.log").read_text()


def remote_evaluation(ws: Path, **script: object) -> None:
    """Send the workspace's evaluation command to the cluster too (its fake evaluator)."""
    toml = ws / "stages.toml"
    toml.write_text(
        toml.read_text().replace("num_gpus = 1\n", "num_gpus = 1\nevaluate_remote = true\n")
    )
    (ws.parent / f"{ws.name}-scripts" / "eval.json").write_text(json.dumps(script))


def evaluations(ws: Path) -> list[str]:
    runs = ws / "fake_evals.jsonl"
    lines = runs.read_text().splitlines() if runs.exists() else []
    return [Path(json.loads(line)["candidate"]).stem for line in lines]


def test_evaluate_remote_runs_the_evaluation_command_as_a_job_with_the_local_result(
    tmp_path: Path, ray_address: str
) -> None:
    local = make_workspace(tmp_path / "local", stages=["score", "defend"])
    remote = ray_workspace(tmp_path / "remote", ray_address)
    remote_evaluation(remote)
    for ws in (local, remote):
        result = run_cli(ws)
        assert result.returncode == 0, result.stderr
    assert comparable(read_state(remote)) == comparable(read_state(local))
    assert evaluations(remote) == ["curric-s1-score", "curric-s2-defend"]
    ids = [
        str(j.submission_id)
        for j in jobs(ray_address)
        if "-evaluate-" in str(j.submission_id) and str(remote) in str(j.entrypoint)
    ]
    assert len(ids) == 2 and all(i.startswith("cosmic-curric-s") for i in ids)
    log = (remote / "logs" / "curric-s1-score.log").read_text()
    assert "entrypoint for job cosmic-curric-s1-score-evaluate-" in log  # its output here


def test_kill_9_during_a_remote_evaluation_then_resume_follows_the_same_job(
    tmp_path: Path, ray_address: str
) -> None:
    ws = ray_workspace(tmp_path / "ws", ray_address)
    gate = tmp_path / "evaluation-may-end"  # the job evaluates until the test makes it
    remote_evaluation(ws, until=str(gate))
    run = subprocess.Popen(run_argv(ws), env=cli_env(ws), start_new_session=True)
    deadline = time.monotonic() + 120
    while not any(
        str(j.submission_id).startswith("cosmic-curric-s1-score-evaluate-")
        and str(ws) in str(j.entrypoint)
        and j.status == "RUNNING"
        for j in jobs(ray_address)
    ):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the run dies; its evaluation job lives on
    run.wait()
    assert evaluations(ws) == []  # still evaluating
    # The resume must find the job still running however loaded the machine is: the
    # evaluation ends only once the resumed run says it follows it.
    out = tmp_path / "resume.out"
    with open(out, "w") as fh:
        resume = subprocess.Popen(run_argv(ws), env=cli_env(ws), stdout=fh, text=True)
    following = "curric-s1-score: following its evaluation job"
    deadline = time.monotonic() + 120
    while following not in out.read_text():
        assert time.monotonic() < deadline and resume.poll() is None, out.read_text()
        time.sleep(0.2)
    gate.touch()
    assert resume.wait(timeout=180) == 0, out.read_text()
    assert evaluations(ws) == ["curric-s1-score", "curric-s2-defend"]  # never twice
    ids = [
        str(j.submission_id)
        for j in jobs(ray_address)
        if str(j.submission_id).startswith("cosmic-curric-s1-score-evaluate-")
        and str(ws) in str(j.entrypoint)
    ]
    assert len(ids) == 1
    assert read_state(ws)["status"] == "done"


def test_a_workspace_the_cluster_cannot_see_stops_the_run_before_any_training(
    ray_cluster: tuple[str, Path | None],
) -> None:
    address, hidden = ray_cluster
    if hidden is None:
        pytest.skip("needs unshare --mount (root or user namespaces)")
    ws = ray_workspace(hidden / "ws", address)
    before = set(submission_ids(address))
    result = run_cli(ws)
    submitted = [s for s in submission_ids(address) if s not in before]
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "could not read and write the workspace" in lines[0]
    assert "mount it at the same path on every node" in lines[0]
    assert 'kind = "local"' in lines[0]
    # Nothing trained, only the probe was submitted, and it left no file behind.
    assert trainer_runs(ws) == []
    assert len(submitted) == 1 and submitted[0].startswith("cosmic-probe-")
    assert not list(ws.glob(".cosmic-probe-*"))
    assert (read_state(ws).get("in_flight") or {}).get("launched") is None


def test_a_ray_jobs_scalars_reach_the_tracker_and_no_secret_reaches_the_job(
    tmp_path: Path, ray_address: str
) -> None:
    from mlflow.tracking import MlflowClient
    from ray.job_submission import JobSubmissionClient

    ws = ray_workspace(tmp_path / "ws", ray_address)
    text = (ws / "stages.toml").read_text()
    one_stage = text.replace(
        '[[stages]]\nname = "defend"\nflags = ["--stage-flag", "defend"]\n', ""
    )
    assert one_stage != text
    tracking = '[tracking]\nmlflow = { tracking_uri = "file:./mlruns", experiment = "ray" }\n'
    (ws / "stages.toml").write_text(one_stage + "\n" + tracking)
    secrets = {"WANDB_API_KEY": "k" * 40, "MLFLOW_TRACKING_PASSWORD": "ray-secret-pw"}
    env = {**cli_env(ws), **secrets, "MLFLOW_ALLOW_FILE_STORE": "true"}
    done = subprocess.run(run_argv(ws), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr

    client = JobSubmissionClient(ray_address)
    # this workspace's job: the module's cluster also ran other tests' curric-s1-score
    here = f"cd {shlex.quote(str(ws))} "
    [job_id] = [
        i
        for i in submission_ids(ray_address)
        if "curric-s1-score" in i and client.get_job_info(i).entrypoint.startswith(here)
    ]
    job_env = client.get_job_info(job_id).runtime_env["env_vars"]
    spool = ws / "logs" / "tracking" / "scalars" / "curric-s1-score.jsonl"
    assert job_env["COSMIC_TRACKING_SCALARS"] == str(spool)
    assert not set(secrets) & set(job_env)
    assert not any(v in json.dumps(job_env) for v in secrets.values())

    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow = MlflowClient(tracking_uri=f"file:{ws / 'mlruns'}")
    experiment = mlflow.get_experiment_by_name("ray")
    assert experiment is not None
    runs = {r.info.run_name: r for r in mlflow.search_runs([experiment.experiment_id])}
    history = mlflow.get_metric_history(runs["curric-s1-score"].info.run_id, "train/fake_loss")
    assert [m.value for m in history] == [1.0, 0.5, 1 / 3, 0.25]  # the job's 4 dumps
