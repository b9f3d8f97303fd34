"""Kill-at-random crash harness for `cosmic-curriculum run`.

A whole curriculum (the scripted fake trainer and evaluator of ``tests/fakes``) runs in a
temp git workspace as real processes. Each run is SIGKILLed at a random moment: after a
random delay, or while it sleeps at an injected fault point (inside a state write, between
``git add`` and ``git commit``, around the trainer's start, after a phase is saved; see
``fsio.fault_point``). Two kill modes:

- ``orchestrator``: only the `run` process dies; its trainer or evaluator lives on as an
  orphan (half the time the next `run` starts at once and must be refused or cope);
- ``group``: everything working in the workspace dies at once (run, git, trainer,
  evaluator), like a machine that lost power.

After every run both JSON files must parse; at the end the state, history and git tree must
equal a clean run's (content only: timestamps, ids, pids and commit messages differ), every
attempt must have trained to completion exactly once, and no temp file, git lock, process
or held workspace lock may be left.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakes.workspace import cli_env, completed_trainings, make_workspace, run_argv
from gitutil import git

from cosmic_curriculum.system.fsio import FAULT_LOG_ENV, PAUSE_ENV
from cosmic_curriculum.workspace.lock import WorkspaceLock

STAGES = ["score", "defend", "no_draws"]
# max_retries 1: two failures block. The scripted outcomes give every decision kind:
# stage 1 passes; stage 2 fails twice (a retry, then blocked), is force-retried, fails
# again (blocked again) and is skipped; stage 3 fails once and passes on its retry.
MAX_RETRIES = 1
EVAL_SCRIPT: dict[str, Any] = {
    "curric-s2-defend": "fail",
    "curric-s2-defend-retry1": "fail",
    "curric-s2-defend-retry2": "fail",
    "curric-s3-no_draws": "fail",
    "sleep": 0.3,  # long enough for a run to meet an orphaned evaluator
}
# Tiny budgets: 4 progress steps of 0.1 s each, a periodic checkpoint per step.
TRAINER_SCRIPT: dict[str, Any] = {"*": {"steps": 4, "step_seconds": 0.1}}
REASON = "crash harness"

# Fault points worth stopping at (each sleeps PAUSE seconds when chosen).
FAULT_POINTS = [
    "launch",
    "launched",
    "training",
    "trained",
    "evaluated",
    "decided",
    "committed",
    "write:curriculum_state.json",
    "write:eval_history.json",
    "commit:add",
]
PAUSE = 1.0
MODES = ("orchestrator", "group")
# Keys that legitimately differ between a clean and a crashed run.
VOLATILE = {
    "started_at",
    "decided_at",
    "created_at",
    "updated_at",
    "id",
    "eval_id",
    "pgid",
    "pid",
    "pid_start_time",
    "launched",
    "last_resume",
    "interrupted",
    "last_progress",
    "history_before",
}


class HarnessError(AssertionError):
    """A run behaved in a way the harness does not accept."""


@dataclass
class Report:
    """What one crashed curriculum (or a series of them) went through."""

    kills: int = 0
    runs: int = 0
    refused: int = 0
    curricula: int = 0
    mismatches: list[str] = field(default_factory=list)
    kills_at: dict[str, int] = field(default_factory=dict)

    def add(self, other: Report) -> None:
        self.kills += other.kills
        self.runs += other.runs
        self.refused += other.refused
        self.curricula += other.curricula
        self.mismatches += other.mismatches
        for key, n in other.kills_at.items():
            self.kills_at[key] = self.kills_at.get(key, 0) + n


# --------------------------------------------------------------------------- workspace


def new_workspace(path: Path) -> Path:
    ws = make_workspace(
        path,
        stages=STAGES,
        max_retries=MAX_RETRIES,
        trainer_script=TRAINER_SCRIPT,
        eval_script=EVAL_SCRIPT,
    )
    (ws.parent / f"{ws.name}-scripts" / "faults.log").touch()
    return ws


def fault_log(ws: Path) -> Path:
    return ws.parent / f"{ws.name}-scripts" / "faults.log"


def next_flags(ws: Path) -> list[str]:
    """The command a user would run next: plain `run`, or the override a block needs."""
    state = json.loads((ws / "curriculum_state.json").read_text())
    if state.get("status") != "blocked":
        return []
    if "forced_retry" not in state:
        return ["--force-retry", "--reason", REASON]
    return ["--skip-to-next-stage", "--reason", REASON]


def start_run(ws: Path, flags: list[str], pause: str | None) -> subprocess.Popen[bytes]:
    env = cli_env(ws)
    env.pop(PAUSE_ENV, None)
    if pause:
        env[PAUSE_ENV] = pause
        env[FAULT_LOG_ENV] = str(fault_log(ws))
    out = open(ws.parent / f"{ws.name}-run.out", "ab")  # noqa: SIM115 - child keeps a copy
    try:
        return subprocess.Popen(
            run_argv(ws, *flags),
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        out.close()


def run_to_end(ws: Path, timeout: float = 120.0) -> None:
    """Run (with the overrides a block needs) until the curriculum is done, no kills."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = start_run(ws, next_flags(ws), None)
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        if code == 0:
            return
        if code != 1 or next_flags(ws) == []:
            raise HarnessError(f"run exited {code}: {output_tail(ws)}")
    raise HarnessError("the curriculum did not finish in time")


