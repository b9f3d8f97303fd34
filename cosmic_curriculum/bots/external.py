"""External program bots: any program speaking the ``cosmic-bot/1`` JSON-lines protocol.

The program writes one handshake line, then answers one request per decision for the
whole batch (docs/BOT_FORMAT.md, "External program bots"). Everything a program can do
wrong (never start, stay silent, answer garbage, a wrong shape, NaN or out-of-range
actions, exit, flood stderr, write endless lines) raises a one-line :class:`BotError`
naming its command and the fault, and its process group is stopped. Nothing blocks
without a deadline: stdin is written and stdout read through ``select`` within the
per-decision timeout, stderr is drained by a thread into a bounded buffer whose last lines
are quoted in errors.
"""

from __future__ import annotations

import contextlib
import functools
import json
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import F32, check_decision_ticks
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.bots.actions import action_fault
from cosmic_curriculum.bots.stderr_tail import StderrTail, one_line
from cosmic_curriculum.defaults import BOT_TIMEOUT_SECONDS
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.system import fsio
from cosmic_curriculum.system import processes as runner

PROTOCOL = "cosmic-bot/1"
EXEC_PREFIX = "exec:"
HANDSHAKE_KEYS = {"protocol", "observation_size", "action_size", "decision_ticks", "name"}
MAX_HANDSHAKE_BYTES = 64 * 1024
# A reply holds n x ACT_SIZE numbers of at most fsio.MAX_NUMBER_CHARS characters each;
# allow that with room for separators and whitespace, never more.
REPLY_BYTES_PER_NUMBER = fsio.MAX_NUMBER_CHARS + 24
EXIT_GRACE_SECONDS = 2.0  # after stdin closes, before TERM; then again before KILL
# Every process a bot starts inherits this variable with the bot's own value: a child that
# left the bot's group (setsid) or outlived it is still found and stopped with it.
TAG_ENV = "COSMIC_CURRICULUM_BOT"
# Observations go out with 6 decimals: exact to the bot's float32 resolution over [-1, 1]
# within 5e-7, and half the bytes of float32's full repr (measured: bench/).
OBS_DECIMALS = 6


@dataclass(frozen=True)
class ExecSpec:
    """A bot program: its argv, the seconds it may take per answer, where it runs."""

    argv: tuple[str, ...]
    timeout: float = BOT_TIMEOUT_SECONDS
    cwd: Path | None = None

    def __str__(self) -> str:
        return EXEC_PREFIX + shlex.join(self.argv)

    @property
    def name(self) -> str:
        return Path(self.argv[0]).stem or self.argv[0]


def parse_exec(spec: str, timeout: float | None = None, cwd: Path | None = None) -> ExecSpec:
    """``exec:./mybot --level 3`` → its argv (split like a POSIX shell, never run by one)."""
    command = spec.removeprefix(EXEC_PREFIX)
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise BotError(f"{spec!r}: cannot split the command ({exc})") from None
    if not argv:
        raise BotError(f"{spec!r}: no command after 'exec:'; e.g. exec:./mybot --level 3")
    if timeout is not None and not timeout > 0:
        raise BotError(f"bot timeout {timeout!r}: must be a number of seconds > 0")
    return ExecSpec(tuple(argv), BOT_TIMEOUT_SECONDS if timeout is None else timeout, cwd)


