"""Who plays a PettingZoo game: env bots (JSON, or an unmasked bot's ONNX twin), the
built-in ``random`` (uniform over the legal moves, seeded) and ``search:N``
(:mod:`.game_search`), named as on the command line (``random``, ``search:4``, a file)
or as a curriculum records a builtin (``builtin:random``, ``builtin:search:4``), and
programs speaking ``cosmic-bot/1`` with the game's spaces (:mod:`.program_player`).

Every player follows one protocol: ``act(obs, deterministic, rng, mask=None)`` for a batch
(``obs`` as the policy sees it, ``mask`` (n, moves) bool or None); the search also takes
``games=``, the games themselves, one a row.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from cosmic_curriculum.defaults import SEARCH_MAX_DEPTH
from cosmic_curriculum.envs.game_search import SearchPlayer
from cosmic_curriculum.envs.onnx_twin import EnvTwin, load_env_player
from cosmic_curriculum.envs.pettingzoo import GameInfo
from cosmic_curriculum.envs.policy import EnvBot
from cosmic_curriculum.envs.spaces import batch_size
from cosmic_curriculum.errors import EvaluationError
from cosmic_curriculum.system.program import Command, command_label

RANDOM = "random"
SEARCH = "search"
_SEARCH_RE = re.compile(r"^search:(\d+)$")
BUILTIN_PREFIX = "builtin:"


class GamePlayer(Protocol):
    def act(
        self, obs: Any, deterministic: bool = True, rng: Any = None, mask: Any = None
    ) -> Any: ...


class RandomGamePlayer:
    """Uniform over the legal moves (over every move of an unmasked game), seeded."""

    def __init__(self, moves: int, seed: int) -> None:
        self.moves = moves
        self.rng = np.random.default_rng([seed, 7])
        self.label = RANDOM

    def act(
        self, obs: Any, deterministic: bool = True, rng: Any = None, mask: Any = None
    ) -> NDArray[Any]:
        n = batch_size(obs)
        legal = np.ones((n, self.moves), bool) if mask is None else np.asarray(mask, bool)
        # the largest of uniform keys among the legal moves: a uniform legal move
        keys = np.where(legal, self.rng.random((n, self.moves)), -1.0)
        return np.argmax(keys, axis=1)


def builtin_name(text: str) -> str | None:
    """``random`` or ``search:N`` of a player spec (``builtin:`` optional), else None."""
    name = text.removeprefix(BUILTIN_PREFIX)
    return name if name == RANDOM or _SEARCH_RE.fullmatch(name) else None


def search_depth(name: str, where: str = "search:N") -> int:
    """N of ``search:N``, within 1..SEARCH_MAX_DEPTH (else one line)."""
    found = _SEARCH_RE.fullmatch(name)
    depth = int(found.group(1)) if found else 0
    if not 1 <= depth <= SEARCH_MAX_DEPTH:
        raise EvaluationError(
            f"{where} {name!r}: the depth must be 1 to {SEARCH_MAX_DEPTH}, e.g. search:2"
        )
    return depth


def check_masks(bot: Any, info: GameInfo, path: Path | str) -> None:
    """A masked bot needs a game that gives the legal moves (``action_mask``)."""
    if getattr(bot, "action_mask", False) and not info.masked:
        raise EvaluationError(
            f"{path}: a masked bot (action_mask: true), but its game {bot.env.id!r} gives no "
            "action mask (observation['action_mask']); play it on a masked game or retrain "
            "it unmasked"
        )


def plays_game_spaces(bot: Any, info: GameInfo) -> bool:
    """Whether a bot's observation and action spaces are those of ``info``'s game (as the
    game builds now)."""
    from cosmic_curriculum.envs.export import space_of
    from cosmic_curriculum.envs.spaces import same_space

    return same_space(
        space_of(info.observation_space, "observation", allow_dict=True), bot.observation_space
    ) and same_space(space_of(info.action_space, "action"), bot.action_space)


def game_player(
    text: str | Path | Command,
    info: GameInfo,
    seed: int,
    candidate: EnvBot | EnvTwin | None = None,
    plain: bool = True,
) -> tuple[Any, str]:
    """The player ``text`` names and its label; a bot file must play ``candidate``'s
    spaces (when given). ``plain``: the game has no wrappers of its spec's own. A
    program is started here (its handshake checked): the caller closes it."""
    if not isinstance(text, str | Path):
        from cosmic_curriculum.envs.program_player import program_player

        env = candidate.env.id if candidate is not None else None
        player = program_player(
            text, info.observation_space, info.action_space, env=env or "?", masked=info.masked
        )
        return player, command_label(text)
    name = builtin_name(str(text))
    spelled = str(text).removeprefix(BUILTIN_PREFIX)
    if name is None and spelled.startswith(f"{SEARCH}:"):
        search_depth(spelled)  # search:x, search:-1: the depth's own line
    if spelled.startswith("exec:"):
        raise EvaluationError(
            f"{text}: a program plays a game in evaluate and as reference_bot, not as a "
            "training opponent; name a bot file of the game, random or search:N"
        )
    if name == RANDOM:
        return RandomGamePlayer(int(info.action_space.n), seed), RANDOM
    if name is not None:
        depth = search_depth(name)
        return SearchPlayer(info, depth, seed, plain), f"{SEARCH}:{depth}"
    path = Path(text)
    bot = load_env_player(path)
    if bot.env.kind != "pettingzoo":
        raise EvaluationError(
            f"{path}: a bot of a {bot.env.kind!r} env, not of a pettingzoo game; name a "
            "game's bot, random or search:N"
        )
    check_masks(bot, info, path)
    if candidate is None and not plays_game_spaces(bot, info):
        # An opponent of a training (no candidate to compare with): the game's own spaces.
        raise EvaluationError(
            f"{path}: a bot of {bot.env.id!r} whose observation or action space is not this "
            "game's; name a bot of this game, random or search:N"
        )
    if candidate is not None:
        for what in ("observation_space", "action_space"):
            if getattr(bot, what).to_json() != getattr(candidate, what).to_json():
                raise EvaluationError(
                    f"{path}: its {what} is not the candidate's; a reference must play the "
                    "same game (use the previous stage's bot, random or search:N)"
                )
    return bot, str(path)