def output_tail(ws: Path, lines: int = 6) -> str:
    path = ws.parent / f"{ws.name}-run.out"
    text = path.read_text(errors="replace") if path.exists() else ""
    return " | ".join(text.strip().splitlines()[-lines:])


# --------------------------------------------------------------------------- processes


def workspace_processes(ws: Path) -> list[int]:
    """Processes whose working directory is the workspace: run, git, trainer, evaluator."""
    target = str(ws.resolve())
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2 :].startswith(("Z", "X")):
            continue
        if cwd == target or cwd.startswith(target + "/"):
            found.append(int(entry.name))
    return found


def kill_everything(ws: Path, timeout: float = 10.0) -> None:
    """SIGKILL every process group with a member working in the workspace."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = workspace_processes(ws)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        time.sleep(0.02)
    raise HarnessError(f"processes survive SIGKILL in {ws}: {workspace_processes(ws)}")


def wait_for_orphans(ws: Path, timeout: float = 30.0) -> None:
    """Let an orphaned trainer or evaluator finish (it holds the workspace)."""
    deadline = time.monotonic() + timeout
    while workspace_processes(ws):
        if time.monotonic() > deadline:
            raise HarnessError(f"orphans of {ws} did not finish: {workspace_processes(ws)}")
        time.sleep(0.02)


def _wait_for(pred: Callable[[], bool], timeout: float, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.01)
    return False


# --------------------------------------------------------------------------- checks


def normalise(value: Any) -> Any:
    """Drop what differs between equivalent runs (timestamps, ids, pids, resume details)."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


# A wall-time cell of REPORT.md's table (`42s`, `4m 10s`, `3h 05m`, `2d 03h`).
WALL_TIME_CELL = re.compile(r"\| (?:\d+d \d{2}h|\d+h \d{2}m|\d+m \d{2}s|\d+s) \|")


def without_wall_times(report: str) -> str:
    """REPORT.md with its wall times blanked: they come from timestamps (a killed run's
    attempts really take longer), which every comparison here ignores."""
    return WALL_TIME_CELL.sub("| <wall> |", report)


def check_files_parse(ws: Path) -> list[str]:
    problems = []
    for name in ("curriculum_state.json", "eval_history.json"):
        try:
            json.loads((ws / name).read_text())
        except (OSError, ValueError) as exc:
            problems.append(f"{name} does not parse after a kill: {exc}")
    return problems


def snapshot(ws: Path) -> dict[str, Any]:
    """Everything the final comparison looks at, in comparable form."""
    tree: dict[str, str] = {}
    for line in git(ws, "ls-tree", "-r", "HEAD").splitlines():
        meta, path = line.split("\t", 1)
        tree[path] = meta.split()[2]
    content: dict[str, Any] = {}
    for path in tree:
        if path.endswith(".json"):
            content[path] = normalise(json.loads(git(ws, "show", f"HEAD:{path}")))
        elif path == "REPORT.md":
            content[path] = without_wall_times(git(ws, "show", f"HEAD:{path}"))
        elif path.startswith("logs/") and path.endswith((".log", ".png")):
            # Logs (and the curves plotted from them) differ: timestamps, the progress
            # lines of killed trainings. Presence only.
            content[path] = "log"
        else:
            content[path] = tree[path]
    return {
        "state": normalise(json.loads((ws / "curriculum_state.json").read_text())),
        "history": normalise(json.loads((ws / "eval_history.json").read_text())),
        "head": content,
        "trained": completed_trainings(ws),
    }


