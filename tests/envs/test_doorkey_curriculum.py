"""The DoorKey preset end to end on real MiniGrid, trained by `train-env` (real SB3) and
gated by the built-in env evaluator, with tiny budgets:

- a two-stage 5x5 -> 6x6 curriculum runs to done under a lenient gate, and a git clone of
  the workspace (no checkpoints/) replays the committed bots with `evaluate`, the gate's
  episodes exactly;
- kill -9 of the run and its trainer's group mid-training: the next `run` continues the
  attempt from its step checkpoint (the trainer says "continuing"), trains nothing twice
  and finishes;
- the threshold gate blocks a weak bot: DoorKey-8x8 after ~4k steps against a 0.9 target.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("minigrid")
pytest.importorskip("stable_baselines3")

from env_helpers import cli

from cosmic_curriculum.system import processes
from cosmic_curriculum.workspace.config_file import preset_path
from cosmic_curriculum.workspace.init import init_workspace

_STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _no_leftover_processes() -> Iterator[None]:
    """Whatever a test does, no run it started outlives it."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def preset(*, stages: int, gate: str, timesteps: list[int]) -> str:
    """The doorkey preset's first ``stages`` stages, with the test's gate and budgets."""
    text = preset_path("doorkey").read_text()
    head, *blocks = text.split("[[stages]]\n")
    head, found = re.subn(r"(?ms)^\[gate\]\n.*?\n\n", f"[gate]\n{gate}\n\n", head)
    assert found == 1, "the preset's [gate] table moved: update this test"
    kept = []
    for block, budget in zip(blocks[:stages], timesteps, strict=True):
        block, found = re.subn(r"(?m)^timesteps = .*$", f"timesteps = {budget}", block)
        assert found == 1, "a preset stage lost its timesteps: update this test"
        kept.append(block.rstrip() + "\n")
    return head + "".join(f"[[stages]]\n{b}\n" for b in kept)


def workspace(tmp_path: Path, stages_toml: str) -> Path:
    ws = init_workspace(tmp_path / "ws", "doorkey").workspace
    (ws / "stages.toml").write_text(stages_toml)
    subprocess.run(["git", "add", "stages.toml"], cwd=ws, check=True)
    subprocess.run(["git", "commit", "-qm", "test budgets"], cwd=ws, check=True)
    return ws


def state(ws: Path) -> dict:
    return json.loads((ws / "curriculum_state.json").read_text())


def history(ws: Path) -> list[dict]:
    return json.loads((ws / "eval_history.json").read_text())


def launches(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("# ") and "train-env" in line]


