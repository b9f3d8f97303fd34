"""``--clone-teacher``: a game learner learns a teacher's moves before its first rollout.

Why: PPO in self-play is slow to see lines. On connect four the learners blocked 10-30% of
immediate threats whatever else was tried; cloned from ``search:2`` first, they block
most, and the league then turns the tactics into a plan (docs/BENCHMARKS.md, "Connect
four").

1. **Positions**: games between copies of the teacher, in which each move is a random
   legal one with a chance drawn per game from ``[0, GAME_CLONE_NOISE)`` (so the learner
   also meets positions the teacher would never reach). Each position is labelled with
   the teacher's moves: every best move of ``search:N``, the weight spread evenly; a bot
   file's greedy move.
2. **Cloning**: the policy's (masked) move distribution fitted to the labels by
   cross-entropy with Adam; the value net is left as it is. A tenth of the positions is
   held out to report how often the first choice is a teacher's move where that matters
   (where not every legal move is one).

Deterministic from the seed. A stop signal ends it early: nothing is saved, and a rerun
clones again from the start. This module imports torch: the trainer imports it only to
clone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from cosmic_curriculum.defaults import (
    GAME_CLONE_BATCH,
    GAME_CLONE_HELD_OUT,
    GAME_CLONE_LEARNING_RATE,
    GAME_CLONE_MAX_BYTES,
    GAME_CLONE_NOISE,
    GAME_CLONE_REPORT_SECONDS,
)
from cosmic_curriculum.envs.game_search import SearchPlayer
from cosmic_curriculum.envs.pettingzoo import GameInfo, game_over, make_game, split_observation
from cosmic_curriculum.envs.spaces import batch_of
from cosmic_curriculum.errors import ConfigError, TrainerError
from cosmic_curriculum.train.game_env import Player, batch_of_one
from cosmic_curriculum.train.league_settings import CloneSettings
from cosmic_curriculum.train.league_store import bot_player
from cosmic_curriculum.train.stopping import StopFlag
from cosmic_curriculum.workspace.env_config import EnvSpec

Say = Callable[[str], None]


@dataclass(frozen=True)
class Lesson:
    """Labelled positions as the learner sees them: observations (an array, or a dict of
    arrays for a Dict observation), the legal moves (None: an unmasked game) and each
    position's target distribution over moves."""

    obs: Any
    masks: NDArray[np.bool_] | None
    targets: NDArray[np.float32]

    def rows(self, index: NDArray[np.int64]) -> tuple[Any, NDArray[np.bool_] | None, Any]:
        obs = (
            {k: v[index] for k, v in self.obs.items()}
            if isinstance(self.obs, dict)
            else self.obs[index]
        )
        return obs, None if self.masks is None else self.masks[index], self.targets[index]


def target(moves: list[int], size: int) -> NDArray[np.float32]:
    """The teacher's moves as a distribution: each of them equally likely."""
    out = np.zeros(size, np.float32)
    out[moves] = 1.0 / len(moves)
    return out


def held_out(count: int) -> int:
    """Positions held out of ``count`` for the report (the first ones)."""
    return int(count * GAME_CLONE_HELD_OUT)


