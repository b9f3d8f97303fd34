"""`compare`, top to bottom: check the input, hold the workspace, make each arm × seed's
sub-workspace, train the arms through `run`, measure them on the last stage, write the
JSON, the plot and compare/REPORT.md. Every step is resumable: a sub-workspace exists
complete or not at all, `run` resumes an arm, and every measure is cached."""

from __future__ import annotations

import math
import os
import signal
import threading
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosmic_curriculum import defaults as d
from cosmic_curriculum.compare.arm_rows import Measurer, arm_experiments, measure_arm
from cosmic_curriculum.compare.arm_runs import ArmRun, train_arms
from cosmic_curriculum.compare.arms import (
    ArmPlan,
    budget_problem,
    check_seeds,
    checkpoint_every,
    parse_arms,
    plan_arm,
    run_name,
    trained_bot_problem,
)
from cosmic_curriculum.compare.derive import HEADER, arm_table, toml_text
from cosmic_curriculum.compare.measure import Probe
from cosmic_curriculum.compare.workspaces import compare_root, prepare
from cosmic_curriculum.errors import CompareError, ConfigError, LockError
from cosmic_curriculum.workspace import layout as L
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_file import load_config

Runs = list[tuple[ArmRun, ArmPlan, int]]
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


@dataclass(frozen=True)
class CompareOptions:
    workspace: Path
    arms: str = ",".join(d.COMPARE_ARMS)
    seeds: tuple[int, ...] = d.COMPARE_SEEDS
    target: float | None = None
    points: int = d.COMPARE_POINTS
    checkpoint_episodes: int = d.COMPARE_CHECKPOINT_EPISODES
    final_episodes: int = d.COMPARE_FINAL_EPISODES
    arm_timeout: float = d.COMPARE_ARM_TIMEOUT_SECONDS
    json_out: Path | None = None
    plot: Path | None = None


@dataclass(frozen=True)
class Study:
    """What was checked before any training."""

    ws: Path
    config: CurriculumConfig
    raw: dict[str, Any]
    plans: list[ArmPlan]
    seeds: list[int]
    kind: str  # the last stage's env kind: "gymnasium", "arena" or "pettingzoo"
    probe: Probe | None  # gymnasium: the last stage's env and the gate's rules
    reference: Path | str | None  # arena, pettingzoo: what every checkpoint plays
    measure: str  # "success", "return" or "score": what the target and the verdict read
    target: float | None


def plan_study(opts: CompareOptions) -> Study:
    """Every input checked, one line each (ConfigError, exit 2), before anything runs."""
    from cosmic_curriculum.compare.checks import arena_reference, game_reference, trainer_problem

    ws = opts.workspace.resolve()
    path = ws / L.CONFIG_FILE
    config = load_config(path)
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    names = [s.name for s in config.stages]
    problem = budget_problem(names, [s.timesteps for s in config.stages])
    if problem:
        raise ConfigError(problem)
    try:
        arms = parse_arms(opts.arms)
        stage_steps = [config.stage_timesteps(i) for i in range(len(names))]
        plans = [plan_arm(a, names, stage_steps) for a in arms]
        seeds = check_seeds(list(opts.seeds), d.COMPARE_MAX_SEEDS, d.COMPARE_MAX_SEED)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    flags = [s.flags for s in config.stages]
    for plan in plans:
        if problem := trained_bot_problem(plan, names, flags):
            raise ConfigError(problem)
    last = len(names) - 1
    kind = config.stage_env(last).kind
    for i in sorted({i for plan in plans for i in plan.stages} | {last}):
        if problem := trainer_problem(config, i, kind):
            raise ConfigError(problem)
    if kind in ("arena", "pettingzoo"):
        _check_target(opts.target, "score")
        pick = arena_reference if kind == "arena" else game_reference
        ref = pick(config, ws, last)
        return Study(ws, config, raw, plans, seeds, kind, None, ref, "score", opts.target)
    gate = config.stage_gate(last)
    threshold = "threshold" in gate.rules
    measure = gate.measure if threshold else "success"
    _check_target(opts.target, measure)
    target = opts.target if opts.target is not None else (gate.target if threshold else None)
    probe = Probe(
        spec=config.stage_env(last),
        algo=config.stage_trainer(last).algo or d.ENV_ALGO,
        seed=d.COMPARE_EVAL_SEED,
        success_return=gate.success_return,
        deterministic=gate.deterministic,
    )
    return Study(ws, config, raw, plans, seeds, kind, probe, None, measure, target)


