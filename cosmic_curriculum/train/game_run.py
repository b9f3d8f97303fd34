"""`train-env` on a pettingzoo game: one learner in both seats against a league.

MaskablePPO (sb3-contrib) where the game masks its moves, PPO otherwise; the learner
trains in ``n_envs`` copies of a one-seat env (``game_env.py``) whose opponent, drawn per
episode from the league (``league.py``, ``league_store.py``), moves inside the env. It
follows train-env's contract (docs/ENVIRONMENTS.md): ``--timesteps`` is the total, its own
``step_<n>.zip`` continues the count (and restores the league saved beside it), another
checkpoint warm-starts (a fresh league); ``@progress`` lines; SIGINT/SIGTERM/SIGUSR1 save
a step checkpoint and its league and exit 128 + the signal. It leaves ``final.zip`` (with
``final.league.json``) and ``bots/EXP.json``, a masked env bot.
With ``--clone-teacher`` a fresh policy first learns a teacher's moves (``game_clone.py``);
a warm start or a continuation keeps its checkpoint's policy.
"""

from __future__ import annotations

import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from cosmic_curriculum.defaults import TORCH_THREADS
from cosmic_curriculum.envs.algos import algo_class, choose_policy
from cosmic_curriculum.envs.export import env_bot_from_model
from cosmic_curriculum.envs.game_players import builtin_name
from cosmic_curriculum.envs.game_probe import search_note, search_sees
from cosmic_curriculum.envs.onnx_twin import write_twin_or_warn
from cosmic_curriculum.envs.pettingzoo import GameInfo, game_info
from cosmic_curriculum.envs.policy import EnvBot, save_env_bot
from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.progress import format_progress
from cosmic_curriculum.train import league as rules
from cosmic_curriculum.train.env_model import (
    loaded_model,
    new_model,
    save_checkpoint,
    usable_cores,
)
from cosmic_curriculum.train.league_settings import GameTrainSettings
from cosmic_curriculum.train.league_store import (
    SNAPSHOT_DIR,
    League,
    bot_player,
    check_snapshots,
    league_path,
    load_league,
    prune_snapshots,
)
from cosmic_curriculum.train.stopping import StopFlag, signals_handled
from cosmic_curriculum.workspace.env_config import EnvSpec
from cosmic_curriculum.workspace.layout import Layout, step_checkpoints


def game_bot(model: Any, spec: EnvSpec, info: GameInfo, sha: str | None = None) -> EnvBot:
    """A game model (MaskablePPO or PPO) as an env bot of ``spec``'s game that masks
    illegal moves when the game has masks: what train-env exports, and what compare
    makes of each checkpoint."""
    bot = env_bot_from_model(model, spec, checkpoint_sha256=sha)
    return replace(bot, action_mask=info.masked)


def masked_bot(
    model: Any, settings: GameTrainSettings, info: GameInfo, sha: str | None = None
) -> EnvBot:
    """The learner as an env bot of its own game."""
    return game_bot(model, settings.base.env, info, sha)


def _check_algo(settings: GameTrainSettings, info: GameInfo) -> None:
    algo = settings.base.algo
    if algo == "MaskablePPO" and not info.masked:
        raise ConfigError(
            f"--algo MaskablePPO needs action masks, but {settings.base.env.id} has no "
            "'action_mask' in its observations; train it with --algo PPO"
        )
    if algo == "PPO" and info.masked:
        # Unmasked, the learner's illegal moves would each end its game as a loss (and a
        # line of PettingZoo's warning in the log): steps spent learning the rules.
        raise ConfigError(
            f"--algo PPO: {settings.base.env.id} masks its moves and PPO would play illegal "
            "ones; train it with --algo MaskablePPO (the default on a masked game)"
        )
    if algo not in ("PPO", "MaskablePPO"):
        raise ConfigError(
            f"--algo {algo}: a pettingzoo game trains with MaskablePPO (masked moves) or "
            "PPO; choose one of those"
        )


def _league(settings: GameTrainSettings, info: GameInfo, layout: Layout, directory: Path) -> League:
    base = settings.base
    option = "--opponent-mode bot:" if settings.mode == "bot" else "--league-bot"
    fixed = {
        name: bot_player(name, info, base.seed, layout.root, option, bool(base.env.wrappers))
        for name in settings.rule.bots
    }
    searches = [n for n in fixed if (builtin_name(n) or "").startswith("search:")]
    note = search_note(", ".join(searches), search_sees(base.env, info)) if searches else None
    if note is not None:  # fine to train against: said once, so no one takes it as fair
        print(f"note: {note}", flush=True)
    return League(settings.rule, rules.new_state(base.seed), directory / SNAPSHOT_DIR, fixed)