def check_size(clone: CloneSettings, obs: Any, actions: int) -> None:
    """One line, before the labelling, when ``clone.positions`` of ``obs`` (one
    observation) with their labels would not fit the memory the lesson may take."""
    parts = obs.values() if isinstance(obs, dict) else [obs]
    each = sum(np.asarray(v).nbytes for v in parts) + actions * 5  # + a target and a mask
    if clone.positions * each > GAME_CLONE_MAX_BYTES:
        fits = max(1, GAME_CLONE_MAX_BYTES // each)
        raise ConfigError(
            f"--clone-positions {clone.positions}: {each:,} bytes a position would take "
            f"{clone.positions * each / 1024**3:.1f} GiB of memory; lower it to {fits:,} or fewer"
        )


class _Teacher:
    """The teacher's moves in a position: a search's every best move, else the bot's
    greedy move; an illegal one is the teacher's fault, in one line."""

    def __init__(self, player: Player, name: str, game_id: str) -> None:
        self.player, self.name, self.game_id = player, name, game_id

    def moves(self, game: Any, obs: Any, mask: NDArray[Any] | None, rng: Any) -> list[int]:
        if isinstance(self.player, SearchPlayer):
            moves = self.player.search.best_moves(game)
        else:
            batch_mask = None if mask is None else mask[None]
            moves = [int(self.player.act(batch_of_one(obs), True, rng, batch_mask)[0])]
        wrong = [m for m in moves if mask is not None and not mask[m]]
        if wrong and mask is not None:
            raise TrainerError(
                f"--clone-teacher {self.name} played the illegal move {wrong[0]} in "
                f"{self.game_id} (legal: {np.flatnonzero(mask).tolist()}); teach with a bot "
                "of this game that masks its moves, or search:N"
            )
        return moves


def label(
    spec: EnvSpec,
    info: GameInfo,
    clone: CloneSettings,
    where: tuple[Path, int, int],
    stop: StopFlag,
    say: Say,
) -> Lesson | None:
    """``clone.positions`` labelled positions (None: stopped). ``where``: the workspace
    (a teacher's file is relative to it), the seed and the move cap."""
    root, seed, cap = where
    player = bot_player(clone.teacher, info, seed, root, "--clone-teacher", bool(spec.wrappers))
    teacher = _Teacher(player, clone.teacher, str(spec.id))
    rng, size = np.random.default_rng([seed, 1]), int(info.action_space.n)
    seen: list[Any] = []
    masks: list[NDArray[np.bool_]] = []
    targets: list[NDArray[np.float32]] = []
    game, said = make_game(spec), time.monotonic()
    try:
        while len(seen) < clone.positions:
            game.reset(seed=int(rng.integers(2**31)))
            noise, moves = rng.uniform(0.0, GAME_CLONE_NOISE), 0
            while not game_over(game) and moves < cap and len(seen) < clone.positions:
                if stop.signum is not None:  # a deep search's game may take long
                    return None
                if time.monotonic() - said >= GAME_CLONE_REPORT_SECONDS:
                    said = time.monotonic()
                    say(f"{len(seen):,} of {clone.positions:,} positions labelled")
                obs, mask = split_observation(game.observe(game.agent_selection), info)
                if not seen:
                    check_size(clone, obs, size)
                legal = np.ones(size, bool) if mask is None else np.asarray(mask, bool)
                best = teacher.moves(game, obs, None if mask is None else legal, rng)
                seen.append(obs)
                masks.append(legal)
                targets.append(target(best, size))
                pool = np.flatnonzero(legal) if rng.random() < noise else np.asarray(best)
                game.step(int(rng.choice(pool)))
                moves += 1
    finally:
        game.close()
    return Lesson(batch_of(seen), None if not info.masked else np.stack(masks), np.stack(targets))


def _log_probs(policy: Any, lesson: Lesson, index: NDArray[np.int64]) -> tuple[Any, Any]:
    """(log-probabilities of the policy's moves, targets) at ``lesson``'s rows ``index``."""
    obs, masks, targets = lesson.rows(index)
    tensor, _ = policy.obs_to_tensor(obs)
    dist = (
        policy.get_distribution(tensor)
        if masks is None
        else policy.get_distribution(tensor, action_masks=masks)
    )
    # Masked logits are -1e8: clamped, a zero target times them stays finite.
    log_p = torch.log_softmax(dist.distribution.logits, -1).clamp(min=-1e4)
    return log_p, torch.as_tensor(targets)


def fit(model: Any, lesson: Lesson, epochs: int, seed: int, stop: StopFlag, say: Say) -> bool:
    """``model``'s policy fitted to ``lesson`` (all but the held-out rows); False: stopped."""
    policy = model.policy
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=GAME_CLONE_LEARNING_RATE)
    count = len(lesson.targets)
    train = torch.arange(held_out(count), count)
    policy.set_training_mode(True)
    try:
        for epoch in range(1, epochs + 1):
            order = train[torch.randperm(len(train), generator=generator)].numpy()
            total = 0.0
            for start in range(0, len(order), GAME_CLONE_BATCH):
                if stop.signum is not None:
                    return False
                rows = order[start : start + GAME_CLONE_BATCH]
                log_p, goal = _log_probs(policy, lesson, rows)
                loss = -(goal * log_p).sum(-1).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item() * len(rows)
            say(f"epoch {epoch} of {epochs}, cross-entropy {total / max(len(order), 1):.3f}")
    finally:
        policy.set_training_mode(False)
    return True


def agreement(model: Any, lesson: Lesson) -> tuple[float, int] | None:
    """(the share of held-out positions where the policy's first choice is a teacher's
    move, counted where not every legal move is one; how many there were), or None when
    none is held out or none matters."""
    rows = np.arange(held_out(len(lesson.targets)))
    if not len(rows):
        return None
    right = np.zeros(len(rows), bool)
    with torch.no_grad():  # in minibatches: a held-out tenth of large observations is large
        for start in range(0, len(rows), GAME_CLONE_BATCH):
            chunk = rows[start : start + GAME_CLONE_BATCH]
            log_p, goal = _log_probs(model.policy, lesson, chunk)
            first = log_p.argmax(-1, keepdim=True)
            right[chunk] = (goal.gather(1, first) > 0)[:, 0].numpy()
    legal = np.ones_like(lesson.targets[rows], bool) if lesson.masks is None else lesson.masks[rows]
    matters = (lesson.targets[rows] > 0).sum(-1) < legal.sum(-1)
    if not matters.any():
        return None
    return float(right[matters].mean()), int(matters.sum())


def clone_teacher(
    model: Any,
    spec: EnvSpec,
    info: GameInfo,
    clone: CloneSettings,
    where: tuple[Path, int, int],
    stop: StopFlag,
    say: Say,
) -> bool:
    """``model``'s policy taught ``clone.teacher``'s moves, each phase told to ``say``;
    False: a stop signal ended it (nothing kept)."""
    started = time.monotonic()
    lesson = label(spec, info, clone, where, stop, say)
    if lesson is None:
        return False
    say(f"{len(lesson.targets):,} positions labelled in {time.monotonic() - started:.0f} s")
    if not fit(model, lesson, clone.epochs, where[1], stop, say):
        return False
    share = agreement(model, lesson)
    told = (
        "no held-out position where the choice matters"
        if share is None
        else f"{share[0]:.2f} of {share[1]} held-out positions where the choice matters "
        "get a teacher's move first"
    )
    say(f"done in {time.monotonic() - started:.0f} s; {told}")
    return True