def _check_target(target: float | None, measure: str) -> None:
    """A target is a finite number; a success rate's or a score's lies in 0..1."""
    if target is None:
        return
    if not math.isfinite(target):
        raise ConfigError(f"--target {target}: give a finite number, e.g. --target 0.9")
    if measure != "return" and not 0.0 <= target <= 1.0:
        raise ConfigError(
            f"--target {target:g}: the {measure} on the last stage lies in 0..1; "
            "give e.g. --target 0.9"
        )


def run_compare(
    opts: CompareOptions,
    say: Callable[[str], None],
    refresh: Callable[[Path], str] | None = None,
) -> list[str]:
    """Train and measure what is missing, write the study (holding the workspace; then
    ``refresh``, the workspace's own report); the lines to print (the table, the
    verdict, what was written)."""
    from cosmic_curriculum.workspace.lock import WorkspaceLock

    study = plan_study(opts)
    try:
        lock = WorkspaceLock(study.ws).acquire(wait=0)
    except LockError as exc:
        raise LockError(f"{exc} (compare trains its arms while it holds the workspace)") from None
    try:
        with _signals_stop():
            return _run(study, opts, lock.fd, say, refresh)
    finally:
        lock.release()


def _run(
    study: Study,
    opts: CompareOptions,
    lock_fd: int,
    say: Callable[[str], None],
    refresh: Callable[[Path], str] | None,
) -> list[str]:
    from cosmic_curriculum.compare.output import write_outputs
    from cosmic_curriculum.compare.results import document

    root = compare_root(study.ws, d.COMPARE_DIR)
    runs = _arm_runs(study, root, opts.points)
    launcher = study.config.launcher
    parallel = launcher.max_parallel or (
        len(runs) if launcher.kind == "ray" else max(1, os.cpu_count() or 1)
    )
    say(
        f"compare: {len(study.plans)} arms x {len(study.seeds)} seeds at "
        f"{study.plans[0].total:,} timesteps each, {parallel} at a time"
    )
    train = _trainer(runs, parallel, lock_fd, opts, say)
    if study.kind == "arena":
        train(lambda r: None)
        rows, head = _measure_arena(study, runs, opts, root, say)
    elif study.kind == "pettingzoo":
        rows, head = _measure_game(study, runs, opts, root, say, train)
    else:
        from cosmic_curriculum.compare.measure import gymnasium_measurer

        assert study.probe is not None
        m = gymnasium_measurer(study.probe, opts.final_episodes, study.measure)
        rows, head = _measure_along(study, runs, opts, root, say, train, m), None
    doc = document(study, rows, opts, head)
    return write_outputs(doc, study.ws, opts.json_out, opts.plot, refresh)


@contextmanager
def _signals_stop() -> Iterator[None]:
    """SIGTERM, SIGHUP and SIGINT stop compare as one: each live arm's `run` gets SIGTERM
    (it stops its trainer and saves), the measure stops at its next checkpoint, and
    compare exits 128 + signum with one line; a second signal meanwhile is ignored (the
    stop is bounded by COMPARE_STOP_GRACE_SECONDS an arm)."""

    def stop(signum: int, _frame: Any) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        name = signal.Signals(signum).name
        raise CompareError(
            f"compare: stopped by {name}; the arms in training were stopped and saved; "
            "run compare again to resume",
            exit_code=128 + signum,
        )

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _trainer(
    runs: Runs, parallel: int, lock_fd: int, opts: CompareOptions, say: Callable[[str], None]
) -> Callable[[Callable[[ArmRun], None]], None]:
    def train(on_trained: Callable[[ArmRun], None]) -> None:
        train_arms(
            [r for r, _, _ in runs],
            parallel=parallel,
            lock_fd=lock_fd,
            timeout=opts.arm_timeout,
            progress_every=d.COMPARE_PROGRESS_SECONDS,
            say=say,
            on_trained=on_trained,
        )

    return train


def _arm_runs(study: Study, root: Path, points: int) -> Runs:
    runs = []
    # Seed by seed, every arm of a seed before the next seed: a compare stopped early has
    # the same seeds of every arm trained.
    for seed in study.seeds:
        for plan in study.plans:
            every = checkpoint_every(plan.total, points)
            name = run_name(plan.name, seed)
            table = arm_table(study.raw, plan, seed, every, keep=points + 2)
            text = HEADER.format(arm=plan.name, seed=seed) + toml_text(table)
            sub = prepare(study.ws, root, name, text)
            runs.append((ArmRun(name, sub, root / f"{name}.log"), plan, seed))
    return runs


def _by_arm(study: Study, runs: Runs) -> Runs:
    return sorted(runs, key=lambda r: (study.plans.index(r[1]), study.seeds.index(r[2])))


