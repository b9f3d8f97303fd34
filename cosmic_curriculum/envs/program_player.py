"""Program players of env kinds: a program speaking ``cosmic-bot/1`` with the env's spaces.

The tool opens with the env's spaces (``{"protocol", "env", "observation_space",
"action_space", "legal_actions"}``); the program's handshake declares the spaces it plays
(``{"protocol", "observation_space", "action_space", "name"?}``, the JSON of
``envs/spaces.py``), refused in one line naming both when they are not the env's. Each
decision is one request for the whole batch: ``{"obs": [row, ...]}`` (as the policy sees
it, JSON numbers) and, for masked games, ``"legal": [[action, ...], ...]``; the answer is
``{"actions": [action, ...]}``, each checked against the action space and its row's legal
actions, with an optional ``"fallbacks": [row, ...]`` (the rows the program did not
choose itself, e.g. a chat model's unusable reply answered by a random legal action),
counted in :attr:`ProgramPlayer.fallbacks` for the record. The transport (process tree,
deadlines, bounded lines) is ``system/program.py``; docs/BOT_FORMAT.md has the protocol.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.envs.spaces import Space, parse_space, same_space
from cosmic_curriculum.errors import BotError, TrainerError
from cosmic_curriculum.system.program import (
    MAX_HANDSHAKE_BYTES,
    PROTOCOL,
    REPLY_BYTES_PER_NUMBER,
    BotProgram,
    Command,
    command_label,
)
from cosmic_curriculum.system.stderr_tail import one_line
from cosmic_curriculum.workspace.env_config import EnvSpec

HANDSHAKE_KEYS = {"protocol", "observation_space", "action_space", "name"}
ARENA_KEYS = {"observation_size", "action_size", "decision_ticks"}
REPLY_KEYS = {"actions", "fallbacks"}
OBS_DECIMALS = 6  # as the arena's requests: float32 resolution over [-1, 1]
QUOTE_CHARS = 160  # of a reply or a space quoted in an error line


def program_player(
    spec: Command, observation_space: Any, action_space: Any, *, env: str, masked: bool = False
) -> ProgramPlayer:
    """A program player for Gymnasium spaces (an env's, or a game's policy view): the
    one call an evaluator makes; ``close()`` it when the evaluation ends."""
    from cosmic_curriculum.envs.export import space_of

    try:
        spaces = (
            space_of(observation_space, "observation", allow_dict=True),
            space_of(action_space, "action"),
        )
    except TrainerError as exc:
        raise BotError(
            f"bot {command_label(spec)}: env {env!r} cannot be played by a program: {exc}"
        ) from None
    return ProgramPlayer(spec, *spaces, env=env, masked=masked)


class ProgramPlayer(BotProgram):
    """A player (``act(obs, deterministic, rng, mask=None)``) answered by a program."""

    def __init__(
        self,
        spec: Command,
        observation_space: Space,
        action_space: Space,
        *,
        env: str,
        masked: bool = False,
    ) -> None:
        super().__init__(spec)
        self.observation_space = observation_space
        self.action_space = action_space
        self.env = env
        self.masked = masked
        self.fallbacks = 0
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> ProgramPlayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handshake(self) -> None:
        opening = {
            "protocol": PROTOCOL,
            "env": self.env,
            "observation_space": self.observation_space.to_json(),
            "action_space": self.action_space.to_json(),
            "legal_actions": self.masked,
        }
        during = "before its handshake"
        # The program may read the opening first or write its handshake at once: either way
        # its line is the answer, never a line written ahead.
        line = self._exchange(_line(opening), MAX_HANDSHAKE_BYTES, during, ahead=False)
        doc = self._parse(line, "in its handshake")
        if not isinstance(doc, dict):
            raise self._fault("handshake is not a JSON object")
        if doc.get("protocol") != PROTOCOL:
            raise self._fault(f"handshake protocol {doc.get('protocol')!r}, expected {PROTOCOL!r}")
        if ARENA_KEYS & set(doc):
            raise self._fault(
                f"handshake is the arena's ({', '.join(sorted(ARENA_KEYS & set(doc)))}); env "
                f"{self.env!r} needs observation_space and action_space in it "
                "(docs/BOT_FORMAT.md, programs for env kinds)"
            )
        unknown = sorted(set(doc) - HANDSHAKE_KEYS)
        if unknown:
            raise self._fault(f"handshake has unknown keys {unknown}")
        for key, want, dicts in (
            ("observation_space", self.observation_space, True),
            ("action_space", self.action_space, False),
        ):
            try:
                declared = parse_space(doc.get(key), f"handshake {key}", allow_dict=dicts)
            except ValueError as exc:
                raise self._fault(str(exc)) from None
            if not same_space(want, declared):
                raise self._fault(
                    f"handshake {key} is {_quote(declared.to_json())} but env {self.env!r} "
                    f"has {_quote(want.to_json())}; fix the program or the stage's env"
                )
        name = doc.get("name")
        if name is not None:
            if not isinstance(name, str) or not name.strip():
                raise self._fault(f"handshake name {name!r} is not a non-empty string")
            self.name = one_line(name, 60)

    def act(self, obs: Any, deterministic: bool = True, rng: Any = None, mask: Any = None) -> Any:
        """The program's actions for a batch (``mask``: (n, A) bools of legal actions)."""
        self._check_open()
        rows = observation_rows(obs, self.observation_space)
        n = len(rows)
        self.requests += 1
        during = f"in request {self.requests}"
        body: dict[str, Any] = {"obs": rows}
        legal: list[list[int]] | None = None
        if mask is not None:
            legal = legal_actions(mask, n, self.action_space)
            body["legal"] = legal
        numbers = self.action_space.size if self.action_space.kind == "Box" else 1
        limit = 1024 + n * (numbers + 1) * REPLY_BYTES_PER_NUMBER
        try:
            line = self._exchange(_line(body), limit, during)
            return self._actions(line, self._parse(line, during), n, legal, during)
        except BaseException:
            self.close()  # a fault ends the program; the caller only reports it
            raise

    def _actions(
        self, line: str, reply: Any, n: int, legal: list[list[int]] | None, during: str
    ) -> Any:
        said = f"answered {_quote(line)} {during}"
        if not isinstance(reply, dict) or "actions" not in reply or set(reply) - REPLY_KEYS:
            raise self._fault(f'{said}; expected {{"actions": [{n} actions]}}')
        actions = reply["actions"]
        if not isinstance(actions, list) or len(actions) != n:
            raise self._fault(f"{said}; expected {n} actions, one per game")
        fallbacks = reply.get("fallbacks", [])
        if (
            not isinstance(fallbacks, list)
            or not all(type(r) is int and 0 <= r < n for r in fallbacks)
            or len(set(fallbacks)) != len(fallbacks)
        ):
            raise self._fault(f"{said}; fallbacks must list distinct game rows 0..{n - 1}")
        space = self.action_space
        chosen: NDArray[Any] | str = (
            discrete_actions(actions, space, legal)
            if space.kind == "Discrete"
            else box_actions(actions, space)
        )
        if isinstance(chosen, str):
            raise self._fault(f"{said}; {chosen}")
        self.fallbacks += len(fallbacks)
        return chosen


