"""`candidates = K`: K trainings per attempt with the fake trainer and evaluator in a real
git workspace; the best is re-evaluated with a fresh seed, which alone decides."""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from crash.harness import kill_everything, wait_for_orphans
from fakes.workspace import (
    cli_env,
    fake_env,
    make_workspace,
    read_state,
    run_argv,
    run_cli,
    run_in_process,
    trainer_runs,
)
from gitutil import git

from cosmic_curriculum.errors import BlockedError, TrainerError


@pytest.fixture(autouse=True)
def _fakes_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fakes' scripts of workspace ``tmp_path/ws`` for runs in this process."""
    for key, value in fake_env(tmp_path / "ws").items():
        monkeypatch.setenv(key, value)


def k_workspace(path: Path, k: int, extra: str = "", **kwargs: Any) -> Path:
    ws = make_workspace(path, **kwargs)
    toml = ws / "stages.toml"
    toml.write_text(f"candidates = {k}\n" + toml.read_text() + extra)
    git(ws, "commit", "-qam", f"candidates = {k}")
    return ws


def evals(ws: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (ws / "fake_evals.jsonl").read_text().splitlines()]


def history(ws: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((ws / "eval_history.json").read_text())
    return records


def seed_of(argv: list[str]) -> str | None:
    return argv[argv.index("--seed") + 1] if "--seed" in argv else None


def starts(ws: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in trainer_runs(ws):
        if r["event"] == "start":
            counts[r["experiment"]] = counts.get(r["experiment"], 0) + 1
    return counts


def dones(ws: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in trainer_runs(ws):
        if r["event"] == "done":
            counts[r["experiment"]] = counts.get(r["experiment"], 0) + 1
    return counts


@pytest.mark.slow
def test_k3_names_seeds_and_the_fresh_evaluation_decides(tmp_path: Path) -> None:
    ws = k_workspace(
        tmp_path / "ws",
        3,
        stages=["score", "defend"],
        eval_script={
            "curric-s1-score-c1": [5, 8, 7],  # 0.425
            "curric-s1-score-c2": [12, 4, 4],  # 0.7: the best
            "curric-s1-score-c3": [10, 6, 4],  # 0.6
            "curric-s1-score-c2#2": [9, 7, 4],  # its fresh evaluation: a pass on its own
        },
    )
    state = run_in_process(ws)
    assert state.status == "done"
    names = [f"curric-s{i}-{s}-c{k}" for i, s in ((1, "score"), (2, "defend")) for k in (1, 2, 3)]
    assert sorted(starts(ws)) == sorted(names) and set(starts(ws).values()) == {1}
    for r in trainer_runs(ws):
        if r["event"] == "start":
            assert seed_of(r["argv"]) == r["experiment"][-1]  # `--seed k`, appended last
            assert r["argv"][-2:] == ["--seed", r["experiment"][-1]]
    # stage 2 resumes and plays against stage 1's chosen candidate
    s2 = [r for r in trainer_runs(ws) if r["event"] == "start" and "-s2-" in r["experiment"]]
    assert {r["resume"] for r in s2} == {"checkpoints/curric-s1-score-c2/final.zip"}
    data = read_state(ws)
    assert [e["experiment"] for e in data["log"]] == ["curric-s1-score-c2", "curric-s2-defend-c1"]
    entry = data["log"][0]
    records = {r["id"]: r for r in history(ws)}
    fresh = records[entry["eval_id"]]
    assert (fresh["selection"], fresh["candidate_k"]) == ("fresh", 2)
    assert entry["eval"] == {k: fresh[k] for k in ("wins_a", "wins_b", "draws", "episodes")}
    assert entry["eval"]["wins_a"] == 9  # the fresh record decided, not the selection's 12
    chosen = [c for c in entry["candidates"] if c.get("chosen")]
    assert [c["k"] for c in chosen] == [2]
    selection = records[chosen[0]["eval_id"]]  # both records of the winner are kept
    assert (selection["selection"], selection["wins_a"]) == ("candidate", 12)
    assert len(history(ws)) == 8  # 3 + 1 fresh per stage
    # the fresh evaluation played with a seed none of the candidates' evaluations used
    s1 = [e for e in evals(ws) if "-s1-" in e["candidate"]]
    seeds = [seed_of(e["argv"]) for e in s1]
    assert len(seeds) == 4 and None not in seeds and len(set(seeds)) == 4
    assert s1[-1]["candidate"] == "bots/curric-s1-score-c2.json"
    assert evals(ws)[-1]["reference"] == "bots/curric-s1-score-c2.json"  # stage 2's reference
    # every candidate's bot and log is committed, chosen or not
    tracked = git(ws, "ls-files", "bots", "logs").split()
    for name in names:
        assert f"bots/{name}.json" in tracked and f"logs/{name}.log" in tracked
    assert data["in_flight"]["chosen"] == 1
    assert [c["phase"] for c in data["in_flight"]["candidates"]] == ["evaluated"] * 3


@pytest.mark.slow
def test_a_fresh_failure_fails_the_attempt_and_the_retry_resumes_the_chosen(
    tmp_path: Path,
) -> None:
    ws = k_workspace(
        tmp_path / "ws",
        2,
        stages=["score"],
        eval_script={
            "curric-s1-score-c1": "fail",
            "curric-s1-score-c2#1": "pass",
            "curric-s1-score-c2#2": "fail",  # the winner's curse: lucky once, not twice
        },
    )
    state = run_in_process(ws)
    assert state.status == "done"
    log = read_state(ws)["log"]
    assert [(e["experiment"], e["decision"]) for e in log] == [
        ("curric-s1-score-c2", "fail"),
        ("curric-s1-score-retry1-c1", "pass"),
    ]
    retry = [r for r in trainer_runs(ws) if r["event"] == "start" and "retry1" in r["experiment"]]
    assert {r["resume"] for r in retry} == {"checkpoints/curric-s1-score-c2/final.zip"}


@pytest.mark.slow
def test_a_failing_candidate_errors_after_the_others_and_only_it_trains_again(
    tmp_path: Path,
) -> None:
    ws = k_workspace(
        tmp_path / "ws",
        3,
        stages=["score"],
        trainer_script={"curric-s1-score-c2": {"mode": "fail_once"}},
    )
    result = run_cli(ws)
    assert result.returncode == 1, result.stderr
    first = result.stderr.strip().splitlines()[0]
    assert "candidate 2 (curric-s1-score-c2): training command exited with status 3" in first
    flight = read_state(ws)["in_flight"]
    assert [c["phase"] for c in flight["candidates"]] == ["trained", "failed", "trained"]
    assert flight["error"].startswith("1 of 3 candidates failed")
    status = subprocess.run(
        [*run_argv(ws)[:3], "status", "--workspace", str(ws), "--json"],
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=60,
    )
    shown = json.loads(status.stdout)["in_flight"]["candidates"]
    assert [(c["experiment"], c["phase"]) for c in shown] == [
        ("curric-s1-score-c1", "trained"),
        ("curric-s1-score-c2", "failed"),
        ("curric-s1-score-c3", "trained"),
    ]
    human = subprocess.run(
        [*run_argv(ws)[:3], "status", "--workspace", str(ws)],
        env=cli_env(ws),
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "c2 curric-s1-score-c2: failed — error: training command exited" in human
    assert "c3 curric-s1-score-c3: trained" in human
    result = run_cli(ws)
    assert result.returncode == 0, result.stderr
    assert starts(ws) == {"curric-s1-score-c1": 1, "curric-s1-score-c2": 2, "curric-s1-score-c3": 1}


@pytest.mark.slow
def test_max_parallel_caps_the_trainings_side_by_side(tmp_path: Path) -> None:
    ws = k_workspace(
        tmp_path / "ws",
        3,
        "\n[launcher]\nmax_parallel = 1\n",
        stages=["score"],
        trainer_script={"*": {"steps": 3, "step_seconds": 0.1}},
    )
    run_in_process(ws)
    events = [(r["event"], r["experiment"]) for r in trainer_runs(ws)]
    assert events == [
        (event, f"curric-s1-score-c{k}") for k in (1, 2, 3) for event in ("start", "done")
    ]


def test_candidates_that_time_out_fail_each_on_its_own(tmp_path: Path) -> None:
    ws = k_workspace(tmp_path / "ws", 2, stages=["score"], trainer_script={"*": {"mode": "hang"}})
    with pytest.raises(TrainerError):
        run_in_process(ws, attempt_timeout=1.0)  # every candidate times out
    flight = read_state(ws)["in_flight"]
    assert [c["phase"] for c in flight["candidates"]] == ["failed", "failed"]
    assert "--attempt-timeout" in flight["candidates"][0]["error"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_kill_9_at_random_points_resumes_every_candidate(tmp_path: Path, seed: int) -> None:
    """SIGKILL `run` (alone, or with everything working in the workspace) at random
    instants of K = 3 attempts until the curriculum is done: no candidate trained to the
    end twice, none lost, every one evaluated once for the selection."""
    rng = random.Random(seed)
    ws = k_workspace(
        tmp_path / "ws",
        3,
        "\n[launcher]\nmax_parallel = 2\n",
        stages=["score", "defend"],
        trainer_script={"*": {"steps": 4, "step_seconds": 0.15}},
        eval_script={"sleep": 0.2},
    )
    kills = 0
    for _ in range(12):
        run = subprocess.Popen(
            run_argv(ws), env=cli_env(ws), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            run.wait(timeout=rng.uniform(0.4, 3.0))
            if run.returncode == 0:
                break
            time.sleep(0.2)  # refused: an orphan of the previous kill still holds it
            continue
        except subprocess.TimeoutExpired:
            pass
        run.kill()
        run.wait()
        kills += 1
        if rng.random() < 0.5:
            kill_everything(ws)  # the machine lost power: trainers and evaluators too
        else:
            wait_for_orphans(ws)  # they finish on their own and hold the workspace
    else:
        result = run_cli(ws)
        assert result.returncode == 0, result.stderr
    assert kills >= 1
    data = read_state(ws)
    assert data["status"] == "done"
    names = [f"curric-s{i}-{s}-c{k}" for i, s in ((1, "score"), (2, "defend")) for k in (1, 2, 3)]
    assert set(starts(ws)) == set(names)
    assert all(n <= 1 for n in dones(ws).values()), dones(ws)  # never trained twice
    for name in names:
        assert (ws / "bots" / f"{name}.json").is_file()  # none lost
    selection = [r for r in history(ws) if r.get("selection") == "candidate"]
    assert sorted(r["curriculum_experiment"] for r in selection) == sorted(names)
    fresh = [r for r in history(ws) if r.get("selection") == "fresh"]
    assert [r["id"] for r in fresh] == [e["eval_id"] for e in data["log"]]


@pytest.mark.slow
def test_orphaned_candidates_are_named_then_adopted(tmp_path: Path) -> None:
    """kill -9 of `run` alone: its candidates' trainers live on holding the workspace; the
    next `run` names them, and once they finished adopts their results (none retrained)."""
    ws = k_workspace(
        tmp_path / "ws",
        2,
        stages=["score"],
        trainer_script={"*": {"steps": 8, "step_seconds": 0.4}},
    )
    run = subprocess.Popen(
        run_argv(ws), env=cli_env(ws), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not all(
        c.get("pgid") for c in (read_state(ws).get("in_flight") or {}).get("candidates", [{}])
    ):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    run.kill()
    run.wait()
    refused = run_cli(ws)
    assert refused.returncode == 1
    assert "the trainers of curric-s1-score-c1 (process group" in refused.stderr
    assert "curric-s1-score-c2 (process group" in refused.stderr
    wait_for_orphans(ws)
    result = run_cli(ws)
    assert result.returncode == 0, result.stderr
    assert "training finished while no run was watching" in result.stdout
    assert starts(ws) == dones(ws) == {"curric-s1-score-c1": 1, "curric-s1-score-c2": 1}


def test_k_1_writes_the_first_releases_state(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", stages=["score"])
    run_in_process(ws)
    data = read_state(ws)
    assert "candidates" not in data["in_flight"] and "chosen" not in data["in_flight"]
    assert all("candidates" not in e for e in data["log"])
    assert data["log"][0]["experiment"] == "curric-s1-score"
    assert all("--seed" not in r.get("argv", []) for r in trainer_runs(ws))
    assert all("--seed" not in e["argv"] for e in evals(ws))
    assert all("selection" not in r for r in history(ws))


def test_the_built_in_evaluator_ranks_then_decides_on_a_fresh_seed(tmp_path: Path) -> None:
    repo_bots = Path(__file__).resolve().parents[2] / "bots"
    ws = k_workspace(
        tmp_path / "ws",
        2,
        stages=["score"],
        max_retries=0,
        external_eval=False,
        trainer_script={"*": {"bot_source": str(repo_bots / "rookie.json")}},
    )
    (ws / "bots" / "rookie.json").write_bytes((repo_bots / "rookie.json").read_bytes())
    with contextlib.suppress(BlockedError):  # the rookie against itself may fail the gate
        run_in_process(ws)
    entry = read_state(ws)["log"][0]
    records = history(ws)
    assert [(r["selection"], r["candidate_k"]) for r in records] == [
        ("candidate", 1),
        ("candidate", 2),
        ("fresh", next(c["k"] for c in entry["candidates"] if c.get("chosen"))),
    ]
    assert records[-1]["id"] == entry["eval_id"]
    assert entry["decision"] == records[-1]["gate"]["verdict"]  # the fresh record's verdict
    assert len({r["seed"] for r in records}) == 3  # the fresh seed is none of the others
