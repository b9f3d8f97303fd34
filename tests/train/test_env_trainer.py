"""`train-env` with every algorithm family on real envs for a few hundred steps, its
VecNormalize statistics through a SIGTERM and a continuation, a warm start that loads
them, subprocess envs under SIGUSR1, and the vectorised env it chooses."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cosmic_curriculum.envs.policy import load_env_bot
from cosmic_curriculum.errors import ConfigError
from cosmic_curriculum.progress import parse_progress_line
from cosmic_curriculum.train.env_model import fastest_vec_env, stats_path
from cosmic_curriculum.train.env_run import parse_settings, train_env
from cosmic_curriculum.workspace.env_config import EnvSpec

pytest.importorskip("sb3_contrib")

POLE = EnvSpec(kind="gymnasium", id="CartPole-v1")
PENDULUM = EnvSpec(kind="gymnasium", id="Pendulum-v1")


def settings(ws: Path, algo: str, env: EnvSpec, timesteps: int, **options: Any) -> Any:
    params = options.pop("hyperparams", None)
    return parse_settings(
        "x",
        timesteps=timesteps,
        env=env.to_argument(),
        resume=options.pop("resume", None),
        seed=0,
        algo=algo,
        hyperparams=None if params is None else json.dumps(params),
        workspace=ws,
        n_envs=options.pop("n_envs", 2),
        vec_env="dummy",
        **options,
    )


def trained(ws: Path, algo: str, env: EnvSpec, params: dict[str, Any], steps: int = 256) -> Any:
    assert train_env(settings(ws, algo, env, steps, hyperparams=params)) == 0
    final = ws / "checkpoints" / "x" / "final.zip"
    from cosmic_curriculum.envs.algos import algo_class

    model = algo_class(algo).load(final, device="cpu")
    assert model.num_timesteps >= steps
    bot = load_env_bot(ws / "bots" / "x.json")
    assert bot.provenance is not None and bot.provenance["algo"] == algo
    return model


def test_ppo_with_a_zoo_schedule_and_activation(tmp_path: Path) -> None:
    from torch import nn

    params = {
        "n_steps": 32,
        "learning_rate": "lin_0.001",
        "policy_kwargs": {"activation_fn": "nn.ReLU", "net_arch": [16]},
    }
    model = trained(tmp_path, "PPO", POLE, params)
    assert model.policy_kwargs["activation_fn"] is nn.ReLU
    assert model.lr_schedule(1.0) == pytest.approx(0.001)
    assert model.lr_schedule(0.25) == pytest.approx(0.00025)


SMALL_OFF_POLICY = {"learning_starts": 64, "batch_size": 32, "buffer_size": 1000}
NET = {"net_arch": [16]}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("algo", "env", "params"),
    [
        ("A2C", POLE, {"n_steps": 8}),
        ("DQN", POLE, {**SMALL_OFF_POLICY, "policy_kwargs": NET}),
        ("QRDQN", POLE, {**SMALL_OFF_POLICY, "policy_kwargs": NET}),
        ("TRPO", POLE, {"n_steps": 64, "batch_size": 64, "policy_kwargs": NET}),
        ("ARS", POLE, {"n_delta": 2, "policy_kwargs": NET}),
        ("SAC", PENDULUM, {**SMALL_OFF_POLICY, "policy_kwargs": NET}),
        (
            "TD3",
            PENDULUM,
            {**SMALL_OFF_POLICY, "policy_kwargs": NET, "noise_type": "normal", "noise_std": 0.1},
        ),
        ("DDPG", PENDULUM, {**SMALL_OFF_POLICY, "policy_kwargs": NET}),
        ("TQC", PENDULUM, {**SMALL_OFF_POLICY, "policy_kwargs": NET}),
    ],
)
def test_each_algorithm_family_trains(
    tmp_path: Path, algo: str, env: EnvSpec, params: dict[str, Any]
) -> None:
    model = trained(tmp_path, algo, env, params)
    if "noise_type" in params:
        # SB3 gives each of the envs its own copy of the configured noise.
        assert type(model.action_noise.base_noise).__name__ == "NormalActionNoise"


def test_a_warm_start_keeps_the_checkpoint_network_and_takes_new_hyperparams(
    tmp_path: Path,
) -> None:
    from cosmic_curriculum.errors import TrainerError

    net = {"net_arch": [16], "activation_fn": "nn.Tanh"}
    trained(tmp_path, "A2C", POLE, {"n_steps": 8, "policy_kwargs": net}, steps=64)
    final = tmp_path / "checkpoints" / "x" / "final.zip"
    later = {"n_steps": 4, "learning_rate": "lin_1e-4", "policy_kwargs": net}
    warm = settings(tmp_path / "w", "A2C", POLE, 64, hyperparams=later, resume=final)
    assert train_env(warm) == 0  # A2C's own optimizer in policy_kwargs is no difference
    from stable_baselines3 import A2C

    model = A2C.load(tmp_path / "w" / "checkpoints" / "x" / "final.zip", device="cpu")
    assert model.n_steps == 4 and model.lr_schedule(1.0) == pytest.approx(1e-4)
    other = {"policy_kwargs": {"net_arch": [32]}}
    wrong = settings(tmp_path / "v", "A2C", POLE, 64, hyperparams=other, resume=final)
    with pytest.raises(TrainerError) as info:
        train_env(wrong)
    assert "its policy_kwargs net_arch is [16], not [32]" in str(info.value)


def test_an_algorithm_that_cannot_act_in_the_env_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        train_env(settings(tmp_path, "SAC", POLE, 64))
    assert str(info.value).startswith("--algo SAC acts in Box action spaces")
    with pytest.raises(ConfigError, match="--policy 'CnnPolicy': ARS has MlpPolicy"):
        train_env(settings(tmp_path, "ARS", PENDULUM, 64, policy="CnnPolicy"))
    with pytest.raises(ConfigError, match="--normalize"):
        settings(tmp_path, "PPO", POLE, 64, normalize="[1]")
    with pytest.raises(ConfigError, match="--hyperparams: learning_rate"):
        settings(tmp_path, "PPO", POLE, 64, hyperparams={"learning_rate": "lin_x"})


def test_a_policy_no_bot_can_hold_is_refused_before_training(tmp_path: Path) -> None:
    # rl-zoo3's Pendulum entries for PPO and A2C set use_sde: without this check train-env
    # trained the whole budget and only then failed to save the bot.
    with pytest.raises(ConfigError) as info:
        train_env(settings(tmp_path, "PPO", PENDULUM, 100_000, hyperparams={"use_sde": True}))
    message = str(info.value)
    assert message.startswith("the trained bot could not be saved") and "\n" not in message
    assert "use_sde" in message
    assert not list((tmp_path / "checkpoints").rglob("*.zip"))


def test_vecnormalize_statistics_go_with_the_checkpoint_and_the_bot(tmp_path: Path) -> None:
    run = settings(tmp_path, "PPO", POLE, 256, hyperparams={"n_steps": 32}, normalize="true")
    assert train_env(run) == 0
    final = tmp_path / "checkpoints" / "x" / "final.zip"
    stats = pickle.loads(stats_path(final).read_bytes())
    assert stats.obs_rms.count > 256  # every env step updated them
    bot = load_env_bot(tmp_path / "bots" / "x.json")
    assert bot.obs_norm is not None and bot.obs_norm.stats is not None
    np.testing.assert_allclose(bot.obs_norm.stats.mean, stats.obs_rms.mean)
    np.testing.assert_allclose(bot.obs_norm.stats.var, stats.obs_rms.var)


def test_step_checkpoints_keep_their_statistics_and_are_pruned_with_them(
    tmp_path: Path,
) -> None:
    import dataclasses

    run = settings(tmp_path, "PPO", POLE, 256, hyperparams={"n_steps": 16}, normalize="true")
    run = dataclasses.replace(run, checkpoint_every=32, keep_checkpoints=2)
    directory = tmp_path / "checkpoints" / "x"
    directory.mkdir(parents=True)
    (directory / "step_1.vecnormalize.pkl").write_bytes(b"left by a killed save")
    assert train_env(run) == 0
    zips = sorted(p.name for p in directory.glob("step_*.zip"))
    stats = sorted(p.name for p in directory.glob("step_*.vecnormalize.pkl"))
    assert len(zips) == 2 and stats == [z.replace(".zip", ".vecnormalize.pkl") for z in zips]
    for name in zips:  # each holds the statistics as they were at its own step
        count = pickle.loads(stats_path(directory / name).read_bytes()).obs_rms.count
        assert int(name[5:-4]) <= count <= int(name[5:-4]) + 2 * 2


def train_env_process(ws: Path, *args: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "cosmic_curriculum", "train-env", *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        argv, cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def stopped(ws: Path, sig: signal.Signals, *args: str) -> str:
    """train-env stopped by ``sig`` once it reports progress: its output."""
    proc = train_env_process(ws, *args)
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until it is training
        if (p := parse_progress_line(line.strip())) and p["timesteps"] > 0:
            break
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, out
    return out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_statistics_survive_sigterm_continuation_and_warm_start(tmp_path: Path) -> None:
    lake = POLE.to_argument()
    common = ["--env", lake, "--normalize", '{"norm_reward": false}', "--n-envs", "2"]
    common += ["--hyperparams", '{"n_steps": 16}', "--vec-env", "dummy"]
    stopped(tmp_path, signal.SIGTERM, "a", "--timesteps", "10000000", *common)
    steps = sorted((tmp_path / "checkpoints" / "a").glob("step_*.zip"))
    assert len(steps) == 1
    saved = pickle.loads(stats_path(steps[0]).read_bytes())
    done = int(steps[0].stem[5:])
    assert saved.obs_rms.count >= done and not saved.norm_reward
    total = str(done + 256)
    resume = ["--resume", f"checkpoints/a/{steps[0].name}"]
    proc = train_env_process(tmp_path, "a", "--timesteps", total, *common, *resume)
    out, _ = proc.communicate(timeout=200)
    assert proc.returncode == 0, out
    assert "(statistics loaded), continuing, 256 of" in out
    final = pickle.loads(stats_path(tmp_path / "checkpoints" / "a" / "final.zip").read_bytes())
    # Continued, not restarted: the count goes on from the step checkpoint's.
    assert final.obs_rms.count >= saved.obs_rms.count + 256
    warm = ["--resume", "checkpoints/a/final.zip"]
    proc = train_env_process(tmp_path, "b", "--timesteps", "64", *common, *warm)
    out, _ = proc.communicate(timeout=200)
    assert proc.returncode == 0, out
    assert "(statistics loaded), warm start, 64 of 64" in out
    second = pickle.loads(stats_path(tmp_path / "checkpoints" / "b" / "final.zip").read_bytes())
    assert second.obs_rms.count >= final.obs_rms.count + 64


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_subprocess_envs_leave_sigusr1_and_sigterm_to_the_trainer(tmp_path: Path) -> None:
    # The curriculum signals the whole group: the workers must not die before the
    # trainer saved (its checkpoint needs them closed cleanly, not crashed). SIGUSR1 (a
    # batch scheduler's warning before a time limit) stops the trainer as SIGTERM does.
    args = ["s", "--timesteps", "10000000", "--env", POLE.to_argument(), "--n-envs", "2"]
    proc = train_env_process(tmp_path, *args, "--vec-env", "subproc")
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if (p := parse_progress_line(line.strip())) and p["timesteps"] > 0:
            break
    assert any("2 envs (subproc)" in line for line in seen), seen
    os.killpg(os.getpgid(proc.pid), 0)  # the group exists
    for child in _children(proc.pid):
        os.kill(child, signal.SIGTERM)  # what a group-wide TERM gives each worker
    proc.send_signal(signal.SIGUSR1)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGUSR1, out
    assert "SIGUSR1: saved checkpoints/s/step_" in out
    assert list((tmp_path / "checkpoints" / "s").glob("step_*.zip"))


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_auto_steps_a_cheap_env_in_process() -> None:
    import gymnasium

    env = gymnasium.make("CartPole-v1")
    try:
        assert fastest_vec_env(env, 8) == "dummy"  # microseconds a step: pipes cost more
        assert fastest_vec_env(env, 1) == "dummy"
    finally:
        env.close()
