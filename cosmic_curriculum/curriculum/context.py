"""The shell's context of one `run`: its options, paths, config, state, lock and reporter.

The state changes only through :meth:`Run.apply` (the pure rules of
:mod:`~cosmic_curriculum.core.transitions`) and reaches disk only through
:meth:`Run.save` (atomic; a fault point after it lets crash tests kill at a known phase).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from cosmic_curriculum.core import transitions
from cosmic_curriculum.curriculum.reporter import Reporter
from cosmic_curriculum.defaults import PUSH_TIMEOUT_SECONDS
from cosmic_curriculum.errors import StateError
from cosmic_curriculum.launchers import Handle, Launcher, TrainerRecord
from cosmic_curriculum.launchers.local import LocalLauncher
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.workspace.config import CurriculumConfig, LauncherConfig
from cosmic_curriculum.workspace.layout import Layout
from cosmic_curriculum.workspace.lock import WorkspaceLock
from cosmic_curriculum.workspace.state import Attempt, Candidate, CurriculumState
from cosmic_curriculum.workspace.state_file import save_state


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
    push_timeout: float = PUSH_TIMEOUT_SECONDS
    launcher: Launcher | None = None
    # How the user invoked us, for the "what to run next" hints.
    command_prefix: str = "cosmic-curriculum run"


class Run:
    """One `run` of the curriculum in one workspace."""

    def __init__(self, options: RunOptions, reporter: Reporter | None = None) -> None:
        self.opts = options
        self.reporter = reporter or Reporter()
        self.ws = Path(options.workspace).resolve()
        self.paths = Layout(self.ws)
        config_path = Path(options.config_path) if options.config_path else self.paths.config
        self.config_path = (
            config_path if config_path.is_absolute() else (Path.cwd() / config_path).resolve()
        )
        self._launcher = options.launcher
        self.attached: Handle | None = None  # work of an earlier run, followed, not restarted
        # The same for the candidates of an attempt with `candidates = K > 1`, by k.
        self.attached_candidates: dict[int, Handle] = {}
        self.use_git = False
        # Why the last commit failed (None once one succeeds): a run that could not
        # commit its results must not end as a clean success.
        self.commit_failure: str | None = None
        # What changed in the state after the run's last commit (notifications delivered,
        # the push flag): a run that stops commits it (`persist.settle`).
        self.unsettled: set[str] = set()
        self.warned_twins: set[Path] = set()  # stale ONNX twins left out (said once)
        self.git_checked = False  # vcs.check_workspace ran (once per run)
        self.lock: WorkspaceLock | None = None
        self.config: CurriculumConfig
        self.state: CurriculumState

    @property
    def launcher(self) -> Launcher:
        """Where trainings run: the option's launcher, else the config's `[launcher]`."""
        if self._launcher is None:
            self._launcher = make_launcher(self.config.launcher, self.ws)
        return self._launcher

    @property
    def flight(self) -> Attempt:
        """The attempt in flight (the loop only asks while there is one)."""
        assert self.state.in_flight is not None
        return self.state.in_flight

    def apply(self, event: transitions.Event) -> None:
        """Move the state by one event of the pure rules (not saved yet)."""
        self.state = transitions.apply(self.state, self.config, event)

    def record(self, event: transitions.Event, pause: str | None = None) -> None:
        """Apply ``event`` and save at once: every phase change is on disk before it acts."""
        self.apply(event)
        self.save(pause)

    def save(self, pause: str | None = None) -> None:
        try:
            save_state(self.paths.state, self.state)
        except OSError as exc:
            # The atomic write left the previous state intact: say so instead of a traceback.
            raise StateError(
                f"{self.paths.state}: cannot save the curriculum state "
                f"({exc.strerror or exc}); the previous state is intact; free space or fix "
                f"permissions and re-run `{self.command()}`"
            ) from None
        if pause:
            fsio.fault_point(pause)

    def trainer_record(self) -> TrainerRecord:
        """The recorded training of the attempt in flight, with the tag that finds it."""
        flight = self.flight
        tag = self.paths.attempt_tag(flight.experiment)
        launch_id = _launch_id(self.paths, flight.experiment, flight.started_at, flight)
        log = str(self.paths.log(flight.experiment))
        return TrainerRecord(flight.pgid, flight.pid, flight.pid_start_time, tag, launch_id, log)

    def candidate_record(self, candidate: Candidate) -> TrainerRecord:
        """The recorded training of one candidate of the attempt in flight."""
        exp = candidate.experiment
        tag = self.paths.attempt_tag(exp)
        started = candidate.started_at or self.flight.started_at
        launch_id = _launch_id(self.paths, exp, started, candidate)
        log = str(self.paths.log(exp))
        return TrainerRecord(
            candidate.pgid, candidate.pid, candidate.pid_start_time, tag, launch_id, log
        )

    def resolve_program(self, argv: list[str]) -> list[str]:
        """A command of stages.toml: a relative program path is the workspace's."""
        program = argv[0]
        if "/" in program and not Path(program).is_absolute():
            program = str(self.ws / program)
        return [program, *argv[1:]]

    def candidate(self, k: int) -> Candidate:
        """Candidate ``k`` of the attempt in flight."""
        for c in self.flight.candidates or []:
            if c.k == k:
                return c
        raise KeyError(k)  # the rules created every k the shell asks for

    def lock_fds(self) -> tuple[int, ...]:
        """The lock's descriptor, for the children that must keep the workspace locked."""
        return (self.lock.fd,) if self.lock and self.lock.fd >= 0 else ()

    def command(self, *flags: str) -> str:
        """How to invoke `run` again (with ``flags``) from where the user is."""
        parts = [self.opts.command_prefix, *flags]
        if self.ws != Path.cwd().resolve():
            parts += ["--workspace", shlex.quote(str(self.ws))]
        return " ".join(parts)

    def rel(self, path: Path) -> str:
        return self.paths.rel(path)


def _launch_id(paths: Layout, experiment: str, started_at: str, of: Attempt | Candidate) -> str:
    """The id the last launch was submitted under: a continuation's own when that launch
    was one (it started at its time), else the plain scheme's."""
    done = of.continuations or []
    if done and done[-1].at == started_at and done[-1].launch_id:
        return done[-1].launch_id
    return paths.launch_id(experiment, started_at)


def make_launcher(config: LauncherConfig, workspace: Path) -> Launcher:
    if config.kind == "ray":
        from cosmic_curriculum.launchers.ray import RayLauncher

        return RayLauncher(config)
    return LocalLauncher(config.env)