# A lenient gate: a success rate of 0.6 told from 0.1; sampled actions (a young DoorKey
# policy's greedy action loops where sampling gets through).
LENIENT = """\
rule = "threshold"
target = 0.35
delta = 0.25
max_episodes = 64
deterministic = false"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_doorkey_stages_run_to_done_and_replay_from_a_clone(tmp_path: Path) -> None:
    ws = workspace(tmp_path, preset(stages=2, gate=LENIENT, timesteps=[16_384, 8_192]))
    done = cli(ws, "run", "--no-push")
    assert done.returncode == 0, done.stdout + done.stderr
    data = state(ws)
    passed = [e["experiment"] for e in data["log"] if e["decision"] == "pass"]
    assert data["status"] == "done" and passed == ["curric-s1-5x5", "curric-s2-6x6"]
    records = {r["curriculum_experiment"]: r for r in history(ws)}
    first, second = records["curric-s1-5x5"], records["curric-s2-6x6"]
    assert first["env"] == "MiniGrid-DoorKey-5x5-v0" and first["reference"] == "builtin:random"
    assert second["env"] == "MiniGrid-DoorKey-6x6-v0"
    assert second["reference"] == "bots/curric-s1-5x5.json"  # the previous stage's bot
    for entry, record in zip(data["log"], (first, second), strict=True):
        assert entry["eval"]["threshold"]["verdict"] == "pass" and not record["deterministic"]
        assert record["successes"] == sum(r > 0 for r in record["returns"])
    bot2 = json.loads((ws / "bots" / "curric-s2-6x6.json").read_text())
    assert bot2["provenance"]["resumed_from"] == "checkpoints/curric-s1-5x5/final.zip"

    # A clone holds no checkpoints/, and the committed bots replay there.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ws), str(clone)], check=True)
    assert not (clone / "checkpoints").exists()
    for experiment, record in (("curric-s1-5x5", first), ("curric-s2-6x6", second)):
        # The gate's own episodes again: its seed, its episode count, sampled actions.
        n, seed = str(record["episodes"]), str(record["seed"])
        bot = f"bots/{experiment}.json"
        replay = cli(clone, "evaluate", bot, "random", "-n", n, "--seed", seed, "--sample")
        assert replay.returncode == 0, replay.stdout + replay.stderr
        assert f"{record['successes']}/{n} successes" in replay.stdout, replay.stdout
        replayed = history(clone)[-1]
        assert replayed["candidate_sha256"] == record["candidate_sha256"]  # the gated bot
        assert replayed["env"] == record["env"] and replayed["seeds"] == record["seeds"]
        assert replayed["returns"] == record["returns"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kill_9_mid_training_continues_from_the_step_checkpoint(tmp_path: Path) -> None:
    total = 28_000
    ws = workspace(tmp_path, preset(stages=1, gate=LENIENT, timesteps=[total]))
    out = open(tmp_path / "run.out", "ab")  # noqa: SIM115 - the child keeps its own copy
    proc = subprocess.Popen(
        [sys.executable, "-m", "cosmic_curriculum", "run", "--no-push"],
        cwd=ws,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _STARTED.append(proc)
    checkpoints = ws / "checkpoints" / "curric-s1-5x5"
    deadline = time.monotonic() + 300
    while not list(checkpoints.glob("step_*.zip")):
        assert proc.poll() is None, (tmp_path / "run.out").read_text()
        assert time.monotonic() < deadline, "no step checkpoint within 300 s"
        time.sleep(0.1)
    pgid = state(ws)["in_flight"]["pgid"]
    proc.kill()  # the machine lost everything at once: the run ...
    os.killpg(pgid, signal.SIGKILL)  # ... and its trainer
    proc.wait()
    while processes.group_members(pgid):
        time.sleep(0.1)
    assert not (ws / "bots" / "curric-s1-5x5.json").exists()  # it was mid-training

    again = cli(ws, "run", "--no-push")
    assert again.returncode == 0, again.stdout + again.stderr
    data = state(ws)
    assert data["status"] == "done"
    assert [e["experiment"] for e in data["log"]] == ["curric-s1-5x5"]
    assert len(history(ws)) == 1  # evaluated once
    log = (ws / "logs" / "curric-s1-5x5.log").read_text()
    first, second = launches(log)
    assert "--resume" not in first
    resumed = re.search(r"--resume (checkpoints/curric-s1-5x5/step_(\d+)\.zip)", second)
    assert resumed is not None, second
    done = int(resumed.group(2))
    assert 0 < done < total
    # Only what was left is trained: the count goes on from the checkpoint.
    headers = re.findall(r"train-env curric-s1-5x5: PPO \S+ on MiniGrid-DoorKey-5x5-v0, .*", log)
    assert len(headers) == 2 and "fresh" in headers[0], headers
    assert f"continuing, {total - done} of {total} timesteps" in headers[1], headers
    bot = json.loads((ws / "bots" / "curric-s1-5x5.json").read_text())
    assert bot["provenance"]["resumed_from"] == resumed.group(1)
    assert total <= bot["provenance"]["timesteps"] < total + 1024  # one PPO rollout at most


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_threshold_gate_blocks_a_weak_doorkey_bot(tmp_path: Path) -> None:
    strict = 'rule = "threshold"\ntarget = 0.9\ndeterministic = false'
    text = preset(stages=1, gate=strict, timesteps=[4_096])
    assert "\nmax_retries = 2 " in text
    text = text.replace("\nmax_retries = 2 ", "\nmax_retries = 0 ", 1)  # one failure blocks
    # The preset's stage 1, trained and gated on the 8x8 room.
    text = text.replace('id = "MiniGrid-DoorKey-5x5-v0"', 'id = "MiniGrid-DoorKey-8x8-v0"', 1)
    ws = workspace(tmp_path, text)
    blocked = cli(ws, "run", "--no-push")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    data = state(ws)
    assert data["status"] == "blocked"
    [entry] = data["log"]
    assert entry["experiment"] == "curric-s1-5x5" and entry["decision"] == "fail"
    [record] = history(ws)
    assert record["env"] == "MiniGrid-DoorKey-8x8-v0" and entry["eval_id"] == record["id"]
    assert record["deterministic"] is False  # the preset's sampled actions
    assert len(record["returns"]) == record["episodes"] >= 2
    assert record["successes"] == sum(r > 0 for r in record["returns"])
    assert record["successes"] < 0.9 * record["episodes"]
    assert record["wins_a"] + record["wins_b"] + record["draws"] == record["episodes"]
    threshold = entry["eval"]["threshold"]
    assert (threshold["verdict"], threshold["target"]) == ("fail", 0.9)
    assert (threshold["successes"], threshold["episodes"]) == (
        record["successes"],
        record["episodes"],
    )
    assert f"{record['successes']}/{record['episodes']} successes" in entry["summary"]
    assert (ws / "logs" / "review-5x5.md").is_file()
