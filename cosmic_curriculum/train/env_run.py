"""`cosmic-curriculum train-env`: the built-in trainer of Gymnasium stages (SB3).

    train-env EXPERIMENT --timesteps N --env JSON [--resume CKPT] [--seed K]
              [--algo NAME] [--policy NAME] [--hyperparams JSON] [--normalize JSON]
              [--n-envs N] [--vec-env auto|dummy|subproc]

It follows docs/ENVIRONMENTS.md: ``--timesteps`` is the total; ``--resume`` of its own
``checkpoints/EXPERIMENT/step_<n>.zip`` trains what is left, a warm start from another
experiment's checkpoint trains all of it (VecNormalize statistics saved beside a
checkpoint are loaded with it). It prints ``@progress`` lines, saves step checkpoints,
and on SIGINT/SIGTERM/SIGUSR1 saves one and exits 128 + the signal. It leaves
``checkpoints/EXPERIMENT/final.zip`` and ``bots/EXPERIMENT.json``, an env bot
(:mod:`cosmic_curriculum.envs.policy`) that replays without the checkpoint or torch.
torch and stable-baselines3 are imported when a training starts, never with the package.
"""

from __future__ import annotations

import json
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cosmic_curriculum.defaults import (
    ENV_ALGO,
    ENV_CHECKPOINT_EVERY_TIMESTEPS,
    ENV_KEEP_CHECKPOINTS,
    ENV_N_ENVS,
    ENV_PROGRESS_SECONDS,
    ENV_VEC_ENV,
    TORCH_THREADS,
)
from cosmic_curriculum.envs.algos import algo_class, check_action_space, choose_policy
from cosmic_curriculum.envs.export import env_bot_from_model
from cosmic_curriculum.envs.guard import EnvFault
from cosmic_curriculum.envs.onnx_twin import write_twin_or_warn
from cosmic_curriculum.envs.policy import save_env_bot
from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.progress import format_progress
from cosmic_curriculum.train.env_model import (
    loaded_model,
    new_model,
    normalized,
    save_checkpoint,
    save_step,
    stats_path,
    vec_env,
)
from cosmic_curriculum.train.stopping import StopFlag, signals_handled
from cosmic_curriculum.workspace.env_config import EnvSpec, check_env
from cosmic_curriculum.workspace.layout import Layout, check_experiment, check_experiment_fits
from cosmic_curriculum.workspace.trainer_config import canonical_algo
from cosmic_curriculum.workspace.zoo_values import check_hyperparams, normalize_table

VEC_ENVS = ("auto", "dummy", "subproc")


@dataclass(frozen=True)
class EnvTrainSettings:
    experiment: str
    timesteps: int
    env: EnvSpec
    workspace: Path = Path(".")
    resume: Path | None = None
    seed: int = 0
    algo: str = ENV_ALGO
    hyperparams: dict[str, Any] = field(default_factory=dict)
    n_envs: int = ENV_N_ENVS
    checkpoint_every: int = ENV_CHECKPOINT_EVERY_TIMESTEPS
    keep_checkpoints: int = ENV_KEEP_CHECKPOINTS
    progress_seconds: float = ENV_PROGRESS_SECONDS
    policy: str | None = None  # None: chosen from the observation space
    normalize: dict[str, Any] | None = None  # VecNormalize's keyword arguments; None: off
    vec_env: str = ENV_VEC_ENV


