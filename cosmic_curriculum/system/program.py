"""A program answering JSON lines on stdin/stdout (the ``cosmic-bot/1`` transport).

What the arena's program bots (``bots/external.py``) and the env kinds' program players
(``envs/program_player.py``) share: the program runs in its own process group and
session, tagged so that children that left the group are found; every line is written and
read through ``select`` within the per-answer timeout and a byte bound; stderr is drained
by a thread into a bounded tail quoted in errors; :meth:`BotProgram.close` closes stdin,
waits, then stops the whole tree. Every fault is one :class:`BotError` line naming the
program (``exec:<command>``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import select
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from cosmic_curriculum.errors import BotError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system import processes as runner
from cosmic_curriculum.system.stderr_tail import StderrTail

PROTOCOL = "cosmic-bot/1"
EXEC_PREFIX = "exec:"
MAX_HANDSHAKE_BYTES = 64 * 1024
# A reply holds numbers of at most fsio.MAX_NUMBER_CHARS characters each; allow that with
# room for separators and whitespace, never more.
REPLY_BYTES_PER_NUMBER = fsio.MAX_NUMBER_CHARS + 24
EXIT_GRACE_SECONDS = 2.0  # after stdin closes, before TERM; then again before KILL
# Every process a bot starts inherits this variable with the bot's own value: a child that
# left the bot's group (setsid) or outlived it is still found and stopped with it.
TAG_ENV = "COSMIC_CURRICULUM_BOT"


class Command(Protocol):
    """A bot program as the transport needs it (``bots.ExecSpec`` is one)."""

    @property
    def argv(self) -> tuple[str, ...]: ...
    @property
    def timeout(self) -> float: ...
    @property
    def cwd(self) -> Path | None: ...


def command_label(command: Command) -> str:
    """``exec:<command>``: how errors and records name a program."""
    return EXEC_PREFIX + shlex.join(command.argv)


def command_sha256(command: Command) -> str:
    """The sha256 of a program's argv and of the bytes of every argument that names a
    file (its program, its script, its weights)."""
    digest = hashlib.sha256("\0".join(command.argv).encode())
    for arg in command.argv:
        path = (command.cwd or Path.cwd()) / arg
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


class BotProgram:
    """A started program: its pipes, its stderr tail, its exchange of one line per
    request. Subclasses speak the messages (handshake, requests, answers)."""

    def __init__(self, spec: Command) -> None:
        self.spec = spec
        self.label = command_label(spec)
        self.name = Path(spec.argv[0]).stem or spec.argv[0]
        self.requests = 0
        self._buf = bytearray()
        self._closed = False
        self.tag = uuid.uuid4().hex
        self._proc = self._start()
        # Readable once the program exits, even while a child of it holds its stdout open.
        self._exit_fds = _exit_fds(self._proc.pid)
        scope = _SCOPE.get()
        if scope is not None:
            scope.append(self)
        self._stderr = StderrTail(self._fd("stderr"))

    # -- life cycle ---------------------------------------------------------------------

    def _fault(self, message: str, stderr: bool = True) -> BotError:
        tail = self._stderr.quote() if stderr and hasattr(self, "_stderr") else ""
        return BotError(f"bot {self.label}: {message}{tail}")

    def _start(self) -> subprocess.Popen[bytes]:
        program = self.spec.argv[0]
        where = self.spec.cwd or Path.cwd()
        if "/" in program:
            path: Path | None = Path(program) if Path(program).is_absolute() else where / program
        else:
            found = shutil.which(program)
            path = Path(found) if found else None
            if path is None:
                raise self._fault(f"program {program!r} is not on PATH", stderr=False)
        assert path is not None
        problem = runner.start_problem(path)
        if problem is not None:
            raise self._fault(f"program {program!r} {problem}", stderr=False)
        try:
            proc = subprocess.Popen(
                list(self.spec.argv),
                cwd=self.spec.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own group: stopped whole, never by our signals
                close_fds=True,
                env={**os.environ, TAG_ENV: self.tag},
                bufsize=0,
            )
        except OSError as exc:
            raise self._fault(f"cannot start: {exc.strerror or exc}", stderr=False) from None
        assert proc.stdin is not None
        os.set_blocking(proc.stdin.fileno(), False)
        return proc

    def _fd(self, name: str) -> int:
        stream = getattr(self._proc, name)
        assert stream is not None
        fd: int = stream.fileno()
        return fd

    def close(self) -> None:
        """Close stdin, give the program time to exit, then stop its whole group."""
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(EXIT_GRACE_SECONDS)
        # Always: children the program started live on in its group after it exits, and
        # those that left the group (setsid) carry its tag.
        runner.stop_group(proc.pid, EXIT_GRACE_SECONDS, reap=proc.poll)
        runner.stop_processes(runner.tagged_processes(TAG_ENV, self.tag), EXIT_GRACE_SECONDS)
        proc.poll()
        for fd in self._exit_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._stderr.join(1.0)
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                assert stream is not None
                stream.close()

    def _check_open(self) -> None:
        if self._closed:
            raise BotError(f"bot {self.label}: already stopped")

    # -- lines --------------------------------------------------------------------------

    def _exited(self, during: str, closed: str = "stdout") -> BotError:
        """The program's real end (its exit status or signal), else the stream it closed."""
        code = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = self._proc.wait(1.0)
        if code is None:
            how = f"closed its {closed}"
        elif code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with status {code}"
        return self._fault(f"{how} {during}")

    def _exchange(self, request: bytes, limit: int, during: str, ahead: bool = True) -> str:
        """Write ``request`` (may be empty) and read one line, all within the timeout;
        ``ahead``: a line already waiting before the request is a fault."""
        deadline = time.monotonic() + self.spec.timeout
        out, inp = self._fd("stdout"), self._fd("stdin")
        if request and ahead:
            self._nothing_ahead(out, during)
        view, sent, scanned = memoryview(request), 0, 0
        while True:
            newline = self._buf.find(b"\n", scanned)
            if newline >= 0 and sent == len(view):
                raw = bytes(self._buf[:newline])
                del self._buf[: newline + 1]
                try:
                    return raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise self._fault(f"wrote a line that is not UTF-8 {during}") from None
            if newline < 0:
                scanned = len(self._buf)
            if (newline if newline >= 0 else len(self._buf)) > limit:
                raise self._fault(f"wrote a line longer than {limit} bytes {during}")
            left = deadline - time.monotonic()
            if left <= 0:
                what = "answer" if sent == len(view) else "read its request"
                raise self._fault(f"did not {what} within {self.spec.timeout:g} s {during}")
            writers = [inp] if sent < len(view) else []
            readable, writable, _ = select.select([out, *self._exit_fds], writers, [], left)
            if writable:
                try:
                    sent += os.write(inp, view[sent : sent + 65536])
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    raise self._exited(during, closed="stdin") from None
            if out in readable:
                chunk = os.read(out, 1 << 20)
                if not chunk:
                    raise self._exited(during)
                self._buf += chunk
            elif readable and b"\n" not in self._buf:
                raise self._exited(during)  # gone, though a child of it keeps stdout open

    def _nothing_ahead(self, out: int, during: str) -> None:
        """Before a request: a program that already wrote more than it was asked answers
        ahead, and every later answer would belong to an earlier request."""
        if not self._buf and select.select([out], [], [], 0)[0]:
            chunk = os.read(out, 1 << 20)
            if not chunk:
                raise self._exited(during)
            self._buf += chunk
        if self._buf:
            raise self._fault(
                f"wrote {len(self._buf)} bytes nobody asked for before request "
                f"{self.requests} (one answer line per request: it answers ahead)"
            )

    def _parse(self, line: str, during: str) -> Any:
        try:
            return fsio.loads(line)
        except fsio.JSONValueError as exc:
            raise self._fault(f"answered with invalid JSON {during}: {exc}") from None


def _exit_fds(pid: int) -> list[int]:
    """A pidfd of ``pid`` (Linux 5.3+), or none where the kernel has none."""
    try:
        return [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        return []


def shape_of(value: Any) -> str:
    """A list of rows' shape for an error (``[4, 5]``, ``[3, ragged]``) or its type."""
    if not isinstance(value, list):
        return type(value).__name__
    inner = {len(r) if isinstance(r, list) else type(r).__name__ for r in value[:1000]}
    cols = inner.pop() if len(inner) == 1 else "ragged"
    return f"[{len(value)}, {cols}]" if value else "[0]"


_SCOPE: ContextVar[list[BotProgram] | None] = ContextVar("external_bots", default=None)
P = ParamSpec("P")
R = TypeVar("R")


def stops_bots(func: Callable[P, R]) -> Callable[P, R]:
    """Stop every program bot started during a call when it returns or raises (for
    evaluate, replay and ladder: however a match ends, no program outlives it)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        started: list[BotProgram] = []
        token = _SCOPE.set(started)
        try:
            return func(*args, **kwargs)
        finally:
            _SCOPE.reset(token)
            for bot in started:
                bot.close()

    return wrapper