class ExternalBot:
    """A ``Policy`` answered by a program over the ``cosmic-bot/1`` protocol.

    Starting it runs the program (its own process group) and checks the handshake;
    :meth:`close` closes its stdin, waits, then stops the group (TERM, then KILL)."""

    kind = "external"
    game = None  # the program's game is its own business; matches use the defaults

    def __init__(self, spec: ExecSpec) -> None:
        self.spec = spec
        self.label = str(spec)
        self.name = spec.name
        self.requests = 0
        self._buf = bytearray()
        self._pending: NDArray[np.bool_] | None = None
        self._closed = False
        self.tag = uuid.uuid4().hex
        self._proc = self._start()
        # Readable once the program exits, even while a child of it holds its stdout open.
        self._exit_fds = _exit_fds(self._proc.pid)
        scope = _SCOPE.get()
        if scope is not None:
            scope.append(self)
        self._stderr = StderrTail(self._fd("stderr"))
        try:
            self.decision_ticks = self._handshake()
        except BaseException:
            self.close()
            raise

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
        from cosmic_curriculum.system.processes import start_problem

        assert path is not None
        problem = start_problem(path)
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

    def __enter__(self) -> ExternalBot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- protocol -----------------------------------------------------------------------

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

    def _exchange(self, request: bytes, limit: int, during: str) -> str:
        """Write ``request`` (may be empty) and read one line, all within the timeout."""
        deadline = time.monotonic() + self.spec.timeout
        out, inp = self._fd("stdout"), self._fd("stdin")
        if request:
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

    def _handshake(self) -> int:
        during = "before its handshake"
        doc = self._parse(self._exchange(b"", MAX_HANDSHAKE_BYTES, during), "in its handshake")
        if not isinstance(doc, dict):
            raise self._fault("handshake is not a JSON object")
        unknown = sorted(set(doc) - HANDSHAKE_KEYS)
        if unknown:
            raise self._fault(f"handshake has unknown keys {unknown}")
        if doc.get("protocol") != PROTOCOL:
            raise self._fault(f"handshake protocol {doc.get('protocol')!r}, expected {PROTOCOL!r}")
        for key, want in (("observation_size", OBS_SIZE), ("action_size", ACT_SIZE)):
            if doc.get(key) != want or isinstance(doc.get(key), bool):
                raise self._fault(f"handshake {key} is {doc.get(key)!r}, this arena needs {want}")
        raw_ticks: Any = doc.get("decision_ticks")
        try:
            ticks = check_decision_ticks(raw_ticks)
        except ValueError as exc:
            raise self._fault(f"handshake {exc}") from None
        name = doc.get("name")
        if name is not None:
            if not isinstance(name, str) or not name.strip():
                raise self._fault(f"handshake name {name!r} is not a non-empty string")
            self.name = one_line(name, 60)
        return ticks

    def reset(self, mask: NDArray[np.bool_]) -> None:
        mask = np.asarray(mask, dtype=bool)
        if self._pending is None or self._pending.shape != mask.shape:
            self._pending = mask.copy()
        else:
            self._pending |= mask

    def act(self, obs: F32, rng: np.random.Generator) -> F32:
        if self._closed:
            raise BotError(f"bot {self.label}: already stopped")
        n = int(obs.shape[0])
        pending = self._pending
        if pending is None or pending.shape != (n,):
            pending = np.ones(n, dtype=bool)  # a new batch: every game is new to the bot
        self._pending = np.zeros(n, dtype=bool)
        self.requests += 1
        during = f"in request {self.requests}"
        body = {
            "obs": np.round(obs.astype(np.float64), OBS_DECIMALS).tolist(),
            "reset": np.flatnonzero(pending).tolist(),
        }
        line = json.dumps(body, separators=(",", ":")).encode() + b"\n"
        limit = 1024 + n * ACT_SIZE * REPLY_BYTES_PER_NUMBER
        try:
            reply = self._parse(self._exchange(line, limit, during), during)
            return self._actions(reply, n, during)
        except BaseException:
            self.close()  # a fault ends the program; the caller only reports it
            raise

    def _actions(self, reply: Any, n: int, during: str) -> F32:
        if not isinstance(reply, dict) or set(reply) != {"actions"}:
            got = sorted(reply) if isinstance(reply, dict) else type(reply).__name__
            raise self._fault(f'answered {got} {during}, expected {{"actions": [...]}}')
        rows = reply["actions"]
        if (
            not isinstance(rows, list)
            or len(rows) != n
            or not all(isinstance(r, list) and len(r) == ACT_SIZE for r in rows)
        ):
            shape = _shape(rows)
            raise self._fault(f"answered actions of shape {shape} {during}, expected [{n}, 6]")
        if not all(type(v) in (int, float) for r in rows for v in r):
            raise self._fault(f"answered actions that are not all numbers {during}")
        actions = np.asarray(rows, dtype=np.float64)
        fault = action_fault(actions, n)  # the check every bot we did not compute passes
        if fault is not None:
            raise self._fault(f"{fault} {during}")
        return actions.astype(np.float32)


def _exit_fds(pid: int) -> list[int]:
    """A pidfd of ``pid`` (Linux 5.3+), or none where the kernel has none."""
    try:
        return [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        return []


def _shape(value: Any) -> str:
    if not isinstance(value, list):
        return type(value).__name__
    inner = {len(r) if isinstance(r, list) else type(r).__name__ for r in value[:1000]}
    cols = inner.pop() if len(inner) == 1 else "ragged"
    return f"[{len(value)}, {cols}]" if value else "[0]"


_SCOPE: ContextVar[list[ExternalBot] | None] = ContextVar("external_bots", default=None)
P = ParamSpec("P")
R = TypeVar("R")


def stops_bots(func: Callable[P, R]) -> Callable[P, R]:
    """Stop every external bot started during a call when it returns or raises (for
    evaluate, replay and ladder: however a match ends, no program outlives it)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        started: list[ExternalBot] = []
        token = _SCOPE.set(started)
        try:
            return func(*args, **kwargs)
        finally:
            _SCOPE.reset(token)
            for bot in started:
                bot.close()

    return wrapper