def _json_option(option: str, text: str, example: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{option}: not JSON ({exc}); pass e.g. '{example}'") from None


def parse_settings(
    experiment: str,
    *,
    timesteps: int,
    env: str,
    resume: Path | None,
    seed: int,
    algo: str,
    hyperparams: str | None,
    workspace: Path,
    policy: str | None = None,
    normalize: str | None = None,
    n_envs: int = ENV_N_ENVS,
    vec_env: str = ENV_VEC_ENV,
    checkpoint_every: int = ENV_CHECKPOINT_EVERY_TIMESTEPS,
    keep_checkpoints: int = ENV_KEEP_CHECKPOINTS,
) -> EnvTrainSettings:
    """The command line, checked: each fault one line naming the option and the fix."""
    try:
        check_experiment_fits(check_experiment(experiment))
    except ValueError as exc:
        raise ConfigError(f"EXPERIMENT: {exc}") from None
    if timesteps < 1:
        raise ConfigError(f"--timesteps {timesteps}: must be >= 1")
    try:
        spec = check_env(EnvSpec.model_validate(json.loads(env)))
    except (ValueError, TypeError) as exc:
        first = " ".join(str(exc).split())[:300]
        raise ConfigError(
            f"--env: not an env spec as JSON ({first}); pass the stage's spec"
        ) from None
    if spec.kind not in ("gymnasium", "pettingzoo"):
        raise ConfigError(
            f"--env: kind {spec.kind!r} is not trained by train-env; use kind "
            '"gymnasium" or "pettingzoo"'
        )
    try:
        chosen = canonical_algo(algo)
    except ValueError as exc:
        raise ConfigError(f"--algo {exc}") from None
    if chosen == "MaskablePPO" and spec.kind != "pettingzoo":
        raise ConfigError(
            "--algo MaskablePPO needs action masks, which only a pettingzoo game with "
            '"action_mask" in its observations gives; choose another --algo'
        )
    algo_class(chosen)  # sb3-contrib's algorithms: one line naming the extra to install
    params: dict[str, Any] = {}
    if hyperparams is not None:
        params = _json_option("--hyperparams", hyperparams, '{"n_steps": 256}')
        if not isinstance(params, dict):
            raise ConfigError("--hyperparams: must be a JSON object of the algorithm's arguments")
        try:
            check_hyperparams(params)
        except ValueError as exc:
            raise ConfigError(f"--hyperparams: {exc}") from None
    norm = None
    if normalize is not None:
        try:
            norm = normalize_table(
                _json_option("--normalize", normalize, '{"norm_reward": false}'), "--normalize"
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if n_envs < 1:
        raise ConfigError(f"--n-envs {n_envs}: must be >= 1")
    if vec_env not in VEC_ENVS:
        raise ConfigError(f"--vec-env {vec_env!r}: choose one of {', '.join(VEC_ENVS)}")
    if checkpoint_every < 1:
        raise ConfigError(f"--checkpoint-every {checkpoint_every}: must be >= 1 timestep")
    if keep_checkpoints < 1:
        raise ConfigError(f"--keep-checkpoints {keep_checkpoints}: must be >= 1 (resume needs one)")
    return EnvTrainSettings(
        experiment,
        timesteps,
        spec,
        workspace,
        resume,
        seed,
        chosen,
        params,
        n_envs,
        policy=policy,
        normalize=norm,
        vec_env=vec_env,
        checkpoint_every=checkpoint_every,
        keep_checkpoints=keep_checkpoints,
    )


def _callback(settings: EnvTrainSettings, layout: Layout, stop: StopFlag, done: int) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    class Periodic(BaseCallback):
        """Step checkpoints, @progress lines, and a clean stop on a signal."""

        def __init__(self) -> None:
            super().__init__()
            self.last_save = done
            self.last_print = 0.0
            self.started = time.monotonic()
            self.start_steps = done

        def _on_step(self) -> bool:
            if stop.signum is not None:
                return False
            steps = int(self.model.num_timesteps)
            if steps - self.last_save >= settings.checkpoint_every:
                self.last_save = steps
                save_step(self.model, layout, settings.experiment, settings.keep_checkpoints)
            now = time.monotonic()
            if now - self.last_print >= settings.progress_seconds:
                self.last_print = now
                print_progress(
                    self.model,
                    settings.timesteps,
                    (steps - self.start_steps) / max(now - self.started, 1e-9),
                )
            return True

    return Periodic()


def print_progress(model: Any, total: int, fps: float | None = None) -> None:
    episodes = list(getattr(model, "ep_info_buffer", None) or [])
    reward = sum(float(e["r"]) for e in episodes) / len(episodes) if episodes else None
    line = format_progress(timesteps=int(model.num_timesteps), total=total, fps=fps, reward=reward)
    print(line, flush=True)


def train_env(settings: EnvTrainSettings) -> int:
    """One training to its total (or a signal); the exit code (0, or 128 + the signal)."""
    layout = Layout(settings.workspace.resolve())
    directory = layout.checkpoint_dir(settings.experiment)
    stop = StopFlag()
    with signals_handled(stop):
        import torch

        torch.set_num_threads(TORCH_THREADS)  # robust on shared cores
        venv, kind = vec_env(settings)
        try:
            code, model, resume = _train(settings, layout, directory, stop, venv, kind)
        finally:
            venv.close()
        if code:
            return code
    print_progress(model, settings.timesteps)
    sha = save_checkpoint(model, layout.final_checkpoint(settings.experiment))
    # The bot normalizes observations as the policy saw them: VecNormalize's statistics.
    bot = env_bot_from_model(
        model, settings.env, checkpoint_sha256=sha, normalizer=model.get_vec_normalize_env()
    )
    assert bot.provenance is not None
    bot.provenance["resumed_from"] = None if resume is None else layout.rel(resume)
    save_env_bot(bot, layout.bot(settings.experiment))
    write_twin_or_warn(layout.bot(settings.experiment))  # bots/EXPERIMENT.onnx
    print(
        f"trained {settings.experiment}: {int(model.num_timesteps)} timesteps, "
        f"{layout.rel(layout.bot(settings.experiment))}",
        flush=True,
    )
    return 0


def _train(
    settings: EnvTrainSettings,
    layout: Layout,
    directory: Path,
    stop: StopFlag,
    venv: Any,
    kind: str,
) -> tuple[int, Any, Path | None]:
    """Build or load the model on ``venv`` and train it: (exit code, model, resumed path)."""
    check_action_space(settings.algo, venv.action_space, "--algo")
    try:
        policy = choose_policy(settings.algo, venv.observation_space, settings.policy)
    except ConfigError as exc:
        raise ConfigError(f"--{exc}" if settings.policy else f"--algo: {exc}") from None
    resume = settings.resume
    if resume is not None and not resume.is_absolute():
        resume = layout.root / resume
    # Its own step checkpoint continues the count; any other checkpoint warm-starts.
    continued = resume is not None and resume.resolve().parent == directory.resolve()
    stats = None if resume is None else stats_path(resume)
    stats = stats if stats is not None and stats.is_file() else None
    if settings.normalize is not None:
        venv = normalized(venv, settings, stats)
    elif stats is not None:
        print(
            f"warning: {layout.rel(stats)} holds VecNormalize statistics, but normalize is "
            "off: the policy sees raw observations now",
            flush=True,
        )
    if resume is None:
        model = new_model(settings, venv, policy)
    else:
        model = loaded_model(settings, venv, resume)
    try:  # a policy no env bot can hold (SDE, a CNN, ...) is refused before any training
        env_bot_from_model(model, settings.env, normalizer=model.get_vec_normalize_env())
    except TrainerError as exc:
        raise ConfigError(
            f"the trained bot could not be saved: {exc}; change --policy or --hyperparams, "
            "or train with a training_command of your own"
        ) from None
    done = int(model.num_timesteps) if continued else 0
    left = max(0, settings.timesteps - done)
    how = "continuing" if continued else ("warm start" if resume else "fresh")
    norm = (
        ", VecNormalize" + (" (statistics loaded)" if stats else "")
        if settings.normalize is not None
        else ""
    )
    print(
        f"train-env {settings.experiment}: {settings.algo} {policy} on {settings.env.id}, "
        f"{settings.n_envs} envs ({kind}){norm}, {how}, {left} of {settings.timesteps} "
        "timesteps",
        flush=True,
    )
    from cosmic_curriculum.tracking.sb3 import tensorboard_dir, tracked_logger

    # SB3's logger feeds TensorBoard and the trackers' spool when the curriculum says so.
    model.set_logger(tracked_logger(settings.experiment, tensorboard_dir(None), not continued))
    if left > 0 and stop.signum is None:
        try:
            model.learn(
                total_timesteps=left,
                callback=_callback(settings, layout, stop, done),
                reset_num_timesteps=not continued,
            )
        except EnvFault as fault:
            # One line, the last of the log: the attempt error quotes it.
            raise TrainerError(fault.at(int(model.num_timesteps))) from None
        except (EOFError, ConnectionError) as exc:
            if kind != "subproc":
                raise
            # A worker that met an env fault said so in its own `error:` line and exited.
            raise TrainerError(
                f"an env worker process ended after {int(model.num_timesteps)} training "
                f"timesteps ({type(exc).__name__}); the worker's line above says why; fix "
                "the env, or train with --vec-env dummy to see it here"
            ) from None
    if stop.signum is not None:
        path = save_step(model, layout, settings.experiment, settings.keep_checkpoints)
        name = signal.Signals(stop.signum).name
        print(f"{name}: saved {layout.rel(path)}; --resume it to continue", flush=True)
        return 128 + stop.signum, model, resume
    return 0, model, resume