def final_problems(ws: Path, baseline: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    got = snapshot(ws)
    for key in ("state", "history", "trained"):
        if got[key] != baseline[key]:
            problems.append(f"final {key} differs from a clean run: {got[key]!r}")
    if got["head"] != baseline["head"]:
        diff = sorted(
            p
            for p in set(got["head"]) | set(baseline["head"])
            if got["head"].get(p) != baseline["head"].get(p)
        )
        problems.append(f"git HEAD differs from a clean run in {diff}")
    status = git(ws, "status", "--porcelain")
    if status:
        problems.append(f"uncommitted changes left: {status!r}")
    temps = [p for p in ws.rglob(".*.tmp-*") if ".git" not in p.parts]
    if temps:
        problems.append(f"temp files left: {temps}")
    git_locks = list((ws / ".git").glob("*.lock"))
    if git_locks:
        problems.append(f"git locks left: {git_locks}")
    if workspace_processes(ws):
        problems.append(f"processes left: {workspace_processes(ws)}")
    try:
        WorkspaceLock(ws).acquire().release()
    except Exception as exc:  # LockError: somebody still holds the workspace
        problems.append(f"workspace lock still held: {exc}")
    return problems


def baseline(path: Path) -> dict[str, Any]:
    """A clean (never killed) run of the scripted curriculum."""
    ws = new_workspace(path)
    run_to_end(ws)
    problems = final_problems(ws, snapshot(ws))
    if problems:
        raise HarnessError(f"the clean run itself is not clean: {problems}")
    return snapshot(ws)


# --------------------------------------------------------------------------- crashing


def crash_curriculum(
    path: Path,
    reference: dict[str, Any],
    rng: random.Random,
    mode: str,
    max_kills: int,
    max_delay: float = 1.2,
    timeout: float = 240.0,
) -> Report:
    """Run one curriculum to the end, SIGKILLing up to ``max_kills`` of its runs."""
    assert mode in MODES
    ws = new_workspace(path)
    try:
        return _crash(ws, reference, rng, mode, max_kills, max_delay, timeout)
    except BaseException:
        kill_everything(ws)  # never leave a run or trainer behind (test failure, Ctrl-C)
        raise


def _crash(
    ws: Path,
    reference: dict[str, Any],
    rng: random.Random,
    mode: str,
    max_kills: int,
    max_delay: float,
    timeout: float,
) -> Report:
    path = ws
    report = Report(curricula=1)
    deadline = time.monotonic() + timeout
    done = False
    while not done:
        if time.monotonic() > deadline:
            raise HarnessError(f"{ws}: not done after {timeout:g}s: {output_tail(ws)}")
        kill = report.kills < max_kills
        point = rng.choice(FAULT_POINTS) if kill and rng.random() < 0.6 else None
        marks_before = fault_log(ws).stat().st_size
        proc = start_run(ws, next_flags(ws), f"{point}:{PAUSE}" if point else None)
        report.runs += 1
        killed_at = None
        if kill:
            if point is not None:
                log, size = fault_log(ws), marks_before
                reached = _wait_for(lambda: log.stat().st_size > size, 20.0, proc)  # noqa: B023
                if reached:
                    time.sleep(rng.uniform(0.0, PAUSE * 0.8))
                    killed_at = point
            else:
                _wait_for(lambda: False, rng.uniform(0.02, max_delay), proc)
                killed_at = "random delay"
        if killed_at is not None and proc.poll() is None:
            if mode == "group":
                kill_everything(ws)
            else:
                proc.kill()
            proc.wait()
            report.kills += 1
            report.kills_at[killed_at] = report.kills_at.get(killed_at, 0) + 1
            report.mismatches += check_files_parse(ws)
            # An orphan may live on (orchestrator mode). Half the time let it finish first;
            # otherwise the next run meets it and must refuse or cope.
            if mode == "orchestrator" and rng.random() < 0.5:
                wait_for_orphans(ws)
            continue
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        report.mismatches += check_files_parse(ws)
        out = output_tail(ws)
        if code == 0:
            done = True
        elif code == 1 and "holds this workspace" in out.rsplit("|", 1)[-1]:
            report.refused += 1
            wait_for_orphans(ws)
        elif code == 1 and next_flags(ws):
            pass  # blocked: the next run carries the override
        else:
            report.mismatches.append(f"{ws}: run exited {code}: {out}")
            wait_for_orphans(ws)
            if len(report.mismatches) > 5:
                break
    if done:
        report.mismatches += [f"{ws}: {p}" for p in final_problems(ws, reference)]
    if not report.mismatches:
        shutil.rmtree(path.parent / f"{path.name}-scripts", ignore_errors=True)
        shutil.rmtree(path, ignore_errors=True)
        (path.parent / f"{path.name}-run.out").unlink(missing_ok=True)
    return report


def crash_series(
    root: Path,
    reference: dict[str, Any],
    seed: int,
    mode: str,
    kills: int,
    per_curriculum: int = 8,
) -> Report:
    """Crash curricula one after another until ``kills`` kills have happened."""
    rng = random.Random(seed)
    total = Report()
    n = 0
    while total.kills < kills:
        n += 1
        want = min(per_curriculum, kills - total.kills)
        total.add(crash_curriculum(root / f"{mode}-{seed}-{n}", reference, rng, mode, want))
        if total.mismatches:
            break
    return total
