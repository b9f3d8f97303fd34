"""The curriculum state machine behind `cosmic-curriculum run`.

Each attempt moves through the phases ``training → trained → evaluated → decided →
committed``; the phase is saved (atomically) before and after every step, so a run killed
at any instant resumes exactly where it stopped:

- ``training``: the trainer may have been running. A live recorded group is stopped
  first; artefacts written after the attempt started (an orphaned trainer that finished)
  are accepted; otherwise training restarts from the experiment's latest periodic
  checkpoint (or the attempt's original resume choice).
- ``trained``: artefacts are valid; evaluation is next. An evaluation record this
  attempt already wrote is adopted instead of evaluating again.
- ``evaluated``: ``eval_id`` is in the state; the decision is a pure function of it.
- ``decided``: the log entry is appended and the curriculum advanced in the same atomic
  save; the git commit is next.
- ``committed``: nothing left to do for this attempt.

The orchestrator never prints: it reports through a :class:`Reporter`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any

from cosmic_curriculum import fsio, history, runner, vcs
from cosmic_curriculum.config import CurriculumConfig, load_config
from cosmic_curriculum.errors import (
    BlockedError,
    ConfigError,
    CurriculumError,
    EvaluationError,
    GitError,
    LockError,
    StateError,
    TrainerError,
)
from cosmic_curriculum.gate import GateSettings
from cosmic_curriculum.report import Reporter
from cosmic_curriculum.state import (
    LOCK_FILE,
    STATE_FILE,
    Attempt,
    CurriculumState,
    LogEntry,
    WorkspaceLock,
    check_stage_range,
    load_state,
    save_state,
    utc_now,
)

HISTORY_FILE = history.HISTORY_FILE
COMMIT_PREFIX = "chore(training): curriculum progress after"
# Test-only fault injection: "phase:seconds,..." sleeps right after that phase is saved,
# so crash tests can SIGKILL the run at a known phase (more points: fsio.fault_point).
PAUSE_ENV = fsio.PAUSE_ENV
CURVES_FILE = "curriculum_curves.png"
REASON_HINT = '--reason "..."'
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class InterruptedRun(CurriculumError):
    """The run was stopped by a signal; the state is saved and `run` resumes it."""

    exit_code = 130


class _Interrupt(BaseException):
    """Raised by our signal handler; a BaseException so no `except Exception` eats it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# --------------------------------------------------------------------------- reporting


# --------------------------------------------------------------------------- options


@dataclass
class RunOptions:
    """Everything `cosmic-curriculum run` accepts (None = take stages.toml's value)."""

    workspace: Path = field(default_factory=Path.cwd)
    config_path: Path | None = None
    timesteps: int | None = None
    n_parallel: int | None = None
    speedup: int | None = None
    seed_checkpoint: Path | None = None
    force_retry: bool = False
    skip_to_next_stage: bool = False
    reason: str | None = None
    push: bool = True
    accept_config_change: bool = False
    attempt_timeout: float | None = None
    grace_seconds: float = runner.DEFAULT_GRACE_SECONDS
    push_timeout: float = 30.0
    launcher: runner.Launcher | None = None
    # How the user invoked us, for the "what to run next" hints.
    command_prefix: str = "cosmic-curriculum run"


def experiment_name(stage_index: int, stage_name: str, attempt: int) -> str:
    """`curric-s{i}-{stage}` with i counted from 1, plus `-retry{n}` for attempt n >= 1."""
    base = f"curric-s{stage_index + 1}-{stage_name}"
    return base if attempt == 0 else f"{base}-retry{attempt}"


def gate_verdict(settings: GateSettings, record: dict[str, Any]) -> tuple[str, str]:
    """(verdict, summary) for a finished evaluation record with fixed episodes.

    Both evaluation paths share this: the default evaluator's record carries its own gate
    verdict (it may have stopped early under SPRT); an external command's record is judged
    here on its counts.
    """
    own = record.get("gate")
    if isinstance(own, dict) and own.get("verdict") in ("pass", "fail"):
        return str(own["verdict"]), str(own.get("summary") or _counts_summary(record))
    wa, wb, d, n = (int(record[k]) for k in ("wins_a", "wins_b", "draws", "episodes"))
    from cosmic_curriculum.gate import decide

    # The record's episodes are all there will be: with planned_episodes = n the margin
    # rule decides on them and the SPRT treats n as its cap, so the verdict is final.
    decision = decide(settings, wa, wb, d, planned_episodes=n)
    return str(decision.verdict), str(decision.summary)


def _counts_summary(record: dict[str, Any]) -> str:
    n = max(1, int(record["episodes"]))
    return (
        f"candidate {record['wins_a']}/{record['episodes']} ({record['wins_a'] / n:.0%}) vs "
        f"reference {record['wins_b']}/{record['episodes']} ({record['wins_b'] / n:.0%}), "
        f"{record['draws']} draws"
    )


# --------------------------------------------------------------------------- helpers


def _pause_at(phase: str) -> None:
    fsio.fault_point(phase)


