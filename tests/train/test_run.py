"""A training run end to end: every artifact, every flag, the command, signals."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from fakes.budgets import tiny_training_flags
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from train_helpers import Watch, env_of, progress_lines, tiny

from cosmic_curriculum import bots, train
from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.workspace.layout import step_checkpoints

# --- end to end -------------------------------------------------------------------------


@pytest.mark.slow
def test_tiny_training_writes_every_artifact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    result = train.train(tiny(tmp_path, progress_interval=0.01))
    # SB3's default logger would leave an empty SB3-<date> folder per run
    assert list(system_tmp.glob("SB3-*")) == []
    assert result.exit_code == 0 and not result.partial
    final = tmp_path / "checkpoints" / "exp" / "final.zip"
    assert result.checkpoint == final and final.is_file()
    assert [p.name for _, p in step_checkpoints(final.parent)] == ["step_512.zip"]
    assert (tmp_path / "logs" / "exp.curve.png").read_bytes().startswith(b"\x89PNG")

    doc = json.loads((tmp_path / "bots" / "exp.json").read_text())
    bot = bots.load_bot(tmp_path / "bots" / "exp.json")
    assert bot.kind == "mlp" and bot.decision_ticks == 16
    assert doc["partial"] is False
    prov = doc["provenance"]
    assert prov["experiment"] == "exp" and prov["timesteps"] == 1024
    assert prov["checkpoint"] == "checkpoints/exp/final.zip"
    assert prov["checkpoint_sha256"] == hashlib.sha256(final.read_bytes()).hexdigest()
    assert prov["git_commit"] is None  # tmp_path is not a repository
    assert prov["settings"]["opponent_mode"] == "inert"
    assert doc["game"]["decision_ticks"] == 16

    lines = progress_lines(capsys.readouterr().out)
    assert len(lines) >= 3
    assert lines[-1]["timesteps"] == 1024 and lines[-1]["total"] == 1024
    assert all(line["fps"] > 0 for line in lines)
    assert [line["timesteps"] for line in lines] == sorted(line["timesteps"] for line in lines)

    # running the finished experiment again re-exports instead of retraining
    again = train.train(tiny(tmp_path))
    assert again.timesteps == 1024 and again.stats.progress == []


@pytest.mark.slow
@pytest.mark.parametrize("planar", [True, False])
def test_planar_flags_keep_games_planar_during_training(tmp_path: Path, planar: bool) -> None:
    def extent(cb: BaseCallback) -> tuple[float, float]:
        state = env_of(cb).duel.state
        height = max(np.abs(state.ship_pos[..., 2]).max(), np.abs(state.orb_pos[..., 2]).max())
        tilt = np.abs(state.ship_up - np.array([0.0, 0.0, 1.0])).max()
        return float(height), float(tilt)

    watch = Watch(every_step=extent)
    settings = tiny(tmp_path, allow_vertical=not planar, allow_pitch_roll=not planar)
    train.train(settings, extra_callbacks=[watch])
    heights, tilts = zip(*watch.seen, strict=True)
    if planar:
        assert max(heights) == 0.0 and max(tilts) < 1e-9
    else:
        assert max(heights) > 0.1 and max(tilts) > 0.1


@pytest.mark.slow
def test_opponent_modes_set_the_opponent(tmp_path: Path) -> None:
    players = {}
    for mode in ("inert", "random", "rookie", "veteran"):
        watch = Watch(at_start=lambda cb: type(env_of(cb).opponent).__name__)
        train.train(tiny(tmp_path, name=mode, opponent_mode=mode, timesteps=256), [watch])
        players[mode] = watch.started
    assert players == {
        "inert": "InertBot",
        "random": "RandomBot",
        "rookie": "ScriptedBot",
        "veteran": "VeteranBot",
    }

    bot_path = tmp_path / "bots" / "opp.json"
    bots.save_bot(bot_path, bots.simple_bot_document("random", decision_ticks=4))
    watch = Watch(at_start=lambda cb: env_of(cb).opponent)
    train.train(
        tiny(
            tmp_path, name="vs-bot", opponent_mode="bot", opponent_bot=Path("bots/opp.json")
        ).model_copy(update={"timesteps": 256}),
        [watch],
    )
    assert watch.started.kind == "random" and watch.started.decision_ticks == 4


@pytest.mark.slow
def test_ent_coef_seed_and_threads(tmp_path: Path) -> None:
    a = train.train(tiny(tmp_path, name="a", ent_coef=0.02, timesteps=512, seed=5))
    b = train.train(tiny(tmp_path, name="b", ent_coef=0.02, timesteps=512, seed=5))
    c = train.train(tiny(tmp_path, name="c", ent_coef=0.02, timesteps=512, seed=6))
    assert torch.get_num_threads() == 1
    model = PPO.load(a.checkpoint, device="cpu")
    assert model.ent_coef == 0.02
    wa, wb, wc = (
        json.loads(r.bot.read_text())["network"]["layers"][0]["weights"] for r in (a, b, c)
    )
    assert wa == wb  # same seed, same bot
    assert wa != wc


# --- command line -----------------------------------------------------------------------


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cosmic_curriculum", "train", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["x", "--bogus"], "--bogus"),
        (["x", "--timesteps", "lots"], "--timesteps"),
        (["x", "--opponent-mode", "mirror"], "--opponent-mode"),
        (["x", "--reset-std", "-2"], "--reset-std"),
        (["x", "--resume", "/etc/passwd.zip"], "outside"),
    ],
)
def test_bad_flags_exit_2_with_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    proc = run_cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
    assert not (tmp_path / "checkpoints").exists()


@pytest.mark.slow
def test_sigterm_to_the_command_saves_a_checkpoint_and_a_partial_bot(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cosmic_curriculum",
            "train",
            "term",
            *tiny_training_flags(100_000_000),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:  # wait until it is really training
            if parse_progress_line(line) is not None:
                break
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "SIGTERM" in err and "(partial)" in out
    steps = step_checkpoints(tmp_path / "checkpoints" / "term")
    assert steps, "no checkpoint saved on SIGTERM"
    doc = json.loads((tmp_path / "bots" / "term.json").read_text())
    assert doc["partial"] is True and doc["provenance"]["timesteps"] == steps[-1][0]
