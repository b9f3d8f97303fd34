"""The detached tmux session of `run --detach`, and `attach`."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cosmic_curriculum.errors import ConfigError, CurriculumError
from cosmic_curriculum.system.python import python_argv
from cosmic_curriculum.workspace.layout import Layout
from cosmic_curriculum.workspace.lock import WorkspaceLock

# Environment variables carried into the tmux session (the tmux server may be older than
# this shell and would otherwise start the run with its own, stale environment).
# The trackers' settings and credentials too (passed to tmux, never written to a file).
SESSION_ENV_PREFIXES = ("COSMIC_CURRICULUM_", "FAKE_TRAINER_", "FAKE_EVAL_", "WANDB_", "MLFLOW_")
SESSION_ENV_NAMES = ("PATH", "PYTHONPATH", "VIRTUAL_ENV", "HOME")
TMUX_SOCKET_ENV = "COSMIC_CURRICULUM_TMUX_SOCKET"
# Set in the detached session: its pane is piped to a log, so the console draws plain lines.
PLAIN_OUTPUT_ENV = "COSMIC_CURRICULUM_PLAIN_OUTPUT"


def session_name(workspace: Path) -> str:
    """A tmux session name unique to the workspace path (tmux forbids '.' and ':')."""
    ws = Path(workspace).resolve()
    base = re.sub(r"[^A-Za-z0-9_-]", "_", ws.name)[:40] or "root"
    digest = hashlib.sha1(str(ws).encode()).hexdigest()[:6]
    return f"curriculum-{base}-{digest}"


def tmux_literal(arg: str) -> str:
    """``arg`` as tmux must receive it to keep it one literal argument.

    tmux splits its own argv into a command sequence at every argument that *ends* with
    ``;`` (so ``--reason "tried twice;"`` would end the command there and run the rest as
    tmux commands); a trailing ``\\;`` is a literal semicolon.
    """
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


def tmux_argv(*args: str) -> list[str]:
    socket = os.environ.get(TMUX_SOCKET_ENV)
    return ["tmux", *(["-L", socket] if socket else []), *args]


def _tmux(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tmux_argv(*args), capture_output=True, text=True, check=check, stdin=subprocess.DEVNULL
    )


def session_exists(name: str) -> bool:
    return _tmux("has-session", "-t", f"={name}").returncode == 0


@dataclass
class DetachResult:
    session: str
    started: bool
    message: str


def start_detached(
    workspace: Path, argv: Sequence[str], check: Callable[[], None] | None = None
) -> DetachResult:
    """Run ``argv`` in a detached tmux session named after ``workspace``.

    Output goes to the pane and is appended to `logs/curriculum.log`. If the session
    already exists nothing is started and the message says how to attach. Otherwise
    ``check`` runs first: what it raises is said here, not in a session that would close
    before anyone could read it.
    """
    if shutil.which("tmux") is None:
        raise ConfigError(
            "--detach needs tmux, which is not on PATH; install tmux or run without --detach"
        )
    ws = Path(workspace).resolve()
    name = session_name(ws)
    attach = shlex.join(tmux_argv("attach", "-t", name))
    if session_exists(name):
        return DetachResult(
            name,
            False,
            f"the curriculum of {ws} is already running in tmux session {name}; "
            f"attach with `{attach}` (detach again with Ctrl-b d)",
        )
    if check is not None:
        check()
    if ws.is_dir():
        # A run outside tmux already holds the workspace: say so here, not in a session
        # that would close before anyone could read its error.
        WorkspaceLock(ws).acquire().release()
    log = Layout(ws).detached_log
    log.parent.mkdir(parents=True, exist_ok=True)
    # The pane's output is piped to the log: plain lines there, not a redrawn bar.
    env_flags = ["-e", f"{PLAIN_OUTPUT_ENV}=1"]
    for key, value in os.environ.items():
        if key in SESSION_ENV_NAMES or key.startswith(SESSION_ENV_PREFIXES):
            env_flags += ["-e", tmux_literal(f"{key}={value}")]
    # One tmux invocation: the pipe is attached before the server reads any output.
    result = _tmux(
        "new-session",
        "-d",
        "-s",
        name,
        "-c",
        str(ws),
        "-x",
        "160",
        "-y",
        "48",
        *env_flags,
        *(tmux_literal(a) for a in argv),
        ";",
        "pipe-pane",
        "-o",
        "-t",
        f"={name}:",
        # a pty ends lines with \r\n and Rich styles its text: the log gets plain lines
        f"{shlex.join(python_argv('-m', 'cosmic_curriculum.launchers.plain_log'))} "
        f"{shlex.quote(str(log))}",
    )
    if result.returncode != 0:
        if session_exists(name):  # lost a race with another start: same outcome
            return DetachResult(
                name, False, f"already running in tmux session {name}; attach with `{attach}`"
            )
        raise ConfigError(f"tmux could not start session {name}: {result.stderr.strip()}")
    return DetachResult(
        name,
        True,
        f"started the curriculum in tmux session {name} (log: {log}); attach with `{attach}`, "
        "detach with Ctrl-b d; `cosmic-curriculum status` shows progress",
    )


def attach_argv(workspace: Path) -> list[str]:
    """The tmux command that attaches to the workspace's run; CurriculumError without one."""
    ws = Path(workspace).resolve()
    name = session_name(ws)
    if shutil.which("tmux") is None or not session_exists(name):
        from cosmic_curriculum.workspace.locate import is_workspace, where_to_run

        if not is_workspace(ws):
            raise ConfigError(
                f"--workspace {ws}: not a cosmic-curriculum workspace; "
                f"{where_to_run(ws, 'cosmic-curriculum attach')}"
            )
        raise CurriculumError(
            f"no curriculum is running in tmux for {ws} (no session {name}); start one with "
            f"`cosmic-curriculum run --detach --workspace {shlex.quote(str(ws))}`"
        )
    return tmux_argv("attach", "-t", f"={name}")