def _parse_time(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return float("inf")


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP into :class:`_Interrupt` for the duration."""

    def handler(signum: int, frame: FrameType | None) -> None:
        # Further signals while we clean up are ignored: cleanup is bounded (grace + KILL).
        for sig in HANDLED_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise _Interrupt(signum)

    previous = {sig: signal.signal(sig, handler) for sig in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def latest_step_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The periodic checkpoint ``step_<n>.zip`` with the largest n, if any."""
    best: tuple[int, Path] | None = None
    if not checkpoint_dir.is_dir():
        return None
    for path in checkpoint_dir.glob("step_*.zip"):
        try:
            step = int(path.stem.removeprefix("step_"))
        except ValueError:
            continue
        if best is None or step > best[0]:
            best = (step, path)
    return best[1] if best else None


# --------------------------------------------------------------------------- orchestrator


class Orchestrator:
    """One `run` of the curriculum in one workspace (holding its lock)."""

    def __init__(self, options: RunOptions, reporter: Reporter | None = None) -> None:
        self.opts = options
        self.reporter = reporter or Reporter()
        self.ws = Path(options.workspace).resolve()
        self.config_path = (
            Path(options.config_path) if options.config_path else self.ws / "stages.toml"
        )
        if not self.config_path.is_absolute():
            self.config_path = (Path.cwd() / self.config_path).resolve()
        self.state_path = self.ws / STATE_FILE
        self.history_path = self.ws / HISTORY_FILE
        self.launcher: runner.Launcher = options.launcher or runner.LocalLauncher()
        self.use_git = False
        self.lock: WorkspaceLock | None = None
        self.config: CurriculumConfig
        self.state: CurriculumState

    # -- paths ----------------------------------------------------------------------------

    def log_path(self, experiment: str) -> Path:
        return self.ws / "logs" / f"{experiment}.log"

    def bot_path(self, experiment: str) -> Path:
        return self.ws / "bots" / f"{experiment}.json"

    def checkpoint_dir(self, experiment: str) -> Path:
        return self.ws / "checkpoints" / experiment

    def rel(self, path: Path) -> str:
        try:
            return str(path.resolve().relative_to(self.ws))
        except ValueError:
            return str(path)

    def command(self, *flags: str) -> str:
        parts = [self.opts.command_prefix, *flags]
        if self.ws != Path.cwd().resolve():
            parts += ["--workspace", shlex.quote(str(self.ws))]
        return " ".join(parts)

    # -- entry point ----------------------------------------------------------------------

    def run(self) -> CurriculumState:
        if not self.ws.is_dir():
            raise ConfigError(
                f"--workspace {self.ws}: no such directory; create one with "
                f"`cosmic-curriculum init {self.ws}`"
            )
        self.config = load_config(self.config_path)
        try:
            lock = WorkspaceLock(self.ws).acquire()
        except LockError as exc:
            raise LockError(self._explain_lock(str(exc))) from None
        except OSError as exc:  # read-only file system, no permission, disk full
            raise LockError(
                f"{self.ws / LOCK_FILE}: cannot create the workspace lock "
                f"({exc.strerror or exc}); the workspace must be writable: fix its "
                "permissions or free space, then re-run"
            ) from None
        try:
            with _signals_raise():
                self.lock = lock
                try:
                    self._start()
                    return self._loop()
                except _Interrupt as interrupt:
                    raise self._interrupted(interrupt.signum) from None
                except OSError as exc:
                    # Disk full, permissions, a vanished directory: every write is atomic
                    # and every step resumable, so say which file and how to go on.
                    raise StateError(
                        f"{exc.filename or self.ws}: {exc.strerror or exc}; the files "
                        f"written so far are intact; free space or fix permissions and "
                        f"re-run `{self.command()}` to continue where it stopped"
                    ) from None
        finally:
            lock.release()

    def _explain_lock(self, message: str) -> str:
        """Name an orphaned trainer when it, not a live run, holds the lock."""
        try:
            holder = json.loads((self.ws / LOCK_FILE).read_text() or "{}").get("pid")
            flight = load_state(self.state_path).in_flight
        except (OSError, ValueError, CurriculumError):
            return message
        if not isinstance(holder, int) or runner.process_start_time(holder) is not None:
            return message
        if flight is not None and flight.phase == "trained":
            # The run died while its evaluation command ran; that command holds the lock.
            return (
                f"{self.ws}: the evaluation of {flight.experiment} outlived its run (pid "
                f"{holder}) and still holds this workspace; wait for it to finish (its record "
                f"will be used by the next `{self.command()}`), then re-run"
            )
        if flight is None or flight.pgid is None or flight.pid is None:
            return message
        if not runner.recorded_group_is_ours(flight.pgid, flight.pid, flight.pid_start_time):
            return message
        return (
            f"{self.ws}: the trainer of {flight.experiment} (process group {flight.pgid}) "
            f"outlived its run (pid {holder}) and still holds this workspace; wait for it to "
            f"finish (its result will be used by the next `{self.command()}`) or stop it "
            f"with `kill -TERM -{flight.pgid}` and re-run to resume from its last checkpoint"
        )

    def _start(self) -> None:
        """Everything that must hold before any training time is spent."""
        for directory in (self.ws, self.ws / "bots", self.ws / "logs"):
            for removed in fsio.clean_stale_temps(directory):
                self.reporter.info(f"removed stale temp file {self.rel(removed)}")
        self.state = load_state(self.state_path)
        loaded = self.state.to_json()
        flight = self.state.in_flight
        if flight is not None and flight.pgid is not None:
            if runner.stop_recorded_group(
                flight.pgid, flight.pid, flight.pid_start_time, self.opts.grace_seconds
            ):
                self.reporter.warning(
                    f"stopped the trainer of {flight.experiment} (process group "
                    f"{flight.pgid}) left running by an earlier run"
                )
            flight.pgid = flight.pid = flight.pid_start_time = None
        self._preflight_git()
        check_stage_range(self.state, len(self.config.stages), self.state_path)
        history.load(self.history_path)  # refuse a corrupt history before training
        self._check_config_change()
        flight = self.state.in_flight
        if flight is not None and flight.phase == "decided":
            # A run killed between deciding and committing: finish that first (review of a
            # block, curves, commit). The overrides and the blocked check below would
            # otherwise skip it, leaving the review unwritten and the decision uncommitted.
            self._persist(flight)
        self._apply_overrides()
        self._preflight_commands()
        if self.use_git:
            self._commit("catch-up")  # a crash between save and commit left changes behind
        if self.state.to_json() != loaded:
            self._save()
        flight = self.state.in_flight
        if flight is not None and flight.phase != "committed":
            how = " (it was interrupted)" if flight.interrupted else ""
            how = f" (after its error: {flight.error})" if flight.error else how
            self.reporter.info(f"resuming {flight.experiment} at phase '{flight.phase}'{how}")

    def _preflight_git(self) -> None:
        warning = vcs.preflight(self.ws)
        if warning is not None:
            self.reporter.warning(warning)
            self.use_git = False
            return
        self.use_git = True
        for lock in vcs.remove_stale_index_locks(self.ws):
            self.reporter.warning(f"removed stale git lock {lock} left by a killed git")

    def _check_config_change(self) -> None:
        new_hashes = self.config.stage_hashes()
        new_defs = self.config.stage_definitions()
        old_hashes = self.state.stage_hashes
        old_defs: list[dict[str, Any]] = list(getattr(self.state, "stage_definitions", None) or [])
        if old_hashes is not None and old_hashes != new_hashes:
            finished = self.state.stage_index + (1 if self.state.status == "done" else 0)
            changes: list[str] = []
            finished_changed: list[str] = []
            for i in range(max(len(old_hashes), len(new_hashes))):
                old = old_hashes[i] if i < len(old_hashes) else None
                new = new_hashes[i] if i < len(new_hashes) else None
                if old == new:
                    continue
                name = new_defs[i]["name"] if i < len(new_defs) else f"#{i + 1}"
                if i >= len(old_hashes):
                    detail = "added"
                else:
                    detail = _describe_change(
                        old_defs[i] if i < len(old_defs) else None,
                        new_defs[i] if i < len(new_defs) else None,
                    )
                changes.append(f"stage {i + 1} {name}: {detail}")
                if i < finished:
                    finished_changed.append(f"stage {i + 1} {name} ({detail})")
            if finished_changed and not self.opts.accept_config_change:
                raise ConfigError(
                    f"{self.config_path}: the definition of finished "
                    f"{'; '.join(finished_changed)} changed since it ran; revert the change, "
                    "or re-run with --accept-config-change to keep its result"
                )
            self.reporter.warning(
                f"{self.rel(self.config_path)} changed since the last run: " + "; ".join(changes)
            )
        self.state.stage_hashes = new_hashes
        self.state.config_hash = self.config.config_hash()
        self.state.stage_definitions = new_defs  # type: ignore[attr-defined]  # extra key

    def _apply_overrides(self) -> None:
        opts, state = self.opts, self.state
        if opts.force_retry and opts.skip_to_next_stage:
            raise ConfigError(
                "--force-retry and --skip-to-next-stage exclude each other; choose one"
            )
        flag = (
            "--force-retry"
            if opts.force_retry
            else "--skip-to-next-stage"
            if opts.skip_to_next_stage
            else None
        )
        if flag is None:
            if opts.reason is not None:
                raise ConfigError(
                    "--reason is recorded with an override; use it with --force-retry or "
                    "--skip-to-next-stage on a blocked curriculum"
                )
            if state.status == "blocked":
                raise BlockedError(self._blocked_message())
            return
        if state.status != "blocked":
            raise ConfigError(
                f"{flag} applies only to a blocked curriculum, but {self.rel(self.state_path)} "
                f"says status '{state.status}' (stage {state.stage_index + 1}); "
                f"run `{self.command()}` without it"
            )
        i = state.stage_index
        stage = self.config.stages[i]
        if opts.force_retry:
            state.status = "in_progress"
            state.blocked_reason = None
            state.forced_retry = {  # type: ignore[attr-defined]  # extra key, kept
                "stage_index": i,
                "attempt": state.attempt,
                "reason": opts.reason,
            }
            self.reporter.info(
                f"forced retry of stage {i + 1} {stage.name} as "
                f"{experiment_name(i, stage.name, state.attempt)}"
            )
            return
        last = max(0, state.attempt - 1)
        exp = experiment_name(i, stage.name, last)
        entry = LogEntry(
            stage_index=i,
            experiment=exp,
            attempt=last,
            eval=None,
            decision="pass",
            override="skip_to_next_stage",
            reason=opts.reason,
            decided_at=utc_now(),
        )
        state.log.append(entry)
        state.blocked_reason = None
        self._advance_stage()
        self._save()
        self.reporter.attempt_decided(entry)
        self._commit(exp, extra=[self.bot_path(exp), self.log_path(exp)])

    def _advance_stage(self) -> None:
        state = self.state
        state.stage_index += 1
        state.attempt = 0
        if state.stage_index >= len(self.config.stages):
            state.status = "done"
        else:
            state.status = "in_progress"

    def _preflight_commands(self) -> None:
        if self.state.status != "in_progress":
            return
        cmd = self.config.training_command
        self._check_executable(cmd[0], "training_command")
        if self.config.evaluation_command:
            self._check_executable(self.config.evaluation_command[0], "evaluation_command")
        reference = self.reference_for(self.state.stage_index)
        self.validate_bot(reference, "reference bot")
        if self.uses_default_evaluator():
            from cosmic_curriculum.evaluate import plan

            # The built-in evaluator plays seat-swapped pairs: refuse an odd episode count
            # now, not after a stage of training.
            for i in range(self.state.stage_index, len(self.config.stages)):
                try:
                    plan(self.config.stage_gate(i))
                except CurriculumError as exc:
                    raise ConfigError(
                        f"{self.config_path}: stage {i + 1} {self.config.stages[i].name}: {exc}"
                    ) from None
        if self.opts.seed_checkpoint is not None:
            seed = self._seed_source()
            if not seed.is_file() or seed.suffix != ".zip":
                raise ConfigError(
                    f"--seed-checkpoint {seed}: no such file; pass the path of a checkpoint .zip"
                )
            if not (self.state.stage_index == 0 and self.state.attempt == 0):
                self.reporter.warning(
                    "--seed-checkpoint only affects stage 1's first attempt; ignored"
                )

    def _check_executable(self, program: str, key: str) -> None:
        if "/" in program:
            path = Path(program) if Path(program).is_absolute() else self.ws / program
            if not path.is_file():
                raise ConfigError(
                    f"{self.config_path}: {key} {program!r} does not exist in {self.ws}; "
                    f"fix {key} or create the script"
                )
            if not os.access(path, os.X_OK):
                raise ConfigError(
                    f"{self.config_path}: {key} {program!r} is not executable; "
                    f"run `chmod +x {path}`"
                )
        elif shutil.which(program) is None:
            raise ConfigError(
                f"{self.config_path}: {key} {program!r} is not on PATH; install it or give its path"
            )

    def _resolve_program(self, argv: list[str]) -> list[str]:
        program = argv[0]
        if "/" in program and not Path(program).is_absolute():
            program = str(self.ws / program)
        return [program, *argv[1:]]

    # -- bots, references, resume -----------------------------------------------------------

    def uses_default_evaluator(self) -> bool:
        return self.config.evaluation_command is None

    def validate_bot(self, path: Path, what: str) -> None:
        """A bot must exist and parse; with the default evaluator it must also load."""
        if not path.is_file():
            raise ConfigError(f"{path}: {what} not found; check reference_bot in stages.toml")
        if self.uses_default_evaluator():
            from cosmic_curriculum.policies import load_bot

            load_bot(path)
            return
        # A user's own evaluator may use another bot format: only require JSON.
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            from cosmic_curriculum.errors import BotError

            raise BotError(f"{path}: {what} is not valid JSON ({exc})") from None

    def _seed_source(self) -> Path:
        """``--seed-checkpoint`` as given: relative to the current directory, else the workspace."""
        seed = Path(self.opts.seed_checkpoint or "")
        if seed.is_absolute() or (Path.cwd() / seed).is_file():
            return (Path.cwd() / seed).resolve()
        return (self.ws / seed).resolve()

    def _import_seed(self) -> Path:
        """The seed checkpoint inside the workspace's own checkpoints/ (trainers load only
        checkpoints from there): used in place when it is already inside, else copied to
        ``checkpoints/seed/``."""
        source = self._seed_source()
        own = (self.ws / "checkpoints").resolve()
        if source.is_relative_to(own):
            return source
        target = own / "seed" / source.name
        if not target.is_file() or target.read_bytes() != source.read_bytes():
            fsio.atomic_write_bytes(target, source.read_bytes())
        return target

    def passing_experiment(self, stage_index: int) -> str:
        entry = self.state.passing_entry(stage_index)
        if entry is None:
            raise StateError(
                f"{self.state_path}: stage {stage_index + 1} has no passing attempt in the log, "
                f"but the curriculum is at stage {self.state.stage_index + 1}; "
                f"restore it with `git show HEAD:{STATE_FILE} > {STATE_FILE}`"
            )
        return entry.experiment

    def reference_for(self, stage_index: int) -> Path:
        configured = self.config.stage_reference(stage_index)
        if configured is not None:
            path = Path(configured)
            return path if path.is_absolute() else self.ws / path
        return self.bot_path(self.passing_experiment(stage_index - 1))

    def initial_resume(self, stage_index: int, attempt: int) -> str | None:
        """The resume rules: retry ← previous attempt; stage 1 ← seed; later ← previous pass."""
        if attempt >= 1:
            stage = self.config.stages[stage_index]
            prev = self.checkpoint_dir(experiment_name(stage_index, stage.name, attempt - 1))
            if (prev / "final.zip").is_file():
                return self.rel(prev / "final.zip")
        if stage_index == 0:
            if attempt == 0 and self.opts.seed_checkpoint is not None:
                return self.rel(self._import_seed())
            return None
        prev_pass = self.checkpoint_dir(self.passing_experiment(stage_index - 1)) / "final.zip"
        return self.rel(prev_pass) if prev_pass.is_file() else None

    # -- the loop -------------------------------------------------------------------------

    def _loop(self) -> CurriculumState:
        state = self.state
        while state.status == "in_progress":
            i = state.stage_index
            flight = state.in_flight
            if (
                flight is None
                or flight.phase == "committed"
                or (flight.stage_index, flight.attempt) != (i, state.attempt)
            ):
                flight = self._new_attempt()
            self._advance(flight)
        self.reporter.finished(state)
        if state.status == "blocked":
            raise BlockedError(self._blocked_message())
        return state

    def _new_attempt(self) -> Attempt:
        i, n = self.state.stage_index, self.state.attempt
        stage = self.config.stages[i]
        exp = experiment_name(i, stage.name, n)
        flight = Attempt(
            stage_index=i,
            attempt=n,
            experiment=exp,
            phase="training",
            resume_from=self.initial_resume(i, n),
            reference=self.rel(self.reference_for(i)),
            timesteps=self.config.stage_timesteps(i, self.opts.timesteps),
        )
        self.state.in_flight = flight
        self._save("training")
        return flight

    def _advance(self, flight: Attempt) -> None:
        if flight.phase == "training":
            self._train(flight)
        if flight.phase == "trained":
            self._evaluate(flight)
        if flight.phase == "evaluated":
            self._decide(flight)
        if flight.phase == "decided":
            self._persist(flight)

    def _save(self, phase: str | None = None) -> None:
        try:
            save_state(self.state_path, self.state)
        except OSError as exc:
            # The atomic write left the previous state intact: say so instead of a traceback.
            raise StateError(
                f"{self.state_path}: cannot save the curriculum state ({exc.strerror or exc}); "
                f"the previous state is intact; free space or fix permissions and re-run "
                f"`{self.command()}`"
            ) from None
        if phase:
            _pause_at(phase)

    # -- training -------------------------------------------------------------------------

    def _artefacts_fresh(self, flight: Attempt) -> bool:
        final = self.checkpoint_dir(flight.experiment) / "final.zip"
        bot = self.bot_path(flight.experiment)
        if not (final.is_file() and bot.is_file()):
            return False
        started = _parse_time(flight.started_at)
        return min(final.stat().st_mtime, bot.stat().st_mtime) >= started - 1

    def training_argv(self, flight: Attempt, resume: str | None) -> list[str]:
        cfg = self.config
        stage = cfg.stages[flight.stage_index]
        argv = [
            *self._resolve_program(cfg.training_command),
            flight.experiment,
            "--timesteps",
            str(flight.timesteps or cfg.stage_timesteps(flight.stage_index, self.opts.timesteps)),
            "--n-parallel",
            str(self.opts.n_parallel or cfg.defaults.n_parallel),
            "--speedup",
            str(self.opts.speedup or cfg.defaults.speedup),
            *cfg.standing_args,
            *stage.flags,
        ]
        if resume:
            argv += ["--resume", resume]
        return argv

    def _train(self, flight: Attempt) -> None:
        # An orphaned trainer of an earlier run may have finished this attempt already.
        launched_before = flight.error is None and (
            flight.interrupted or getattr(flight, "launched", False)
        )
        if launched_before and self._artefacts_fresh(flight):
            try:
                self._check_artefacts(flight)
            except TrainerError:
                pass
            else:
                self.reporter.info(
                    f"{flight.experiment}: training finished while no run was watching; "
                    "using its result"
                )
                flight.phase = "trained"
                self._save("trained")
                return
        step = latest_step_checkpoint(self.checkpoint_dir(flight.experiment))
        resume = self.rel(step) if step is not None else flight.resume_from
        argv = self.training_argv(flight, resume)
        log_path = self.log_path(flight.experiment)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        flight.error = None
        flight.interrupted = False
        flight.started_at = utc_now()
        flight.launched = True  # type: ignore[attr-defined]  # extra key
        flight.last_resume = resume  # type: ignore[attr-defined]
        self._save()
        _pause_at("launch")
        with open(log_path, "ab") as log:
            log.write(f"# {utc_now()} {shlex.join(argv)}\n".encode())
        offset = log_path.stat().st_size
        proc = self.launcher.launch(
            runner.LaunchSpec(
                argv=argv,
                cwd=self.ws,
                log_path=log_path,
                pass_fds=(self.lock.fd,) if self.lock and self.lock.fd >= 0 else (),
            )
        )
        try:
            # Until watch() owns it, any exception (a signal included) must stop the group.
            _pause_at("launched")
            flight.pgid, flight.pid = proc.pgid, proc.pid
            flight.pid_start_time = proc.start_time
            self._save("training")
            self.reporter.attempt_started(flight, argv, log_path)
        except BaseException:
            proc.stop(self.opts.grace_seconds)
            raise
        outcome = runner.watch(
            proc,
            log_path,
            log_offset=offset,
            on_progress=lambda p: self.reporter.training_progress(flight, p),
            timeout=self.opts.attempt_timeout,
            grace=self.opts.grace_seconds,
        )
        flight.pgid = flight.pid = flight.pid_start_time = None
        if outcome.last_progress is not None:
            flight.last_progress = outcome.last_progress  # type: ignore[attr-defined]
        problem: str | None = None
        if outcome.timed_out:
            problem = f"did not finish within --attempt-timeout {self.opts.attempt_timeout:g}s"
        elif outcome.returncode != 0:
            code = outcome.returncode
            problem = (
                f"was killed by signal {-code}"
                if code is not None and code < 0
                else f"exited with status {code}"
            )
        if problem is None:
            try:
                self._check_artefacts(flight)
            except TrainerError as exc:
                problem = str(exc)
        if problem is not None:
            self._attempt_error(flight, f"training command {problem}", log_path)
        flight.phase = "trained"
        self._save("trained")
        self.reporter.training_finished(flight)

    def _check_artefacts(self, flight: Attempt) -> None:
        final = self.checkpoint_dir(flight.experiment) / "final.zip"
        bot = self.bot_path(flight.experiment)
        missing = [self.rel(p) for p in (final, bot) if not p.is_file()]
        if missing:
            raise TrainerError(f"exited 0 without writing {' and '.join(missing)}")
        try:
            self.validate_bot(bot, "trained bot")
        except CurriculumError as exc:
            raise TrainerError(f"wrote an invalid bot: {exc}") from None

    def _attempt_error(self, flight: Attempt, problem: str, log_path: Path) -> None:
        # The first line is the whole error (what, where, the fix); the log quote follows.
        message = (
            f"{flight.experiment}: {problem} (attempt error, not a gate failure); fix the "
            f"cause and run `{self.command()}` to retry this attempt; last lines of "
            f"{self.rel(log_path)}:\n{_indent(runner.tail_text(log_path, lines=8))}"
        )
        flight.error = f"{problem}"
        self.state.last_error = f"{flight.experiment}: {problem}"
        self._save()
        if self.use_git:
            self._commit(flight.experiment, extra=[log_path], quiet=True)
        raise TrainerError(message)

    # -- evaluation -----------------------------------------------------------------------

    def _evaluate(self, flight: Attempt) -> None:
        if flight.eval_id is not None and history.find(self.history_path, flight.eval_id):
            flight.phase = "evaluated"
            self._save("evaluated")
            return
        record = self._find_own_record(flight)
        if record is None:
            try:
                record = self._run_evaluation(flight)
            except OSError as exc:
                raise EvaluationError(
                    f"{self.history_path}: evaluation of {flight.experiment} could not be "
                    f"stored ({exc.strerror or exc}); the history is intact; fix it and re-run "
                    f"`{self.command()}` (training is kept)"
                ) from None
        flight.eval_id = str(record["id"])
        flight.phase = "evaluated"
        self._save("evaluated")

    def _find_own_record(self, flight: Attempt) -> dict[str, Any] | None:
        """A record this attempt's evaluation appended before a crash (never evaluate twice)."""
        records = history.load(self.history_path)
        trained_at = _parse_time(flight.started_at)
        for record in reversed(records):
            if record.get("curriculum_experiment") != flight.experiment or "id" not in record:
                continue
            # Only a record of this training counts (not one of a curriculum started over).
            if _parse_time(str(record.get("created_at", ""))) >= trained_at - 1:
                return record
        before = getattr(flight, "history_before", None)
        if self.config.evaluation_command and isinstance(before, int) and len(records) > before:
            return self._adopt(flight, before)
        return None

    def _adopt(self, flight: Attempt, before: int) -> dict[str, Any]:
        record = history.adopt_new_records(self.history_path, before)
        if "curriculum_experiment" not in record:
            records = history.load(self.history_path)
            records[-1]["curriculum_experiment"] = flight.experiment
            fsio.atomic_write_json(self.history_path, records)
            record = records[-1]
        return record

    def _run_evaluation(self, flight: Attempt) -> dict[str, Any]:
        settings = self.config.stage_gate(flight.stage_index)
        candidate = self.bot_path(flight.experiment)
        reference = self.ws / (flight.reference or "")
        self.reporter.evaluation_started(flight, flight.reference or "")
        if self.config.evaluation_command:
            return self._external_evaluation(flight, candidate, reference, settings)
        from cosmic_curriculum.evaluate import run_evaluation

        seed = int(hashlib.sha256(flight.experiment.encode()).hexdigest()[:8], 16)
        return run_evaluation(
            candidate,
            reference,
            history_path=self.history_path,
            gate=settings,
            seed=seed,
            on_progress=lambda played, planned: self.reporter.evaluation_progress(
                flight, {"episodes": played, "planned": planned}
            ),
            extra={
                "curriculum_experiment": flight.experiment,
                "stage_index": flight.stage_index,
                "attempt": flight.attempt,
            },
        )

    def _external_evaluation(
        self, flight: Attempt, candidate: Path, reference: Path, settings: GateSettings
    ) -> dict[str, Any]:
        assert self.config.evaluation_command is not None
        before = len(history.load(self.history_path))
        flight.history_before = before  # type: ignore[attr-defined]  # extra key
        self._save()
        argv = [
            *self._resolve_program(self.config.evaluation_command),
            self.rel(candidate),
            self.rel(reference),
            "--episodes",
            str(settings.episodes),
        ]
        log_path = self.log_path(flight.experiment)
        with open(log_path, "ab") as log:
            log.write(f"# {utc_now()} {shlex.join(argv)}\n".encode())
        offset = log_path.stat().st_size
        # The evaluator inherits the workspace lock like the trainer: if this run dies, a
        # second run is refused until the orphaned evaluator has appended its record
        # (which is then adopted), instead of evaluating the same bot twice at once.
        proc = runner.LocalLauncher().launch(
            runner.LaunchSpec(
                argv=argv,
                cwd=self.ws,
                log_path=log_path,
                pass_fds=(self.lock.fd,) if self.lock and self.lock.fd >= 0 else (),
            )
        )
        outcome = runner.watch(
            proc,
            log_path,
            log_offset=offset,
            timeout=self.opts.attempt_timeout,
            grace=self.opts.grace_seconds,
        )
        if outcome.returncode != 0 or outcome.timed_out:
            tail = runner.tail_text(log_path, lines=8)
            flight.error = f"evaluation command exited with status {outcome.returncode}"
            # Whatever a failed evaluation appended is not adopted: the retry evaluates anew.
            flight.history_before = None  # type: ignore[attr-defined]
            self.state.last_error = f"{flight.experiment}: {flight.error}"
            self._save()
            raise EvaluationError(
                f"{self.config_path}: evaluation_command failed for {flight.experiment} "
                f"(status {outcome.returncode}); fix it and run `{self.command()}` to evaluate "
                f"again (training is kept); last lines of {self.rel(log_path)}:\n{_indent(tail)}"
            )
        flight.error = None
        return self._adopt(flight, before)

    # -- decision -------------------------------------------------------------------------

    def _decide(self, flight: Attempt) -> None:
        record = history.find(self.history_path, flight.eval_id or "")
        if record is None:
            raise StateError(
                f"{self.history_path}: evaluation {flight.eval_id} of {flight.experiment} is "
                f"missing; restore it with `git show HEAD:{HISTORY_FILE} > {HISTORY_FILE}`"
            )
        settings = self.config.stage_gate(flight.stage_index)
        verdict, summary = gate_verdict(settings, record)
        state = self.state
        i = flight.stage_index
        counts = {k: record[k] for k in ("wins_a", "wins_b", "draws", "episodes")}
        entry = LogEntry(
            stage_index=i,
            experiment=flight.experiment,
            attempt=flight.attempt,
            eval=counts,
            decision="pass" if verdict == "pass" else "fail",
            eval_id=flight.eval_id,
            summary=summary,
            decided_at=utc_now(),
        )
        forced = getattr(state, "forced_retry", None)
        if isinstance(forced, dict) and forced.get("attempt") == flight.attempt:
            entry.forced_retry = True  # type: ignore[attr-defined]  # extra key
            if forced.get("reason"):
                entry.reason = str(forced["reason"])
        # Log entry, state advance and phase change land in one atomic save.
        state.log.append(entry)
        state.last_error = None
        flight.decision = entry.decision
        flight.summary = summary
        if entry.decision == "pass":
            self._advance_stage()
        else:
            state.attempt = flight.attempt + 1
            failures = sum(1 for e in state.stage_log(i) if e.decision == "fail")
            if failures >= self.config.max_retries + 1:
                state.status = "blocked"
                state.blocked_reason = (
                    f"stage {i + 1} {self.config.stages[i].name} failed {failures} attempts in "
                    f"a row (last: {flight.experiment}: {summary})"
                )
        flight.phase = "decided"
        self._save("decided")
        self.reporter.attempt_decided(entry)

    # -- persistence ----------------------------------------------------------------------

    def _persist(self, flight: Attempt) -> None:
        extra = [self.bot_path(flight.experiment), self.log_path(flight.experiment)]
        if self.state.status == "blocked":
            extra.append(self._write_review())
        if self.state.status == "done":
            self._plot_curves()
        flight.phase = "committed"
        self._save()
        if self.use_git:
            self._commit(flight.experiment, extra=extra)
        _pause_at("committed")

    def _commit(
        self, experiment: str, extra: list[Path] | None = None, quiet: bool = False
    ) -> None:
        """Commit our files (state, history, every attempt's bot and log, reviews); push."""
        paths: list[Path] = [self.state_path, self.history_path, *(extra or [])]
        for entry in self.state.log:
            exp = entry.experiment
            # The trainer's own learning-curve plot, when it draws one.
            curve = self.ws / "logs" / f"{exp}.curve.png"
            paths += [self.bot_path(exp), self.log_path(exp), curve]
        paths += sorted((self.ws / "logs").glob("review-*.md"))
        paths.append(self.ws / "logs" / CURVES_FILE)
        if experiment == "catch-up":
            last = self.state.log[-1].experiment if self.state.log else "start"
            message = f"{COMMIT_PREFIX} {last}"
        else:
            message = f"{COMMIT_PREFIX} {experiment}"
        unique = list(dict.fromkeys(p for p in paths if p.exists()))
        try:
            committed = vcs.commit_paths(self.ws, unique, message)
        except GitError as exc:
            self.reporter.warning(f"{exc}; progress is saved on disk and will be committed later")
            return
        if committed and not quiet:
            self.reporter.info(f"committed: {message}")
        if not self.opts.push or not (committed or self.state.push_pending):
            return
        ok, detail = vcs.push(self.ws, timeout=self.opts.push_timeout)
        if ok != (not self.state.push_pending):
            self.state.push_pending = not ok
            self._save()
        if not ok:
            self.reporter.warning(
                f"{detail}; training goes on, the push is retried after the next commit"
            )

    def _write_review(self) -> Path:
        from cosmic_curriculum.report import review_markdown

        i = self.state.stage_index
        stage = self.config.stages[i]
        path = self.ws / "logs" / f"review-{stage.name}.md"
        records = {str(r.get("id")): r for r in history.load(self.history_path)}
        text = review_markdown(
            stage_number=i + 1,
            stage_name=stage.name,
            entries=self.state.stage_log(i),
            records=records,
            margin=self.config.stage_gate(i).regression_margin,
            force_command=self.command("--force-retry", REASON_HINT),
            skip_command=self.command("--skip-to-next-stage", REASON_HINT),
            reason=self.state.blocked_reason or "",
        )
        fsio.atomic_write_text(path, text)
        return path

    def _plot_curves(self) -> None:
        from cosmic_curriculum.curves import plot_curriculum

        try:
            out = plot_curriculum(self.ws / "logs", self.ws / "logs" / CURVES_FILE)
        except Exception as exc:  # plotting must never cost a finished curriculum
            self.reporter.warning(f"could not plot the learning curves: {exc}")
            return
        if out:
            self.reporter.info(f"learning curves: {out}")

    def _blocked_message(self) -> str:
        i = self.state.stage_index
        stage = self.config.stages[i] if i < len(self.config.stages) else None
        review = self.rel(self.ws / "logs" / f"review-{stage.name}.md") if stage else ""
        return (
            f"curriculum blocked: {self.state.blocked_reason or 'stage failed too often'}; "
            f"review {review}, then continue with "
            f"`{self.command('--force-retry', REASON_HINT)}` or "
            f"`{self.command('--skip-to-next-stage', REASON_HINT)}`"
        )

    # -- interruption ---------------------------------------------------------------------

    def _interrupted(self, signum: int) -> InterruptedRun:
        name = signal.Signals(signum).name
        flight = getattr(self, "state", None) and self.state.in_flight
        where = "before any attempt started"
        if flight:
            # runner.watch already stopped the group; make sure, then record it.
            if flight.pgid is not None:
                runner.stop_recorded_group(
                    flight.pgid, flight.pid, flight.pid_start_time, self.opts.grace_seconds
                )
                flight.pgid = flight.pid = flight.pid_start_time = None
            flight.interrupted = True
            where = f"in phase '{flight.phase}' of {flight.experiment}"
        if getattr(self, "state", None) is not None:
            with contextlib.suppress(OSError):
                save_state(self.state_path, self.state)
        err = InterruptedRun(
            f"interrupted by {name} {where}; state saved, run `{self.command()}` to resume"
        )
        err.exit_code = 128 + signum
        return err


def _indent(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())


def _describe_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    if old is None and new is None:
        return "changed"
    if old is None:
        return "definition changed (the earlier one was not recorded)"
    if new is None:
        return "removed"
    keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    parts = [f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in keys]
    return ", ".join(parts) if parts else "changed"


def run_curriculum(options: RunOptions, reporter: Reporter | None = None) -> CurriculumState:
    """Run or resume the curriculum; raises CurriculumError subclasses on every stop but done."""
    return Orchestrator(options, reporter).run()