def game_vec_kind(vec_env: str) -> str:
    """``--vec-env``'s choice for a game: ``auto`` steps the seats in this process.
    Workers pay only for slow opponents (deep searches, programs); on the connect4
    preset's league they do not (bench/bench_game_workers.py, docs/BENCHMARKS.md): the
    trainer's own work each step, between the seats' moves, is as long as theirs."""
    return "dummy" if vec_env == "auto" else vec_env


def _vec_env(
    settings: GameTrainSettings, info: GameInfo, league: League, layout: Layout
) -> tuple[Any, str]:
    """The seats, vectorised, and where they are stepped (for the start line)."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from cosmic_curriculum.train.game_env import SeatEnv

    base = settings.base
    spec, cap = base.env, settings.move_cap
    if game_vec_kind(base.vec_env) == "subproc":
        from cosmic_curriculum.train.game_workers import GameWorkers, worker_plans

        workers = max(1, min(base.n_envs, usable_cores()))
        plans = worker_plans(spec, base.n_envs, workers, cap, base.seed, layout.root, league)
        venv: Any = GameWorkers(plans, info, league)
        venv.seed(base.seed)
        return venv, f"in {workers} worker processes"

    def one(i: int) -> Any:
        return lambda: Monitor(SeatEnv(spec, info, league, i, cap))

    venv = DummyVecEnv([one(i) for i in range(base.n_envs)])
    venv.seed(base.seed)
    return venv, "in this process"


def save_game_step(model: Any, league: League, layout: Layout, settings: GameTrainSettings) -> Path:
    """``step_<n>.zip`` with its league written first; the newest ``keep`` kept, with
    their leagues; snapshots no kept league names pruned."""
    base = settings.base
    path = layout.step_checkpoint(base.experiment, int(model.num_timesteps))
    league.save(path)
    save_checkpoint(model, path)
    steps = step_checkpoints(path.parent)
    for _, old in steps[: -base.keep_checkpoints]:
        old.unlink(missing_ok=True)
        league_path(old).unlink(missing_ok=True)
    kept = [league_path(p) for _, p in steps[-base.keep_checkpoints :]]
    prune_snapshots(league.directory, kept, league.state)
    return path


def _callback(
    settings: GameTrainSettings, info: GameInfo, league: League, layout: Layout, stop: StopFlag
) -> Any:
    from stable_baselines3.common.callbacks import BaseCallback

    base = settings.base

    class Periodic(BaseCallback):
        """Snapshots into the pool, step checkpoints with the league, @progress, signals."""

        def _on_training_start(self) -> None:
            self.last_save = int(self.model.num_timesteps)
            self.last_print = 0.0
            self.started = time.monotonic()
            self.start_steps = self.last_save

        def _on_step(self) -> bool:
            if stop.signum is not None:
                return False
            steps = int(self.model.num_timesteps)
            every = settings.snapshot_every
            if settings.rule.pool_size and steps // every > (steps - base.n_envs) // every:
                league.snapshot(masked_bot(self.model, settings, info), steps)
            if steps - self.last_save >= base.checkpoint_every:
                self.last_save = steps
                save_game_step(self.model, league, layout, settings)
            now = time.monotonic()
            if now - self.last_print >= base.progress_seconds:
                self.last_print = now
                fps = (steps - self.start_steps) / max(now - self.started, 1e-9)
                print_progress(self.model, base.timesteps, fps)
            return True

    return Periodic()


def print_progress(model: Any, total: int, fps: float | None = None) -> None:
    episodes = list(getattr(model, "ep_info_buffer", None) or [])
    rewards = [float(e["r"]) for e in episodes]
    line = format_progress(
        timesteps=int(model.num_timesteps),
        total=total,
        fps=fps,
        reward=sum(rewards) / len(rewards) if rewards else None,
        win_rate=sum(r > 0 for r in rewards) / len(rewards) if rewards else None,
    )
    print(line, flush=True)


def train_game(settings: GameTrainSettings) -> int:
    """One training to its total (or a signal); the exit code (0, or 128 + the signal)."""
    base = settings.base
    layout = Layout(base.workspace.resolve())
    directory = layout.checkpoint_dir(base.experiment)
    info = game_info(base.env)  # a game that is not a two-player PettingZoo game: one line
    _check_algo(settings, info)
    algo_class(base.algo)  # sb3-contrib missing: one line naming the extra
    league = _league(settings, info, layout, directory)
    resume = base.resume
    if resume is not None and not resume.is_absolute():
        resume = layout.root / resume
    continued = resume is not None and resume.resolve().parent == directory.resolve()
    if continued:
        assert resume is not None
        league.state = load_league(resume)
        check_snapshots(league.state, league.directory, resume)
    stop = StopFlag()
    with signals_handled(stop):
        import torch

        torch.set_num_threads(TORCH_THREADS)
        venv, where = _vec_env(settings, info, league, layout)
        try:
            code, model = _train(
                settings, info, league, layout, stop, (venv, where), resume, continued
            )
        finally:
            venv.close()
        if code:
            return code
    print_progress(model, base.timesteps)
    final = layout.final_checkpoint(base.experiment)
    league.save(final)
    sha = save_checkpoint(model, final)
    kept = [league_path(p) for _, p in step_checkpoints(directory)] + [league_path(final)]
    prune_snapshots(league.directory, kept, league.state)
    bot = masked_bot(model, settings, info, sha)
    assert bot.provenance is not None
    bot.provenance["resumed_from"] = None if resume is None else layout.rel(resume)
    bot.provenance["opponent_mode"] = settings.mode
    bot.provenance["clone_teacher"] = None if settings.clone is None else settings.clone.teacher
    save_env_bot(bot, layout.bot(base.experiment))
    if not bot.action_mask:  # a masked bot has no twin (it would play illegal moves)
        write_twin_or_warn(layout.bot(base.experiment))  # bots/EXPERIMENT.onnx
    print(
        f"trained {base.experiment}: {int(model.num_timesteps)} timesteps, "
        f"{layout.rel(layout.bot(base.experiment))}; league: {league.summary()}",
        flush=True,
    )
    return 0


def _train(
    settings: GameTrainSettings,
    info: GameInfo,
    league: League,
    layout: Layout,
    stop: StopFlag,
    seats: tuple[Any, str],
    resume: Path | None,
    continued: bool,
) -> tuple[int, Any]:
    base = settings.base
    venv, where = seats
    policy = choose_policy(base.algo, venv.observation_space, base.policy)
    model = new_model(base, venv, policy) if resume is None else loaded_model(base, venv, resume)
    try:  # a policy no env bot can hold is refused before any training
        masked_bot(model, settings, info)
    except TrainerError as exc:
        raise ConfigError(f"the trained bot could not be saved: {exc}; change --policy") from None
    done = int(model.num_timesteps) if continued else 0
    left = max(0, base.timesteps - done)
    clone = settings.clone if resume is None else None  # a resume keeps its policy
    if settings.clone is not None and resume is not None:
        kind = "continuation" if continued else "warm start"
        print(
            f"note: --clone-teacher {settings.clone.teacher}: not on a {kind}; the lesson "
            "is for a fresh policy",
            flush=True,
        )
    if clone is not None:
        from cosmic_curriculum.train.game_clone import clone_teacher

        if (builtin_name(clone.teacher) or "").startswith("search:"):
            seen = search_sees(base.env, info)
            note = search_note(f"--clone-teacher {clone.teacher}", seen, teacher=True)
            if note is not None:
                print(f"note: {note}", flush=True)

        def say(text: str) -> None:  # the log's line, and the run's progress bar
            print(f"clone {clone.teacher}: {text}", flush=True)
            doing = f"cloning {clone.teacher}: {text}"
            print(format_progress(timesteps=0, total=base.timesteps, activity=doing), flush=True)

        at = (layout.root, base.seed, settings.move_cap)
        if not clone_teacher(model, base.env, info, clone, at, stop, say):
            assert stop.signum is not None
            name = signal.Signals(stop.signum).name
            print(f"{name} while cloning: nothing saved; a rerun clones again", flush=True)
            return 128 + stop.signum, model
    if not continued and settings.rule.pool_size:
        league.snapshot(masked_bot(model, settings, info), 0)  # the pool's first opponent
    how = "continuing" if continued else ("warm start" if resume else "fresh")
    if clone is not None:
        how += f", cloned {clone.teacher}"
    print(
        f"train-env {base.experiment}: {base.algo} {policy} on {base.env.id}, "
        f"{base.n_envs} seats {where}, opponents {settings.mode}, {how}, {left} of "
        f"{base.timesteps} timesteps; league: {league.summary()}",
        flush=True,
    )
    from cosmic_curriculum.tracking.sb3 import tensorboard_dir, tracked_logger

    model.set_logger(tracked_logger(base.experiment, tensorboard_dir(None), not continued))
    if left > 0 and stop.signum is None:
        model.learn(
            total_timesteps=left,
            callback=_callback(settings, info, league, layout, stop),
            reset_num_timesteps=not continued,
        )
    if stop.signum is not None:
        path = save_game_step(model, league, layout, settings)
        name = signal.Signals(stop.signum).name
        print(
            f"{name}: saved {layout.rel(path)} and its league; --resume it to continue", flush=True
        )
        return 128 + stop.signum, model
    return 0, model
