"""Run one git command: argv only, its own session, a timeout, never a prompt.

Every git process we start goes through :func:`run_git`. A git command can run user code
(hooks, gpg, credential helpers, ssh) that may never return, so each one is started as
the leader of a new session and, on timeout, its whole process group (hooks included) is
killed. The timeout is one setting: ``COSMIC_CURRICULUM_GIT_TIMEOUT`` (seconds, default
``GIT_TIMEOUT_SECONDS``); callers may pass their own (``push`` has ``--push-timeout``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from cosmic_curriculum.defaults import GIT_TIMEOUT_SECONDS, seconds_problem
from cosmic_curriculum.errors import GitError
from cosmic_curriculum.system.processes import gone_or_zombie

TIMEOUT_ENV = "COSMIC_CURRICULUM_GIT_TIMEOUT"


def git_timeout() -> float:
    """Seconds any one git command may take (``COSMIC_CURRICULUM_GIT_TIMEOUT``)."""
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else GIT_TIMEOUT_SECONDS
    except ValueError:
        return GIT_TIMEOUT_SECONDS
    # Not a number, or out of range (inf, nan, 1e308 would overflow the clock): the default.
    return value if seconds_problem(value, "git") is None else GIT_TIMEOUT_SECONDS


class GitRunError(GitError):
    """A git command failed, timed out or could not start; ``reason`` is git's line."""

    def __init__(self, command: str, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(f"git {command} {'timed out' if timed_out else 'failed'}: {reason}")
        self.command = command
        self.reason = reason
        self.timed_out = timed_out


@dataclass(frozen=True)
class GitResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def reason(stderr: str, stdout: str = "", returncode: int | None = None) -> str:
    """The line that says why git failed: a stale lock, else git's first
    ``fatal:``/``error:``/``remote:`` line, else the first line a hook printed."""
    lines = [ln.strip() for ln in (stderr + "\n" + stdout).splitlines() if ln.strip()]
    for line in lines:
        if "index.lock" in line:
            return (
                f"{line} (another git is running, or a killed git left the lock; "
                "remove it if no git process runs)"
            )
    for line in lines:
        if line.startswith(("fatal:", "error:", "remote:")):
            return line
    if lines:
        return lines[0]
    return f"exit {returncode}" if returncode is not None else "unknown error"


def run_git(
    args: Sequence[str],
    cwd: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float | None = None,
    check: bool = True,
) -> GitResult:
    """Run ``git *args`` in ``cwd``; raise :class:`GitRunError` on a timeout, on a start
    failure and (with ``check``) on a non-zero exit."""
    limit = timeout if timeout is not None else git_timeout()
    full_env = {**os.environ, **(env or {})}
    full_env["GIT_TERMINAL_PROMPT"] = "0"  # never wait for a password
    command = args[0] if args else "git"
    try:
        proc = subprocess.Popen(
            ["git", *args],
            cwd=cwd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            # No controlling terminal (nothing can prompt), and one group to kill: git,
            # its hooks, gpg, ssh.
            start_new_session=True,
        )
    except OSError as exc:
        raise GitRunError(command, f"cannot run git: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(stdin, timeout=limit)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise GitRunError(
            command,
            f"no answer after {limit:g}s (a hook, gpg or ssh that never returns?); "
            f"stopped it; set {TIMEOUT_ENV} to allow more time",
            timed_out=True,
        ) from None
    except BaseException:
        # A signal (the run's Ctrl-C handler raises) must not leave git and its hooks
        # running in their own session, out of reach of the terminal.
        kill_group(proc)
        raise
    result = GitResult(
        proc.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
    )
    if check and not result.ok:
        raise GitRunError(command, reason(result.stderr, result.stdout, result.returncode))
    return result


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill ``proc``'s whole session group and reap it (pipes held by orphans are closed)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with suppress(OSError):
                stream.close()
    proc.wait()


def git_executable() -> str | None:
    return shutil.which("git")


@dataclass(frozen=True)
class RepoDirs:
    """A work tree (``root``, real path) and its git directory."""

    root: Path
    git_dir: Path


def locate(workspace: Path | str, timeout: float | None = None) -> RepoDirs | None:
    """The repository whose work tree contains ``workspace``; None when there is none
    (not a repository, a bare one, no such directory, no git)."""
    if git_executable() is None or not Path(workspace).is_dir():
        return None
    found = run_git(
        ["rev-parse", "--show-toplevel", "--absolute-git-dir"],
        workspace,
        timeout=timeout,
        check=False,
    )
    lines = found.stdout.splitlines()
    if not found.ok or len(lines) < 2:
        return None
    return RepoDirs(Path(lines[0]).resolve(), Path(lines[1]))


def git_processes_running(repo_dirs: Sequence[Path]) -> bool:
    """Is a git process working in this repository running?

    Only git processes whose working directory lies in ``repo_dirs`` (the work tree or
    the git dir) count: an editor polling another repository must not keep a stale lock
    here forever (every commit would fail). A git process of ours we cannot inspect counts
    as running (conservative).
    """
    uid = os.getuid()
    roots = [str(Path(d).resolve()) for d in repo_dirs]
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            comm = Path(entry.path, "comm").read_text().strip()
            owner = entry.stat().st_uid
        except OSError:
            continue
        if owner != uid or not (comm == "git" or comm.startswith("git-")):
            continue
        try:
            cwd = os.readlink(Path(entry.path, "cwd"))
        except OSError:
            # An exited git not yet reaped (a zombie: it has no cwd) works nowhere.
            if not gone_or_zombie(int(entry.name)):
                return True
            continue
        if any(cwd == root or cwd.startswith(root + os.sep) for root in roots):
            return True
    return False
