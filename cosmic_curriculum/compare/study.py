"""`compare`, top to bottom: check the input, hold the workspace, make each arm × seed's
sub-workspace, train the arms through `run`, measure them on the last stage, write the
JSON, the plot and compare/REPORT.md. Every step is resumable: a sub-workspace exists
complete or not at all, `run` resumes an arm, and every measure is cached."""

from __future__ import annotations

import os
import threading
import tomllib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from cosmic_curriculum import defaults as d
from cosmic_curriculum.compare.arm_runs import ArmRun, arm_status, train_arms
from cosmic_curriculum.compare.arms import (
    ArmPlan,
    budget_problem,
    check_seeds,
    checkpoint_every,
    parse_arms,
    plan_arm,
    run_name,
    spent_offsets,
)
from cosmic_curriculum.compare.derive import HEADER, arm_table, toml_text
from cosmic_curriculum.compare.measure import (
    Cache,
    Probe,
    checkpoint_key,
    play_checkpoint,
    play_random,
)
from cosmic_curriculum.compare.workspaces import compare_root, prepare
from cosmic_curriculum.errors import CompareError, ConfigError, LockError
from cosmic_curriculum.workspace import layout as L
from cosmic_curriculum.workspace.config import CurriculumConfig
from cosmic_curriculum.workspace.config_file import load_config


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


@dataclass(frozen=True)
class Study:
    """What was checked before any training."""

    ws: Path
    config: CurriculumConfig
    raw: dict[str, Any]
    plans: list[ArmPlan]
    seeds: list[int]
    probe: Probe
    measure: str  # "success" or "return": what the target and the verdict read
    target: float | None


def plan_study(opts: CompareOptions) -> Study:
    """Every input checked, one line each (ConfigError, exit 2), before anything runs."""
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
    last = len(names) - 1
    for plan in plans:
        for i in plan.stages:
            if not config.builtin_env_trainer(i):
                raise ConfigError(
                    f"stages.toml: stage {names[i]!r} is not a Gymnasium stage trained by the "
                    "built-in train-env; compare measures only those so far (its checkpoints "
                    "are read as SB3 models); compare an arena curriculum with "
                    "bench/bench_curriculum.py"
                )
    gate = config.stage_gate(last)
    rules = gate.rule if isinstance(gate.rule, tuple) else (gate.rule,)
    measure = gate.measure if "threshold" in rules else "success"
    target = (
        opts.target if opts.target is not None else (gate.target if "threshold" in rules else None)
    )
    probe = Probe(
        spec=config.stage_env(last),
        algo=config.stage_trainer(last).algo or d.ENV_ALGO,
        seed=d.COMPARE_EVAL_SEED,
        success_return=gate.success_return,
        deterministic=gate.deterministic,
    )
    return Study(ws, config, raw, plans, seeds, probe, measure, target)


def run_compare(opts: CompareOptions, say: Callable[[str], None]) -> dict[str, Any]:
    """The study's document (what --json writes); trains and measures what is missing."""
    from cosmic_curriculum.compare.results import document
    from cosmic_curriculum.workspace.lock import WorkspaceLock

    study = plan_study(opts)
    try:
        lock = WorkspaceLock(study.ws).acquire(wait=0)
    except LockError as exc:
        raise LockError(f"{exc} (compare trains its arms while it holds the workspace)") from None
    try:
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
        # Each arm is measured as soon as it is trained, in one thread beside the
        # trainings (the measure is numpy and env steps; the trainings are processes).
        stop = threading.Event()
        with ThreadPoolExecutor(max_workers=1) as pool:
            measured: dict[str, Future[dict[str, Any]]] = {}
            plan_of = {r.name: (plan, seed) for r, plan, seed in runs}

            def on_trained(r: ArmRun) -> None:
                plan, seed = plan_of[r.name]
                measured[r.name] = pool.submit(
                    _measure, study, r, plan, seed, opts, root, say, stop
                )

            try:
                train_arms(
                    [r for r, _, _ in runs],
                    parallel=parallel,
                    lock_fd=lock.fd,
                    timeout=opts.arm_timeout,
                    progress_every=d.COMPARE_PROGRESS_SECONDS,
                    say=say,
                    on_trained=on_trained,
                )
            except BaseException:
                stop.set()  # the measure ends at its next checkpoint (the cache keeps the rest)
                for future in measured.values():
                    future.cancel()
                raise
            by_arm = sorted(runs, key=lambda r: (study.plans.index(r[1]), study.seeds.index(r[2])))
            rows = [measured[r.name].result() for r, _, _ in by_arm]
        return document(study, rows, opts)
    finally:
        lock.release()


def _arm_runs(study: Study, root: Path, points: int) -> list[tuple[ArmRun, ArmPlan, int]]:
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


def _value(result: dict[str, Any], measure: str) -> float:
    return float(result["success_rate"] if measure == "success" else result["mean_return"])


def _measure(
    study: Study,
    run: ArmRun,
    plan: ArmPlan,
    seed: int,
    opts: CompareOptions,
    root: Path,
    say: Callable[[str], None],
    stop: threading.Event,
) -> dict[str, Any]:
    """The arm's row: its checkpoints along the way and its final bot on the last stage."""
    state = arm_status(run.ws) or {}
    entries = [e for e in state.get("log", []) if isinstance(e, dict)]
    if not entries:
        raise CompareError(f"{run.ws}: the arm's run decided nothing; run compare again")
    steps = [plan.timesteps[int(e["stage_index"])] for e in entries]
    cache = Cache(root / "measures" / f"{run.name}.json")
    layout = L.Layout(run.ws)
    points: list[list[float]] = []
    for entry, offset, total in zip(entries, spent_offsets(steps), steps, strict=True):
        exp = str(entry["experiment"])
        ckpts = [(n, p) for n, p in L.step_checkpoints(layout.checkpoint_dir(exp)) if n < total]
        ckpts.append((total, layout.final_checkpoint(exp)))
        for n, path in ckpts:
            if stop.is_set():
                raise CompareError("compare: stopped while measuring; run compare again")
            key = checkpoint_key(path, opts.checkpoint_episodes, study.probe.seed)
            got = cache.get(
                key, partial(play_checkpoint, path, study.probe, opts.checkpoint_episodes)
            )
            points.append([offset + n, _value(got, study.measure)])
    final_ckpt = layout.final_checkpoint(str(entries[-1]["experiment"]))
    key = checkpoint_key(final_ckpt, opts.final_episodes, study.probe.seed)
    final = dict(
        cache.get(key, lambda: play_checkpoint(final_ckpt, study.probe, opts.final_episodes))
    )
    ref = cache.get(
        f"random:{opts.final_episodes}:{study.probe.seed}",
        lambda: play_random(study.probe, opts.final_episodes, final_ckpt),
    )
    final["reference_returns"] = ref["returns"]
    first = None
    if study.target is not None:
        from cosmic_curriculum.compare.verdict import first_crossing

        first = first_crossing([(int(t), v) for t, v in points], study.target)
    say(f"{run.name}: measured {len(points)} checkpoints; final {_value(final, study.measure):.3f}")
    return {
        "arm": plan.name,
        "seed": seed,
        "timesteps": sum(steps),
        "status": state.get("status"),
        "stages": [str(e["experiment"]) for e in entries],
        "final": final,
        "first_target_at": first,
        "points": points,
    }
