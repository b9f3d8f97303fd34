"""Which bot an attempt plays against and which checkpoint it starts from.

- Reference: a stage's configured ``reference_bot``, else the previous stage's passing bot.
- Resume: a retry continues the previous attempt's ``final.zip``; stage 1's first attempt
  starts from ``--seed-checkpoint`` if given; a later stage continues the previous stage's
  passing experiment. A relaunched attempt continues its own latest ``step_<n>.zip``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from cosmic_curriculum.core import transitions as t
from cosmic_curriculum.core.rules import reference_change, resume_choice
from cosmic_curriculum.curriculum.context import Run
from cosmic_curriculum.errors import BotError, ConfigError, DamagedFileError
from cosmic_curriculum.launchers import Handle
from cosmic_curriculum.system import fsio
from cosmic_curriculum.workspace.config import BuiltinReference, ExecReference
from cosmic_curriculum.workspace.state import Attempt

if TYPE_CHECKING:
    from cosmic_curriculum.bots.external import ExecSpec


BUILTIN_PREFIX = "builtin:"


@dataclass(frozen=True)
class BuiltinBot:
    """``reference_bot = {builtin = "random"}``, recorded as ``builtin:random``; ``{builtin
    = "search", depth = N}`` as ``builtin:search:N``."""

    name: str

    def __str__(self) -> str:
        return f"{BUILTIN_PREFIX}{self.name}"


# A string: ExecSpec is imported for type checking only (bots load when a program plays).
Reference: TypeAlias = "Path | ExecSpec | BuiltinBot"


def uses_default_evaluator(run: Run) -> bool:
    return run.config.evaluation_command is None


def uses_env_evaluator(run: Run, stage_index: int) -> bool:
    """The built-in evaluator of Gymnasium stages plays this stage (env bots)."""
    gymnasium = run.config.stage_env(stage_index).kind == "gymnasium"
    return uses_default_evaluator(run) and gymnasium


def uses_game_evaluator(run: Run, stage_index: int) -> bool:
    """The built-in seat-swapped evaluator of PettingZoo games plays this stage."""
    game = run.config.stage_env(stage_index).kind == "pettingzoo"
    return uses_default_evaluator(run) and game


def validate_bot(
    run: Run,
    path: Path,
    what: str,
    fix: str = "check reference_bot in stages.toml",
    stage_index: int | None = None,
) -> None:
    """A bot must exist and parse; with a built-in evaluator it must also load."""
    if not path.is_file():
        raise ConfigError(f"{path}: {what} not found; {fix}")
    index = run.state.stage_index if stage_index is None else stage_index
    if uses_env_evaluator(run, index) or uses_game_evaluator(run, index):
        from cosmic_curriculum.envs.policy import load_env_bot

        load_env_bot(path)
        return
    if uses_default_evaluator(run):
        from cosmic_curriculum.bots import load_bot

        load_bot(path)
        return
    # A user's own evaluator may use another bot format: only require JSON.
    try:
        fsio.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BotError(f"{path}: {what} is not valid JSON ({exc})") from None


def passing_experiment(run: Run, stage_index: int) -> str:
    entry = run.state.passing_entry(stage_index)
    if entry is None:
        raise DamagedFileError(
            run.paths.state,
            f"stage {stage_index + 1} has no passing attempt in the log, but the curriculum "
            f"is at stage {run.state.stage_index + 1}",
        )
    return entry.experiment


def reference_for(run: Run, stage_index: int) -> Reference:
    """The reference's file, the program of ``reference_bot = {exec = [...]}`` (run in
    the workspace), or a builtin bot."""
    configured = run.config.stage_reference(stage_index)
    if isinstance(configured, BuiltinReference):
        depth = configured.depth
        return BuiltinBot(configured.builtin if depth is None else f"search:{depth}")
    if isinstance(configured, ExecReference):
        from cosmic_curriculum.bots.external import ExecSpec

        return ExecSpec(tuple(configured.exec), configured.timeout, cwd=run.ws)
    if configured is not None:
        path = Path(configured)
        return path if path.is_absolute() else run.ws / path
    return run.paths.bot(passing_experiment(run, stage_index - 1))


def reference_label(run: Run, reference: Reference) -> str:
    """How an attempt records its reference: a workspace-relative path or ``exec:...``."""
    return run.rel(reference) if isinstance(reference, Path) else str(reference)


def recorded_reference(run: Run, flight: Attempt) -> Reference:
    """The reference an attempt recorded; a program with the timeout configured now."""
    from cosmic_curriculum.bots.external import EXEC_PREFIX, parse_exec

    label = flight.reference or ""
    if label.startswith(BUILTIN_PREFIX):
        return BuiltinBot(label.removeprefix(BUILTIN_PREFIX))
    if not label.startswith(EXEC_PREFIX):
        return run.ws / label
    configured = reference_for(run, flight.stage_index)
    if str(configured) == label:
        return configured
    return parse_exec(label, cwd=run.ws)


def follow_reference_change(run: Run) -> None:
    """The attempt in flight after stages.toml changed its stage's reference: it plays the
    one configured now when nothing of it was evaluated (or, with --accept-config-change,
    its candidates are evaluated again), else it keeps the one it was evaluated against;
    said either way, and recorded in the state (``reference``, ``reference_was``)."""
    flight = run.state.in_flight
    if run.state.status != "in_progress" or flight is None or flight.reference is None:
        return
    if flight.phase not in ("training", "trained"):
        return  # its record decides; the new reference is for the next attempt
    now, was = reference_label(run, reference_for(run, flight.stage_index)), flight.reference
    if now == was:
        return
    what = f"{flight.experiment}: reference_bot of stage {flight.stage_index + 1} changed"
    change = reference_change(flight, run.opts.accept_config_change)
    if change == "keep":
        run.reporter.warning(
            f"{what} ({was} -> {now}), but this attempt was evaluated against "
            "the old one (or its evaluation is under way): it keeps it; re-run with "
            "--accept-config-change to evaluate its candidates again, or the new one "
            "applies from the next attempt"
        )
        return
    run.record(t.ReferenceChanged(now, replay=change == "replay"))
    again = "; its candidates are evaluated again" if change == "replay" else ""
    run.reporter.warning(
        f"{what} since the attempt started ({was} -> {now}): its evaluation "
        f"plays the one configured now{again}"
    )


def check_exec_reference(run: Run, spec: ExecSpec, stage_index: int) -> None:
    """Start a program reference once and check its handshake (before any training)."""
    from cosmic_curriculum.bots.external import ExternalBot

    try:
        ExternalBot(spec).close()
    except BotError as exc:
        raise ConfigError(
            f"{run.config_path}: reference_bot of stage {stage_index + 1} failed its "
            f"handshake: {exc}; fix the program or reference_bot"
        ) from None


def seed_source(run: Run) -> Path:
    """``--seed-checkpoint`` as given: relative to the current directory, else the workspace."""
    seed = Path(run.opts.seed_checkpoint or "")
    if seed.is_absolute() or (Path.cwd() / seed).is_file():
        return (Path.cwd() / seed).resolve()
    return (run.ws / seed).resolve()


def import_seed(run: Run) -> Path:
    """The seed checkpoint inside the workspace's own checkpoints/ (trainers load only
    checkpoints from there): used in place when it is already inside, else copied to
    ``checkpoints/seed/``."""
    source = seed_source(run)
    own = run.paths.checkpoints.resolve()
    if source.is_relative_to(own):
        return source
    target = run.paths.seeds / source.name
    if not target.is_file() or target.read_bytes() != source.read_bytes():
        fsio.atomic_write_bytes(target, source.read_bytes())
    return target


def initial_resume(run: Run, stage_index: int, attempt: int) -> str | None:
    """The checkpoint a new attempt starts from (the rule: ``core.rules.resume_choice``)."""
    source, experiment = resume_choice(
        run.state,
        run.config,
        stage_index,
        attempt,
        has_final=lambda exp: run.paths.final_checkpoint(exp).is_file(),
        seed_given=run.opts.seed_checkpoint is not None,
    )
    if source == "seed":
        return run.rel(import_seed(run))
    if source == "previous_pass" and experiment is None:
        passing_experiment(run, stage_index - 1)  # raises: the log lost the stage's pass
    return None if experiment is None else run.rel(run.paths.final_checkpoint(experiment))


def set_aside_stale(run: Run, experiment: str) -> None:
    """Move checkpoints an earlier curriculum left under a name this attempt is about to
    use to ``checkpoints/<exp>.stale-<n>/``: never resumed (or taken for finished) by a
    fresh attempt, never deleted."""
    directory = run.paths.checkpoint_dir(experiment)
    if not directory.is_dir() or not any(directory.iterdir()):
        return
    n = 1
    while (target := directory.with_name(f"{experiment}.stale-{n}")).exists():
        n += 1
    directory.rename(target)
    run.reporter.warning(
        f"{run.rel(directory)} held checkpoints of an earlier curriculum; moved them to "
        f"{run.rel(target)} so that {experiment} starts fresh"
    )


def stopped_by_interrupt(run: Run, job: Handle) -> bool:
    """A cluster job that an interrupted run stopped on its way out: its work starts again
    (training from its last checkpoint), as after a local Ctrl-C, not an attempt error."""
    return run.flight.interrupted and run.launcher.result(job) not in (None, 0)
