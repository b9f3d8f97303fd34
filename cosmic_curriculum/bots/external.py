"""External program bots of the arena: any program speaking the ``cosmic-bot/1`` protocol.

The program writes one handshake line, then answers one request per decision for the
whole batch (docs/BOT_FORMAT.md, "External program bots"). Everything a program can do
wrong (never start, stay silent, answer garbage, a wrong shape, NaN or out-of-range
actions, exit, flood stderr, write endless lines) raises a one-line :class:`BotError`
naming its command and the fault, and its process group is stopped. The transport (the
process tree, lines within deadlines, the stderr tail) is ``system/program.py``, shared
with the env kinds' program players.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.arena.observations import OBS_SIZE
from cosmic_curriculum.arena.policy import F32, check_decision_ticks
from cosmic_curriculum.arena.rules import ACT_SIZE
from cosmic_curriculum.bots.actions import action_fault
from cosmic_curriculum.defaults import BOT_TIMEOUT_SECONDS
from cosmic_curriculum.errors import BotError
from cosmic_curriculum.system.program import (
    EXEC_PREFIX,
    EXIT_GRACE_SECONDS,
    MAX_HANDSHAKE_BYTES,
    PROTOCOL,
    REPLY_BYTES_PER_NUMBER,
    TAG_ENV,
    BotProgram,
    shape_of,
    stops_bots,
)
from cosmic_curriculum.system.stderr_tail import one_line

__all__ = [
    "EXEC_PREFIX",
    "EXIT_GRACE_SECONDS",
    "PROTOCOL",
    "TAG_ENV",
    "ExecSpec",
    "ExternalBot",
    "parse_exec",
    "stops_bots",
]

HANDSHAKE_KEYS = {"protocol", "observation_size", "action_size", "decision_ticks", "name"}
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


class ExternalBot(BotProgram):
    """A ``Policy`` answered by a program over the ``cosmic-bot/1`` protocol.

    Starting it runs the program (its own process group) and checks the handshake;
    :meth:`close` closes its stdin, waits, then stops the group (TERM, then KILL)."""

    kind = "external"
    game = None  # the program's game is its own business; matches use the defaults

    def __init__(self, spec: ExecSpec) -> None:
        super().__init__(spec)
        self._pending: NDArray[np.bool_] | None = None
        try:
            self.decision_ticks = self._handshake()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> ExternalBot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- protocol -----------------------------------------------------------------------

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
        self._check_open()
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
            shape = shape_of(rows)
            raise self._fault(f"answered actions of shape {shape} {during}, expected [{n}, 6]")
        if not all(type(v) in (int, float) for r in rows for v in r):
            raise self._fault(f"answered actions that are not all numbers {during}")
        actions = np.asarray(rows, dtype=np.float64)
        fault = action_fault(actions, n)  # the check every bot we did not compute passes
        if fault is not None:
            raise self._fault(f"{fault} {during}")
        return actions.astype(np.float32)
