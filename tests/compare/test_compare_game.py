"""A real compare on a tiny PettingZoo curriculum (tic-tac-toe: against random moves, then
self-play): the curriculum against the last stage alone, trained by the built-in
train-env through `run`, every checkpoint made an env bot of the game and played in
seat-swapped pairs against the last reference (random) by the built-in game evaluator,
the final bots against each other; a second compare only prints."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.envs.env_helpers import cli

STAGES = """\
max_retries = 0
reference_bot = {builtin = "random"}
eval_episodes = 20
# A gate fails only on a net loss of 18 games in 20: both stages train, whatever the bots.
regression_margin = 0.9

[env]
kind = "pettingzoo"
id = "pettingzoo.classic.tictactoe_v3"

[trainer]
algo = "MaskablePPO"
n_envs = 2
hyperparams = {n_steps = 64, batch_size = 64, n_epochs = 1}

[launcher]
max_parallel = 2

[[stages]]
name = "vs-random"
timesteps = 256
flags = ["--opponent-mode", "random"]

[[stages]]
name = "self-play"
timesteps = 256
flags = ["--opponent-mode", "self_play", "--snapshot-every", "128"]
"""
ARGS = ("compare", "--seeds", "0", "--points", "2", "--checkpoint-episodes", "4")
ARGS += ("--final-episodes", "8", "--target", "0.5")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_game_compare_plays_the_last_reference_in_seat_swapped_pairs(tmp_path: Path) -> None:
    pytest.importorskip("pettingzoo")
    pytest.importorskip("sb3_contrib")
    ws = tmp_path / "ws"
    made = cli(tmp_path, "init", "--bare", str(ws))
    assert made.returncode == 0, made.stderr
    (ws / "stages.toml").write_text(STAGES)

    got = cli(ws, *ARGS, "--json", str(tmp_path / "study.json"))
    assert got.returncode == 0, got.stdout + got.stderr
    doc = json.loads((tmp_path / "study.json").read_text())
    assert (doc["kind"], doc["measure"], doc["reference"]) == ("pettingzoo", "score", "random")
    assert doc["env"] == "pettingzoo.classic.tictactoe_v3" and doc["budget"] == 512
    rows = {r["arm"]: r for r in doc["arms"]}
    assert rows["curriculum"]["stages"] == ["curric-s1-vs-random", "curric-s2-self-play"]
    assert rows["last-stage"]["stages"] == ["curric-s1-self-play"]
    for row in rows.values():
        assert row["status"] == "done" and row["timesteps"] == 512
        f = row["final"]
        assert f["episodes"] == 8 and f["wins"] + f["losses"] + f["draws"] == 8
        assert f["score"] == pytest.approx((f["wins"] + f["draws"] / 2) / 8)
        assert f["vs_reference"] == f["score"]
        assert f["score_interval"][0] <= f["score"] <= f["score_interval"][1]
        spent = [p[0] for p in row["points"]]
        assert spent == sorted(spent) and spent[-1] == 512 and len(spent) >= 2
        assert all(0.0 <= p[1] <= 1.0 for p in row["points"])
    # The curriculum's first stage was measured too, before the budget's half.
    assert rows["curriculum"]["points"][0][0] <= 256
    heads = doc["head_to_head"]
    assert heads["curriculum vs last-stage"] == pytest.approx(1 - heads["last-stage vs curriculum"])
    assert any("1 against 1 seeds cannot show a difference" in v for v in doc["verdict"])
    assert "score vs random (95%)" in got.stdout

    # Every game went through the game evaluator: sampled moves (the gate sets none),
    # seat-swapped pairs on the same seeds for every checkpoint, masked bots of the game.
    measures = ws / "compare" / "measures"
    records = json.loads((measures / "games.json").read_text())
    against = [r for r in records if r["reference"] == "random"]
    points = sum(len(r["points"]) for r in rows.values())
    assert len(against) == points + 2 and len(records) == len(against) + 1  # + the finals' duel
    assert all(r["evaluator"] == "game" and r["deterministic"] is False for r in records)
    four = [r["seeds"] for r in against if r["episodes"] == 4]
    assert len(four) == points and all(s == four[0] for s in four) and len(four[0]) == 2
    bot = json.loads(Path(records[0]["candidate"]).read_text())
    assert bot["action_mask"] is True and bot["env"]["id"] == "pettingzoo.classic.tictactoe_v3"
    assert (ws / "compare" / "compare.png").read_bytes()[:4] == b"\x89PNG"
    assert "against `random`" in (ws / "compare" / "REPORT.md").read_text()
    # The workspace's own report names the study, committed with it.
    report = (ws / "REPORT.md").read_text()
    assert "Does the curriculum pay? (`compare`)" in report and "cannot show" in report
    shown = ["git", "show", "--name-only", "--format=", "HEAD"]
    files = subprocess.run(shown, cwd=ws, capture_output=True, text=True, check=True).stdout
    assert {"REPORT.md", "compare/REPORT.md", "compare/compare.json"} <= set(files.split())

    again = cli(ws, *ARGS)
    assert again.returncode == 0, again.stderr
    assert "training (log" not in again.stdout and again.stdout.count("trained (") == 2
    assert json.loads((ws / "compare" / "compare.json").read_text())["arms"] == doc["arms"]
    assert len(json.loads((measures / "games.json").read_text())) == len(records)  # none replayed
