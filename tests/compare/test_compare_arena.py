"""A real compare on a tiny arena curriculum (a planar stage, then the 3-D game): the
curriculum against the last stage alone, trained by the built-in trainer through `run`,
every checkpoint measured by games against the rookie in the last stage's game, the final
bots against each other; a second compare only prints."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.envs.env_helpers import cli

STAGES = """\
max_retries = 0
eval_episodes = 20
reference_bot = "bots/rookie.json"
training_command = ["scripts/run_training.sh"]

[defaults]
n_parallel = 16

[launcher]
max_parallel = 2

[[stages]]
name = "planar"
flags = [
    "--opponent-mode", "inert", "--no-allow-vertical", "--no-allow-pitch-roll",
    "--rollout-size", "512",
]
timesteps = 2048

[[stages]]
name = "full"
flags = ["--opponent-mode", "inert", "--rollout-size", "512"]
timesteps = 2048
"""
ARGS = ("compare", "--seeds", "0", "--points", "4", "--checkpoint-episodes", "4")
ARGS += ("--final-episodes", "8", "--target", "0.5")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_arena_compare_plays_the_reference_in_the_last_stages_game(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    made = _cli900(tmp_path, "init", str(ws), "--preset", "quick")
    assert made.returncode == 0, made.stderr
    (ws / "stages.toml").write_text(STAGES)

    got = _cli900(ws, *ARGS, "--json", str(tmp_path / "study.json"))
    assert got.returncode == 0, got.stdout + got.stderr
    doc = json.loads((tmp_path / "study.json").read_text())
    assert (doc["kind"], doc["measure"], doc["reference"]) == ("arena", "score", "bots/rookie.json")
    rows = {r["arm"]: r for r in doc["arms"]}
    assert set(rows) == {"curriculum", "last-stage"}
    assert rows["curriculum"]["stages"][0] == "curric-s1-planar"
    # The rookie may block the curriculum at its planar stage (no retries): then the arm
    # is what it trained, and the verdict says it spent less than the budget.
    blocked = rows["curriculum"]["status"] == "blocked"
    assert rows["curriculum"]["timesteps"] == (2048 if blocked else 4096)
    assert blocked == any("curriculum was blocked on seed 0" in v for v in doc["verdict"])
    assert (
        rows["last-stage"]["stages"] == ["curric-s1-full"]
        and rows["last-stage"]["timesteps"] == 4096
    )
    for row in rows.values():
        f = row["final"]
        assert f["episodes"] == 8 and f["wins"] + f["losses"] + f["draws"] == 8
        assert f["score"] == pytest.approx((f["wins"] + f["draws"] / 2) / 8)
        assert f["score_interval"][0] <= f["score"] <= f["score_interval"][1]
        # Along the way: the step checkpoints and each training's final, by timesteps spent.
        spent = [p[0] for p in row["points"]]
        assert spent == sorted(spent) and spent[-1] == row["timesteps"] and len(spent) >= 2
        assert all(0.0 <= p[1] <= 1.0 for p in row["points"])
    # The curriculum's planar checkpoints were measured in the 3-D game of the last stage.
    assert rows["curriculum"]["points"][0][0] < 2048
    heads = doc["head_to_head"]
    assert heads["curriculum vs last-stage"] == pytest.approx(1 - heads["last-stage vs curriculum"])
    assert any("1 against 1 seeds cannot show a difference" in v for v in doc["verdict"])
    assert "score vs bots/rookie.json (95%)" in got.stdout
    assert (ws / "compare" / "compare.png").read_bytes()[:4] == b"\x89PNG"

    again = _cli900(ws, *ARGS)
    assert again.returncode == 0, again.stderr
    assert "training (log" not in again.stdout and again.stdout.count("trained (") == 2
    assert json.loads((ws / "compare" / "compare.json").read_text())["arms"] == doc["arms"]


def _cli900(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli(ws, *args, timeout=900)  # the arena trains for real
