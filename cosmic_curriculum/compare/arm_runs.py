"""Train the arms: each sub-workspace's own `cosmic-curriculum run`, at most ``parallel``
at once. `run` is the machinery (the configured launcher, the gates, resume after
kill -9), so an arm is resumed by running it again; a finished one only prints.

Each run gets the parent workspace's lock descriptor, so a run that outlives a killed
compare keeps the parent held until it ends (a second compare meanwhile is one line).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosmic_curriculum.defaults import COMPARE_STOP_GRACE_SECONDS
from cosmic_curriculum.errors import CompareError
from cosmic_curriculum.system.python import python_argv
from cosmic_curriculum.workspace import layout as L

POLL_SECONDS = 0.5


@dataclass
class ArmRun:
    name: str
    ws: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0


def arm_status(ws: Path) -> dict[str, Any] | None:
    """What an arm's state file says (status, stage, last progress), or None before it has one."""
    try:
        state = json.loads((ws / L.STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _status(ws: Path) -> str:
    return str((arm_status(ws) or {}).get("status", "not started"))


def finished(ws: Path) -> bool:
    """An arm's run has nothing left to train: done, or blocked (a gate failed its last
    retry; its last training is what the arm made)."""
    state = arm_status(ws)
    return state is not None and state.get("status") in ("done", "blocked")


def train_arms(
    runs: Sequence[ArmRun],
    *,
    parallel: int,
    lock_fd: int,
    timeout: float,
    progress_every: float,
    say: Callable[[str], None],
    on_trained: Callable[[ArmRun], None],
) -> None:
    """Run every arm that has not finished, ``parallel`` at a time, calling
    ``on_trained(arm)`` for each trained one (those trained before first); raises
    CompareError naming the arms whose run failed (after the others have ended)."""
    todo = [r for r in runs if not finished(r.ws)]
    for r in runs:
        if r not in todo:
            say(f"{r.name}: trained ({_status(r.ws)})")
            on_trained(r)
    live: list[ArmRun] = []
    failed: list[str] = []
    last_report = time.monotonic()
    try:
        while todo or live:
            while todo and len(live) < parallel:
                r = todo.pop(0)
                _start(r, lock_fd)
                say(f"{r.name}: training (log {r.log.parent.name}/{r.log.name})")
                live.append(r)
            time.sleep(POLL_SECONDS)
            for r in list(live):
                assert r.proc is not None
                if r.proc.poll() is None and time.monotonic() - r.started > timeout:
                    _stop(r)
                    failed.append(f"{r.name} (stopped after {timeout:g}s)")
                    live.remove(r)
                elif r.proc.returncode is not None:
                    live.remove(r)
                    minutes = (time.monotonic() - r.started) / 60
                    if finished(r.ws):
                        say(f"{r.name}: {_status(r.ws)} after {minutes:.1f} min")
                        on_trained(r)
                    else:
                        failed.append(f"{r.name} (exit {r.proc.returncode})")
            if live and time.monotonic() - last_report >= progress_every:
                last_report = time.monotonic()
                for r in live:
                    say(f"{r.name}: {_progress(r.ws)}")
    except BaseException:
        for r in live:
            _stop(r)
        raise
    if failed:
        raise CompareError(
            f"compare: the run of {', '.join(failed)} did not finish its curriculum; see its "
            "log under compare/, fix the cause, and run compare again (it resumes)"
        )


def _start(r: ArmRun, lock_fd: int) -> None:
    argv = python_argv("-m", "cosmic_curriculum", "run", "--no-push")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(r.log, "ab") as log:
        r.proc = subprocess.Popen(
            argv,
            cwd=r.ws,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            pass_fds=(lock_fd,),
        )
    r.started = time.monotonic()


def _stop(r: ArmRun) -> None:
    """SIGTERM (run stops its trainer and saves), then SIGKILL after a grace."""
    if r.proc is None or r.proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        r.proc.send_signal(signal.SIGTERM)
    try:
        r.proc.wait(COMPARE_STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        r.proc.kill()
        r.proc.wait()


def _progress(ws: Path) -> str:
    """The arm's training now: its experiment and the trainer's last @progress line."""
    from cosmic_curriculum.workspace.trainer_log import latest_progress

    state = arm_status(ws) or {}
    flight = state.get("in_flight") or {}
    stage = flight.get("experiment")
    if not isinstance(stage, str):
        return "preflight"
    prog = latest_progress(L.Layout(ws).log(stage)) or {}
    if flight.get("phase") == "training" and "timesteps" in prog:
        fps = f", {prog['fps']:,.0f} steps/s" if isinstance(prog.get("fps"), float) else ""
        return f"{stage}: {prog['timesteps']:,}/{prog['total']:,} timesteps{fps}"
    return f"{stage}: {flight.get('phase', 'training')}"