def _line(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return one_line(text, QUOTE_CHARS)


def observation_rows(obs: Any, space: Space) -> list[Any]:
    """A batch of observations as JSON rows: a Discrete one an integer, a Box one nested
    lists (integers for integer dtypes, else rounded floats), a Dict one an object."""
    if space.kind == "Dict":
        parts = {key: observation_rows(obs[key], part) for key, part in space.parts}
        count = len(next(iter(parts.values())))
        return [{key: parts[key][i] for key in parts} for i in range(count)]
    array = np.asarray(obs)
    if array.dtype.kind in "biu":
        rows: list[Any] = array.astype(np.int64).tolist()
        return rows
    rounded: list[Any] = np.round(array.astype(np.float64), OBS_DECIMALS).tolist()
    return rounded


def legal_actions(mask: Any, n: int, space: Space) -> list[list[int]]:
    """Each game's legal actions (action values) from its row of the (n, A) mask."""
    array = np.asarray(mask, dtype=bool)
    if space.kind != "Discrete" or array.shape != (n, space.n):
        want = f"({n}, {space.n})" if space.kind == "Discrete" else "none (not Discrete)"
        raise BotError(f"action mask of shape {array.shape}: expected {want}")
    empty = np.flatnonzero(~array.any(axis=1))
    if empty.size:
        raise BotError(f"game row {int(empty[0])} has no legal action: the game's mask is empty")
    return [(np.flatnonzero(row) + space.start).tolist() for row in array]


def discrete_actions(
    actions: list[Any], space: Space, legal: list[list[int]] | None
) -> NDArray[np.int64] | str:
    """The answered actions as integers, or why they are not those of the games."""
    low, high = space.start, space.start + space.n
    for i, action in enumerate(actions):
        if type(action) is not int:
            return f"action {action!r} for game {i} is not an integer action"
        if not low <= action < high:
            return f"action {action} for game {i} is outside the action space {low}..{high - 1}"
        if legal is not None and action not in legal[i]:
            return f"action {action} for game {i} is not among its legal actions {legal[i]}"
    return np.asarray(actions, dtype=np.int64)


def box_actions(actions: list[Any], space: Space) -> NDArray[np.float32] | str:
    """The answered actions as an (n, *shape) array, or why they are not in the box."""
    assert space.low is not None and space.high is not None
    try:
        array = np.asarray(actions, dtype=np.float64)
    except (TypeError, ValueError):
        return "actions are not all numbers of one shape"
    if array.shape != (len(actions), *space.shape):
        want = [len(actions), *space.shape]
        return f"actions of shape {list(array.shape)}, expected {want}"
    flat = array.reshape(len(actions), -1)
    if not np.isfinite(flat).all():
        return "an action is not a finite number"
    outside = (flat < space.low) | (flat > space.high)
    if outside.any():
        row, col = (int(v[0]) for v in np.nonzero(outside))
        return (
            f"action value {flat[row, col]!r} for game {row} is outside its bounds "
            f"[{space.low[col]:g}, {space.high[col]:g}]"
        )
    return array.astype(np.float32)


def check_program(spec: Command, env_spec: EnvSpec) -> None:
    """Start a program once against a Gymnasium stage's env or a PettingZoo stage's game
    (one seat's view, with the legal moves where the game masks them) and check its
    handshake (the curriculum's preflight, before any training)."""
    if env_spec.kind == "pettingzoo":
        from cosmic_curriculum.envs.pettingzoo import game_info

        info = game_info(env_spec)
        program_player(
            spec,
            info.observation_space,
            info.action_space,
            env=env_spec.id or "?",
            masked=info.masked,
        ).close()
        return
    if env_spec.kind != "gymnasium":
        raise BotError(
            f"bot {command_label(spec)}: a program plays arena, gymnasium and pettingzoo "
            f"stages, not env.kind {env_spec.kind!r}"
        )
    from cosmic_curriculum.envs.gymnasium import make_env

    env = make_env(env_spec)
    try:
        program_player(
            spec, env.observation_space, env.action_space, env=env_spec.id or "?"
        ).close()
    finally:
        env.close()