def _measure_along(
    study: Study,
    runs: Runs,
    opts: CompareOptions,
    root: Path,
    say: Callable[[str], None],
    train: Callable[[Callable[[ArmRun], None]], None],
    m: Measurer,
) -> list[dict[str, Any]]:
    """Each arm measured by ``m`` as soon as it is trained, in one thread beside the
    trainings (the measure steps envs or games; the trainings are processes)."""
    stop = threading.Event()
    measured: dict[str, Future[dict[str, Any]]] = {}
    plan_of = {r.name: (plan, seed) for r, plan, seed in runs}
    with ThreadPoolExecutor(max_workers=1) as pool:

        def on_trained(r: ArmRun) -> None:
            plan, seed = plan_of[r.name]
            measured[r.name] = pool.submit(_row, study, r, plan, seed, m, opts, root, say, stop)

        try:
            train(on_trained)
            return [measured[r.name].result() for r, _, _ in _by_arm(study, runs)]
        except BaseException:
            stop.set()  # the measure ends at its next checkpoint (the cache keeps the rest)
            for future in measured.values():
                future.cancel()
            raise


def _measure_game(
    study: Study,
    runs: Runs,
    opts: CompareOptions,
    root: Path,
    say: Callable[[str], None],
    train: Callable[[Callable[[ArmRun], None]], None],
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Each arm's checkpoints against the last stage's reference as soon as it is trained
    (the game is the last stage's, known before any training), then the final bots
    against each other."""
    from cosmic_curriculum.compare import game_measure as gm
    from cosmic_curriculum.compare.heads import final_heads

    assert study.reference is not None
    probe = gm.game_probe(study.config, study.reference, d.COMPARE_EVAL_SEED, root / "measures")

    def play(path: Path, episodes: int) -> dict[str, Any]:
        return gm.play_checkpoint(path, probe, episodes)

    def finals(a: Path, b: Path, episodes: int) -> dict[str, Any]:
        return gm.play_finals(a, b, probe, episodes)

    m = Measurer(play=play, tag=probe.tag(), measure="score")
    rows = _measure_along(study, runs, opts, root, say, train, m)
    ordered = _by_arm(study, runs)
    tag, episodes = probe.tag(), opts.final_episodes
    return rows, final_heads(study, ordered, finals, tag, probe.seed, episodes, root)


def _measure_arena(
    study: Study, runs: Runs, opts: CompareOptions, root: Path, say: Callable[[str], None]
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Every arm once all are trained (the last stage's game is read from the first arm
    that trained it), then the final bots against each other."""
    from cosmic_curriculum.compare import arena_measure as am
    from cosmic_curriculum.compare.heads import final_heads

    last = len(study.config.stages) - 1
    finals = [
        L.Layout(r.ws).final_checkpoint(exp)
        for r, plan, _ in runs
        for index, exp in arm_experiments(r)
        if plan.stages[index] == last
    ]
    game = am.last_stage_game(finals)
    if game is None:
        from cosmic_curriculum.errors import CompareError

        raise CompareError(
            "compare: no arm trained the last stage, so its game is unknown; add last-stage "
            "to --arms"
        )
    assert isinstance(study.reference, Path)  # arena_reference: a bot file
    probe = am.ArenaProbe(game, study.reference, d.COMPARE_EVAL_SEED)

    def play(path: Path, episodes: int) -> dict[str, Any]:
        return am.play_checkpoint(path, probe, episodes)

    m = Measurer(play=play, tag=probe.tag(), measure="score")
    never = threading.Event()
    ordered = _by_arm(study, runs)
    rows = [_row(study, r, plan, seed, m, opts, root, say, never) for r, plan, seed in ordered]

    def duel(a: Path, b: Path, episodes: int) -> dict[str, Any]:
        return am.play_finals(a, b, probe, episodes)

    tag, episodes = probe.tag(), opts.final_episodes
    return rows, final_heads(study, ordered, duel, tag, probe.seed, episodes, root)


def _row(
    study: Study,
    run: ArmRun,
    plan: ArmPlan,
    seed: int,
    m: Measurer,
    opts: CompareOptions,
    root: Path,
    say: Callable[[str], None],
    stop: threading.Event,
) -> dict[str, Any]:
    return measure_arm(
        run,
        plan,
        seed,
        m,
        episodes=(opts.checkpoint_episodes, opts.final_episodes),
        eval_seed=d.COMPARE_EVAL_SEED,
        target=study.target,
        root=root,
        say=say,
        stop=stop,
    )
