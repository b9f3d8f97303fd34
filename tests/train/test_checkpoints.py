"""Checkpoints: only the workspace's own are loaded; resume rules (continue, new stage)."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from train_helpers import Watch, progress_lines, tiny

from cosmic_curriculum import train
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.workspace.layout import step_checkpoints


def test_checkpoints_outside_the_workspace_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.zip"
    outside.write_bytes(b"PK")
    layout = tiny(tmp_path / "ws").layout
    with pytest.raises(ConfigError, match="outside"):
        train.checked_checkpoint(outside, layout)
    with pytest.raises(ConfigError, match="outside"):
        train.checked_checkpoint(Path("checkpoints/../../elsewhere.zip"), layout)
    with pytest.raises(ConfigError, match=r"not a \.zip"):
        train.checked_checkpoint(Path("checkpoints/a/model.pkl"), layout)
    with pytest.raises(ConfigError, match="not found"):
        train.checked_checkpoint(Path("checkpoints/a/step_5.zip"), layout)


# --- resume -----------------------------------------------------------------------------


def interrupt_at(timesteps: int) -> Watch:
    def maybe_interrupt(cb: BaseCallback) -> None:
        if cb.num_timesteps >= timesteps and not getattr(cb, "_sent", False):
            cb._sent = True  # type: ignore[attr-defined]
            os.kill(os.getpid(), signal.SIGINT)

    return Watch(every_step=maybe_interrupt)


@pytest.mark.slow
def test_interrupt_saves_partial_bot_and_restart_continues_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tiny(tmp_path, timesteps=2048, progress_interval=0.01)
    stopped = train.train(settings, [interrupt_at(600)])
    assert stopped.exit_code == 128 + signal.SIGINT and stopped.partial
    assert 600 <= stopped.timesteps < 2048
    assert stopped.checkpoint.name == f"step_{stopped.timesteps}.zip"
    assert not (tmp_path / "checkpoints" / "exp" / "final.zip").exists()
    doc = json.loads(stopped.bot.read_text())
    assert doc["partial"] is True and doc["provenance"]["timesteps"] == stopped.timesteps
    capsys.readouterr()

    # same command again (no --resume): continues from the latest periodic checkpoint
    resumed = train.train(settings)
    assert resumed.continued_from == stopped.checkpoint
    # SB3 trains whole rollouts (256 steps here), so the count may pass the total slightly
    assert resumed.exit_code == 0 and 2048 <= resumed.timesteps < 2048 + 256
    lines = progress_lines(capsys.readouterr().out)
    assert lines[0]["timesteps"] > stopped.timesteps
    assert all(line["total"] == 2048 for line in lines)
    assert json.loads(resumed.bot.read_text())["partial"] is False


@pytest.mark.slow
def test_explicit_resume_of_own_checkpoint_continues_without_reset_std(tmp_path: Path) -> None:
    first = train.train(tiny(tmp_path, timesteps=1024, checkpoint_every=256))
    step = sorted(step_checkpoints(first.checkpoint.parent))[-1][1]
    log_std_before = PPO.load(step, device="cpu").policy.log_std.detach().numpy().copy()
    watch = Watch(at_start=lambda cb: cb.model.policy.log_std.detach().numpy().copy())
    cont = train.train(
        tiny(tmp_path, timesteps=1024, resume=step.relative_to(tmp_path), reset_std=0.3),
        [watch],
    )
    assert cont.continued_from == step.resolve()
    assert cont.timesteps == 1024
    np.testing.assert_array_equal(watch.started, log_std_before)  # no reset on continuation


@pytest.mark.slow
def test_reset_std_applies_only_when_resuming_another_experiment(tmp_path: Path) -> None:
    def log_std_at_start() -> Watch:
        return Watch(at_start=lambda cb: cb.model.policy.log_std.detach().numpy().copy())

    fresh = log_std_at_start()
    first = train.train(tiny(tmp_path, name="s1", reset_std=0.3, timesteps=512), [fresh])
    # ignored on a fresh start: the policy starts at --init-std
    np.testing.assert_allclose(fresh.started, np.full(6, math.log(0.5)), rtol=1e-6)

    # a later stage: other settings (3-D), a new count, and the std reset
    nxt = log_std_at_start()
    second = train.train(
        tiny(
            tmp_path,
            name="s2",
            reset_std=0.3,
            timesteps=256,
            resume=Path("checkpoints/s1/final.zip"),
            allow_vertical=True,
            opponent_mode="self_play",
        ),
        [nxt],
    )
    np.testing.assert_allclose(nxt.started, np.full(6, math.log(0.3)), rtol=1e-6)
    assert second.timesteps == 256 and second.resumed_from == first.checkpoint
    prov = json.loads(second.bot.read_text())["provenance"]
    assert prov["resumed_from"] == "checkpoints/s1/final.zip"

    # without --reset-std the std carries over from the checkpoint
    keep = log_std_at_start()
    train.train(
        tiny(tmp_path, name="s2b", timesteps=256, resume=Path("checkpoints/s1/final.zip")),
        [keep],
    )
    saved = PPO.load(first.checkpoint, device="cpu").policy.log_std.detach().numpy()
    np.testing.assert_array_equal(keep.started, saved)


def _action_head(model: Any) -> np.ndarray:
    head = model.policy.action_net
    return np.column_stack([head.weight.detach().numpy(), head.bias.detach().numpy()]).copy()


@pytest.mark.slow
def test_actions_a_planar_stage_never_used_restart_at_zero_in_3d(tmp_path: Path) -> None:
    planar = tiny(
        tmp_path, name="flat", timesteps=512, allow_vertical=False, allow_pitch_roll=False
    )
    first = train.train(planar)
    # the checkpoint records the game it was trained in
    assert train.checkpoint_game(first.checkpoint) == json.loads(first.bot.read_text())["game"]
    saved = _action_head(PPO.load(first.checkpoint, device="cpu"))
    assert np.abs(saved[[2, 4, 5]]).max() > 0.0  # the untrained rows are not zero already

    def resume(name: str, start: Path, **game: bool) -> Watch:
        watch = Watch(at_start=lambda cb: _action_head(cb.model))
        train.train(tiny(tmp_path, name=name, timesteps=256, resume=start, **game), [watch])
        return watch

    full = resume("full", first.checkpoint)
    np.testing.assert_array_equal(full.started[[2, 4, 5]], 0.0)  # lift, pitch, roll
    np.testing.assert_array_equal(full.started[[0, 1, 3]], saved[[0, 1, 3]])

    # vertical play but still level: only lift was unused and used now
    lift = resume("lift", first.checkpoint, allow_pitch_roll=False)
    np.testing.assert_array_equal(lift.started[2], 0.0)
    np.testing.assert_array_equal(lift.started[[0, 1, 3, 4, 5]], saved[[0, 1, 3, 4, 5]])

    # planar again: nothing changes
    same = resume("flat2", first.checkpoint, allow_vertical=False, allow_pitch_roll=False)
    np.testing.assert_array_equal(same.started, saved)

    # a checkpoint without recorded settings (e.g. saved by plain SB3) is taken as it is
    bare = tmp_path / "checkpoints" / "bare" / "model.zip"
    bare.parent.mkdir(parents=True)
    PPO.load(first.checkpoint, device="cpu").save(bare)
    assert train.checkpoint_game(bare) is None
    np.testing.assert_array_equal(resume("from_bare", bare).started, saved)
