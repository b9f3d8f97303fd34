"""The PPO trainer: every flag does what it says, artifacts, resume rules, self-play, signals.

Budgets are tiny (a few hundred env steps per update, a net of 16 units), so each training
run takes a second or two.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fakes.budgets import tiny_training_flags
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback

from cosmic_curriculum import bots, train
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.progress import parse_progress_line

torch.set_num_threads(1)


def tiny(ws: Path, name: str = "exp", **overrides: Any) -> train.TrainSettings:
    options: dict[str, Any] = {
        "experiment": name,
        "workspace": ws,
        "timesteps": 1024,
        "n_parallel": 16,
        "speedup": 16,
        "rollout_size": 256,
        "batch_size": 128,
        "n_epochs": 1,
        "checkpoint_every": 512,
        "net_arch": (16,),
        "device": "cpu",
        "opponent_mode": "inert",
    }
    options.update(overrides)
    return train.settings_from_options(**options)


class Watch(BaseCallback):
    """Records what the games look like while the trainer trains."""

    def __init__(self, every_step: Any = None, at_start: Any = None) -> None:
        super().__init__()
        self.every_step = every_step
        self.at_start = at_start
        self.seen: list[Any] = []
        self.started: Any = None

    def _on_training_start(self) -> None:
        if self.at_start is not None:
            self.started = self.at_start(self)

    def _on_step(self) -> bool:
        if self.every_step is not None:
            self.seen.append(self.every_step(self))
        return True


def env_of(cb: BaseCallback) -> Any:
    return cb.training_env


def progress_lines(text: str) -> list[dict[str, Any]]:
    return [p for line in text.splitlines() if (p := parse_progress_line(line)) is not None]


# --- settings ---------------------------------------------------------------------------


def test_bad_settings_are_one_line_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--opponent-mode='foo'"):
        tiny(tmp_path, opponent_mode="foo")
    with pytest.raises(ConfigError, match="--timesteps=0"):
        tiny(tmp_path, timesteps=0)
    with pytest.raises(ConfigError, match="experiment name"):
        tiny(tmp_path, name="../escape")
    with pytest.raises(ConfigError, match="needs --opponent-bot"):
        tiny(tmp_path, opponent_mode="bot")
    with pytest.raises(ConfigError, match="only used with --opponent-mode bot"):
        tiny(tmp_path, opponent_bot=Path("bots/x.json"))
    with pytest.raises(ConfigError, match="--reset-std"):
        tiny(tmp_path, reset_std=-1.0)


@pytest.mark.parametrize(("n_parallel", "rollout"), [(14, 16384), (256, 16384), (3, 100)])
def test_ppo_layout_minibatch_divides_the_rollout(n_parallel: int, rollout: int) -> None:
    s = train.TrainSettings(experiment="x", n_parallel=n_parallel, rollout_size=rollout)
    n_steps, batch = train.ppo_layout(s)
    assert n_steps * n_parallel >= rollout
    assert (n_steps * n_parallel) % batch == 0
    assert batch <= s.batch_size


def test_game_flags_reach_the_game(tmp_path: Path) -> None:
    default = train.game_settings(tiny(tmp_path))
    game = train.game_settings(
        tiny(
            tmp_path,
            speedup=4,
            attack_goal_bias=0.7,
            orb_approach_bias=0.2,
            draw_penalty=5.0,
            allow_vertical=False,
            allow_pitch_roll=False,
        )
    )
    assert (game.decision_ticks, game.attack_goal_bias, game.draw_penalty) == (4, 0.7, 5.0)
    assert game.orb_approach_bias == 0.2
    assert not game.allow_vertical and not game.allow_pitch_roll
    assert default.allow_vertical and default.allow_pitch_roll
    # the trainer shapes by default (the game's own default is goals only); 0 turns it off
    assert default.attack_goal_bias == 0.5 and default.orb_approach_bias == 0.5
    off = train.game_settings(tiny(tmp_path, attack_goal_bias=0.0, orb_approach_bias=0.0))
    assert off.attack_goal_bias == 0.0 and off.orb_approach_bias == 0.0
    # flags not given keep the game's defaults
    assert default.draw_penalty == type(default)().draw_penalty


def test_checkpoints_outside_the_workspace_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.zip"
    outside.write_bytes(b"PK")
    paths = train.Paths.of(tiny(tmp_path / "ws"))
    with pytest.raises(ConfigError, match="outside"):
        train.checked_checkpoint(outside, paths)
    with pytest.raises(ConfigError, match="outside"):
        train.checked_checkpoint(Path("checkpoints/../../elsewhere.zip"), paths)
    with pytest.raises(ConfigError, match=r"not a \.zip"):
        train.checked_checkpoint(Path("checkpoints/a/model.pkl"), paths)
    with pytest.raises(ConfigError, match="not found"):
        train.checked_checkpoint(Path("checkpoints/a/step_5.zip"), paths)


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
    assert [p.name for _, p in train.step_checkpoints(final.parent)] == ["step_512.zip"]
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
    kinds = {}
    for mode in ("inert", "random", "rookie"):
        watch = Watch(at_start=lambda cb: env_of(cb).opponent.kind)
        train.train(tiny(tmp_path, name=mode, opponent_mode=mode, timesteps=256), [watch])
        kinds[mode] = watch.started
    assert kinds == {"inert": "inert", "random": "random", "rookie": "scripted"}

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
    step = sorted(train.step_checkpoints(first.checkpoint.parent))[-1][1]
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


# --- self-play --------------------------------------------------------------------------


@pytest.mark.slow
def test_self_play_snapshots_and_swaps_on_schedule(tmp_path: Path) -> None:
    settings = tiny(
        tmp_path,
        opponent_mode="self_play",
        timesteps=2048,
        selfplay_snapshot_every=512,
        selfplay_swap_every=128,
        selfplay_window=2,
        selfplay_play_latest=0.5,
        selfplay_rookie_share=0.0,
    )
    watch = Watch(every_step=lambda cb: env_of(cb).opponent)
    result = train.train(settings, [watch])
    stats = result.stats
    assert stats.snapshots == [0, 512, 1024, 1536, 2048]
    assert [s.timesteps for s in stats.swaps] == list(range(0, 2049, 128))
    # every swap picks from the window of the last two snapshots
    for swap in stats.swaps:
        window = [t for t in stats.snapshots if t <= swap.timesteps][-2:]
        assert swap.snapshot_timesteps in window
        assert swap.latest == (swap.snapshot_timesteps == window[-1])
    assert any(s.latest for s in stats.swaps[4:]) and any(not s.latest for s in stats.swaps[4:])
    assert all(opp.kind == "mlp" for opp in watch.seen)
    assert len({id(opp) for opp in watch.seen}) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.0, 1.0])
def test_self_play_latest_probability_extremes(tmp_path: Path, p: float) -> None:
    settings = tiny(
        tmp_path,
        opponent_mode="self_play",
        timesteps=1024,
        selfplay_snapshot_every=256,
        selfplay_swap_every=128,
        selfplay_window=3,
        selfplay_play_latest=p,
        selfplay_rookie_share=0.0,
    )
    swaps = train.train(settings).stats.swaps
    later = [s for s in swaps if s.timesteps >= 256]  # once there is an older snapshot
    assert later and all(s.latest == (p == 1.0) for s in later)


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
def test_self_play_rookie_share_mixes_in_the_scripted_rookie(tmp_path: Path) -> None:
    def opponents(share: float) -> tuple[list[train.SwapEvent], set[str]]:
        settings = tiny(
            tmp_path,
            name=f"share{share}",
            opponent_mode="self_play",
            timesteps=1024,
            selfplay_swap_every=64,
            selfplay_rookie_share=share,
        )
        watch = Watch(every_step=lambda cb: env_of(cb).opponent.kind)
        swaps = train.train(settings, [watch]).stats.swaps
        return swaps, set(watch.seen)

    swaps, kinds = opponents(1.0)
    assert all(s.snapshot_timesteps == -1 for s in swaps) and kinds == {"scripted"}
    swaps, kinds = opponents(0.0)
    assert all(s.snapshot_timesteps >= 0 for s in swaps) and kinds == {"mlp"}
    swaps, kinds = opponents(0.5)
    assert kinds == {"mlp", "scripted"}


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
    steps = train.step_checkpoints(tmp_path / "checkpoints" / "term")
    assert steps, "no checkpoint saved on SIGTERM"
    doc = json.loads((tmp_path / "bots" / "term.json").read_text())
    assert doc["partial"] is True and doc["provenance"]["timesteps"] == steps[-1][0]
